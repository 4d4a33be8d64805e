//! Recent request latencies and the last error, for `status`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How many recent requests of each kind the latency figures cover.
const WINDOW: usize = 1024;

/// A sliding window of request durations.
#[derive(Default)]
pub struct LatencyWindow {
    samples: Mutex<(VecDeque<Duration>, u64)>,
}

/// Percentiles of a latency window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LatencyFigures {
    /// Requests seen since the daemon started.
    pub count: u64,
    pub p50: Duration,
    pub p99: Duration,
}

impl LatencyWindow {
    pub fn record(&self, elapsed: Duration) {
        let mut guard = self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (samples, count) = &mut *guard;
        if samples.len() == WINDOW {
            samples.pop_front();
        }
        samples.push_back(elapsed);
        *count += 1;
    }

    pub fn figures(&self) -> LatencyFigures {
        let guard = self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (samples, count) = &*guard;
        let mut sorted: Vec<Duration> = samples.iter().copied().collect();
        sorted.sort_unstable();
        LatencyFigures { count: *count, p50: percentile(&sorted, 0.50), p99: percentile(&sorted, 0.99) }
    }
}

/// The nearest-rank percentile of sorted samples; zero when there are none.
pub fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64) * fraction).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The most recent internal error, shown by `status` so a user sees why something failed.
#[derive(Default)]
pub struct LastError {
    inner: Mutex<Option<(SystemTime, String)>>,
}

impl LastError {
    pub fn set(&self, message: String) {
        *self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((SystemTime::now(), message));
    }

    pub fn get(&self) -> Option<(SystemTime, String)> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let window = LatencyWindow::default();
        for ms in 1..=100 {
            window.record(Duration::from_millis(ms));
        }
        let figures = window.figures();
        assert_eq!(figures.count, 100);
        assert_eq!(figures.p50, Duration::from_millis(50));
        assert_eq!(figures.p99, Duration::from_millis(99));
        assert_eq!(LatencyWindow::default().figures().p99, Duration::ZERO);
    }
}
