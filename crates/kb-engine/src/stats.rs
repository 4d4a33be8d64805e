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

/// What an internal error came from; each cause's error is cleared when that cause heals, so
/// `status` never shows an error whose cause is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The search index could not take the store's changes (cleared when it is ready again).
    Index,
    /// Index commits could not be synced to disk (cleared at the next sync that works).
    IndexSync,
    /// The vector index could not follow the store (cleared at the next sync that works).
    Vectors,
    /// The embedding model failed a batch or the stored vectors could not be loaded (cleared
    /// when a batch is embedded).
    Embedder,
    /// The model refuses an experience's text; that experience is searched by its words. Kept:
    /// its cause stays until the text changes or the model does.
    Refused,
    /// A conversation could not be queued for extraction (cleared at the next one queued).
    Extraction,
    /// A request failed inside the daemon, a full disk say (cleared by the next write that
    /// succeeds: the store works again).
    Request,
}

/// The most recent internal error of each cause, shown by `status` so a user sees why
/// something failed, and only while it still does.
#[derive(Default)]
pub struct LastError {
    inner: Mutex<Vec<(Cause, SystemTime, String)>>,
}

impl LastError {
    pub fn set(&self, cause: Cause, message: String) {
        let mut errors = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        errors.retain(|(held, _, _)| *held != cause);
        errors.push((cause, SystemTime::now(), message));
    }

    /// The cause healed: its error is no longer shown.
    pub fn clear(&self, cause: Cause) {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|(held, _, _)| *held != cause);
    }

    /// The most recent error whose cause has not healed.
    pub fn get(&self) -> Option<(SystemTime, String)> {
        let errors = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        errors.iter().max_by_key(|(_, at, _)| *at).map(|(_, at, message)| (*at, message.clone()))
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

    #[test]
    fn an_error_is_shown_until_its_cause_heals_and_others_stay() {
        let errors = LastError::default();
        errors.set(Cause::Request, "internal error: database or disk is full".to_owned());
        std::thread::sleep(Duration::from_millis(2));
        errors.set(Cause::Index, "the index cannot commit".to_owned());
        assert_eq!(errors.get().map(|(_, message)| message).as_deref(), Some("the index cannot commit"));
        errors.clear(Cause::Index);
        assert_eq!(
            errors.get().map(|(_, message)| message).as_deref(),
            Some("internal error: database or disk is full")
        );
        errors.clear(Cause::Request);
        assert_eq!(errors.get(), None);
    }
}
