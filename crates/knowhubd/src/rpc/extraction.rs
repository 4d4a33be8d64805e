//! The extraction queue's methods: `extract.lease` and `extract.result` (the plugin runs a job
//! on OpenClaw's model), `extract.jobs` and `extract.retry`.

use std::sync::Arc;

use jsonrpsee::RpcModule;
use kb_proto::method;
use kb_proto::wire;

use super::{RpcResult, invalid, page_limit, parse, rfc3339, to_rpc_error};
use crate::app::App;
use kb_engine::engine::EngineError;

pub(super) fn register(module: &mut RpcModule<Arc<App>>) {
    module
        .register_blocking_method(method::EXTRACT_LEASE, |params, app, _| {
            let engine = &app.engine;
            let _: wire::LeaseParams = parse(&params)?;
            let leased = crate::extraction::lease(engine, &app.extraction)
                .map_err(|error| to_rpc_error(engine, EngineError::Internal(error)))?;
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
        .register_blocking_method(method::EXTRACT_RESULT, |params, app, _| {
            let engine = &app.engine;
            let params: wire::ExtractResultParams = parse(&params)?;
            let answer = match (params.text, params.error) {
                (Some(text), None) => Ok(text),
                (None, Some(error)) => Err(error),
                _ => return Err(invalid("text", "give exactly one of text and error")),
            };
            let accepted =
                crate::extraction::finish_lease(engine, &app.extraction, params.job_id, answer, params.tokens)
                    .map_err(|error| to_rpc_error(engine, EngineError::Internal(error)))?;
            RpcResult::Ok(wire::ExtractResultResult { accepted })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXTRACT_JOBS, |params, app, _| {
            let engine = &app.engine;
            let params: wire::JobsParams = parse(&params)?;
            let limit = page_limit(params.limit, 50)?;
            if let Some(state) = params.state.as_deref()
                && !["queued", "done", "failed", "dropped"].contains(&state)
            {
                return Err(invalid("state", format!("must be queued, done, failed or dropped, got {state:?}")));
            }
            let jobs =
                engine.extraction_jobs(params.state.as_deref(), limit).map_err(|error| to_rpc_error(engine, error))?;
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
        .register_blocking_method(method::EXTRACT_RETRY, |params, app, _| {
            let engine = &app.engine;
            let params: wire::RetryParams = parse(&params)?;
            if params.ids.is_empty() {
                return Err(invalid("ids", "must name at least one job"));
            }
            let retried = engine.retry_extractions(&params.ids).map_err(|error| to_rpc_error(engine, error))?;
            app.extraction.wake();
            let mut result = wire::RetryResult { retried: Vec::new(), not_retried: Vec::new() };
            for (id, retried) in params.ids.iter().copied().zip(retried) {
                if retried { result.retried.push(id) } else { result.not_retried.push(id) }
            }
            RpcResult::Ok(result)
        })
        .expect("method names are unique");
}
