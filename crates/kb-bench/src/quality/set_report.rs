//! What `kb-bench quality` measured, per set and in all, and the text report of a set.

use serde::Serialize;

use super::GOAL_RECALL_AT_5;
use super::margin::{Interval, Margin};
use super::metrics::RetrievalScores;
use crate::report;

#[derive(Debug, Clone, Serialize)]
pub struct QualityReport {
    pub data_dir: String,
    /// The embedding model the daemon loaded, if any.
    pub model: Option<String>,
    pub sets: Vec<SetReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetReport {
    pub name: String,
    pub n_documents: usize,
    pub n_queries: usize,
    /// Questions whose text is blank in the data: not sent (the daemon refuses an empty query),
    /// counted as answered with nothing, for every engine.
    pub n_blank_queries: usize,
    /// Corpus rows the daemon merged into another (identical or near-identical text) or
    /// refused, or held for review (suspected prompt injection: never returned by search).
    pub merged_documents: usize,
    pub rejected_documents: usize,
    pub held_documents: u64,
    /// BM25 alone, over the socket.
    pub knowhub: RetrievalScores,
    /// Vectors alone and the shipped hybrid, over the socket (with a model).
    pub vector: Option<RetrievalScores>,
    pub hybrid: Option<RetrievalScores>,
    /// Other fusions of the same BM25 and vector candidates, computed here.
    pub fusions: Vec<(String, RetrievalScores)>,
    pub fts5: RetrievalScores,
    /// Okapi BM25 over jieba's plain words (`okapi.rs`): the baseline KnowHub's BM25 must match.
    pub okapi: RetrievalScores,
    /// Recall@5 ≥ 0.90, the goal on `cmrc-trial-chunks`.
    pub goal_recall_at_5: Option<bool>,
    /// Hybrid at least as good as the better single retriever at Recall@5 and MRR@10.
    pub hybrid_not_worse: Option<bool>,
    /// The hybrid's margin over BM25 and over the vectors, question by question.
    pub hybrid_over_bm25: Option<Margin>,
    pub hybrid_over_vectors: Option<Margin>,
}

pub(super) fn print_set(set: &SetReport) {
    println!();
    println!(
        "== {}: {} documents, {} questions ==",
        set.name,
        report::thousands(set.n_documents as u64),
        report::thousands(set.n_queries as u64)
    );
    println!("  {:<44} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10}", "", "R@1", "R@5", "R@10", "MRR@10", "p50", "p99");
    let line = |label: &str, scores: &RetrievalScores, timed: bool| {
        let (p50, p99) = if timed {
            (report::micros(scores.search.p50_us), report::micros(scores.search.p99_us))
        } else {
            ("".to_owned(), "".to_owned())
        };
        println!(
            "  {label:<44} {:>8.3} {:>8.3} {:>9.3} {:>8.3} {p50:>10} {p99:>10}",
            scores.recall_at_1, scores.recall_at_5, scores.recall_at_10, scores.mrr_at_10
        );
    };
    line("KnowHub BM25 (socket)", &set.knowhub, true);
    if let Some(vector) = &set.vector {
        line("KnowHub vectors (socket)", vector, true);
    }
    if let Some(hybrid) = &set.hybrid {
        line("KnowHub hybrid, as shipped (socket)", hybrid, true);
    }
    for (label, scores) in &set.fusions {
        line(&format!("  alt: {label}"), scores, false);
    }
    line("SQLite FTS5 (in-process)", &set.fts5, true);
    line("Okapi BM25, plain jieba words (in-process)", &set.okapi, true);
    println!(
        "  documents merged as duplicates: {}, rejected: {}, held for review: {}; blank questions (counted as misses): {}",
        set.merged_documents, set.rejected_documents, set.held_documents, set.n_blank_queries
    );
    if let Some(passed) = set.goal_recall_at_5 {
        println!(
            "  goal: Recall@5 >= {GOAL_RECALL_AT_5:.2} with BM25 alone: {} ({:.3})",
            report::yes_no(passed),
            set.knowhub.recall_at_5
        );
    }
    for (label, margin) in [("BM25", &set.hybrid_over_bm25), ("vectors", &set.hybrid_over_vectors)] {
        if let Some(margin) = margin {
            let points = |interval: &Interval| {
                format!("{:+.1} [{:+.1}, {:+.1}]", interval.mean * 100.0, interval.low * 100.0, interval.high * 100.0)
            };
            println!(
                "  hybrid - {label:<8} points, 95% paired bootstrap: R@5 {}, MRR@10 {}",
                points(&margin.recall_at_5),
                points(&margin.mrr_at_10)
            );
        }
    }
    if let Some(passed) = set.hybrid_not_worse {
        // A shortfall whose interval reaches above zero is one the questions cannot tell from none.
        let within_noise = [&set.hybrid_over_bm25, &set.hybrid_over_vectors]
            .into_iter()
            .flatten()
            .all(|margin| margin.recall_at_5.high > 0.0 && margin.mrr_at_10.high > 0.0);
        let verdict = match (passed, within_noise) {
            (true, _) => "yes",
            (false, true) => "no, by less than the questions can tell (every interval reaches above 0)",
            (false, false) => "NO",
        };
        println!("  goal: hybrid >= the better single retriever at Recall@5 and MRR@10: {verdict}");
    }
}
