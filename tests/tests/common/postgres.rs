//! The hub tests' PostgreSQL (`kb_hub::testing`), and waiting for a condition.

use std::time::{Duration, Instant};

// Used by the hub tests only; every test binary compiles this module.
#[allow(unused_imports)]
pub use kb_hub::testing::{ADMIN_PASSWORD, TestPostgres, make_ca};

/// Polls `check` every 50 ms until it is true or `timeout` passes; how long it took.
pub fn within(timeout: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if check() {
            return Some(started.elapsed());
        }
        if started.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
