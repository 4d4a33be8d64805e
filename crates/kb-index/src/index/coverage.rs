//! How much of the query each hit holds: its coverage (the idf-weighted share of the query's
//! terms), and which hits share more than function words with it. Both seek the terms' posting
//! lists to the committed hits, never walk them, and look staged hits up in the overlay.

use std::collections::{HashMap, HashSet};

use tantivy::query::{EnableScoring, Weight};
use tantivy::{DocAddress, Score};

use super::Evidence;
use super::query::{covered_tokens, text_query};
use super::view::{Found, View};
use crate::analyzer::{analyze_with_spans, is_framing_word, is_stop_word};
use crate::schema::Fields;

/// For each of `top`, its [`coverage`] of `terms` and its [`evidence`] for `query`: what a hit
/// carries.
pub(super) fn coverage_and_evidence(
    view: &View,
    fields: &Fields,
    query: &str,
    terms: &[(String, u64)],
    top: &[(Score, Found)],
) -> tantivy::Result<(Vec<f32>, Vec<Evidence>)> {
    Ok((coverage(view, fields, terms, top)?, evidence(view, fields, query, top)?))
}

/// For each of `addresses`, the idf-weighted share of `terms` it has (see
/// [`Hit::coverage`](super::Hit::coverage)).
fn coverage(
    view: &View,
    fields: &Fields,
    terms: &[(String, u64)],
    addresses: &[(Score, Found)],
) -> tantivy::Result<Vec<f32>> {
    let n_docs = view.num_docs();
    // Lucene's idf, as tantivy's BM25 has it; a term's count over all text fields can
    // exceed the number of documents.
    let idf = |doc_freq: u64| {
        let doc_freq = doc_freq.min(n_docs) as f32;
        (1.0 + (n_docs as f32 - doc_freq + 0.5) / (doc_freq + 0.5)).ln()
    };
    let total: f32 = terms.iter().map(|(_, doc_freq)| idf(*doc_freq)).sum();
    let mut held: HashMap<Found, f32> = HashMap::with_capacity(addresses.len());
    if total > 0.0 {
        let in_order = in_doc_order(addresses);
        for term in terms {
            let weight = idf(term.1) / total;
            for address in holding(view, fields, std::slice::from_ref(term), &in_order)? {
                *held.entry(address).or_default() += weight;
            }
        }
    }
    Ok(addresses.iter().map(|(_, address)| held.get(address).copied().unwrap_or(0.0).min(1.0)).collect())
}

/// For each of `addresses`, what it holds of `query`'s content words ([`Evidence`]): the words
/// are the query's analyzed tokens that are not function or framing words
/// (`analyzer::is_framing_word`: "how do I") and not part of a longer token of the query, each
/// weighted by its idf, a word no document has as the rarest word there is.
fn evidence(
    view: &View,
    fields: &Fields,
    query: &str,
    addresses: &[(Score, Found)],
) -> tantivy::Result<Vec<Evidence>> {
    let tokens = analyze_with_spans(query);
    let spans: Vec<(&str, std::ops::Range<usize>)> =
        tokens.iter().map(|(term, span)| (term.as_str(), span.clone())).collect();
    let covered = covered_tokens(&spans);
    let mut words: Vec<&str> = spans
        .iter()
        .zip(&covered)
        .filter(|((term, _), is_covered)| !**is_covered && !is_framing_word(term))
        .map(|((term, _), _)| *term)
        .collect();
    words.sort_unstable();
    words.dedup();
    let n_docs = view.num_docs();
    // A word no document has weighs as the rarest one that some document has: in a small store
    // idf's weight for an unseen word is several times any other (4.8 times in a store of one),
    // and a prompt's framing words ("how do I") would outweigh all that a hit holds.
    let idf = |doc_freq: u64| {
        let doc_freq = doc_freq.clamp(1, n_docs.max(1)) as f32;
        (1.0 + (n_docs as f32 - doc_freq + 0.5) / (doc_freq + 0.5)).ln()
    };
    let mut weighted = Vec::with_capacity(words.len());
    for word in words {
        weighted.push((word.to_owned(), view.doc_freq(word)?));
    }
    let total: f32 = weighted.iter().map(|(_, doc_freq)| idf(*doc_freq)).sum();
    let mut held: HashMap<Found, Evidence> = HashMap::with_capacity(addresses.len());
    if total > 0.0 {
        let in_order = in_doc_order(addresses);
        for word in weighted.iter().filter(|(_, doc_freq)| *doc_freq > 0) {
            let weight = idf(word.1) / total;
            for address in holding(view, fields, std::slice::from_ref(word), &in_order)? {
                let evidence = held.entry(address).or_default();
                evidence.share += weight;
                evidence.words += 1;
            }
        }
    }
    Ok(addresses
        .iter()
        .map(|(_, address)| {
            let evidence = held.get(address).copied().unwrap_or_default();
            Evidence { share: evidence.share.min(1.0), ..evidence }
        })
        .collect())
}

/// `addresses` without the documents that share only function words with `query` (`for`,
/// `the`, `的`: `analyzer::is_stop_word`), when the query has other words. They still score
/// (they tell "how to run tests" from "tests to run"), but alone they match nearly every
/// text: in a small store a document sharing only "for" and "with" with a query was returned
/// as relevant. Measured on the quality sets: no change in ranking (leaving them out of the
/// query instead cost half a point of English Recall@5).
pub(super) fn with_a_content_word(
    view: &View,
    fields: &Fields,
    query: &str,
    addresses: Vec<(Score, Found)>,
) -> tantivy::Result<Vec<(Score, Found)>> {
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
        let doc_freq = view.doc_freq(&term)?;
        if doc_freq > 0 {
            present.push((term, doc_freq));
        }
    }
    if present.is_empty() {
        return Ok(Vec::new());
    }
    let with_content: HashSet<Found> =
        holding(view, fields, &present, &in_doc_order(&addresses))?.into_iter().collect();
    Ok(addresses.into_iter().filter(|(_, address)| with_content.contains(address)).collect())
}

/// Those of `found` (in document order, each once: [`in_doc_order`]) that have any of `terms`
/// in any text field: for committed documents each term's posting lists are sought to them,
/// never walked; staged ones are looked up in the overlay.
fn holding(view: &View, fields: &Fields, terms: &[(String, u64)], found: &[Found]) -> tantivy::Result<Vec<Found>> {
    let committed: Vec<DocAddress> = found
        .iter()
        .filter_map(|found| match found {
            Found::Committed(address) => Some(*address),
            Found::Staged(_) => None,
        })
        .collect();
    let mut holding = Vec::with_capacity(found.len());
    if !committed.is_empty() {
        let weights: Vec<Box<dyn Weight>> = text_query(fields, terms)
            .clauses()
            .iter()
            .map(|(_, clause)| clause.weight(EnableScoring::disabled_from_searcher(&view.searcher)))
            .collect::<tantivy::Result<_>>()?;
        for segment in committed.chunk_by(|one, other| one.segment_ord == other.segment_ord) {
            let reader = view.searcher.segment_reader(segment[0].segment_ord);
            let mut has = vec![false; segment.len()];
            for weight in &weights {
                let mut scorer = weight.scorer(reader, 1.0)?;
                for (address, has) in segment.iter().zip(&mut has) {
                    // `seek` must not go backwards; a scorer already past this document lacks it.
                    let doc = if scorer.doc() < address.doc_id { scorer.seek(address.doc_id) } else { scorer.doc() };
                    *has |= doc == address.doc_id;
                }
            }
            holding
                .extend(segment.iter().zip(has).filter(|(_, has)| *has).map(|(address, _)| Found::Committed(*address)));
        }
    }
    for found in found {
        if let Found::Staged(key) = found
            && view.staged(*key).is_some_and(|doc| terms.iter().any(|(term, _)| doc.has(term)))
        {
            holding.push(*found);
        }
    }
    Ok(holding)
}

/// The places of `hits` sorted into document order (committed ones first), each once, as
/// posting lists are sought.
fn in_doc_order(hits: &[(Score, Found)]) -> Vec<Found> {
    let mut found: Vec<Found> = hits.iter().map(|(_, found)| *found).collect();
    found.sort_unstable();
    found.dedup();
    found
}
