//! Test harness: runs the built `knowhubd` on a temp home and socket, and the built `kbctl`.
//!
//! The binaries are the ones `cargo build --workspace --bins` put beside the test executable;
//! `tests/run` builds them before running the tests.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub mod extraction;
pub mod llm;
pub mod postgres;

use kb_proto::Client;
use serde_json::{Value, json};

/// The directory holding the workspace's built binaries (`target/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    // target/debug/deps/<test> → target/debug
    exe.parent().and_then(Path::parent).expect("tests run from target/<profile>/deps").to_owned()
}

pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` first (tests/run does)",
        path.display()
    );
    path
}

/// A daemon process on its own temp home. Killed (SIGKILL) on drop if still running.
pub struct TestDaemon {
    pub home: tempfile::TempDir,
    pub socket: PathBuf,
    pub child: Option<Child>,
    pub log: PathBuf,
    /// Extra environment for the daemon process.
    pub env: Vec<(OsString, OsString)>,
    /// A command the daemon is run under (`unshare …`), with its arguments; empty: none.
    pub wrapper: Vec<OsString>,
}

impl TestDaemon {
    /// Starts a daemon on a fresh home and waits until it answers `status`.
    pub fn start() -> TestDaemon {
        let home = tempfile::Builder::new().prefix("kh-").tempdir().expect("temp dir");
        Self::start_in(home)
    }

    /// Starts a daemon on `home`. Without a `config.toml` there, it gets one turning embeddings
    /// off, so that these tests see BM25 alone whatever the machine has (and never download a
    /// model); the embedding tests write their own.
    pub fn start_in(home: tempfile::TempDir) -> TestDaemon {
        TestDaemon::start_in_with(home, &[])
    }

    /// [`TestDaemon::start_in`] with extra environment variables for the daemon.
    pub fn start_in_with(home: tempfile::TempDir, env: &[(&str, &OsStr)]) -> TestDaemon {
        let config = home.path().join("config.toml");
        if !config.exists() {
            std::fs::write(&config, "[embedding]\nenabled = false\n").expect("config written");
        }
        let socket = home.path().join("knowhubd.sock");
        let log = home.path().join("daemon.log");
        let env = env.iter().map(|(name, value)| (OsString::from(name), value.to_os_string())).collect();
        let mut daemon = TestDaemon { home, socket, child: None, log, env, wrapper: Vec::new() };
        daemon.spawn();
        daemon
    }

    /// Starts the daemon process (again) on this home and waits for it to answer.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log).expect("log file");
        let mut command = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(bin("knowhubd"));
                command
            }
            None => Command::new(bin("knowhubd")),
        };
        let child = command
            .env("KNOWHUB_HOME", self.home.path())
            .env_remove("KNOWHUB_SOCKET")
            .env_remove("KNOWHUB_MODEL_DIR")
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .env("KNOWHUB_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("knowhubd starts");
        self.child = Some(child);
        self.wait_until_answering();
    }

    fn wait_until_answering(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let runtime = runtime();
        loop {
            let answered = runtime.block_on(async {
                let mut client = Client::connect(&self.socket).await.ok()?;
                client.call_value("status", json!({})).await.ok()
            });
            if answered.is_some() {
                return;
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(exit)) = child.try_wait()
            {
                panic!("knowhubd exited with {exit} before answering; log:\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "knowhubd did not answer within 30 s; log:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGKILL: no chance to clean up, like a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, then waits for a clean exit; returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(child.id() as i32).expect("pid"),
            rustix::process::Signal::TERM,
        )
        .expect("signal");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "knowhubd did not exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Calls a method; panics on transport errors, returns JSON-RPC errors as `Err`.
    pub fn call(&self, method: &str, params: Value) -> Result<Value, kb_proto::ClientError> {
        runtime().block_on(async {
            let mut client = Client::connect(&self.socket).await?;
            client.call_value(method, params).await
        })
    }

    /// Calls a method that must succeed.
    pub fn ok(&self, method: &str, params: Value) -> Value {
        match self.call(method, params.clone()) {
            Ok(value) => value,
            Err(error) => panic!("{method} {params} failed: {error}"),
        }
    }

    pub fn submit(&self, task: &str, resource: &str, result: &str, score: i64) -> String {
        let answer =
            self.ok("kb.submit", json!({"task": task, "resource": resource, "result": result, "score": score}));
        answer["id"].as_str().expect("an id").to_owned()
    }

    /// What auto-recall puts before the prompt of a new session `session` asking `prompt`
    /// (`before_prompt_build`, reminders off); empty when nothing is recalled.
    pub fn recalled(&self, session: &str, prompt: &str) -> String {
        let answer = self.ok(
            "hook.event",
            json!({"hook": "before_prompt_build", "event": {"prompt": prompt, "messages": []},
                   "ctx": {"sessionKey": session, "sessionId": format!("{session}-id"), "agentId": "main"},
                   "config": {"reminderMode": "off", "autoRecall": true}}),
        );
        answer.get("prependContext").and_then(Value::as_str).unwrap_or("").to_owned()
    }

    /// The ids `kb.search` returns for `query`, best first, as the user sees them (teammates' and
    /// extracted experiences not yet reviewed included; agents do not see those).
    pub fn search_ids(&self, query: &str) -> Vec<String> {
        let answer = self.ok("kb.search", json!({"query": query, "top_k": 10, "min_score": 1, "unreviewed": true}));
        ids_of(&answer)
    }

    /// Waits (up to 20 s, with nobody writing or restarting anything) for the index to say
    /// ready; returns that status. After a restart the index catches up in the background with
    /// what the store committed since the index's last commit.
    pub fn wait_until_index_ready(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.ok("status", json!({}));
            if status["index"]["state"] == "ready" {
                return status;
            }
            assert!(Instant::now() < deadline, "the index did not catch up by itself: {status}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (up to 20 s) until the index's segments hold everything the store committed: writes
    /// are answered once staged in memory, and the index service commits them within 250 ms.
    pub fn wait_until_index_committed(&self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.ok("status", json!({}));
            if status["index"]["committed_seq"] == status["index"]["store_seq"] {
                return status;
            }
            assert!(Instant::now() < deadline, "the staged writes were not committed: {status}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs the built `kbctl` against this daemon.
    pub fn kbctl(&self, args: &[&str]) -> Output {
        kbctl_with_socket(&self.socket, args)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn kbctl_with_socket(socket: &Path, args: &[&str]) -> Output {
    Command::new(bin("kbctl"))
        .env("KNOWHUB_SOCKET", socket)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("kbctl runs")
}

/// Runs kbctl with `args`, typing `input` on its standard input (the answers of `kbctl
/// review`), with extra environment variables `env`.
pub fn kbctl_with_input(socket: &Path, args: &[&str], env: &[(&str, &OsStr)], input: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(bin("kbctl"))
        .env("KNOWHUB_SOCKET", socket)
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kbctl runs");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("answers written");
    child.wait_with_output().expect("kbctl finishes")
}

pub fn ids_of(search_answer: &Value) -> Vec<String> {
    search_answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|hit| hit["id"].as_str().expect("id").to_owned())
        .collect()
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The number the next descriptor a process opens gets: its open-file limit bounds that
/// number, not how many it holds (a limit at the count leaves room in any gap).
pub fn lowest_free_descriptor(pid: u32) -> u64 {
    let open: std::collections::BTreeSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc lists the daemon's files")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    (0..).find(|number| !open.contains(number)).expect("a free number")
}
