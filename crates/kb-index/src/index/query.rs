//! What a search looks for: the terms of a query worth searching, rarest first, how many of them
//! block-max WAND walks, and the term queries over the text fields.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;

use super::view::View;

use crate::analyzer::analyze_with_spans;
use crate::schema::Fields;

/// Queries with more distinct terms than this (a whole prompt used as a query, say) keep only the
/// rarest terms: they carry the BM25 weight, and hundreds of clauses would only cost latency.
const MAX_QUERY_TERMS: usize = 64;

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
/// are then added to the scores of the best candidates those terms find (see `rescore` in
/// `collector.rs`), which costs a seek per term and candidate instead of a walk of their posting
/// lists.
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
pub(super) const WAND_POSTINGS_BUDGET: u64 = 20_000;
/// With fewer terms walked, the candidates miss more of the hits (95.1% kept with 1, 96.0% with
/// 2, 97.8% with 3) for a p99 only about 40 µs lower.
const WAND_MIN_TERMS: usize = 3;

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
pub(super) fn query_terms(view: &View, query: &str) -> tantivy::Result<Vec<(String, u64)>> {
    let tokens = analyze_with_spans(query);
    let mut doc_freqs: HashMap<&str, u64> = HashMap::with_capacity(tokens.len());
    for (term, _) in &tokens {
        if let Entry::Vacant(entry) = doc_freqs.entry(term) {
            entry.insert(view.doc_freq(term)?);
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
    let n_docs = view.num_docs();
    if n_docs >= COMMON_TERM_MIN_DOCS {
        let n_rarer_than = |share: f64| {
            let from = (n_docs as f64 * share) as u64;
            by_doc_freq.iter().filter(|(doc_freq, _)| *doc_freq < from).count()
        };
        let n_rare = n_rarer_than(FREQUENT_TERM_SHARE);
        let n_kept = if n_rare >= FREQUENT_TERM_MIN_RARER { n_rare } else { n_rarer_than(COMMON_TERM_SHARE).max(1) };
        by_doc_freq.truncate(n_kept);
    }
    by_doc_freq.truncate(MAX_QUERY_TERMS);
    Ok(by_doc_freq.into_iter().map(|(doc_freq, term)| (term.to_owned(), doc_freq)).collect())
}

/// For each token, whether another token's range strictly contains its range: whether it is a
/// part of a longer token (see [`query_terms`]).
pub(super) fn covered_tokens(tokens: &[(&str, Range<usize>)]) -> Vec<bool> {
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

/// How many of `terms` (rarest first) block-max WAND walks: see [`WAND_POSTINGS_BUDGET`]
/// (`wand_postings_budget`, which tests lower).
pub(super) fn n_walked(terms: &[(String, u64)], wand_postings_budget: u64) -> usize {
    let mut postings = 0u64;
    let mut n_walked = 0;
    for (_, doc_freq) in terms {
        postings = postings.saturating_add(*doc_freq);
        if n_walked >= WAND_MIN_TERMS && postings > wand_postings_budget {
            break;
        }
        n_walked += 1;
    }
    n_walked
}

/// Any of `terms` in any text field, each field with its boost.
pub(super) fn text_query(fields: &Fields, terms: &[(String, u64)]) -> BooleanQuery {
    let mut text_clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for (term, _) in terms {
        for (field, boost) in fields.text_fields_with_boosts() {
            let term_query = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
            text_clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(term_query), boost))));
        }
    }
    BooleanQuery::new(text_clauses)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
