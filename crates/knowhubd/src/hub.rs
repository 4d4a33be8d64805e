//! The team hub's sync thread: pushes the store's outbox to the team's PostgreSQL hub and
//! pulls the teammates' changes into the store, woken by `LISTEN/NOTIFY`, by local writes and
//! by `hub.sync`, with a periodic pull as the safety net. The hub being down, slow or refusing
//! never touches local submits and searches: they do not wait for this thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use kb_core::{GatePolicy, NewExperience, PrivacyMode, Source, Status};
use kb_hub::{Change, Shared};
use kb_store::{Incoming, Outgoing, Store};

use crate::config::HubConfig;
use crate::supervisor::Service;
use kb_engine::engine::{Engine, now_ms};

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
                    tracing::info!(target = %settings.options.target, team = %settings.team, "hub: connected");
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
        match sync_round(engine, hub_sync, connected, &reader, &settings, &machine, stop) {
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

/// One round: the whole outbox pushed, then every change of the team pulled. Returns how many
/// teammates' changes are still behind.
fn sync_round(
    engine: &Engine,
    hub_sync: &HubSync,
    hub: &mut kb_hub::Hub,
    reader: &Store,
    settings: &Settings,
    machine: &str,
    stop: &AtomicBool,
) -> anyhow::Result<u64> {
    if settings.config.share {
        push(engine, hub_sync, hub, reader, settings, machine, stop)?;
    }
    pull(engine, hub_sync, hub, reader, settings, stop)?;
    let behind = hub.behind(reader.hub_pulled_seq()?)?;
    Ok(behind.max(0) as u64)
}

fn push(
    engine: &Engine,
    hub_sync: &HubSync,
    hub: &mut kb_hub::Hub,
    reader: &Store,
    settings: &Settings,
    machine: &str,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    // Shared text is redacted as in strict mode, whatever this store's privacy mode.
    let strict = GatePolicy { privacy: PrivacyMode::Strict, limits: engine.policy().limits.clone() };
    while !stop.load(Ordering::Relaxed) {
        let batch = reader.hub_outbox(settings.config.batch)?;
        if batch.is_empty() {
            break;
        }
        let changes: Vec<Change> =
            batch.iter().map(|entry| to_change(entry, &settings.config, &strict, machine)).collect();
        let refused = hub.push(&changes)?;
        let mut store = engine.lock_writer();
        for (index, reason) in &refused {
            tracing::warn!(id = %batch[*index].experience_id, %reason, "hub: the hub refused a change");
            store.hub_refused(batch[*index].outbox_id, reason)?;
        }
        let pushed: Vec<i64> = batch
            .iter()
            .enumerate()
            .filter(|(index, _)| !refused.iter().any(|(refused, _)| refused == index))
            .map(|(_, entry)| entry.outbox_id)
            .collect();
        store.hub_pushed(&pushed)?;
        drop(store);
        hub_sync.pushed.fetch_add(pushed.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// What the team gets of an outbox entry: its current state, redacted, or a withdrawal when it
/// is gone or not to be shared (any more).
fn to_change(entry: &Outgoing, config: &HubConfig, strict: &GatePolicy, machine: &str) -> Change {
    // A confirmation is this store's own row for a teammate's experience, under an id of its own.
    let id =
        if entry.confirmation { format!("{}.{machine}", entry.experience_id) } else { entry.experience_id.clone() };
    let withdraw = || Change::Delete(id.clone());
    let Some((experience, content)) = &entry.current else { return withdraw() };
    let shareable = experience.status == Status::Active
        && experience.flags.is_empty()
        && if entry.confirmation {
            experience.source == Source::Hub
        } else {
            experience.source != Source::Hub
                && config.share_sources.iter().any(|source| source == experience.source.as_str())
        };
    if !shareable {
        return withdraw();
    }
    let new = NewExperience {
        task: experience.task.clone(),
        resource: experience.resource.clone(),
        result: experience.result.clone(),
        score: Some(i64::from(experience.score)),
        content: content.clone(),
        content_type: experience.content_type.clone(),
        agent_id: experience.agent_id.clone(),
        submitted_by: experience.submitted_by.clone(),
        session_key: None,
        source: Some(experience.source),
        confidence: None,
    };
    match kb_core::gate(new, strict) {
        // Redaction can only remove; a text that now reads as an injection stays home.
        Ok(gated) if gated.status == Status::Active => Change::Upsert(Box::new(Shared {
            id: id.clone(),
            machine: machine.to_owned(),
            // A confirmation vouches for the teammate's text; who vouches is its author on the hub.
            submitted_by: if entry.confirmation { None } else { gated.experience.submitted_by },
            agent_id: gated.experience.agent_id,
            task: gated.experience.task,
            resource: gated.experience.resource,
            result: gated.experience.result,
            score: gated.score,
            content: gated.experience.content,
            content_type: gated.experience.content_type,
            merge_count: if entry.confirmation { 0 } else { experience.merge_count },
            created_at_ms: experience.created_at_ms,
            updated_at_ms: experience.updated_at_ms,
        })),
        _ => withdraw(),
    }
}

fn pull(
    engine: &Engine,
    hub_sync: &HubSync,
    hub: &mut kb_hub::Hub,
    reader: &Store,
    settings: &Settings,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    while !stop.load(Ordering::Relaxed) {
        let after = reader.hub_pulled_seq()?;
        let rows = hub.pull(after, settings.config.batch as i64)?;
        let Some(up_to) = rows.last().map(|row| row.hub_seq) else { break };
        // The local gate decides, as for any write: this daemon's redaction, limits and
        // quarantine. A row it refuses is skipped (and logged), never half-stored.
        let gated: Vec<Option<kb_core::Gated>> = rows
            .iter()
            .map(|row| {
                if row.own || row.deleted {
                    return None;
                }
                let shared = &row.shared;
                let new = NewExperience {
                    task: shared.task.clone(),
                    resource: shared.resource.clone(),
                    result: shared.result.clone(),
                    score: Some(i64::from(shared.score)),
                    content: shared.content.clone(),
                    content_type: shared.content_type.clone(),
                    agent_id: shared.agent_id.clone(),
                    submitted_by: shared.submitted_by.clone().or_else(|| Some(row.author.clone())),
                    session_key: None,
                    source: Some(Source::Hub),
                    confidence: None,
                };
                match kb_core::gate(new, engine.policy()) {
                    Ok(gated) => Some(gated),
                    Err(error) => {
                        tracing::warn!(id = %shared.id, author = %row.author, "hub: a teammate's experience was refused by the gate: {error}");
                        None
                    }
                }
            })
            .collect();
        let incoming: Vec<Incoming<'_>> = rows
            .iter()
            .zip(&gated)
            .filter(|(row, gated)| !row.own && (row.deleted || gated.is_some()))
            .map(|(row, gated)| Incoming {
                hub_id: &row.shared.id,
                hub_seq: row.hub_seq,
                author: &row.author,
                machine: &row.shared.machine,
                gated: gated.as_ref(),
            })
            .collect();
        let mut store = engine.lock_writer();
        let (applied, _, created) = store.apply_pulled(&incoming, up_to, now_ms())?;
        engine.after_write(&mut store, &created);
        drop(store);
        let n = applied.inserted + applied.updated + applied.merged + applied.deleted;
        hub_sync.pulled.fetch_add(n as u64, Ordering::Relaxed);
        if n > 0 || applied.conflicts > 0 {
            tracing::info!(?applied, up_to, "hub: pulled the team's changes");
        }
    }
    Ok(())
}

/// The hub's part of `status`.
pub fn status(
    engine: &Engine,
    hub_sync: &HubSync,
) -> Result<kb_proto::wire::HubStatus, kb_engine::engine::EngineError> {
    let config = &hub_sync.config;
    let state = hub_sync.state();
    let reader = engine.reader();
    let depth = reader.hub_outbox_depth()?;
    let (pushed, pulled) = hub_sync.totals();
    let at = |time: SystemTime| humantime::format_rfc3339_seconds(time).to_string();
    Ok(kb_proto::wire::HubStatus {
        state: if config.url.is_none() {
            "off"
        } else if state.connection.is_empty() {
            "connecting"
        } else {
            state.connection
        }
        .to_owned(),
        target: state.target,
        team: config.team.clone().filter(|_| config.url.is_some()),
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
        last_error: state.last_error.map(|(time, message)| kb_proto::wire::LastError { at: at(time), message }),
    })
}
