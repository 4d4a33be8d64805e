//! Vector search in the daemon: the embedding model, loaded in the background; the in-memory
//! vector index of active experiences, kept in step with the store; and the backlog of
//! experiences still to embed, worked off in runs that take the model's turn after every waiting
//! query and write (`crate::turns`); search queries have a session of the model to themselves
//! (`semantic/queries.rs`).
//!
//! Architecture Invariant: the vector index changes only under the engine's writer lock
//! (`attach`, `sync`, `store_batch`), after the store, so it never shows a vector the store
//! does not hold. Vectors are derived: when anything goes wrong here, search falls back to BM25
//! and says why; no write ever fails because of an embedding.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kb_core::{ExperienceKey, Status};
use kb_embed::{Embedder, EmbedderState, FastEmbedder, Hit, LoadOptions, ModelSpec, Precision, VectorIndex, is_e5};
use kb_store::{Store, VectorRow};

use crate::config::{EmbeddingConfig, PrecisionConfig};
use crate::turns::{ModelTurns, Priority, Turn};

mod backlog;
mod queries;
mod window;
mod writes;

use backlog::Backlog;
pub use queries::QueryRoute;
use queries::QuerySession;
use window::WindowShare;
use writes::WriteGroup;
/// The backlog's pause after a run, in runs, while searches or submits come in (see
/// [`Semantic::pace_backlog`]).
const BACKLOG_PAUSE_PER_RUN: u32 = 1;
/// The longest pause of the backlog between runs.
const BACKLOG_PAUSE_MAX: Duration = Duration::from_millis(200);

pub use backlog::{
    BACKLOG_BATCH, BACKLOG_RUN_TOKENS, BACKLOG_RUN_TOKENS_WHILE_SEARCHED, BACKLOG_WINDOW, FRESH_LIMIT, runs,
};

/// The environment variable naming a local model directory; wins over the config.
pub const ENV_MODEL_DIR: &str = "KNOWHUB_MODEL_DIR";
/// Rows per batch when the vector index is filled from the store.
const LOAD_BATCH: usize = 4_096;

/// The text of an experience that is embedded: what it was for, with what, and what happened.
pub fn embedding_text(task: &str, resource: &str, result: &str) -> String {
    format!("{task}\n{resource}\n{result}")
}

/// Where the model comes from, decided once at start.
#[derive(Debug, Clone)]
pub struct ModelChoice {
    pub spec: Option<ModelSpec>,
    /// Why there is no spec, when there is none.
    pub off_reason: Option<String>,
    pub onnxruntime: Option<PathBuf>,
    pub precision: Precision,
    /// Load the model with int8 weights ([`LoadOptions::quantize`]); `None`: the model's
    /// default ([`quantized_by_default`]).
    pub quantize: Option<bool>,
    pub retry: Duration,
    pub similar_threshold: f32,
    /// The floor for vector matches the user set; `None`: the model's (see
    /// [`default_min_similarity`]).
    pub min_similarity: Option<f32>,
    /// Where the int8 rewrite of a local model is kept between starts ([`LoadOptions::int8_cache`]).
    pub int8_cache: PathBuf,
    /// ONNX Runtime threads of the query session; 0: none ([`QueryRoute`]).
    pub query_threads: usize,
}

impl ModelChoice {
    /// Vector matches of `model_id` less similar (cosine) than this are no evidence for
    /// auto-recall (`relevance`); ranking uses no floor.
    pub fn min_similarity_for(&self, model_id: &str) -> f32 {
        self.min_similarity.unwrap_or_else(|| default_min_similarity(model_id))
    }
}

/// The relevance floor of a model: the cosine below which a vector match is noise.
///
/// Cosines are not comparable across models: all-MiniLM-L6-v2 puts unrelated texts near 0.2,
/// multilingual-e5-small near 0.8. Measured with `tools/calibrate-floor.py` (vector mode, through
/// the daemon; relevant = the labelled experience or paragraph when in the top 10; unrelated =
/// `crates/kb-bench/data/unrelated-queries.txt`, 20 English and 20 Chinese questions on cooking,
/// travel, health...: top-1 cosine):
///
/// | model | set | relevant p1 / p5 / p50 | unrelated p50 / p90 / max |
/// |---|---|---|---|
/// | e5-small | english-experiences | 0.834 / 0.841 / 0.904 | 0.792 / 0.820 / 0.823 |
/// | e5-small | cmrc-trial (zh) | 0.844 / 0.858 / 0.908 | 0.832 / 0.866 / 0.871 |
/// | e5-small | cmrc-trial-chunks | 0.853 / 0.868 / 0.919 | 0.842 / 0.882 / 0.886 |
/// | e5-small int8 (default) | english-experiences | 0.831 / 0.841 / 0.904 | 0.792 / 0.822 / 0.829 |
/// | MiniLM | english-experiences | 0.255 / 0.305 / 0.621 | 0.164 / 0.202 / 0.276 |
///
/// So 0.83 for the E5 family: it keeps 99% of the relevant matches on every set and drops every
/// unrelated English query's (on the Chinese encyclopedia sets "unrelated" questions about
/// festivals or food do find paragraphs about them, rightly). MiniLM keeps 0.25. A model this
/// table does not know gets 0.25 too; set `embedding.min_similarity` for it.
pub fn default_min_similarity(model_id: &str) -> f32 {
    if is_e5(model_id) { 0.83 } else { 0.25 }
}

/// Whether a model is loaded with int8 weights when the config does not say: the E5 family.
/// multilingual-e5-small's float weights cost 866 MiB of RSS at 100k experiences (1.5 GiB at
/// the peak while loading) and hybrid p99 20 ms; int8, 533 MiB (peak 840) and 12.5 ms, and
/// imports 2.7 times faster (84 experiences/s instead of 31), for at most 0.7 points of R@5 on
/// the quality sets (`kb-bench hybrid [--quantize]`, `kb-bench quality [--quantize]`; figures
/// before the compact tokenizer and the int8 cache, which lowered both). For all-MiniLM-L6-v2
/// the saving is 63 MiB for about 1 point: it stays float.
pub fn quantized_by_default(spec: &ModelSpec) -> bool {
    match spec {
        ModelSpec::LocalDir(dir) => dir.file_name().is_some_and(|name| is_e5(&name.to_string_lossy())),
        ModelSpec::Download { name, .. } => is_e5(name),
    }
}

impl ModelChoice {
    /// `KNOWHUB_MODEL_DIR`, else the config's `model_dir`, else the download of `model`.
    pub fn from_config(config: &EmbeddingConfig, models_dir: PathBuf, env_model_dir: Option<PathBuf>) -> ModelChoice {
        let int8_cache = models_dir.join("int8");
        let (spec, off_reason) = if !config.enabled {
            (None, Some("embeddings are turned off in the config (embedding.enabled = false)".to_owned()))
        } else if let Some(dir) = env_model_dir.or_else(|| config.model_dir.clone()) {
            (Some(ModelSpec::LocalDir(dir)), None)
        } else if config.download {
            (Some(ModelSpec::Download { name: config.model.clone(), cache_dir: models_dir }), None)
        } else {
            (None, Some(format!("no model: set {ENV_MODEL_DIR} or embedding.model_dir, or allow embedding.download")))
        };
        ModelChoice {
            spec,
            off_reason,
            onnxruntime: config.onnxruntime.clone(),
            precision: match config.precision {
                PrecisionConfig::F32 => Precision::F32,
                PrecisionConfig::Int8 => Precision::Int8,
            },
            quantize: config.quantize,
            retry: Duration::from_secs(config.retry_seconds),
            similar_threshold: config.similar_threshold,
            min_similarity: config.min_similarity,
            int8_cache,
            query_threads: config.query_threads,
        }
    }
}

/// Filters a vector search applies, like the BM25 index's.
#[derive(Debug, Clone, Copy)]
pub struct VectorFilter<'a> {
    pub min_score: u8,
    pub agent_id: Option<&'a str>,
}

/// What asking for every experience to be embedded again did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refresh {
    /// Every active experience is in the backlog, to be embedded by `model_id`.
    Queued { queued: u64, model_id: String },
    /// The model is still loading: every experience is queued once it is loaded.
    Deferred,
    /// No model to embed with: nothing was queued.
    Unavailable { reason: String },
}

/// What `status` shows of the embedder.
#[derive(Debug, Clone)]
pub struct SemanticStatus {
    pub state: EmbedderState,
    pub disabled: bool,
    pub backlog: u64,
    pub vectors: u64,
    pub next_retry: Option<Duration>,
    /// Submits that waited for their vector before committing, and submits that did not.
    pub submits_embedded_first: u64,
    pub submits_embedded_after: u64,
    /// Where search queries are embedded.
    pub query_route: QueryRoute,
    /// The store's window share, once measured (`semantic/window.rs`).
    pub window_share: Option<f32>,
}

/// The active experiences the vector index knows, with what its filters need. Keyed by
/// [`ExperienceKey`], agents interned: measured with `kb-bench hybrid` at 100k experiences, the
/// daemon's RSS is 7.7 MiB lower than with a shared string per id and a string per agent.
struct Loaded {
    model_id: String,
    vectors: VectorIndex<ExperienceKey>,
    /// Every active experience, with a vector or still waiting for one.
    meta: HashMap<ExperienceKey, Meta>,
    agents: Agents,
    applied_seq: u64,
}

/// What the search filters look at, 8 bytes.
#[derive(Debug, Clone, Copy)]
struct Meta {
    score: u8,
    agent: Option<AgentNumber>,
}

/// An agent id's number in [`Agents`].
type AgentNumber = NonZeroU32;

/// The agent ids experiences were written by, each stored once: agents are few and their
/// experiences many. Never shrinks (an agent whose experiences are all gone costs its name).
#[derive(Default)]
struct Agents {
    numbers: HashMap<Box<str>, AgentNumber>,
}

impl Agents {
    fn intern(&mut self, agent_id: &str) -> AgentNumber {
        if let Some(&number) = self.numbers.get(agent_id) {
            return number;
        }
        let number = AgentNumber::new(self.numbers.len() as u32 + 1).unwrap_or(AgentNumber::MAX);
        self.numbers.insert(agent_id.into(), number);
        number
    }

    fn find(&self, agent_id: &str) -> Option<AgentNumber> {
        self.numbers.get(agent_id).copied()
    }
}

impl Loaded {
    fn new(model_id: String, dimensions: usize, precision: Precision) -> Loaded {
        Loaded {
            model_id,
            vectors: VectorIndex::new(dimensions, precision),
            meta: HashMap::new(),
            agents: Agents::default(),
            applied_seq: 0,
        }
    }

    /// Adds an active experience's metadata, and its vector when it has one of the index's
    /// model. False when the experience still needs a vector.
    fn insert_row(&mut self, row: &VectorRow) -> bool {
        let Some(key) = ExperienceKey::parse(&row.id) else {
            // Every id the store writes is canonical; one that is not can't be keyed here and
            // is found by its words alone.
            tracing::warn!(id = %row.id, "not a canonical experience id, left out of vector search");
            return true;
        };
        let agent = row.agent_id.as_deref().map(|agent_id| self.agents.intern(agent_id));
        self.meta.insert(key, Meta { score: row.score, agent });
        let Some(bytes) = &row.vector else { return false };
        match kb_embed::from_bytes(bytes).and_then(|vector| self.vectors.upsert(key, &vector)) {
            Ok(()) => true,
            Err(error) => {
                // A damaged or foreign-sized blob: embed the experience again.
                tracing::warn!(id = %row.id, "stored vector unusable, re-embedding: {error}");
                false
            }
        }
    }

    /// Drops an experience that was deleted or is no longer active.
    fn forget(&mut self, id: &str) {
        if let Some(key) = ExperienceKey::parse(id) {
            self.vectors.remove(&key);
            self.meta.remove(&key);
        }
    }

    fn has_vector(&self, id: &str) -> bool {
        ExperienceKey::parse(id).is_some_and(|key| self.vectors.contains(&key))
    }
}

pub struct Semantic {
    choice: ModelChoice,
    state: RwLock<EmbedderState>,
    embedder: RwLock<Option<Arc<dyn Embedder>>>,
    loaded: RwLock<Option<Loaded>>,
    backlog: Mutex<Backlog>,
    backlog_changed: Condvar,
    /// Notified when the backlog's fresh submits drop below [`FRESH_LIMIT`].
    backlog_room: Condvar,
    /// Every run of the main session of the model takes a turn here: queries first (while
    /// they have no session of their own), then writes, then the backlog.
    pub turns: ModelTurns,
    /// The second session, for search queries alone, with turns of its own.
    query: QuerySession,
    /// Writes waiting for the model before they commit, embedded together.
    writes: WriteGroup,
    /// How much of the store's texts the model sees (`window.rs`).
    window: WindowShare,
    /// Submits that waited for their vector before committing, and submits that did not.
    pub submits_embedded_first: AtomicU64,
    pub submits_embedded_after: AtomicU64,
    /// A reindex asked for every experience to be embedded again before the model was loaded:
    /// `attach` queues them all.
    refresh_on_attach: AtomicBool,
    /// When the next attempt to load a model is due, as milliseconds since `started`.
    next_retry_ms: AtomicU64,
    started: Instant,
}

impl Semantic {
    pub fn new(choice: ModelChoice) -> Semantic {
        let state = match &choice.off_reason {
            Some(reason) => EmbedderState::Unavailable { reason: reason.clone() },
            None => EmbedderState::Loading,
        };
        Semantic {
            choice,
            state: RwLock::new(state),
            embedder: RwLock::new(None),
            loaded: RwLock::new(None),
            backlog: Mutex::new(Backlog::default()),
            backlog_changed: Condvar::new(),
            backlog_room: Condvar::new(),
            turns: ModelTurns::default(),
            query: QuerySession::default(),
            writes: WriteGroup::default(),
            window: WindowShare::default(),
            submits_embedded_first: AtomicU64::new(0),
            submits_embedded_after: AtomicU64::new(0),
            refresh_on_attach: AtomicBool::new(false),
            next_retry_ms: AtomicU64::new(0),
            started: Instant::now(),
        }
    }

    pub fn choice(&self) -> &ModelChoice {
        &self.choice
    }

    pub fn state(&self) -> EmbedderState {
        self.state.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set_state(&self, state: EmbedderState) {
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = state;
    }

    /// Loads the model (blocking: reads files, maybe downloads, starts ONNX Runtime). On failure
    /// the state says why and when the next attempt is.
    pub fn load_model(&self) -> Option<Arc<dyn Embedder>> {
        let spec = self.choice.spec.as_ref()?;
        self.set_state(EmbedderState::Loading);
        // Loaded again after the main session, of whatever model that turns out to be.
        self.query.clear("the model is loading");
        let started = Instant::now();
        let options = self.load_options(spec);
        match FastEmbedder::load_with(spec, self.choice.onnxruntime.as_deref(), &options) {
            Ok(embedder) => {
                tracing::info!(
                    model_id = embedder.model_id(),
                    took_ms = started.elapsed().as_millis() as u64,
                    "embedding model ready"
                );
                let embedder: Arc<dyn Embedder> = Arc::new(embedder);
                *self.embedder.write().unwrap_or_else(PoisonError::into_inner) = Some(embedder.clone());
                Some(embedder)
            }
            Err(error) => {
                let state = EmbedderState::unavailable(&error);
                if let EmbedderState::Unavailable { reason } = &state {
                    tracing::warn!("no embedding model, searching by BM25 alone: {reason}");
                }
                self.set_state(state);
                let due = self.started.elapsed() + self.choice.retry;
                self.next_retry_ms.store(due.as_millis() as u64, Ordering::Relaxed);
                None
            }
        }
    }

    /// How the model is loaded: the same for both sessions but for their threads. These are the
    /// main session's, which embeds writes and the backlog: its ONNX Runtime threads run at the
    /// write lane's lower priority (`crate::lane`), so that searches come first.
    fn load_options(&self, spec: &ModelSpec) -> LoadOptions {
        let quantize = self.choice.quantize.unwrap_or_else(|| quantized_by_default(spec));
        LoadOptions {
            quantize,
            int8_cache: Some(self.choice.int8_cache.clone()),
            on_thread_start: Some(crate::lane::lower_priority),
            ..LoadOptions::default()
        }
    }

    /// Fills the vector index from the store's vectors of `embedder`'s model and queues every
    /// active experience without one. Runs under the writer lock, so no write slips between
    /// the scan and the first `sync`.
    pub fn attach(&self, store: &Store, embedder: &dyn Embedder) -> kb_store::Result<()> {
        self.window.clear();
        let model_id = embedder.model_id().to_owned();
        let mut loaded = Loaded::new(model_id.clone(), embedder.dimensions(), self.choice.precision);
        let mut missing = Vec::new();
        loaded.applied_seq = store.for_each_vector_row(&model_id, LOAD_BATCH, |rows| -> kb_store::Result<()> {
            for row in rows {
                if !loaded.insert_row(row) {
                    missing.push(row.id.clone());
                }
            }
            Ok(())
        })?;
        let n_vectors = loaded.vectors.len();
        // A reindex sent while the model was loading: embed again what already has a vector.
        let refresh: Vec<String> = if self.refresh_on_attach.swap(false, Ordering::AcqRel) {
            let mut keys: Vec<ExperienceKey> =
                loaded.meta.keys().filter(|key| loaded.vectors.contains(*key)).copied().collect();
            keys.sort_unstable();
            keys.into_iter().map(ExperienceKey::to_id).collect()
        } else {
            Vec::new()
        };
        *self.loaded.write().unwrap_or_else(PoisonError::into_inner) = Some(loaded);
        {
            let mut backlog = self.lock_backlog();
            *backlog = Backlog::default();
            for id in &missing {
                backlog.push(id);
            }
            for id in &refresh {
                backlog.push_refresh(id);
            }
        }
        self.backlog_changed.notify_all();
        self.backlog_room.notify_all();
        tracing::info!(
            %model_id,
            vectors = n_vectors,
            backlog = missing.len(),
            re_embed = refresh.len(),
            "vector index loaded"
        );
        self.set_state(EmbedderState::ready(embedder));
        Ok(())
    }

    /// Makes `embedder` the loaded model and fills the vector index for it, as the embedder
    /// service does once a model loads: for tests, with a model of their own.
    #[cfg(test)]
    pub(crate) fn attach_model(&self, store: &Store, embedder: Arc<dyn Embedder>) -> kb_store::Result<()> {
        *self.embedder.write().unwrap_or_else(PoisonError::into_inner) = Some(embedder.clone());
        self.attach(store, embedder.as_ref())
    }

    /// Applies the store's changes since the last sync. Runs under the writer lock after every
    /// write.
    ///
    /// The changes are read from the store before the vector index is locked for writing:
    /// searches read it meanwhile (issue 25: a search waited for the query of each group
    /// commit's sync, and the ones after it for that search, as a waiting writer holds new
    /// readers back). Everything that changes the index runs under the writer lock, as this
    /// does, so nothing moves it between the read and the lock; should it have moved, the
    /// changes are read again under the lock.
    pub fn sync(&self, store: &Store) -> kb_store::Result<()> {
        let read_from = {
            let guard = self.loaded.read().unwrap_or_else(PoisonError::into_inner);
            let Some(loaded) = guard.as_ref() else { return Ok(()) };
            (loaded.applied_seq, loaded.model_id.clone())
        };
        let read = store.vector_changes_since(read_from.0, &read_from.1)?;
        let mut guard = self.loaded.write().unwrap_or_else(PoisonError::into_inner);
        let Some(loaded) = guard.as_mut() else { return Ok(()) };
        let changes = if (loaded.applied_seq, loaded.model_id.as_str()) == (read_from.0, read_from.1.as_str()) {
            read
        } else {
            store.vector_changes_since(loaded.applied_seq, &loaded.model_id)?
        };
        let mut backlog = self.lock_backlog();
        let mut queued = false;
        for id in &changes.deleted_ids {
            loaded.forget(id);
            backlog.remove(id);
        }
        for row in &changes.rows {
            if row.status != Status::Active {
                loaded.forget(&row.id);
                backlog.remove(&row.id);
            } else if !loaded.insert_row(row) && !loaded.has_vector(&row.id) {
                queued |= backlog.push(&row.id);
                // Without a vector now, whatever queued it: it counts as missing.
                backlog.refresh.remove(&row.id);
            }
        }
        loaded.applied_seq = changes.seq;
        drop(backlog);
        if queued {
            self.backlog_changed.notify_all();
        }
        Ok(())
    }

    fn lock_backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `timeout` for backlog work, then takes up to `n` ids.
    pub fn take_backlog(&self, n: usize, timeout: Duration) -> Vec<String> {
        let backlog = self.lock_backlog();
        let (mut backlog, _) = self
            .backlog_changed
            .wait_timeout_while(backlog, timeout, |backlog| backlog.members.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        let taken = backlog.take(n);
        backlog.in_flight.clone_from(&taken);
        if backlog.fresh_len() < FRESH_LIMIT {
            self.backlog_room.notify_all();
        }
        taken
    }

    /// The worker is done with the ids it took last (stored, or put back with `requeue`).
    pub fn batch_done(&self) {
        let mut backlog = self.lock_backlog();
        let Backlog { in_flight, members, refresh, .. } = &mut *backlog;
        for id in in_flight.drain(..) {
            // A requeued id is still waiting to be embedded again.
            if !members.contains(&id) {
                refresh.remove(&id);
            }
        }
    }

    /// Puts ids back at the front of the backlog (their batch failed and will be retried).
    pub fn requeue(&self, ids: &[String]) {
        let mut backlog = self.lock_backlog();
        for id in ids.iter().rev() {
            if backlog.members.insert(id.clone()) {
                backlog.queue.push_front(id.clone());
            }
        }
    }

    /// Adds freshly computed vectors to the index, for experiences still active. Runs under the
    /// writer lock, after the store has them.
    pub fn store_batch(&self, model_id: &str, vectors: &[(String, Vec<f32>)]) {
        let mut guard = self.loaded.write().unwrap_or_else(PoisonError::into_inner);
        let Some(loaded) = guard.as_mut() else { return };
        if loaded.model_id != model_id {
            return;
        }
        for (id, vector) in vectors {
            let Some(key) = ExperienceKey::parse(id).filter(|key| loaded.meta.contains_key(key)) else { continue };
            if let Err(error) = loaded.vectors.upsert(key, vector) {
                tracing::warn!(%id, "vector not indexed: {error}");
            }
        }
    }

    /// Queues every active experience to be embedded again by the current model, behind what
    /// is already waiting; their vectors stay in the index, and answer searches, until the new
    /// ones replace them. Runs under the writer lock, so a model being attached meanwhile either
    /// is attached already or will see `refresh_on_attach`.
    pub fn refresh_all(&self) -> Refresh {
        let guard = self.loaded.read().unwrap_or_else(PoisonError::into_inner);
        let Some(loaded) = guard.as_ref() else {
            return match self.state() {
                EmbedderState::Loading if self.choice.spec.is_some() => {
                    self.refresh_on_attach.store(true, Ordering::Release);
                    Refresh::Deferred
                }
                EmbedderState::Unavailable { reason } => Refresh::Unavailable { reason },
                EmbedderState::Loading | EmbedderState::Ready { .. } => {
                    Refresh::Unavailable { reason: "the vector index is not loaded".to_owned() }
                }
            };
        };
        let mut keys: Vec<ExperienceKey> = loaded.meta.keys().copied().collect();
        // Keys order as their ULIDs: oldest first, like the rest of the backlog.
        keys.sort_unstable();
        let mut backlog = self.lock_backlog();
        let mut queued = 0u64;
        // One already waiting (no vector yet, or queued by an earlier reindex) counts too: it
        // will be embedded by the current model all the same.
        for key in keys {
            let id = key.to_id();
            if loaded.vectors.contains(&key) {
                backlog.push_refresh(&id);
            } else {
                backlog.push(&id);
            }
            queued += 1;
        }
        drop(backlog);
        self.backlog_changed.notify_all();
        Refresh::Queued { queued, model_id: loaded.model_id.clone() }
    }

    /// The model's turn for a run of the backlog: after every query and write waiting.
    pub fn backlog_turn(&self) -> Turn<'_> {
        self.turns.take(Priority::Backlog)
    }

    /// The most tokens a backlog run may hold now: fewer while searches are being made, since a
    /// query waits for the run in progress.
    pub fn run_token_budget(&self) -> usize {
        if self.turns.queries_recent() { BACKLOG_RUN_TOKENS_WHILE_SEARCHED } else { BACKLOG_RUN_TOKENS }
    }

    /// Called after a backlog run that took `run`: while searches or submits come in, the
    /// backlog pauses [`BACKLOG_PAUSE_PER_RUN`] times as long as its run took, so that its runs
    /// (on both cores) leave the CPU to them about half the time; once they stop it runs flat
    /// out. Measured with `kb-bench hostile --model` (e5, 50 writers, a machine at load 6–7):
    /// a pause of four runs instead of one did not make searches faster (hybrid p50 / p99
    /// 100 / 310 ms against 84 / 262) and left fewer submits done (169/s against 230).
    pub fn pace_backlog(&self, run: Duration) {
        if self.turns.foreground_recent() {
            std::thread::sleep((run * BACKLOG_PAUSE_PER_RUN).min(BACKLOG_PAUSE_MAX));
        }
    }

    /// The loaded model, when there is one.
    pub fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.embedder.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Embeds one experience's text before its write commits (a near-duplicate check, a
    /// review), after waiting queries and ahead of the backlog. `None` when no model is ready or
    /// the model fails (logged: the write goes on without it).
    pub fn embed_now(&self, text: &str) -> Option<(String, Vec<f32>)> {
        let (model_id, mut vectors) = self.embed_texts_now(&[text])?;
        Some((model_id, vectors.pop()?))
    }

    /// Embeds a search query (with the model's query prefix): by the query session, which no
    /// write or backlog run holds, else on the main session ahead of every write and the
    /// backlog. `None` when no model is ready or the model fails (logged: search goes on by BM25).
    pub fn embed_query_now(&self, query: &str) -> Option<(String, Vec<f32>)> {
        if let Some(embedded) = self.embed_query_apart(query) {
            return Some(embedded);
        }
        let (model_id, mut vectors) =
            self.embed_ahead(Priority::Query, |embedder| embedder.embed_query(query).map(|vector| vec![vector]))?;
        Some((model_id, vectors.pop()?))
    }

    fn embed_ahead(
        &self,
        priority: Priority,
        embed: impl FnOnce(&dyn Embedder) -> kb_embed::Result<Vec<Vec<f32>>>,
    ) -> Option<(String, Vec<Vec<f32>>)> {
        if self.embedder().is_none() || !self.state().is_ready() {
            return None;
        }
        let _turn = self.turns.take(priority);
        self.embed_with_turn(embed)
    }

    /// Runs `embed` on the loaded model; the caller holds the model's turn.
    fn embed_with_turn(
        &self,
        embed: impl FnOnce(&dyn Embedder) -> kb_embed::Result<Vec<Vec<f32>>>,
    ) -> Option<(String, Vec<Vec<f32>>)> {
        let embedder = self.embedder()?;
        if !self.state().is_ready() {
            return None;
        }
        match embed(embedder.as_ref()) {
            Ok(vectors) if !vectors.is_empty() && vectors.iter().all(|vector| !vector.is_empty()) => {
                Some((embedder.model_id().to_owned(), vectors))
            }
            Ok(_) => None,
            Err(error) => {
                tracing::warn!("embedding failed: {}", kb_embed::error_chain(&error));
                None
            }
        }
    }

    /// Whether the vector index holds a vector of `id` (of the current model).
    pub fn has_vector(&self, id: &str) -> bool {
        self.loaded.read().unwrap_or_else(PoisonError::into_inner).as_ref().is_some_and(|loaded| loaded.has_vector(id))
    }

    /// The `k` active experiences nearest to `vector` under `filter`, when the vector index
    /// holds vectors of `model_id`.
    pub fn search(&self, model_id: &str, vector: &[f32], k: usize, filter: VectorFilter<'_>) -> Option<Vec<Hit>> {
        let guard = self.loaded.read().unwrap_or_else(PoisonError::into_inner);
        let loaded = guard.as_ref().filter(|loaded| loaded.model_id == model_id)?;
        let agent = match filter.agent_id {
            Some(agent_id) => match loaded.agents.find(agent_id) {
                Some(number) => Some(number),
                // No experience of this agent has been seen: none can match.
                None => return Some(Vec::new()),
            },
            None => None,
        };
        let accept = |key: &ExperienceKey| {
            loaded.meta.get(key).is_some_and(|meta| {
                meta.score >= filter.min_score && agent.is_none_or(|agent| meta.agent == Some(agent))
            })
        };
        match loaded.vectors.search_filtered(vector, k, accept) {
            Ok(hits) => Some(hits.into_iter().map(|hit| Hit { id: hit.id.to_id(), score: hit.score }).collect()),
            Err(error) => {
                tracing::warn!("vector search failed: {error}");
                None
            }
        }
    }

    /// The stored experience most similar to `vector`, when it is at least as similar as the
    /// near-duplicate threshold.
    pub fn near_duplicate(&self, model_id: &str, vector: &[f32]) -> Option<Hit> {
        let threshold = self.choice.similar_threshold;
        if threshold > 1.0 {
            return None;
        }
        let nearest = self.search(model_id, vector, 1, VectorFilter { min_score: 1, agent_id: None })?;
        nearest.into_iter().next().filter(|hit| hit.score >= threshold)
    }

    /// Vectors in the index and experiences waiting for one.
    pub fn coverage(&self) -> (u64, u64) {
        let vectors = self
            .loaded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map_or(0, |loaded| loaded.vectors.len());
        (vectors as u64, self.lock_backlog().len() as u64)
    }

    /// Experiences waiting to be embedded that have no vector of the current model yet: search
    /// finds them only by their words.
    pub fn missing(&self) -> u64 {
        self.lock_backlog().missing() as u64
    }

    pub fn status(&self) -> SemanticStatus {
        let (vectors, backlog) = self.coverage();
        let state = self.state();
        let next_retry = match (&state, self.choice.spec.is_some()) {
            (EmbedderState::Unavailable { .. }, true) => {
                let due = Duration::from_millis(self.next_retry_ms.load(Ordering::Relaxed));
                Some(due.saturating_sub(self.started.elapsed()))
            }
            _ => None,
        };
        SemanticStatus {
            state,
            disabled: self.choice.off_reason.is_some(),
            backlog,
            vectors,
            next_retry,
            submits_embedded_first: self.submits_embedded_first.load(Ordering::Relaxed),
            submits_embedded_after: self.submits_embedded_after.load(Ordering::Relaxed),
            query_route: self.query_route(),
            window_share: self.measured_window_share(),
        }
    }
}

#[cfg(test)]
mod tests;
