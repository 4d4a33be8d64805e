//! The daemon's background services, each started and watched by the supervisor
//! (`supervisor.rs`): `index` (commits staged changes, heals a failed or damaged index, syncs
//! its commits to disk),
//! `embedder` (loads the model, embeds the backlog), `extraction` (runs queued jobs against the
//! endpoint), `hub` (syncs with the team's hub) and `flush` (recall counters and sessions).
//! Each holds what it works on; none is owned by the engine.

use std::sync::Arc;
use std::time::Duration;

use crate::app::App;
use crate::supervisor::{Service, Supervisor};
use kb_engine::engine::{Engine, IndexState};

/// How often an index that could not take the latest changes, or whose files are damaged, tries
/// again, and how often index commits are synced to disk.
const INDEX_HEAL_INTERVAL: Duration = Duration::from_secs(2);
/// How often accumulated recall counters are written to the store, and changed sessions saved.
const FLUSH_INTERVAL: Duration = Duration::from_secs(30);
/// How often the index service looks whether a commit of the staged changes is due.
const STAGED_POLL: Duration = Duration::from_millis(10);

/// Starts every service under `supervisor`.
pub fn start(app: &Arc<App>, supervisor: &mut Supervisor) -> anyhow::Result<()> {
    let engine = app.engine.clone();
    supervisor.spawn("index", move |service| index(&engine, service), || {})?;

    let engine = app.engine.clone();
    supervisor.spawn("embedder", move |service| engine.run_embedder(service), || {})?;

    let (worker, waker) = (app.clone(), app.clone());
    supervisor.spawn(
        "extraction",
        move |service| crate::extraction::run_worker(&worker.engine, &worker.extraction, service),
        move || waker.extraction.wake(),
    )?;

    let (worker, waker) = (app.clone(), app.clone());
    supervisor.spawn(
        "hub",
        move |service| crate::hub::run(&worker.engine, &worker.hub, service),
        move || {
            waker.hub.request();
        },
    )?;

    let worker = app.clone();
    supervisor.spawn("flush", move |service| flush(&worker, service), || {})?;
    Ok(())
}

/// Every [`COMMIT_INTERVAL`](kb_engine::engine::COMMIT_INTERVAL), or sooner once many documents
/// are staged (`Engine::commit_due`, looked at every [`STAGED_POLL`]), the changes staged since
/// the last round go to the index's segments (`Engine::commit_staged`: writes are answered once
/// staged, searchable from memory), so that no catch-up of a submit has to commit them on its
/// thread. An index
/// that failed (no file descriptors, a full disk) catches up by itself once the cause is gone,
/// and a damaged one is rebuilt from the store: no restart, no write needed. Every
/// [`INDEX_HEAL_INTERVAL`] the same round syncs the index's commits to disk (see
/// `Engine::persist_index`).
fn index(engine: &Engine, service: &Service) -> anyhow::Result<()> {
    let mut last_heal: Option<std::time::Instant> = None;
    while !service.stopping() {
        service.checkpoint()?;
        engine.commit_staged();
        if last_heal.is_none_or(|last| last.elapsed() >= INDEX_HEAL_INTERVAL) {
            last_heal = Some(std::time::Instant::now());
            if matches!(engine.index_state(), IndexState::Failed { .. } | IndexState::Damaged { .. }) {
                engine.heal_index();
            }
            engine.persist_index();
        }
        match engine.index_state() {
            IndexState::Ready => service.healthy(),
            // Brought up to date at start, or by `kb.reindex`: `status` shows the progress.
            IndexState::Rebuilding { .. } => {}
            IndexState::Failed { reason } | IndexState::Damaged { reason } => service.degraded(reason),
        }
        let round_ended = std::time::Instant::now();
        while !service.stopping() && !engine.commit_due(round_ended.elapsed()) {
            service.sleep(STAGED_POLL);
        }
    }
    Ok(())
}

/// Writes recall counters and changed sessions every `FLUSH_INTERVAL` (and the server does at
/// shutdown).
fn flush(app: &App, service: &Service) -> anyhow::Result<()> {
    let mut last = std::time::Instant::now();
    let mut failing = false;
    while !service.stopping() {
        service.checkpoint()?;
        if last.elapsed() >= FLUSH_INTERVAL {
            last = std::time::Instant::now();
            match app.flush() {
                Ok(()) => failing = false,
                Err(error) => {
                    let message = format!("{error:#}");
                    tracing::warn!("{message}");
                    service.degraded(message);
                    failing = true;
                }
            }
        }
        if !failing {
            service.healthy();
        }
        service.sleep(Duration::from_secs(1));
    }
    Ok(())
}
