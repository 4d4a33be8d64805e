//! The writing side of the index: tantivy's single writer, the documents it adds and deletes,
//! commits that record the store sequence number, and starting afresh after a failed commit;
//! every start of tantivy's threads goes through the index's [`StartThreads`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use kb_core::Status;
use tantivy::directory::error::LockError;
use tantivy::indexer::LogMergePolicy;
use tantivy::query::TermSetQuery;
use tantivy::{Index, IndexWriter, TantivyDocument, TantivyError, Term};

use crate::directory::DeferredSyncDirectory;
use crate::error::{Error, Result};
use crate::schema::{CommitPayload, Fields, SCHEMA_VERSION, build_schema};

/// Indexing threads. Tokenization (jieba) runs on them, so two use both cores of a small
/// machine while SQLite work waits on IO.
const WRITER_THREADS: usize = 2;

/// The writer's total memory arena, split between the threads. Tantivy needs at least 15 MB per
/// thread; a full arena is flushed as a segment, so this bounds RSS, not index size.
const WRITER_MEMORY_BYTES: usize = 2 * 20_000_000;

/// Segments of a size level merged together (tantivy's default is 8).
const MERGE_MIN_SEGMENTS: usize = 4;

/// How the index starts tantivy's threads (indexing, segment updating, merging, watching
/// `meta.json`), given at open ([`crate::ExperienceIndex::open_with`]). It is handed what starts
/// some of them and runs it, once, before it returns, on the thread they should inherit from: a
/// thread takes its OS priority from the thread that starts it, and tantivy has no hook of its
/// own. Tantivy starts them when a writer is made (at open, by a rollback, anew after a failed
/// one), at every commit (new indexing threads) and when the index first watches `meta.json`.
pub type StartThreads = fn(&mut (dyn FnMut() + Send));

/// Starts tantivy's threads on the calling thread: [`StartThreads`] when none is given.
pub(super) fn on_the_calling_thread(start: &mut (dyn FnMut() + Send)) {
    start();
}

/// Runs `start`, which starts some of tantivy's threads, through `start_threads`, and returns its
/// answer; when `start_threads` did not run it, runs it here.
pub(super) fn starting_threads<T: Send>(start_threads: StartThreads, start: impl FnOnce() -> T + Send) -> T {
    let mut start = Some(start);
    let mut answer = None;
    start_threads(&mut || answer = start.take().map(|start| start()));
    match answer {
        Some(answer) => answer,
        None => start.take().expect("a start that did not run is still here")(),
    }
}

/// One experience as the index sees it: the searchable text and the filterable attributes.
#[derive(Debug, Clone, Copy)]
pub struct IndexDoc<'a> {
    pub id: &'a str,
    pub task: &'a str,
    pub resource: &'a str,
    pub result: &'a str,
    pub content: Option<&'a str>,
    /// The rating 1–5.
    pub score: u8,
    pub status: Status,
    pub agent_id: Option<&'a str>,
}

/// Tantivy's writer with the sequence number its last commit recorded.
pub(super) struct Writer {
    fields: Fields,
    /// Tantivy allows one writer per index; the mutex also makes delete-then-add atomic.
    writer: Mutex<IndexWriter>,
    /// The index, to start a new writer when the old one cannot be rolled back.
    index: Index,
    /// On disk: commits are synced by [`Writer::make_durable`], not one by one.
    directory: Option<DeferredSyncDirectory>,
    /// Set when a rollback failed: tantivy's writer then holds no directory lock and may not
    /// be rolled back again (it panics), so the next reset starts a new writer instead.
    writer_broken: AtomicBool,
    applied_seq: AtomicU64,
    /// How tantivy's threads are started.
    start_threads: StartThreads,
}

impl Writer {
    /// The writer of `index`, kept in `directory` at `dir` and reflecting the store up to
    /// `applied_seq`, its threads started by `start_threads`; [`Error::Locked`] when another
    /// live writer has it.
    pub(super) fn open(
        index: &Index,
        dir: &Path,
        directory: DeferredSyncDirectory,
        applied_seq: u64,
        start_threads: StartThreads,
    ) -> Result<Writer> {
        let writer = new_writer(index, start_threads).map_err(|source| match source {
            TantivyError::LockFailure(LockError::LockBusy, _) => Error::Locked { path: dir.to_owned() },
            source => Error::Create { path: dir.to_owned(), source },
        })?;
        set_merge_policy(&writer);
        Ok(Writer::assemble(index, Some(directory), writer, applied_seq, start_threads))
    }

    /// The writer of an index in memory.
    pub(super) fn in_ram(index: &Index) -> Result<Writer> {
        let writer = new_writer(index, on_the_calling_thread).map_err(|source| Error::CreateInRam { source })?;
        Ok(Writer::assemble(index, None, writer, 0, on_the_calling_thread))
    }

    fn assemble(
        index: &Index,
        directory: Option<DeferredSyncDirectory>,
        writer: IndexWriter,
        applied_seq: u64,
        start_threads: StartThreads,
    ) -> Writer {
        let (_, fields) = build_schema();
        Writer {
            fields,
            index: index.clone(),
            directory,
            writer_broken: AtomicBool::new(false),
            writer: Mutex::new(writer),
            applied_seq: AtomicU64::new(applied_seq),
            start_threads,
        }
    }

    /// Discards every change since the last successful commit and starts a fresh writer (see
    /// `ExperienceIndex::reset_writer` for why).
    pub(super) fn reset(&self) -> Result<()> {
        let mut writer = self.lock_writer();
        self.reset_locked(&mut writer)
    }

    fn reset_locked(&self, writer: &mut IndexWriter) -> Result<()> {
        if !self.writer_broken.load(Ordering::Acquire) {
            // A rollback starts a new writer in place of this one.
            match starting_threads(self.start_threads, || writer.rollback()) {
                Ok(_) => {
                    set_merge_policy(writer);
                    return Ok(());
                }
                // The rollback gave up the directory lock and could not start its new writer
                // (no descriptors, say): this writer is done for.
                Err(error) => {
                    tracing::warn!("cannot roll the index writer back: {error}");
                    self.writer_broken.store(true, Ordering::Release);
                }
            }
        }
        let fresh = new_writer(&self.index, self.start_threads)
            .map_err(|source| Error::Write { operation: "start a new writer", source })?;
        set_merge_policy(&fresh);
        *writer = fresh;
        self.writer_broken.store(false, Ordering::Release);
        Ok(())
    }

    /// Syncs every commit so far to disk and returns the store sequence number it reflects,
    /// which a power loss can no longer take back. For an index in memory: its `applied_seq`.
    pub(super) fn make_durable(&self) -> Result<u64> {
        let applied_seq = self.applied_seq();
        if let Some(directory) = &self.directory {
            directory.sync().map_err(|source| Error::Sync { source })?;
        }
        Ok(applied_seq)
    }

    /// Whether a commit since the last [`Writer::make_durable`] is not on disk yet.
    pub(super) fn has_unsynced_commits(&self) -> bool {
        self.directory.as_ref().is_some_and(DeferredSyncDirectory::has_unsynced)
    }

    /// The store sequence number recorded by the last commit; 0 for a new index.
    pub(super) fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    /// Adds documents known not to be in the index, skipping inactive ones.
    pub(super) fn add_new(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
        let writer = self.lock_writer();
        for doc in docs.iter().filter(|doc| doc.status == Status::Active) {
            writer
                .add_document(self.to_document(doc))
                .map_err(|source| Error::Write { operation: "add documents", source })?;
        }
        Ok(())
    }

    /// Adds the documents, replacing any with the same id (the last one wins within `docs`);
    /// an inactive one is removed.
    pub(super) fn upsert(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let mut last_idx_by_id: HashMap<&str, usize> = HashMap::with_capacity(docs.len());
        for (doc_idx, doc) in docs.iter().enumerate() {
            last_idx_by_id.insert(doc.id, doc_idx);
        }
        let writer = self.lock_writer();
        // One delete operation for the whole batch, ordered before the adds, so it removes the
        // previous versions but not these. (Tantivy's `delete_term` would queue one operation
        // of about 1 KB per document until the commit.)
        writer
            .delete_query(Box::new(self.id_set_query(last_idx_by_id.keys().copied())))
            .map_err(|source| Error::Write { operation: "delete replaced documents", source })?;
        for (doc_idx, doc) in docs.iter().enumerate() {
            // The index holds active experiences only: a pending or rejected one is removed.
            if last_idx_by_id.get(doc.id) != Some(&doc_idx) || doc.status != Status::Active {
                continue;
            }
            writer
                .add_document(self.to_document(doc))
                .map_err(|source| Error::Write { operation: "add documents", source })?;
        }
        Ok(())
    }

    /// Removes the documents with these ids (unknown ids are ignored).
    pub(super) fn delete(&self, ids: &[&str]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let writer = self.lock_writer();
        writer
            .delete_query(Box::new(self.id_set_query(ids.iter().copied())))
            .map_err(|source| Error::Write { operation: "delete documents", source })?;
        Ok(())
    }

    fn id_set_query<'b>(&self, ids: impl Iterator<Item = &'b str>) -> TermSetQuery {
        TermSetQuery::new(ids.map(|id| Term::from_field_text(self.fields.id, id)))
    }

    /// Removes every document, including uncommitted ones. The segments are dropped whole,
    /// without reading them (a delete query would open each segment, and a damaged one cannot
    /// be opened: the rebuild of a damaged index starts here).
    pub(super) fn clear(&self) -> Result<()> {
        let mut writer = self.lock_writer();
        // Uncommitted documents may still be in the indexing threads, which dropping the
        // segments would not reach: they go with a rollback to the last commit first.
        self.reset_locked(&mut writer)?;
        writer.delete_all_documents().map_err(|source| Error::Write { operation: "clear all documents", source })?;
        Ok(())
    }

    /// Commits the pending changes, recording `applied_seq` and the schema version, then runs
    /// `reload_reader` and records `applied_seq` as applied, all with the writer still locked.
    pub(super) fn commit(&self, applied_seq: u64, reload_reader: impl FnOnce() -> Result<()>) -> Result<()> {
        let payload = serde_json::to_string(&CommitPayload { schema_version: SCHEMA_VERSION, applied_seq })
            .map_err(|source| Error::Payload { source })?;
        let commit_error = |source| Error::Commit { applied_seq, source };
        // The writer stays locked until the reader is reloaded, so commits and the recorded
        // sequence numbers cannot interleave.
        let mut writer = self.lock_writer();
        let writing: &mut IndexWriter = &mut writer;
        // Preparing a commit ends the indexing threads and starts new ones.
        let committed = starting_threads(self.start_threads, || {
            let mut prepared = writing.prepare_commit().map_err(commit_error)?;
            prepared.set_payload(&payload);
            prepared.commit().map_err(commit_error)
        });
        if let Err(error) = committed {
            // Never trust a writer whose commit failed (see `reset_writer`).
            if let Err(reset) = self.reset_locked(&mut writer) {
                tracing::warn!("cannot reset the index writer after a failed commit: {reset}");
            }
            return Err(error);
        }
        reload_reader()?;
        self.applied_seq.store(applied_seq, Ordering::Release);
        Ok(())
    }

    /// Turns background merges off, for tests that compare statistics across a commit (a
    /// merge drops replaced documents, which BM25's statistics count until then).
    #[cfg(test)]
    pub(super) fn without_merges(&self) {
        self.lock_writer().set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    }

    fn to_document(&self, doc: &IndexDoc<'_>) -> TantivyDocument {
        let fields = &self.fields;
        let mut document = TantivyDocument::default();
        document.add_text(fields.id, doc.id);
        document.add_text(fields.text, doc.task);
        document.add_text(fields.text, doc.resource);
        document.add_text(fields.text, doc.result);
        if let Some(content) = doc.content {
            document.add_text(fields.content, content);
        }
        document.add_u64(fields.score, u64::from(doc.score));
        if let Some(agent_id) = doc.agent_id {
            document.add_text(fields.agent_id, agent_id);
        }
        document
    }

    /// A panic elsewhere while holding the lock leaves the writer itself consistent (tantivy
    /// reports its own failures as errors), so a poisoned lock is simply taken over.
    fn lock_writer(&self) -> MutexGuard<'_, IndexWriter> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A new writer of `index` (the only one: it takes the directory's lock), its threads started by
/// `start_threads`.
fn new_writer(index: &Index, start_threads: StartThreads) -> tantivy::Result<IndexWriter> {
    starting_threads(start_threads, || index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES))
}

/// Every commit (each submit, each import batch) makes new segments, and a query pays a term
/// lookup per term, field and segment: merging sooner than tantivy's default of 8 segments per
/// level keeps the count, and so the per-query cost, low.
fn set_merge_policy(writer: &IndexWriter) {
    let mut merge_policy = LogMergePolicy::default();
    merge_policy.set_min_num_segments(MERGE_MIN_SEGMENTS);
    writer.set_merge_policy(Box::new(merge_policy));
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use kb_core::Status;

    use crate::{ExperienceIndex, IndexDoc};

    static STARTS: AtomicUsize = AtomicUsize::new(0);

    fn counted(start: &mut (dyn FnMut() + Send)) {
        STARTS.fetch_add(1, Ordering::SeqCst);
        start();
    }

    fn doc(id: &str) -> IndexDoc<'_> {
        IndexDoc {
            id,
            task: "flaky vitest run",
            resource: "vitest",
            result: "retry once",
            content: None,
            score: 3,
            status: Status::Active,
            agent_id: None,
        }
    }

    /// Every start of tantivy's threads goes through the index's `StartThreads` (the daemon's
    /// runs them below its searches): at open, at each commit, by a rollback, and by the new
    /// writer made once a failed commit left one that cannot roll back.
    #[test]
    fn every_start_of_tantivys_threads_goes_through_the_index() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("index");
        let starts = || STARTS.load(Ordering::SeqCst);
        let (index, _) = ExperienceIndex::open_with(&path, counted).expect("open");
        assert_eq!(starts(), 3, "the writer, the watch of meta.json and the first commit");
        index.upsert(&[doc("first")]).expect("upsert");
        index.commit(1).expect("commit");
        assert_eq!(starts(), 4, "a commit");
        index.reset_writer().expect("reset");
        assert_eq!(starts(), 5, "a rollback");
        // With its directory gone, a commit fails, and so do the rollback and the new writer
        // after it.
        let away = dir.path().join("away");
        std::fs::rename(&path, &away).expect("move the index away");
        index.upsert(&[doc("second")]).expect("upsert");
        assert!(index.commit(2).is_err(), "a commit without a directory");
        assert_eq!(starts(), 8, "the commit, a rollback and a new writer");
        std::fs::rename(&away, &path).expect("move the index back");
        index.reset_writer().expect("reset");
        assert_eq!(starts(), 9, "a new writer");
        index.upsert(&[doc("second")]).expect("upsert");
        index.commit(2).expect("commit");
        assert_eq!(starts(), 10, "a commit");
        assert_eq!(index.num_docs(), 2);
    }
}
