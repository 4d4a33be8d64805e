//! `kb-bench hostile`: the daemon under hostile load (issue 14): submit latency with 1, 10 and
//! 50 concurrent clients, search latency alone and under 50 submitting clients (issue 25; with
//! `--model` also hybrid search with the model loaded), the daemon's RSS during a flood of
//! half-sent 60 MiB bodies, and how long a new client waits for an answer during slow-body and
//! idle-connection floods.

mod contention;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kb_proto::Client;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

use crate::daemon::BenchDaemon;
use crate::stats::LatencySummary;

/// Submits per client at each concurrency.
const SUBMITS_PER_CLIENT: usize = 40;

/// The model `--model` measures with, and the ONNX Runtime library that runs it.
pub struct ModelRun {
    pub model_dir: PathBuf,
    pub onnxruntime: PathBuf,
    /// The daemon's `config.toml` for the run with the model (empty: its defaults).
    pub config: String,
    /// Measure only with the model: no submit latency without one, no floods.
    pub only: bool,
}

pub async fn run(binary: &Path, model: Option<&ModelRun>) -> anyhow::Result<()> {
    if let Some(model) = model {
        let env = [("KNOWHUB_MODEL_DIR", model.model_dir.as_path()), ("ORT_DYLIB_PATH", model.onnxruntime.as_path())];
        // The daemon's defaults unless told otherwise: an E5 model is loaded with int8 weights.
        let daemon = BenchDaemon::start_with_config(binary, &env, &model.config).await?;
        println!();
        println!(
            "== hostile: hybrid (and BM25) search alone and under {} submitting clients, model {} ==",
            contention::WRITERS,
            model.model_dir.display()
        );
        let measured = contention::measure(&daemon, &["hybrid", "bm25"], true, 25).await?;
        contention::print(&measured);
        daemon.stop().await?;
        if model.only {
            return Ok(());
        }
    }
    let home = tempfile::Builder::new().prefix("kb-bench-hostile-").tempdir()?;
    std::fs::write(home.path().join("config.toml"), "[embedding]\nenabled = false\n")?;
    let daemon = BenchDaemon::start_in(binary, home, &[]).await?;
    println!();
    println!("== hostile: submit latency by concurrent clients (default [server] limits) ==");
    for clients in [1usize, 10, 50] {
        let summary = submit_latency(&daemon, clients).await?;
        println!(
            "  {clients:>2} clients x {SUBMITS_PER_CLIENT} submits   p50 {:>7.1} ms   p99 {:>7.1} ms",
            summary.p50_us / 1e3,
            summary.p99_us / 1e3
        );
    }
    println!("== hostile: BM25 search alone and under {} submitting clients, no model ==", contention::WRITERS);
    let measured = contention::measure(&daemon, &["bm25"], false, 25).await?;
    contention::print(&measured);
    let pid = daemon.pid()?;
    let rss = || daemon.memory().map(|memory| memory.rss_kib / 1024).unwrap_or(0);
    println!("== hostile: 16 clients each send half of a 60 MiB body and stall (budget 256 MiB) ==");
    let before = rss();
    let mut flood = Vec::new();
    let half = vec![b' '; 30 * 1024 * 1024];
    let mut peak = before;
    for _ in 0..16 {
        let mut stream = begin(daemon.socket(), 60 * 1024 * 1024).await?;
        let _ = tokio::time::timeout(Duration::from_secs(5), stream.write_all(&half)).await;
        flood.push(stream);
        peak = peak.max(rss());
    }
    let answer = time_to_answer(&daemon).await?;
    peak = peak.max(rss());
    println!(
        "  daemon RSS {before} MiB before, {peak} MiB at the peak sampled; new client answered in {:.1} ms",
        ms(answer)
    );
    drop(flood);
    println!("== hostile: 128 clients dribble request bodies a byte at a time ==");
    let mut slow = Vec::new();
    for _ in 0..128 {
        slow.push(begin(daemon.socket(), 1_000).await?);
    }
    let mut worst = Duration::ZERO;
    for _ in 0..5 {
        for stream in &mut slow {
            let _ = stream.write_all(b" ").await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        worst = worst.max(time_to_answer(&daemon).await?);
    }
    println!("  a new client answered within {:.1} ms (worst of 5)", ms(worst));
    drop(slow);
    println!("== hostile: 1,000 connections make one request each and stay open ==");
    let mut idle = Vec::new();
    for _ in 0..1_000 {
        let Ok(mut client) = Client::connect(daemon.socket()).await else { break };
        let _ = client.call_value("status", json!({})).await;
        idle.push(client);
    }
    let answer = time_to_answer(&daemon).await?;
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).map(Iterator::count).unwrap_or(0);
    println!(
        "  {} idle connections opened; a new client answered in {:.1} ms; the daemon holds {descriptors} descriptors",
        idle.len(),
        ms(answer)
    );
    drop(idle);
    daemon.stop().await
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

async fn begin(socket: &Path, length: u64) -> anyhow::Result<UnixStream> {
    let mut stream = UnixStream::connect(socket).await.context("connect")?;
    let head = format!(
        "POST / HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    Ok(stream)
}

async fn time_to_answer(daemon: &BenchDaemon) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut client = Client::connect(daemon.socket()).await?;
    client.call_value(kb_proto::method::STATUS, json!({})).await.context("a new client's status")?;
    Ok(started.elapsed())
}

async fn submit_latency(daemon: &BenchDaemon, clients: usize) -> anyhow::Result<LatencySummary> {
    let mut tasks = tokio::task::JoinSet::new();
    for client_index in 0..clients {
        let socket = daemon.socket().to_owned();
        tasks.spawn(async move {
            let mut client = Client::connect(&socket).await?;
            let mut latencies = Vec::with_capacity(SUBMITS_PER_CLIENT);
            for n in 0..SUBMITS_PER_CLIENT {
                let params = json!({
                    "task": format!("hostile bench client {client_index} submit {n} at {clients}"),
                    "resource": format!("tool-{n}"),
                    "result": format!("result {client_index}-{n}-{clients}"),
                });
                let started = Instant::now();
                client.call_value(kb_proto::method::SUBMIT, params).await?;
                latencies.push(started.elapsed());
            }
            anyhow::Ok(latencies)
        });
    }
    let mut all = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined??);
    }
    Ok(LatencySummary::of(&all))
}
