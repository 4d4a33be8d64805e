//! The experience index: opening (and recovering) it on disk, writing, committing and searching.
//!
//! `ExperienceIndex` is a facade: it owns a `writer::Writer` and a `reader::Reader`, tantivy's
//! two sides, builds them after `open`'s checks of the directory, and runs a search as `query`
//! (which terms), `collector` (which documents) and `coverage` (how much of the query each
//! holds). Apart from `tests`, the submodules never use the facade; among them, `coverage` uses
//! `query` and `open` makes a `Reader`, never the other way round.

mod collector;
mod coverage;
mod open;
mod overlay;
mod query;
mod reader;
#[cfg(test)]
mod score_tests;
#[cfg(test)]
mod staged_tests;
#[cfg(test)]
mod tests;
mod view;
mod writer;

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kb_core::Status;
use tantivy::directory::{Directory, INDEX_WRITER_LOCK};
use tantivy::schema::Value;
use tantivy::{Index, Score, TantivyDocument, TantivyError};

use self::open::{DirListing, lock_error, open_existing, register_analyzer, wipe_index_files};
use self::query::WAND_POSTINGS_BUDGET;
use self::reader::Reader;
use self::view::{Found, View};
pub use self::writer::{IndexDoc, StartThreads};
use self::writer::{Writer, on_the_calling_thread, starting_threads};
use crate::analyzer::analyze_with_spans;
use crate::directory::DeferredSyncDirectory;
use crate::error::{Error, Result};
use crate::schema::{Fields, build_schema};

/// Candidates found by the walked terms for rescoring: this many per hit asked for, and at least
/// `RESCORE_MIN_CANDIDATES`. Measured with 5 hits: 20 candidates kept 95.6% of the hits, 40
/// kept 97.8%, for about 40 µs more at p99.
const RESCORE_CANDIDATES_PER_HIT: usize = 8;
const RESCORE_MIN_CANDIDATES: usize = 40;

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
    /// How much of what the query says the experience holds, for deciding whether it is worth
    /// showing unasked (auto-recall); default when the request did not ask for coverage.
    pub evidence: Evidence,
}

/// What a hit holds of the query's content words (function words left out, see
/// `analyzer::is_stop_word`), counting the words no experience has: unlike
/// [`Hit::coverage`], which weighs only the terms BM25 searched, a word of the query the store
/// has never seen still counts as something the hit does not say. Each word weighs its idf, an
/// unseen word as the rarest word in the store; a word that is part of a longer query token
/// (`json` of `tsconfig.json`) counts only through that token.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// The idf-weighted share of the query's content words the hit has, 0..=1.
    pub share: f32,
    /// How many distinct content words of the query the hit has.
    pub words: u32,
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
/// visible to searches at the next `commit`, which also reloads the reader. Writes made with
/// [`ExperienceIndex::stage`] are visible at once, from memory, and go to the segments at the
/// next commit, whenever the caller makes it.
pub struct ExperienceIndex {
    fields: Fields,
    writer: Writer,
    reader: Reader,
    /// Held by every commit, reset and clear, one at a time; never by a stage, which goes on
    /// while a commit runs (the commit takes the writes staged before it started).
    committing: Mutex<()>,
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
    ///
    /// Tantivy's threads start on whichever thread asks for them: the one opening, committing or
    /// resetting (see [`ExperienceIndex::open_with`]).
    pub fn open(dir: &Path) -> Result<(ExperienceIndex, OpenOutcome)> {
        ExperienceIndex::open_with(dir, on_the_calling_thread)
    }

    /// [`ExperienceIndex::open`], with every start of tantivy's threads, now and later (new
    /// writers, commits), run through `start_threads`: the daemon starts them below its searches'
    /// priority.
    pub fn open_with(dir: &Path, start_threads: StartThreads) -> Result<(ExperienceIndex, OpenOutcome)> {
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
            Some((index, mut reader, applied_seq)) => {
                let writer = Writer::open(&index, dir, directory, applied_seq, start_threads)?;
                starting_threads(start_threads, || reader.follow_merges(&index))?;
                ExperienceIndex::assemble(writer, reader)
            }
            None => {
                let (schema, _) = build_schema();
                let fresh_directory = DeferredSyncDirectory::open(dir).map_err(|err| create_error(err.into()))?;
                let index = Index::create(fresh_directory.clone(), schema, Default::default()).map_err(create_error)?;
                register_analyzer(&index);
                let writer = Writer::open(&index, dir, fresh_directory, 0, start_threads)?;
                let mut reader = Reader::new(&index).map_err(create_error)?;
                starting_threads(start_threads, || reader.follow_merges(&index))?;
                let this = ExperienceIndex::assemble(writer, reader);
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
        let writer = Writer::in_ram(&index)?;
        let reader = Reader::new(&index).map_err(|source| Error::CreateInRam { source })?;
        Ok(ExperienceIndex::assemble(writer, reader))
    }

    fn assemble(writer: Writer, reader: Reader) -> ExperienceIndex {
        let (_, fields) = build_schema();
        ExperienceIndex {
            fields,
            writer,
            reader,
            committing: Mutex::new(()),
            wand_postings_budget: WAND_POSTINGS_BUDGET,
        }
    }

    /// Discards every change since the last successful commit and starts a fresh writer.
    ///
    /// After a failed commit (no file descriptors, a full disk) tantivy's writer cannot be
    /// trusted: measured here, later commits then succeeded and recorded the store's sequence
    /// number while the index held none of the documents added meanwhile. So a failure resets
    /// the writer, `applied_seq` stays at the last good commit, and the caller applies the
    /// store's changes since then again.
    /// Staged writes stay staged (they are given to the writer only by a commit).
    pub fn reset_writer(&self) -> Result<()> {
        let _committing = self.lock_committing();
        self.writer.reset()
    }

    /// Syncs every commit so far to disk and returns the store sequence number it reflects,
    /// which a power loss can no longer take back. For an index in memory: its `applied_seq`.
    pub fn make_durable(&self) -> Result<u64> {
        self.writer.make_durable()
    }

    /// Whether a commit since the last [`ExperienceIndex::make_durable`] is not on disk yet.
    pub fn has_unsynced_commits(&self) -> bool {
        self.writer.has_unsynced_commits()
    }

    /// The store sequence number recorded by the last commit; 0 for a new index.
    pub fn applied_seq(&self) -> u64 {
        self.writer.applied_seq()
    }

    /// The store sequence number searches reflect: the last stage's, or the last commit's
    /// when nothing is staged.
    pub fn staged_seq(&self) -> u64 {
        self.reader.view().overlay.seq().max(self.applied_seq())
    }

    /// The number of staged documents (active, not yet in the segments).
    pub fn staged_docs(&self) -> u64 {
        self.reader.view().overlay.n_docs()
    }

    /// The number of writes staged and not yet committed.
    pub fn staged_writes(&self) -> usize {
        self.reader.view().overlay.writes().len()
    }

    /// Applies one write's changes, reflecting the store up to `seq`, and makes them visible to
    /// searches at once: `deleted` ids go, `created` documents (known not to be in the index)
    /// and `updated` ones (replacing any with the same id; an inactive one removes it) come.
    /// They are scored with the statistics of the committed and staged documents together, and
    /// go to the segments at the next [`ExperienceIndex::commit_staged`] (or any commit). Never
    /// waits for a commit in progress.
    pub fn stage(&self, seq: u64, deleted: &[&str], created: &[IndexDoc<'_>], updated: &[IndexDoc<'_>]) -> Result<()> {
        self.reader
            .restage(|overlay| overlay.stage(seq, deleted, created, updated))
            .map_err(|source| Error::Write { operation: "stage documents", source })
    }

    /// Commits the staged writes to the segments, recording the sequence number of the last one;
    /// nothing when nothing is staged. Writes staged while it runs stay staged. On a failure the
    /// staged writes stay staged and searchable, and the writer holds none of them.
    pub fn commit_staged(&self) -> Result<()> {
        let _committing = self.lock_committing();
        self.commit_staged_locked()
    }

    fn commit_staged_locked(&self) -> Result<()> {
        let reloading = self.reader.lock_reloading();
        let overlay = std::sync::Arc::clone(&self.reader.view().overlay);
        let (writes, seq) = (overlay.writes(), overlay.seq());
        if writes.is_empty() {
            return Ok(());
        }
        let given = (|| {
            for staged in writes {
                let deleted: Vec<&str> = staged.deleted.iter().map(String::as_str).collect();
                let created: Vec<IndexDoc<'_>> = staged.created.iter().map(|doc| doc.as_index_doc()).collect();
                let updated: Vec<IndexDoc<'_>> = staged.updated.iter().map(|doc| doc.as_index_doc()).collect();
                self.writer.delete(&deleted)?;
                self.writer.add_new(&created)?;
                self.writer.upsert(&updated)?;
            }
            Ok(())
        })();
        if let Err(error) = given {
            // Nothing half-given stays in the writer.
            if let Err(reset) = self.writer.reset() {
                tracing::warn!("cannot reset the index writer after a failed write: {reset}");
            }
            return Err(error);
        }
        let committed = self.writer.commit(seq, || self.reader.reload_committed(writes.len()));
        drop(reloading);
        committed
    }

    /// Writes given to the writer directly come after the staged ones: those are committed first.
    fn commit_staged_first(&self) -> Result<()> {
        if self.staged_writes() == 0 {
            return Ok(());
        }
        self.commit_staged()
    }

    fn lock_committing(&self) -> MutexGuard<'_, ()> {
        self.committing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds documents that are known not to be in the index (experiences just created), without
    /// the delete an upsert needs. Visible after the next commit. Inactive ones are skipped.
    pub fn add_new(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
        self.commit_staged_first()?;
        self.writer.add_new(docs)
    }

    /// Adds the documents, replacing any with the same id. Visible after the next commit.
    /// The index holds active experiences only: a pending or rejected one is removed.
    ///
    /// When `docs` holds the same id more than once, the last one wins.
    pub fn upsert(&self, docs: &[IndexDoc<'_>]) -> Result<()> {
        self.commit_staged_first()?;
        self.writer.upsert(docs)
    }

    /// Removes the documents with these ids (unknown ids are ignored). Visible after the next
    /// commit.
    pub fn delete(&self, ids: &[&str]) -> Result<()> {
        self.commit_staged_first()?;
        self.writer.delete(ids)
    }

    /// Removes every document, including uncommitted ones, for a full rebuild: `clear`, then
    /// `upsert` everything, then one `commit`. Searches see the old index until that commit.
    pub fn clear(&self) -> Result<()> {
        let _committing = self.lock_committing();
        if let Err(error) = self.reader.unstage() {
            tracing::warn!("cannot drop the staged writes from the view: {error}");
        }
        self.writer.clear()
    }

    /// Commits the pending changes, recording `applied_seq` and the schema version, and reloads
    /// the reader so the next search sees them. On disk the commit is durable once
    /// [`ExperienceIndex::make_durable`] has run after it (a process crash loses nothing before
    /// that; a power loss may, and the next open rebuilds what it damaged).
    ///
    /// Staged writes are committed first, in a commit of their own (they came before).
    pub fn commit(&self, applied_seq: u64) -> Result<()> {
        let _committing = self.lock_committing();
        self.commit_staged_locked()?;
        let reloading = self.reader.lock_reloading();
        let committed = self.writer.commit(applied_seq, || self.reader.reload_committed(0));
        drop(reloading);
        committed
    }

    /// Searches the committed and staged documents; best first, at most `request.limit` hits.
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
        let view = self.reader.view();
        let terms = query::query_terms(&view, request.query).map_err(search_error)?;
        let top = self.top(&view, &terms, request).map_err(search_error)?;
        let top = coverage::with_a_content_word(&view, &self.fields, request.query, top).map_err(search_error)?;
        let (coverage, evidence) = if request.coverage {
            coverage::coverage_and_evidence(&view, &self.fields, request.query, &terms, &top).map_err(search_error)?
        } else {
            (vec![0.0; top.len()], vec![Evidence::default(); top.len()])
        };
        self.hits_of(&view, top, coverage, evidence).map_err(search_error)
    }

    /// The best `request.limit` documents for `terms` (the analyzed query), committed and
    /// staged, under `request`'s filters, by BM25.
    fn top(
        &self,
        view: &View,
        terms: &[(String, u64)],
        request: &SearchRequest<'_>,
    ) -> tantivy::Result<Vec<(Score, Found)>> {
        if terms.is_empty() || request.limit == 0 {
            return Ok(Vec::new());
        }
        // Never ask for more than there are documents: the limit sizes a heap.
        let n_docs = view.num_docs().max(1) as usize;
        let limit = request.limit.min(n_docs);
        let (walked, rescored) = terms.split_at(query::n_walked(terms, self.wand_postings_budget));
        let walked_query = query::text_query(&self.fields, walked);
        let (min_score, agent_id) = (request.min_score, request.agent_id);
        let committed = if rescored.is_empty() {
            collector::top(view, &walked_query, limit, min_score, agent_id)?
        } else {
            let n_candidates = limit.saturating_mul(RESCORE_CANDIDATES_PER_HIT).max(RESCORE_MIN_CANDIDATES).min(n_docs);
            let candidates = collector::top(view, &walked_query, n_candidates, min_score, agent_id)?;
            let rescored_query = query::text_query(&self.fields, rescored);
            collector::rescore(view, &rescored_query, candidates, limit)?
        };
        let staged = collector::top_staged(view, &self.fields, walked, terms, limit, min_score, agent_id)?;
        Ok(merge_best(committed, staged, limit))
    }

    /// The hits `ids` would be for `query` wherever a search ranked them: each one's BM25 score
    /// for all the query's terms, coverage and evidence, as [`Self::search`] gives them for the
    /// hits it finds (and by the same rule, nothing for one that shares only function words with
    /// the query). A hybrid search scores with this the candidates the vectors found outside
    /// BM25's top (issue 25): a search leaves them out not because they lack the query's words
    /// but because others hold more. Ids the index does not hold, and those that hold none of the
    /// query's words, are left out (their BM25 score is 0); the rest keep `ids`' order. The
    /// filters are not checked: the caller found them under its own.
    pub fn score(&self, query: &str, ids: &[&str]) -> Result<Vec<Hit>> {
        let search_error = |source| Error::Search { query: query.to_owned(), source };
        let view = self.reader.view();
        let terms = query::query_terms(&view, query).map_err(search_error)?;
        if terms.is_empty() || ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = Vec::with_capacity(ids.len());
        let mut id_of: HashMap<Found, &str> = HashMap::with_capacity(ids.len());
        for (id, place) in ids.iter().zip(view.find(ids).map_err(search_error)?) {
            if let Some(place) = place
                && id_of.insert(place, id).is_none()
            {
                found.push(place);
            }
        }
        let scores = collector::score_found(&view, &self.fields, &terms, &found).map_err(search_error)?;
        let scored: Vec<(Score, Found)> = scores.into_iter().zip(found).filter(|(score, _)| *score > 0.0).collect();
        let scored = coverage::with_a_content_word(&view, &self.fields, query, scored).map_err(search_error)?;
        let (coverage, evidence) =
            coverage::coverage_and_evidence(&view, &self.fields, query, &terms, &scored).map_err(search_error)?;
        Ok(scored
            .into_iter()
            .zip(coverage)
            .zip(evidence)
            .map(|(((bm25, place), coverage), evidence)| Hit { id: id_of[&place].to_owned(), bm25, coverage, evidence })
            .collect())
    }

    /// The terms a search for `query` scores, rarest first, with the number of documents that
    /// have each and whether block-max WAND walks it or only rescores the candidates: what
    /// [`Self::search`] runs, for benchmarks and for explaining a ranking.
    pub fn search_terms(&self, query: &str) -> Result<Vec<SearchTerm>> {
        let view = self.reader.view();
        let terms =
            query::query_terms(&view, query).map_err(|source| Error::Search { query: query.to_owned(), source })?;
        let n_walked = query::n_walked(&terms, self.wand_postings_budget);
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
        let view = self.reader.view();
        let mut fewest: Option<u64> = None;
        for (term, _) in analyze_with_spans(text) {
            let doc_freq = view.doc_freq(&term).map_err(|source| Error::Search { query: text.to_owned(), source })?;
            fewest = Some(fewest.map_or(doc_freq, |fewest| fewest.min(doc_freq)));
        }
        Ok(fewest.unwrap_or(0).min(view.num_docs()))
    }

    /// The number of segments a search walks: each costs a term lookup per query term.
    pub fn num_segments(&self) -> usize {
        self.reader.view().searcher.segment_readers().len()
    }

    /// The hits for the documents found, in the same order, a committed one's id read from the
    /// document store (see the `id` field in `schema.rs` for why not from a fast field).
    fn hits_of(
        &self,
        view: &View,
        top: Vec<(Score, Found)>,
        coverage: Vec<f32>,
        evidence: Vec<Evidence>,
    ) -> tantivy::Result<Vec<Hit>> {
        let mut hits = Vec::with_capacity(top.len());
        for (((bm25, found), coverage), evidence) in top.into_iter().zip(coverage).zip(evidence) {
            let id = match found {
                Found::Committed(address) => {
                    let document: TantivyDocument = view.searcher.doc(address)?;
                    document.get_first(self.fields.id).and_then(|value| value.as_str()).map(str::to_owned)
                }
                Found::Staged(key) => view.staged(key).map(|doc| doc.id.clone()),
            };
            if let Some(id) = id {
                hits.push(Hit { id, bm25, coverage, evidence });
            }
        }
        Ok(hits)
    }

    /// The number of searchable documents, committed or staged.
    pub fn num_docs(&self) -> u64 {
        self.reader.view().num_docs()
    }
}

/// The `limit` best of the committed and the staged hits (each best first), best first; an equal
/// score goes to the committed one, as the earlier.
fn merge_best(
    committed: Vec<(Score, tantivy::DocAddress)>,
    staged: Vec<(Score, u64)>,
    limit: usize,
) -> Vec<(Score, Found)> {
    let mut merged: Vec<(Score, Found)> = committed
        .into_iter()
        .map(|(score, address)| (score, Found::Committed(address)))
        .chain(staged.into_iter().map(|(score, key)| (score, Found::Staged(key))))
        .collect();
    merged.sort_by(|one, other| other.0.total_cmp(&one.0));
    merged.truncate(limit);
    merged
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
