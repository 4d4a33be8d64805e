//! Retrieval scores of rankings against the relevant ids of each question: Recall@k and Hit@k
//! at each cut-off, and MRR@10.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;

use super::TOP_K;
use crate::stats::LatencySummary;

const CUTOFFS: [usize; 3] = [1, 5, 10];

/// A ranking: per rank, the corpus ids of the experience there (merged rows share one).
pub(super) type Ranking<'a> = Vec<Vec<&'a str>>;

#[derive(Debug, Clone, Serialize)]
pub struct RetrievalScores {
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub hit_at_1: f64,
    pub hit_at_5: f64,
    pub hit_at_10: f64,
    pub mrr_at_10: f64,
    pub search: LatencySummary,
}

impl RetrievalScores {
    /// Scores of `rankings` (per query, per rank, the corpus ids at that rank) against the
    /// relevant ids of each query. Recall@k is the share of a query's relevant ids found in
    /// its top k, averaged over queries; Hit@k the share of queries with any; MRR@10 the mean
    /// of 1 / the rank of the first relevant result (0 when none is in the top 10).
    pub(super) fn of(rankings: &[Vec<Vec<&str>>], relevant: &[HashSet<&str>], timings: &[Duration]) -> RetrievalScores {
        let n_queries = rankings.len().max(1) as f64;
        let mut recall = [0.0; CUTOFFS.len()];
        let mut hit = [0.0; CUTOFFS.len()];
        let mut reciprocal_rank_sum = 0.0;
        for (ranking, relevant) in rankings.iter().zip(relevant) {
            let question = QuestionScores::of(ranking, relevant);
            for slot in 0..CUTOFFS.len() {
                recall[slot] += question.recall[slot];
                hit[slot] += question.hit[slot];
            }
            reciprocal_rank_sum += question.reciprocal_rank;
        }
        RetrievalScores {
            recall_at_1: recall[0] / n_queries,
            recall_at_5: recall[1] / n_queries,
            recall_at_10: recall[2] / n_queries,
            hit_at_1: hit[0] / n_queries,
            hit_at_5: hit[1] / n_queries,
            hit_at_10: hit[2] / n_queries,
            mrr_at_10: reciprocal_rank_sum / n_queries,
            search: LatencySummary::of(timings),
        }
    }
}

/// One question's recall and hit at each of [`CUTOFFS`] and its reciprocal rank within
/// [`TOP_K`]; all 0 for a question without relevant documents.
pub(super) struct QuestionScores {
    pub(super) recall: [f64; CUTOFFS.len()],
    pub(super) hit: [f64; CUTOFFS.len()],
    pub(super) reciprocal_rank: f64,
}

impl QuestionScores {
    pub(super) fn of(ranking: &[Vec<&str>], relevant: &HashSet<&str>) -> QuestionScores {
        let mut scores =
            QuestionScores { recall: [0.0; CUTOFFS.len()], hit: [0.0; CUTOFFS.len()], reciprocal_rank: 0.0 };
        if relevant.is_empty() {
            return scores;
        }
        for (slot, &cutoff) in CUTOFFS.iter().enumerate() {
            let found: HashSet<&str> =
                ranking.iter().take(cutoff).flatten().copied().filter(|id| relevant.contains(id)).collect();
            scores.recall[slot] = found.len() as f64 / relevant.len() as f64;
            scores.hit[slot] = if found.is_empty() { 0.0 } else { 1.0 };
        }
        if let Some(position) = ranking.iter().take(TOP_K).position(|ids| ids.iter().any(|id| relevant.contains(id))) {
            scores.reciprocal_rank = 1.0 / (position + 1) as f64;
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_hit_and_mrr() {
        let relevant: Vec<HashSet<&str>> = vec![["a"].into(), ["b", "c"].into(), ["z"].into()];
        let rankings = vec![
            // "a" at rank 2.
            vec![vec!["x"], vec!["a"]],
            // "c" at rank 1 (merged with "y"), "b" at rank 7.
            vec![vec!["y", "c"], vec![], vec![], vec![], vec![], vec![], vec!["b"]],
            // Nothing relevant.
            vec![vec!["q"]],
        ];
        let scores = RetrievalScores::of(&rankings, &relevant, &[]);
        assert!((scores.recall_at_1 - (0.0 + 0.5 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.recall_at_5 - (1.0 + 0.5 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.recall_at_10 - (1.0 + 1.0 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.hit_at_1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((scores.hit_at_5 - 2.0 / 3.0).abs() < 1e-9);
        assert!((scores.mrr_at_10 - (0.5 + 1.0 + 0.0) / 3.0).abs() < 1e-9);
    }
}
