//! The write path: submits in group commits, imports gated in parallel, and deletes.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use kb_core::redact::Redaction;
use kb_core::sameness::Said;
use kb_core::{NewExperience, Source, Status};
use kb_store::{OnRejected, Store, VectorRef, WriteItem};

use crate::semantic::{self};

use super::{Engine, EngineError, EngineResult, created_ids, now_ms};

/// Imports at least this large hand the memory their indexing freed back to the system.
pub(super) const RELEASE_MEMORY_AFTER_ITEMS: usize = 1_000;

/// Import batches at least this large are gated on two threads.
pub(super) const PARALLEL_GATE_MIN_ITEMS: usize = 256;

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
                "stored as a new experience, kept apart from the near-identical {}: {}",
                apart.similar_to, apart.reason
            )),
            (false, _, None) => None,
        }
    }
}

/// Stored experiences read per key as a submit's possible near-duplicates (see
/// [`Engine::twins_before_commit`]). A merge needs no material difference, that is the same key,
/// so one is usually all there is; texts in the same words with other values have other keys and
/// cannot crowd it out.
pub(super) const TWIN_CANDIDATES: usize = 5;

/// What a submit takes into its commit (see [`Engine::vector_before_commit`]): its model's id,
/// vector and their bytes; a possible near-duplicate still without a vector, with its
/// similarity; a twin its words keep it apart from.
type BeforeCommit = (Option<(String, Vec<f32>, Vec<u8>)>, Option<kb_embed::Hit>, Option<kb_store::KeptApart>);

/// What the words of a submit say about its possible near-duplicates, before the model is asked
/// (see [`Engine::twins_before_commit`]).
pub(super) enum Twins {
    /// No model is ready: the submit commits without a vector.
    NoModel,
    /// None it could merge into: it commits at once and its vector follows; with the stored
    /// experience of the same wording it is kept apart from, if any.
    NoneMergeable { apart_by_words: Option<kb_store::KeptApart> },
    /// Possible merge targets (empty: the store could not say): the submit is embedded before
    /// its commit, with those of them that have no vector yet.
    Mergeable(Vec<kb_store::EmbeddingSource>),
}

/// The longest a submit that gets the writer waits for those still on their way to it (gated
/// on the write lane, or embedded) before it commits all that is queued; it waits not at all
/// when none is on its way, as for a lone submit. Issue 25: with the gate on two lane threads,
/// submits reached the writer one by one, and each commit's fixed cost (the store's transaction,
/// the vector and BM25 catch-ups: 0.6 ms of CPU) was paid per submit: 1.05 submits per commit
/// under 50 writers, against 5.8 when every request gated on its own thread. `kb-bench hostile
/// --model --model-only` (e5), 50 writers, no search: 2 ms gave 605–644 submits a second at
/// 2.7–2.9 ms of CPU each, 5 ms 718 at 2.5, 10 ms 779 at 2.3 (before the lane: 706–779 at
/// 2.4–2.6), with submit p99 126–129, 129 and 113 ms.
pub(super) const GATHER: std::time::Duration = std::time::Duration::from_millis(10);

/// A commit takes no more than this many submits' worth of waiting (see [`GATHER`]).
pub(super) const GATHER_MAX: usize = 64;

/// A submit on its way to the writer (see [`GATHER`]): counted from the lane until it is queued.
pub(super) struct OnTheWay<'a>(&'a Engine);

impl<'a> OnTheWay<'a> {
    fn new(engine: &'a Engine) -> OnTheWay<'a> {
        engine.submits_on_the_way.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        OnTheWay(engine)
    }
}

impl Drop for OnTheWay<'_> {
    fn drop(&mut self) {
        self.0.submits_on_the_way.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        // Under the queue's lock, so that a gathering writer cannot miss it between its check
        // and its wait.
        let _queued = self.0.pending_submits.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.pending_grew.notify_all();
    }
}

/// How long a submit waits for room in the backlog (see [`semantic::FRESH_LIMIT`]) before it
/// commits anyway (the model is failing or far behind: its vector follows later).
pub(super) const ROOM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// A submit waiting for the writer: its gated experience, its vector, and where it is in the
/// group commit (see [`Engine::submit`]).
pub(super) struct PendingSubmit {
    gated: kb_core::Gated,
    vector: Option<(String, Vec<f32>, Vec<u8>)>,
    /// A possible near-duplicate with no vector yet (committed without one moments ago), with
    /// its similarity to this submit, worked out before the commit.
    twin: Option<kb_embed::Hit>,
    /// A stored experience with the same wording that differs in an outcome, a negation or a
    /// value: no merge can take this submit, which is told why it was kept apart.
    apart_by_words: Option<kb_store::KeptApart>,
    /// Refuse, or revive when the user confirmed, a duplicate of a rejected experience.
    on_rejected: OnRejected,
    state: Mutex<SubmitState>,
    /// Notified when `state` becomes `Done`.
    settled: Condvar,
}

/// Catch-ups of the BM25 index after submits, counted (see `Engine::index_after_submits`).
#[derive(Debug, Default)]
pub(super) struct CatchUps {
    started: u64,
    finished: u64,
    running: bool,
}

pub(super) enum SubmitState {
    /// In `pending_submits`: whoever gets the writer next writes it.
    Queued,
    /// In a batch being written; its writer settles it.
    Taken,
    /// Written, and searchable in the index (or it failed).
    Done(SubmitOutcome),
}

/// Marks a catch-up finished and wakes the submits waiting for it, when dropped.
pub(super) struct CatchUpDone<'a> {
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
pub(super) struct Unsettled<'a>(&'a [Arc<PendingSubmit>]);

impl Drop for Unsettled<'_> {
    fn drop(&mut self) {
        for pending in self.0 {
            if !matches!(*lock_state(pending), SubmitState::Done(_)) {
                settle(pending, Err("the writer failed while writing this submit (see the log)".to_owned()));
            }
        }
    }
}

pub(super) fn settle(pending: &PendingSubmit, outcome: SubmitOutcome) {
    *lock_state(pending) = SubmitState::Done(outcome);
    pending.settled.notify_all();
}

pub(super) fn lock_state(pending: &PendingSubmit) -> MutexGuard<'_, SubmitState> {
    pending.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the writer that committed a submit hands back to it: the store's outcome and, for a
/// near-identical merge, the similarity; or why the batch could not be written.
pub(super) type SubmitOutcome = Result<Written, String>;

pub(super) type Written = (kb_store::WriteOutcome, Option<f32>);

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
pub(super) type GatedImport = (kb_core::Gated, Vec<kb_store::Variant>);

/// The outcome of an import: one entry per item.
#[derive(Debug, Default)]
pub struct Imported {
    pub ids: Vec<Option<String>>,
    pub imported: usize,
    pub duplicates: usize,
    pub rejected: Vec<(usize, String)>,
}

impl Engine {
    /// Stores one experience.
    ///
    /// Group commit: concurrent submits share one transaction and one fsync, and one index
    /// commit. Each submit queues itself, then asks the commit lane (`Engine::committer`, two
    /// threads below the searches' priority) to commit; the committer that gets the writer
    /// takes every queued submit, writes them in one transaction, brings the vector index up to
    /// date, and lets the writer go before it brings the BM25 index up to date, so the next
    /// batch is written by the other committer while this one is indexed (and an index catch-up
    /// takes every batch committed before it). Every answer waits for its experience to be
    /// durable in the store and searchable. Measured with 50 clients: the index commit costs
    /// several times the store's, so it must not hold the writer. Issue 25: on the request
    /// threads, at the searches' priority, the commits of 1,700–1,900 submits a second with e5
    /// (once their near-duplicates were looked up by key) took the CPU from searches: hybrid
    /// p99 under 50 writers 21–22 ms, 18 on the commit lane (alone 6.1–6.6), for 10% fewer
    /// submits a second (`kb-bench hostile --model`, two alternating pairs).
    ///
    /// Before it queues, a submit is gated and its possible near-duplicates looked for on the
    /// write lane (`crate::lane`: one thread per core, below the searches' priority), and the
    /// committer that gets the writer waits up to [`GATHER`] for those still on their way, so
    /// that a commit takes several.
    ///
    /// A submit of an experience the user rejected is refused ([`EngineError::Refused`]),
    /// nothing written: a rejection sticks. [`Engine::submit_confirmed`] is the user's override.
    pub fn submit(self: &Arc<Self>, new: NewExperience) -> EngineResult<Submitted> {
        self.submit_with(new, OnRejected::Refuse)
    }

    /// Stores one experience the user confirmed: when it is one they rejected before, it is
    /// merged into that one, which becomes active again (or held, when the gate holds it).
    pub fn submit_confirmed(self: &Arc<Self>, new: NewExperience) -> EngineResult<Submitted> {
        self.submit_with(new, OnRejected::Revive)
    }

    fn submit_with(self: &Arc<Self>, new: NewExperience, on_rejected: OnRejected) -> EngineResult<Submitted> {
        // The gate and the near-duplicate lookup need no lock: on the write lane, below the
        // searches' priority (see `crate::lane`).
        let on_the_way = OnTheWay::new(self);
        let engine = Arc::clone(self);
        let (gated, twins) = self.lane.run(move || -> EngineResult<_> {
            let gated = kb_core::gate(new, &engine.policy)?;
            let twins = engine.twins_before_commit(&gated);
            Ok((gated, twins))
        })?;
        let redactions = gated.redactions.clone();
        let flags = gated.flags.clone();
        let (vector, twin, apart_by_words) = self.vector_before_commit(&gated, twins);
        let pending = Arc::new(PendingSubmit {
            gated,
            vector,
            twin,
            apart_by_words,
            on_rejected,
            state: Mutex::new(SubmitState::Queued),
            settled: Condvar::new(),
        });
        self.pending_submits.lock().unwrap_or_else(PoisonError::into_inner).push(pending.clone());
        drop(on_the_way);
        if matches!(*lock_state(&pending), SubmitState::Queued) {
            // Nobody took ours yet: a committer writes everything queued, ours included.
            let engine = Arc::clone(self);
            self.committer.run(move || engine.commit_queued());
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
        if outcome.refused {
            return Err(EngineError::Refused {
                message: format!(
                    "the user rejected this experience before ({}): it was not stored; \
                     only the user can store it again (`kbctl submit --confirm`)",
                    outcome.id
                ),
                id: outcome.id.to_string(),
            });
        }
        Ok(Submitted {
            id: outcome.id.to_string(),
            status: outcome.status,
            merged: outcome.merged,
            similarity,
            redactions,
            flags,
            variant_kept: outcome.variant_kept,
            kept_apart: outcome.kept_apart.or_else(|| pending.apart_by_words.clone().filter(|_| !outcome.merged)),
        })
    }

    /// Commits every queued submit, once those on their way have joined them (see [`GATHER`]),
    /// in one transaction, and settles them; on the commit lane (`Engine::committer`).
    fn commit_queued(&self) {
        let mut store = self.lock_writer();
        if self.pending_submits.lock().unwrap_or_else(PoisonError::into_inner).is_empty() {
            // An earlier commit took them.
            return;
        }
        let batch = std::mem::take(&mut *self.gathered_submits());
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
    }

    /// The queued submits, once those on their way to the writer have joined them: at most
    /// [`GATHER`] later, at once when none is on its way or [`GATHER_MAX`] are queued.
    fn gathered_submits(&self) -> MutexGuard<'_, Vec<Arc<PendingSubmit>>> {
        let deadline = std::time::Instant::now() + GATHER;
        let mut queued = self.pending_submits.lock().unwrap_or_else(PoisonError::into_inner);
        while self.submits_on_the_way.load(std::sync::atomic::Ordering::Acquire) > 0 && queued.len() < GATHER_MAX {
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else { break };
            queued = self.pending_grew.wait_timeout(queued, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        queued
    }

    /// What a submit needs of the model before it commits: its vector and a near-duplicate
    /// without one, or nothing, its vector following the commit through the backlog.
    ///
    /// Issue 25: embedding every submit before its commit put 50 writers' model runs between
    /// the searches and the model, and made each submit wait for all the others'. Yet a
    /// near-duplicate merges only when the two share their content words (`kb_core::sameness`),
    /// so the vector is needed first only when the store holds an active experience with no
    /// material difference from the submit (found by its key, [`Engine::twins_before_commit`]):
    /// then it is embedded now, at the write's priority, with any such twin that has no vector
    /// yet, and merged as before. Otherwise it commits at once, findable by BM25 when its answer
    /// is sent, and is embedded by the backlog ahead of imports; the submit waits only while the
    /// backlog holds [`semantic::FRESH_LIMIT`] submits. Held submits (a suspected injection) keep
    /// their vector for review: embedded now.
    ///
    /// `twins` is what [`Engine::twins_before_commit`] found, on the write lane.
    pub(super) fn vector_before_commit(&self, gated: &kb_core::Gated, twins: Twins) -> BeforeCommit {
        let new = &gated.experience;
        let twins = match twins {
            Twins::NoModel => return (None, None, None),
            Twins::NoneMergeable { apart_by_words } => {
                self.semantic.submits_embedded_after.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if !self.semantic.wait_for_room(ROOM_TIMEOUT) {
                    tracing::debug!("the backlog is full of submits; this one commits without waiting longer");
                }
                return (None, None, apart_by_words);
            }
            Twins::Mergeable(twins) => twins,
        };
        let text = semantic::embedding_text(&new.task, &new.resource, &new.result);
        self.semantic.submits_embedded_first.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Twins committed without a vector moments ago are embedded in the same run; a twin with
        // a stored vector costs nothing more (`near_duplicate` finds it under the writer).
        let twin_texts: Vec<(String, String)> = twins
            .into_iter()
            .filter(|source| !self.semantic.has_vector(&source.id))
            .map(|source| {
                let text = semantic::embedding_text(&source.task, &source.resource, &source.result);
                (source.id, text)
            })
            .collect();
        let texts: Vec<&str> =
            std::iter::once(text.as_str()).chain(twin_texts.iter().map(|(_, text)| text.as_str())).collect();
        let Some((model_id, vectors)) = self.semantic.embed_texts_now(&texts) else { return (None, None, None) };
        let threshold = self.semantic.choice().similar_threshold;
        let mut vectors = vectors.into_iter();
        let Some(vector) = vectors.next() else { return (None, None, None) };
        let twin_vectors: Vec<Vec<f32>> = vectors.collect();
        let twin = twin_texts
            .iter()
            .zip(&twin_vectors)
            .map(|((id, _), twin_vector)| kb_embed::Hit {
                id: id.clone(),
                score: twin_vector.iter().zip(&vector).map(|(a, b)| a * b).sum(),
            })
            .filter(|hit| threshold <= 1.0 && hit.score >= threshold)
            .max_by(|a, b| a.score.total_cmp(&b.score));
        let bytes = kb_embed::to_bytes(&vector);
        (Some((model_id, vector, bytes)), twin, None)
    }

    /// The stored experiences a submit may be a near-duplicate of, by their words (the part of
    /// [`Engine::vector_before_commit`] that needs no model and no lock: run on the write lane).
    /// They are looked up by the submit's keys (`kb_core::sameness::keys_of`, made by the
    /// gate): those with no material difference from it, then those in the same words that it
    /// is kept apart from. Issue 25: a BM25 search of the submit's whole text found them
    /// before, 0.7 ms of a submit's 2.6 ms of CPU under 50 writers (with the texts read and
    /// compared, 0.95 ms); and an experience committed but not yet indexed is found now too.
    pub(super) fn twins_before_commit(&self, gated: &kb_core::Gated) -> Twins {
        if !self.semantic.state().is_ready() {
            return Twins::NoModel;
        }
        self.semantic.turns.note_write();
        if gated.status != Status::Active {
            return Twins::Mergeable(Vec::new());
        }
        let sources = match self.reader().same_key_sources(&gated.same, TWIN_CANDIDATES) {
            Ok(sources) => sources,
            Err(error) => {
                // The store cannot say: the vector decides.
                tracing::warn!("cannot look up possible near-duplicates: {error}");
                return Twins::Mergeable(Vec::new());
            }
        };
        match mergeable_twins(&gated.experience, sources) {
            (twins, apart_by_words) if twins.is_empty() => Twins::NoneMergeable { apart_by_words },
            (twins, _) => Twins::Mergeable(twins),
        }
    }

    /// Returns once the BM25 index has caught up with everything committed to the store before
    /// the call. One thread at a time catches up, taking every batch committed so far; the
    /// others wait for the first catch-up that started after their commit. (Waiting on
    /// `index_sync` instead let late arrivals barge in and each commit a few experiences while
    /// early ones waited: batches of one, 300 ms waits at 50 clients.) A failed catch-up counts
    /// as done: the store has the submit and the healer brings the index up to it.
    pub(super) fn index_after_submits(&self) {
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
    pub(super) fn write_submits(
        &self,
        store: &mut Store,
        batch: &[Arc<PendingSubmit>],
    ) -> Result<Vec<Written>, String> {
        // Near-identical experiences are looked up under the writer, so a submit sees the
        // vectors of every submit committed before it.
        let similar: Vec<Option<kb_embed::Hit>> = batch
            .iter()
            .map(|pending| match &pending.vector {
                Some((model_id, vector, _)) if pending.gated.status == Status::Active => {
                    let indexed = self.semantic.near_duplicate(model_id, vector);
                    match (indexed, &pending.twin) {
                        (Some(indexed), Some(twin)) if twin.score > indexed.score => Some(twin.clone()),
                        (None, Some(twin)) => Some(twin.clone()),
                        (indexed, _) => indexed,
                    }
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
                on_rejected: pending.on_rejected,
            })
            .collect();
        let (outcomes, _) = store.write_items(&items, now_ms()).map_err(|error| {
            // The whole chain: "database or disk is full" is what tells the user what to do.
            format!("cannot store the experience (nothing was stored): {:#}", anyhow::Error::new(error))
        })?;
        self.sync_vectors(store);
        // Submits committed without their vector are embedded before imports and reindexes.
        let deferred: Vec<String> = batch
            .iter()
            .zip(&outcomes)
            .filter(|(pending, outcome)| pending.vector.is_none() && !outcome.merged && !outcome.refused)
            .map(|(_, outcome)| outcome.id.to_string())
            .collect();
        if !deferred.is_empty() {
            self.semantic.embed_soon(&deferred);
        }
        self.wrote();
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
    pub(super) fn gate_all(&self, items: Vec<Result<ImportEntry, String>>) -> Vec<Result<GatedImport, String>> {
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
}

/// Those of `sources` (found by a submit's keys) whose words show no material difference from
/// `new`'s (`kb_core::sameness`): the only ones a merge may take it into, so the only ones its
/// vector is needed for. Issue 25: under 50 writers, one submit in eighteen had a BM25 twin and
/// waited for the model (submit p99 4.5 s with e5), though nearly all of them differed in a
/// value or an outcome word. With them, the first that has the submit's wording but another
/// outcome, negation or value (`kb_core::sameness::same_wording`): what the submit is told it
/// was kept apart from.
fn mergeable_twins(
    new: &NewExperience,
    sources: Vec<kb_store::EmbeddingSource>,
) -> (Vec<kb_store::EmbeddingSource>, Option<kb_store::KeptApart>) {
    if sources.is_empty() {
        return (Vec::new(), None);
    }
    let proposed = Said::of(&[new.task.as_str(), new.resource.as_str(), new.result.as_str()]);
    let mut mergeable = Vec::new();
    let mut apart = None;
    for source in sources {
        let stored = Said::of(&[source.task.as_str(), source.resource.as_str(), source.result.as_str()]);
        match stored.difference(&proposed) {
            None => mergeable.push(source),
            Some(difference) => {
                if apart.is_none() && stored.same_wording(&proposed) {
                    apart = Some(kb_store::KeptApart { similar_to: source.id, reason: difference.to_string() });
                }
            }
        }
    }
    (mergeable, apart)
}
