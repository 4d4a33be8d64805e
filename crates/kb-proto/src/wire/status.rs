//! `status`, and `hub.sync`'s result (the hub's part of status).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// status

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusResult {
    pub version: String,
    pub protocol: u32,
    pub pid: u32,
    pub uptime_s: u64,
    pub socket: String,
    /// All stored experiences, whatever their status.
    pub experiences: u64,
    pub counts: StatusCounts,
    pub paths: StatusPaths,
    pub index: IndexStatus,
    pub embedder: EmbedderStatus,
    /// Conversations waiting for extraction.
    pub queue_depth: u64,
    pub latencies: Latencies,
    #[serde(default)]
    pub hooks: HookStatus,
    #[serde(default)]
    pub extraction: ExtractionStatus,
    #[serde(default)]
    pub hub: HubStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    /// True when the daemon can store and search (the database answers, the index is ready)
    /// and no background service has been failing or degraded beyond a short grace.
    pub healthy: bool,
    /// Every background service, as the daemon's supervisor sees it (absent from daemons
    /// older than the supervisor).
    #[serde(default)]
    pub services: Vec<ServiceStatus>,
    /// The key that proves this daemon to clients (`daemon.prove`); absent from daemons older
    /// than the proof, which the OpenClaw plugin refuses. `healthy` is false when it could not
    /// be written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<super::IdentityStatus>,
}

/// One supervised background service of the daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceStatus {
    /// `index`, `embedder`, `extraction`, `hub` or `flush`.
    pub name: String,
    /// `starting`, `running`, `degraded`, `failed` (waiting to be restarted) or `off`.
    pub state: String,
    /// Why it is degraded, failed or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it entered this state (RFC 3339).
    pub since: String,
    /// Since when it has been failing or degraded without a healthy report in between.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_since: Option<String>,
    /// Failing or degraded for longer than the grace: the daemon is not healthy.
    #[serde(default)]
    pub unhealthy: bool,
    /// Restarts after a crash or an error since the daemon started.
    #[serde(default)]
    pub restarts: u64,
    /// The last crash or error, kept after the service healed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<LastError>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub active: u64,
    pub pending: u64,
    pub rejected: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusPaths {
    pub home: String,
    pub database: String,
    pub index: String,
    pub config: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// `ready`, `rebuilding` or `failed`.
    pub state: String,
    pub documents: u64,
    /// The store change searches reflect: staged in memory or committed to the segments.
    pub applied_seq: u64,
    /// The store change the index's segments hold (writes are staged first, committed within
    /// 250 ms); after a crash the index catches up from here.
    #[serde(default)]
    pub committed_seq: u64,
    pub store_seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedderStatus {
    /// `ready`, `loading`, `unavailable` or `disabled`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Experiences not yet embedded.
    pub backlog: u64,
    /// Vectors in the vector index (active experiences embedded by `model`).
    #[serde(default)]
    pub vectors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<usize>,
    /// The ONNX Runtime library in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Submits since the start that waited for their vector before they committed (a stored
    /// experience holds most of their words: a possible near-duplicate).
    #[serde(default)]
    pub submits_embedded_first: u64,
    /// Submits since the start that committed before their vector, which the backlog makes.
    #[serde(default)]
    pub submits_embedded_after: u64,
    /// Where search queries are embedded while the model is ready: `own session (1 thread)`,
    /// or `shared with writes: <why>` (then a query may wait for a write's run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_session: Option<String>,
    /// The mean share of a stored experience's text the model's window holds (from a sample of
    /// the store; 1 when every text fits), which scales the vectors' weight in a hybrid search;
    /// absent until it is measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_share: Option<f32>,
}

/// Recent request latencies, over a sliding window of the last requests of each kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    pub search: LatencySummary,
    pub submit: LatencySummary,
    #[serde(default)]
    pub hook: LatencySummary,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Hook events seen since the daemon started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookStatus {
    /// OpenClaw sessions the daemon follows (seen within the last 6 hours, not ended).
    pub sessions: u64,
    /// Events per hook name. A tool call made through Tool Search (`tool_call`,
    /// `tool_search_code`) fires the tool hooks twice; it is counted once, under the real tool.
    pub events: BTreeMap<String, u64>,
    /// Tool calls per tool name, counted once each as above.
    #[serde(default)]
    pub tool_calls: BTreeMap<String, u64>,
    /// What the hooks injected into prompts.
    #[serde(default)]
    pub injected: HookInjected,
}

/// What the hooks injected into prompts since the daemon started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookInjected {
    /// Intros (at most one per session).
    pub intros: u64,
    /// Reminders to submit.
    pub reminders: u64,
    /// Auto-recall blocks.
    pub recalls: u64,
    /// Characters injected, all kinds together.
    pub chars: u64,
}

/// Extraction of experiences from finished conversations (never the API key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExtractionStatus {
    /// A hook event asked for extraction since the daemon started (the plugin's
    /// `enableServerExtraction`), or jobs wait in the queue.
    pub enabled: bool,
    /// `endpoint` or `openclaw`.
    pub route: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Jobs waiting.
    pub queued: u64,
    pub done: u64,
    pub failed: u64,
    /// Conversations the gate before spend skipped (nothing reusable: no LLM call).
    pub skipped: u64,
    /// Jobs dropped because the queue was full.
    pub dropped: u64,
    /// Proposals stored, and those dropped: below the confidence floor, failing the gate or
    /// unreadable, rejected by the user before, or held already.
    pub proposed: u64,
    pub low_confidence: u64,
    pub invalid: u64,
    pub rejected_before: u64,
    pub already_proposed: u64,
    /// Proposals held as suspected prompt injections.
    pub quarantined: u64,
    /// Proposals not kept because an answer held more than `max_proposals_per_job` or the
    /// review queue was at `max_pending_proposals` (the least confident first).
    #[serde(default)]
    pub over_limit: u64,
    /// Extracted proposals waiting for review.
    pub pending_proposals: u64,
    pub tokens_today: u64,
    pub daily_token_cap: u64,
    /// What the worker waits for (no endpoint configured, the daily cap), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
}

/// The team hub (never its password).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HubStatus {
    /// `off` (no `[hub]` configured), `connecting`, `connected` or `error`.
    pub state: String,
    /// `user@host:port/dbname`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
    /// The `sslmode` in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// When a sync round last completed without error (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync: Option<String>,
    /// Seconds since then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_s: Option<u64>,
    /// Local changes waiting to be pushed, and those the hub refused (kept until they change).
    pub outbox: u64,
    pub refused: u64,
    /// Teammates' changes on the hub not applied here yet (at the last sync).
    pub behind: u64,
    /// The hub change number applied up to.
    pub pulled_seq: i64,
    /// Since the daemon started.
    pub pushed: u64,
    pub pulled: u64,
    /// Experiences held here that came from teammates.
    pub team_experiences: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<LastError>,
    /// The login this daemon shares as (who the team sees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Set when no sync round has completed for longer than a few poll intervals: since when
    /// (RFC 3339). `healthy` is false then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled_since: Option<String>,
    /// Teammates' rows that could not be taken (bad values, too big, refused by the gate),
    /// since the store was made; the newest of them, and rows numbered out of sequence on the
    /// hub now.
    #[serde(default)]
    pub skipped: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_recent: Vec<HubSkipped>,
    /// Teammates' changes held back, per author (over their daily limit here, or unhidden and
    /// not fetched yet); fetched when the day's allowance allows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<HubHeld>,
    /// Teammates' experiences deleted here and kept hidden (`kbctl hub hidden`).
    #[serde(default)]
    pub hidden: u64,
}

/// A teammate's row that could not be taken from the hub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubSkipped {
    pub hub_seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// Changes of one teammate held back here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubHeld {
    pub author: String,
    pub changes: u64,
}

/// A teammate's experience hidden here (`hub.hidden`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubHidden {
    pub author: String,
    pub id: String,
    pub task: String,
    pub at: String,
}

/// `hub.hidden`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubHiddenResult {
    pub hidden: Vec<HubHidden>,
}

/// `hub.unhide`'s parameters: the experience as the hub knows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubUnhideParams {
    pub author: String,
    pub id: String,
}

/// `hub.unhide`'s answer: whether it was hidden (it is fetched again at the next sync).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubUnhideResult {
    pub unhidden: bool,
}

/// What `hub.sync` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HubSyncResult {
    pub pushed: u64,
    pub pulled: u64,
    pub hub: HubStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastError {
    pub at: String,
    pub message: String,
}
