//! `kb-bench hostile`'s searches against writers (issue 25): search latency alone and while 50
//! clients submit, with those submits' own latency and the embedding backlog they leave, in
//! one run on one daemon, with a model or without.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchResult, StatusResult};
use serde_json::json;

use crate::daemon::BenchDaemon;
use crate::generate;
use crate::stats::LatencySummary;

/// Clients submitting while searches are measured.
pub const WRITERS: usize = 50;
/// Experiences in the store (embedded, with a model) before anything is measured.
const SEEDED: usize = 500;
/// Searches measured alone, and again under the writers.
const SEARCHES: usize = 300;
const WARMUP: usize = 30;
/// How long the writers run before anything is measured, so that the load is steady.
const HEAD_START: Duration = Duration::from_secs(1);
/// How long the writers' submits are measured with no search running, before the searches; the
/// searches under the writers go on at least as long (the queries again from the first), so
/// that both phases measure about as many submits.
const WRITERS_ALONE: Duration = Duration::from_secs(4);
/// Longest wait for the model to load, the seeded store to be embedded, or the backlog to drain.
const EMBED_LIMIT: Duration = Duration::from_secs(600);

/// What one measurement found.
pub struct Contention {
    /// Per search mode measured, in the order asked.
    pub modes: Vec<ModeLatency>,
    /// The writers' submits while nothing searched ([`WRITERS_ALONE`]), and while the searches
    /// were measured (one client searching back to back: a search's CPU is taken from them).
    pub writes_alone: WritePhase,
    pub writes_searched: WritePhase,
    /// The last submits as the daemon timed them (`status.latencies.submit`): without the
    /// clients' share of the CPU and the socket.
    pub submits_in_daemon: kb_proto::wire::LatencySummary,
    /// The last searches as the daemon timed them, every mode (`status.latencies.search`): the
    /// difference to the clients' figures is time spent before the daemon's handler or after it.
    pub searches_in_daemon: kb_proto::wire::LatencySummary,
    /// Experiences waiting for a vector when the writers stopped, and how long they took to be
    /// embedded (none without a model).
    pub backlog_after: u64,
    pub drained: Option<Duration>,
    /// Submits that waited for their vector before they committed, and those that did not.
    pub embedded_first: u64,
    pub embedded_after: u64,
    /// The daemon's RSS (MiB) once the seeded store is embedded, at the end, and its peak.
    pub rss_mib: (u64, u64, u64),
}

/// The writers' submits over one part of their run.
pub struct WritePhase {
    pub submits: LatencySummary,
    pub per_s: f64,
    /// The daemon's CPU per submit (a search's share included, when one ran) and the time its
    /// threads waited for a CPU: figures other processes on the machine change less than
    /// latency.
    pub cpu_per_submit: Duration,
    pub runqueue_wait_per_submit: Duration,
}

impl WritePhase {
    /// The submits of `latencies` that started in `from..to`, with the daemon's CPU over it.
    fn of(
        latencies: &[(Instant, Duration)],
        (from, to): (Instant, Instant),
        cpu: &crate::daemon::CpuUse,
    ) -> WritePhase {
        let times: Vec<Duration> =
            latencies.iter().filter(|(started, _)| (from..to).contains(started)).map(|(_, latency)| *latency).collect();
        let per_submit = |total: Duration| total / u32::try_from(times.len().max(1)).unwrap_or(u32::MAX);
        WritePhase {
            per_s: times.len() as f64 / (to - from).as_secs_f64().max(1e-9),
            cpu_per_submit: per_submit(cpu.cpu),
            runqueue_wait_per_submit: per_submit(cpu.runqueue_wait),
            submits: LatencySummary::of(&times),
        }
    }
}

/// One search mode's latency alone and under the writers.
pub struct ModeLatency {
    pub mode: String,
    pub alone: LatencySummary,
    pub under_load: LatencySummary,
}

/// Seeds the store (and waits for it to be embedded when `daemon` runs a `model`), then
/// measures searches of each of `modes` (taking turns, query by query) alone and under
/// [`WRITERS`] submitting clients.
pub async fn measure(daemon: &BenchDaemon, modes: &[&str], model: bool, seed: u64) -> anyhow::Result<Contention> {
    let mut client = Client::connect(daemon.socket()).await?;
    let items = generate::experiences(SEEDED, seed);
    let _: ImportResult =
        client.call(kb_proto::method::IMPORT, &json!({ "items": items })).await.context("seeding kb.import")?;
    wait_for_backlog(&mut client, daemon, model).await?;
    let rss_settled = daemon.memory()?.rss_kib / 1024;
    let queries: Vec<String> =
        generate::queries(SEARCHES + WARMUP, seed ^ 0x5155_4552).into_iter().map(|query| query.text).collect();
    for query in &queries[..WARMUP] {
        for mode in modes {
            search(&mut client, query, mode).await?;
        }
    }
    let alone = timed_searches(&mut client, &queries[WARMUP..], modes, Duration::ZERO).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..WRITERS {
        let (socket, stop) = (daemon.socket().to_owned(), stop.clone());
        writers.spawn(async move {
            let mut client = Client::connect(&socket).await?;
            let pool = generate::experiences(200, seed ^ (writer as u64 + 1) << 20);
            let mut latencies = Vec::new();
            for (round, item) in pool.iter().cycle().enumerate() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                // Distinct every time, as agents' experiences are.
                let params = json!({
                    "task": format!("{} (writer {writer}, round {round})", item.task),
                    "resource": item.resource,
                    "result": item.result,
                    "score": item.score,
                });
                let started = Instant::now();
                client.call_value(kb_proto::method::SUBMIT, params).await?;
                latencies.push((started, started.elapsed()));
            }
            anyhow::Ok(latencies)
        });
    }
    tokio::time::sleep(HEAD_START).await;
    let (alone_from, cpu_alone) = (Instant::now(), daemon.cpu_use()?);
    tokio::time::sleep(WRITERS_ALONE).await;
    let (searches_from, cpu_searched) = (Instant::now(), daemon.cpu_use()?);
    let under_load = timed_searches(&mut client, &queries[WARMUP..], modes, WRITERS_ALONE).await?;
    let (searches_to, cpu_end) = (Instant::now(), daemon.cpu_use()?);
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    while let Some(joined) = writers.join_next().await {
        latencies.extend(joined??);
    }
    let writes_alone = WritePhase::of(&latencies, (alone_from, searches_from), &cpu_searched.since(cpu_alone));
    let writes_searched = WritePhase::of(&latencies, (searches_from, searches_to), &cpu_end.since(cpu_searched));
    let status: StatusResult = client.call(kb_proto::method::STATUS, &json!({})).await?;
    let backlog_after = status.embedder.backlog;
    let drained = if model {
        let started = Instant::now();
        wait_for_backlog(&mut client, daemon, true).await?;
        Some(started.elapsed())
    } else {
        None
    };
    let memory = daemon.memory()?;
    let modes = modes
        .iter()
        .zip(alone.into_iter().zip(under_load))
        .map(|(mode, (alone, under_load))| ModeLatency { mode: (*mode).to_owned(), alone, under_load })
        .collect();
    Ok(Contention {
        modes,
        writes_alone,
        writes_searched,
        submits_in_daemon: status.latencies.submit.clone(),
        searches_in_daemon: status.latencies.search.clone(),
        backlog_after,
        drained,
        embedded_first: status.embedder.submits_embedded_first,
        embedded_after: status.embedder.submits_embedded_after,
        rss_mib: (rss_settled, memory.rss_kib / 1024, memory.peak_rss_kib / 1024),
    })
}

/// Prints one measurement.
pub fn print(contention: &Contention) {
    let line = |label: &str, summary: &LatencySummary| {
        println!(
            "  {label:<38} p50 {:>7.1} ms   p99 {:>7.1} ms   ({} samples)",
            summary.p50_us / 1e3,
            summary.p99_us / 1e3,
            summary.n_samples
        );
    };
    for mode in &contention.modes {
        line(&format!("{} search alone", mode.mode), &mode.alone);
        line(&format!("{} search, {WRITERS} clients submitting", mode.mode), &mode.under_load);
        let ratio = mode.under_load.p99_us / mode.alone.p99_us.max(1.0);
        println!("  {} search p99 under load / alone: {ratio:.2}x", mode.mode);
    }
    for (phase, writes) in [("no search", &contention.writes_alone), ("searches", &contention.writes_searched)] {
        line(&format!("submit, {WRITERS} clients, {phase}"), &writes.submits);
        println!(
            "    {:.0} submits/s; daemon CPU per submit {:.3} ms (its threads waited {:.3} ms per submit for a CPU)",
            writes.per_s,
            writes.cpu_per_submit.as_secs_f64() * 1e3,
            writes.runqueue_wait_per_submit.as_secs_f64() * 1e3
        );
    }
    for (label, in_daemon) in [
        ("submit, as the daemon timed it", &contention.submits_in_daemon),
        ("search, as the daemon timed it", &contention.searches_in_daemon),
    ] {
        println!(
            "  {label:<38} p50 {:>7.1} ms   p99 {:>7.1} ms   (its latest, of {} since it started)",
            in_daemon.p50_ms, in_daemon.p99_ms, in_daemon.count
        );
    }
    let (settled, end, peak) = contention.rss_mib;
    println!("  daemon RSS {settled} MiB before the writers, {end} MiB at the end, peak {peak} MiB");
    if let Some(drained) = contention.drained {
        println!(
            "  embedding backlog when the writers stopped: {}; embedded {:.1} s later",
            contention.backlog_after,
            drained.as_secs_f64()
        );
        println!(
            "  submits embedded before their commit (a possible near-duplicate): {} of {}",
            contention.embedded_first,
            contention.embedded_first + contention.embedded_after
        );
    }
}

/// Each query searched in each of `modes`, one after the other, and the queries again from the
/// first until `at_least` has passed: their latencies by mode.
async fn timed_searches(
    client: &mut Client,
    queries: &[String],
    modes: &[&str],
    at_least: Duration,
) -> anyhow::Result<Vec<LatencySummary>> {
    let mut times = vec![Vec::with_capacity(queries.len()); modes.len()];
    let started_all = Instant::now();
    for (n, query) in queries.iter().cycle().enumerate() {
        if n >= queries.len() && started_all.elapsed() >= at_least {
            break;
        }
        for (mode, times) in modes.iter().zip(&mut times) {
            let started = Instant::now();
            search(client, query, mode).await?;
            times.push(started.elapsed());
        }
    }
    Ok(times.iter().map(|times| LatencySummary::of(times)).collect())
}

async fn search(client: &mut Client, query: &str, mode: &str) -> anyhow::Result<SearchResult> {
    crate::daemon::search_mode(client, query, mode, 5).await
}

/// Waits until the model is loaded and nothing waits for a vector; at once without a model.
async fn wait_for_backlog(client: &mut Client, daemon: &BenchDaemon, model: bool) -> anyhow::Result<()> {
    if !model {
        return Ok(());
    }
    let deadline = Instant::now() + EMBED_LIMIT;
    loop {
        let status: StatusResult = client.call(kb_proto::method::STATUS, &json!({})).await?;
        let embedder = &status.embedder;
        match embedder.state.as_str() {
            "ready" if embedder.backlog == 0 => return Ok(()),
            "ready" | "loading" if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            state => anyhow::bail!(
                "the embedder is {state} with a backlog of {}: {}; daemon log:\n{}",
                embedder.backlog,
                embedder.detail.as_deref().unwrap_or("no detail"),
                daemon.log_tail()
            ),
        }
    }
}
