//! Where no service manager runs (a container, CI): `knowhubd` started in the background,
//! detached from the terminal, with its output in a log file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::{Report, Setup, daemon};

/// Stops any daemon still answering, then starts one in the background. Returns its log and pid.
pub(super) async fn install(setup: &Setup, report: &mut Report, reason: &str) -> anyhow::Result<(PathBuf, u32)> {
    report.step(format!("no service manager is available ({reason})"))?;
    report.step(
        "starting knowhubd in the background instead; it will not be restarted if it dies, nor started at login",
    )?;
    daemon::stop_answering_daemon(&setup.socket, report).await?;
    let log = setup.background_log();
    let pid = start_in_background(setup, &log).await?;
    Ok((log, pid))
}

/// Starts `knowhubd` detached from this terminal (its own session, output to `log`) and waits
/// until it answers. Returns its pid.
async fn start_in_background(setup: &Setup, log: &Path) -> anyhow::Result<u32> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    use std::os::unix::process::CommandExt as _;
    if let Some(dir) = log.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)
        .with_context(|| format!("cannot open the log file {}", log.display()))?;
    let mut command = Command::new(&setup.knowhubd);
    command
        .env("KNOWHUB_SOCKET", &setup.socket)
        // Meant for this process, if anything: the daemon must bind its own socket.
        .env_remove("LISTEN_PID")
        .env_remove("LISTEN_FDS")
        .env_remove("LISTEN_FDNAMES")
        .env_remove("NOTIFY_SOCKET")
        // Not holding on to whatever directory kbctl was run from.
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().context("cannot share the log file")?)
        .stderr(log_file);
    // SAFETY: between fork and exec the child only calls setsid(2), which is async-signal-safe.
    unsafe {
        // A session of its own: closing the terminal does not send it SIGHUP.
        command.pre_exec(|| rustix::process::setsid().map(drop).map_err(std::io::Error::from));
    }
    let mut child = command.spawn().with_context(|| format!("cannot start {}", setup.knowhubd.display()))?;
    let pid = child.id();
    match daemon::wait_for_answer(&setup.socket, Some(&mut child)).await {
        Ok(_) => Ok(pid),
        Err(error) => Err(error.context(format!("see the log {}", log.display()))),
    }
}
