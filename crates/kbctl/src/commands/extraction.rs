//! Extraction jobs: `kbctl extraction` lists them with their state and error, `kbctl extraction
//! retry ID…` queues failed ones again.

use std::process::ExitCode;

use kb_proto::wire;
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use crate::output::{self, clip};

pub(super) async fn jobs(client: &mut Client, state: Option<&str>, limit: i64, json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::JobsResult = call(client, method::EXTRACT_JOBS, &json!({"state": state, "limit": limit})).await?;
    if json {
        output::json(&result)?;
    } else if result.jobs.is_empty() {
        output::line("no extraction jobs")?;
    } else {
        for job in &result.jobs {
            output::line(format!(
                "{:>5}  {:<7} {} messages, {} attempts, {} tokens, {} proposals  {}  ({})",
                job.id,
                job.state,
                job.messages,
                job.attempts,
                job.tokens,
                job.proposals,
                job.created_at,
                clip(&job.session_key, 40)
            ))?;
            if let Some(error) = &job.error {
                output::line(format!("       {}", clip(error, 200)))?;
            }
        }
        if result.jobs.iter().any(|job| job.retryable) {
            output::line("queue failed jobs again with `kbctl extraction retry ID…`")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn retry(client: &mut Client, ids: &[i64], json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::RetryResult = call(client, method::EXTRACT_RETRY, &json!({"ids": ids})).await?;
    if json {
        output::json(&result)?;
    } else {
        output::line(format!("queued again: {}", result.retried.len()))?;
        for id in &result.not_retried {
            output::line(format!("job {id} is not a failed job that still holds its conversation"))?;
        }
    }
    Ok(if result.not_retried.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
