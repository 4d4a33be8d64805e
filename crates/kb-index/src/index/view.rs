//! What a search sees: one snapshot of the committed segments with the overlay of documents
//! staged since, the committed documents the overlay replaced or removed, and the statistics
//! of the two together.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::query::Bm25StatisticsProvider;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocId, DocSet, Searcher, TERMINATED, Term};

use super::overlay::{Overlay, StagedDoc};
use crate::schema::Fields;

/// Where a hit was found: a committed document, or a staged one (its overlay key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Found {
    Committed(DocAddress),
    Staged(u64),
}

/// A snapshot for searches: never changed once made; the index swaps in a new one.
pub(super) struct View {
    pub(super) searcher: Searcher,
    pub(super) overlay: Arc<Overlay>,
    /// Per segment, the committed documents the overlay shadows.
    hidden: HashMap<u32, HashSet<DocId>>,
    n_hidden: u64,
    fields: Fields,
    /// Shared by every view of the same `searcher` (see [`CommittedDocFreqs`]).
    committed_doc_freqs: Arc<CommittedDocFreqs>,
}

/// Document frequencies of terms in a searcher's committed segments, remembered: a searcher is
/// a snapshot that never changes, and the same terms are asked again and again by each search
/// (its BM25 weights, its coverage and evidence) and by the next searches, across the views a
/// write makes of the same segments. Each lookup opens every segment's term dictionary: under
/// 50 writers with a model loaded (issue 25), a submit's near-duplicate search spent a third
/// of its CPU there, with a new segment every 250 ms.
#[derive(Default)]
struct CommittedDocFreqs(Mutex<HashMap<Term, u64>>);

/// Terms remembered per searcher before they are forgotten all at once (a few MB at most).
const MAX_REMEMBERED_TERMS: usize = 100_000;

impl CommittedDocFreqs {
    fn get(&self, searcher: &Searcher, term: &Term) -> tantivy::Result<u64> {
        if let Some(&doc_freq) = self.lock().get(term) {
            return Ok(doc_freq);
        }
        // Looked up without the lock: two searches asking at once both look it up, same answer.
        let doc_freq = searcher.doc_freq(term)?;
        let mut remembered = self.lock();
        if remembered.len() >= MAX_REMEMBERED_TERMS {
            remembered.clear();
        }
        remembered.insert(term.clone(), doc_freq);
        Ok(doc_freq)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Term, u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl View {
    /// A view of `searcher` with `overlay`, looking up every shadowed id in the segments.
    pub(super) fn new(searcher: Searcher, overlay: Arc<Overlay>, fields: Fields) -> tantivy::Result<View> {
        let mut view = View {
            searcher,
            overlay,
            hidden: HashMap::new(),
            n_hidden: 0,
            fields,
            committed_doc_freqs: Arc::default(),
        };
        let shadowed: Vec<String> = view.overlay.shadowed().map(str::to_owned).collect();
        view.hide(&shadowed)?;
        Ok(view)
    }

    /// This view's segments with a new `overlay`, which shadows `newly_shadowed` besides what
    /// this view's overlay shadowed.
    pub(super) fn restaged(&self, overlay: Arc<Overlay>, newly_shadowed: &[String]) -> tantivy::Result<View> {
        let mut view = View {
            searcher: self.searcher.clone(),
            overlay,
            hidden: self.hidden.clone(),
            n_hidden: self.n_hidden,
            fields: self.fields,
            committed_doc_freqs: Arc::clone(&self.committed_doc_freqs),
        };
        view.hide(newly_shadowed)?;
        Ok(view)
    }

    /// Hides the live committed documents with these ids: a term lookup per id and segment.
    fn hide(&mut self, ids: &[String]) -> tantivy::Result<()> {
        let (hidden, n_hidden) = (&mut self.hidden, &mut self.n_hidden);
        for_each_live_doc(&self.searcher, self.fields, ids, |_, segment_ord, doc| {
            if hidden.entry(segment_ord).or_default().insert(doc) {
                *n_hidden += 1;
            }
        })
    }

    /// Where each of `ids` is searchable: staged, or committed (live and not shadowed); `None`
    /// for one the index does not hold. One term lookup per id and segment.
    pub(super) fn find(&self, ids: &[&str]) -> tantivy::Result<Vec<Option<Found>>> {
        let mut found: Vec<Option<Found>> = ids.iter().map(|id| self.overlay.key_of(id).map(Found::Staged)).collect();
        for_each_live_doc(&self.searcher, self.fields, ids, |id_idx, segment_ord, doc| {
            if found[id_idx].is_none() && !self.is_hidden(segment_ord, doc) {
                found[id_idx] = Some(Found::Committed(DocAddress::new(segment_ord, doc)));
            }
        })?;
        Ok(found)
    }

    /// Whether a committed document is shadowed by the overlay.
    pub(super) fn is_hidden(&self, segment_ord: u32, doc: DocId) -> bool {
        !self.hidden.is_empty() && self.hidden.get(&segment_ord).is_some_and(|docs| docs.contains(&doc))
    }

    /// Whether nothing is staged or shadowed: searches are the committed index's alone.
    pub(super) fn committed_only(&self) -> bool {
        self.overlay.changes_nothing()
    }

    /// The number of documents a search can find.
    pub(super) fn num_docs(&self) -> u64 {
        (self.searcher.num_docs() + self.overlay.n_docs()).saturating_sub(self.n_hidden)
    }

    /// The number of documents that have `term` in any text field, committed or staged.
    pub(super) fn doc_freq(&self, term: &str) -> tantivy::Result<u64> {
        let mut doc_freq = 0;
        for (field_idx, (field, _)) in self.fields.text_fields_with_boosts().into_iter().enumerate() {
            doc_freq += self.committed_doc_freq(&Term::from_field_text(field, term))?;
            doc_freq += self.overlay.doc_freq(field_idx, term);
        }
        Ok(doc_freq)
    }

    /// The number of committed documents (deleted ones included until a merge, as tantivy
    /// counts them) that have `term`.
    fn committed_doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        self.committed_doc_freqs.get(&self.searcher, term)
    }

    /// The staged document found at `key`.
    pub(super) fn staged(&self, key: u64) -> Option<&StagedDoc> {
        self.overlay.doc(key)
    }

    fn field_idx(&self, field: Field) -> Option<usize> {
        self.fields.text_fields_with_boosts().iter().position(|(text_field, _)| *text_field == field)
    }
}

/// BM25's statistics over the committed and the staged documents, so that both are scored
/// alike (tantivy's own count deleted documents until merged; so do these).
impl Bm25StatisticsProvider for View {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let committed = Bm25StatisticsProvider::total_num_tokens(&self.searcher, field)?;
        Ok(committed + self.field_idx(field).map_or(0, |field_idx| self.overlay.num_tokens(field_idx)))
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(Bm25StatisticsProvider::total_num_docs(&self.searcher)? + self.overlay.counted_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let committed = self.committed_doc_freq(term)?;
        let staged = match (self.field_idx(term.field()), term.value().as_str()) {
            (Some(field_idx), Some(text)) => self.overlay.doc_freq(field_idx, text),
            _ => 0,
        };
        Ok(committed + staged)
    }
}

/// Calls `each(id_idx, segment_ord, doc)` for every live committed document of `searcher` whose
/// id is `ids[id_idx]`, segment by segment: a term lookup per id and segment.
fn for_each_live_doc(
    searcher: &Searcher,
    fields: Fields,
    ids: &[impl AsRef<str>],
    mut each: impl FnMut(usize, u32, DocId),
) -> tantivy::Result<()> {
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let inverted_index = reader.inverted_index(fields.id)?;
        let alive = reader.alive_bitset();
        for (id_idx, id) in ids.iter().enumerate() {
            let term = Term::from_field_text(fields.id, id.as_ref());
            let Some(mut postings) = inverted_index.read_postings(&term, IndexRecordOption::Basic)? else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|alive| alive.is_alive(doc)) {
                    each(id_idx, segment_ord as u32, doc);
                }
                doc = postings.advance();
            }
        }
    }
    Ok(())
}
