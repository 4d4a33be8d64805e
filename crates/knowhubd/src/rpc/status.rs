//! `status`: what the daemon knows of itself, derived from the engine's state and the
//! supervisor's registry of services.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use jsonrpsee::RpcModule;
use kb_proto::wire;
use kb_proto::{PROTOCOL_VERSION, method};

use super::{RpcResult, millis, rfc3339, to_rpc_error};
use crate::app::{App, UNHEALTHY_GRACE};
use crate::supervisor::{Report, State};
use kb_engine::engine::{Engine, EngineError, IndexState};

pub(super) fn register(module: &mut RpcModule<Arc<App>>, socket: PathBuf) {
    module
        .register_method(method::STATUS, move |_params, app, _| status(app, &socket))
        .expect("method names are unique");
}

/// The embedder's part of `status`. While the model loads, which stored experiences it must
/// embed is not known yet (that needs the model's id): the backlog then counts every active
/// experience, an upper bound, so that a client waiting for a backlog of 0 does not start
/// before the embedder has even looked.
fn embedder_status(engine: &Engine, active: u64) -> wire::EmbedderStatus {
    use kb_embed::EmbedderState;
    let mut status = engine.semantic.status();
    let (state, model, dimensions, detail) = match status.state {
        EmbedderState::Unavailable { reason } if status.disabled => ("disabled", None, None, Some(reason)),
        EmbedderState::Loading => {
            status.backlog = status.backlog.max(active);
            let detail = format!(
                "loading the model; searching by BM25 meanwhile; up to {} experiences to embed once it is loaded",
                status.backlog
            );
            ("loading", None, None, Some(detail))
        }
        EmbedderState::Ready { model_id, dimensions } => {
            let detail = (status.backlog > 0).then(|| format!("embedding: {} experiences to go", status.backlog));
            ("ready", Some(model_id), Some(dimensions), detail)
        }
        EmbedderState::Unavailable { reason } => {
            let retry = status
                .next_retry
                .map_or(String::new(), |due| format!("; next attempt in {} s (or restart the daemon)", due.as_secs()));
            ("unavailable", None, None, Some(format!("{reason}; searching by BM25 alone{retry}")))
        }
    };
    let query_session = model.is_some().then(|| status.query_route.describe());
    let window_share = status.window_share.filter(|_| model.is_some()).map(|share| (share * 1000.0).round() / 1000.0);
    wire::EmbedderStatus {
        state: state.to_owned(),
        model,
        backlog: status.backlog,
        vectors: status.vectors,
        dimensions,
        runtime: kb_embed::runtime::loaded_library().map(|path| path.display().to_string()),
        detail,
        submits_embedded_first: status.submits_embedded_first,
        submits_embedded_after: status.submits_embedded_after,
        query_session,
        window_share,
    }
}

fn status(app: &App, socket: &std::path::Path) -> RpcResult<wire::StatusResult> {
    let engine = &*app.engine;
    let counts = engine.counts().map_err(|error| to_rpc_error(engine, error))?;
    let store_seq = engine.store_seq().map_err(|error| to_rpc_error(engine, error))?;
    let index_state = engine.index_state();
    let (state, detail) = match &index_state {
        IndexState::Ready => ("ready", None),
        IndexState::Rebuilding { reason } => {
            ("rebuilding", Some(format!("{reason}; {} done", engine.rebuild_progress())))
        }
        IndexState::Failed { reason } => ("degraded", Some(format!("{reason}; retrying every few seconds"))),
        IndexState::Damaged { reason } => ("damaged", Some(format!("{reason}; rebuilding it from the store"))),
    };
    let reports = app.health.reports();
    let unhealthy = app.health.unhealthy(UNHEALTHY_GRACE);
    let extraction = extraction_status(app).map_err(|error| to_rpc_error(engine, error))?;
    let hub = hub_status(app, &reports).map_err(|error| to_rpc_error(engine, error))?;
    let hub_stalled = hub.stalled_since.is_some();
    let latency = |figures: kb_engine::stats::LatencyFigures| wire::LatencySummary {
        count: figures.count,
        p50_ms: millis(figures.p50),
        p99_ms: millis(figures.p99),
    };
    Ok(wire::StatusResult {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
        uptime_s: engine.uptime().as_secs(),
        socket: socket.display().to_string(),
        experiences: counts.total,
        counts: wire::StatusCounts { active: counts.active, pending: counts.pending, rejected: counts.rejected },
        paths: wire::StatusPaths {
            home: engine.paths.home.display().to_string(),
            database: engine.paths.database.display().to_string(),
            index: engine.paths.index.display().to_string(),
            config: engine.paths.config.display().to_string(),
        },
        index: wire::IndexStatus {
            state: state.to_owned(),
            documents: engine.index_documents(),
            applied_seq: engine.index_applied_seq(),
            committed_seq: engine.index_committed_seq(),
            store_seq,
            detail,
        },
        embedder: embedder_status(engine, counts.active),
        queue_depth: extraction.queued,
        extraction,
        hub,
        latencies: wire::Latencies {
            search: latency(engine.search_latency.figures()),
            submit: latency(engine.submit_latency.figures()),
            hook: latency(engine.hook_latency.figures()),
        },
        hooks: {
            let injected = app.hooks.injected();
            wire::HookStatus {
                sessions: app.hooks.active_sessions() as u64,
                events: app.hooks.seen().into_iter().collect(),
                tool_calls: app.hooks.tool_calls().into_iter().collect(),
                injected: wire::HookInjected {
                    intros: injected.intros,
                    reminders: injected.reminders,
                    recalls: injected.recalls,
                    chars: injected.chars,
                },
            }
        },
        last_error: last_error(engine, &reports).map(|(at, message)| wire::LastError { at: rfc3339_time(at), message }),
        healthy: index_state == IndexState::Ready && unhealthy.is_empty() && !hub_stalled && app.identity.is_ready(),
        services: reports.iter().map(service_status).collect(),
        identity: Some(app.identity.status()),
    })
}

/// The most recent error whose cause has not healed: the engine's, or a service's that is
/// failing or degraded now.
fn last_error(engine: &Engine, reports: &[Report]) -> Option<(SystemTime, String)> {
    let failing =
        reports.iter().filter(|report| matches!(report.state, State::Failed | State::Degraded)).map(|report| {
            let reason = report.reason.clone().unwrap_or_default();
            (report.since, format!("the {} service {}", report.name, reason))
        });
    engine.last_error.get().into_iter().chain(failing).max_by_key(|(at, _)| *at)
}

fn service_status(report: &Report) -> wire::ServiceStatus {
    wire::ServiceStatus {
        name: report.name.to_owned(),
        state: report.state.as_str().to_owned(),
        reason: report.reason.clone(),
        since: rfc3339_time(report.since),
        unhealthy_since: report.unhealthy_since.map(rfc3339_time),
        unhealthy: report.unhealthy_for(UNHEALTHY_GRACE),
        restarts: report.restarts,
        last_failure: report
            .last_failure
            .as_ref()
            .map(|(at, message)| wire::LastError { at: rfc3339_time(*at), message: message.clone() }),
    }
}

/// The hub's part of `status`: the sync thread's own view, unless its service crashed, which
/// that view cannot know (it would still say `connected`), or it has not completed a round for
/// long (a hub that hangs, a lock held on it).
fn hub_status(app: &App, reports: &[Report]) -> Result<wire::HubStatus, EngineError> {
    let mut hub = crate::hub::status(&app.engine, &app.hub)?;
    if let Some(since) = hub.stalled_since.clone() {
        // An error already says why; otherwise the round is hanging.
        if hub.state != "error" {
            hub.state = "stalled".to_owned();
        }
        if hub.last_error.is_none() {
            hub.last_error = Some(wire::LastError {
                at: since.clone(),
                message: format!(
                    "no sync round has completed since {since}: the hub is not answering in time (a long query, or a lock held on it)"
                ),
            });
        }
    }
    if let Some(report) = reports.iter().find(|report| report.name == "hub" && report.state == State::Failed) {
        hub.state = "error".to_owned();
        hub.last_error = Some(wire::LastError {
            at: rfc3339_time(report.since),
            message: format!("the hub sync {}; restarting it", report.reason.as_deref().unwrap_or("failed")),
        });
    }
    Ok(hub)
}

fn rfc3339_time(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

fn extraction_status(app: &App) -> Result<wire::ExtractionStatus, EngineError> {
    let engine = &*app.engine;
    let config = &app.extraction.config;
    let day = kb_engine::engine::now_ms().div_euclid(86_400_000);
    let (waiting, stats) = crate::extraction::queue_status(engine, &app.extraction, day)?;
    let counter = |name: &str| stats.counters.get(name).copied().unwrap_or(0);
    let (route, endpoint, model) = match crate::extraction::route(config) {
        crate::extraction::Route::Endpoint { base_url, model } => {
            ("endpoint", Some(crate::extraction::shown_url(&base_url)), Some(model))
        }
        crate::extraction::Route::OpenClaw => ("openclaw", None, None),
        crate::extraction::Route::None => ("none", None, None),
    };
    Ok(wire::ExtractionStatus {
        enabled: app.extraction.requested() || stats.queued > 0,
        route: route.to_owned(),
        endpoint,
        model,
        queued: stats.queued,
        done: stats.done,
        failed: stats.failed,
        skipped: counter("skipped"),
        dropped: counter("dropped"),
        proposed: counter("proposed"),
        low_confidence: counter("low_confidence"),
        invalid: counter("invalid"),
        rejected_before: counter("rejected_before"),
        already_proposed: counter("already_proposed"),
        quarantined: counter("quarantined"),
        over_limit: counter("over_limit"),
        pending_proposals: stats.pending_proposals,
        tokens_today: stats.tokens_today,
        daily_token_cap: config.daily_token_cap,
        waiting,
        last_error: stats.last_error.map(|(at, message)| wire::LastError { at: rfc3339(at), message }),
    })
}
