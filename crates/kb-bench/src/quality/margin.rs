//! The hybrid's margin over a single retriever, question by question, with a 95% interval from
//! a paired bootstrap: whether a difference is more than the luck of the questions.

use std::collections::HashSet;

use serde::Serialize;

use super::metrics::{QuestionScores, Ranking};

/// A difference of means over the questions with its 95% interval.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Interval {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

/// How far the hybrid stands above one single retriever, question by question: whether a
/// difference is more than the luck of which questions a set happens to have.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Margin {
    pub recall_at_5: Interval,
    pub mrr_at_10: Interval,
}

/// Resamples of the paired bootstrap; the seed is fixed so that a report can be reproduced.
const BOOTSTRAP_RESAMPLES: usize = 2_000;
const BOOTSTRAP_SEED: u64 = 0x4b48_424f_4f54;

impl Margin {
    /// `better − other` at Recall@5 and MRR@10, each with a 95% percentile interval from a
    /// paired bootstrap over the questions (the same resampled questions for both measures).
    pub(super) fn of(better: &[Ranking<'_>], other: &[Ranking<'_>], relevant: &[HashSet<&str>]) -> Margin {
        let differences: Vec<(f64, f64)> = better
            .iter()
            .zip(other)
            .zip(relevant)
            .map(|((better, other), relevant)| {
                let (better, other) = (QuestionScores::of(better, relevant), QuestionScores::of(other, relevant));
                (better.recall[1] - other.recall[1], better.reciprocal_rank - other.reciprocal_rank)
            })
            .collect();
        let n = differences.len();
        let mean = |pick: fn(&(f64, f64)) -> f64| differences.iter().map(pick).sum::<f64>() / n.max(1) as f64;
        let mut resampled: [Vec<f64>; 2] =
            [Vec::with_capacity(BOOTSTRAP_RESAMPLES), Vec::with_capacity(BOOTSTRAP_RESAMPLES)];
        if n > 0 {
            let mut rng = crate::generate::Rng::new(BOOTSTRAP_SEED);
            for _ in 0..BOOTSTRAP_RESAMPLES {
                let (mut recall, mut mrr) = (0.0, 0.0);
                for _ in 0..n {
                    let (recall_difference, mrr_difference) = differences[(rng.next_u64() % n as u64) as usize];
                    recall += recall_difference;
                    mrr += mrr_difference;
                }
                resampled[0].push(recall / n as f64);
                resampled[1].push(mrr / n as f64);
            }
        }
        let interval = |mean: f64, samples: &mut Vec<f64>| {
            if samples.is_empty() {
                return Interval { mean, low: mean, high: mean };
            }
            samples.sort_by(f64::total_cmp);
            let at = |share: f64| samples[((samples.len() - 1) as f64 * share).round() as usize];
            Interval { mean, low: at(0.025), high: at(0.975) }
        };
        let [recall_samples, mrr_samples] = &mut resampled;
        Margin {
            recall_at_5: interval(mean(|difference| difference.0), recall_samples),
            mrr_at_10: interval(mean(|difference| difference.1), mrr_samples),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_of_a_ranking_over_another_comes_with_its_interval() {
        let relevant: Vec<HashSet<&str>> = (0..200).map(|_| ["a"].into()).collect();
        let first: Vec<Ranking<'_>> = (0..200).map(|_| vec![vec!["a"]]).collect();
        let sixth: Vec<Ranking<'_>> =
            (0..200).map(|_| vec![vec!["x"]; 5].into_iter().chain([vec!["a"]]).collect()).collect();
        // Identical rankings: no difference, and no doubt about it.
        let same = Margin::of(&first, &first, &relevant);
        assert_eq!((same.recall_at_5.low, same.recall_at_5.mean, same.recall_at_5.high), (0.0, 0.0, 0.0));
        // Always first against always sixth: +1 at R@5 and +5/6 at MRR@10 on every question.
        let always = Margin::of(&first, &sixth, &relevant);
        assert_eq!(always.recall_at_5.low, 1.0);
        assert!((always.mrr_at_10.mean - 5.0 / 6.0).abs() < 1e-9);
        // One question in 200 better, one worse: a difference of 0 that could go either way.
        let mut mixed = first.clone();
        mixed[0] = sixth[0].clone();
        let mut other = first.clone();
        other[1] = sixth[1].clone();
        let noise = Margin::of(&mixed, &other, &relevant);
        assert_eq!(noise.recall_at_5.mean, 0.0);
        assert!(noise.recall_at_5.low < 0.0 && noise.recall_at_5.high > 0.0, "{noise:?}");
    }
}
