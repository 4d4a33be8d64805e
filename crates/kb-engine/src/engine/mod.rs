//! The engine: the store, the index and the operations on them, with no knowledge of JSON.
//!
//! Architecture Invariant: every write goes through `Engine::writer`, one mutex that owns the
//! SQLite write connection; after each store write the index is brought up to the store's
//! sequence number (`sync_index`) before the write is answered, so a search sent after a
//! write's answer sees it: staged (searchable at once from memory) and committed to the
//! index's segments within `COMMIT_INTERVAL`, or committed at once when large.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use kb_core::{GatePolicy, ValidationError};
use kb_index::{ExperienceIndex, OpenOutcome};
use kb_proto::Paths;
use kb_store::{Counts, Store};
use tokio::sync::watch;

use crate::config::EngineConfig;
use crate::semantic::{self, ModelChoice, Semantic};
use crate::stats::{LastError, LatencyWindow};

mod embedder;
mod index;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod query_tests;
mod review;
mod search;
mod write;

pub use embedder::Pulse;
pub use index::{COMMIT_INTERVAL, Reindexed};
pub use review::{Edit, Held, Reviewed, version_of};
pub use search::{Answered, Found, Origin, SearchMode, SearchQuery};
pub use write::{CarriedVariant, ImportEntry, Imported, Submitted};
use write::{CatchUps, PendingSubmit};

/// Read connections kept open for searches and listings.
const N_READERS: usize = 4;

/// Queries longer than this are cut: search needs the gist, not a whole log.
pub const MAX_QUERY_CHARS: usize = 4_096;

/// Threads that commit queued submits: one writes a batch while the other brings the BM25 index
/// up to the one before (see `Engine::submit`).
const COMMITTERS: usize = 2;

/// Why an operation failed, in terms the protocol maps to error codes.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid `{field}`: {message}")]
    Invalid { field: String, message: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unavailable(String),
    /// The user decided against this before: `id` is the experience they rejected.
    #[error("{message}")]
    Refused { id: String, message: String },
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
    /// Reading the index failed or panicked: its files are damaged. Searches answer with an
    /// error that says so (never a dropped connection) until the index service has rebuilt it
    /// from the store, without a restart.
    Damaged {
        reason: String,
    },
}

pub struct Engine {
    pub paths: Paths,
    pub config: EngineConfig,
    policy: GatePolicy,
    writer: Mutex<Store>,
    readers: Vec<Mutex<Store>>,
    next_reader: AtomicUsize,
    index: ExperienceIndex,
    index_state: watch::Sender<IndexState>,
    /// Counts the store's committed writes, for whoever must hear of them without calling into
    /// the engine (the hub sync, whose outbox a write may have filled): [`Engine::watch_writes`].
    writes: watch::Sender<u64>,
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
    pub semantic: Semantic,
    /// Submits waiting for the writer; whichever gets it first commits them all (group commit).
    pending_submits: Mutex<Vec<Arc<PendingSubmit>>>,
    /// Notified when a submit on its way to the writer is queued or gives up (see `write::GATHER`).
    pending_grew: Condvar,
    /// Submits gated or embedded and not yet queued (see `write::GATHER`).
    submits_on_the_way: AtomicUsize,
    /// Where submits are gated and their near-duplicates looked for, below the searches'
    /// priority.
    lane: crate::lane::Lane,
    /// Where queued submits are committed (group commit), below the searches' priority too.
    committer: crate::lane::Lane,
}

impl Engine {
    /// Opens the store and the index. When the index is missing, corrupt or behind the store,
    /// it is brought up to date by `prepare_index`, which the caller runs (in the background).
    pub fn open(paths: Paths, config: EngineConfig) -> anyhow::Result<Arc<Engine>> {
        create_private_dir(&paths.home)?;
        let writer = Store::open(&paths.database).context("cannot open the experience store")?;
        let readers = (0..N_READERS)
            .map(|_| Store::open_reader(&paths.database).map(Mutex::new))
            .collect::<kb_store::Result<Vec<_>>>()
            .context("cannot open read connections to the experience store")?;
        // Its threads (indexing, merges) are the writes' background work.
        let (index, outcome) = ExperienceIndex::open_with(&paths.index, crate::lane::start_below_searches)
            .context("cannot open the search index")?;
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
            policy: config.policy.clone(),
            paths,
            config,
            writer: Mutex::new(writer),
            readers,
            next_reader: AtomicUsize::new(0),
            index,
            index_state,
            writes: watch::channel(0).0,
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
            pending_submits: Mutex::new(Vec::new()),
            pending_grew: Condvar::new(),
            submits_on_the_way: AtomicUsize::new(0),
            lane: crate::lane::Lane::start(
                "write-lane",
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            ),
            committer: crate::lane::Lane::start("commit-lane", COMMITTERS),
        }))
    }

    /// The gate's policy (privacy mode and limits) every write passes.
    pub fn policy(&self) -> &GatePolicy {
        &self.policy
    }

    pub fn lock_writer(&self) -> MutexGuard<'_, Store> {
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn reader(&self) -> MutexGuard<'_, Store> {
        // Take a free connection if there is one; otherwise queue on one in turn.
        for reader in &self.readers {
            if let Ok(guard) = reader.try_lock() {
                return guard;
            }
        }
        let turn = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[turn].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn counts(&self) -> EngineResult<Counts> {
        Ok(self.reader().counts()?)
    }

    pub fn store_seq(&self) -> EngineResult<u64> {
        Ok(self.reader().seq()?)
    }

    /// A receiver that changes after every committed write of the store (submits, imports,
    /// reviews, deletes, pulled changes): the engine's one channel to the services above it.
    pub fn watch_writes(&self) -> watch::Receiver<u64> {
        self.writes.subscribe()
    }

    /// Tells the watchers of [`Engine::watch_writes`] that a write was committed.
    fn wrote(&self) {
        self.writes.send_modify(|count| *count = count.wrapping_add(1));
    }

    pub fn index_state(&self) -> IndexState {
        self.index_state.borrow().clone()
    }

    pub fn index_documents(&self) -> u64 {
        self.index.num_docs()
    }

    /// The store change searches reflect (staged or committed).
    pub fn index_applied_seq(&self) -> u64 {
        self.index.staged_seq()
    }

    /// The store change the index's segments hold.
    pub fn index_committed_seq(&self) -> u64 {
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

/// Ids of the experiences a write created (not merged into existing ones).
pub fn created_ids(outcomes: &[kb_store::WriteOutcome]) -> HashSet<String> {
    outcomes.iter().filter(|outcome| !outcome.merged).map(|outcome| outcome.id.to_string()).collect()
}

/// The text of a panic's payload (`panic!` with a literal or with a format).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
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
