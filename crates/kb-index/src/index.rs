//! The experience index: opening (and recovering) it on disk, writing, committing and searching.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::ops::Bound;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use kb_core::Status;
use tantivy::collector::TopDocs;
use tantivy::directory::error::LockError;
use tantivy::directory::{Directory, INDEX_WRITER_LOCK, MmapDirectory};
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
    TermSetQuery,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{
    Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, TantivyError, Term,
};

use crate::analyzer::{ANALYZER_NAME, analyze, text_analyzer};
use crate::error::{Error, Result};
use crate::schema::{CommitPayload, Fields, SCHEMA_VERSION, build_schema};

/// Indexing threads. Tokenization (jieba) runs on them, so two use both cores of a small
/// machine while SQLite work waits on IO.
const WRITER_THREADS: usize = 2;

/// The writer's total memory arena, split between the threads. Tantivy needs at least 15 MB per
/// thread; a full arena is flushed as a segment, so this bounds RSS, not index size.
const WRITER_MEMORY_BYTES: usize = 2 * 20_000_000;

/// Queries with more distinct terms than this (a whole prompt used as a query, say) keep only the
/// rarest terms: they carry the BM25 weight, and hundreds of clauses would only cost latency.
const MAX_QUERY_TERMS: usize = 64;

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

/// A search: free text (never query syntax) plus the filters every hit must pass.
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// Searched as text: quotes, colons, `AND` and the like are just characters.
    pub query: &'a str,
    /// At most this many hits are returned.
    pub limit: usize,
    /// Only experiences rated at least this.
    pub min_score: u8,
    /// Only this agent's experiences, when given.
    pub agent_id: Option<&'a str>,
    /// Only experiences with this status.
    pub status: Status,
}

/// One search result: the experience id and its BM25 relevance (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub bm25: f32,
}

/// How [`ExperienceIndex::open`] found the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenOutcome {
    /// An index of the current schema version, reflecting the store up to `applied_seq`.
    Opened { applied_seq: u64 },
    /// There was no index; an empty one was created. The caller should index the whole store.
    Created,
    /// The index was unusable and was replaced by an empty one. The caller should index the
    /// whole store.
    Recreated { reason: String },
}

/// The BM25 index over experiences. `Send + Sync`: share it with an `Arc`.
///
/// Writes (`upsert`, `delete`, `clear`) are buffered by the single tantivy writer and become
/// visible to searches at the next `commit`, which also reloads the reader.
pub struct ExperienceIndex {
    fields: Fields,
    /// Tantivy allows one writer per index; the mutex also makes delete-then-add atomic.
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
    applied_seq: AtomicU64,
}

impl ExperienceIndex {
    /// Opens the index in `dir`, creating it if there is none.
    ///
    /// An index that cannot be used (unreadable or missing files, a corrupt segment, a meta file
    /// without our payload, another schema version) is wiped and created afresh; the outcome
    /// says so, and the caller rebuilds it from the store. Only files that look like tantivy's
    /// are removed, so a misconfigured path never costs a user their own files.
    ///
    /// An index locked by another live writer is an error, never wiped.
    pub fn open(dir: &Path) -> Result<(ExperienceIndex, OpenOutcome)> {
        fs::create_dir_all(dir).map_err(|source| Error::Io {
            action: "create the index directory",
            path: dir.to_owned(),
            source,
        })?;
        let create_error = |source: TantivyError| Error::Create {
            path: dir.to_owned(),
            source,
        };
        let directory = MmapDirectory::open(dir).map_err(|err| create_error(err.into()))?;

        // Hold the writer lock while deciding, so nothing is wiped under a live writer.
        let probe_lock = directory
            .acquire_lock(&INDEX_WRITER_LOCK)
            .map_err(|err| lock_error(dir, err))?;
        let listing = DirListing::read(dir)?;
        let (opened, outcome) = if listing.index_files.is_empty() && listing.other_files.is_empty() {
            (None, OpenOutcome::Created)
        } else {
            match open_existing(&directory, listing.has_meta) {
                Ok((index, reader, applied_seq)) => {
                    (Some((index, reader, applied_seq)), OpenOutcome::Opened { applied_seq })
                }
                Err(reason) => {
                    tracing::warn!(path = %dir.display(), %reason, "recreating the index");
                    wipe_index_files(dir, &listing)?;
                    (None, OpenOutcome::Recreated { reason })
                }
            }
        };
        drop(probe_lock);

        let this = match opened {
            Some((index, reader, applied_seq)) => {
                let writer = new_writer(&index, dir)?;
                ExperienceIndex::assemble(writer, reader, applied_seq)
            }
            None => {
                let (schema, _) = build_schema();
                let fresh_directory =
                    MmapDirectory::open(dir).map_err(|err| create_error(err.into()))?;
                let index = Index::create(fresh_directory, schema, Default::default())
                    .map_err(create_error)?;
                register_analyzer(&index);
                let writer = new_writer(&index, dir)?;
                let reader = new_reader(&index).map_err(create_error)?;
                let this = ExperienceIndex::assemble(writer, reader, 0);
                // Record the schema version right away, so a later open can trust this index.
                this.commit(0)?;
                this
            }
        };
        Ok((this, outcome))
    }

    /// An empty index in memory, for tests and quality measurements.
    pub fn open_in_ram() -> Result<ExperienceIndex> {
        let (schema, _) = build_schema();
        let index = Index::create_in_ram(schema);
        register_analyzer(&index);
        let writer = index
            .writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)
            .map_err(|source| Error::CreateInRam { source })?;
        let reader = new_reader(&index).map_err(|source| Error::CreateInRam { source })?;
        Ok(ExperienceIndex::assemble(writer, reader, 0))
    }

    fn assemble(
        writer: IndexWriter,
        reader: IndexReader,
        applied_seq: u64,
    ) -> ExperienceIndex {
        let (_, fields) = build_schema();
        ExperienceIndex {
            fields,
            writer: Mutex::new(writer),
            reader,
            applied_seq: AtomicU64::new(applied_seq),
        }
    }

    /// The store sequence number recorded by the last commit; 0 for a new index.
    pub fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    /// Adds the documents, replacing any with the same id. Visible after the next commit.
    ///
    /// When `docs` holds the same id more than once, the last one wins.
    pub fn upsert(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
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
            .map_err(|source| Error::Write {
                operation: "delete replaced documents",
                source,
            })?;
        for (doc_idx, doc) in docs.iter().enumerate() {
            if last_idx_by_id.get(doc.id) != Some(&doc_idx) {
                continue;
            }
            writer
                .add_document(self.to_document(doc))
                .map_err(|source| Error::Write {
                    operation: "add documents",
                    source,
                })?;
        }
        Ok(())
    }

    /// Removes the documents with these ids (unknown ids are ignored). Visible after the next
    /// commit.
    pub fn delete(&self, ids: &[&str]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let writer = self.lock_writer();
        writer
            .delete_query(Box::new(self.id_set_query(ids.iter().copied())))
            .map_err(|source| Error::Write {
                operation: "delete documents",
                source,
            })?;
        Ok(())
    }

    fn id_set_query<'b>(&self, ids: impl Iterator<Item = &'b str>) -> TermSetQuery {
        TermSetQuery::new(ids.map(|id| Term::from_field_text(self.fields.id, id)))
    }

    /// Removes every document, including uncommitted ones, for a full rebuild: `clear`, then
    /// `upsert` everything, then one `commit`. Searches see the old index until that commit.
    pub fn clear(&self) -> Result<()> {
        let writer = self.lock_writer();
        writer
            .delete_query(Box::new(AllQuery))
            .map_err(|source| Error::Write {
                operation: "clear all documents",
                source,
            })?;
        Ok(())
    }

    /// Makes the pending changes durable, recording `applied_seq` and the schema version in the
    /// commit, and reloads the reader so the next search sees them.
    pub fn commit(&self, applied_seq: u64) -> Result<()> {
        let payload = serde_json::to_string(&CommitPayload {
            schema_version: SCHEMA_VERSION,
            applied_seq,
        })
        .map_err(|source| Error::Payload { source })?;
        let commit_error = |source| Error::Commit {
            applied_seq,
            source,
        };
        // The writer stays locked until the reader is reloaded, so commits and the recorded
        // sequence numbers cannot interleave.
        let mut writer = self.lock_writer();
        let mut prepared = writer.prepare_commit().map_err(commit_error)?;
        prepared.set_payload(&payload);
        prepared.commit().map_err(commit_error)?;
        self.reader
            .reload()
            .map_err(|source| Error::Reload { source })?;
        self.applied_seq.store(applied_seq, Ordering::Release);
        Ok(())
    }

    /// Searches the committed documents; best first, at most `request.limit` hits.
    ///
    /// The query is analyzed like the documents and each term is looked up in every text field
    /// (any term may match); the status, rating and agent filters must all hold. A query
    /// without any word in it (empty, blank, only punctuation) has no hits.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<Vec<Hit>> {
        let search_error = |source| Error::Search {
            query: request.query.to_owned(),
            source,
        };
        if request.limit == 0 {
            return Ok(Vec::new());
        }
        let mut seen = HashSet::new();
        let mut terms: Vec<String> = analyze(request.query)
            .into_iter()
            .filter(|term| seen.insert(term.clone()))
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let text_fields = self.fields.text_fields_with_boosts();
        if terms.len() > MAX_QUERY_TERMS {
            let mut by_doc_freq = Vec::with_capacity(terms.len());
            for term in terms {
                let mut doc_freq = 0;
                for (field, _) in text_fields {
                    doc_freq += searcher
                        .doc_freq(&Term::from_field_text(field, &term))
                        .map_err(search_error)?;
                }
                by_doc_freq.push((doc_freq, term));
            }
            // A term in no document cannot match; keep the rarest of those that can.
            by_doc_freq.retain(|(doc_freq, _)| *doc_freq > 0);
            by_doc_freq.sort_by_key(|(doc_freq, _)| *doc_freq);
            by_doc_freq.truncate(MAX_QUERY_TERMS);
            terms = by_doc_freq.into_iter().map(|(_, term)| term).collect();
            if terms.is_empty() {
                return Ok(Vec::new());
            }
        }

        let mut text_clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &terms {
            for (field, boost) in text_fields {
                let term_query = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                text_clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(term_query), boost))));
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(text_clauses)))];
        // Filters score zero so the hit's figure is the text relevance alone.
        let filter = |query: Box<dyn Query>| -> (Occur, Box<dyn Query>) {
            (Occur::Must, Box::new(ConstScoreQuery::new(query, 0.0)))
        };
        clauses.push(filter(Box::new(TermQuery::new(
            Term::from_field_text(self.fields.status, request.status.as_str()),
            IndexRecordOption::Basic,
        ))));
        if request.min_score > 0 {
            clauses.push(filter(Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_u64(self.fields.score, u64::from(request.min_score))),
                Bound::Unbounded,
            ))));
        }
        if let Some(agent_id) = request.agent_id {
            clauses.push(filter(Box::new(TermQuery::new(
                Term::from_field_text(self.fields.agent_id, agent_id),
                IndexRecordOption::Basic,
            ))));
        }
        let query = BooleanQuery::new(clauses);

        // Never ask the collector for more than there are documents: the limit sizes its heap.
        let limit = request.limit.min(searcher.num_docs().max(1) as usize);
        let top_docs = searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(search_error)?;
        let mut hits = Vec::with_capacity(top_docs.len());
        for (bm25, address) in top_docs {
            let doc: TantivyDocument = searcher.doc(address).map_err(search_error)?;
            if let Some(id) = doc.get_first(self.fields.id).and_then(|value| value.as_str()) {
                hits.push(Hit {
                    id: id.to_owned(),
                    bm25,
                });
            }
        }
        Ok(hits)
    }

    /// The number of committed, searchable documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    fn to_document(&self, doc: &IndexDoc<'_>) -> TantivyDocument {
        let fields = &self.fields;
        let mut document = TantivyDocument::default();
        document.add_text(fields.id, doc.id);
        document.add_text(fields.task, doc.task);
        document.add_text(fields.resource, doc.resource);
        document.add_text(fields.result, doc.result);
        if let Some(content) = doc.content {
            document.add_text(fields.content, content);
        }
        document.add_u64(fields.score, u64::from(doc.score));
        document.add_text(fields.status, doc.status.as_str());
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

impl std::fmt::Debug for ExperienceIndex {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ExperienceIndex")
            .field("num_docs", &self.num_docs())
            .field("applied_seq", &self.applied_seq())
            .finish_non_exhaustive()
    }
}

fn register_analyzer(index: &Index) {
    index.tokenizers().register(ANALYZER_NAME, text_analyzer());
}

fn new_reader(index: &Index) -> tantivy::Result<IndexReader> {
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
}

fn new_writer(index: &Index, dir: &Path) -> Result<IndexWriter> {
    index
        .writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)
        .map_err(|source| match source {
            TantivyError::LockFailure(LockError::LockBusy, _) => Error::Locked {
                path: dir.to_owned(),
            },
            source => Error::Create {
                path: dir.to_owned(),
                source,
            },
        })
}

fn lock_error(dir: &Path, err: LockError) -> Error {
    match err {
        LockError::LockBusy => Error::Locked {
            path: dir.to_owned(),
        },
        LockError::IoError(source) => Error::Io {
            action: "lock the index directory",
            path: dir.to_owned(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
    }
}

/// Opens an existing index and checks everything that could make it unusable, returning why
/// it cannot be used otherwise. Corrupt files can make tantivy panic, so panics count as
/// "cannot be used" too.
fn open_existing(
    directory: &MmapDirectory,
    has_meta: bool,
) -> std::result::Result<(Index, IndexReader, u64), String> {
    if !has_meta {
        return Err("meta.json is missing".to_owned());
    }
    let attempt = catch_unwind(AssertUnwindSafe(|| try_open_existing(directory)));
    match attempt {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(format!("opening the index panicked: {message}"))
        }
    }
}

fn try_open_existing(
    directory: &MmapDirectory,
) -> std::result::Result<(Index, IndexReader, u64), String> {
    let index = Index::open(directory.clone()).map_err(|err| format!("cannot open: {err}"))?;
    let metas = index
        .load_metas()
        .map_err(|err| format!("cannot read meta.json: {err}"))?;
    let payload = metas
        .payload
        .as_deref()
        .ok_or_else(|| "the last commit has no payload".to_owned())?;
    let payload: CommitPayload = serde_json::from_str(payload)
        .map_err(|err| format!("unreadable commit payload {payload:?}: {err}"))?;
    if payload.schema_version != SCHEMA_VERSION {
        return Err(format!(
            "schema version {} on disk, {SCHEMA_VERSION} expected",
            payload.schema_version
        ));
    }
    let (expected_schema, _) = build_schema();
    if index.schema() != expected_schema {
        return Err("the schema on disk differs from this version's".to_owned());
    }
    // Every byte of the live segments is checked once here, so a damaged file is found now
    // rather than as a wrong answer (or a panic) in some later search.
    let damaged = index
        .validate_checksum()
        .map_err(|err| format!("cannot validate checksums: {err}"))?;
    if !damaged.is_empty() {
        return Err(format!("damaged files: {damaged:?}"));
    }
    // Opening the reader opens every segment, which finds missing files.
    register_analyzer(&index);
    let reader = new_reader(&index).map_err(|err| format!("cannot open a reader: {err}"))?;
    Ok((index, reader, payload.applied_seq))
}

/// What an index directory holds, split into the files tantivy could have written and the rest.
struct DirListing {
    has_meta: bool,
    /// Names tantivy uses: `meta.json`, `.managed.json`, segment files, its temporary files.
    index_files: Vec<PathBuf>,
    /// Everything else except the lock files.
    other_files: Vec<PathBuf>,
}

impl DirListing {
    fn read(dir: &Path) -> Result<DirListing> {
        let io_error = |source| Error::Io {
            action: "list the index directory",
            path: dir.to_owned(),
            source,
        };
        let mut listing = DirListing {
            has_meta: false,
            index_files: Vec::new(),
            other_files: Vec::new(),
        };
        for entry in fs::read_dir(dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".tantivy-writer.lock" || name == ".tantivy-meta.lock" {
                continue;
            }
            if name == "meta.json" {
                listing.has_meta = true;
            }
            if is_index_file_name(&name) && !entry.path().is_dir() {
                listing.index_files.push(entry.path());
            } else {
                listing.other_files.push(entry.path());
            }
        }
        Ok(listing)
    }
}

/// `meta.json`, `.managed.json`, `.tmpXXXXXX` (atomic writes), and segment files: 32 hex digits,
/// optionally a delete opstamp, then an extension (`<uuid>.idx`, `<uuid>.12.del`).
fn is_index_file_name(name: &str) -> bool {
    if name == "meta.json" || name == ".managed.json" || name.starts_with(".tmp") {
        return true;
    }
    let mut parts = name.split('.');
    let segment_id = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let is_hex_id = segment_id.len() == 32 && segment_id.bytes().all(|b| b.is_ascii_hexdigit());
    let valid_rest = match rest.as_slice() {
        [extension] => is_extension(extension),
        [opstamp, extension] => opstamp.bytes().all(|b| b.is_ascii_digit()) && is_extension(extension),
        _ => false,
    };
    is_hex_id && valid_rest
}

fn is_extension(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_lowercase())
}

fn wipe_index_files(dir: &Path, listing: &DirListing) -> Result<()> {
    for path in &listing.index_files {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::Io {
                    action: "remove the unusable index file",
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    if !listing.other_files.is_empty() {
        tracing::warn!(
            path = %dir.display(),
            files = ?listing.other_files,
            "left files in the index directory that tantivy did not write"
        );
    }
    Ok(())
}
