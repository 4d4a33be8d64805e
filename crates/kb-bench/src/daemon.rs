//! The real `knowhubd` as a child process on a fresh temp home: start, wait until it answers,
//! read its memory and CPU time from `/proc`, stop it with SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use serde::Serialize;

/// How long the daemon may take to answer its first `status`, and to exit after SIGTERM.
const START_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The daemon binary to run: the one given, else `knowhubd` beside this executable
/// (`target/release/knowhubd` when run with `cargo run --release`).
pub fn resolve_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_owned(),
        None => {
            let exe = std::env::current_exe().context("cannot find the path of kb-bench itself")?;
            exe.parent().context("kb-bench has no parent directory")?.join("knowhubd")
        }
    };
    if !path.is_file() {
        bail!(
            "{} does not exist: build it with `cargo build --release -p knowhubd` or pass --daemon PATH",
            path.display()
        );
    }
    Ok(path)
}

/// `knowhubd --version`, to print which daemon was measured.
pub fn version_of(binary: &Path) -> String {
    Command::new(binary)
        .arg("--version")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|version| !version.is_empty())
        .unwrap_or_else(|| "unknown version".to_owned())
}

/// Resident memory of a process, from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Memory {
    /// Resident set size now (VmRSS).
    pub rss_kib: u64,
    /// The peak resident set size so far (VmHWM).
    pub peak_rss_kib: u64,
    /// Of `rss_kib`, the anonymous memory (heap: the model, vectors, caches) and the pages of
    /// mapped files (the index, which the kernel may drop and read again).
    pub anon_kib: u64,
    pub file_kib: u64,
}

impl Memory {
    /// "RSS (peak)", for a report row.
    pub fn rss_and_peak(&self) -> String {
        format!(
            "{} ({})",
            crate::report::mebibytes_from_kib(self.rss_kib),
            crate::report::mebibytes_from_kib(self.peak_rss_kib)
        )
    }

    /// "heap + mapped files", for a report row.
    pub fn heap_and_files(&self) -> String {
        format!(
            "{} + {}",
            crate::report::mebibytes_from_kib(self.anon_kib),
            crate::report::mebibytes_from_kib(self.file_kib)
        )
    }
}

/// CPU used by the daemon and time its threads spent waiting for a CPU, over some period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuUse {
    pub cpu: Duration,
    pub runqueue_wait: Duration,
}

impl CpuUse {
    pub fn since(self, earlier: CpuUse) -> CpuUse {
        CpuUse {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            runqueue_wait: self.runqueue_wait.saturating_sub(earlier.runqueue_wait),
        }
    }
}

/// The load average over the last minute, from `/proc/loadavg`: how many processes competed
/// for the CPUs. Other work on the machine makes every figure here noisier.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

/// The config of a daemon measured with a model: its weights int8 (`embedding.quantize`) or
/// as they are.
pub fn model_config(quantize: bool) -> String {
    format!("[embedding]\nquantize = {quantize}\n")
}

/// A running daemon on its own temp home. Killed (SIGKILL) on drop if it was not stopped.
pub struct BenchDaemon {
    home: tempfile::TempDir,
    socket: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl BenchDaemon {
    /// Starts `binary` with `KNOWHUB_HOME` set to a fresh temp dir and waits until it answers.
    pub async fn start(binary: &Path) -> anyhow::Result<BenchDaemon> {
        BenchDaemon::start_with(binary, &[]).await
    }

    /// [`BenchDaemon::start`] with extra environment variables, e.g. `KNOWHUB_MODEL_DIR` and
    /// `ORT_DYLIB_PATH` to measure with embeddings.
    /// Without `KNOWHUB_MODEL_DIR` in `env` the daemon's config turns embeddings off, so that it
    /// never downloads the default model (or embeds in the background) during a measurement.
    pub async fn start_with(binary: &Path, env: &[(&str, &Path)]) -> anyhow::Result<BenchDaemon> {
        BenchDaemon::start_with_config(binary, env, "").await
    }

    /// [`BenchDaemon::start_with`] with `config` as the daemon's `config.toml` when `env` names a
    /// model (see [`model_config`]).
    pub async fn start_with_config(binary: &Path, env: &[(&str, &Path)], config: &str) -> anyhow::Result<BenchDaemon> {
        let home = tempfile::Builder::new().prefix("kb-bench-").tempdir().context("cannot create a temp home")?;
        let config = if env.iter().any(|(name, _)| *name == "KNOWHUB_MODEL_DIR") {
            config
        } else {
            "[embedding]\nenabled = false\n"
        };
        if !config.is_empty() {
            let path = home.path().join("config.toml");
            std::fs::write(&path, config).with_context(|| format!("cannot write {}", path.display()))?;
        }
        BenchDaemon::start_in(binary, home, env).await
    }

    /// Starts `binary` on an existing home, e.g. one a stopped daemon left (see
    /// [`BenchDaemon::stop_keeping_home`]); its config file, if any, stays as it is.
    pub async fn start_in(
        binary: &Path,
        home: tempfile::TempDir,
        env: &[(&str, &Path)],
    ) -> anyhow::Result<BenchDaemon> {
        let socket = home.path().join(kb_proto::paths::SOCKET_FILE_NAME);
        let log = home.path().join("daemon.log");
        // Appended to, so that a home started twice keeps both runs' logs.
        let log_file = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        // Keep the user's log filter if they set one (KNOWHUB_LOG=debug to see where time goes).
        let log_filter = std::env::var("KNOWHUB_LOG").unwrap_or_else(|_| "info".to_owned());
        let child = Command::new(binary)
            .env("KNOWHUB_HOME", home.path())
            .env("KNOWHUB_LOG", log_filter)
            // Nothing of the user's may point the daemon at their socket or an embedding model:
            // it runs on a home of its own, with embeddings only when `env` asks for them.
            .env_remove("KNOWHUB_SOCKET")
            .env_remove("KNOWHUB_MODEL_DIR")
            .env_remove("ORT_DYLIB_PATH")
            .envs(env.iter().map(|(name, value)| (*name, *value)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut daemon = BenchDaemon { home, socket, log, child: Some(child) };
        daemon.wait_until_answering().await?;
        Ok(daemon)
    }

    async fn wait_until_answering(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(mut client) = Client::connect(&self.socket).await
                && client.call_value(kb_proto::method::STATUS, serde_json::json!({})).await.is_ok()
            {
                return Ok(());
            }
            if let Some(exit) = self.child_mut()?.try_wait().context("cannot check on knowhubd")? {
                bail!("knowhubd exited with {exit} before answering; its log:\n{}", self.log_tail());
            }
            if Instant::now() > deadline {
                bail!("knowhubd did not answer within {START_TIMEOUT:?}; its log:\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    pub fn pid(&self) -> anyhow::Result<u32> {
        Ok(self.child.as_ref().context("knowhubd is not running")?.id())
    }

    fn child_mut(&mut self) -> anyhow::Result<&mut Child> {
        self.child.as_mut().context("knowhubd is not running")
    }

    /// The daemon's resident memory now and at its peak.
    pub fn memory(&self) -> anyhow::Result<Memory> {
        let path = format!("/proc/{}/status", self.pid()?);
        let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        let field = |name: &str| -> anyhow::Result<u64> {
            let line = status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .with_context(|| format!("{path} has no {name} line"))?;
            let kib = line.trim().trim_end_matches("kB").trim();
            kib.parse().with_context(|| format!("cannot parse {name} {kib:?} in {path}"))
        };
        Ok(Memory {
            rss_kib: field("VmRSS:")?,
            peak_rss_kib: field("VmHWM:")?,
            anon_kib: field("RssAnon:")?,
            file_kib: field("RssFile:")? + field("RssShmem:")?,
        })
    }

    /// CPU the daemon has used so far, and how long its threads have waited for a CPU.
    pub fn cpu_use(&self) -> anyhow::Result<CpuUse> {
        Ok(CpuUse { cpu: self.cpu_time()?, runqueue_wait: self.runqueue_wait()? })
    }

    /// Time the daemon's live threads spent runnable but waiting for a CPU (the second field
    /// of `/proc/<pid>/task/<tid>/schedstat`): the share of wall time lost to other processes.
    /// Threads that have exited are not counted.
    fn runqueue_wait(&self) -> anyhow::Result<Duration> {
        let tasks = format!("/proc/{}/task", self.pid()?);
        let mut waited_ns = 0u64;
        for task in std::fs::read_dir(&tasks).with_context(|| format!("cannot list {tasks}"))?.flatten() {
            // A thread may end between listing and reading; it is simply not counted.
            let Ok(schedstat) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
            waited_ns += schedstat.split_whitespace().nth(1).and_then(|field| field.parse().ok()).unwrap_or(0);
        }
        Ok(Duration::from_nanos(waited_ns))
    }

    /// CPU time (user + system) the daemon has used so far, all threads, from `/proc/<pid>/stat`.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        let path = format!("/proc/{}/stat", self.pid()?);
        let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        // The command name (field 2) may hold spaces; fields after its closing parenthesis
        // start with field 3, so utime (14) and stime (15) are at offsets 11 and 12.
        let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).context("malformed /proc stat")?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |offset: usize| -> anyhow::Result<u64> {
            fields.get(offset).context("short /proc stat")?.parse().context("malformed /proc stat field")
        };
        let ticks_per_second = rustix::param::clock_ticks_per_second();
        Ok(Duration::from_secs_f64((ticks(11)? + ticks(12)?) as f64 / ticks_per_second as f64))
    }

    /// Waits until the daemon is idle (background work such as index segment merges has
    /// finished: under 20 ms of CPU in 250 ms), at most `limit`. Returns how long it waited.
    pub async fn settle(&self, limit: Duration) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let mut previous = self.cpu_time()?;
        while started.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = self.cpu_time()?;
            if now.saturating_sub(previous) < Duration::from_millis(20) {
                break;
            }
            previous = now;
        }
        Ok(started.elapsed())
    }

    /// Bytes on disk under the daemon's home (database, WAL, index), without the log.
    pub fn disk_bytes(&self) -> u64 {
        directory_bytes(self.home.path()) - std::fs::metadata(&self.log).map(|meta| meta.len()).unwrap_or(0)
    }

    /// The last lines of the daemon's log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// SIGTERM, then waits for the daemon to exit; the temp home is removed afterwards.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop_keeping_home().await.map(drop)
    }

    /// SIGTERM, waits for the daemon to exit, and hands over its home (removed when dropped).
    pub async fn stop_keeping_home(mut self) -> anyhow::Result<tempfile::TempDir> {
        let pid = self.pid()?;
        let raw_pid = rustix::process::Pid::from_raw(pid as i32).context("knowhubd has an invalid pid")?;
        rustix::process::kill_process(raw_pid, rustix::process::Signal::TERM).context("cannot signal knowhubd")?;
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(exit) = self.child_mut()?.try_wait().context("cannot wait for knowhubd")? {
                self.child = None;
                if !exit.success() {
                    bail!("knowhubd exited with {exit} after SIGTERM; its log:\n{}", self.log_tail());
                }
                let placeholder = tempfile::Builder::new().prefix("kb-bench-spent-").tempdir()?;
                return Ok(std::mem::replace(&mut self.home, placeholder));
            }
            if Instant::now() > deadline {
                bail!("knowhubd did not exit within {STOP_TIMEOUT:?} of SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for BenchDaemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Total size of the regular files under `dir`.
pub fn directory_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => directory_bytes(&entry.path()),
            Ok(meta) if meta.is_file() => meta.len(),
            _ => 0,
        })
        .sum()
}

/// `kb.search` of `query` in `mode` (hybrid, bm25 or vector), its `top_k` best of any score, as
/// a benchmark asks it.
pub async fn search_mode(
    client: &mut Client,
    query: &str,
    mode: &str,
    top_k: i64,
) -> anyhow::Result<kb_proto::wire::SearchResult> {
    let params = kb_proto::wire::SearchParams {
        query: query.to_owned(),
        top_k: Some(top_k),
        min_score: Some(1),
        agent_id: None,
        mode: Some(mode.to_owned()),
        origin: None,
        unreviewed: None,
    };
    client.call(kb_proto::method::SEARCH, &params).await.with_context(|| format!("kb.search {query:?} ({mode}) failed"))
}
