//! The team hub's sync thread: pushes the store's outbox to the team's PostgreSQL hub and
//! pulls the teammates' changes into the store, woken by `LISTEN/NOTIFY`, by local writes and
//! by `hub.sync`, with a periodic pull as the safety net. The hub being down, slow or refusing
//! never touches local submits and searches: they do not wait for this thread.

mod pull;
mod push;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use kb_hub::Skipped;
use kb_proto::wire;
use kb_store::Store;

use crate::config::HubConfig;
use crate::supervisor::Service;
use kb_engine::engine::Engine;

/// How long the thread waits for a notification before it looks at the outbox again: the
/// delay between a local write and its push.
const SLICE: Duration = Duration::from_millis(50);
/// The longest wait between two attempts to reach a hub that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The sync thread's settings and state, as `status` and `hub.sync` see it.
#[derive(Default)]
pub struct HubSync {
    /// `[hub]` of the daemon's config.
    pub config: HubConfig,
    /// Rounds asked for (`hub.sync`) and rounds finished, to wait for one.
    rounds: Mutex<(u64, u64)>,
    round_done: Condvar,
    state: Mutex<State>,
    pushed: AtomicU64,
    pulled: AtomicU64,
}

#[derive(Debug, Clone, Default)]
pub struct State {
    pub connection: &'static str,
    pub target: Option<String>,
    pub last_sync: Option<SystemTime>,
    pub last_error: Option<(SystemTime, String)>,
    pub behind: u64,
    /// When the sync thread started: a sync that never completed is stalled since then.
    pub started: Option<SystemTime>,
    /// The login the hub knows this daemon as.
    pub role: Option<String>,
    /// Rows of the team numbered out of sequence on the hub, at the last round: how many, and
    /// the first few.
    pub impossible: (u64, Vec<Skipped>),
}

impl HubSync {
    pub fn new(config: HubConfig) -> HubSync {
        HubSync { config, ..HubSync::default() }
    }

    /// Asks for a sync round now; returns the round to wait for.
    pub fn request(&self) -> u64 {
        let mut rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        rounds.0 += 1;
        let wanted = rounds.0;
        drop(rounds);
        self.round_done.notify_all();
        wanted
    }

    /// Waits until round `wanted` is finished, up to `timeout`; whether it is.
    pub fn wait_for(&self, wanted: u64, timeout: Duration) -> bool {
        let rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        let (rounds, _) = self
            .round_done
            .wait_timeout_while(rounds, timeout, |rounds| rounds.1 < wanted)
            .unwrap_or_else(PoisonError::into_inner);
        rounds.1 >= wanted
    }

    /// Wakes every `wait_for` so that it looks again (the daemon is stopping).
    pub fn wake_waiters(&self) {
        self.round_done.notify_all();
    }

    fn requested(&self) -> u64 {
        self.rounds.lock().unwrap_or_else(PoisonError::into_inner).0
    }

    fn finish(&self, round: u64) {
        let mut rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        rounds.1 = rounds.1.max(round);
        drop(rounds);
        self.round_done.notify_all();
    }

    /// Sleeps up to `timeout`, or until a round is asked for past `seen`.
    fn sleep(&self, timeout: Duration, seen: u64) {
        let rounds = self.rounds.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .round_done
            .wait_timeout_while(rounds, timeout, |rounds| rounds.0 <= seen)
            .unwrap_or_else(PoisonError::into_inner);
    }

    pub fn state(&self) -> State {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    fn count_pulled(&self, n: u64) {
        self.pulled.fetch_add(n, Ordering::Relaxed);
    }

    pub fn totals(&self) -> (u64, u64) {
        (self.pushed.load(Ordering::Relaxed), self.pulled.load(Ordering::Relaxed))
    }
}

/// The connection settings resolved from `[hub]`, with the password read.
struct Settings {
    options: kb_hub::ConnectOptions,
    team: String,
    config: HubConfig,
}

fn settings(config: &HubConfig) -> anyhow::Result<Option<Settings>> {
    let Some(url) = &config.url else { return Ok(None) };
    let password = match (&config.password_env, &config.password_file) {
        (Some(name), _) => Some(std::env::var(name).map_err(|_| {
            anyhow::anyhow!("hub.password_env names {name}, which is not set in the daemon's environment")
        })?),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| anyhow::anyhow!("cannot read hub.password_file {}: {error}", path.display()))?;
            Some(text.lines().next().unwrap_or("").to_owned())
        }
        (None, None) => None,
    };
    let options = kb_hub::ConnectOptions::parse(url, password.as_deref())?;
    let team = config.team.clone().unwrap_or_default();
    Ok(Some(Settings { options, team, config: config.clone() }))
}

/// The supervised service: keeps the store and the hub in sync until the daemon stops.
/// Returns at once when no hub is configured.
pub fn run(engine: &Engine, hub_sync: &HubSync, service: &Service) -> anyhow::Result<()> {
    let stop = service.stop_flag();
    let settings = match settings(&hub_sync.config) {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            service.off("no [hub] url is configured");
            return Ok(());
        }
        Err(error) => return idle_failing(hub_sync, service, format!("hub: {error:#}")),
    };
    hub_sync.update(|state| {
        state.connection = "connecting";
        state.target = Some(settings.options.target.clone());
        state.started = Some(SystemTime::now());
    });
    let prepared = (|| -> anyhow::Result<(String, Store)> {
        let mut store = engine.lock_writer();
        let machine = store.hub_machine()?;
        if settings.config.share {
            let queued = store.start_sharing()?;
            if queued > 0 {
                tracing::info!(queued, "hub: sharing turned on; the experiences held so far are queued for the team");
            }
        }
        drop(store);
        Ok((machine, Store::open_reader(&engine.paths.database)?))
    })();
    let (machine, reader) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            return idle_failing(hub_sync, service, format!("hub: cannot prepare the store for sharing: {error:#}"));
        }
    };
    let mut hub: Option<kb_hub::Hub> = None;
    let mut backoff = Duration::from_secs(1);
    let mut writes = engine.watch_writes();
    while !stop.load(Ordering::Relaxed) {
        service.checkpoint()?;
        let round = hub_sync.requested();
        let connected = match hub.as_mut() {
            Some(hub) => hub,
            None => match kb_hub::Hub::open(&settings.options, &settings.team, &machine) {
                Ok(opened) => {
                    tracing::info!(target = %settings.options.target, team = %settings.team, role = %opened.role(), "hub: connected");
                    let role = opened.role().to_owned();
                    hub_sync.update(|state| state.role = Some(role));
                    backoff = Duration::from_secs(1);
                    hub.insert(opened)
                }
                Err(error) => {
                    failed(hub_sync, service, format!("hub: {error}"));
                    hub_sync.finish(round);
                    hub_sync.sleep(backoff, round);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            },
        };
        let result = sync_round(&mut Round {
            engine,
            hub_sync,
            hub: connected,
            reader: &reader,
            settings: &settings,
            machine: &machine,
            stop,
        });
        match result {
            Ok(behind) => {
                hub_sync.update(|state| {
                    state.connection = "connected";
                    state.last_sync = Some(SystemTime::now());
                    state.behind = behind;
                    state.last_error = None;
                });
                service.healthy();
            }
            Err(error) => {
                failed(hub_sync, service, format!("hub: {error:#}"));
                if connected.is_closed() {
                    hub = None;
                }
                hub_sync.finish(round);
                hub_sync.sleep(backoff, round);
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        }
        hub_sync.finish(round);
        // Wait for a teammate's change, a local write, a `hub.sync`, or the poll interval.
        let poll = Duration::from_secs(settings.config.poll_seconds);
        let started = Instant::now();
        let Some(connected) = hub.as_mut() else { continue };
        while !stop.load(Ordering::Relaxed) && started.elapsed() < poll && hub_sync.requested() == round {
            // A local write may have queued something to share: the engine says when it wrote,
            // so the outbox is read only then, not every slice.
            if settings.config.share && writes.has_changed().unwrap_or(false) {
                writes.mark_unchanged();
                if reader.hub_outbox(1).is_ok_and(|waiting| !waiting.is_empty()) {
                    break;
                }
            }
            match connected.wait(SLICE) {
                Ok(true) => break,
                Ok(false) => {}
                Err(error) => {
                    failed(hub_sync, service, format!("hub: {error}"));
                    if connected.is_closed() {
                        hub = None;
                    }
                    break;
                }
            }
        }
    }
    Ok(())
}

/// A configuration that cannot work (a password variable not set, say): says so in `status`
/// and answers every `hub.sync` with it until the daemon stops.
fn idle_failing(hub_sync: &HubSync, service: &Service, message: String) -> anyhow::Result<()> {
    tracing::error!("{message}");
    service.degraded(message.clone());
    hub_sync.update(|state| {
        state.connection = "error";
        state.last_error = Some((SystemTime::now(), message));
    });
    while !service.stopping() {
        service.checkpoint()?;
        let round = hub_sync.requested();
        hub_sync.finish(round);
        hub_sync.sleep(Duration::from_secs(1), round);
    }
    Ok(())
}

fn failed(hub_sync: &HubSync, service: &Service, message: String) {
    tracing::warn!("{message}");
    service.degraded(message.clone());
    hub_sync.update(|state| {
        state.connection = "error";
        state.last_error = Some((SystemTime::now(), message));
    });
}

/// What a round works with: the engine and the sync state, the connected hub, the hub
/// thread's own reader of the store, the settings, this store's machine id and the stop flag.
struct Round<'a> {
    engine: &'a Engine,
    hub_sync: &'a HubSync,
    hub: &'a mut kb_hub::Hub,
    reader: &'a Store,
    settings: &'a Settings,
    machine: &'a str,
    stop: &'a AtomicBool,
}

/// One round: membership checked, the whole outbox pushed, then every change of the team
/// pulled. Returns how many teammates' changes are still behind.
fn sync_round(round: &mut Round<'_>) -> anyhow::Result<u64> {
    round.hub.check_member()?;
    if round.settings.config.share {
        push::push(round)?;
    }
    pull::pull(round)?;
    let impossible = round.hub.impossible()?;
    if impossible.0 > 0 {
        tracing::warn!(rows = impossible.0, "hub: rows numbered out of sequence on the hub are skipped");
    }
    round.hub_sync.update(|state| state.impossible = impossible);
    let behind = round.hub.behind(round.reader.hub_pulled_seq()?)?;
    Ok(behind.max(0) as u64)
}

/// How long without a completed round before `status` calls the sync stalled: a few poll
/// intervals, and never less than 10 s.
fn stall_after(config: &HubConfig) -> Duration {
    Duration::from_secs((config.poll_seconds * 3).max(10))
}

/// The newest skipped rows `status` lists.
const SKIPPED_SHOWN: usize = 10;

/// The hub's part of `status`.
pub fn status(engine: &Engine, hub_sync: &HubSync) -> Result<wire::HubStatus, kb_engine::engine::EngineError> {
    let config = &hub_sync.config;
    let state = hub_sync.state();
    let reader = engine.reader();
    let depth = reader.hub_outbox_depth()?;
    let (pushed, pulled) = hub_sync.totals();
    let at = |time: SystemTime| humantime::format_rfc3339_seconds(time).to_string();
    let at_ms = |ms: i64| at(SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64));
    let on = config.url.is_some();
    // Stalled: nothing completed for a few poll intervals (a hub that hangs, a lock held, a
    // thread that died), said with since when.
    let stalled_since = (on && !state.connection.is_empty())
        .then(|| state.last_sync.or(state.started))
        .flatten()
        .filter(|since| since.elapsed().is_ok_and(|elapsed| elapsed > stall_after(config)));
    let (skipped_total, skipped) = reader.hub_skipped(SKIPPED_SHOWN)?;
    let mut skipped_recent: Vec<wire::HubSkipped> = state
        .impossible
        .1
        .iter()
        .map(|skip| wire::HubSkipped {
            hub_seq: skip.hub_seq,
            author: skip.author.clone(),
            id: skip.id.clone(),
            reason: skip.reason.clone(),
            at: None,
        })
        .collect();
    skipped_recent.extend(skipped.into_iter().map(|skip| wire::HubSkipped {
        hub_seq: skip.hub_seq,
        author: skip.author,
        id: skip.hub_id,
        reason: skip.reason,
        at: Some(at_ms(skip.at_ms)),
    }));
    Ok(wire::HubStatus {
        state: if !on {
            "off"
        } else if state.connection.is_empty() {
            "connecting"
        } else {
            state.connection
        }
        .to_owned(),
        target: state.target,
        team: config.team.clone().filter(|_| on),
        tls: config
            .url
            .as_deref()
            .and_then(|url| kb_hub::ConnectOptions::parse(url, None).ok())
            .map(|options| options.ssl_mode.as_str().to_owned()),
        last_sync: state.last_sync.map(at),
        lag_s: state.last_sync.and_then(|time| time.elapsed().ok()).map(|elapsed| elapsed.as_secs()),
        outbox: depth.waiting,
        refused: depth.refused,
        behind: state.behind,
        pulled_seq: reader.hub_pulled_seq()?,
        pushed,
        pulled,
        team_experiences: reader.team_experiences()?,
        last_error: state.last_error.map(|(time, message)| wire::LastError { at: at(time), message }),
        role: state.role,
        stalled_since: stalled_since.map(at),
        skipped: skipped_total + state.impossible.0,
        skipped_recent,
        held: reader
            .hub_held_counts()?
            .into_iter()
            .map(|(author, changes)| wire::HubHeld { author, changes })
            .collect(),
        hidden: reader.hub_hidden()?.len() as u64,
    })
}

/// `hub.hidden`: the teammates' experiences deleted here.
pub fn hidden(engine: &Engine) -> Result<wire::HubHiddenResult, kb_engine::engine::EngineError> {
    let at = |ms: i64| {
        humantime::format_rfc3339_seconds(SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
    };
    Ok(wire::HubHiddenResult {
        hidden: engine
            .reader()
            .hub_hidden()?
            .into_iter()
            .map(|hidden| wire::HubHidden {
                author: hidden.author,
                id: hidden.hub_id,
                task: hidden.task,
                at: at(hidden.at_ms),
            })
            .collect(),
    })
}
