//! `kbctl service`: runs KnowHub as a user service, started on demand by its socket (systemd
//! on Linux, launchd on macOS), or, where neither is available (a container, CI), as a daemon
//! started in the background.
//!
//! The unit files and the plist are templates in `systemd/` and `launchd/`, embedded (by the
//! `systemd` and `launchd` modules) and filled in at install time with the path of the
//! `knowhubd` installed beside this `kbctl`. None of these commands needs a running daemon.
//!
//! This module resolves the setup and runs `install`, `uninstall`, `status` and `render`; what
//! is particular to each service manager is in `systemd` and `launchd`, the start without one in
//! `background`, the running daemon as a process in `daemon`, and placeholder filling in
//! `template`.

mod background;
mod daemon;
mod launchd;
mod systemd;
mod template;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use crate::cli::{ManagerKind, ServiceCommand};
use crate::output;

pub const SOCKET_UNIT: &str = "knowhubd.socket";
pub const SERVICE_UNIT: &str = "knowhubd.service";
pub const LAUNCHD_LABEL: &str = "dev.knowhub.knowhubd";

/// The variables a daemon started by the service manager should see as they were when the
/// service was installed: the manager does not run it in the user's shell environment.
const CAPTURED_ENVIRONMENT: [&str; 4] = ["KNOWHUB_HOME", "KNOWHUB_MODEL_DIR", "ORT_DYLIB_PATH", "KNOWHUB_LOG"];

/// How long to wait for a started daemon to answer (it opens its store first).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait for a stopped daemon to exit (it drains requests for up to 10 s).
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The service manager available to this user, or why there is none.
#[derive(Debug, Clone)]
enum Manager {
    Systemd,
    Launchd,
    None { reason: String },
}

impl Manager {
    fn name(&self) -> &'static str {
        match self {
            Manager::Systemd => "systemd",
            Manager::Launchd => "launchd",
            Manager::None { .. } => "none",
        }
    }
}

pub async fn run(command: &ServiceCommand, socket: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let setup = Setup::resolve(socket)?;
    let mut report = Report { json, steps: Vec::new() };
    match command {
        ServiceCommand::Render { manager, dir } => render(&setup, *manager, dir, &mut report),
        ServiceCommand::Install => install(&setup, &mut report).await,
        ServiceCommand::Uninstall => uninstall(&setup, &mut report).await,
        ServiceCommand::Status => status(&setup, json).await,
    }
}

/// Progress lines: printed as they happen for people, gathered into the JSON for programs.
struct Report {
    json: bool,
    steps: Vec<String>,
}

impl Report {
    fn step(&mut self, text: impl Into<String>) -> anyhow::Result<()> {
        let text = text.into();
        if !self.json {
            output::line(&text)?;
        }
        self.steps.push(text);
        Ok(())
    }

    fn finish(&mut self, mut value: Value) -> anyhow::Result<ExitCode> {
        if self.json {
            value["steps"] = json!(std::mem::take(&mut self.steps));
            output::json(&value)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// Everything the units are made from, resolved once from this process's environment.
#[derive(Debug, Clone)]
struct Setup {
    /// The daemon binary installed beside this `kbctl`.
    knowhubd: PathBuf,
    /// The socket clients use, absolute.
    socket: PathBuf,
    home: PathBuf,
    /// `CAPTURED_ENVIRONMENT` variables that are set, with absolute paths.
    environment: Vec<(String, OsString)>,
    /// `$XDG_RUNTIME_DIR`, which systemd's `%t` stands for.
    runtime_dir: Option<PathBuf>,
    /// `KNOWHUB_HOME`, when everything lives in one directory.
    knowhub_home: Option<PathBuf>,
}

impl Setup {
    fn resolve(socket: &Path) -> anyhow::Result<Setup> {
        let home = env_path("HOME").context("HOME is not set")?;
        let socket = std::path::absolute(socket).with_context(|| format!("cannot resolve {}", socket.display()))?;
        let mut environment = Vec::new();
        for name in CAPTURED_ENVIRONMENT {
            if let Some(value) = std::env::var_os(name).filter(|value| !value.is_empty()) {
                // The service runs in `/`: a relative path would point somewhere else.
                let value = if name == "KNOWHUB_LOG" {
                    value
                } else {
                    std::path::absolute(&value).map(PathBuf::into_os_string).unwrap_or(value)
                };
                environment.push((name.to_owned(), value));
            }
        }
        let knowhub_home =
            environment.iter().find(|(name, _)| name == "KNOWHUB_HOME").map(|(_, value)| PathBuf::from(value));
        Ok(Setup {
            knowhubd: installed_knowhubd()?,
            socket,
            home,
            environment,
            runtime_dir: env_path("XDG_RUNTIME_DIR"),
            knowhub_home,
        })
    }

    fn systemd_unit_dir(&self) -> PathBuf {
        env_path("XDG_CONFIG_HOME").unwrap_or_else(|| self.home.join(".config")).join("systemd/user")
    }

    fn systemd_units(&self) -> [PathBuf; 2] {
        let dir = self.systemd_unit_dir();
        [dir.join(SOCKET_UNIT), dir.join(SERVICE_UNIT)]
    }

    fn launchd_plist(&self) -> PathBuf {
        self.home.join("Library/LaunchAgents").join(format!("{LAUNCHD_LABEL}.plist"))
    }

    fn launchd_log(&self) -> PathBuf {
        self.home.join("Library/Logs/knowhubd.log")
    }

    /// Where a daemon started without a service manager writes its log.
    fn background_log(&self) -> PathBuf {
        if let Some(knowhub_home) = &self.knowhub_home {
            return knowhub_home.join("knowhubd.log");
        }
        if cfg!(target_os = "macos") {
            return self.launchd_log();
        }
        env_path("XDG_STATE_HOME").unwrap_or_else(|| self.home.join(".local/state")).join("knowhub/knowhubd.log")
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).map(PathBuf::from).filter(|path| path.is_absolute())
}

fn path_text(path: &Path) -> anyhow::Result<&str> {
    let text = path.to_str().with_context(|| format!("{} is not UTF-8", path.display()))?;
    if text.contains('\n') {
        bail!("{text:?} contains a line break, which a unit file cannot hold");
    }
    Ok(text)
}

/// The `knowhubd` beside this `kbctl`: the two are installed together (install.sh, or
/// `cargo build` for a development tree), and the service must run the one that matches.
fn installed_knowhubd() -> anyhow::Result<PathBuf> {
    let kbctl = std::env::current_exe().context("cannot find the path of kbctl itself")?;
    let kbctl = kbctl.canonicalize().unwrap_or(kbctl);
    let knowhubd = kbctl.with_file_name("knowhubd");
    if !knowhubd.is_file() {
        bail!(
            "cannot find knowhubd beside kbctl (looked for {}); install both binaries into the same directory, as install.sh does",
            knowhubd.display()
        );
    }
    Ok(knowhubd)
}

fn render(setup: &Setup, manager: ManagerKind, dir: &Path, report: &mut Report) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let files = match manager {
        ManagerKind::Systemd => vec![
            (dir.join(SOCKET_UNIT), setup.render_systemd_socket()?),
            (dir.join(SERVICE_UNIT), setup.render_systemd_service()?),
        ],
        ManagerKind::Launchd => vec![(dir.join(format!("{LAUNCHD_LABEL}.plist")), setup.render_launchd_plist()?)],
    };
    let mut written = Vec::new();
    for (path, text) in files {
        write_file(&path, &text)?;
        report.step(format!("wrote {}", path.display()))?;
        written.push(path);
    }
    report.finish(json!({"files": written}))
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Finds the service manager that would run KnowHub for this user right now.
fn detect_manager() -> Manager {
    if cfg!(target_os = "macos") {
        let domain = format!("gui/{}", rustix::process::getuid().as_raw());
        match run_tool("launchctl", &["print", &domain]) {
            Ok(_) => Manager::Launchd,
            Err(error) => Manager::None { reason: format!("launchctl cannot reach the {domain} domain: {error:#}") },
        }
    } else {
        // Reaching the user manager needs its bus (XDG_RUNTIME_DIR), which containers, CI
        // and `su` sessions usually lack even when systemd is installed.
        match run_tool("systemctl", &["--user", "show-environment"]) {
            Ok(_) => Manager::Systemd,
            Err(error) => Manager::None { reason: format!("no systemd user manager: {error:#}") },
        }
    }
}

/// Runs a tool and returns its standard output; a failure carries its standard error.
fn run_tool(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let command = format!("{program} {}", args.join(" "));
        match stderr.lines().map(str::trim).find(|line| !line.is_empty()) {
            Some(detail) => bail!("`{command}` failed ({}): {detail}", output.status),
            None => bail!("`{command}` failed ({})", output.status),
        }
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

async fn install(setup: &Setup, report: &mut Report) -> anyhow::Result<ExitCode> {
    let manager = detect_manager();
    let mut result = json!({
        "manager": manager.name(),
        "knowhubd": setup.knowhubd,
        "socket": setup.socket,
    });
    match &manager {
        Manager::Systemd => {
            let units = systemd::install(setup, report).await?;
            result["units"] = json!(units);
        }
        Manager::Launchd => {
            let plist = launchd::install(setup, report).await?;
            result["units"] = json!([plist]);
        }
        Manager::None { reason } => {
            let (log, pid) = background::install(setup, report, reason).await?;
            result["log"] = json!(log);
            result["pid"] = json!(pid);
        }
    }
    // Under a service manager this first call is the connection that starts the daemon.
    let answer = daemon::wait_for_answer(&setup.socket, None).await?;
    report.step(format!(
        "knowhubd {} answers on {} (pid {})",
        answer["version"].as_str().unwrap_or("?"),
        setup.socket.display(),
        answer["pid"]
    ))?;
    result["pid"] = answer["pid"].clone();
    report.finish(result)
}

fn note_previous_binary(report: &mut Report, previous: Option<PathBuf>, setup: &Setup) -> anyhow::Result<()> {
    if let Some(previous) = previous
        && !same_file(&previous, &setup.knowhubd)
    {
        report.step(format!(
            "the installed service ran {}; it now runs {}",
            previous.display(),
            setup.knowhubd.display()
        ))?;
    }
    Ok(())
}

fn same_file(one: &Path, other: &Path) -> bool {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_owned());
    canonical(one) == canonical(other)
}

async fn uninstall(setup: &Setup, report: &mut Report) -> anyhow::Result<ExitCode> {
    let manager = detect_manager();
    let mut removed = Vec::new();
    let units: Vec<PathBuf> = setup.systemd_units().into_iter().filter(|path| path.exists()).collect();
    if !units.is_empty() {
        if matches!(manager, Manager::Systemd) {
            if let Err(error) = systemd::systemctl(&["disable", "--now", SOCKET_UNIT, SERVICE_UNIT]) {
                report.step(format!("warning: {error:#}"))?;
            }
        } else {
            report.step("warning: no systemd user manager to stop the units; removing the files only")?;
        }
        for unit in &units {
            std::fs::remove_file(unit).with_context(|| format!("cannot remove {}", unit.display()))?;
            report.step(format!("removed {}", unit.display()))?;
        }
        if matches!(manager, Manager::Systemd) {
            systemd::systemctl(&["daemon-reload"])?;
        }
        removed.extend(units);
    }
    let plist = setup.launchd_plist();
    if plist.exists() {
        if matches!(manager, Manager::Launchd) {
            let target = format!("gui/{}/{LAUNCHD_LABEL}", rustix::process::getuid().as_raw());
            let _ = run_tool("launchctl", &["bootout", &target]);
        }
        std::fs::remove_file(&plist).with_context(|| format!("cannot remove {}", plist.display()))?;
        report.step(format!("removed {}", plist.display()))?;
        removed.push(plist);
    }
    if removed.is_empty() {
        report.step("no KnowHub units or plist were installed")?;
    }
    // A daemon started in the background (or by hand) is stopped too: after uninstalling,
    // nothing of KnowHub runs.
    daemon::stop_answering_daemon(&setup.socket, report).await?;
    report.step("the data and the binaries stay; `kbctl service install` sets the service up again")?;
    report.finish(json!({"manager": manager.name(), "removed": removed}))
}

async fn status(setup: &Setup, json: bool) -> anyhow::Result<ExitCode> {
    let manager = detect_manager();
    let mut problems: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    let mut result = json!({
        "manager": manager.name(),
        "knowhubd": setup.knowhubd,
        "socket": setup.socket,
    });
    match &manager {
        Manager::None { reason } => {
            lines.push(format!("service manager: none ({reason})"));
            result["reason"] = json!(reason);
        }
        manager => lines.push(format!("service manager: {}", manager.name())),
    }

    // The units this kbctl would manage, and the binary they run.
    let (unit_files, program) = if cfg!(target_os = "macos") {
        let plist = setup.launchd_plist();
        let program = std::fs::read_to_string(&plist).ok().and_then(|text| launchd::launchd_program(&text));
        (vec![plist], program)
    } else {
        let units = setup.systemd_units();
        let program = std::fs::read_to_string(&units[1]).ok().and_then(|unit| systemd::systemd_exec_start(&unit));
        (units.to_vec(), program)
    };
    let installed = unit_files.iter().all(|path| path.exists());
    let unit_list = unit_files.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", ");
    result["units"] = json!(unit_files);
    result["installed"] = json!(installed);
    if installed {
        lines.push(format!("units: {unit_list}"));
    } else {
        lines.push(format!("units: not installed ({unit_list})"));
        if !matches!(manager, Manager::None { .. }) {
            problems.push("the service is not installed: run `kbctl service install`".to_owned());
        }
    }
    if let Some(program) = &program {
        let matches = same_file(program, &setup.knowhubd);
        result["unit_binary"] = json!(program);
        result["unit_binary_matches"] = json!(matches);
        if matches {
            lines.push(format!("runs: {} (this kbctl's knowhubd)", program.display()));
        } else {
            lines.push(format!("runs: {}", program.display()));
            problems.push(format!(
                "the installed service runs {}, but this kbctl's knowhubd is {}: run `kbctl service install` again",
                program.display(),
                setup.knowhubd.display()
            ));
        }
    }
    if matches!(manager, Manager::Systemd) && installed {
        // `is-enabled` and `is-active` exit non-zero for "disabled" and "inactive".
        let enabled = systemd::systemctl(&["is-enabled", SOCKET_UNIT])
            .map(|out| out.trim().to_owned())
            .unwrap_or_else(|_| "disabled".to_owned());
        let socket_active = systemd::systemctl(&["is-active", SOCKET_UNIT])
            .map(|out| out.trim().to_owned())
            .unwrap_or_else(|_| "inactive".to_owned());
        lines.push(format!("{SOCKET_UNIT}: {socket_active}, {enabled}"));
        result["socket_unit"] = json!({"active": socket_active, "enabled": enabled});
        if enabled != "enabled" {
            problems.push(format!("{SOCKET_UNIT} is not enabled: run `kbctl service install`"));
        }
    }

    // Whether the daemon answers: under a service manager, this call is what starts it.
    match daemon::query_status(&setup.socket).await {
        Ok(answer) => {
            let pid = answer["pid"].as_u64().unwrap_or(0);
            let mut line = format!(
                "daemon: knowhubd {} answers on {} (pid {pid})",
                answer["version"].as_str().unwrap_or("?"),
                setup.socket.display()
            );
            let mut daemon = json!({"answers": true, "pid": pid, "version": answer["version"]});
            if let Some(exe) = daemon::running_binary(pid) {
                daemon["binary"] = json!(exe.path);
                daemon["binary_replaced"] = json!(exe.replaced);
                line.push_str(&format!(", running {}", exe.path.display()));
                if exe.replaced {
                    problems.push(format!(
                        "the running daemon's binary {} was replaced since it started: restart it (`kbctl service install`)",
                        exe.path.display()
                    ));
                } else if !same_file(&exe.path, &setup.knowhubd) {
                    problems.push(format!(
                        "the running daemon is {}, not this kbctl's knowhubd {}",
                        exe.path.display(),
                        setup.knowhubd.display()
                    ));
                }
            }
            lines.push(line);
            result["daemon"] = daemon;
        }
        Err(error) => {
            lines.push(format!("daemon: not answering on {} ({error:#})", setup.socket.display()));
            result["daemon"] = json!({"answers": false, "error": format!("{error:#}")});
            problems.push("knowhubd does not answer: run `kbctl service install`".to_owned());
        }
    }
    result["problems"] = json!(problems);
    if json {
        output::json(&result)?;
    } else {
        for line in &lines {
            output::line(line)?;
        }
        for problem in &problems {
            output::line(format!("problem: {problem}"))?;
        }
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// A setup for the tests of the templates: nothing is read from the environment.
#[cfg(test)]
fn test_setup(socket: &str, runtime_dir: Option<&str>, environment: &[(&str, &str)]) -> Setup {
    Setup {
        knowhubd: PathBuf::from("/opt/know hub/bin/knowhubd"),
        socket: PathBuf::from(socket),
        home: PathBuf::from("/home/ada"),
        environment: environment.iter().map(|(name, value)| ((*name).to_owned(), OsString::from(value))).collect(),
        runtime_dir: runtime_dir.map(PathBuf::from),
        knowhub_home: None,
    }
}
