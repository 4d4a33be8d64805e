//! The top-k collector: block-max WAND over every segment with one shared threshold, the rating
//! and agent filters read from fast fields, and the rescoring of its candidates by further terms;
//! the same ranking of the staged documents (`overlay.rs`).

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use tantivy::columnar::Column;
use tantivy::query::{Bm25Weight, BooleanQuery, EnableScoring, Query, Weight};
use tantivy::{DocAddress, DocId, Score, SegmentReader, Term};

use super::query::text_query;
use super::view::{Found, View};
use crate::schema::Fields;

/// The `limit` best documents for `query` among those rated at least `min_score` and, when
/// given, of the agent `agent_id`, best first; ties go to the earlier document, as with
/// tantivy's `TopDocs`.
///
/// The same ranking as tantivy's `TopDocs` with the filters as must-clauses, found with less
/// work in two ways:
/// - The filters are checked, from fast fields, on the documents block-max WAND offers. A
///   must-clause would turn the disjunction into an intersection that scores every document
///   matching any term, and running the bare disjunction first would need a second query
///   whenever too few of its hits pass.
/// - All segments share one threshold. `TopDocs` starts each segment afresh, so every
///   segment scores its own best documents even when they cannot make the overall top.
pub(super) fn top(
    view: &View,
    query: &dyn Query,
    limit: usize,
    min_score: u8,
    agent_id: Option<&str>,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let searcher = &view.searcher;
    let weight = query.weight(scoring(view))?;
    let mut best = BestHits::new(limit);
    for (segment_ord, reader) in searcher.segment_readers().iter().enumerate() {
        let Some(filter) = SegmentFilter::new(reader, min_score, agent_id)? else {
            continue;
        };
        let alive = reader.alive_bitset();
        let mut threshold = best.threshold();
        weight.for_each_pruning(threshold, reader, &mut |doc, score| {
            if alive.is_none_or(|alive| alive.is_alive(doc))
                && filter.passes(doc)
                && !view.is_hidden(segment_ord as u32, doc)
            {
                best.push(score, DocAddress::new(segment_ord as u32, doc));
                threshold = best.threshold();
            }
            threshold
        })?;
    }
    Ok(best.into_sorted())
}

/// The `limit` best of `candidates` once the scores of `query`'s clauses (the terms not walked,
/// one clause per term and text field) are added to theirs, best first, ties to the earlier
/// document: for each segment, each term's posting list is sought to the candidates in document
/// order, never walked.
///
/// The scores are those a query over all the terms gives the candidates; a document that
/// none of the walked terms ranked among the candidates is not found (see
/// `WAND_POSTINGS_BUDGET` in `query.rs`).
pub(super) fn rescore(
    view: &View,
    query: &BooleanQuery,
    mut candidates: Vec<(Score, DocAddress)>,
    limit: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let weights: Vec<Box<dyn Weight>> =
        query.clauses().iter().map(|(_, clause)| clause.weight(scoring(view))).collect::<tantivy::Result<_>>()?;
    let searcher = &view.searcher;
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

/// Each of `found`'s BM25 score for all of `terms` (the score a search gives it, had it found
/// it): the committed ones rescored from 0 as [`rescore`] does, the staged ones as
/// [`top_staged`] scores them.
pub(super) fn score_found(
    view: &View,
    fields: &Fields,
    terms: &[(String, u64)],
    found: &[Found],
) -> tantivy::Result<Vec<Score>> {
    let committed: Vec<(Score, DocAddress)> = found
        .iter()
        .filter_map(|found| match found {
            Found::Committed(address) => Some((0.0, *address)),
            Found::Staged(_) => None,
        })
        .collect();
    let n_committed = committed.len();
    let scored: HashMap<DocAddress, Score> =
        rescore(view, &text_query(fields, terms), committed, n_committed)?.into_iter().map(|(s, a)| (a, s)).collect();
    let has_staged = found.iter().any(|found| matches!(found, Found::Staged(_)));
    let (weights, boosts) = if has_staged { staged_weights(view, fields, terms)? } else { (Vec::new(), [0.0; 2]) };
    Ok(found
        .iter()
        .map(|found| match found {
            Found::Committed(address) => scored.get(address).copied().unwrap_or(0.0),
            Found::Staged(key) => view.staged(*key).map_or(0.0, |doc| doc.score(terms, &weights, &boosts)),
        })
        .collect())
}

/// Each of `terms`' BM25 weights in the text and content fields, over the committed and staged
/// statistics, with the two fields' boosts: what a staged document is scored with.
fn staged_weights(
    view: &View,
    fields: &Fields,
    terms: &[(String, u64)],
) -> tantivy::Result<(Vec<[Bm25Weight; 2]>, [Score; 2])> {
    let [(text, text_boost), (content, content_boost)] = fields.text_fields_with_boosts();
    let weight = |field, term: &str| Bm25Weight::for_terms(view, &[Term::from_field_text(field, term)]);
    let weights = terms
        .iter()
        .map(|(term, _)| Ok([weight(text, term)?, weight(content, term)?]))
        .collect::<tantivy::Result<Vec<_>>>()?;
    Ok((weights, [text_boost, content_boost]))
}

/// BM25 with the committed index's statistics alone while nothing is staged (what tantivy
/// computes anyway), else with the staged documents' added, so both are scored alike.
fn scoring(view: &View) -> EnableScoring<'_> {
    if view.committed_only() {
        EnableScoring::enabled_from_searcher(&view.searcher)
    } else {
        EnableScoring::enabled_from_statistics_provider(view, &view.searcher)
    }
}

/// The `limit` best staged documents holding any of `walked` (as the committed ones are found
/// by those terms only) and passing the filters, scored for all of `terms`, best first, ties to
/// the earlier staged.
pub(super) fn top_staged(
    view: &View,
    fields: &Fields,
    walked: &[(String, u64)],
    terms: &[(String, u64)],
    limit: usize,
    min_score: u8,
    agent_id: Option<&str>,
) -> tantivy::Result<Vec<(Score, u64)>> {
    if view.overlay.n_docs() == 0 {
        return Ok(Vec::new());
    }
    let (weights, boosts) = staged_weights(view, fields, terms)?;
    let mut found: Vec<(Score, u64)> = view
        .overlay
        .docs()
        .filter(|(_, doc)| doc.passes(min_score, agent_id) && walked.iter().any(|(term, _)| doc.has(term)))
        .map(|(key, doc)| (doc.score(terms, &weights, &boosts), key))
        .collect();
    // Best first; the sort is stable, so equal scores keep staging order.
    found.sort_by(|one, other| other.0.total_cmp(&one.0));
    found.truncate(limit);
    Ok(found)
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
    /// The filters `min_score` and `agent_id` on `reader`'s documents, or `None` when none of
    /// them can pass.
    fn new(reader: &SegmentReader, min_score: u8, agent_id: Option<&str>) -> tantivy::Result<Option<SegmentFilter>> {
        let fast_fields = reader.fast_fields();
        let min_score = if min_score > 1 { Some((fast_fields.u64("score")?, u64::from(min_score))) } else { None };
        let agent = match agent_id {
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
