//! Latency summaries: percentiles by the nearest-rank method, in microseconds.

use std::time::Duration;

use serde::Serialize;

/// Percentiles and mean of a set of latencies, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySummary {
    pub n_samples: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl LatencySummary {
    /// Summarizes `samples`; all figures are zero when there are none.
    pub fn of(samples: &[Duration]) -> LatencySummary {
        let mut micros: Vec<f64> = samples.iter().map(|sample| sample.as_secs_f64() * 1e6).collect();
        micros.sort_by(f64::total_cmp);
        let mean_us = if micros.is_empty() { 0.0 } else { micros.iter().sum::<f64>() / micros.len() as f64 };
        LatencySummary {
            n_samples: micros.len(),
            p50_us: percentile(&micros, 50.0),
            p90_us: percentile(&micros, 90.0),
            p99_us: percentile(&micros, 99.0),
            max_us: micros.last().copied().unwrap_or(0.0),
            mean_us,
        }
    }
}

/// The `rank`-th percentile of `sorted` (ascending) by the nearest-rank method: the smallest
/// value such that at least `rank` percent of the values are at or below it. Zero when empty.
pub fn percentile(sorted: &[f64], rank: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let position = (rank / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[position.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), 50.0);
        assert_eq!(percentile(&values, 99.0), 99.0);
        assert_eq!(percentile(&values, 100.0), 100.0);
        assert_eq!(percentile(&values, 0.0), 1.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        // With 1,000 samples p99 is the 990th value: the 10 slowest are above it.
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&values, 99.0), 990.0);
    }

    #[test]
    fn summary_of_durations() {
        let samples: Vec<Duration> = [300, 100, 200].iter().map(|&us| Duration::from_micros(us)).collect();
        let summary = LatencySummary::of(&samples);
        assert_eq!(summary.n_samples, 3);
        assert_eq!(summary.p50_us, 200.0);
        assert_eq!(summary.max_us, 300.0);
        assert!((summary.mean_us - 200.0).abs() < 1e-9);
    }
}
