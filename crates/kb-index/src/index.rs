//! The experience index: opening (and recovering) it on disk, writing, committing and searching.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fs;
use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kb_core::Status;
use tantivy::columnar::Column;
use tantivy::directory::error::LockError;
use tantivy::directory::{Directory, INDEX_WRITER_LOCK, WatchCallback, WatchHandle};
use tantivy::indexer::LogMergePolicy;
use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, EnableScoring, Occur, Query, TermQuery, TermSetQuery, Weight,
};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{
    DocAddress, DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, SegmentReader, TantivyDocument,
    TantivyError, Term,
};

use crate::analyzer::{ANALYZER_NAME, analyze_with_spans, is_stop_word, text_analyzer};
use crate::directory::DeferredSyncDirectory;
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

/// Segments of a size level merged together (tantivy's default is 8).
const MERGE_MIN_SEGMENTS: usize = 4;

/// Common-term pruning applies to indexes at least this large: below it, posting lists are
/// short and every term may matter.
const COMMON_TERM_MIN_DOCS: u64 = 1_000;
/// A query term found in at least this share of the documents is left out of the query when a
/// rarer term remains.
const COMMON_TERM_SHARE: f64 = 0.25;
/// A query term found in at least this share of the documents is left out when at least
/// `FREQUENT_TERM_MIN_RARER` rarer terms remain. Those rare terms decide the top hits; a short
/// query keeps its frequent terms, which then still order the hits and cost little, having few
/// other terms to be walked with. Measured on CMRC (chunked set): Recall@5 0.941 with this rule,
/// 0.937 without; on `kb-bench load` at 100k, mean search time down by about a quarter.
const FREQUENT_TERM_SHARE: f64 = 0.10;
const FREQUENT_TERM_MIN_RARER: usize = 3;

/// Block-max WAND walks the rarest query terms only while their document frequencies add up to
/// at most this many postings (always at least `WAND_MIN_TERMS` of them); the query's other terms
/// are then added to the scores of the best candidates those terms find (see
/// [`ExperienceIndex::rescore`]), which costs a seek per term and candidate instead of a walk of
/// their posting lists.
///
/// WAND skips a document only when the terms it lacks could not lift it past the current top
/// hits; mid-frequency terms of similar weight (`连接` 23%, `超时` 14%, `数据库` 17% of the documents
/// in `kb-bench load`'s data) leave it nothing to skip, so such queries walked every posting and
/// made the latency tail. Measured at 100k experiences with `search_bench` (2,000 queries, 5
/// hits): search CPU time p99 about 910 → 590 µs, mean 263 → 240 µs. Of the 5 hits, 97.8% are
/// those found without the budget (`search_bench --dump`, ties counted as equal), and the first
/// hit is the same for 99.4% of the queries. Capping the query at its 6 rarest terms instead was
/// slower (p99 830 µs) and kept fewer of the hits (97.3%, first hit 96.8%); a budget of 15,000
/// postings kept 90.9%, 30,000 kept 98.7% for a p99 of 750 µs. An index needs more than 5,000
/// documents before a query can exceed the budget, so the CMRC quality sets are unchanged.
const WAND_POSTINGS_BUDGET: u64 = 20_000;
/// With fewer terms walked, the candidates miss more of the hits (95.1% kept with 1, 96.0% with
/// 2, 97.8% with 3) for a p99 only about 40 µs lower.
const WAND_MIN_TERMS: usize = 3;
/// Candidates found by the walked terms for rescoring: this many per hit asked for, and at least
/// `RESCORE_MIN_CANDIDATES`. Measured with 5 hits: 20 candidates kept 95.6% of the hits, 40
/// kept 97.8%, for about 40 µs more at p99.
const RESCORE_CANDIDATES_PER_HIT: usize = 8;
const RESCORE_MIN_CANDIDATES: usize = 40;

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
    /// Only experiences with this status; the index holds active ones only, so any other status finds nothing.
    pub status: Status,
    /// Whether to work out each hit's [`Hit::coverage`] (the daemon's ranking adds it; about
    /// 15 µs for 30 hits at 100k experiences).
    pub coverage: bool,
}

/// One search result: the experience id, its BM25 relevance (higher is better) and how much of
/// the query it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub id: String,
    pub bm25: f32,
    /// The share of the query's searched terms, each weighted by its BM25 idf, that the
    /// experience has in any text field: 1 when it has them all, whatever their counts. BM25
    /// saturates each term's count but still lets one rare term said often outrank a text that
    /// holds every term of the query; the daemon's ranking uses this to reward the latter
    /// (`kb_embed::fusion::with_coverage`). 0 when the request did not ask for it.
    pub coverage: f32,
}

/// A term a search scores (see [`ExperienceIndex::search_terms`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerm {
    /// The term as indexed.
    pub text: String,
    /// The number of documents that have it, in any text field.
    pub doc_freq: u64,
    /// Walked by block-max WAND to find the hits; otherwise only added to the candidates' scores.
    pub walked: bool,
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
    /// Held for every reader reload, so reloads happen one at a time and none can install an
    /// older snapshot than the one before (see [`ExperienceIndex::follow_merges`]).
    reloading: Arc<Mutex<()>>,
    reader: IndexReader,
    /// Reloads the reader when background merges change the index (dropped with the index).
    _follow_merges: Option<WatchHandle>,
    /// The index, to start a new writer when the old one cannot be rolled back.
    index: Index,
    /// On disk: commits are synced by [`ExperienceIndex::make_durable`], not one by one.
    directory: Option<DeferredSyncDirectory>,
    /// Set when a rollback failed: tantivy's writer then holds no directory lock and may not
    /// be rolled back again (it panics), so the next reset starts a new writer instead.
    writer_broken: AtomicBool,
    applied_seq: AtomicU64,
    /// [`WAND_POSTINGS_BUDGET`]; tests lower it to exercise rescoring on a small index.
    wand_postings_budget: u64,
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
        let create_error = |source: TantivyError| Error::Create { path: dir.to_owned(), source };
        let directory = DeferredSyncDirectory::open(dir).map_err(|err| create_error(err.into()))?;

        // Hold the writer lock while deciding, so nothing is wiped under a live writer.
        let probe_lock = directory.acquire_lock(&INDEX_WRITER_LOCK).map_err(|err| lock_error(dir, err))?;
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
                ExperienceIndex::assemble(&index, Some(directory), writer, reader, applied_seq).follow_merges(&index)?
            }
            None => {
                let (schema, _) = build_schema();
                let fresh_directory = DeferredSyncDirectory::open(dir).map_err(|err| create_error(err.into()))?;
                let index = Index::create(fresh_directory.clone(), schema, Default::default()).map_err(create_error)?;
                register_analyzer(&index);
                let writer = new_writer(&index, dir)?;
                let reader = new_reader(&index).map_err(create_error)?;
                let this = ExperienceIndex::assemble(&index, Some(fresh_directory), writer, reader, 0)
                    .follow_merges(&index)?;
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
        Ok(ExperienceIndex::assemble(&index, None, writer, reader, 0))
    }

    fn assemble(
        index: &Index,
        directory: Option<DeferredSyncDirectory>,
        writer: IndexWriter,
        reader: IndexReader,
        applied_seq: u64,
    ) -> ExperienceIndex {
        let (_, fields) = build_schema();
        ExperienceIndex {
            fields,
            index: index.clone(),
            directory,
            writer_broken: AtomicBool::new(false),
            writer: Mutex::new(writer),
            reloading: Arc::new(Mutex::new(())),
            reader,
            _follow_merges: None,
            applied_seq: AtomicU64::new(applied_seq),
            wand_postings_budget: WAND_POSTINGS_BUDGET,
        }
    }

    /// Reloads the reader whenever the index's `meta.json` changes, which is how background
    /// merges show (they change no document, but leave fewer segments, and a query pays per
    /// segment). The reload holds `reloading`, like the reload in `commit`: tantivy's own
    /// `OnCommitWithDelay` reloads on its watcher thread without it, and a reload that read the
    /// old `meta.json` could finish after `commit`'s and install the older snapshot, so a search
    /// sent after a write's answer missed it (seen once in 1,021 read-your-write checks).
    fn follow_merges(mut self, index: &Index) -> Result<ExperienceIndex> {
        // Not the writer itself: it (and its directory lock) must go when the index is dropped,
        // even while tantivy's watcher thread still runs this callback.
        let reloading = Arc::clone(&self.reloading);
        let reader = self.reader.clone();
        let callback = WatchCallback::new(move || {
            let _serialized = reloading.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(error) = reader.reload() {
                tracing::warn!("cannot reload the index reader after a merge: {error}");
            }
        });
        let handle = index.directory().watch(callback).map_err(|source| Error::Reload { source })?;
        self._follow_merges = Some(handle);
        Ok(self)
    }

    /// Discards every change since the last successful commit and starts a fresh writer.
    ///
    /// After a failed commit (no file descriptors, a full disk) tantivy's writer cannot be
    /// trusted: measured here, later commits then succeeded and recorded the store's sequence
    /// number while the index held none of the documents added meanwhile. So a failure resets
    /// the writer, `applied_seq` stays at the last good commit, and the caller applies the
    /// store's changes since then again.
    pub fn reset_writer(&self) -> Result<()> {
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
    pub fn make_durable(&self) -> Result<u64> {
        let applied_seq = self.applied_seq();
        if let Some(directory) = &self.directory {
            directory.sync().map_err(|source| Error::Sync { source })?;
        }
        Ok(applied_seq)
    }

    /// Whether a commit since the last [`ExperienceIndex::make_durable`] is not on disk yet.
    pub fn has_unsynced_commits(&self) -> bool {
        self.directory.as_ref().is_some_and(DeferredSyncDirectory::has_unsynced)
    }

    /// The store sequence number recorded by the last commit; 0 for a new index.
    pub fn applied_seq(&self) -> u64 {
        self.applied_seq.load(Ordering::Acquire)
    }

    /// Adds documents that are known not to be in the index (experiences just created), without
    /// the delete an upsert needs. Visible after the next commit. Inactive ones are skipped.
    pub fn add_new(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
        let writer = self.lock_writer();
        for doc in docs.iter().filter(|doc| doc.status == Status::Active) {
            writer
                .add_document(self.to_document(doc))
                .map_err(|source| Error::Write { operation: "add documents", source })?;
        }
        Ok(())
    }

    /// Adds the documents, replacing any with the same id. Visible after the next commit.
    /// The index holds active experiences only: a pending or rejected one is removed.
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

    /// Removes the documents with these ids (unknown ids are ignored). Visible after the next
    /// commit.
    pub fn delete(&self, ids: &[&str]) -> Result<()> {
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

    /// Removes every document, including uncommitted ones, for a full rebuild: `clear`, then
    /// `upsert` everything, then one `commit`. Searches see the old index until that commit.
    pub fn clear(&self) -> Result<()> {
        let writer = self.lock_writer();
        writer
            .delete_query(Box::new(AllQuery))
            .map_err(|source| Error::Write { operation: "clear all documents", source })?;
        Ok(())
    }

    /// Commits the pending changes, recording `applied_seq` and the schema version, and reloads
    /// the reader so the next search sees them. On disk the commit is durable once
    /// [`ExperienceIndex::make_durable`] has run after it (a process crash loses nothing before
    /// that; a power loss may, and the next open rebuilds what it damaged).
    pub fn commit(&self, applied_seq: u64) -> Result<()> {
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
        {
            let _serialized = self.reloading.lock().unwrap_or_else(PoisonError::into_inner);
            self.reader.reload().map_err(|source| Error::Reload { source })?;
        }
        self.applied_seq.store(applied_seq, Ordering::Release);
        Ok(())
    }

    /// Searches the committed documents; best first, at most `request.limit` hits.
    ///
    /// The query is analyzed like the documents and each term is looked up in every text field
    /// (any term may match); the rating and agent filters must hold. A query
    /// without any word in it (empty, blank, only punctuation) has no hits.
    pub fn search(&self, request: &SearchRequest<'_>) -> Result<Vec<Hit>> {
        let search_error = |source| Error::Search { query: request.query.to_owned(), source };
        // The index holds active experiences only.
        if request.limit == 0 || request.status != Status::Active {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let terms = self.query_terms(&searcher, request.query).map_err(search_error)?;
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        // Never ask for more than there are documents: the limit sizes a heap.
        let n_docs = searcher.num_docs().max(1) as usize;
        let limit = request.limit.min(n_docs);
        let (walked, rescored) = terms.split_at(self.n_walked(&terms));
        let walked_query = self.text_query(walked);
        let top_addresses = if rescored.is_empty() {
            self.top(&searcher, &walked_query, limit, request).map_err(search_error)?
        } else {
            let n_candidates = limit.saturating_mul(RESCORE_CANDIDATES_PER_HIT).max(RESCORE_MIN_CANDIDATES).min(n_docs);
            let candidates = self.top(&searcher, &walked_query, n_candidates, request).map_err(search_error)?;
            self.rescore(&searcher, rescored, candidates, limit).map_err(search_error)?
        };
        let top_addresses = self.with_a_content_word(&searcher, request.query, top_addresses).map_err(search_error)?;
        let coverage = if request.coverage {
            self.coverage(&searcher, &terms, &top_addresses).map_err(search_error)?
        } else {
            vec![0.0; top_addresses.len()]
        };
        self.hits_of(&searcher, top_addresses, coverage).map_err(search_error)
    }

    /// For each of `addresses`, the idf-weighted share of `terms` it has (see [`Hit::coverage`]).
    fn coverage(
        &self,
        searcher: &Searcher,
        terms: &[(String, u64)],
        addresses: &[(Score, DocAddress)],
    ) -> tantivy::Result<Vec<f32>> {
        let n_docs = searcher.num_docs();
        // Lucene's idf, as tantivy's BM25 has it; a term's count over all text fields can
        // exceed the number of documents.
        let idf = |doc_freq: u64| {
            let doc_freq = doc_freq.min(n_docs) as f32;
            (1.0 + (n_docs as f32 - doc_freq + 0.5) / (doc_freq + 0.5)).ln()
        };
        let total: f32 = terms.iter().map(|(_, doc_freq)| idf(*doc_freq)).sum();
        let mut held: HashMap<DocAddress, f32> = HashMap::with_capacity(addresses.len());
        if total > 0.0 {
            let in_order = in_doc_order(addresses);
            for term in terms {
                let weight = idf(term.1) / total;
                for address in self.holding(searcher, std::slice::from_ref(term), &in_order)? {
                    *held.entry(address).or_default() += weight;
                }
            }
        }
        Ok(addresses.iter().map(|(_, address)| held.get(address).copied().unwrap_or(0.0).min(1.0)).collect())
    }

    /// Those of `addresses` (in document order, each once: [`in_doc_order`]) that have any of
    /// `terms` in any text field: each term's posting lists are sought to the addresses, never
    /// walked.
    fn holding(
        &self,
        searcher: &Searcher,
        terms: &[(String, u64)],
        addresses: &[DocAddress],
    ) -> tantivy::Result<Vec<DocAddress>> {
        let weights: Vec<Box<dyn Weight>> = self
            .text_query(terms)
            .clauses()
            .iter()
            .map(|(_, clause)| clause.weight(EnableScoring::disabled_from_searcher(searcher)))
            .collect::<tantivy::Result<_>>()?;
        let mut holding = Vec::with_capacity(addresses.len());
        for segment in addresses.chunk_by(|one, other| one.segment_ord == other.segment_ord) {
            let reader = searcher.segment_reader(segment[0].segment_ord);
            let mut has = vec![false; segment.len()];
            for weight in &weights {
                let mut scorer = weight.scorer(reader, 1.0)?;
                for (address, has) in segment.iter().zip(&mut has) {
                    // `seek` must not go backwards; a scorer already past this document lacks it.
                    let doc = if scorer.doc() < address.doc_id { scorer.seek(address.doc_id) } else { scorer.doc() };
                    *has |= doc == address.doc_id;
                }
            }
            holding.extend(segment.iter().zip(has).filter(|(_, has)| *has).map(|(address, _)| *address));
        }
        Ok(holding)
    }

    /// `addresses` without the documents that share only function words with `query` (`for`,
    /// `the`, `的`: `analyzer::is_stop_word`), when the query has other words. They still score
    /// (they tell "how to run tests" from "tests to run"), but alone they match nearly every
    /// text: in a small store a document sharing only "for" and "with" with a query was returned
    /// as relevant. Measured on the quality sets: no change in ranking (leaving them out of the
    /// query instead cost half a point of English Recall@5).
    fn with_a_content_word(
        &self,
        searcher: &Searcher,
        query: &str,
        addresses: Vec<(Score, DocAddress)>,
    ) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        let mut content: Vec<String> =
            analyze_with_spans(query).into_iter().map(|(term, _)| term).filter(|term| !is_stop_word(term)).collect();
        content.sort_unstable();
        content.dedup();
        let all_content = analyze_with_spans(query).iter().all(|(term, _)| !is_stop_word(term));
        if content.is_empty() || all_content || addresses.is_empty() {
            return Ok(addresses);
        }
        let mut present = Vec::with_capacity(content.len());
        for term in content {
            let doc_freq = self.doc_freq(searcher, &term)?;
            if doc_freq > 0 {
                present.push((term, doc_freq));
            }
        }
        if present.is_empty() {
            return Ok(Vec::new());
        }
        let with_content: HashSet<DocAddress> =
            self.holding(searcher, &present, &in_doc_order(&addresses))?.into_iter().collect();
        Ok(addresses.into_iter().filter(|(_, address)| with_content.contains(address)).collect())
    }

    /// How many of `terms` (rarest first) block-max WAND walks: see [`WAND_POSTINGS_BUDGET`].
    fn n_walked(&self, terms: &[(String, u64)]) -> usize {
        let mut postings = 0u64;
        let mut n_walked = 0;
        for (_, doc_freq) in terms {
            postings = postings.saturating_add(*doc_freq);
            if n_walked >= WAND_MIN_TERMS && postings > self.wand_postings_budget {
                break;
            }
            n_walked += 1;
        }
        n_walked
    }

    /// Any of `terms` in any text field, each field with its boost.
    fn text_query(&self, terms: &[(String, u64)]) -> BooleanQuery {
        let mut text_clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (term, _) in terms {
            for (field, boost) in self.fields.text_fields_with_boosts() {
                let term_query = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
                text_clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(term_query), boost))));
            }
        }
        BooleanQuery::new(text_clauses)
    }

    /// The `limit` best of `candidates` once the scores of `terms` are added to theirs, best
    /// first, ties to the earlier document: for each segment, each term's posting list is sought
    /// to the candidates in document order, never walked.
    ///
    /// The scores are those a query over all the terms gives the candidates; a document that
    /// none of the walked terms ranked among the candidates is not found (see
    /// [`WAND_POSTINGS_BUDGET`]).
    fn rescore(
        &self,
        searcher: &Searcher,
        terms: &[(String, u64)],
        mut candidates: Vec<(Score, DocAddress)>,
        limit: usize,
    ) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        let weights: Vec<Box<dyn Weight>> = self
            .text_query(terms)
            .clauses()
            .iter()
            .map(|(_, clause)| clause.weight(EnableScoring::enabled_from_searcher(searcher)))
            .collect::<tantivy::Result<_>>()?;
        candidates.sort_unstable_by_key(|&(_, address)| address);
        for segment in candidates.chunk_by_mut(|(_, one), (_, other)| one.segment_ord == other.segment_ord) {
            let reader = searcher.segment_reader(segment[0].1.segment_ord);
            for weight in &weights {
                let mut scorer = weight.scorer(reader, 1.0)?;
                for (score, address) in segment.iter_mut() {
                    // `seek` must not go backwards; a scorer already past this document lacks it.
                    let doc = if scorer.doc() < address.doc_id { scorer.seek(address.doc_id) } else { scorer.doc() };
                    if doc == address.doc_id {
                        *score += scorer.score();
                    }
                }
            }
        }
        let mut best = BestHits::new(limit);
        for (score, address) in candidates {
            best.push(score, address);
        }
        Ok(best.into_sorted())
    }

    /// The terms a search for `query` scores, rarest first, with the number of documents that
    /// have each and whether block-max WAND walks it or only rescores the candidates: what
    /// [`Self::search`] runs, for benchmarks and for explaining a ranking.
    pub fn search_terms(&self, query: &str) -> Result<Vec<SearchTerm>> {
        let searcher = self.reader.searcher();
        let terms =
            self.query_terms(&searcher, query).map_err(|source| Error::Search { query: query.to_owned(), source })?;
        let n_walked = self.n_walked(&terms);
        Ok(terms
            .into_iter()
            .enumerate()
            .map(|(term_idx, (text, doc_freq))| SearchTerm { text, doc_freq, walked: term_idx < n_walked })
            .collect())
    }

    /// At most how many documents can hold `text`: the fewest that have any one of its terms
    /// (every document holding `text` has them all); 0 when it has no terms. An identifier of a
    /// query held by many documents is a topic word, not a lookup (see the engine's search).
    pub fn max_holders(&self, text: &str) -> Result<u64> {
        let searcher = self.reader.searcher();
        let mut fewest: Option<u64> = None;
        for (term, _) in analyze_with_spans(text) {
            let doc_freq =
                self.doc_freq(&searcher, &term).map_err(|source| Error::Search { query: text.to_owned(), source })?;
            fewest = Some(fewest.map_or(doc_freq, |fewest| fewest.min(doc_freq)));
        }
        Ok(fewest.unwrap_or(0).min(searcher.num_docs()))
    }

    /// The number of segments a search walks: each costs a term lookup per query term.
    pub fn num_segments(&self) -> usize {
        self.reader.searcher().segment_readers().len()
    }

    /// The number of documents that have `term` in any text field.
    fn doc_freq(&self, searcher: &Searcher, term: &str) -> tantivy::Result<u64> {
        let mut doc_freq = 0;
        for (field, _) in self.fields.text_fields_with_boosts() {
            doc_freq += searcher.doc_freq(&Term::from_field_text(field, term))?;
        }
        Ok(doc_freq)
    }

    /// The terms of `query` worth searching for with their document frequencies, rarest first.
    ///
    /// Every term costs a posting list to walk, and block-max WAND skips documents only while
    /// the terms a document lacks could not lift it past the current top hits; terms that always
    /// occur together (a word and its parts) defeat that, as each adds its weight to the same
    /// documents. So beside terms no document has, two kinds are left out:
    /// - Parts of a longer query token that is itself in the index: `tsconfig` and `json` of
    ///   `tsconfig.json`, `数据` and `据库` of `数据库`, the single characters of the bigram `字段`.
    ///   Every document with the whole token has its parts too, so they would only add the same
    ///   weight to the same documents, and find others that merely share a part. When the whole
    ///   token is in no document, its parts are searched instead.
    /// - In a big index, terms found in a large share of the documents, as stop words would be,
    ///   when rarer ones remain: they carry little BM25 weight but have long posting lists.
    fn query_terms(&self, searcher: &Searcher, query: &str) -> tantivy::Result<Vec<(String, u64)>> {
        let tokens = analyze_with_spans(query);
        let mut doc_freqs: HashMap<&str, u64> = HashMap::with_capacity(tokens.len());
        for (term, _) in &tokens {
            if let Entry::Vacant(entry) = doc_freqs.entry(term) {
                entry.insert(self.doc_freq(searcher, term)?);
            }
        }
        let found: Vec<(&str, Range<usize>)> = tokens
            .iter()
            .filter(|(term, _)| doc_freqs[term.as_str()] > 0)
            .map(|(term, span)| (term.as_str(), span.clone()))
            .collect();
        let covered = covered_tokens(&found);
        // A term stays when any of its occurrences is not covered by a found longer token.
        let mut kept: HashSet<&str> = HashSet::with_capacity(found.len());
        for ((term, _), is_covered) in found.iter().zip(&covered) {
            if !is_covered {
                kept.insert(term);
            }
        }
        let mut by_doc_freq: Vec<(u64, &str)> = kept.into_iter().map(|term| (doc_freqs[term], term)).collect();
        // Ties broken by the term, so the same query always gives the same terms.
        by_doc_freq.sort_unstable();
        let n_docs = searcher.num_docs();
        if n_docs >= COMMON_TERM_MIN_DOCS {
            let n_rarer_than = |share: f64| {
                let from = (n_docs as f64 * share) as u64;
                by_doc_freq.iter().filter(|(doc_freq, _)| *doc_freq < from).count()
            };
            let n_rare = n_rarer_than(FREQUENT_TERM_SHARE);
            let n_kept =
                if n_rare >= FREQUENT_TERM_MIN_RARER { n_rare } else { n_rarer_than(COMMON_TERM_SHARE).max(1) };
            by_doc_freq.truncate(n_kept);
        }
        by_doc_freq.truncate(MAX_QUERY_TERMS);
        Ok(by_doc_freq.into_iter().map(|(doc_freq, term)| (term.to_owned(), doc_freq)).collect())
    }

    /// The `limit` best documents for `query` among those that pass the request's filters, best
    /// first; ties go to the earlier document, as with tantivy's `TopDocs`.
    ///
    /// The same ranking as tantivy's `TopDocs` with the filters as must-clauses, found with less
    /// work in two ways:
    /// - The filters are checked, from fast fields, on the documents block-max WAND offers. A
    ///   must-clause would turn the disjunction into an intersection that scores every document
    ///   matching any term, and running the bare disjunction first would need a second query
    ///   whenever too few of its hits pass.
    /// - All segments share one threshold. `TopDocs` starts each segment afresh, so every
    ///   segment scores its own best documents even when they cannot make the overall top.
    fn top(
        &self,
        searcher: &Searcher,
        query: &dyn Query,
        limit: usize,
        request: &SearchRequest<'_>,
    ) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
        let mut best = BestHits::new(limit);
        for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
            let Some(filter) = SegmentFilter::new(reader, request)? else {
                continue;
            };
            let alive = reader.alive_bitset();
            let mut threshold = best.threshold();
            weight.for_each_pruning(threshold, reader, &mut |doc, score| {
                if alive.is_none_or(|alive| alive.is_alive(doc)) && filter.passes(doc) {
                    best.push(score, DocAddress::new(segment_ord as u32, doc));
                    threshold = best.threshold();
                }
                threshold
            })?;
        }
        Ok(best.into_sorted())
    }

    /// The hits for documents found by [`Self::top`], in the same order, their ids read from the
    /// document store (see the `id` field in `schema.rs` for why not from a fast field).
    fn hits_of(
        &self,
        searcher: &Searcher,
        top: Vec<(Score, DocAddress)>,
        coverage: Vec<f32>,
    ) -> tantivy::Result<Vec<Hit>> {
        let mut hits = Vec::with_capacity(top.len());
        for ((bm25, address), coverage) in top.into_iter().zip(coverage) {
            let document: TantivyDocument = searcher.doc(address)?;
            if let Some(id) = document.get_first(self.fields.id).and_then(|value| value.as_str()) {
                hits.push(Hit { id: id.to_owned(), bm25, coverage });
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

/// For each token, whether another token's range strictly contains its range: whether it is a
/// part of a longer token (see [`ExperienceIndex::query_terms`]).
/// The addresses of `hits` sorted into document order, each once, as posting lists are sought.
fn in_doc_order(hits: &[(Score, DocAddress)]) -> Vec<DocAddress> {
    let mut addresses: Vec<DocAddress> = hits.iter().map(|(_, address)| *address).collect();
    addresses.sort_unstable();
    addresses.dedup();
    addresses
}

fn covered_tokens(tokens: &[(&str, Range<usize>)]) -> Vec<bool> {
    // Sorted by start, longest first: every range before a token's either starts earlier or
    // starts with it and ends no earlier. Equal ranges are handled as a group, so that a token
    // never counts as covered by one of the same extent.
    let mut order: Vec<usize> = (0..tokens.len()).collect();
    order.sort_by_key(|&token_idx| (tokens[token_idx].1.start, Reverse(tokens[token_idx].1.end)));
    let mut covered = vec![false; tokens.len()];
    let mut reach = 0;
    let mut group_start = 0;
    while group_start < order.len() {
        let span = &tokens[order[group_start]].1;
        let group_len = order[group_start..].iter().take_while(|&&token_idx| tokens[token_idx].1 == *span).count();
        for &token_idx in &order[group_start..group_start + group_len] {
            covered[token_idx] = reach >= span.end;
        }
        reach = reach.max(span.end);
        group_start += group_len;
    }
    covered
}

/// The best hits so far across segments: a min-heap of at most `limit` entries whose least
/// entry is the score a new document must beat.
struct BestHits {
    heap: BinaryHeap<Reverse<Ranked>>,
    limit: usize,
}

/// A document by rank: a higher score first, then the earlier address.
#[derive(Clone, Copy)]
struct Ranked {
    score: Score,
    address: DocAddress,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> CmpOrdering {
        self.score.total_cmp(&other.score).then_with(|| other.address.cmp(&self.address))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Ranked {}

impl BestHits {
    fn new(limit: usize) -> BestHits {
        BestHits { heap: BinaryHeap::with_capacity(limit + 1), limit }
    }

    /// Keeps the document if it ranks among the best `limit` so far, in any order. (From WAND,
    /// documents arrive in address order with a score above [`Self::threshold`], so a new one
    /// always outranks the least one kept.)
    fn push(&mut self, score: Score, address: DocAddress) {
        self.heap.push(Reverse(Ranked { score, address }));
        if self.heap.len() > self.limit {
            self.heap.pop();
        }
    }

    /// The score a document must exceed to be kept; ties lose, as they come later.
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(Reverse(least)) if self.heap.len() == self.limit => least.score,
            _ => Score::MIN,
        }
    }

    fn into_sorted(self) -> Vec<(Score, DocAddress)> {
        // Sorting `Reverse` entries ascending puts the best first.
        self.heap.into_sorted_vec().into_iter().map(|Reverse(ranked)| (ranked.score, ranked.address)).collect()
    }
}

/// A search request's filters, read from one segment's fast fields.
struct SegmentFilter {
    /// The ratings and the least one that passes, when the request asks for more than 1.
    min_score: Option<(Column<u64>, u64)>,
    /// The agent ids and the ordinal of the one asked for.
    agent: Option<(Column<u64>, u64)>,
}

impl SegmentFilter {
    /// The filter of `request` on `reader`'s documents, or `None` when none of them can pass.
    fn new(reader: &SegmentReader, request: &SearchRequest<'_>) -> tantivy::Result<Option<SegmentFilter>> {
        let fast_fields = reader.fast_fields();
        let min_score =
            if request.min_score > 1 { Some((fast_fields.u64("score")?, u64::from(request.min_score))) } else { None };
        let agent = match request.agent_id {
            None => None,
            Some(agent_id) => {
                let Some(column) = fast_fields.str("agent_id")? else { return Ok(None) };
                let Some(agent_ord) = column.dictionary().term_ord(agent_id)? else { return Ok(None) };
                Some((column.ords().clone(), agent_ord))
            }
        };
        Ok(Some(SegmentFilter { min_score, agent }))
    }

    fn passes(&self, doc: DocId) -> bool {
        let rated_enough =
            |(ratings, least): &(Column<u64>, u64)| ratings.first(doc).is_some_and(|rating| rating >= *least);
        let of_agent = |(agents, agent_ord): &(Column<u64>, u64)| agents.first(doc) == Some(*agent_ord);
        self.min_score.as_ref().is_none_or(rated_enough) && self.agent.as_ref().is_none_or(of_agent)
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

/// A reader that follows the index's `meta.json`. `commit` reloads it at once, so a search sent
/// after a write's answer finds the write; the policy adds the reloads after background merges,
/// which change no document but leave fewer segments: each query pays per segment, and after a
/// bulk import the merges often finish only after the last commit.
fn new_reader(index: &Index) -> tantivy::Result<IndexReader> {
    index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()
}

fn new_writer(index: &Index, dir: &Path) -> Result<IndexWriter> {
    let writer = index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES).map_err(|source| match source {
        TantivyError::LockFailure(LockError::LockBusy, _) => Error::Locked { path: dir.to_owned() },
        source => Error::Create { path: dir.to_owned(), source },
    })?;
    set_merge_policy(&writer);
    Ok(writer)
}

/// Every commit (each submit, each import batch) makes new segments, and a query pays a term
/// lookup per term, field and segment: merging sooner than tantivy's default of 8 segments per
/// level keeps the count, and so the per-query cost, low.
fn set_merge_policy(writer: &IndexWriter) {
    let mut merge_policy = LogMergePolicy::default();
    merge_policy.set_min_num_segments(MERGE_MIN_SEGMENTS);
    writer.set_merge_policy(Box::new(merge_policy));
}

fn lock_error(dir: &Path, err: LockError) -> Error {
    match err {
        LockError::LockBusy => Error::Locked { path: dir.to_owned() },
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
    directory: &DeferredSyncDirectory,
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

fn try_open_existing(directory: &DeferredSyncDirectory) -> std::result::Result<(Index, IndexReader, u64), String> {
    let index = Index::open(directory.clone()).map_err(|err| format!("cannot open: {err}"))?;
    let metas = index.load_metas().map_err(|err| format!("cannot read meta.json: {err}"))?;
    let payload = metas.payload.as_deref().ok_or_else(|| "the last commit has no payload".to_owned())?;
    let payload: CommitPayload =
        serde_json::from_str(payload).map_err(|err| format!("unreadable commit payload {payload:?}: {err}"))?;
    if payload.schema_version != SCHEMA_VERSION {
        return Err(format!("schema version {} on disk, {SCHEMA_VERSION} expected", payload.schema_version));
    }
    let (expected_schema, _) = build_schema();
    if index.schema() != expected_schema {
        return Err("the schema on disk differs from this version's".to_owned());
    }
    // Every byte of the live segments is checked once here, so a damaged file is found now
    // rather than as a wrong answer (or a panic) in some later search.
    let damaged = index.validate_checksum().map_err(|err| format!("cannot validate checksums: {err}"))?;
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
        let io_error = |source| Error::Io { action: "list the index directory", path: dir.to_owned(), source };
        let mut listing = DirListing { has_meta: false, index_files: Vec::new(), other_files: Vec::new() };
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
                return Err(Error::Io { action: "remove the unusable index file", path: path.clone(), source });
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn doc<'a>(id: &'a str, task: &'a str, resource: &'a str, result: &'a str) -> IndexDoc<'a> {
        IndexDoc { id, task, resource, result, content: None, score: 3, status: Status::Active, agent_id: None }
    }

    fn request(query: &str) -> SearchRequest<'_> {
        SearchRequest { query, limit: 10, min_score: 1, agent_id: None, status: Status::Active, coverage: true }
    }

    fn search_ids(index: &ExperienceIndex, request: &SearchRequest<'_>) -> Vec<String> {
        let hits = index.search(request).expect("search");
        for pair in hits.windows(2) {
            assert!(pair[0].bm25 >= pair[1].bm25, "hits not best first: {hits:?}");
        }
        hits.into_iter().map(|hit| hit.id).collect()
    }

    fn ids_for(index: &ExperienceIndex, query: &str) -> Vec<String> {
        search_ids(index, &request(query))
    }

    /// Experiences in Chinese, English and both, about different things.
    fn sample_docs() -> Vec<IndexDoc<'static>> {
        vec![
            doc(
                "zh-vitest",
                "用vitest运行单元测试时避免进入watch模式",
                "vitest --run",
                "加上--run参数后测试跑完自动退出",
            ),
            doc(
                "en-paths",
                "Configure path aliases for TypeScript imports",
                "tsconfig.json",
                "Set compilerOptions.paths and baseUrl, then restart the language server",
            ),
            doc("zh-docker", "在容器里安装依赖太慢", "docker build", "使用国内镜像源并利用构建缓存，速度提升明显"),
            doc(
                "en-snake",
                "Rename database columns to snake_case",
                "sqlx migrate",
                "Wrote a migration that renames userName to user_name",
            ),
            doc(
                "en-effect",
                "Fix useEffect running twice in development",
                "React StrictMode",
                "StrictMode mounts components twice; make the callback idempotent",
            ),
            doc("zh-git", "合并分支时出现冲突", "git rebase -i", "先解决冲突再继续变基，最后强制推送"),
            doc("zh-field", "修改配置文件中的字段名", "config.yaml", "字段名区分大小写"),
            doc("zh-para", "把段落中的文字加粗", "markdown", "用两个星号包住文字"),
        ]
    }

    fn sample_index() -> ExperienceIndex {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index.upsert(&sample_docs()).expect("upsert");
        index.commit(1).expect("commit");
        index
    }

    /// Each query must rank the given experience first.
    fn check_first(index: &ExperienceIndex, cases: &[(&str, &str)]) {
        for (query, expected_first) in cases {
            let ids = ids_for(index, query);
            assert_eq!(ids.first().map(String::as_str), Some(*expected_first), "query {query:?} gave {ids:?}");
        }
    }

    #[test]
    fn chinese_english_and_mixed_queries_find_the_right_experience_first() {
        let index = sample_index();
        check_first(
            &index,
            &[
                ("怎么避免测试进入watch模式", "zh-vitest"),
                ("vitest watch模式", "zh-vitest"),
                ("容器 安装依赖 很慢", "zh-docker"),
                ("分支冲突", "zh-git"),
                ("TypeScript path alias", "en-paths"),
                ("rename columns", "en-snake"),
                ("git rebase", "zh-git"),
                ("docker镜像源", "zh-docker"),
            ],
        );
    }

    #[test]
    fn coverage_is_the_idf_weighted_share_of_the_query_a_hit_holds() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index
            .upsert(&[
                // One rare word of the query, said three times in a short text.
                doc("repeats", "flaky flaky flaky", "", ""),
                doc("all", "flaky test in the nightly pipeline", "retry", "quarantined the test"),
                doc("other", "nightly backup of the database", "cron", "runs at two"),
                doc("another", "nightly restore drill", "", ""),
                doc("filler", "nothing to see", "", ""),
            ])
            .expect("upsert");
        index.commit(1).expect("commit");
        let hits = index.search(&request("flaky nightly pipeline")).expect("search");
        let coverage = |id: &str| hits.iter().find(|hit| hit.id == id).map(|hit| hit.coverage);
        assert_eq!(coverage("all"), Some(1.0), "{hits:?}");
        let repeats = coverage("repeats").expect("found");
        let other = coverage("other").expect("found");
        // "flaky" is rarer than "nightly", so it weighs more; "pipeline" is in neither.
        assert!(repeats > other && other > 0.0, "{hits:?}");
        assert!(repeats + other < 1.0, "{hits:?}");
        assert_eq!(coverage("filler"), None);
        assert!(hits.iter().all(|hit| (0.0..=1.0).contains(&hit.coverage)));
        let plain =
            index.search(&SearchRequest { coverage: false, ..request("flaky nightly pipeline") }).expect("search");
        assert_eq!(
            plain.iter().map(|hit| (&hit.id, hit.bm25)).collect::<Vec<_>>(),
            hits.iter().map(|hit| (&hit.id, hit.bm25)).collect::<Vec<_>>()
        );
        assert!(plain.iter().all(|hit| hit.coverage == 0.0), "not asked for: {plain:?}");
    }

    #[test]
    fn max_holders_bounds_how_many_documents_hold_a_text() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index
            .upsert(&[
                doc("a", "deploy failed with ERR_4242", "x11 session", ""),
                doc("b", "x11 forwarding over ssh", "", ""),
                doc("c", "x11 fonts look blurry", "", ""),
            ])
            .expect("upsert");
        index.commit(1).expect("commit");
        assert_eq!(index.max_holders("ERR_4242").expect("holders"), 1);
        assert_eq!(index.max_holders("X11").expect("holders"), 3);
        assert_eq!(index.max_holders("ERR_9999").expect("holders"), 0);
        assert_eq!(index.max_holders("").expect("holders"), 0);
    }

    #[test]
    fn identifiers_are_found_whole_and_by_their_parts() {
        let index = sample_index();
        check_first(
            &index,
            &[
                ("tsconfig.json", "en-paths"),
                ("tsconfig", "en-paths"),
                ("TSCONFIG.JSON", "en-paths"),
                ("--run", "zh-vitest"),
                ("run", "zh-vitest"),
                ("snake_case", "en-snake"),
                ("snake", "en-snake"),
                ("user_name", "en-snake"),
                ("userName", "en-snake"),
                ("useEffect", "en-effect"),
                ("effect", "en-effect"),
                ("compilerOptions", "en-paths"),
            ],
        );
    }

    #[test]
    fn english_words_match_across_inflections() {
        let index = sample_index();
        check_first(
            &index,
            &[("runs twice", "en-effect"), ("renaming column", "en-snake"), ("mounted component", "en-effect")],
        );
    }

    /// Regression: jieba cuts the query `字段` into `字`, `段` but the document's `字段名` into
    /// `字段`, `字段名`, so the query found nothing until single characters yielded bigrams.
    #[test]
    fn words_missing_from_the_dictionary_match_as_a_unit() {
        let index = sample_index();
        check_first(&index, &[("字段", "zh-field")]);
    }

    #[test]
    fn a_match_in_the_task_outranks_a_match_in_the_content() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        let mut in_content = doc("in-content", "Ship the release", "ci", "done");
        in_content.content = Some("steps: build, then deploy with kubernetes");
        let in_task = doc("in-task", "Roll out to kubernetes", "kubectl", "works");
        index.upsert(&[in_content, in_task]).expect("upsert");
        index.commit(1).expect("commit");
        assert_eq!(ids_for(&index, "kubernetes"), ["in-task", "in-content"]);
    }

    #[test]
    fn query_syntax_and_odd_input_never_error() {
        let index = sample_index();
        let long_query = "tsconfig ".repeat(5_000);
        let odd_queries = [
            "\"foo\" AND bar: (baz]",
            "title:vitest",
            "-run",
            "*",
            "vitest*",
            "a AND OR NOT",
            "((((",
            "\"unbalanced",
            "[1 TO 5]",
            "{x TO}",
            "field:\"x",
            "^2 ~3 \\",
            "+-!&&||",
            "😀🚀",
            "\u{0}\u{1}",
            "\u{FEFF}零宽\u{200B}空格",
            long_query.as_str(),
        ];
        for query in odd_queries {
            index.search(&request(query)).unwrap_or_else(|err| panic!("query {query:?} failed: {err}"));
        }
        check_first(&index, &[("title:vitest", "zh-vitest"), ("\"tsconfig.json\" AND (baz]", "en-paths")]);
    }

    #[test]
    fn queries_without_words_have_no_hits() {
        let index = sample_index();
        for query in ["", "   ", "\t\n", "?!.,;", "？！。，", "--", "..."] {
            assert_eq!(ids_for(&index, query), Vec::<String>::new(), "query {query:?}");
        }
    }

    #[test]
    fn function_words_alone_find_nothing_when_a_query_has_other_words() {
        let index = sample_index();
        // "for", "in", "the", "的", "中" are in the sample texts; lasagna and spinach are not.
        assert_eq!(ids_for(&index, "recipe for vegetarian lasagna in the oven"), Vec::<String>::new());
        assert_eq!(ids_for(&index, "菠菜千层面的做法"), Vec::<String>::new());
        // They still count beside a word the document has, and alone they still find.
        assert_eq!(ids_for(&index, "aliases for the imports").first().map(String::as_str), Some("en-paths"));
        assert!(!ids_for(&index, "for the").is_empty());
    }

    #[test]
    fn very_long_queries_keep_their_rare_terms() {
        let index = sample_index();
        let mut words: Vec<String> = (0..300).map(|word_idx| format!("filler{word_idx}")).collect();
        words.push("kubernetes".to_owned());
        words.push("镜像源".to_owned());
        let query = words.join(" ");
        assert_eq!(ids_for(&index, &query), ["zh-docker"]);
    }

    #[test]
    fn filters_on_status_rating_and_agent() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        let with = |id, score, status, agent_id| IndexDoc {
            score,
            status,
            agent_id,
            ..doc(id, "deploy the service", "deploy.sh", "ok")
        };
        index
            .upsert(&[
                with("a", 5, Status::Active, Some("alpha")),
                with("b", 2, Status::Active, Some("beta")),
                with("c", 4, Status::Pending, None),
                with("d", 3, Status::Rejected, Some("alpha")),
            ])
            .expect("upsert");
        index.commit(1).expect("commit");

        let cases: &[(u8, Option<&str>, Status, &[&str])] = &[
            (1, None, Status::Active, &["a", "b"]),
            (0, None, Status::Active, &["a", "b"]),
            (3, None, Status::Active, &["a"]),
            (5, None, Status::Active, &["a"]),
            (1, Some("alpha"), Status::Active, &["a"]),
            (3, Some("beta"), Status::Active, &[]),
            (1, Some("nobody"), Status::Active, &[]),
            // The index holds active experiences only.
            (1, None, Status::Pending, &[]),
            (1, Some("alpha"), Status::Rejected, &[]),
        ];
        for &(min_score, agent_id, status, expected) in cases {
            let request = SearchRequest { query: "deploy", limit: 10, min_score, agent_id, status, coverage: false };
            let mut ids = search_ids(&index, &request);
            ids.sort();
            assert_eq!(ids, expected, "{request:?}");
        }
    }

    #[test]
    fn the_rating_filter_finds_a_weak_match_behind_many_strong_low_rated_ones() {
        // Every strong match is rated 1: the filter must hold back all of them, not only the
        // first few, to find the only experience rated 5.
        let index = ExperienceIndex::open_in_ram().expect("index");
        let ids: Vec<String> = (0..100).map(|n| format!("low{n:03}")).collect();
        let mut docs: Vec<IndexDoc<'_>> = ids
            .iter()
            .map(|id| IndexDoc { score: 1, ..doc(id, "deploy deploy deploy service", "deploy.sh", "deployed") })
            .collect();
        docs.push(IndexDoc {
            score: 5,
            ..doc("good", "service notes", "wiki", "mentions deploy once among many other words")
        });
        index.upsert(&docs).expect("upsert");
        index.commit(1).expect("commit");
        let found = search_ids(&index, &SearchRequest { min_score: 5, limit: 3, ..request("deploy") });
        assert_eq!(found, ["good"]);
        let unfiltered = search_ids(&index, &SearchRequest { min_score: 1, limit: 3, ..request("deploy") });
        assert_eq!(unfiltered.len(), 3);
        assert!(!unfiltered.contains(&"good".to_owned()));
    }

    #[test]
    fn common_terms_are_pruned_but_a_query_of_only_common_terms_still_finds() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        let ids: Vec<String> = (0..1_200).map(|n| format!("doc{n:04}")).collect();
        let mut docs: Vec<IndexDoc<'_>> =
            ids.iter().map(|id| doc(id, "common words everywhere", "tool", "done")).collect();
        docs.push(doc("rare", "common words and a zebra", "tool", "done"));
        index.add_new(&docs).expect("add");
        index.commit(1).expect("commit");
        assert_eq!(search_ids(&index, &SearchRequest { limit: 1, ..request("common zebra") }), ["rare"]);
        assert_eq!(search_ids(&index, &SearchRequest { limit: 3, ..request("common words") }).len(), 3);
    }

    #[test]
    fn a_short_query_keeps_its_frequent_terms() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        // `frequent` is in a sixth of the documents: left out of a query with three rarer terms,
        // kept in a query with one, where it orders the hits.
        let ids: Vec<String> = (0..1_200).map(|n| format!("doc{n:04}")).collect();
        let mut docs: Vec<IndexDoc<'_>> = ids
            .iter()
            .enumerate()
            .map(|(n, id)| doc(id, if n % 6 == 0 { "frequent filler" } else { "other filler" }, "tool", "done"))
            .collect();
        docs.push(doc("alpha-only", "alpha words", "tool", "done"));
        docs.push(doc("alpha-frequent", "alpha frequent", "tool", "done"));
        index.add_new(&docs).expect("add");
        index.commit(1).expect("commit");
        assert_eq!(search_ids(&index, &SearchRequest { limit: 1, ..request("frequent alpha") }), ["alpha-frequent"]);
    }

    #[test]
    fn terms_past_the_postings_budget_only_rescore_the_candidates() {
        let mut index = ExperienceIndex::open_in_ram().expect("index");
        // `lacks` and `has` tie on the three rarest terms; only `delta` tells them apart.
        let mut docs =
            vec![doc("lacks", "alpha beta gamma other", "x", "y"), doc("has", "alpha beta gamma delta", "x", "y")];
        let delta_ids: Vec<String> = (0..3).map(|n| format!("delta{n}")).collect();
        docs.extend(delta_ids.iter().map(|id| doc(id, "delta only", "x", "y")));
        index.add_new(&docs).expect("add");
        index.commit(1).expect("commit");
        let query = "alpha beta gamma delta";

        // Within the budget (any index under 5,000 documents), every term is walked.
        assert!(index.search_terms(query).expect("terms").iter().all(|term| term.walked));
        assert_eq!(ids_for(&index, query)[..2], ["has", "lacks"]);
        assert_eq!(ids_for(&index, query).len(), 5);

        // Past it, the three rarest terms find the candidates and `delta` still orders them, but
        // a document with `delta` alone is no candidate.
        index.wand_postings_budget = 0;
        let terms = index.search_terms(query).expect("terms");
        let walked: Vec<(&str, bool)> = terms.iter().map(|term| (term.text.as_str(), term.walked)).collect();
        assert_eq!(walked, [("alpha", true), ("beta", true), ("gamma", true), ("delta", false)]);
        assert_eq!(terms.iter().map(|term| term.doc_freq).collect::<Vec<_>>(), [2, 2, 2, 4]);
        let hits = index.search(&request(query)).expect("search");
        assert_eq!(hits.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["has", "lacks"]);
        // The scores are those of walking every term (up to the order of the float additions).
        index.wand_postings_budget = WAND_POSTINGS_BUDGET;
        let walked_hits = index.search(&request(query)).expect("search");
        for (rescored, walked) in hits.iter().zip(&walked_hits) {
            assert_eq!(rescored.id, walked.id);
            assert!((rescored.bm25 - walked.bm25).abs() <= walked.bm25 * 1e-6, "{rescored:?} vs {walked:?}");
        }
    }

    #[test]
    fn parts_are_searched_only_when_the_whole_token_is_in_no_document() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index
            .add_new(&[
                doc("whole", "edit tsconfig.json", "x", "y"),
                doc("part", "json output", "x", "y"),
                doc("zh-whole", "数据库连接", "x", "y"),
                doc("zh-part", "数据不一致", "x", "y"),
            ])
            .expect("add");
        index.commit(1).expect("commit");
        // Every document with the whole token has its parts: they would only add weight.
        assert_eq!(ids_for(&index, "tsconfig.json"), ["whole"]);
        assert_eq!(ids_for(&index, "数据库"), ["zh-whole"]);
        // A whole token in no document leaves its parts to be searched.
        assert_eq!(ids_for(&index, "tsconfig.yaml"), ["whole"]);
        let mut found = ids_for(&index, "package.json");
        found.sort();
        assert_eq!(found, ["part", "whole"]);
    }

    #[test]
    fn covered_tokens_are_those_inside_a_longer_one() {
        let tokens = [
            ("tsconfig.json", 0..13),
            ("tsconfig", 0..8),
            ("json", 9..13),
            ("数据", 14..20),
            ("数据库", 14..23),
            ("据库", 17..23),
            // Tokens of the same extent do not cover each other.
            ("one", 24..28),
            ("two", 24..28),
        ];
        assert_eq!(covered_tokens(&tokens), [false, true, true, true, false, true, false, false]);
    }

    #[test]
    fn filters_hold_across_segments() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        let with = |id, score, agent_id| IndexDoc { score, agent_id, ..doc(id, "deploy the service", "x", "y") };
        // Two commits, two segments; the agent `beta` has documents in the second only.
        index.add_new(&[with("a1", 5, Some("alpha")), with("a2", 2, Some("alpha"))]).expect("add");
        index.commit(1).expect("commit");
        index.add_new(&[with("b1", 4, Some("beta")), with("n1", 5, None)]).expect("add");
        index.commit(2).expect("commit");
        let cases: &[(u8, Option<&str>, &[&str])] = &[
            (1, None, &["a1", "a2", "b1", "n1"]),
            (4, None, &["a1", "b1", "n1"]),
            (1, Some("alpha"), &["a1", "a2"]),
            (3, Some("alpha"), &["a1"]),
            (1, Some("beta"), &["b1"]),
            (5, Some("beta"), &[]),
        ];
        for &(min_score, agent_id, expected) in cases {
            let request = SearchRequest { min_score, agent_id, ..request("deploy") };
            let mut ids = search_ids(&index, &request);
            ids.sort();
            assert_eq!(ids, expected, "{request:?}");
        }
    }

    #[test]
    fn add_new_and_inactive_documents() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index
            .add_new(&[
                doc("a", "vitest run", "x", "y"),
                IndexDoc { status: Status::Pending, ..doc("b", "vitest run", "x", "y") },
            ])
            .expect("add");
        index.commit(1).expect("commit");
        assert_eq!(search_ids(&index, &request("vitest")), ["a"]);
        // An upsert that makes an experience inactive removes it.
        index.upsert(&[IndexDoc { status: Status::Rejected, ..doc("a", "vitest run", "x", "y") }]).expect("upsert");
        index.commit(2).expect("commit");
        assert!(search_ids(&index, &request("vitest")).is_empty());
        assert_eq!(index.num_docs(), 0);
    }

    #[test]
    fn filters_do_not_add_to_the_relevance() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index.upsert(&[doc("a", "deploy", "x", "y")]).expect("upsert");
        index.commit(1).expect("commit");
        let unfiltered = index.search(&SearchRequest { min_score: 0, ..request("deploy") }).expect("search");
        let filtered = index.search(&SearchRequest { min_score: 3, ..request("deploy") }).expect("search");
        assert_eq!(unfiltered, filtered);
        assert!(filtered[0].bm25 > 0.0);
    }

    #[test]
    fn limit_caps_the_hits() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        let ids: Vec<String> = (0..20).map(|doc_idx| format!("doc{doc_idx:02}")).collect();
        let docs: Vec<IndexDoc<'_>> = ids.iter().map(|id| doc(id, "common words here", "tool", "result")).collect();
        index.upsert(&docs).expect("upsert");
        index.commit(1).expect("commit");
        assert_eq!(index.search(&SearchRequest { limit: 5, ..request("common") }).expect("search").len(), 5);
        assert_eq!(index.search(&SearchRequest { limit: 0, ..request("common") }).expect("search").len(), 0);
        let all = index.search(&SearchRequest { limit: usize::MAX, ..request("common") }).expect("search");
        assert_eq!(all.len(), 20);
    }

    #[test]
    fn writes_are_visible_only_after_commit() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index.upsert(&[doc("a", "pending write", "x", "y")]).expect("upsert");
        assert_eq!(ids_for(&index, "pending"), Vec::<String>::new());
        assert_eq!(index.num_docs(), 0);
        index.commit(7).expect("commit");
        assert_eq!(ids_for(&index, "pending"), ["a"]);
        assert_eq!(index.num_docs(), 1);
        assert_eq!(index.applied_seq(), 7);
    }

    #[test]
    fn upsert_replaces_instead_of_duplicating() {
        let index = ExperienceIndex::open_in_ram().expect("index");
        index.upsert(&[doc("x", "old alpha", "tool", "r")]).expect("upsert");
        index.commit(1).expect("commit");
        index.upsert(&[doc("x", "new beta", "tool", "r")]).expect("upsert");
        index.commit(2).expect("commit");
        assert_eq!(ids_for(&index, "alpha"), Vec::<String>::new());
        assert_eq!(ids_for(&index, "beta"), ["x"]);
        assert_eq!(ids_for(&index, "tool"), ["x"]);
        assert_eq!(index.num_docs(), 1);

        // Twice before one commit, and twice in one batch: the last version wins.
        index.upsert(&[doc("y", "first gamma", "t", "r")]).expect("upsert");
        index.upsert(&[doc("y", "second delta", "t", "r")]).expect("upsert");
        index.upsert(&[doc("z", "third epsilon", "t", "r"), doc("z", "fourth zeta", "t", "r")]).expect("upsert");
        index.commit(3).expect("commit");
        assert_eq!(ids_for(&index, "gamma"), Vec::<String>::new());
        assert_eq!(ids_for(&index, "delta"), ["y"]);
        assert_eq!(ids_for(&index, "epsilon"), Vec::<String>::new());
        assert_eq!(ids_for(&index, "zeta"), ["z"]);
        assert_eq!(index.num_docs(), 3);
    }

    #[test]
    fn delete_removes_only_the_given_ids() {
        let index = sample_index();
        let before = index.num_docs();
        index.delete(&["en-paths", "no-such-id"]).expect("delete");
        index.commit(2).expect("commit");
        assert_eq!(ids_for(&index, "tsconfig.json"), Vec::<String>::new());
        assert_eq!(index.num_docs(), before - 1);
        check_first(&index, &[("snake_case", "en-snake")]);
    }

    #[test]
    fn clear_then_reindex_leaves_only_the_new_documents() {
        let index = sample_index();
        index.clear().expect("clear");
        index.upsert(&[doc("fresh", "rebuilt from the store", "sqlite", "ok")]).expect("upsert");
        index.commit(9).expect("commit");
        assert_eq!(index.num_docs(), 1);
        assert_eq!(ids_for(&index, "tsconfig"), Vec::<String>::new());
        assert_eq!(ids_for(&index, "rebuilt"), ["fresh"]);
    }

    #[test]
    fn reopening_keeps_documents_and_applied_seq() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("index");
        let (index, outcome) = ExperienceIndex::open(&path).expect("open");
        assert_eq!(outcome, OpenOutcome::Created);
        assert_eq!(index.applied_seq(), 0);
        index.upsert(&sample_docs()).expect("upsert");
        index.commit(42).expect("commit");
        drop(index);

        let (index, outcome) = ExperienceIndex::open(&path).expect("reopen");
        assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 42 });
        assert_eq!(index.applied_seq(), 42);
        assert_eq!(index.num_docs(), sample_docs().len() as u64);
        check_first(&index, &[("tsconfig.json", "en-paths"), ("分支冲突", "zh-git")]);

        // Still writable after reopening.
        index.upsert(&[doc("later", "added after reopen", "x", "y")]).expect("upsert");
        index.commit(43).expect("commit");
        assert_eq!(ids_for(&index, "reopen"), ["later"]);
    }

    #[test]
    fn an_empty_existing_directory_is_created_not_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_index, outcome) = ExperienceIndex::open(dir.path()).expect("open");
        assert_eq!(outcome, OpenOutcome::Created);
    }

    /// Opens `dir`, expects a recreated index, and checks that it works and reopens cleanly.
    fn assert_recreated_and_usable(dir: &Path, reason_contains: &str) {
        let (index, outcome) = ExperienceIndex::open(dir).expect("open must recover");
        match &outcome {
            OpenOutcome::Recreated { reason } => {
                assert!(reason.contains(reason_contains), "reason {reason:?} lacks {reason_contains:?}")
            }
            other => panic!("expected Recreated, got {other:?}"),
        }
        assert_eq!(index.num_docs(), 0);
        assert_eq!(index.applied_seq(), 0);
        index.upsert(&sample_docs()).expect("upsert");
        index.commit(5).expect("commit");
        check_first(&index, &[("tsconfig.json", "en-paths")]);
        drop(index);
        let (_index, outcome) = ExperienceIndex::open(dir).expect("reopen");
        assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 5 });
    }

    /// Builds a committed index in `dir` and returns the paths of its segment files.
    fn committed_index(dir: &Path) -> Vec<PathBuf> {
        let (index, _) = ExperienceIndex::open(dir).expect("open");
        index.upsert(&sample_docs()).expect("upsert");
        index.commit(3).expect("commit");
        drop(index);
        fs::read_dir(dir)
            .expect("list")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                is_index_file_name(&name) && name != "meta.json" && name != ".managed.json"
            })
            .collect()
    }

    #[test]
    fn garbage_meta_json_is_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        committed_index(dir.path());
        fs::write(dir.path().join("meta.json"), b"{ this is not json \xff\xfe").expect("write");
        assert_recreated_and_usable(dir.path(), "cannot open");
    }

    #[test]
    fn random_files_without_meta_json_are_recreated_and_foreign_files_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let junk: Vec<u8> = (0..4096u32).map(|byte_idx| (byte_idx.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let foreign = dir.path().join("notes.txt");
        let segment_like = dir.path().join("0123456789abcdef0123456789abcdef.idx");
        fs::write(&foreign, &junk).expect("write");
        fs::write(&segment_like, &junk).expect("write");
        fs::write(dir.path().join(".managed.json"), &junk).expect("write");
        assert_recreated_and_usable(dir.path(), "meta.json is missing");
        assert!(foreign.exists(), "a file tantivy did not write must be left alone");
        assert!(!segment_like.exists(), "a stale segment file must be removed");
    }

    #[test]
    fn a_damaged_segment_file_is_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let segment_files = committed_index(dir.path());
        let target = segment_files
            .iter()
            .find(|path| path.extension().is_some_and(|ext| ext == "term"))
            .expect("a term dictionary file");
        let mut bytes = fs::read(target).expect("read");
        let middle = bytes.len() / 2;
        for byte in &mut bytes[middle.saturating_sub(8)..middle + 8] {
            *byte ^= 0xA5;
        }
        fs::write(target, &bytes).expect("write");
        assert_recreated_and_usable(dir.path(), "damaged");
    }

    #[test]
    fn a_truncated_or_missing_segment_file_is_recreated() {
        for remove in [false, true] {
            let dir = tempfile::tempdir().expect("temp dir");
            let segment_files = committed_index(dir.path());
            let target = segment_files
                .iter()
                .find(|path| path.extension().is_some_and(|ext| ext == "idx"))
                .expect("a postings file");
            if remove {
                fs::remove_file(target).expect("remove");
            } else {
                fs::write(target, b"xy").expect("truncate");
            }
            assert_recreated_and_usable(dir.path(), "");
        }
    }

    /// Commits `payload` (or none) to the tantivy index in `dir` behind ExperienceIndex's back.
    fn recommit_with_payload(dir: &Path, payload: Option<&str>) {
        let index = Index::open_in_dir(dir).expect("tantivy open");
        register_analyzer(&index);
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
        let mut prepared = writer.prepare_commit().expect("prepare");
        if let Some(payload) = payload {
            prepared.set_payload(payload);
        }
        prepared.commit().expect("commit");
    }

    #[test]
    fn another_schema_version_is_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        committed_index(dir.path());
        recommit_with_payload(dir.path(), Some(r#"{"schema_version":999,"applied_seq":3}"#));
        assert_recreated_and_usable(dir.path(), "schema version 999");
    }

    #[test]
    fn a_commit_without_our_payload_is_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        committed_index(dir.path());
        recommit_with_payload(dir.path(), None);
        assert_recreated_and_usable(dir.path(), "no payload");

        let dir = tempfile::tempdir().expect("temp dir");
        committed_index(dir.path());
        recommit_with_payload(dir.path(), Some("not json"));
        assert_recreated_and_usable(dir.path(), "unreadable commit payload");
    }

    #[test]
    fn a_foreign_tantivy_index_is_recreated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut builder = tantivy::schema::Schema::builder();
        builder.add_text_field("title", tantivy::schema::TEXT);
        let index = Index::create_in_dir(dir.path(), builder.build()).expect("create");
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
        let mut prepared = writer.prepare_commit().expect("prepare");
        prepared.set_payload(&format!(r#"{{"schema_version":{SCHEMA_VERSION},"applied_seq":1}}"#));
        prepared.commit().expect("commit");
        drop(writer);
        assert_recreated_and_usable(dir.path(), "schema on disk differs");
    }

    #[test]
    fn an_index_locked_by_a_live_writer_is_an_error_and_left_intact() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (first, _) = ExperienceIndex::open(dir.path()).expect("open");
        first.upsert(&sample_docs()).expect("upsert");
        first.commit(4).expect("commit");

        let second = ExperienceIndex::open(dir.path());
        assert!(matches!(second, Err(Error::Locked { .. })), "got {second:?}");

        // The first index is untouched and still works.
        check_first(&first, &[("tsconfig.json", "en-paths")]);
        first.upsert(&[doc("more", "still writable", "x", "y")]).expect("upsert");
        first.commit(5).expect("commit");
        drop(first);
        let (reopened, outcome) = ExperienceIndex::open(dir.path()).expect("reopen");
        assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 5 });
        assert_eq!(reopened.num_docs(), sample_docs().len() as u64 + 1);
    }

    #[test]
    fn searches_run_while_another_thread_writes() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<ExperienceIndex>();

        let index = Arc::new(sample_index());
        let writer_index = Arc::clone(&index);
        let writer = std::thread::spawn(move || {
            for round in 0..20u64 {
                let id = format!("round-{round}");
                writer_index.upsert(&[doc(&id, "concurrent write", "thread", "ok")]).expect("upsert");
                writer_index.commit(round + 2).expect("commit");
            }
        });
        for _ in 0..200 {
            let ids = ids_for(&index, "tsconfig.json");
            assert_eq!(ids.first().map(String::as_str), Some("en-paths"));
        }
        writer.join().expect("writer thread");
        assert_eq!(ids_for(&index, "concurrent").len(), 10);
        assert_eq!(index.num_docs(), sample_docs().len() as u64 + 20);
        assert_eq!(index.applied_seq(), 21);
    }

    #[test]
    fn index_file_names_are_recognised() {
        for name in [
            "meta.json",
            ".managed.json",
            ".tmpA1b2C3",
            "0123456789abcdef0123456789abcdef.idx",
            "0123456789abcdef0123456789abcdef.12.del",
        ] {
            assert!(is_index_file_name(name), "{name}");
        }
        for name in [
            "notes.txt",
            "meta.json.bak",
            "0123456789abcdef.idx",
            "0123456789abcdef0123456789abcdeg.idx",
            "0123456789abcdef0123456789abcdef",
            ".tantivy-writer.lock",
        ] {
            assert!(!is_index_file_name(name), "{name}");
        }
    }
}
