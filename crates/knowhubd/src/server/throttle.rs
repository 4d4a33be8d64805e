//! Rate limits for warnings that a flood repeats (a refused connection, a full descriptor
//! table): the first is logged, then at most one per interval, saying how many were dropped.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One kind of warning, logged at most once per `interval`.
///
/// Without it a client opening connections in a loop made the daemon log ~20 warnings a
/// second (issue 14), burying everything else in the journal.
#[derive(Debug)]
pub struct Throttle {
    interval: Duration,
    state: Mutex<ThrottleState>,
}

#[derive(Debug, Default)]
struct ThrottleState {
    last_logged: Option<Instant>,
    suppressed: u64,
}

impl Throttle {
    pub const fn new(interval: Duration) -> Throttle {
        Throttle { interval, state: Mutex::new(ThrottleState { last_logged: None, suppressed: 0 }) }
    }

    /// Whether to log this occurrence now: `Some(n)` with the number suppressed since the last
    /// one logged, or `None` to drop it.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match state.last_logged {
            Some(last) if now.saturating_duration_since(last) < self.interval => {
                state.suppressed += 1;
                None
            }
            _ => {
                state.last_logged = Some(now);
                Some(std::mem::take(&mut state.suppressed))
            }
        }
    }
}

/// The suffix for a throttled warning: empty, or "; 41 more like this suppressed".
pub fn suppressed_note(suppressed: u64) -> String {
    if suppressed == 0 { String::new() } else { format!("; {suppressed} more like this suppressed") }
}

/// Logs a warning through `throttle`: `warn_throttled!(THROTTLE, "text {}", arg)`.
macro_rules! warn_throttled {
    ($throttle:expr, $($format:tt)+) => {
        if let Some(suppressed) = $throttle.allow() {
            tracing::warn!("{}{}", format_args!($($format)+), $crate::server::throttle::suppressed_note(suppressed));
        }
    };
}
pub(crate) use warn_throttled;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_logged_once_per_interval_with_a_count() {
        let throttle = Throttle::new(Duration::from_secs(10));
        let start = Instant::now();
        assert_eq!(throttle.allow_at(start), Some(0));
        for n in 1..=20 {
            assert_eq!(throttle.allow_at(start + Duration::from_millis(n * 50)), None);
        }
        assert_eq!(throttle.allow_at(start + Duration::from_secs(10)), Some(20));
        assert_eq!(throttle.allow_at(start + Duration::from_secs(11)), None);
        assert_eq!(suppressed_note(0), "");
        assert_eq!(suppressed_note(3), "; 3 more like this suppressed");
    }
}
