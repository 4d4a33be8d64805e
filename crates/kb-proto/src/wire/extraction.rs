//! The extraction queue's methods: lease and result (run by the plugin), jobs and retry.

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// extract.lease, extract.result: extraction on OpenClaw's model, run by the plugin

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseParams {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaseResult {
    /// The job to run now, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<LeasedJob>,
    /// Why there is none, beyond an empty queue (the daily cap, the daemon's own endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
}

/// One completion to run: `api.runtime.subagent.complete({agentId, message, extraSystemPrompt: system, timeoutMs})`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeasedJob {
    pub job_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub session_key: String,
    pub system: String,
    pub message: String,
    pub timeout_ms: u64,
    /// Tokens the answer may take.
    pub max_tokens: u32,
    /// The answer's JSON schema, as Chat Completions' `response_format`.
    pub response_format: serde_json::Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractResultParams {
    pub job_id: i64,
    /// The model's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Why the call failed (then `text` is absent); retried with backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Tokens the call used, when the runtime said; estimated otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractResultResult {
    /// False when the job was not waiting for a result any more (a late answer): ignored.
    pub accepted: bool,
}

// ---------------------------------------------------------------------------------------------
// extract.jobs, extract.retry: the extraction queue for people

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsParams {
    /// queued, done, failed or dropped; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobsResult {
    pub jobs: Vec<JobRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: i64,
    pub session_key: String,
    pub state: String,
    pub attempts: u32,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    pub tokens: u64,
    pub proposals: u64,
    pub messages: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// False once a failed job's conversation was forgotten (after a week): it cannot be retried.
    pub retryable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryParams {
    pub ids: Vec<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryResult {
    pub retried: Vec<i64>,
    /// Ids of no failed job that still holds its conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_retried: Vec<i64>,
}
