//! Parameter and result types of every method, as they travel in JSON.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// A parameter error: which field is wrong and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The path of the offending field (`items[3].score`), or empty when the whole params are off.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "invalid params: {}", self.message)
        } else {
            write!(f, "invalid `{}`: {}", self.field, self.message)
        }
    }
}

/// Parses named params (a JSON object) into `T`, naming the field at fault on error.
/// Absent params parse as `{}`, so methods whose params are all optional accept none.
pub fn parse_params<T: DeserializeOwned>(raw: Option<&str>) -> Result<T, ParamError> {
    let raw = raw.unwrap_or("{}");
    if raw.trim_start().starts_with('[') {
        return Err(ParamError {
            field: String::new(),
            message: "params must be an object of named parameters, not an array".to_owned(),
        });
    }
    parse_value_str(raw)
}

/// Parses one JSON text into `T`, naming the field at fault on error.
pub fn parse_value_str<T: DeserializeOwned>(raw: &str) -> Result<T, ParamError> {
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut deserializer).map_err(param_error)
}

/// Parses an already-decoded JSON value into `T` (no re-serialization), naming the field at
/// fault on error.
pub fn parse_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ParamError> {
    serde_path_to_error::deserialize(value).map_err(param_error)
}

fn param_error(error: serde_path_to_error::Error<serde_json::Error>) -> ParamError {
    let path = error.path().to_string();
    let inner = error.into_inner();
    // serde_json appends " at line L column C", which means nothing to a caller of a
    // JSON-RPC method; the field path says where instead.
    let mut message = inner.to_string();
    if let Some(position) = message.rfind(" at line ") {
        message.truncate(position);
    }
    // For a missing field serde reports the parent's path, so name the field from the message.
    let field = match (path.as_str(), missing_field(&message)) {
        (".", Some(missing)) => missing.to_owned(),
        (parent, Some(missing)) => format!("{parent}.{missing}"),
        (".", None) => String::new(),
        (path, None) => path.to_owned(),
    };
    ParamError { field, message }
}

fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

// ---------------------------------------------------------------------------------------------
// kb.submit

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitParams {
    pub task: String,
    pub resource: String,
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// tool, extraction, import or cli; defaults to tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitResult {
    pub id: String,
    /// active, or pending when the experience was held for review.
    pub status: String,
    /// Set when the submission was a duplicate and merged into this experience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    /// Set when it merged as near-identical rather than identical: the cosine similarity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// Set when it merged and brought something the stored experience lacks (other wording,
    /// content or submitter): that is kept as a variant of it (`kb.get` shows variants).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub variant_kept: bool,
    /// Set when a near-identical experience exists but says something different (another
    /// outcome, value, version or a negation): this one was stored on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_apart_from: Option<KeptApartFrom>,
    /// What happened, in words, when the experience was not simply stored as new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What strict-mode redaction replaced, by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redactions: BTreeMap<String, usize>,
    /// Why the experience was held, e.g. `prompt_injection`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// A near-identical experience a submission did not merge into, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptApartFrom {
    pub id: String,
    pub reason: String,
}

// ---------------------------------------------------------------------------------------------
// kb.search

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    pub query: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// `hybrid` (the default), `bm25` or `vector`: which retrievers to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `mine` (this daemon's own experiences), `team` (pulled from the team's hub) or `all`
    /// (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub count: usize,
    pub results: Vec<SearchHit>,
    /// `hybrid`, `bm25` or `vector`: which retrievers answered.
    pub mode: String,
    /// Why the mode is not the one asked for, or what the answer may miss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub id: String,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    /// How well the experience matches the query; comparable only within one answer.
    pub relevance: f32,
    pub has_content: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub source: String,
    pub created_at: String,
}

// ---------------------------------------------------------------------------------------------
// kb.content, kb.get, kb.delete

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentParams {
    pub experience_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentResult {
    pub experience_id: String,
    pub content: String,
    pub content_type: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GetParams {
    pub experience_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    pub ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeleteResult {
    pub deleted: usize,
    /// Ids that named no experience.
    pub missing: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// kb.list, kb.export: full records

/// An experience with everything the store knows about it except the content body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperienceRecord {
    pub id: String,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    pub has_content: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    pub source: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
    pub merge_count: i64,
    pub recall_count: i64,
    /// What merged duplicates brought that this experience does not hold (`kb.get` and
    /// `kb.export`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantRecord>,
    /// Where teammates' copies came from, for an experience pulled from the team hub or
    /// shared by teammates too (`kb.get`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<OriginRecord>,
}

/// A teammate's copy of an experience, as the team hub delivered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OriginRecord {
    /// The experience's id at its origin.
    pub hub_id: String,
    /// The PostgreSQL role that shared it, and the daemon it came from.
    pub author: String,
    pub machine: String,
    /// Counted towards this experience (the same experience shared by someone else).
    pub merged: bool,
    /// The hub's change number it was last updated at.
    pub hub_seq: i64,
    /// Set when the same id came from two places and this store kept its own version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
}

/// A merged duplicate's own wording, content or submitter, kept beside its experience.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRecord {
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    pub source: String,
    /// The cosine similarity it merged at; absent for an exact duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    pub created_at: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// active, pending or rejected; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// For paging: only experiences older than this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResult {
    pub count: usize,
    pub experiences: Vec<ExperienceRecord>,
    /// Pass as `before_id` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

/// One line of an export: the record plus its content. `kb.import` accepts it as an item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportItem {
    #[serde(flatten)]
    pub record: ExperienceRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportResult {
    pub items: Vec<ExportItem>,
    /// Pass as `after_id` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after_id: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// kb.import

/// One item of `kb.import`: the submit parameters, plus the fields an export line carries
/// (accepted so an export can be imported as it is; the store assigns new ids and times).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportItem {
    pub task: String,
    pub resource: String,
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// From an export: a pending or rejected experience stays held; it is never promoted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// From an export: the variants merged duplicates left; kept beside the imported experience
    /// (or the one it merges into), through the gate like it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantRecord>,
    #[serde(default, skip_serializing)]
    pub id: Option<String>,
    #[serde(default, skip_serializing)]
    pub has_content: Option<bool>,
    #[serde(default, skip_serializing)]
    pub flags: Option<Vec<String>>,
    #[serde(default, skip_serializing)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing)]
    pub updated_at: Option<String>,
    #[serde(default, skip_serializing)]
    pub merge_count: Option<i64>,
    #[serde(default, skip_serializing)]
    pub recall_count: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportParams {
    /// Each item is checked on its own: a bad item is reported in `rejected`, the rest go in.
    pub items: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportResult {
    /// `ids[i]` is item i's id: the existing one for a duplicate, null if rejected.
    pub ids: Vec<Option<String>>,
    pub imported: usize,
    pub duplicates: usize,
    pub rejected: Vec<RejectedItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejectedItem {
    pub index: usize,
    pub error: String,
}

// ---------------------------------------------------------------------------------------------
// kb.reindex, kb.backup

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReindexParams {
    /// Also embed every active experience again with the current model, in the background
    /// (default true). Only the BM25 index is rebuilt when false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReindexResult {
    /// Documents in the rebuilt BM25 index.
    pub indexed: u64,
    /// Time the BM25 rebuild took; the embeddings are redone after the answer.
    pub took_ms: u64,
    /// What happened to the embeddings: `queued` (`queued_embeddings` experiences wait in
    /// `status` → `embedder.backlog`), `deferred` (the model is still loading; every experience
    /// is queued once it is loaded), `unavailable` (no model: not redone, `note` says why) or
    /// `skipped` (not asked for). Absent from daemons that only rebuilt BM25.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<String>,
    /// Experiences queued to be embedded again; their current vectors answer searches until
    /// the new ones replace them.
    #[serde(default)]
    pub queued_embeddings: u64,
    /// The model that embeds them, when queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why the embeddings were not redone now, when they were not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupParams {
    /// Where to write the copy of the database; must not exist yet.
    pub path: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackupResult {
    pub path: String,
    pub bytes: u64,
}

// ---------------------------------------------------------------------------------------------
// hook.event

/// One OpenClaw hook, as the plugin stub forwards it: the uniform envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEventParams {
    pub hook: String,
    /// When the hook fired, in milliseconds since the epoch (or an RFC 3339 string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<serde_json::Value>,
    /// The hook's event object, as OpenClaw passed it (stripped of secrets and functions).
    #[serde(default)]
    pub event: serde_json::Value,
    /// The hook's context object (agent, session, run ids), stripped likewise.
    #[serde(default)]
    pub ctx: serde_json::Value,
    /// The plugin's configuration, so the daemon applies the user's choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<HookConfigParams>,
}

/// The plugin configuration keys the daemon acts on. Other keys of the plugin's config are
/// accepted and ignored, so a newer stub keeps working with this daemon.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookConfigParams {
    /// off, minimal, normal or aggressive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminder_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_recall: Option<bool>,
    /// agent_end or before_compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction_trigger: Option<String>,
    /// Whether finished conversations are sent to an LLM to extract experiences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_server_extraction: Option<bool>,
    /// strict (conversations are redacted before they are queued or sent) or relaxed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy_mode: Option<String>,
    /// Whether extracted experiences wait for the user's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<bool>,
}

/// What the stub should do with the hook. The fields besides `action` are what the hook
/// returns to OpenClaw, named as OpenClaw names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookEventResult {
    /// `allow`, or `block` for a gate hook that must stop.
    pub action: String,
    #[serde(rename = "prependContext", default, skip_serializing_if = "Option::is_none")]
    pub prepend_context: Option<String>,
}

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
    /// True when the daemon can store and search: the database answers and the index is ready.
    pub healthy: bool,
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
    pub applied_seq: u64,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_errors_name_the_field() {
        let missing = parse_params::<SubmitParams>(Some(r#"{"task":"t","resource":"r"}"#)).unwrap_err();
        assert_eq!(missing.field, "result");
        let wrong_type =
            parse_params::<SubmitParams>(Some(r#"{"task":"t","resource":"r","result":"x","score":"five"}"#))
                .unwrap_err();
        assert_eq!(wrong_type.field, "score");
        assert!(!wrong_type.message.contains("line"), "{}", wrong_type.message);
        let unknown = parse_params::<SearchParams>(Some(r#"{"query":"q","topk":3}"#)).unwrap_err();
        assert!(unknown.message.contains("topk"), "{}", unknown.message);
        let array = parse_params::<SearchParams>(Some(r#"["q"]"#)).unwrap_err();
        assert!(array.message.contains("named parameters"));
        let none = parse_params::<ListParams>(None).unwrap();
        assert_eq!(none, ListParams::default());
    }

    #[test]
    fn reindex_params_are_optional_and_checked() {
        assert_eq!(parse_params::<ReindexParams>(None).unwrap(), ReindexParams::default());
        let off = parse_params::<ReindexParams>(Some(r#"{"embeddings":false}"#)).unwrap();
        assert_eq!(off.embeddings, Some(false));
        let wrong_type = parse_params::<ReindexParams>(Some(r#"{"embeddings":"yes"}"#)).unwrap_err();
        assert_eq!(wrong_type.field, "embeddings");
        let unknown = parse_params::<ReindexParams>(Some(r#"{"embedings":true}"#)).unwrap_err();
        assert!(unknown.to_string().contains("embedings"), "{unknown}");
    }

    #[test]
    fn a_reindex_result_of_an_older_daemon_still_parses() {
        let old: ReindexResult = parse_value_str(r#"{"indexed":3,"took_ms":12}"#).unwrap();
        assert_eq!((old.indexed, old.queued_embeddings, old.embeddings), (3, 0, None));
    }

    #[test]
    fn an_export_line_is_an_import_item() {
        let line = r#"{"id":"01J","task":"t","resource":"r","result":"x","score":4,"has_content":true,
            "source":"tool","status":"active","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",
            "merge_count":0,"recall_count":2,"content":"body","content_type":"text/markdown"}"#;
        let item: ImportItem = parse_value_str(line).unwrap();
        assert_eq!(item.content.as_deref(), Some("body"));
        let from_value: ImportItem = parse_value(serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(from_value, item);
        let bad =
            parse_value::<ImportItem>(serde_json::json!({"task": "t", "resource": "r", "result": "x", "score": "5"}))
                .unwrap_err();
        assert_eq!(bad.field, "score");
        assert_eq!(item.score, Some(4));
    }
}

// ---------------------------------------------------------------------------------------------
// kb.pending, kb.approve, kb.reject: the review queue

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingResult {
    pub count: usize,
    /// Newest first; `flags` says why each is held (`prompt_injection`, `extracted`).
    pub experiences: Vec<PendingRecord>,
}

/// A held experience, with what it was extracted from and what it resembles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    #[serde(flatten)]
    pub experience: ExperienceRecord,
    /// Set for an experience an LLM extracted from a conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction: Option<ProposalRecord>,
    /// A stored experience this one resembles (approving it merges into that one when they say
    /// the same), with their similarity (1: the same words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similar: Option<Box<ExperienceRecord>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

/// What an extracted proposal came with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposalRecord {
    pub job_id: i64,
    /// success, partial, failure or uncertain.
    pub outcome: String,
    /// The conversation turns it cites: `{turn, role, tool, error, excerpt}`.
    pub evidence: serde_json::Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewParams {
    pub ids: Vec<String>,
    /// Why (kept in the log; `kb.reject` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Fields changed before approving (`kb.approve` of one id only); the edited experience
    /// passes the write gate again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<EditParams>,
}

/// Edited fields of a held experience; unset fields keep their value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewResult {
    /// The ids whose status changed.
    pub changed: Vec<String>,
    /// Approved ids that merged into the experience they duplicate: `[approved id, into id]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<(String, String)>,
    /// The ids that already had that status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<String>,
    /// The ids of no experience.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

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
