//! The engine: the store, the index and the operations on them, with no knowledge of JSON.
//!
//! Architecture Invariant: every write goes through `Engine::writer`, one mutex that owns the
//! SQLite write connection; after each store write, still under that mutex, the index is
//! brought up to the store's sequence number (`sync_index`) and committed, so a search sent
//! after a write's answer sees it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use kb_core::redact::Redaction;
use kb_core::{Experience, ExperienceId, GatePolicy, NewExperience, Source, Status, ValidationError};
use kb_index::{ExperienceIndex, Hit as Bm25Hit, IndexDoc, OpenOutcome, SearchRequest};
use kb_proto::Paths;
use kb_store::{Counts, ExportRow, IndexRow, ListFilter, Store, StoredContent, VectorRef, WriteItem};
use tokio::sync::watch;

use crate::config::Config;
use crate::hooks::Hooks;
use crate::semantic::{self, ModelChoice, Refresh, Semantic, VectorFilter};
use crate::stats::{LastError, LatencyWindow};

/// Imports at least this large hand the memory their indexing freed back to the system.
const RELEASE_MEMORY_AFTER_ITEMS: usize = 1_000;
/// Rows per batch when the index is rebuilt from the store.
const REBUILD_BATCH: usize = 2_000;
/// Read connections kept open for searches and listings.
const N_READERS: usize = 4;

/// A text any working model embeds: tells a model that fails from a text it cannot take.
const EMBEDDING_PROBE: &str = "a short probe text";
/// Import batches at least this large are gated on two threads.
const PARALLEL_GATE_MIN_ITEMS: usize = 256;
/// Queries longer than this are cut: search needs the gist, not a whole log.
pub const MAX_QUERY_CHARS: usize = 4_096;

/// Why an operation failed, in terms the protocol maps to error codes.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid `{field}`: {message}")]
    Invalid { field: String, message: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl EngineError {
    pub fn invalid(field: &str, message: impl Into<String>) -> EngineError {
        EngineError::Invalid { field: field.to_owned(), message: message.into() }
    }
}

impl From<ValidationError> for EngineError {
    fn from(error: ValidationError) -> EngineError {
        EngineError::Invalid { field: error.field, message: error.message }
    }
}

impl From<kb_store::Error> for EngineError {
    fn from(error: kb_store::Error) -> EngineError {
        EngineError::Internal(anyhow::Error::new(error))
    }
}

pub type EngineResult<T> = std::result::Result<T, EngineError>;

/// Whether the index can answer searches.
#[derive(Debug, Clone, PartialEq)]
pub enum IndexState {
    Ready,
    Rebuilding {
        reason: String,
    },
    /// The index could not take the latest changes (no file descriptors, a full disk...).
    /// Searches answer from what it holds, with a note; `heal_index` retries until it catches
    /// up, without a restart or a write to trigger it.
    Failed {
        reason: String,
    },
}

/// The outcome of one submitted experience.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub id: String,
    pub status: Status,
    pub merged: bool,
    /// Set when the experience merged into a near-identical one: their cosine similarity.
    pub similarity: Option<f32>,
    pub redactions: Vec<Redaction>,
    pub flags: Vec<String>,
    /// It merged and brought something the stored experience lacked, kept as a variant.
    pub variant_kept: bool,
    /// A near-identical experience that says something different: this one was kept apart.
    pub kept_apart: Option<kb_store::KeptApart>,
}

impl Submitted {
    /// What happened, in words, when the experience was not simply stored as new.
    pub fn note(&self) -> Option<String> {
        let kept = if self.variant_kept {
            "; what yours adds (wording, content or submitter) is kept as a variant of it"
        } else {
            "; yours added nothing it did not hold"
        };
        match (self.merged, self.similarity, &self.kept_apart) {
            (true, Some(similarity), _) => Some(format!(
                "merged into the near-identical experience {} (similarity {similarity:.3}){kept}",
                self.id
            )),
            (true, None, _) => Some(format!("merged into the identical experience {}{kept}", self.id)),
            (false, _, Some(apart)) => Some(format!(
                "stored as a new experience: {} is near-identical but says something else ({})",
                apart.similar_to, apart.reason
            )),
            (false, _, None) => None,
        }
    }
}

/// A submit waiting for the writer: its gated experience, its vector, and where it is in the
/// group commit (see [`Engine::submit`]).
struct PendingSubmit {
    gated: kb_core::Gated,
    vector: Option<(String, Vec<f32>, Vec<u8>)>,
    state: Mutex<SubmitState>,
    /// Notified when `state` becomes `Done`.
    settled: Condvar,
}

/// Catch-ups of the BM25 index after submits, counted (see `Engine::index_after_submits`).
#[derive(Debug, Default)]
struct CatchUps {
    started: u64,
    finished: u64,
    running: bool,
}

enum SubmitState {
    /// In `pending_submits`: whoever gets the writer next writes it.
    Queued,
    /// In a batch being written; its writer settles it.
    Taken,
    /// Written, and searchable in the index (or it failed).
    Done(SubmitOutcome),
}

/// BM25 hits as (id, score) pairs, best first.
fn scored(bm25_hits: Vec<Bm25Hit>) -> Vec<(String, f32)> {
    bm25_hits.into_iter().map(|hit| (hit.id, hit.bm25)).collect()
}

/// A BM25 score below this is a match on common words only (in a store of 60 experiences,
/// "for" and "with" together score about 1.5, one rare word about 4).
const WEAK_BM25: f32 = 5.0;

/// Drops the BM25 hits that only common words found and the vectors, which passed the model's
/// relevance floor, do not: both retrievers say "unrelated", and a hit then is filler ("recipe
/// for vegetarian lasagna with spinach" found five deployment experiences through "for" and
/// "with", each sold as relevant).
fn with_evidence(bm25_hits: Vec<(String, f32)>, vector_hits: &[(String, f32)]) -> Vec<(String, f32)> {
    let supported: HashSet<&str> = vector_hits.iter().map(|(id, _)| id.as_str()).collect();
    bm25_hits.into_iter().filter(|(id, score)| *score >= WEAK_BM25 || supported.contains(id.as_str())).collect()
}

/// Where the hooks' sessions are saved, in the data directory (see `hooks`).
pub const SESSIONS_FILE: &str = "sessions.json";

/// Below this much free space, an index failure is put down to a full disk.
const LOW_DISK_BYTES: u64 = 1024 * 1024;

/// Bytes an unprivileged process may still write on the filesystem holding `path`.
fn free_bytes(path: &Path) -> Option<u64> {
    let stats = rustix::fs::statvfs(path).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// Marks a catch-up finished and wakes the submits waiting for it, when dropped.
struct CatchUpDone<'a> {
    engine: &'a Engine,
    this_one: u64,
}

impl Drop for CatchUpDone<'_> {
    fn drop(&mut self) {
        let mut catch_ups = self.engine.submit_catch_ups.lock().unwrap_or_else(PoisonError::into_inner);
        catch_ups.running = false;
        catch_ups.finished = catch_ups.finished.max(self.this_one);
        self.engine.submit_caught_up.notify_all();
    }
}

/// A batch being written: dropped before it was settled (the writing thread panicked), it
/// settles every submit of the batch with an error, so none waits forever.
struct Unsettled<'a>(&'a [Arc<PendingSubmit>]);

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        for pending in self.0 {
            if !matches!(*lock_state(pending), SubmitState::Done(_)) {
                settle(pending, Err("the writer failed while writing this submit (see the log)".to_owned()));
            }
        }
    }
}

fn settle(pending: &PendingSubmit, outcome: SubmitOutcome) {
    *lock_state(pending) = SubmitState::Done(outcome);
    pending.settled.notify_all();
}

fn lock_state(pending: &PendingSubmit) -> MutexGuard<'_, SubmitState> {
    pending.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the writer that committed a submit hands back to it: the store's outcome and, for a
/// near-identical merge, the similarity; or why the batch could not be written.
type SubmitOutcome = Result<Written, String>;
type Written = (kb_store::WriteOutcome, Option<f32>);

/// One item of an import: the experience, the status its export line carried, and the
/// variants it brings along.
#[derive(Debug)]
pub struct ImportEntry {
    pub new: NewExperience,
    pub held: Option<Status>,
    pub variants: Vec<CarriedVariant>,
}

/// A variant on an export line: another submitter's wording of the experience, kept when it
/// merged (see `kb_store::Variant`).
#[derive(Debug)]
pub struct CarriedVariant {
    pub new: NewExperience,
    pub similarity: Option<f64>,
    pub created_at_ms: i64,
}

/// An import item through the gate, with its variants through it too.
type GatedImport = (kb_core::Gated, Vec<kb_store::Variant>);

/// The outcome of an import: one entry per item.
#[derive(Debug, Default)]
pub struct Imported {
    pub ids: Vec<Option<String>>,
    pub imported: usize,
    pub duplicates: usize,
    pub rejected: Vec<(usize, String)>,
}

/// The outcome of a reindex.
#[derive(Debug, Clone)]
pub struct Reindexed {
    /// Documents in the rebuilt BM25 index.
    pub indexed: u64,
    /// What happened to the embeddings; `None` when they were not asked for.
    pub embeddings: Option<Refresh>,
}

/// A search hit with the stored experience.
#[derive(Debug, Clone)]
pub struct Found {
    pub experience: Experience,
    pub relevance: f32,
}

pub struct SearchQuery<'a> {
    pub query: &'a str,
    pub top_k: Option<i64>,
    pub min_score: Option<i64>,
    pub agent_id: Option<&'a str>,
    pub mode: SearchMode,
    pub origin: Origin,
}

/// Whose experiences a search returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    #[default]
    All,
    /// This store's own (every source but the hub).
    Mine,
    /// Teammates', pulled from the hub.
    Team,
}

impl Origin {
    pub fn parse(text: &str) -> Option<Origin> {
        match text {
            "all" => Some(Origin::All),
            "mine" => Some(Origin::Mine),
            "team" => Some(Origin::Team),
            _ => None,
        }
    }

    fn admits(self, source: kb_core::Source) -> bool {
        match self {
            Origin::All => true,
            Origin::Mine => source != kb_core::Source::Hub,
            Origin::Team => source == kb_core::Source::Hub,
        }
    }
}

/// Which retrievers a search asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchMode {
    /// BM25 and vectors fused; BM25 alone (with a note) while there is no model.
    #[default]
    Hybrid,
    Bm25,
    /// Vectors alone; an error while there is no model.
    Vector,
}

impl SearchMode {
    pub fn parse(text: &str) -> Option<SearchMode> {
        match text {
            "hybrid" => Some(SearchMode::Hybrid),
            "bm25" => Some(SearchMode::Bm25),
            "vector" => Some(SearchMode::Vector),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Bm25 => "bm25",
            SearchMode::Vector => "vector",
        }
    }
}

/// How a search was answered: the retrievers used and, when it matters, why not others.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub mode: SearchMode,
    pub note: Option<String>,
}

pub struct Engine {
    pub paths: Paths,
    pub config: Config,
    policy: GatePolicy,
    writer: Mutex<Store>,
    readers: Vec<Mutex<Store>>,
    next_reader: AtomicUsize,
    index: ExperienceIndex,
    index_state: watch::Sender<IndexState>,
    /// Held for a whole index preparation or rebuild: two at once would clear the index under
    /// each other (one `kb.reindex` answered `indexed 0`).
    rebuilding: Mutex<()>,
    rebuild_done: AtomicU64,
    rebuild_total: AtomicU64,
    /// Held while the BM25 index takes the store's changes (catch-up, commit, rebuild), so two
    /// catch-ups never apply the same changes twice. Taken after the writer when both are held;
    /// a submit's catch-up runs without the writer, so the next batch is written meanwhile.
    index_sync: Mutex<()>,
    /// The catch-ups submits wait for (see `index_after_submits`).
    submit_catch_ups: Mutex<CatchUps>,
    submit_caught_up: Condvar,
    /// The highest sequence number of a delete applied to the index whose tombstones are still
    /// kept (0: none). Tombstones go only once the index's deletes are on disk (`persist_index`):
    /// an index that a power loss takes back to an older commit replays them from the store.
    unpruned_delete_seq: AtomicU64,
    recalls: Mutex<HashMap<String, u64>>,
    started: Instant,
    pub search_latency: LatencyWindow,
    pub submit_latency: LatencyWindow,
    pub hook_latency: LatencyWindow,
    pub last_error: LastError,
    pub hooks: Hooks,
    pub semantic: Semantic,
    /// The extraction worker's wake-ups and state (`extraction.rs`).
    pub extraction: crate::extraction::Extraction,
    /// The team hub's sync thread's state and wake-ups (`hub.rs`).
    pub hub: crate::hub::HubSync,
    /// Submits waiting for the writer; whichever gets it first commits them all (group commit).
    pending_submits: Mutex<Vec<Arc<PendingSubmit>>>,
}

impl Engine {
    /// Opens the store and the index. When the index is missing, corrupt or behind the store,
    /// it is brought up to date by `prepare_index`, which the caller runs (in the background).
    pub fn open(paths: Paths, config: Config) -> anyhow::Result<Arc<Engine>> {
        let hooks = Hooks::load(&paths.home.join(SESSIONS_FILE));
        create_private_dir(&paths.home)?;
        let writer = Store::open(&paths.database).context("cannot open the experience store")?;
        let readers = (0..N_READERS)
            .map(|_| Store::open_reader(&paths.database).map(Mutex::new))
            .collect::<kb_store::Result<Vec<_>>>()
            .context("cannot open read connections to the experience store")?;
        let (index, outcome) = ExperienceIndex::open(&paths.index).context("cannot open the search index")?;
        let store_seq = writer.seq()?;
        let active = writer.counts()?.active;
        let state = match &outcome {
            // Up to date by its own account; the document count must agree, or it is rebuilt
            // (a writer that lost documents once recorded the store's sequence number anyway).
            OpenOutcome::Opened { applied_seq } if *applied_seq == store_seq && index.num_docs() != active => {
                IndexState::Rebuilding {
                    reason: format!("the index holds {} documents for {active} active experiences", index.num_docs()),
                }
            }
            OpenOutcome::Opened { applied_seq } if *applied_seq == store_seq => IndexState::Ready,
            // A new store needs nothing indexed.
            OpenOutcome::Created | OpenOutcome::Recreated { .. } if store_seq == 0 => IndexState::Ready,
            OpenOutcome::Opened { applied_seq } => {
                IndexState::Rebuilding { reason: format!("index at change {applied_seq}, store at {store_seq}") }
            }
            OpenOutcome::Created => IndexState::Rebuilding { reason: "new index".to_owned() },
            OpenOutcome::Recreated { reason } => {
                IndexState::Rebuilding { reason: format!("index recreated: {reason}") }
            }
        };
        if let IndexState::Rebuilding { reason } = &state
            && store_seq > 0
        {
            tracing::warn!(%reason, "the search index must be brought up to date");
        }
        let (index_state, _) = watch::channel(state);
        let env_model_dir = std::env::var_os(semantic::ENV_MODEL_DIR).filter(|dir| !dir.is_empty()).map(PathBuf::from);
        let choice = ModelChoice::from_config(&config.embedding, paths.models.clone(), env_model_dir);
        Ok(Arc::new(Engine {
            semantic: Semantic::new(choice),
            policy: config.gate_policy(),
            paths,
            config,
            writer: Mutex::new(writer),
            readers,
            next_reader: AtomicUsize::new(0),
            index,
            index_state,
            rebuilding: Mutex::new(()),
            rebuild_done: AtomicU64::new(0),
            rebuild_total: AtomicU64::new(0),
            index_sync: Mutex::new(()),
            submit_catch_ups: Mutex::new(CatchUps::default()),
            submit_caught_up: Condvar::new(),
            unpruned_delete_seq: AtomicU64::new(0),
            recalls: Mutex::new(HashMap::new()),
            started: Instant::now(),
            search_latency: LatencyWindow::default(),
            submit_latency: LatencyWindow::default(),
            hook_latency: LatencyWindow::default(),
            last_error: LastError::default(),
            hooks,
            extraction: crate::extraction::Extraction::default(),
            hub: crate::hub::HubSync::default(),
            pending_submits: Mutex::new(Vec::new()),
        }))
    }

    /// Brings the index up to the store: catches up when it is only behind, rebuilds it from
    /// scratch otherwise. Blocking; holds the writer so no write interleaves.
    pub fn prepare_index(&self) {
        let _one_at_a_time = self.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        self.prepare_index_alone();
    }

    /// [`Engine::prepare_index`], for a caller holding `rebuilding`.
    fn prepare_index_alone(&self) {
        let reason = match &*self.index_state.borrow() {
            IndexState::Ready => return,
            IndexState::Rebuilding { reason } | IndexState::Failed { reason } => reason.clone(),
        };
        let started = Instant::now();
        let result = (|| -> anyhow::Result<u64> {
            let mut store = self.lock_writer();
            let _index_turn = self.lock_index_sync();
            let store_seq = store.seq()?;
            let applied = self.index.applied_seq();
            if applied > 0 && applied < store_seq {
                // Behind only: apply the changes since the index's last commit, and keep the
                // result if the document count agrees with the store.
                self.sync_index(&store, &HashSet::new())?;
                let active = store.counts()?.active;
                if self.index.num_docs() == active {
                    return Ok(store_seq);
                }
                tracing::warn!(
                    documents = self.index.num_docs(),
                    active,
                    "the caught-up index disagrees with the store; rebuilding it"
                );
            }
            let counts = store.counts()?;
            self.rebuild_total.store(counts.total, Ordering::Relaxed);
            self.rebuild_done.store(0, Ordering::Relaxed);
            self.index.clear()?;
            // The index was just cleared, so every row is new to it.
            let seq = store.for_each_index_row(REBUILD_BATCH, |rows| -> anyhow::Result<()> {
                let docs: Vec<IndexDoc<'_>> = rows.iter().map(index_doc).collect();
                self.index.add_new(&docs)?;
                self.rebuild_done.fetch_add(rows.len() as u64, Ordering::Relaxed);
                Ok(())
            })?;
            self.index.commit(seq)?;
            // A rebuild is rare and long: make it durable now, then nothing needs the tombstones.
            let durable = self.index.make_durable()?;
            store.prune_tombstones(durable)?;
            Ok(seq)
        })();
        match result {
            Ok(seq) => {
                tracing::info!(%reason, seq, documents = self.index.num_docs(), took_ms = started.elapsed().as_millis() as u64, "search index ready");
                self.index_state.send_replace(IndexState::Ready);
            }
            Err(error) => {
                let message = format!("cannot rebuild the search index: {error:#}");
                tracing::error!("{message}");
                self.last_error.set(message.clone());
                self.index_state.send_replace(IndexState::Failed { reason: message });
            }
        }
    }

    /// Applies the store's changes since the index's last commit, then commits the index.
    /// `new_ids` are experiences the last write created: they cannot be in the index yet, so
    /// they are added without the delete an update needs.
    /// The caller holds `index_sync`.
    fn sync_index(&self, store: &Store, new_ids: &HashSet<String>) -> anyhow::Result<()> {
        let changes = store.changes_since(self.index.applied_seq())?;
        if changes.upserts.is_empty() && changes.deleted_ids.is_empty() && changes.seq == self.index.applied_seq() {
            return Ok(());
        }
        let deleted: Vec<&str> = changes.deleted_ids.iter().map(String::as_str).collect();
        self.index.delete(&deleted)?;
        let (created, updated): (Vec<IndexDoc<'_>>, Vec<IndexDoc<'_>>) =
            changes.upserts.iter().map(index_doc).partition(|doc| new_ids.contains(doc.id));
        self.index.add_new(&created)?;
        self.index.upsert(&updated)?;
        self.index.commit(changes.seq)?;
        if !changes.deleted_ids.is_empty() {
            self.unpruned_delete_seq.fetch_max(changes.seq, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Makes the index's commits durable (they are visible at once but synced here, in one
    /// batch: see `kb_index`'s directory), then drops the tombstones of the deletes that are now
    /// on disk. The daemon calls this every few seconds and at shutdown; it costs nothing when
    /// nothing was written. A failure is logged and retried next time: the store holds
    /// everything the index would need to catch up.
    pub fn persist_index(&self) {
        let unpruned = self.unpruned_delete_seq.load(Ordering::Acquire);
        if !self.index.has_unsynced_commits() && unpruned == 0 {
            return;
        }
        let durable = match self.index.make_durable() {
            Ok(durable) => durable,
            Err(error) => {
                let message = format!("cannot sync the search index to disk (retrying): {error:#}");
                tracing::warn!("{message}");
                self.last_error.set(message);
                return;
            }
        };
        if unpruned == 0 {
            return;
        }
        let mut store = self.lock_writer();
        match store.prune_tombstones(durable) {
            // Deletes after `durable` keep theirs (and the mark) for the next round.
            Ok(_) if durable >= unpruned => {
                let _ = self.unpruned_delete_seq.compare_exchange(unpruned, 0, Ordering::AcqRel, Ordering::Acquire);
            }
            Ok(_) => {}
            Err(error) => tracing::warn!("cannot prune tombstones: {error:#}"),
        }
    }

    /// Runs after every store write, under the writer lock. A failure here does not undo the
    /// write (the store is the truth): it is reported, and the next write or a restart retries.
    pub(crate) fn after_write(&self, store: &mut Store, new_ids: &HashSet<String>) {
        self.sync_vectors(store);
        let _index_turn = self.lock_index_sync();
        self.catch_up_index(store, new_ids);
    }

    /// Brings the vector index up to the store; under the writer lock, so it reads every
    /// tombstone before `persist_index` may prune it.
    fn sync_vectors(&self, store: &mut Store) {
        if let Err(error) = self.semantic.sync(store) {
            let message = format!("stored, but the vector index could not be updated: {error:#}");
            tracing::error!("{message}");
            self.last_error.set(message);
        }
    }

    /// Brings the BM25 index up to the store after a write; the caller holds `index_sync`.
    /// `store` may be a reader: it sees every committed write.
    fn catch_up_index(&self, store: &Store, new_ids: &HashSet<String>) {
        if !matches!(*self.index_state.borrow(), IndexState::Ready) {
            // A rebuild in progress will pick the write up; a failed index is retried below.
            if !matches!(*self.index_state.borrow(), IndexState::Failed { .. }) {
                return;
            }
        }
        let was_failed = matches!(*self.index_state.borrow(), IndexState::Failed { .. });
        match self.sync_index(store, new_ids) {
            Ok(()) if was_failed => {
                // Caught up after a failure: trusted only once the document count agrees; if it
                // does not, the healer rebuilds the index from the store.
                match store.counts() {
                    Ok(counts) if counts.active == self.index.num_docs() => {
                        tracing::info!("the search index caught up with the store");
                        self.index_state.send_replace(IndexState::Ready);
                    }
                    _ => {}
                }
            }
            Ok(()) => {}
            Err(error) => self.index_failed(format!("stored, but the search index could not be updated: {error:#}")),
        }
    }

    /// Records that the index could not take the store's latest changes: its writer is reset to
    /// the last good commit (nothing half-applied survives), searches go on with a note, and
    /// `heal_index` retries.
    fn index_failed(&self, message: String) {
        // Tantivy reports an IO error in an indexing thread only as "an index writer was
        // killed": say what a user can act on when it is a full disk.
        let message = match free_bytes(&self.paths.index) {
            Some(free) if free < LOW_DISK_BYTES => {
                format!(
                    "{message} (the disk holding the index at {} has {free} bytes free)",
                    self.paths.index.display()
                )
            }
            _ => message,
        };
        tracing::error!("{message}");
        if let Err(error) = self.index.reset_writer() {
            tracing::warn!("{error:#}");
        }
        self.last_error.set(message.clone());
        self.index_state.send_replace(IndexState::Failed { reason: message });
    }

    /// Retries a failed index: applies the store's changes since the index's last good commit,
    /// checks that it holds as many documents as there are active experiences (else rebuilds
    /// it from the store), and marks it ready. The daemon calls this every few seconds; it does
    /// nothing while the index is ready. Returns whether the index is ready afterwards.
    pub fn heal_index(&self) -> bool {
        match &*self.index_state.borrow() {
            IndexState::Ready => return true,
            IndexState::Rebuilding { .. } => return false,
            IndexState::Failed { .. } => {}
        }
        let Ok(_one_at_a_time) = self.rebuilding.try_lock() else {
            return false;
        };
        let store = self.lock_writer();
        let index_turn = self.lock_index_sync();
        // From the last good commit, on a writer that holds nothing half-applied.
        let healed = self
            .index
            .reset_writer()
            .map_err(anyhow::Error::from)
            .and_then(|()| self.sync_index(&store, &HashSet::new()))
            .and_then(|()| {
                let active = store.counts()?.active;
                Ok((self.index.num_docs(), active))
            });
        match healed {
            Ok((documents, active)) if documents == active => {
                tracing::info!(documents, "the search index caught up with the store");
                self.index_state.send_replace(IndexState::Ready);
                true
            }
            Ok((documents, active)) => {
                let reason = format!("the index holds {documents} documents for {active} active experiences");
                tracing::warn!("{reason}; rebuilding it");
                self.index_state.send_replace(IndexState::Rebuilding { reason });
                drop(index_turn);
                drop(store);
                self.prepare_index_alone();
                matches!(*self.index_state.borrow(), IndexState::Ready)
            }
            Err(error) => {
                self.index_failed(format!("the search index is behind the store and cannot catch up yet: {error:#}"));
                false
            }
        }
    }

    fn lock_index_sync(&self) -> MutexGuard<'_, ()> {
        self.index_sync.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The gate's policy (privacy mode and limits) every write passes.
    pub(crate) fn policy(&self) -> &GatePolicy {
        &self.policy
    }

    pub(crate) fn lock_writer(&self) -> MutexGuard<'_, Store> {
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn reader(&self) -> MutexGuard<'_, Store> {
        // Take a free connection if there is one; otherwise queue on one in turn.
        for reader in &self.readers {
            if let Ok(guard) = reader.try_lock() {
                return guard;
            }
        }
        let turn = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[turn].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores one experience.
    ///
    /// Group commit: concurrent submits share one transaction and one fsync, and one index
    /// commit. Each submit queues itself, then waits for the writer; the first to get it takes
    /// every queued submit, writes them in one transaction, brings the vector index up to date,
    /// and lets the writer go before it brings the BM25 index up to date, so the next batch is
    /// written while this one is indexed (and an index catch-up takes every batch committed
    /// before it). The others wait for their writer to settle them. Every answer waits for its
    /// experience to be durable in the store and searchable. Measured with 50 clients: the
    /// index commit costs several times the store's, so it must not hold the writer.
    pub fn submit(&self, new: NewExperience) -> EngineResult<Submitted> {
        let gated = kb_core::gate(new, &self.policy)?;
        let redactions = gated.redactions.clone();
        let flags = gated.flags.clone();
        // Embedded before taking the writer (it is the slow part), stored in the same
        // transaction as the experience, and used to find a near-identical one to merge into.
        let new = &gated.experience;
        let embedded = self.semantic.embed_now(&semantic::embedding_text(&new.task, &new.resource, &new.result));
        let vector = embedded.map(|(model_id, vector)| {
            let bytes = kb_embed::to_bytes(&vector);
            (model_id, vector, bytes)
        });
        let pending =
            Arc::new(PendingSubmit { gated, vector, state: Mutex::new(SubmitState::Queued), settled: Condvar::new() });
        self.pending_submits.lock().unwrap_or_else(PoisonError::into_inner).push(pending.clone());
        let mut store = self.lock_writer();
        if matches!(*lock_state(&pending), SubmitState::Queued) {
            // Nobody took ours yet: we write everything queued, ours included.
            let batch = std::mem::take(&mut *self.pending_submits.lock().unwrap_or_else(PoisonError::into_inner));
            for queued in &batch {
                *lock_state(queued) = SubmitState::Taken;
            }
            // Should this thread panic, the others of the batch still get an answer.
            let unsettled = Unsettled(&batch);
            let written = self.write_submits(&mut store, &batch);
            drop(store);
            if written.is_ok() {
                self.index_after_submits();
            }
            let outcomes: Vec<SubmitOutcome> = match written {
                Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error); batch.len()],
            };
            for (queued, outcome) in batch.iter().zip(outcomes) {
                settle(queued, outcome);
            }
            // Everything is settled: its drop does nothing now.
            drop(unsettled);
        } else {
            drop(store);
        }
        let mut state = lock_state(&pending);
        let done = loop {
            match std::mem::replace(&mut *state, SubmitState::Taken) {
                SubmitState::Done(done) => break done,
                waiting => {
                    *state = waiting;
                    state = pending.settled.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
            }
        };
        drop(state);
        let (outcome, similarity) = done.map_err(|error| EngineError::Internal(anyhow::anyhow!(error)))?;
        Ok(Submitted {
            id: outcome.id.to_string(),
            status: outcome.status,
            merged: outcome.merged,
            similarity,
            redactions,
            flags,
            variant_kept: outcome.variant_kept,
            kept_apart: outcome.kept_apart,
        })
    }

    /// Returns once the BM25 index has caught up with everything committed to the store before
    /// the call. One thread at a time catches up, taking every batch committed so far; the
    /// others wait for the first catch-up that started after their commit. (Waiting on
    /// `index_sync` instead let late arrivals barge in and each commit a few experiences while
    /// early ones waited: batches of one, 300 ms waits at 50 clients.) A failed catch-up counts
    /// as done: the store has the submit and the healer brings the index up to it.
    fn index_after_submits(&self) {
        let mut catch_ups = self.submit_catch_ups.lock().unwrap_or_else(PoisonError::into_inner);
        let needed = catch_ups.started + 1;
        while catch_ups.finished < needed {
            if catch_ups.running {
                catch_ups = self.submit_caught_up.wait(catch_ups).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            catch_ups.running = true;
            catch_ups.started += 1;
            let this_one = catch_ups.started;
            drop(catch_ups);
            {
                // Finished even if this thread panics, or every later submit would wait forever.
                let _finish = CatchUpDone { engine: self, this_one };
                let _index_turn = self.lock_index_sync();
                let reader = self.reader();
                self.catch_up_index(&reader, &HashSet::new());
            }
            catch_ups = self.submit_catch_ups.lock().unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Writes a batch of submits in one transaction, under the writer, and brings the vector
    /// index up to date: each submit's outcome in batch order, and the ids created.
    fn write_submits(&self, store: &mut Store, batch: &[Arc<PendingSubmit>]) -> Result<Vec<Written>, String> {
        // Near-identical experiences are looked up under the writer, so a submit sees the
        // vectors of every submit committed before it.
        let similar: Vec<Option<kb_embed::Hit>> = batch
            .iter()
            .map(|pending| match &pending.vector {
                Some((model_id, vector, _)) if pending.gated.status == Status::Active => {
                    self.semantic.near_duplicate(model_id, vector)
                }
                _ => None,
            })
            .collect();
        let items: Vec<WriteItem<'_>> = batch
            .iter()
            .zip(&similar)
            .map(|(pending, similar)| WriteItem {
                gated: &pending.gated,
                vector: pending.vector.as_ref().map(|(model_id, _, bytes)| VectorRef { model_id, bytes }),
                similar_to: similar.as_ref().map(|hit| (hit.id.as_str(), hit.score)),
                carried: &[],
                id: None,
            })
            .collect();
        let (outcomes, _) = store.write_items(&items, now_ms()).map_err(|error| {
            // The whole chain: "database or disk is full" is what tells the user what to do.
            format!("cannot store the experience (nothing was stored): {:#}", anyhow::Error::new(error))
        })?;
        self.sync_vectors(store);
        let outcomes = outcomes
            .into_iter()
            .zip(&similar)
            .map(|(outcome, similar)| {
                let similarity = similar.as_ref().filter(|_| outcome.similar).map(|hit| hit.score);
                (outcome, similarity)
            })
            .collect();
        Ok(outcomes)
    }

    /// Stores many experiences in one transaction; items that fail the gate are reported
    /// and skipped, the rest are stored.
    /// An item may carry the status it had when it was exported: a held (pending or rejected)
    /// experience stays held, and nothing is promoted past what the gate decides.
    pub fn import(&self, items: Vec<Result<ImportEntry, String>>) -> EngineResult<Imported> {
        let mut imported = Imported { ids: vec![None; items.len()], ..Imported::default() };
        let results = self.gate_all(items);
        let mut gated: Vec<GatedImport> = Vec::with_capacity(results.len());
        let mut positions = Vec::with_capacity(results.len());
        for (index, result) in results.into_iter().enumerate() {
            match result {
                Ok(item) => {
                    gated.push(item);
                    positions.push(index);
                }
                Err(error) => imported.rejected.push((index, error)),
            }
        }
        if gated.is_empty() {
            return Ok(imported);
        }
        let write_items: Vec<WriteItem<'_>> = gated
            .iter()
            .map(|(item, carried)| WriteItem { carried: carried.as_slice(), ..WriteItem::plain(item) })
            .collect();
        let mut store = self.lock_writer();
        let (outcomes, _) = store.write_items(&write_items, now_ms())?;
        self.after_write(&mut store, &created_ids(&outcomes));
        drop(store);
        if gated.len() >= RELEASE_MEMORY_AFTER_ITEMS {
            // Indexing a large batch frees tens of megabytes that the allocator would keep.
            crate::memory::release_free_memory();
        }
        for (position, outcome) in positions.into_iter().zip(outcomes) {
            if outcome.merged {
                imported.duplicates += 1;
            } else {
                imported.imported += 1;
            }
            imported.ids[position] = Some(outcome.id.to_string());
        }
        Ok(imported)
    }

    /// Runs import items through the gate, on two threads for large batches: the gate is pure
    /// CPU work (redaction and injection patterns) and a sizeable share of an import's cost.
    /// A carried variant passes the gate too (validation, redaction); one that fails it fails
    /// its item, saying which.
    fn gate_all(&self, items: Vec<Result<ImportEntry, String>>) -> Vec<Result<GatedImport, String>> {
        let gate_one = |item: Result<ImportEntry, String>| {
            item.and_then(|ImportEntry { new, held, variants }| {
                let mut gated = kb_core::gate(new, &self.policy).map_err(|error| error.to_string())?;
                if let Some(held @ (Status::Pending | Status::Rejected)) = held
                    && (gated.status == Status::Active || held == Status::Rejected)
                {
                    gated.status = held;
                }
                let carried = variants
                    .into_iter()
                    .enumerate()
                    .map(|(index, variant)| {
                        let source = variant.new.source.unwrap_or(Source::Import);
                        let gated = kb_core::gate(variant.new, &self.policy)
                            .map_err(|error| format!("variants[{index}]: {error}"))?;
                        let content_type =
                            gated.experience.content.as_ref().map(|_| {
                                gated.experience.content_type.clone().unwrap_or_else(|| "text/plain".to_owned())
                            });
                        let new = gated.experience;
                        Ok(kb_store::Variant {
                            task: new.task,
                            resource: new.resource,
                            result: new.result,
                            score: gated.score,
                            content: new.content,
                            content_type,
                            agent_id: new.agent_id,
                            submitted_by: new.submitted_by,
                            session_key: new.session_key,
                            source: source.as_str().to_owned(),
                            similarity: variant.similarity,
                            created_at: variant.created_at_ms,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok((gated, carried))
            })
        };
        if items.len() < PARALLEL_GATE_MIN_ITEMS {
            return items.into_iter().map(gate_one).collect();
        }
        let mut items = items;
        let second_half = items.split_off(items.len() / 2);
        std::thread::scope(|scope| {
            let second = scope.spawn(|| second_half.into_iter().map(gate_one).collect::<Vec<_>>());
            let mut results: Vec<_> = items.into_iter().map(gate_one).collect();
            results.extend(second.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            results
        })
    }

    /// Searches active experiences, best first. BM25 waits for the index when it is
    /// rebuilding; vectors join in when a model is ready, and their absence is noted.
    pub async fn search(&self, query: SearchQuery<'_>) -> EngineResult<(Vec<Found>, Answered)> {
        let top_k = match query.top_k {
            None => self.config.search.default_top_k,
            Some(top_k) if top_k < 1 => {
                return Err(EngineError::invalid("top_k", format!("must be at least 1, got {top_k}")));
            }
            Some(top_k) => (top_k as usize).min(self.config.search.max_top_k),
        };
        let min_score = match query.min_score {
            None => self.config.search.default_min_score,
            Some(score @ 1..=5) => score as u8,
            Some(score) => {
                return Err(EngineError::invalid("min_score", format!("must be an integer from 1 to 5, got {score}")));
            }
        };
        if query.query.trim().is_empty() {
            return Err(EngineError::invalid("query", "must not be empty"));
        }
        let text = truncate_chars(query.query, MAX_QUERY_CHARS);
        let filter = VectorFilter { min_score, agent_id: query.agent_id };
        // Fusion looks deeper than the answer: an experience ranked low by one retriever and
        // high by the other must be in both candidate lists to be rewarded.
        let n_fused = (top_k * 3).max(kb_embed::fusion::MIN_CANDIDATES);
        // An origin filter drops candidates after retrieval, so each retriever looks deeper.
        let depth = if query.origin == Origin::All { top_k } else { n_fused };
        let stale_index = if query.mode != SearchMode::Vector { self.wait_for_index().await? } else { None };
        // BM25 alone is ranked as the hybrid ranks it (`fusion::keyword`), so it looks as deep.
        let bm25 = |limit: usize, coverage: bool| -> EngineResult<Vec<Bm25Hit>> {
            let request = SearchRequest {
                query: text,
                limit,
                min_score,
                agent_id: query.agent_id,
                status: Status::Active,
                coverage,
            };
            Ok(self.index.search(&request).context("search failed")?)
        };
        // The readiness check is cheap; only embedding the query is worth a blocking thread,
        // so a daemon without a model answers at BM25's cost.
        let (vector_result, bm25_hits) = match (query.mode, self.vector_ready()) {
            (SearchMode::Bm25, _) => (None, bm25(n_fused, true)?),
            (SearchMode::Vector, Ok(())) => {
                (Some(on_blocking_thread(|| self.vector_search(text, depth, filter))), Vec::new())
            }
            (SearchMode::Vector, Err(why)) => return Err(EngineError::Unavailable(why)),
            (SearchMode::Hybrid, Ok(())) => {
                // Embedding the query takes milliseconds, BM25 well under one: BM25 runs on a
                // second thread meanwhile, so hybrid search costs about what vector search does.
                let (vectors, bm25_hits) = on_blocking_thread(|| {
                    std::thread::scope(|scope| {
                        let bm25_hits = scope.spawn(|| bm25(n_fused, true));
                        let vectors = self.vector_search(text, n_fused, filter);
                        (vectors, bm25_hits.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    })
                });
                (Some(vectors), bm25_hits?)
            }
            (SearchMode::Hybrid, Err(why)) => (Some(Err(why)), bm25(n_fused, true)?),
        };
        let (vector_hits, mut note) = match vector_result {
            None => (None, None),
            Some(Ok(found)) => (Some(found), self.backlog_note()),
            Some(Err(why)) if query.mode == SearchMode::Vector => return Err(EngineError::Unavailable(why)),
            Some(Err(why)) => (None, Some(format!("searched by BM25 alone: {why}"))),
        };
        // An identifier or a quoted string asks for the experience that holds it, whatever
        // the vectors or the other words say (a vector-only search stays what it says it is).
        let terms = if query.mode == SearchMode::Vector { Vec::new() } else { self.lookups(text, top_k) };
        let coverage: HashMap<String, f32> = bm25_hits.iter().map(|hit| (hit.id.clone(), hit.coverage)).collect();
        let coverage_of = |id: &String| coverage.get(id).copied().unwrap_or(0.0);
        let bm25_hits = scored(bm25_hits);
        let (ranked, mode): (Vec<(String, f32)>, SearchMode) = match (query.mode, vector_hits) {
            (SearchMode::Hybrid, Some((model_id, vector_hits))) => {
                let vector_hits: Vec<(String, f32)> = vector_hits.into_iter().map(|hit| (hit.id, hit.score)).collect();
                let bm25_hits = if kb_embed::fusion::vectors_weigh_in(text) && terms.is_empty() {
                    with_evidence(bm25_hits, &vector_hits)
                } else {
                    bm25_hits
                };
                (kb_embed::fusion::hybrid(&model_id, text, &bm25_hits, &vector_hits, coverage_of), SearchMode::Hybrid)
            }
            (SearchMode::Vector, Some((_, vector_hits))) => {
                (vector_hits.into_iter().map(|hit| (hit.id, hit.score)).collect(), SearchMode::Vector)
            }
            _ => {
                // Ranked as a hybrid search would rank them without vectors, from as many
                // candidates; then cut to the depth BM25 alone answers with, so that an exact
                // term of the query is looked for among no more candidates than before.
                let mut ranked = kb_embed::fusion::keyword(&bm25_hits, coverage_of);
                ranked.truncate(depth);
                (ranked, SearchMode::Bm25)
            }
        };
        if mode == SearchMode::Bm25 && query.mode == SearchMode::Bm25 {
            note = None;
        }
        if let Some(stale) = stale_index {
            note = Some(match note {
                Some(note) => format!("{stale}; {note}"),
                None => stale,
            });
        }
        let ranked = if terms.is_empty() { ranked } else { self.pin_exact(ranked, &terms)? };

        // An origin filter is applied to the stored rows, so it looks at every candidate.
        let depth = if query.origin == Origin::All { top_k } else { ranked.len() };
        let ranked = &ranked[..ranked.len().min(depth)];
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        let experiences = self.reader().get_many(&ids)?;
        let mut found = Vec::with_capacity(experiences.len().min(top_k));
        for experience in experiences {
            if found.len() == top_k {
                break;
            }
            let relevance =
                ranked.iter().find(|(id, _)| id == experience.id.as_str()).map(|(_, score)| *score).unwrap_or(0.0);
            // The store is the truth: a vector hit of an experience changed since is dropped.
            if experience.status == Status::Active
                && experience.score >= min_score
                && query.agent_id.is_none_or(|agent| experience.agent_id.as_deref() == Some(agent))
                && query.origin.admits(experience.source)
            {
                found.push(Found { experience, relevance });
            }
        }
        if !found.is_empty() {
            let mut recalls = self.recalls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for item in &found {
                *recalls.entry(item.experience.id.to_string()).or_default() += 1;
            }
        }
        Ok((found, Answered { mode, note }))
    }

    /// The exact terms of `query` ([`kb_embed::fusion::exact_terms`]) that look something up:
    /// every quoted string, and the identifiers that no more experiences can hold than the
    /// answer shows. An identifier that more hold (`X11`, `Node.js`, `command-line` in a store
    /// of package descriptions) singles nothing out: it is a topic word, which BM25 weighs by
    /// its rarity, and putting first whatever holds it only pushed down better matches that
    /// word it otherwise (measured on the Debian sets: see the README).
    fn lookups(&self, query: &str, top_k: usize) -> Vec<kb_embed::fusion::ExactTerm> {
        let mut terms = kb_embed::fusion::exact_terms(query);
        terms.retain(|term| {
            !term.ignore_case
                // An index that cannot say keeps the term: better a pin too many than a lookup lost.
                || self.index.max_holders(&term.text).map_or(true, |holders| holders <= top_k as u64)
        });
        terms
    }

    /// The candidates whose task, resource or result holds the most of `terms` first
    /// ([`kb_embed::fusion::pin_exact`]), raised to the best candidate's relevance so that
    /// relevance still falls down the list.
    fn pin_exact(
        &self,
        ranked: Vec<(String, f32)>,
        terms: &[kb_embed::fusion::ExactTerm],
    ) -> EngineResult<Vec<(String, f32)>> {
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        let texts: HashMap<String, String> = self
            .reader()
            .get_many(&ids)?
            .into_iter()
            .map(|experience| {
                let text = semantic::embedding_text(&experience.task, &experience.resource, &experience.result);
                (experience.id.to_string(), text)
            })
            .collect();
        let holds = |id: &String| texts.get(id).is_some_and(|text| terms.iter().any(|term| term.found_in(text)));
        let best = ranked.iter().map(|(_, score)| *score).fold(f32::NEG_INFINITY, f32::max);
        let mut pinned = kb_embed::fusion::pin_exact(ranked, terms, |id| texts.get(id).cloned());
        for (id, score) in &mut pinned {
            if holds(id) {
                *score = score.max(best);
            }
        }
        Ok(pinned)
    }

    /// Whether vectors can answer now; `Err` says why not.
    fn vector_ready(&self) -> Result<(), String> {
        match self.semantic.state() {
            kb_embed::EmbedderState::Ready { .. } => Ok(()),
            kb_embed::EmbedderState::Loading => Err("the embedding model is still loading".to_owned()),
            kb_embed::EmbedderState::Unavailable { reason } => Err(format!("no embedding model ({reason})")),
        }
    }

    /// Embeds the query and searches the vectors: the id of the model that answered (the fusion
    /// depends on it) and its hits. `Err` says why vectors cannot answer.
    fn vector_search(
        &self,
        text: &str,
        k: usize,
        filter: VectorFilter<'_>,
    ) -> Result<(String, Vec<kb_embed::Hit>), String> {
        let (model_id, vector) =
            self.semantic.embed_query_now(text).ok_or("the query could not be embedded (see the log)")?;
        let mut hits = self
            .semantic
            .search(&model_id, &vector, k, filter)
            .ok_or_else(|| "the vector index is not loaded yet".to_owned())?;
        let floor = self.semantic.choice().min_similarity_for(&model_id);
        hits.retain(|hit| hit.score >= floor);
        Ok((model_id, hits))
    }

    fn backlog_note(&self) -> Option<String> {
        // Experiences a reindex queued to be embedded again keep their vectors meanwhile.
        let backlog = self.semantic.missing();
        (backlog > 0).then(|| {
            format!("{backlog} experiences are not embedded yet; until they are, only their words can find them")
        })
    }

    /// Keeps the embedding model's background work going: loads the model (retrying while it
    /// cannot), fills the vector index, then embeds the backlog in batches until `stop` is set.
    pub fn run_embedder(&self, stop: &std::sync::atomic::AtomicBool) {
        use kb_embed::Embedder as _;
        let stopping = || stop.load(Ordering::Relaxed);
        let embedder = loop {
            if self.semantic.choice().spec.is_none() || stopping() {
                return;
            }
            if let Some(embedder) = self.semantic.load_model() {
                break embedder;
            }
            let retry_at = Instant::now() + self.semantic.choice().retry;
            while Instant::now() < retry_at {
                if stopping() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        };
        if let Err(error) = self.semantic.attach(&self.lock_writer(), &embedder) {
            let message = format!("cannot load the stored vectors: {error:#}");
            tracing::error!("{message}");
            self.last_error.set(message);
            return;
        }
        crate::memory::release_free_memory();
        let model_id = embedder.model_id().to_owned();
        let mut embedded_since_trim = false;
        while !stopping() {
            let ids = self.semantic.take_backlog(semantic::BACKLOG_WINDOW, Duration::from_millis(500));
            if ids.is_empty() {
                if std::mem::take(&mut embedded_since_trim) {
                    // Half a second without work: the activations of the runs (ONNX Runtime's
                    // arena is off, so they went back to malloc; 170 MiB for a batch of long
                    // texts, measured by kb-embed's `examples/model_memory.rs`) go back to the system.
                    crate::memory::release_free_memory();
                }
                continue;
            }
            embedded_since_trim = true;
            let mut stored = HashSet::new();
            let embedded = self.embed_batch(embedder.as_ref(), &model_id, &ids, &mut stored);
            if let Err(error) = &embedded {
                let message = format!("cannot embed experiences (will retry): {error:#}");
                tracing::warn!("{message}");
                self.last_error.set(message);
                // Runs stored before the failure stay done.
                let remaining: Vec<String> = ids.iter().filter(|id| !stored.contains(id.as_str())).cloned().collect();
                self.semantic.requeue(&remaining);
            }
            self.semantic.batch_done();
            if embedded.is_err() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    /// A run the model refused, embedded text by text. A text it refuses alone is left without
    /// a vector (logged and shown as the last error; search finds it by its words, and the next
    /// start tries again), so that one bad text cannot hold up the backlog forever. When the
    /// model refuses a known-good probe as well, it is the model that fails: the run's error
    /// stands and the batch is retried.
    fn embed_one_by_one(
        &self,
        embedder: &dyn kb_embed::Embedder,
        run: &[(String, String)],
        run_error: kb_embed::Error,
    ) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
        let mut embedded = Vec::with_capacity(run.len());
        let mut refused = Vec::new();
        for (id, text) in run {
            self.semantic.yield_to_queries();
            match embedder.embed(&[text.as_str()]) {
                Ok(mut vectors) if vectors.len() == 1 => embedded.push((id.clone(), vectors.remove(0))),
                Ok(_) => refused.push((id, "no vector came back".to_owned())),
                Err(error) => refused.push((id, kb_embed::error_chain(&error))),
            }
        }
        if refused.is_empty() {
            return Ok(embedded);
        }
        if embedder.embed(&[EMBEDDING_PROBE]).is_err() {
            return Err(run_error.into());
        }
        for (id, reason) in refused {
            let message = format!("experience {id} left without a vector: the model refuses its text: {reason}");
            tracing::warn!("{message}");
            self.last_error.set(message);
        }
        Ok(embedded)
    }

    /// Embeds the experiences `ids` that are still active, in runs of similar length, and stores
    /// each run's vectors as soon as it is done (their ids into `stored`, so a failure later in
    /// the batch requeues only the rest). Queries waiting for the model go first, before every
    /// run.
    fn embed_batch(
        &self,
        embedder: &dyn kb_embed::Embedder,
        model_id: &str,
        ids: &[String],
        stored: &mut HashSet<String>,
    ) -> anyhow::Result<()> {
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut sources: Vec<(String, String)> = self
            .reader()
            .embedding_sources(&id_refs)?
            .into_iter()
            .map(|source| {
                let text = semantic::embedding_text(&source.task, &source.resource, &source.result);
                (source.id, text)
            })
            .collect();
        sources.sort_by_cached_key(|(_, text)| kb_embed::estimated_tokens(text));
        for run in semantic::runs(&sources, |(_, text)| kb_embed::estimated_tokens(text)) {
            let texts: Vec<&str> = run.iter().map(|(_, text)| text.as_str()).collect();
            self.semantic.yield_to_queries();
            let embedded: Vec<(String, Vec<f32>)> = match embedder.embed(&texts) {
                Ok(vectors) => run.iter().map(|(id, _)| id.clone()).zip(vectors).collect(),
                Err(error) => self.embed_one_by_one(embedder, run, error)?,
            };
            let blobs: Vec<Vec<u8>> = embedded.iter().map(|(_, vector)| kb_embed::to_bytes(vector)).collect();
            let rows: Vec<(&str, &[u8])> =
                embedded.iter().zip(&blobs).map(|((id, _), blob)| (id.as_str(), blob.as_slice())).collect();
            let mut store = self.lock_writer();
            store.put_vectors(model_id, &rows)?;
            self.semantic.store_batch(model_id, &embedded);
            stored.extend(embedded.into_iter().map(|(id, _)| id));
        }
        Ok(())
    }

    /// Waits while the index is being rebuilt. `Some(note)` when it is ready to answer but
    /// behind the store (a failed index answers from its last good commit).
    async fn wait_for_index(&self) -> EngineResult<Option<String>> {
        let mut state = self.index_state.subscribe();
        let waited = tokio::time::timeout(
            Duration::from_secs(30),
            state.wait_for(|state| !matches!(state, IndexState::Rebuilding { .. })),
        )
        .await;
        match waited {
            Ok(Ok(state)) => match &*state {
                IndexState::Failed { reason } => Ok(Some(format!(
                    "the search index is behind the store, so the newest experiences may be missing; it retries by itself ({reason})"
                ))),
                _ => Ok(None),
            },
            Ok(Err(_)) => Err(EngineError::Unavailable("the daemon is shutting down".to_owned())),
            Err(_) => Err(EngineError::Unavailable(format!(
                "the search index is still being rebuilt ({}); try again shortly",
                self.rebuild_progress()
            ))),
        }
    }

    /// Saves the hooks' sessions when they changed (every 30 s and at shutdown).
    pub fn save_sessions(&self) {
        let path = self.paths.home.join(SESSIONS_FILE);
        if let Err(error) = self.hooks.save(&path) {
            tracing::warn!(path = %path.display(), "cannot save the sessions: {error}");
        }
    }

    /// Writes accumulated recall counters to the store. Counters are statistics, so they are
    /// batched rather than written (and fsynced) on every search.
    pub fn flush_recalls(&self) {
        let recalls: Vec<(String, u64)> = {
            let mut recalls = self.recalls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            recalls.drain().collect()
        };
        if recalls.is_empty() {
            return;
        }
        if let Err(error) = self.lock_writer().add_recalls(&recalls) {
            tracing::warn!("cannot store recall counters: {error:#}");
        }
    }

    pub fn content(&self, id: &str) -> EngineResult<(String, String)> {
        match self.reader().content(id)? {
            StoredContent::NoSuchExperience => Err(EngineError::NotFound(format!("no experience with id {id}"))),
            StoredContent::NoContent => Err(EngineError::NotFound(format!("experience {id} has no detailed content"))),
            StoredContent::Content { content, content_type } => Ok((content, content_type)),
        }
    }

    /// What merged duplicates of `id` brought that it does not hold.
    pub fn variants(&self, id: &str) -> EngineResult<Vec<kb_store::Variant>> {
        Ok(self.reader().variants(id)?)
    }

    /// Where teammates' copies of an experience came from (the team hub).
    pub fn origins(&self, id: &str) -> EngineResult<Vec<kb_store::Origin>> {
        Ok(self.reader().hub_origins(id)?)
    }

    pub fn get(&self, id: &str) -> EngineResult<Experience> {
        self.reader().get(id)?.ok_or_else(|| EngineError::NotFound(format!("no experience with id {id}")))
    }

    /// Experiences held for review (suspected prompt injections, extracted proposals), newest
    /// first, with the flags that say why, each with what it was extracted from and the stored
    /// experience it resembles.
    pub fn pending(&self, limit: usize) -> EngineResult<Vec<Held>> {
        let filter = ListFilter { status: Some(Status::Pending), agent_id: None, before_id: None, limit };
        let reader = self.reader();
        let held = reader.list(&filter)?;
        let ids: Vec<&str> = held.iter().map(|experience| experience.id.as_str()).collect();
        let mut proposals = reader.proposal_infos(&ids)?;
        let mut out = Vec::with_capacity(held.len());
        for experience in held {
            let proposal = proposals.remove(experience.id.as_str());
            let similar = match proposal.as_ref().and_then(|proposal| proposal.similar.clone()) {
                Some((id, similarity)) => reader.get(&id)?.map(|similar| (similar, similarity)),
                None => None,
            };
            out.push(Held { experience, proposal, similar });
        }
        Ok(out)
    }

    /// The review queue's decision on experiences: `Active` approves (the user's call overrides
    /// a suspicion: the flags stay, and auto-recall still leaves flagged experiences out),
    /// `Rejected` rejects (kept, so the same text submitted or proposed again stays rejected).
    /// An approved proposal, or an approval with `edit`, is written as a submit would be: it
    /// passes the gate again and merges into the experience it duplicates, if any. Returns, per
    /// id, the status it had (`None`: unknown id), and the approved ids that merged.
    pub fn review(&self, ids: &[String], status: Status, edit: Option<&Edit>) -> EngineResult<Reviewed> {
        let mut reviewed = Reviewed { before: vec![None; ids.len()], merged: Vec::new() };
        let mut plain: Vec<usize> = Vec::new();
        if status == Status::Active {
            let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let proposals = self.reader().proposal_infos(&id_refs)?;
            for (position, id) in ids.iter().enumerate() {
                let proposal = proposals.get(id.as_str());
                if proposal.is_none() && edit.is_none() {
                    plain.push(position);
                    continue;
                }
                match self.approve_rewritten(id, proposal, edit)? {
                    Rewritten::NotHeld => plain.push(position),
                    Rewritten::Done { merged_into } => {
                        reviewed.before[position] = Some(Status::Pending);
                        if let Some(into) = merged_into {
                            reviewed.merged.push((id.clone(), into));
                        }
                    }
                }
            }
        } else {
            plain = (0..ids.len()).collect();
        }
        if !plain.is_empty() {
            let plain_ids: Vec<&str> = plain.iter().map(|position| ids[*position].as_str()).collect();
            let mut store = self.lock_writer();
            let (before, _) = store.set_status(&plain_ids, status, now_ms())?;
            self.after_write(&mut store, &HashSet::new());
            for (position, before) in plain.into_iter().zip(before) {
                reviewed.before[position] = before;
            }
        }
        Ok(reviewed)
    }

    /// Approves a held experience by writing it again (edited, when `edit` says so) through the
    /// gate, under its own id, merging into what it duplicates.
    fn approve_rewritten(
        &self,
        id: &str,
        proposal: Option<&kb_store::ProposalInfo>,
        edit: Option<&Edit>,
    ) -> EngineResult<Rewritten> {
        let (experience, content, stored_vector) = {
            let reader = self.reader();
            let Some(experience) = reader.get(id)? else { return Ok(Rewritten::NotHeld) };
            if experience.status != Status::Pending {
                return Ok(Rewritten::NotHeld);
            }
            let content = match reader.content(id)? {
                kb_store::StoredContent::Content { content, content_type } => Some((content, content_type)),
                _ => None,
            };
            (experience, content, reader.vector_of(id)?)
        };
        let (content, content_type) = content.unzip();
        let mut new = NewExperience {
            task: experience.task,
            resource: experience.resource,
            result: experience.result,
            score: Some(i64::from(experience.score)),
            content,
            content_type,
            agent_id: experience.agent_id,
            submitted_by: experience.submitted_by,
            session_key: experience.session_key,
            source: Some(experience.source),
            confidence: experience.confidence,
        };
        let words_before = (new.task.clone(), new.resource.clone(), new.result.clone());
        if let Some(edit) = edit {
            for (field, value) in
                [(&mut new.task, &edit.task), (&mut new.resource, &edit.resource), (&mut new.result, &edit.result)]
            {
                if let Some(value) = value {
                    *field = value.clone();
                }
            }
            if let Some(score) = edit.score {
                new.score = Some(score);
            }
            if let Some(content) = &edit.content {
                new.content = Some(content.clone());
                new.content_type.get_or_insert_with(|| "text/markdown".to_owned());
            }
        }
        let edited_words = words_before != (new.task.clone(), new.resource.clone(), new.result.clone());
        let mut gated = kb_core::gate(new, &self.policy)?;
        // The user approves: held or not by the gate, it becomes active; the flags stay.
        gated.status = Status::Active;
        for flag in experience.flags {
            if !gated.flags.contains(&flag) {
                gated.flags.push(flag);
            }
        }
        let vector = match stored_vector {
            Some((model_id, bytes)) if !edited_words => Some((model_id, bytes)),
            _ => {
                let text = semantic::embedding_text(
                    &gated.experience.task,
                    &gated.experience.resource,
                    &gated.experience.result,
                );
                self.semantic.embed_now(&text).map(|(model_id, vector)| (model_id, kb_embed::to_bytes(&vector)))
            }
        };
        let similar = match (&vector, edited_words) {
            (Some((model_id, bytes)), true) => kb_embed::from_bytes(bytes)
                .ok()
                .and_then(|vector| self.semantic.near_duplicate(model_id, &vector))
                .map(|hit| (hit.id, hit.score)),
            _ => proposal.and_then(|proposal| proposal.similar.clone()).map(|(id, similarity)| (id, similarity as f32)),
        };
        let experience_id = ExperienceId::from_stored(id.to_owned());
        let item = WriteItem {
            vector: vector.as_ref().map(|(model_id, bytes)| VectorRef { model_id, bytes }),
            similar_to: similar.as_ref().filter(|(_, score)| *score < 1.0).map(|(id, score)| (id.as_str(), *score)),
            ..WriteItem::plain(&gated)
        };
        let mut store = self.lock_writer();
        let Some((outcome, _)) = store.replace_held(&experience_id, item, now_ms())? else {
            return Ok(Rewritten::NotHeld);
        };
        self.after_write(&mut store, &created_ids(std::slice::from_ref(&outcome)));
        Ok(Rewritten::Done { merged_into: outcome.merged.then(|| outcome.id.to_string()) })
    }

    /// The extraction queue's state and counters; tokens are those of `day`.
    pub fn extraction_stats(&self, day: i64) -> EngineResult<kb_store::ExtractionStats> {
        Ok(self.reader().extraction_stats(day)?)
    }

    /// Extraction jobs, newest first.
    pub fn extraction_jobs(&self, state: Option<&str>, limit: usize) -> EngineResult<Vec<kb_store::JobSummary>> {
        Ok(self.reader().extraction_jobs(state, limit)?)
    }

    /// Queues failed extraction jobs again and wakes the worker.
    pub fn retry_extractions(&self, ids: &[i64]) -> EngineResult<Vec<bool>> {
        let retried = self.lock_writer().retry_failed_extractions(ids)?;
        self.extraction.wake();
        Ok(retried)
    }

    /// Deletes experiences; returns the ids that did not exist.
    pub fn delete(&self, ids: &[String]) -> EngineResult<(usize, Vec<String>)> {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut store = self.lock_writer();
        let (existed, _) = store.delete(&ids)?;
        self.after_write(&mut store, &HashSet::new());
        drop(store);
        let missing: Vec<String> =
            ids.iter().zip(&existed).filter(|(_, existed)| !**existed).map(|(id, _)| (*id).to_owned()).collect();
        Ok((ids.len() - missing.len(), missing))
    }

    pub fn list(&self, filter: &ListFilter) -> EngineResult<Vec<Experience>> {
        Ok(self.reader().list(filter)?)
    }

    pub fn export_page(&self, after_id: Option<&str>, limit: usize) -> EngineResult<Vec<ExportRow>> {
        Ok(self.reader().export_page(after_id, limit)?)
    }

    /// Rebuilds the BM25 index from the store, in full, then (with `embeddings`) queues every
    /// active experience to be embedded again by the current model, in the background.
    pub fn reindex(&self, embeddings: bool) -> EngineResult<Reindexed> {
        let indexed = self.rebuild_index()?;
        let embeddings = embeddings.then(|| {
            // Under the writer lock: the embedder thread attaches a model under it too, so the
            // request is either queued now or seen by the attach.
            let _store = self.lock_writer();
            self.semantic.refresh_all()
        });
        if let Some(Refresh::Queued { queued, model_id }) = &embeddings {
            tracing::info!(%model_id, queued, "reindex: experiences queued to be embedded again");
        }
        Ok(Reindexed { indexed, embeddings })
    }

    /// Rebuilds the BM25 index from the store, in full. Returns the documents indexed.
    fn rebuild_index(&self) -> EngineResult<u64> {
        let _one_at_a_time = self.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        self.index_state.send_replace(IndexState::Rebuilding { reason: "reindex requested".to_owned() });
        // Force a full rebuild rather than a catch-up.
        {
            let _store = self.lock_writer();
            let _index_turn = self.lock_index_sync();
            self.index.clear().context("cannot clear the index")?;
            self.index.commit(0).context("cannot clear the index")?;
        }
        self.prepare_index_alone();
        match &*self.index_state.borrow() {
            IndexState::Ready => Ok(self.index.num_docs()),
            IndexState::Failed { reason } | IndexState::Rebuilding { reason } => {
                Err(EngineError::Internal(anyhow::anyhow!("{reason}")))
            }
        }
    }

    /// Writes a consistent copy of the database to `destination`.
    pub fn backup(&self, destination: &Path) -> EngineResult<u64> {
        if destination.exists() {
            return Err(EngineError::invalid("path", format!("{} already exists", destination.display())));
        }
        self.reader().backup_to(destination)?;
        Ok(std::fs::metadata(destination).map(|meta| meta.len()).unwrap_or(0))
    }

    pub fn counts(&self) -> EngineResult<Counts> {
        Ok(self.reader().counts()?)
    }

    pub fn store_seq(&self) -> EngineResult<u64> {
        Ok(self.reader().seq()?)
    }

    pub fn index_state(&self) -> IndexState {
        self.index_state.borrow().clone()
    }

    pub fn index_documents(&self) -> u64 {
        self.index.num_docs()
    }

    pub fn index_applied_seq(&self) -> u64 {
        self.index.applied_seq()
    }

    pub fn rebuild_progress(&self) -> String {
        format!("{} of {}", self.rebuild_done.load(Ordering::Relaxed), self.rebuild_total.load(Ordering::Relaxed))
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn index_dir(&self) -> PathBuf {
        self.paths.index.clone()
    }
}

/// A held experience as the review queue shows it.
#[derive(Debug, Clone)]
pub struct Held {
    pub experience: Experience,
    /// Set for an extracted proposal.
    pub proposal: Option<kb_store::ProposalInfo>,
    /// The stored experience it resembles, with their similarity.
    pub similar: Option<(Experience, f64)>,
}

/// Fields the user changed before approving.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    pub task: Option<String>,
    pub resource: Option<String>,
    pub result: Option<String>,
    pub score: Option<i64>,
    pub content: Option<String>,
}

/// What a review did.
#[derive(Debug, Clone, Default)]
pub struct Reviewed {
    /// Per id, the status it had; `None` for an unknown id.
    pub before: Vec<Option<Status>>,
    /// Approved ids that merged into the experience they duplicate: (approved, into).
    pub merged: Vec<(String, String)>,
}

enum Rewritten {
    NotHeld,
    Done { merged_into: Option<String> },
}

/// Ids of the experiences a write created (not merged into existing ones).
pub(crate) fn created_ids(outcomes: &[kb_store::WriteOutcome]) -> HashSet<String> {
    outcomes.iter().filter(|outcome| !outcome.merged).map(|outcome| outcome.id.to_string()).collect()
}

fn index_doc(row: &IndexRow) -> IndexDoc<'_> {
    IndexDoc {
        id: &row.id,
        task: &row.task,
        resource: &row.resource,
        result: &row.result,
        content: row.content.as_deref(),
        score: row.score,
        status: row.status,
        agent_id: row.agent_id.as_deref(),
    }
}

pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as i64).unwrap_or(0)
}

/// Runs `work`, which blocks (it runs the embedding model), without stalling the other tasks
/// of a multi-threaded runtime.
fn on_blocking_thread<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte_index, _)) => &text[..byte_index],
        None => text,
    }
}

/// Makes `dir` a private (0700) directory of this user: creates it (and its parents) if
/// needed, and tightens its mode if it exists and is looser. It holds the database, the index
/// and, by default, the socket, so no other user may list or enter it.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if !dir.is_dir() {
        return std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create the directory {}", dir.display()));
    }
    let metadata = std::fs::metadata(dir).with_context(|| format!("cannot inspect {}", dir.display()))?;
    if metadata.uid() != rustix::process::getuid().as_raw() {
        anyhow::bail!(
            "{} belongs to another user; KnowHub keeps its state in a directory of its own user",
            dir.display()
        );
    }
    if metadata.permissions().mode() & 0o077 != 0 {
        tracing::info!(dir = %dir.display(), "making the directory private (0700)");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// A model that refuses every text containing `refused`, or every text at all once broken:
    /// what the real models here never do, and what the backlog must survive.
    struct Picky {
        refused: &'static str,
        broken: AtomicBool,
    }

    impl kb_embed::Embedder for Picky {
        fn model_id(&self) -> &str {
            "picky"
        }

        fn dimensions(&self) -> usize {
            2
        }

        fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
            if self.broken.load(Ordering::Relaxed) || texts.iter().any(|text| text.contains(self.refused)) {
                return Err(kb_embed::Error::Embed {
                    model_id: "picky".into(),
                    n_texts: texts.len(),
                    reason: "refused".into(),
                });
            }
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    fn engine_with(tasks: &[&str]) -> (tempfile::TempDir, Arc<Engine>, Vec<String>) {
        let home = tempfile::tempdir().unwrap();
        let engine = Engine::open(Paths::resolve(Some(home.path().to_path_buf()), None), Config::default()).unwrap();
        engine.prepare_index();
        let ids = tasks
            .iter()
            .map(|task| {
                let new = NewExperience {
                    task: (*task).to_owned(),
                    resource: "r".into(),
                    result: "ok".into(),
                    ..NewExperience::default()
                };
                engine.submit(new).unwrap().id
            })
            .collect();
        (home, engine, ids)
    }

    #[test]
    fn a_text_the_model_refuses_is_left_out_and_the_rest_of_its_run_is_stored() {
        let (_home, engine, ids) = engine_with(&["deploy with helm", "poisoned text", "cache docker layers"]);
        let model = Picky { refused: "poisoned", broken: AtomicBool::new(false) };
        let mut stored = HashSet::new();
        engine.embed_batch(&model, "picky", &ids, &mut stored).expect("the batch goes on without the bad text");
        assert_eq!(stored, HashSet::from([ids[0].clone(), ids[2].clone()]));
        assert_eq!(engine.reader().vector_counts("picky").unwrap(), (2, 2));
        let (_, last_error) = engine.last_error.get().expect("the refusal is reported");
        assert!(last_error.contains(&ids[1]) && last_error.contains("refuses"), "{last_error}");
    }

    #[test]
    fn a_model_that_refuses_everything_fails_the_batch_so_it_is_retried() {
        let (_home, engine, ids) = engine_with(&["deploy with helm", "cache docker layers"]);
        let model = Picky { refused: "never", broken: AtomicBool::new(true) };
        let mut stored = HashSet::new();
        assert!(engine.embed_batch(&model, "picky", &ids, &mut stored).is_err());
        assert!(stored.is_empty());
        assert_eq!(engine.reader().vector_counts("picky").unwrap(), (0, 0));
    }
}
