//! The JSON-RPC methods: parse wire params, call the engine, convert answers and errors.
//!
//! Architecture Invariant: this module and `kb-proto` are the only places that know the JSON
//! shape of requests and answers; the engine works on domain types.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use kb_core::{Experience, NewExperience, Source, Status};
use kb_proto::wire::{self, ParamError};
use kb_proto::{ErrorCode, PROTOCOL_VERSION, method};
use kb_store::ListFilter;

use crate::engine::{CarriedVariant, Engine, EngineError, ImportEntry, IndexState, Reindexed, SearchMode, SearchQuery};
use crate::hooks::{ExtractionTrigger, HookConfig, HookInput, ReminderMode};
use crate::semantic::Refresh;

/// The most experiences one `kb.list` or `kb.export` page returns.
const MAX_PAGE: usize = 1_000;

type RpcResult<T> = Result<T, ErrorObjectOwned>;

/// Every method of the protocol, bound to the engine.
pub fn module(engine: Arc<Engine>, socket: PathBuf) -> RpcModule<Arc<Engine>> {
    let mut module = RpcModule::new(engine);
    let socket = Arc::new(socket);

    module
        .register_method(method::STATUS, move |_params, engine, _| status(engine, &socket))
        .expect("method names are unique");
    module
        .register_blocking_method(method::SUBMIT, |params, engine, _| {
            let started = Instant::now();
            let params: wire::SubmitParams = parse(&params)?;
            let new = new_experience(params)?;
            let submitted = engine.submit(new).map_err(|error| to_rpc_error(&engine, error))?;
            engine.submit_latency.record(started.elapsed());
            RpcResult::Ok(wire::SubmitResult {
                note: submitted.note(),
                duplicate_of: submitted.merged.then(|| submitted.id.clone()),
                similarity: submitted.similarity.map(|similarity| (similarity * 1000.0).round() / 1000.0),
                variant_kept: submitted.variant_kept,
                kept_apart_from: submitted
                    .kept_apart
                    .as_ref()
                    .map(|kept| wire::KeptApartFrom { id: kept.similar_to.clone(), reason: kept.reason.clone() }),
                id: submitted.id,
                status: submitted.status.as_str().to_owned(),
                redactions: submitted
                    .redactions
                    .iter()
                    .map(|redaction| (redaction.kind.to_owned(), redaction.count))
                    .collect(),
                flags: submitted.flags,
            })
        })
        .expect("method names are unique");
    module
        .register_async_method(method::SEARCH, |params, engine, _| async move {
            let started = Instant::now();
            let params: wire::SearchParams = parse(&params)?;
            let mode = match params.mode.as_deref() {
                None => SearchMode::Hybrid,
                Some(mode) => SearchMode::parse(mode)
                    .ok_or_else(|| invalid("mode", format!("must be hybrid, bm25 or vector, got {mode:?}")))?,
            };
            let origin = match params.origin.as_deref() {
                None => crate::engine::Origin::All,
                Some(origin) => crate::engine::Origin::parse(origin)
                    .ok_or_else(|| invalid("origin", format!("must be mine, team or all, got {origin:?}")))?,
            };
            let query = SearchQuery {
                query: &params.query,
                top_k: params.top_k,
                min_score: params.min_score,
                agent_id: params.agent_id.as_deref(),
                mode,
                origin,
            };
            let (found, answered) = engine.search(query).await.map_err(|error| to_rpc_error(&engine, error))?;
            engine.search_latency.record(started.elapsed());
            let results: Vec<wire::SearchHit> = found
                .into_iter()
                .map(|found| {
                    let experience = found.experience;
                    wire::SearchHit {
                        id: experience.id.to_string(),
                        relevance: (found.relevance * 1000.0).round() / 1000.0,
                        has_content: experience.has_content,
                        source: experience.source.as_str().to_owned(),
                        created_at: rfc3339(experience.created_at_ms),
                        task: experience.task,
                        resource: experience.resource,
                        result: experience.result,
                        score: experience.score,
                        agent_id: experience.agent_id,
                    }
                })
                .collect();
            RpcResult::Ok(wire::SearchResult {
                count: results.len(),
                results,
                mode: answered.mode.as_str().to_owned(),
                note: answered.note,
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::CONTENT, |params, engine, _| {
            let params: wire::ContentParams = parse(&params)?;
            let id = experience_id("experience_id", &params.experience_id)?;
            let (content, content_type) = engine.content(&id).map_err(|error| to_rpc_error(&engine, error))?;
            RpcResult::Ok(wire::ContentResult { experience_id: id, content, content_type })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::GET, |params, engine, _| {
            let params: wire::GetParams = parse(&params)?;
            let id = experience_id("experience_id", &params.experience_id)?;
            let experience = engine.get(&id).map_err(|error| to_rpc_error(&engine, error))?;
            let variants = engine.variants(&id).map_err(|error| to_rpc_error(&engine, error))?;
            let mut record = record(experience);
            record.variants = variants.into_iter().map(variant_record).collect();
            record.origins = engine
                .origins(&id)
                .map_err(|error| to_rpc_error(&engine, error))?
                .into_iter()
                .map(|origin| wire::OriginRecord {
                    hub_id: origin.hub_id,
                    author: origin.author,
                    machine: origin.machine,
                    merged: origin.merged,
                    hub_seq: origin.hub_seq,
                    conflict: origin.conflict,
                })
                .collect();
            RpcResult::Ok(record)
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::IMPORT, |params, engine, _| {
            let params: wire::ImportParams = parse(&params)?;
            let items = params
                .items
                .into_iter()
                .map(|item| {
                    let item: wire::ImportItem = wire::parse_value(item).map_err(|error| error.to_string())?;
                    import_item(item).map_err(|error| error.message().to_owned())
                })
                .collect();
            let imported = engine.import(items).map_err(|error| to_rpc_error(&engine, error))?;
            RpcResult::Ok(wire::ImportResult {
                ids: imported.ids,
                imported: imported.imported,
                duplicates: imported.duplicates,
                rejected: imported
                    .rejected
                    .into_iter()
                    .map(|(index, error)| wire::RejectedItem { index, error })
                    .collect(),
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::DELETE, |params, engine, _| {
            let params: wire::DeleteParams = parse(&params)?;
            if params.ids.is_empty() {
                return Err(invalid("ids", "must name at least one experience"));
            }
            let ids = params.ids.iter().map(|id| experience_id("ids", id)).collect::<RpcResult<Vec<_>>>()?;
            let (deleted, missing) = engine.delete(&ids).map_err(|error| to_rpc_error(&engine, error))?;
            RpcResult::Ok(wire::DeleteResult { deleted, missing })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::PENDING, |params, engine, _| {
            let params: wire::PendingParams = parse(&params)?;
            let limit = page_limit(params.limit, 100)?;
            let held = engine.pending(limit).map_err(|error| to_rpc_error(&engine, error))?;
            let experiences: Vec<wire::PendingRecord> = held.into_iter().map(pending_record).collect();
            RpcResult::Ok(wire::PendingResult { count: experiences.len(), experiences })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXTRACT_LEASE, |params, engine, _| {
            let _: wire::LeaseParams = parse(&params)?;
            let leased = crate::extraction::lease(&engine)
                .map_err(|error| to_rpc_error(&engine, EngineError::Internal(error)))?;
            RpcResult::Ok(match leased {
                crate::extraction::Leased::Job(lease) => wire::LeaseResult {
                    job: Some(wire::LeasedJob {
                        job_id: lease.job_id,
                        agent_id: lease.agent_id,
                        session_key: lease.session_key,
                        system: lease.system.to_owned(),
                        message: lease.message,
                        timeout_ms: lease.timeout.as_millis() as u64,
                        max_tokens: lease.max_tokens,
                        response_format: kb_extract::prompt::response_format(),
                    }),
                    waiting: None,
                },
                crate::extraction::Leased::Nothing(waiting) => wire::LeaseResult { job: None, waiting },
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXTRACT_RESULT, |params, engine, _| {
            let params: wire::ExtractResultParams = parse(&params)?;
            let answer = match (params.text, params.error) {
                (Some(text), None) => Ok(text),
                (None, Some(error)) => Err(error),
                _ => return Err(invalid("text", "give exactly one of text and error")),
            };
            let accepted = crate::extraction::finish_lease(&engine, params.job_id, answer, params.tokens)
                .map_err(|error| to_rpc_error(&engine, EngineError::Internal(error)))?;
            RpcResult::Ok(wire::ExtractResultResult { accepted })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXTRACT_JOBS, |params, engine, _| {
            let params: wire::JobsParams = parse(&params)?;
            let limit = page_limit(params.limit, 50)?;
            if let Some(state) = params.state.as_deref()
                && !["queued", "done", "failed", "dropped"].contains(&state)
            {
                return Err(invalid("state", format!("must be queued, done, failed or dropped, got {state:?}")));
            }
            let jobs =
                engine.extraction_jobs(params.state.as_deref(), limit).map_err(|error| to_rpc_error(&engine, error))?;
            let jobs = jobs
                .into_iter()
                .map(|job| wire::JobRecord {
                    id: job.id,
                    session_key: job.session_key,
                    retryable: job.state == "failed" && job.has_conversation,
                    state: job.state,
                    attempts: job.attempts,
                    created_at: rfc3339(job.created_at),
                    finished_at: job.finished_at.map(rfc3339),
                    tokens: job.tokens,
                    proposals: job.proposals,
                    messages: job.turn_count,
                    error: job.error,
                })
                .collect();
            RpcResult::Ok(wire::JobsResult { jobs })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXTRACT_RETRY, |params, engine, _| {
            let params: wire::RetryParams = parse(&params)?;
            if params.ids.is_empty() {
                return Err(invalid("ids", "must name at least one job"));
            }
            let retried = engine.retry_extractions(&params.ids).map_err(|error| to_rpc_error(&engine, error))?;
            let mut result = wire::RetryResult { retried: Vec::new(), not_retried: Vec::new() };
            for (id, retried) in params.ids.iter().copied().zip(retried) {
                if retried { result.retried.push(id) } else { result.not_retried.push(id) }
            }
            RpcResult::Ok(result)
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::HUB_SYNC, |_params, engine, _| {
            let (pushed_before, pulled_before) = engine.hub.totals();
            if engine.config.hub.url.is_none() {
                return Err(invalid("hub", "no hub is configured: set [hub] url and team in the daemon's config.toml"));
            }
            let round = engine.hub.request();
            if !engine.hub.wait_for(round, std::time::Duration::from_secs(60)) {
                return Err(ErrorObjectOwned::owned(
                    ErrorCode::Unavailable.code(),
                    "the hub sync did not finish within 60 s; it goes on in the background (see `kbctl hub status`)",
                    None::<()>,
                ));
            }
            let hub = crate::hub::status(&engine).map_err(|error| to_rpc_error(&engine, error))?;
            let (pushed, pulled) = engine.hub.totals();
            Ok::<_, ErrorObjectOwned>(wire::HubSyncResult {
                pushed: pushed - pushed_before,
                pulled: pulled - pulled_before,
                hub,
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::APPROVE, |params, engine, _| review(&engine, &params, Status::Active))
        .expect("method names are unique");
    module
        .register_blocking_method(method::REJECT, |params, engine, _| review(&engine, &params, Status::Rejected))
        .expect("method names are unique");
    module
        .register_blocking_method(method::LIST, |params, engine, _| {
            let params: wire::ListParams = parse(&params)?;
            let status =
                match params.status.as_deref() {
                    None => None,
                    Some(text) => Some(Status::parse(text).ok_or_else(|| {
                        invalid("status", format!("must be active, pending or rejected, got {text:?}"))
                    })?),
                };
            let limit = page_limit(params.limit, 50)?;
            let filter = ListFilter { status, agent_id: params.agent_id, before_id: params.before_id, limit };
            let experiences = engine.list(&filter).map_err(|error| to_rpc_error(&engine, error))?;
            let next_before_id =
                (experiences.len() == limit).then(|| experiences.last().map(|last| last.id.to_string())).flatten();
            let experiences: Vec<wire::ExperienceRecord> = experiences.into_iter().map(record).collect();
            RpcResult::Ok(wire::ListResult { count: experiences.len(), experiences, next_before_id })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXPORT, |params, engine, _| {
            let params: wire::ExportParams = parse(&params)?;
            let limit = page_limit(params.limit, 500)?;
            let rows =
                engine.export_page(params.after_id.as_deref(), limit).map_err(|error| to_rpc_error(&engine, error))?;
            let next_after_id =
                (rows.len() == limit).then(|| rows.last().map(|last| last.experience.id.to_string())).flatten();
            let items = rows
                .into_iter()
                .map(|row| {
                    let mut record = record(row.experience);
                    record.variants = row.variants.into_iter().map(variant_record).collect();
                    wire::ExportItem { record, content: row.content }
                })
                .collect();
            RpcResult::Ok(wire::ExportResult { items, next_after_id })
        })
        .expect("method names are unique");
    module
        .register_async_method(method::HOOK_EVENT, |params, engine, _| async move {
            let started = Instant::now();
            let params: wire::HookEventParams = parse(&params)?;
            let hook = params.hook.trim();
            if hook.is_empty() || hook.len() > 128 {
                return Err(invalid("hook", "must be a hook name"));
            }
            let config = hook_config(params.config.as_ref())?;
            let input = HookInput { hook, event: &params.event, ctx: &params.ctx, config };
            if let Some(conversation) = input.conversation() {
                // Queued off the hook's path: the turn has ended, and nothing waits for this.
                let engine = engine.clone();
                tokio::task::spawn_blocking(move || {
                    if let Err(error) = crate::extraction::on_conversation(&engine, conversation) {
                        let message = format!("extraction: cannot queue a conversation: {error:#}");
                        tracing::error!("{message}");
                        engine.last_error.set(message);
                    }
                });
            }
            let outcome = engine.hooks.handle(&engine, input).await;
            engine.hook_latency.record(started.elapsed());
            RpcResult::Ok(wire::HookEventResult {
                action: "allow".to_owned(),
                prepend_context: outcome.prepend_context,
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::REINDEX, |params, engine, _| {
            let started = Instant::now();
            let params: wire::ReindexParams = parse(&params)?;
            let reindexed =
                engine.reindex(params.embeddings.unwrap_or(true)).map_err(|error| to_rpc_error(&engine, error))?;
            let took_ms = started.elapsed().as_millis() as u64;
            RpcResult::Ok(reindex_result(reindexed, took_ms))
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::BACKUP, |params, engine, _| {
            let params: wire::BackupParams = parse(&params)?;
            let path = backup_path(&params.path)?;
            let bytes = engine.backup(&path).map_err(|error| to_rpc_error(&engine, error))?;
            RpcResult::Ok(wire::BackupResult { path: params.path, bytes })
        })
        .expect("method names are unique");
    module
}

fn reindex_result(reindexed: Reindexed, took_ms: u64) -> wire::ReindexResult {
    let (embeddings, queued_embeddings, model, note) = match reindexed.embeddings {
        None => ("skipped", 0, None, None),
        Some(Refresh::Queued { queued, model_id }) => ("queued", queued, Some(model_id), None),
        Some(Refresh::Deferred) => {
            let note =
                "the embedding model is still loading; every experience will be embedded again once it has loaded";
            ("deferred", 0, None, Some(note.to_owned()))
        }
        Some(Refresh::Unavailable { reason }) => {
            ("unavailable", 0, None, Some(format!("embeddings not redone: no embedding model ({reason})")))
        }
    };
    wire::ReindexResult {
        indexed: reindexed.indexed,
        took_ms,
        embeddings: Some(embeddings.to_owned()),
        queued_embeddings,
        model,
        note,
    }
}

fn embedder_status(engine: &Engine) -> wire::EmbedderStatus {
    use kb_embed::EmbedderState;
    let status = engine.semantic.status();
    let (state, model, dimensions, detail) = match status.state {
        EmbedderState::Unavailable { reason } if status.disabled => ("disabled", None, None, Some(reason)),
        EmbedderState::Loading => {
            ("loading", None, None, Some("loading the model; searching by BM25 meanwhile".to_owned()))
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
    wire::EmbedderStatus {
        state: state.to_owned(),
        model,
        backlog: status.backlog,
        vectors: status.vectors,
        dimensions,
        runtime: kb_embed::runtime::loaded_library().map(|path| path.display().to_string()),
        detail,
    }
}

fn status(engine: &Engine, socket: &std::path::Path) -> RpcResult<wire::StatusResult> {
    let counts = engine.counts().map_err(|error| to_rpc_error(engine, error))?;
    let store_seq = engine.store_seq().map_err(|error| to_rpc_error(engine, error))?;
    let index_state = engine.index_state();
    let (state, detail) = match &index_state {
        IndexState::Ready => ("ready", None),
        IndexState::Rebuilding { reason } => {
            ("rebuilding", Some(format!("{reason}; {} done", engine.rebuild_progress())))
        }
        IndexState::Failed { reason } => ("degraded", Some(format!("{reason}; retrying every few seconds"))),
    };
    let extraction = extraction_status(engine).map_err(|error| to_rpc_error(engine, error))?;
    let latency = |figures: crate::stats::LatencyFigures| wire::LatencySummary {
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
            store_seq,
            detail,
        },
        embedder: embedder_status(engine),
        queue_depth: extraction.queued,
        extraction,
        hub: crate::hub::status(engine).map_err(|error| to_rpc_error(engine, error))?,
        latencies: wire::Latencies {
            search: latency(engine.search_latency.figures()),
            submit: latency(engine.submit_latency.figures()),
            hook: latency(engine.hook_latency.figures()),
        },
        hooks: {
            let injected = engine.hooks.injected();
            wire::HookStatus {
                sessions: engine.hooks.active_sessions() as u64,
                events: engine.hooks.seen().into_iter().collect(),
                tool_calls: engine.hooks.tool_calls().into_iter().collect(),
                injected: wire::HookInjected {
                    intros: injected.intros,
                    reminders: injected.reminders,
                    recalls: injected.recalls,
                    chars: injected.chars,
                },
            }
        },
        last_error: engine
            .last_error
            .get()
            .map(|(at, message)| wire::LastError { at: humantime::format_rfc3339_seconds(at).to_string(), message }),
        healthy: index_state == IndexState::Ready,
    })
}

fn extraction_status(engine: &Engine) -> Result<wire::ExtractionStatus, EngineError> {
    let config = &engine.config.extraction;
    let day = crate::engine::now_ms().div_euclid(86_400_000);
    let stats = engine.extraction_stats(day)?;
    let counter = |name: &str| stats.counters.get(name).copied().unwrap_or(0);
    let (route, endpoint, model) = match crate::extraction::route(config) {
        crate::extraction::Route::Endpoint { base_url, model } => ("endpoint", Some(base_url), Some(model)),
        crate::extraction::Route::OpenClaw => ("openclaw", None, None),
        crate::extraction::Route::None => ("none", None, None),
    };
    Ok(wire::ExtractionStatus {
        enabled: engine.extraction.requested() || stats.queued > 0,
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
        pending_proposals: stats.pending_proposals,
        tokens_today: stats.tokens_today,
        daily_token_cap: config.daily_token_cap,
        waiting: engine.extraction.waiting(),
        last_error: stats.last_error.map(|(at, message)| wire::LastError { at: rfc3339(at), message }),
    })
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

fn parse<T: serde::de::DeserializeOwned>(params: &Params<'_>) -> RpcResult<T> {
    wire::parse_params(params.as_str()).map_err(param_error)
}

fn param_error(error: ParamError) -> ErrorObjectOwned {
    let message = error.to_string();
    ErrorObjectOwned::owned(ErrorCode::InvalidParams.code(), message, Some(serde_json::json!({"field": error.field})))
}

fn invalid(field: &str, message: impl Into<String>) -> ErrorObjectOwned {
    param_error(ParamError { field: field.to_owned(), message: message.into() })
}

/// Maps an engine error to a JSON-RPC error; internal errors are also kept for `status`.
fn to_rpc_error(engine: &Engine, error: EngineError) -> ErrorObjectOwned {
    match error {
        EngineError::Invalid { field, message } => invalid(&field, message),
        EngineError::NotFound(message) => ErrorObjectOwned::owned(ErrorCode::NotFound.code(), message, None::<()>),
        EngineError::Unavailable(message) => {
            ErrorObjectOwned::owned(ErrorCode::Unavailable.code(), message, None::<()>)
        }
        EngineError::Internal(error) => {
            let message = format!("internal error: {error:#}");
            tracing::error!("{message}");
            engine.last_error.set(message.clone());
            ErrorObjectOwned::owned(ErrorCode::Internal.code(), message, None::<()>)
        }
    }
}

/// The longest path the kernel takes (`PATH_MAX`, its NUL included).
const MAX_PATH_BYTES: usize = 4095;

/// Checks `kb.backup`'s path before SQLite sees it: SQLite takes file names as C strings, so
/// a NUL would cut the path short and the copy would land somewhere else, reported as 0 bytes
/// (issue 14).
fn backup_path(text: &str) -> RpcResult<PathBuf> {
    if text.is_empty() {
        return Err(invalid("path", "must not be empty"));
    }
    if let Some(position) = text.find('\0') {
        return Err(invalid("path", format!("must not contain a NUL character (found at byte {position})")));
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(invalid("path", format!("is {} bytes long, over the limit of {MAX_PATH_BYTES}", text.len())));
    }
    let path = PathBuf::from(text);
    if !path.is_absolute() {
        return Err(invalid("path", format!("must be an absolute path, got {text:?}")));
    }
    if text.ends_with('/') || path.file_name().is_none() {
        return Err(invalid("path", format!("must name a file, not a directory: {text:?}")));
    }
    let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(std::path::Path::new("/"));
    if !directory.is_dir() {
        return Err(invalid("path", format!("the directory {} does not exist", directory.display())));
    }
    Ok(path)
}

fn experience_id(field: &str, text: &str) -> RpcResult<String> {
    kb_core::ExperienceId::parse(text)
        .map(|id| id.to_string())
        .ok_or_else(|| invalid(field, format!("{text:?} is not an experience id")))
}

/// `kb.approve` and `kb.reject`: sets the status of the named experiences.
fn review(engine: &Engine, params: &Params<'_>, status: Status) -> RpcResult<wire::ReviewResult> {
    let params: wire::ReviewParams = parse(params)?;
    if params.ids.is_empty() {
        return Err(invalid("ids", "must name at least one experience"));
    }
    let ids = params.ids.iter().map(|id| experience_id("ids", id)).collect::<RpcResult<Vec<_>>>()?;
    let edit = match params.edit {
        None => None,
        Some(_) if status != Status::Active => return Err(invalid("edit", "only kb.approve takes an edit")),
        Some(_) if ids.len() != 1 => return Err(invalid("edit", "an edit applies to one id; name exactly one")),
        Some(edit) => Some(crate::engine::Edit {
            task: edit.task,
            resource: edit.resource,
            result: edit.result,
            score: edit.score,
            content: edit.content,
        }),
    };
    let reviewed = engine.review(&ids, status, edit.as_ref()).map_err(|error| to_rpc_error(engine, error))?;
    let mut result =
        wire::ReviewResult { changed: Vec::new(), merged: reviewed.merged, unchanged: Vec::new(), missing: Vec::new() };
    for (id, before) in ids.into_iter().zip(reviewed.before) {
        match before {
            None => result.missing.push(id),
            Some(before) if before == status => result.unchanged.push(id),
            Some(before) => {
                tracing::info!(%id, from = before.as_str(), to = status.as_str(), reason = params.reason.as_deref().unwrap_or(""), "reviewed");
                result.changed.push(id);
            }
        }
    }
    Ok(result)
}

fn page_limit(limit: Option<i64>, default: usize) -> RpcResult<usize> {
    match limit {
        None => Ok(default),
        Some(limit) if limit < 1 => Err(invalid("limit", format!("must be at least 1, got {limit}"))),
        Some(limit) => Ok((limit as usize).min(MAX_PAGE)),
    }
}

fn source(text: Option<&str>, default: Source) -> RpcResult<Source> {
    match text {
        None => Ok(default),
        Some(text) => Source::parse(text)
            .ok_or_else(|| invalid("source", format!("must be tool, extraction, import or cli, got {text:?}"))),
    }
}

fn new_experience(params: wire::SubmitParams) -> RpcResult<NewExperience> {
    Ok(NewExperience {
        source: Some(source(params.source.as_deref(), Source::Tool)?),
        task: params.task,
        resource: params.resource,
        result: params.result,
        score: params.score,
        content: params.content,
        content_type: params.content_type,
        agent_id: params.agent_id,
        submitted_by: params.submitted_by,
        session_key: params.session_key,
        confidence: None,
    })
}

/// An import item as a new experience, with the status and the variants its export line
/// carried, if any.
fn import_item(item: wire::ImportItem) -> RpcResult<ImportEntry> {
    let held = match item.status.as_deref() {
        None => None,
        Some(text) => Some(
            Status::parse(text)
                .ok_or_else(|| invalid("status", format!("must be active, pending or rejected, got {text:?}")))?,
        ),
    };
    let new = NewExperience {
        source: Some(source(item.source.as_deref(), Source::Import)?),
        task: item.task,
        resource: item.resource,
        result: item.result,
        score: item.score,
        content: item.content,
        content_type: item.content_type,
        agent_id: item.agent_id,
        submitted_by: item.submitted_by,
        session_key: item.session_key,
        confidence: item.confidence,
    };
    let variants = item
        .variants
        .into_iter()
        .enumerate()
        .map(|(index, variant)| {
            let created_at = humantime::parse_rfc3339_weak(&variant.created_at).map_err(|error| {
                invalid(&format!("variants[{index}].created_at"), format!("is not a time: {error}"))
            })?;
            let created_at_ms = created_at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
            Ok(CarriedVariant {
                new: NewExperience {
                    source: Some(source(Some(&variant.source), Source::Import)?),
                    task: variant.task,
                    resource: variant.resource,
                    result: variant.result,
                    score: Some(i64::from(variant.score)),
                    content: variant.content,
                    content_type: variant.content_type,
                    agent_id: variant.agent_id,
                    submitted_by: variant.submitted_by,
                    session_key: variant.session_key,
                    confidence: None,
                },
                similarity: variant.similarity,
                created_at_ms,
            })
        })
        .collect::<RpcResult<Vec<_>>>()?;
    Ok(ImportEntry { new, held, variants })
}

fn variant_record(variant: kb_store::Variant) -> wire::VariantRecord {
    wire::VariantRecord {
        task: variant.task,
        resource: variant.resource,
        result: variant.result,
        score: variant.score,
        content: variant.content,
        content_type: variant.content_type,
        agent_id: variant.agent_id,
        submitted_by: variant.submitted_by,
        session_key: variant.session_key,
        source: variant.source,
        similarity: variant.similarity.map(|similarity| (similarity * 1000.0).round() / 1000.0),
        created_at: rfc3339(variant.created_at),
    }
}

fn record(experience: Experience) -> wire::ExperienceRecord {
    wire::ExperienceRecord {
        id: experience.id.to_string(),
        task: experience.task,
        resource: experience.resource,
        result: experience.result,
        score: experience.score,
        has_content: experience.has_content,
        content_type: experience.content_type,
        agent_id: experience.agent_id,
        submitted_by: experience.submitted_by,
        session_key: experience.session_key,
        source: experience.source.as_str().to_owned(),
        status: experience.status.as_str().to_owned(),
        confidence: experience.confidence,
        flags: experience.flags,
        created_at: rfc3339(experience.created_at_ms),
        updated_at: rfc3339(experience.updated_at_ms),
        merge_count: experience.merge_count,
        recall_count: experience.recall_count,
        variants: Vec::new(),
        origins: Vec::new(),
    }
}

fn pending_record(held: crate::engine::Held) -> wire::PendingRecord {
    let (similar, similarity) =
        held.similar.map(|(experience, similarity)| (Box::new(record(experience)), similarity)).unzip();
    wire::PendingRecord {
        experience: record(held.experience),
        extraction: held.proposal.map(|proposal| wire::ProposalRecord {
            job_id: proposal.job_id,
            outcome: proposal.outcome,
            evidence: serde_json::from_str(&proposal.evidence_json).unwrap_or(serde_json::Value::Null),
        }),
        similar,
        similarity,
    }
}

fn rfc3339(unix_ms: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_millis(unix_ms.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup_error(path: &str) -> String {
        let error = backup_path(path).expect_err(path);
        assert_eq!(error.code(), ErrorCode::InvalidParams.code());
        assert_eq!(error.data().map(|data| data.get()), Some(r#"{"field":"path"}"#));
        error.message().to_owned()
    }

    #[test]
    fn backup_paths_that_sqlite_would_misread_are_refused_by_name() {
        assert!(backup_error("/tmp/backup\0.db").contains("NUL character (found at byte 11)"));
        assert!(backup_error("").contains("must not be empty"));
        assert!(backup_error("backup.db").contains("absolute"));
        assert!(backup_error("/tmp/").contains("must name a file"));
        assert!(backup_error("/no/such/directory/backup.db").contains("/no/such/directory does not exist"));
        assert!(backup_error(&format!("/tmp/{}", "x".repeat(5000))).contains("over the limit of 4095"));
        assert_eq!(backup_path("/tmp/backup.db").unwrap(), PathBuf::from("/tmp/backup.db"));
    }
}
