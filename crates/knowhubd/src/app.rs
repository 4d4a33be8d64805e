//! What the protocol layer serves: the core engine and the services above it (hooks and
//! sessions, the extraction worker's state, the hub sync's state, the supervisor's registry).
//!
//! The engine knows none of these: services hold the engine, never the other way round.

use std::sync::Arc;
use std::time::Duration;

use kb_engine::Engine;

use crate::config::Config;
use crate::extraction::Extraction;
use crate::hooks::Hooks;
use crate::hub::HubSync;
use crate::identity::Identity;
use crate::supervisor::Health;
use crate::writes::WritePool;

/// Where the hooks' sessions are saved, in the data directory (see `hooks`).
pub const SESSIONS_FILE: &str = "sessions.json";

/// How long a service may be failing or degraded before `status` says the daemon is unhealthy
/// (and `kbctl status` exits non-zero): a restart or a reconnect within it is not a fault.
pub const UNHEALTHY_GRACE: Duration = Duration::from_secs(10);

pub struct App {
    pub engine: Arc<Engine>,
    /// The daemon's whole configuration; the engine holds its own part.
    pub config: Config,
    pub hooks: Hooks,
    /// The extraction worker's wake-ups and state (`extraction.rs`).
    pub extraction: Extraction,
    /// The team hub's sync thread's state and wake-ups (`hub.rs`).
    pub hub: HubSync,
    /// Every background service's state, reported by the services themselves.
    pub health: Arc<Health>,
    /// The key that answers `daemon.prove`.
    pub identity: Identity,
    /// Where the write methods run, below the searches (`writes.rs`).
    pub writes: WritePool,
    /// Set when the daemon begins to stop: requests that wait on a service give up.
    stopping: std::sync::atomic::AtomicBool,
}

impl App {
    /// The services' state around `engine`, with the sessions saved at the last stop.
    pub fn new(engine: Arc<Engine>, config: Config, identity: Identity) -> Arc<App> {
        let hooks = Hooks::load(&engine.paths.home.join(SESSIONS_FILE));
        Arc::new(App {
            engine,
            hooks,
            extraction: Extraction::new(config.extraction.clone()),
            hub: HubSync::new(config.hub.clone()),
            config,
            health: Arc::new(Health::default()),
            identity,
            writes: WritePool::start(),
            stopping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The daemon is stopping: a request waiting for a service (`hub.sync`) answers now
    /// rather than holding the stop up.
    pub fn begin_stopping(&self) {
        self.stopping.store(true, std::sync::atomic::Ordering::Relaxed);
        self.hub.wake_waiters();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes what is kept in memory between flushes: recall counters and changed sessions.
    pub fn flush(&self) -> anyhow::Result<()> {
        let recalls =
            self.engine.flush_recalls().map_err(|error| anyhow::anyhow!("cannot store recall counters: {error}"));
        let path = self.engine.paths.home.join(SESSIONS_FILE);
        let sessions = self
            .hooks
            .save(&path)
            .map_err(|error| anyhow::anyhow!("cannot save the sessions to {}: {error}", path.display()));
        recalls.and(sessions)
    }
}
