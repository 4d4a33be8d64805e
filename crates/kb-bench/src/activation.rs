//! Start-up under socket activation: time from the first connection on a socket that
//! `systemd-socket-activate` holds for a not-yet-running daemon to the daemon's first answer.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use serde::Serialize;
use serde_json::json;

use crate::daemon::BenchDaemon;
use crate::stats::LatencySummary;

/// The goal for the first answer of a socket-activated daemon.
const GOAL: Duration = Duration::from_millis(200);

pub struct ActivationOptions {
    pub runs: usize,
    /// Experiences in the store of the "existing store" case.
    pub seeded: usize,
}

#[derive(Debug, Serialize)]
pub struct ActivationReport {
    /// A fresh home: the daemon creates the database and the index.
    pub new_home: LatencySummary,
    /// A home with `seeded_experiences` stored: the usual on-demand start.
    pub existing_store: LatencySummary,
    pub seeded_experiences: usize,
}

pub async fn run(binary: &Path, options: &ActivationOptions, json: bool) -> anyhow::Result<ActivationReport> {
    which("systemd-socket-activate")
        .context("socket activation is measured with systemd-socket-activate: apt-get install systemd")?;
    let seed = seed_store(binary, options.seeded).await?;
    let mut new_home = Vec::with_capacity(options.runs);
    let mut existing_store = Vec::with_capacity(options.runs);
    for _ in 0..options.runs {
        new_home.push(first_answer(binary, None).await?);
        existing_store.push(first_answer(binary, Some(seed.path())).await?);
    }
    let report = ActivationReport {
        new_home: LatencySummary::of(&new_home),
        existing_store: LatencySummary::of(&existing_store),
        seeded_experiences: options.seeded,
    };
    if !json {
        println!();
        println!("== socket activation: first connection to first answer ({} runs each) ==", options.runs);
        for (label, summary) in [
            ("new home (creates the store)", &report.new_home),
            (&*format!("existing store ({} experiences)", options.seeded), &report.existing_store),
        ] {
            let verdict = if summary.p90_us <= GOAL.as_secs_f64() * 1e6 { "PASS" } else { "MISS" };
            println!(
                "  {label:<40} p50 {:>7.1} ms   p90 {:>7.1} ms   max {:>7.1} ms   goal p90 <= 200 ms: {verdict}",
                summary.p50_us / 1e3,
                summary.p90_us / 1e3,
                summary.max_us / 1e3
            );
        }
    }
    Ok(report)
}

/// A home holding `n_experiences`, written by a daemon that was then stopped.
async fn seed_store(binary: &Path, n_experiences: usize) -> anyhow::Result<tempfile::TempDir> {
    let daemon = BenchDaemon::start(binary).await?;
    let mut client = Client::connect(daemon.socket()).await?;
    for chunk_start in (0..n_experiences).step_by(5_000) {
        let items: Vec<serde_json::Value> = (chunk_start..(chunk_start + 5_000).min(n_experiences))
            .map(|n| json!({"task": format!("activation seed experience {n}"), "resource": format!("tool-{}", n % 97), "result": format!("result {n}")}))
            .collect();
        client.call_value(kb_proto::method::IMPORT, json!({"items": items})).await.context("seeding the store")?;
    }
    daemon.stop_keeping_home().await
}

/// Starts the daemon behind `systemd-socket-activate` on a new home (a copy of `seed` when
/// given) and times connect → `status` answered.
async fn first_answer(binary: &Path, seed: Option<&Path>) -> anyhow::Result<Duration> {
    let home = tempfile::Builder::new().prefix("kb-bench-activation-").tempdir()?;
    if let Some(seed) = seed {
        copy_state(seed, home.path())?;
    }
    let socket = home.path().join(kb_proto::paths::SOCKET_FILE_NAME);
    let mut child = Command::new("systemd-socket-activate")
        .arg(format!("--listen={}", socket.display()))
        .arg(format!("--setenv=KNOWHUB_HOME={}", home.path().display()))
        .arg("--setenv=KNOWHUB_LOG=warn")
        .arg(binary)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start systemd-socket-activate")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("systemd-socket-activate did not create {} within 10 s", socket.display());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The file appears at bind(); give systemd-socket-activate a moment to listen() before the
    // clock starts, so the time measured is the daemon's start-up and not this race.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let answered = async {
        let mut client = Client::connect(&socket).await?;
        client.call_value(kb_proto::method::STATUS, json!({})).await
    }
    .await;
    let elapsed = started.elapsed();
    let pid = rustix::process::Pid::from_raw(child.id() as i32).context("a child has a pid")?;
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let _ = child.wait();
    answered.context("the socket-activated daemon did not answer")?;
    Ok(elapsed)
}

/// Copies the database and the index (not the socket, lock or log) from one home to another.
fn copy_state(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".sock") || name.ends_with(".lock") || name.ends_with(".log") {
            continue;
        }
        let target = to.join(&*name);
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_state(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn which(program: &str) -> anyhow::Result<()> {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false);
    if found { Ok(()) } else { bail!("{program} is not on PATH") }
}
