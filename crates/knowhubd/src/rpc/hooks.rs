//! `hook.event`: an OpenClaw hook forwarded by the plugin, with the plugin's settings.

use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use kb_proto::method;
use kb_proto::wire;

use super::{RpcResult, invalid, parse};
use crate::app::App;
use crate::hooks::{ExtractionTrigger, HookConfig, HookInput, ReminderMode};
use kb_engine::stats::Cause;

pub(super) fn register(module: &mut RpcModule<Arc<App>>) {
    module
        .register_async_method(method::HOOK_EVENT, |params, app, _| async move {
            let engine = &app.engine;
            let started = Instant::now();
            let params: wire::HookEventParams = parse(&params)?;
            let hook = params.hook.trim();
            if hook.is_empty() || hook.len() > 128 {
                return Err(invalid("hook", "must be a hook name"));
            }
            let mut config = hook_config(params.config.as_ref())?;
            config.trusted = app.config.hub.trusted.clone();
            let input = HookInput { hook, event: &params.event, ctx: &params.ctx, config };
            if let Some(conversation) = input.conversation() {
                // Queued off the hook's path: the turn has ended, and nothing waits for this.
                let app = app.clone();
                tokio::task::spawn_blocking(move || {
                    match crate::extraction::on_conversation(&app.engine, &app.extraction, conversation) {
                        Ok(_) => app.engine.last_error.clear(Cause::Extraction),
                        Err(error) => {
                            let message = format!("extraction: cannot queue a conversation: {error:#}");
                            tracing::error!("{message}");
                            app.engine.last_error.set(Cause::Extraction, message);
                        }
                    }
                });
            }
            let outcome = app.hooks.handle(engine, input).await;
            engine.hook_latency.record(started.elapsed());
            RpcResult::Ok(wire::HookEventResult {
                action: "allow".to_owned(),
                prepend_context: outcome.prepend_context,
            })
        })
        .expect("method names are unique");
}

fn hook_config(params: Option<&wire::HookConfigParams>) -> RpcResult<HookConfig> {
    let mut config = HookConfig::default();
    let Some(params) = params else { return Ok(config) };
    if let Some(mode) = params.reminder_mode.as_deref() {
        config.reminder_mode = ReminderMode::parse(mode).ok_or_else(|| {
            invalid("config.reminderMode", format!("must be off, minimal, normal or aggressive, got {mode:?}"))
        })?;
    }
    if let Some(auto_recall) = params.auto_recall {
        config.auto_recall = auto_recall;
    }
    if let Some(trigger) = params.extraction_trigger.as_deref() {
        config.extraction_trigger = match trigger {
            "agent_end" => ExtractionTrigger::AgentEnd,
            "before_compaction" => ExtractionTrigger::BeforeCompaction,
            other => {
                return Err(invalid(
                    "config.extractionTrigger",
                    format!("must be agent_end or before_compaction, got {other:?}"),
                ));
            }
        };
    }
    if let Some(on) = params.enable_server_extraction {
        config.extraction = on;
    }
    if let Some(mode) = params.privacy_mode.as_deref() {
        config.strict = match mode {
            "strict" => true,
            "relaxed" => false,
            other => return Err(invalid("config.privacyMode", format!("must be strict or relaxed, got {other:?}"))),
        };
    }
    if let Some(require) = params.require_approval {
        config.require_approval = require;
    }
    Ok(config)
}
