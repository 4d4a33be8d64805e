//! The BM25 index kept up to the store: preparation at start, catch-up after writes, durable
//! syncs, healing a failed index, rebuilding a damaged one, and `kb.reindex`.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kb_index::IndexDoc;
use kb_store::{IndexRow, Store};

use crate::semantic::Refresh;
use crate::stats::Cause;

use super::{Engine, EngineError, EngineResult, IndexState, panic_text};

/// A write's changes are staged (searchable at once from memory, see `kb_index`'s overlay) and
/// committed to the index's segments later, by [`Engine::commit_staged`]; but once this many
/// documents would be staged, they are committed at once (an import, say): the staged ones are
/// scored one by one at every search.
pub(super) const MAX_STAGED_DOCS: u64 = 1_000;

/// How the index takes a write's changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Apply {
    /// Staged, unless that would stage more than [`MAX_STAGED_DOCS`]: after each write.
    Stage,
    /// Committed to the segments: when preparing or healing the index.
    Commit,
}

/// How often the daemon commits staged changes (see [`Engine::commit_staged`]).
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(250);

/// The daemon commits staged changes before [`COMMIT_INTERVAL`] once this many documents are
/// staged (see [`Engine::commit_due`]). Issue 25: at 2,800–3,000 submits a second (BM25 only, 50
/// writers) about 750 documents were staged per interval, and a catch-up that found more than
/// [`MAX_STAGED_DOCS`] staged committed them on a submit's thread, holding up every submit
/// waiting for that catch-up: 9 such commits in one run of `kb-bench hostile`.
pub const COMMIT_EARLY_DOCS: u64 = MAX_STAGED_DOCS / 2;

/// Rows per batch when the index is rebuilt from the store.
pub(super) const REBUILD_BATCH: usize = 2_000;

/// Below this much free space, an index failure is put down to a full disk.
pub(super) const LOW_DISK_BYTES: u64 = 1024 * 1024;

/// Bytes an unprivileged process may still write on the filesystem holding `path`.
/// Whether `error` says the index's files are damaged, so that only a rebuild can help.
pub(super) fn is_damage(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| cause.downcast_ref::<kb_index::Error>().is_some_and(kb_index::Error::is_damage))
}

/// Joins a damaged index's cause and the last failure of its rebuild.
const REBUILD_FAILED: &str = "; the rebuild failed and is retried: ";

pub(super) fn free_bytes(path: &Path) -> Option<u64> {
    let stats = rustix::fs::statvfs(path).ok()?;
    Some(stats.f_bavail.saturating_mul(stats.f_frsize))
}

/// The outcome of a reindex.
#[derive(Debug, Clone)]
pub struct Reindexed {
    /// Documents in the rebuilt BM25 index.
    pub indexed: u64,
    /// What happened to the embeddings; `None` when they were not asked for.
    pub embeddings: Option<Refresh>,
}

pub(super) fn index_doc(row: &IndexRow) -> IndexDoc<'_> {
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

impl Engine {
    /// Brings the index up to the store: catches up when it is only behind, rebuilds it from
    /// scratch otherwise. Blocking; holds the writer so no write interleaves.
    pub fn prepare_index(&self) {
        let _one_at_a_time = self.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        self.prepare_index_alone();
    }

    /// [`Engine::prepare_index`], for a caller holding `rebuilding`.
    pub(super) fn prepare_index_alone(&self) {
        let reason = match &*self.index_state.borrow() {
            IndexState::Ready => return,
            IndexState::Rebuilding { reason } | IndexState::Failed { reason } | IndexState::Damaged { reason } => {
                reason.clone()
            }
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
                self.sync_index(&store, &HashSet::new(), Apply::Commit)?;
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
                self.index_ready();
            }
            Err(error) => {
                let message = format!("cannot rebuild the search index: {error:#}");
                tracing::error!("{message}");
                self.last_error.set(Cause::Index, message.clone());
                self.index_state.send_replace(IndexState::Failed { reason: message });
            }
        }
    }

    /// Applies the store's changes since the index last took any, staged or committed
    /// (see [`Apply`]). `new_ids` are experiences the last write created: they cannot be in the
    /// index yet, so they are added without the delete an update needs.
    /// The caller holds `index_sync`.
    pub(super) fn sync_index(&self, store: &Store, new_ids: &HashSet<String>, apply: Apply) -> anyhow::Result<()> {
        let from = self.index.staged_seq();
        let changes = store.changes_since(from)?;
        if changes.upserts.is_empty() && changes.deleted_ids.is_empty() && changes.seq == from {
            if apply == Apply::Commit && self.index.applied_seq() < from {
                self.index.commit(from)?;
            }
            return Ok(());
        }
        let deleted: Vec<&str> = changes.deleted_ids.iter().map(String::as_str).collect();
        let (created, updated): (Vec<IndexDoc<'_>>, Vec<IndexDoc<'_>>) =
            changes.upserts.iter().map(index_doc).partition(|doc| new_ids.contains(doc.id));
        let staging = (changes.upserts.len() + deleted.len()) as u64 + self.index.staged_docs();
        if apply == Apply::Stage && staging <= MAX_STAGED_DOCS {
            self.index.stage(changes.seq, &deleted, &created, &updated)?;
        } else {
            self.index.delete(&deleted)?;
            self.index.add_new(&created)?;
            self.index.upsert(&updated)?;
            self.index.commit(changes.seq)?;
        }
        if !changes.deleted_ids.is_empty() {
            self.unpruned_delete_seq.fetch_max(changes.seq, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Commits the staged changes to the index's segments, if any. The daemon's index service
    /// calls this every [`COMMIT_INTERVAL`]: a commit has a fixed cost (measured ~48 ms under
    /// 50 submitting clients) that was paid per group commit of submits before they were staged.
    /// A failure is handled as a failed catch-up: searches go on, the healer retries.
    pub fn commit_staged(&self) {
        // Not under `index_sync`: writes go on being staged while the commit runs.
        if !matches!(*self.index_state.borrow(), IndexState::Ready) {
            return;
        }
        match self.index.commit_staged().map_err(anyhow::Error::from) {
            Ok(()) => {}
            Err(error) if is_damage(&error) => {
                let _ = self.index_damaged(format!("the index could not commit staged changes: {error:#}"));
            }
            Err(error) => self.index_failed(format!("stored, but the search index could not be updated: {error:#}")),
        }
    }

    /// Whether the staged changes are due to be committed, `since_last` after the last commit:
    /// every [`COMMIT_INTERVAL`], and sooner once [`COMMIT_EARLY_DOCS`] documents are staged.
    pub fn commit_due(&self, since_last: Duration) -> bool {
        since_last >= COMMIT_INTERVAL || self.index.staged_docs() >= COMMIT_EARLY_DOCS
    }

    /// Makes the index's commits durable (they are visible at once but synced here, in one
    /// batch: see `kb_index`'s directory), then drops the tombstones of the deletes that are now
    /// on disk. The daemon calls this every few seconds and at shutdown; it costs nothing when
    /// nothing was written. A failure is logged and retried next time: the store holds
    /// everything the index would need to catch up.
    pub fn persist_index(&self) {
        self.commit_staged();
        let unpruned = self.unpruned_delete_seq.load(Ordering::Acquire);
        if !self.index.has_unsynced_commits() && unpruned == 0 {
            return;
        }
        let durable = match self.index.make_durable() {
            Ok(durable) => durable,
            Err(error) => {
                let message = format!("cannot sync the search index to disk (retrying): {error:#}");
                tracing::warn!("{message}");
                self.last_error.set(Cause::IndexSync, message);
                return;
            }
        };
        self.last_error.clear(Cause::IndexSync);
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
    pub fn after_write(&self, store: &mut Store, new_ids: &HashSet<String>) {
        self.sync_vectors(store);
        self.wrote();
        let _index_turn = self.lock_index_sync();
        self.catch_up_index(store, new_ids);
    }

    /// Brings the vector index up to the store; under the writer lock, so it reads every
    /// tombstone before `persist_index` may prune it.
    pub(super) fn sync_vectors(&self, store: &mut Store) {
        match self.semantic.sync(store) {
            Ok(_) => self.last_error.clear(Cause::Vectors),
            Err(error) => {
                let message = format!("stored, but the vector index could not be updated: {error:#}");
                tracing::error!("{message}");
                self.last_error.set(Cause::Vectors, message);
            }
        }
    }

    /// Brings the BM25 index up to the store after a write; the caller holds `index_sync`.
    /// `store` may be a reader: it sees every committed write.
    pub(super) fn catch_up_index(&self, store: &Store, new_ids: &HashSet<String>) {
        if !matches!(*self.index_state.borrow(), IndexState::Ready) {
            // A rebuild in progress will pick the write up; a failed index is retried below.
            if !matches!(*self.index_state.borrow(), IndexState::Failed { .. }) {
                return;
            }
        }
        let was_failed = matches!(*self.index_state.borrow(), IndexState::Failed { .. });
        // A failed index commits at once: it is trusted again only once a commit went through,
        // and staging alone would say it healed while its commits still fail.
        let apply = if was_failed { Apply::Commit } else { Apply::Stage };
        match self.sync_index(store, new_ids, apply) {
            Ok(()) if was_failed => {
                // Caught up after a failure: trusted only once the document count agrees; if it
                // does not, the healer rebuilds the index from the store.
                match store.counts() {
                    Ok(counts) if counts.active == self.index.num_docs() => {
                        tracing::info!("the search index caught up with the store");
                        self.index_ready();
                    }
                    _ => {}
                }
            }
            Ok(()) => {}
            Err(error) if is_damage(&error) => {
                let _ = self.index_damaged(format!("stored, but the index could not take it: {error:#}"));
            }
            Err(error) => self.index_failed(format!("stored, but the search index could not be updated: {error:#}")),
        }
    }

    /// Records that the index could not take the store's latest changes: its writer is reset to
    /// the last good commit (nothing half-applied survives), searches go on with a note, and
    /// `heal_index` retries.
    pub(super) fn index_failed(&self, message: String) {
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
        self.last_error.set(Cause::Index, message.clone());
        self.index_state.send_replace(IndexState::Failed { reason: message });
    }

    /// Retries a failed index: applies the store's changes since the index's last good commit,
    /// checks that it holds as many documents as there are active experiences (else rebuilds
    /// it from the store), and marks it ready. The daemon calls this every few seconds; it does
    /// nothing while the index is ready. Returns whether the index is ready afterwards.
    pub fn heal_index(&self) -> bool {
        let damaged = match &*self.index_state.borrow() {
            IndexState::Ready => return true,
            IndexState::Rebuilding { .. } => return false,
            IndexState::Failed { .. } => None,
            IndexState::Damaged { reason } => Some(reason.clone()),
        };
        let Ok(_one_at_a_time) = self.rebuilding.try_lock() else {
            return false;
        };
        if let Some(reason) = damaged {
            return self.rebuild_damaged(reason);
        }
        let store = self.lock_writer();
        let index_turn = self.lock_index_sync();
        // From the last good commit, on a writer that holds nothing half-applied.
        let healed = self
            .index
            .reset_writer()
            .map_err(anyhow::Error::from)
            .and_then(|()| self.sync_index(&store, &HashSet::new(), Apply::Commit))
            .and_then(|()| {
                let active = store.counts()?.active;
                Ok((self.index.num_docs(), active))
            });
        match healed {
            Ok((documents, active)) if documents == active => {
                tracing::info!(documents, "the search index caught up with the store");
                self.index_ready();
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
                if is_damage(&error) {
                    drop(index_turn);
                    drop(store);
                    return self.rebuild_damaged(format!("the search index is damaged ({error:#})"));
                }
                self.index_failed(format!("the search index is behind the store and cannot catch up yet: {error:#}"));
                false
            }
        }
    }

    /// Rebuilds a damaged index from the store, in full (its segments cannot be trusted, so
    /// nothing is caught up from them). The caller holds `rebuilding`. Reading or clearing the
    /// damaged files may panic as reading them did: then the index stays damaged and the next
    /// round tries again. Returns whether the index is ready afterwards.
    pub(super) fn rebuild_damaged(&self, reason: String) -> bool {
        tracing::warn!("{reason}; rebuilding it from the store");
        self.index_state.send_replace(IndexState::Rebuilding { reason: reason.clone() });
        let rebuilt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.rebuild_from_scratch()));
        let failure = match rebuilt {
            Ok(Ok(())) => return matches!(*self.index_state.borrow(), IndexState::Ready),
            Ok(Err(error)) => format!("{error:#}"),
            Err(panic) => format!("it panicked: {}", panic_text(panic.as_ref())),
        };
        // The first cause stays the reason; the latest failure of the rebuild follows it once.
        let cause = reason.split(REBUILD_FAILED).next().unwrap_or(&reason);
        let reason = format!("{cause}{REBUILD_FAILED}{failure}");
        tracing::error!("{reason}");
        self.last_error.set(Cause::Index, reason.clone());
        self.index_state.send_replace(IndexState::Damaged { reason });
        false
    }

    /// The index answers again: its state is ready and its error is gone.
    pub(super) fn index_ready(&self) {
        self.index_state.send_replace(IndexState::Ready);
        self.last_error.clear(Cause::Index);
    }

    pub(super) fn lock_index_sync(&self) -> MutexGuard<'_, ()> {
        self.index_sync.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs a read of the BM25 index. Tantivy reads its files through a map, so damaged files
    /// show up as an error or a panic here: either marks the index damaged (the index service
    /// rebuilds it from the store) and the search is answered with an error saying so.
    pub(super) fn read_index<T>(&self, read: impl FnOnce() -> kb_index::Result<T>) -> EngineResult<T> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.index_damaged(format!("{error:#}"))),
            Err(panic) => Err(self.index_damaged(format!("reading it panicked: {}", panic_text(panic.as_ref())))),
        }
    }

    /// Records that the index's files are damaged, for the index service to rebuild.
    pub(super) fn index_damaged(&self, what: String) -> EngineError {
        let reason = format!("the search index is damaged ({what})");
        let newly = self.index_state.send_if_modified(|state| match state {
            IndexState::Damaged { .. } | IndexState::Rebuilding { .. } => false,
            _ => {
                *state = IndexState::Damaged { reason: reason.clone() };
                true
            }
        });
        if newly {
            tracing::error!("{reason}; rebuilding it from the store");
            self.last_error.set(Cause::Index, reason.clone());
        }
        EngineError::Unavailable(format!("{reason}; it is being rebuilt from the store, try again shortly"))
    }

    /// Waits while the index is being rebuilt. `Some(note)` when it is ready to answer but
    /// behind the store (a failed index answers from its last good commit).
    pub(super) async fn wait_for_index(&self) -> EngineResult<Option<String>> {
        let mut state = self.index_state.subscribe();
        let waited = tokio::time::timeout(
            Duration::from_secs(30),
            state.wait_for(|state| !matches!(state, IndexState::Rebuilding { .. })),
        )
        .await;
        match waited {
            Ok(Ok(state)) => match &*state {
                IndexState::Damaged { reason } => Err(EngineError::Unavailable(format!(
                    "{reason}; it is being rebuilt from the store, try again shortly"
                ))),
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
    /// Empties the index (uncommitted changes rolled back, segments dropped unread) and commits
    /// it at change 0, so that `prepare_index_alone` rebuilds it in full from the store rather
    /// than catching up. The caller holds `rebuilding`.
    fn rebuild_from_scratch(&self) -> anyhow::Result<()> {
        {
            let _store = self.lock_writer();
            let _index_turn = self.lock_index_sync();
            self.index.clear().context("cannot clear the index")?;
            self.index.commit(0).context("cannot clear the index")?;
        }
        self.prepare_index_alone();
        Ok(())
    }

    pub(super) fn rebuild_index(&self) -> EngineResult<u64> {
        let _one_at_a_time = self.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        self.index_state.send_replace(IndexState::Rebuilding { reason: "reindex requested".to_owned() });
        self.rebuild_from_scratch()?;
        match &*self.index_state.borrow() {
            IndexState::Ready => Ok(self.index.num_docs()),
            IndexState::Failed { reason } | IndexState::Rebuilding { reason } | IndexState::Damaged { reason } => {
                Err(EngineError::Internal(anyhow::anyhow!("{reason}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::engine::ImportEntry;

    /// Tantivy's threads are the writes' background work: started with the engine's index, and
    /// anew by a commit (indexing), a rollback and the writer made after a failed commit, they run
    /// at the lanes' priority, below the searches (issue 25), whichever thread asked for them;
    /// the thread that opened the engine keeps its own.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_index_writers_threads_run_below_the_searches() {
        use crate::lane::{LANE_NICE, nice_of, own_nice, set_own_nice};
        // Names as the kernel keeps them (15 bytes): indexing, segment updating, merging, storing
        // documents, watching `meta.json` and running what a change of it calls.
        const TANTIVY_THREADS: &[&str] = &[
            "thrd-tantivy-in",
            "segment_updater",
            "merge_thread_",
            "docstore-compre",
            "thread-tantivy-",
            "watch-callbacks",
        ];
        // This test's thread runs just above the lanes' priority (unless the process is nicer
        // still, when nothing can be told apart): a thread that it started without lowering the
        // priority is then told from one lowered, and from the threads of other tests of this
        // process (indexes opened without an engine run at the process's priority).
        let caller = own_nice().max(LANE_NICE - 1);
        set_own_nice(caller).unwrap();
        let expected = caller.max(LANE_NICE);
        // Tantivy's threads of this process: id, name and nice value.
        let tantivy_threads = || -> Vec<(i32, String, i32)> {
            let tasks = std::fs::read_dir("/proc/self/task").unwrap().flatten();
            tasks
                .filter_map(|task| {
                    let tid = task.file_name().to_str()?.parse().ok()?;
                    let name = std::fs::read_to_string(task.path().join("comm")).ok()?.trim_end().to_owned();
                    let nice = nice_of(tid)?;
                    TANTIVY_THREADS.iter().any(|prefix| name.starts_with(prefix)).then_some((tid, name, nice))
                })
                .collect()
        };
        // After each step: none of tantivy's threads runs at this thread's priority, and the step
        // started some (named `started`) at the lanes'.
        let mut seen: HashSet<i32> = tantivy_threads().into_iter().map(|(tid, _, _)| tid).collect();
        // Tantivy starts some of them a moment after the call that asked for them returns (a
        // rollback's `segment_updater`): they are waited for, up to five seconds.
        let mut check = |step: &str, started: &str| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                let threads = tantivy_threads();
                if caller < expected {
                    let at_callers: Vec<_> = threads.iter().filter(|(_, _, nice)| *nice == caller).collect();
                    assert!(at_callers.is_empty(), "{step}: {at_callers:?} at this thread's nice {caller}");
                }
                let new: Vec<_> = threads.iter().filter(|(tid, _, _)| !seen.contains(tid)).collect();
                if new.iter().any(|(_, name, nice)| name.starts_with(started) && *nice == expected) {
                    seen.extend(threads.iter().map(|(tid, _, _)| *tid));
                    return;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{step}: no new {started} thread at nice {expected} among {new:?}"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        };
        let home = tempfile::tempdir().unwrap();
        let paths = kb_proto::Paths::resolve(Some(home.path().to_path_buf()), None);
        let index_dir = paths.index.clone();
        let engine = Engine::open(paths, EngineConfig::default()).unwrap();
        assert_eq!(own_nice(), caller, "opening the engine changed its caller's priority");
        check("open", "segment_updater");
        let import = |task: &str| {
            let new = kb_core::NewExperience {
                task: task.to_owned(),
                resource: "vitest".to_owned(),
                result: "retry once".to_owned(),
                ..kb_core::NewExperience::default()
            };
            engine.import(vec![Ok(ImportEntry { new, held: None, variants: Vec::new() })]).unwrap();
        };
        import("flaky vitest run on the build machine");
        engine.commit_staged();
        check("a commit", "thrd-tantivy-in");
        engine.index.reset_writer().unwrap();
        check("a rollback", "segment_updater");
        // A commit fails (the index's directory is gone), and neither a rollback nor a new writer
        // can start; once the directory is back, the healer makes a new writer.
        let away = home.path().join("index-away");
        std::fs::rename(&index_dir, &away).unwrap();
        import("flaky vitest suite on a laptop");
        engine.commit_staged();
        assert!(matches!(engine.index_state(), IndexState::Failed { .. }), "{:?}", engine.index_state());
        std::fs::rename(&away, &index_dir).unwrap();
        assert!(engine.heal_index(), "{:?}", engine.index_state());
        assert_eq!(engine.index.num_docs(), 2);
        check("a new writer after a failed commit", "segment_updater");
    }

    /// The index service commits early once many documents are staged (issue 25: at 3,000
    /// submits a second the 250 ms round let more than `MAX_STAGED_DOCS` pile up, and a submit's
    /// catch-up committed them on its own thread).
    #[test]
    fn staged_changes_are_due_for_a_commit_early_once_many_are_staged() {
        let home = tempfile::tempdir().unwrap();
        let paths = kb_proto::Paths::resolve(Some(home.path().to_path_buf()), None);
        let engine = Engine::open(paths, EngineConfig::default()).unwrap();
        engine.prepare_index();
        assert!(!engine.commit_due(Duration::ZERO), "nothing is staged");
        assert!(engine.commit_due(COMMIT_INTERVAL), "the round is due whatever is staged");
        let import = |from: u64, to: u64| {
            let items = (from..to)
                .map(|n| {
                    let new = kb_core::NewExperience {
                        task: format!("staged experience number {n}"),
                        resource: format!("tool-{n}"),
                        result: format!("result {n}"),
                        ..kb_core::NewExperience::default()
                    };
                    Ok(ImportEntry { new, held: None, variants: Vec::new() })
                })
                .collect();
            assert_eq!(engine.import(items).unwrap().imported as u64, to - from);
        };
        import(0, COMMIT_EARLY_DOCS - 1);
        assert_eq!(engine.index.staged_docs(), COMMIT_EARLY_DOCS - 1, "an import this small is staged");
        assert!(!engine.commit_due(Duration::ZERO));
        import(COMMIT_EARLY_DOCS - 1, COMMIT_EARLY_DOCS);
        assert!(engine.commit_due(Duration::ZERO), "{} staged", engine.index.staged_docs());
        engine.commit_staged();
        assert!(!engine.commit_due(Duration::ZERO), "committed");
    }
}
