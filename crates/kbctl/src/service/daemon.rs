//! The running daemon seen from outside: whether it answers on the socket, which binary it
//! runs, and stopping it until its process has exited.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use kb_proto::{Client, method};
use serde_json::{Value, json};

use super::{ANSWER_TIMEOUT, EXIT_TIMEOUT, POLL_INTERVAL, Report};

/// Polls `status` until the daemon answers, `ANSWER_TIMEOUT` passes, or `child` exits.
pub(super) async fn wait_for_answer(
    socket: &Path,
    mut child: Option<&mut std::process::Child>,
) -> anyhow::Result<Value> {
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        let error = match query_status(socket).await {
            Ok(answer) => return Ok(answer),
            Err(error) => error,
        };
        if let Some(child) = child.as_deref_mut()
            && let Some(exit) = child.try_wait().context("cannot check on knowhubd")?
        {
            bail!("knowhubd exited ({exit}) before answering");
        }
        if Instant::now() >= deadline {
            return Err(error.context(format!("knowhubd did not answer within {} s", ANSWER_TIMEOUT.as_secs())));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

pub(super) async fn query_status(socket: &Path) -> anyhow::Result<Value> {
    let mut client = Client::connect(socket).await?;
    Ok(client.call_value(method::STATUS, json!({})).await?)
}

/// Stops the daemon answering on `socket`, if any, and waits until it has exited.
pub(super) async fn stop_answering_daemon(socket: &Path, report: &mut Report) -> anyhow::Result<()> {
    let Ok(answer) = query_status(socket).await else { return Ok(()) };
    let Some(pid) = answer["pid"].as_i64().and_then(|pid| i32::try_from(pid).ok()) else {
        bail!("the daemon on {} did not say its pid; stop it by hand", socket.display());
    };
    if pid == std::process::id() as i32 {
        bail!("the daemon reports this very process as its pid");
    }
    let pid = rustix::process::Pid::from_raw(pid).context("the daemon reported pid 0")?;
    rustix::process::kill_process(pid, rustix::process::Signal::TERM)
        .with_context(|| format!("cannot stop the running knowhubd (pid {})", pid.as_raw_nonzero()))?;
    let deadline = Instant::now() + EXIT_TIMEOUT;
    while !process_gone(pid) {
        if Instant::now() >= deadline {
            bail!("the running knowhubd (pid {}) did not exit after SIGTERM", pid.as_raw_nonzero());
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
    report.step(format!("stopped the running knowhubd (pid {})", pid.as_raw_nonzero()))
}

/// Whether `pid` has exited: no such process, or a zombie its parent has not reaped yet.
fn process_gone(pid: rustix::process::Pid) -> bool {
    if rustix::process::test_kill_process(pid).is_err() {
        return true;
    }
    process_state(pid.as_raw_nonzero().get() as u32) == Some('Z')
}

/// The state letter in `/proc/PID/stat` (Linux); `None` elsewhere or when gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself contain ") ".
    stat[stat.rfind(')')? + 1..].split_whitespace().next()?.chars().next()
}

pub(super) struct RunningBinary {
    pub(super) path: PathBuf,
    /// The file was replaced (or deleted) after the process started: an older build runs.
    pub(super) replaced: bool,
}

/// The executable a process runs, from `/proc` (Linux only).
pub(super) fn running_binary(pid: u64) -> Option<RunningBinary> {
    let link = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let text = link.to_string_lossy();
    match text.strip_suffix(" (deleted)") {
        Some(path) => Some(RunningBinary { path: PathBuf::from(path), replaced: true }),
        None => Some(RunningBinary { path: link.clone(), replaced: false }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_state_is_read_past_the_command_name() {
        // This test's own process is running (or, on a busy machine, briefly sleeping).
        assert!(matches!(process_state(std::process::id()), Some('R' | 'S')));
        assert_eq!(process_state(u32::MAX), None);
    }
}
