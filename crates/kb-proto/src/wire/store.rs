//! The store's methods: submit, search, content, get, delete, list, export, import, reindex,
//! backup, and the review queue (pending, approve, reject).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
    /// Store it even if the user rejected the same experience before (it becomes active again).
    /// Without it such a submit is refused (`ErrorCode::Refused`). Only the user sets it: the
    /// agents' tool never does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub confirm: bool,
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
    /// Also return teammates' and extracted experiences the user has not reviewed, marked (for
    /// the user's own tools: `kbctl search`). Left out, the answer holds only what may reach
    /// an agent's prompt (see `provenance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreviewed: Option<bool>,
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
    /// Where it came from when not from this user's own agents, and whether the user reviewed
    /// it: "from teammate alice, not reviewed: …", "extracted from a conversation, reviewed".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// kb.content, kb.get, kb.delete

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentParams {
    pub experience_id: String,
    /// Also give the content of an experience agents may not see yet (see `SearchParams`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreviewed: Option<bool>,
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
    /// How many variants it has in all, when `kb.get` returned only the newest of them (at most
    /// 20, about 1 MiB of text; `kb.export` has every one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variants_total: Option<usize>,
    /// Copies teammates shared of it that were not kept as variants, per teammate: a teammate's
    /// copies keep their newest 20 variants, about 256 KiB, per experience (`kb.get`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants_not_kept: Vec<NotKeptRecord>,
    /// Where teammates' copies came from, for an experience pulled from the team hub or
    /// shared by teammates too (`kb.get`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<OriginRecord>,
    /// Where it came from when not from this user's own agents, and whether the user reviewed
    /// it (see `SearchHit::provenance`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<String>,
    /// A fingerprint of what a reviewer judges (words, score, content, source, submitter,
    /// author), in `kb.get` and `kb.pending`: sent back with `kb.approve` / `kb.reject`
    /// (`versions`), the decision is refused if the experience changed since it was shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
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

/// How many of one teammate's copies of an experience were not kept as variants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotKeptRecord {
    pub author: String,
    pub copies: u64,
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
// kb.pending, kb.approve, kb.reject: the review queue

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Also list, after the held ones, the active teammates' and extracted experiences that wait
    /// for the user's review before agents see them (`kbctl pending`, the Control UI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreviewed: Option<bool>,
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
    /// Why it is held, in words: each risky action with the words that matched ("pipes a
    /// download into a shell: `curl … | sh`"), or that it awaits review as a teammate's or an
    /// extracted experience.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Its detailed content, for the reviewer to read before approving (approving makes it
    /// reach agents through `kb_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
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
    /// The `version` each experience had when it was shown, one per id: the decision is refused,
    /// and nothing changes, when any of them changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
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
