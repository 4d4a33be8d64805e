//! The writing side of the index: tantivy's single writer, the documents it adds and deletes,
//! commits that record the store sequence number, and starting afresh after a failed commit.

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
}

impl Writer {
    /// The writer of `index`, kept in `directory` at `dir` and reflecting the store up to
    /// `applied_seq`; [`Error::Locked`] when another live writer has it.
    pub(super) fn open(
        index: &Index,
        dir: &Path,
        directory: DeferredSyncDirectory,
        applied_seq: u64,
    ) -> Result<Writer> {
        let writer =
            index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES).map_err(|source| match source {
                TantivyError::LockFailure(LockError::LockBusy, _) => Error::Locked { path: dir.to_owned() },
                source => Error::Create { path: dir.to_owned(), source },
            })?;
        set_merge_policy(&writer);
        Ok(Writer::assemble(index, Some(directory), writer, applied_seq))
    }

    /// The writer of an index in memory.
    pub(super) fn in_ram(index: &Index) -> Result<Writer> {
        let writer = index
            .writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)
            .map_err(|source| Error::CreateInRam { source })?;
        Ok(Writer::assemble(index, None, writer, 0))
    }

    fn assemble(
        index: &Index,
        directory: Option<DeferredSyncDirectory>,
        writer: IndexWriter,
        applied_seq: u64,
    ) -> Writer {
        let (_, fields) = build_schema();
        Writer {
            fields,
            index: index.clone(),
            directory,
            writer_broken: AtomicBool::new(false),
            writer: Mutex::new(writer),
            applied_seq: AtomicU64::new(applied_seq),
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
            match writer.rollback() {
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
        let fresh = self
            .index
            .writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)
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
        let committed = (|| {
            let mut prepared = writer.prepare_commit().map_err(commit_error)?;
            prepared.set_payload(&payload);
            prepared.commit().map_err(commit_error)
        })();
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

/// Every commit (each submit, each import batch) makes new segments, and a query pays a term
/// lookup per term, field and segment: merging sooner than tantivy's default of 8 segments per
/// level keeps the count, and so the per-query cost, low.
fn set_merge_policy(writer: &IndexWriter) {
    let mut merge_policy = LogMergePolicy::default();
    merge_policy.set_min_num_segments(MERGE_MIN_SEGMENTS);
    writer.set_merge_policy(Box::new(merge_policy));
}
