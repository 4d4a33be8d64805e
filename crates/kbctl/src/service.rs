//! `kbctl service`: runs KnowHub as a user service, started on demand by its socket (systemd
//! on Linux, launchd on macOS), or, where neither is available (a container, CI), as a daemon
//! started in the background.
//!
//! The unit files and the plist are templates in `systemd/` and `launchd/`, embedded here and
//! filled in at install time with the path of the `knowhubd` installed beside this `kbctl`.
//! None of these commands needs a running daemon.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Subcommand, ValueEnum};
use kb_proto::{Client, method};
use serde_json::{Value, json};

use crate::output;

const SYSTEMD_SOCKET_TEMPLATE: &str = include_str!("../../../systemd/knowhubd.socket.in");
const SYSTEMD_SERVICE_TEMPLATE: &str = include_str!("../../../systemd/knowhubd.service.in");
const LAUNCHD_TEMPLATE: &str = include_str!("../../../launchd/dev.knowhub.knowhubd.plist.in");

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

#[derive(Debug, Clone, Subcommand)]
pub enum ServiceCommand {
    /// Install KnowHub as a user service started on demand (systemd or launchd) and start it;
    /// without a service manager, start knowhubd in the background instead.
    Install,
    /// Stop the service and remove its units; the data and the binaries stay.
    Uninstall,
    /// Which service manager runs KnowHub, which binary its units run, whether it answers.
    Status,
    /// Write the units (or the plist) that `install` would write into DIR, and nothing else.
    Render {
        #[arg(value_enum)]
        manager: ManagerKind,
        dir: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerKind {
    Systemd,
    Launchd,
}

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

    /// `ListenStream=`: `%t/…` when the socket is the default one under `XDG_RUNTIME_DIR`, so
    /// the unit keeps working if the runtime directory moves; the absolute path otherwise.
    fn systemd_listen(&self) -> anyhow::Result<String> {
        if let Some(runtime_dir) = &self.runtime_dir
            && let Ok(relative) = self.socket.strip_prefix(runtime_dir)
            && relative == Path::new("knowhub").join(kb_proto::paths::SOCKET_FILE_NAME)
        {
            return Ok(format!("%t/knowhub/{}", kb_proto::paths::SOCKET_FILE_NAME));
        }
        Ok(escape_specifiers(path_text(&self.socket)?))
    }

    fn render_systemd_socket(&self) -> anyhow::Result<String> {
        fill(SYSTEMD_SOCKET_TEMPLATE, &[("@SOCKET@", self.systemd_listen()?)])
    }

    fn render_systemd_service(&self) -> anyhow::Result<String> {
        let mut environment = String::new();
        for (name, value) in &self.environment {
            let value = value.to_str().with_context(|| format!("{name} is not UTF-8"))?;
            environment.push_str(&format!("Environment={}\n", systemd_quote(&format!("{name}={value}"), true)?));
        }
        if environment.is_empty() {
            environment.push_str("# (none of KNOWHUB_HOME, KNOWHUB_MODEL_DIR, ORT_DYLIB_PATH, KNOWHUB_LOG was set)\n");
        }
        fill(
            SYSTEMD_SERVICE_TEMPLATE,
            &[("@KNOWHUBD@", systemd_quote(path_text(&self.knowhubd)?, false)?), ("@ENVIRONMENT@\n", environment)],
        )
    }

    fn render_launchd_plist(&self) -> anyhow::Result<String> {
        let mut environment = String::new();
        for (name, value) in &self.environment {
            let value = value.to_str().with_context(|| format!("{name} is not UTF-8"))?;
            environment.push_str(&format!(
                "\t\t<key>{}</key>\n\t\t<string>{}</string>\n",
                xml_escape(name),
                xml_escape(value)
            ));
        }
        fill(
            LAUNCHD_TEMPLATE,
            &[
                ("@LABEL@", LAUNCHD_LABEL.to_owned()),
                ("@KNOWHUBD@", xml_escape(path_text(&self.knowhubd)?)),
                ("@SOCKET@", xml_escape(path_text(&self.socket)?)),
                ("@LOG@", xml_escape(path_text(&self.launchd_log())?)),
                ("@ENVIRONMENT@", environment),
            ],
        )
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

/// Replaces each placeholder, all of which the template must contain, and checks none is left.
fn fill(template: &str, values: &[(&str, String)]) -> anyhow::Result<String> {
    let mut text = template.to_owned();
    for (placeholder, value) in values {
        if !text.contains(placeholder) {
            bail!("the template has no {placeholder}");
        }
        text = text.replace(placeholder, value);
    }
    if let Some(name) = leftover_placeholder(&text) {
        bail!("the template's @{name}@ was not filled in");
    }
    Ok(text)
}

/// The first `@NAME@` (capitals and underscores) in `text`, if any.
fn leftover_placeholder(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find('@') {
        rest = &rest[start + 1..];
        let end = rest.find('@')?;
        let name = &rest[..end];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            return Some(name);
        }
    }
    None
}

/// systemd expands `%` specifiers in most settings; a literal `%` is written `%%`.
fn escape_specifiers(text: &str) -> String {
    text.replace('%', "%%")
}

/// One word of a unit-file command line or `Environment=` assignment, quoted when needed.
/// `always` quotes even plain words (`Environment=` values may contain spaces later).
fn systemd_quote(text: &str, always: bool) -> anyhow::Result<String> {
    if text.contains('\n') {
        bail!("{text:?} contains a line break, which a unit file cannot hold");
    }
    // `$` starts a variable reference in ExecStart=; `$$` is a literal dollar.
    let text = escape_specifiers(text).replace('$', "$$");
    let plain = !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';'));
    if plain && !always {
        return Ok(text);
    }
    Ok(format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")))
}

/// Reads back the first word of `ExecStart=` in a service file written by `install`.
fn systemd_exec_start(unit: &str) -> Option<PathBuf> {
    let value = unit.lines().find_map(|line| line.trim().strip_prefix("ExecStart="))?.trim();
    let word = if let Some(quoted) = value.strip_prefix('"') {
        let mut word = String::new();
        let mut chars = quoted.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => word.extend(chars.next()),
                '"' => break,
                c => word.push(c),
            }
        }
        word
    } else {
        value.split_whitespace().next()?.to_owned()
    };
    Some(PathBuf::from(word.replace("$$", "$").replace("%%", "%")))
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

fn xml_unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// Reads back the program (first of `ProgramArguments`) of a plist written by `install`.
fn launchd_program(plist: &str) -> Option<PathBuf> {
    let after = &plist[plist.find("<key>ProgramArguments</key>")?..];
    let start = after.find("<string>")? + "<string>".len();
    let end = start + after[start..].find("</string>")?;
    Some(PathBuf::from(xml_unescape(&after[start..end])))
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

fn systemctl(args: &[&str]) -> anyhow::Result<String> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    run_tool("systemctl", &all)
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
            let [socket_unit, service_unit] = setup.systemd_units();
            note_previous_binary(
                report,
                std::fs::read_to_string(&service_unit).ok().and_then(|unit| systemd_exec_start(&unit)),
                setup,
            )?;
            write_file(&socket_unit, &setup.render_systemd_socket()?)?;
            write_file(&service_unit, &setup.render_systemd_service()?)?;
            report.step(format!("wrote {} and {}", socket_unit.display(), service_unit.display()))?;
            systemctl(&["daemon-reload"])?;
            // A daemon still running (an older service, or one started by hand) holds the
            // socket's lock: stop it, so the first connection starts the new binary. The
            // socket unit stops first, so that no client starts the old service meanwhile;
            // both may not exist yet.
            let _ = systemctl(&["stop", SOCKET_UNIT, SERVICE_UNIT]);
            stop_answering_daemon(&setup.socket, report).await?;
            systemctl(&["enable", SOCKET_UNIT])?;
            systemctl(&["start", SOCKET_UNIT])?;
            report.step(format!("enabled and started {SOCKET_UNIT}: systemd listens on {}", setup.socket.display()))?;
            result["units"] = json!([socket_unit, service_unit]);
        }
        Manager::Launchd => {
            let plist = setup.launchd_plist();
            note_previous_binary(
                report,
                std::fs::read_to_string(&plist).ok().and_then(|text| launchd_program(&text)),
                setup,
            )?;
            write_file(&plist, &setup.render_launchd_plist()?)?;
            report.step(format!("wrote {}", plist.display()))?;
            let domain = format!("gui/{}", rustix::process::getuid().as_raw());
            let target = format!("{domain}/{LAUNCHD_LABEL}");
            let _ = run_tool("launchctl", &["bootout", &target]);
            stop_answering_daemon(&setup.socket, report).await?;
            prepare_launchd_socket_path(&setup.socket)?;
            bootstrap_launchd(&domain, &plist)?;
            let _ = run_tool("launchctl", &["enable", &target]);
            report
                .step(format!("loaded {LAUNCHD_LABEL} into {domain}: launchd listens on {}", setup.socket.display()))?;
            result["units"] = json!([plist]);
        }
        Manager::None { reason } => {
            report.step(format!("no service manager is available ({reason})"))?;
            report.step("starting knowhubd in the background instead; it will not be restarted if it dies, nor started at login")?;
            stop_answering_daemon(&setup.socket, report).await?;
            let log = setup.background_log();
            let pid = start_in_background(setup, &log).await?;
            result["log"] = json!(log);
            result["pid"] = json!(pid);
        }
    }
    // Under a service manager this first call is the connection that starts the daemon.
    let answer = wait_for_answer(&setup.socket, None).await?;
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

/// launchd binds the socket path itself: its directory must exist (private), and a file left
/// by a daemon that crashed must go. Only called once nothing answers on the socket.
fn prepare_launchd_socket_path(socket: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(dir) = socket.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    match std::fs::remove_file(socket) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("cannot remove the stale socket {}", socket.display()))
        }
        _ => Ok(()),
    }
}

/// `launchctl bootout` returns before the job is gone; a `bootstrap` right after it can fail
/// with an I/O error until it is, so it is retried for a short while.
fn bootstrap_launchd(domain: &str, plist: &Path) -> anyhow::Result<()> {
    let plist = path_text(plist)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match run_tool("launchctl", &["bootstrap", domain, plist]) {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
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
    match wait_for_answer(&setup.socket, Some(&mut child)).await {
        Ok(_) => Ok(pid),
        Err(error) => Err(error.context(format!("see the log {}", log.display()))),
    }
}

/// Polls `status` until the daemon answers, `ANSWER_TIMEOUT` passes, or `child` exits.
async fn wait_for_answer(socket: &Path, mut child: Option<&mut std::process::Child>) -> anyhow::Result<Value> {
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

async fn query_status(socket: &Path) -> anyhow::Result<Value> {
    let mut client = Client::connect(socket).await?;
    Ok(client.call_value(method::STATUS, json!({})).await?)
}

/// Stops the daemon answering on `socket`, if any, and waits until it has exited.
async fn stop_answering_daemon(socket: &Path, report: &mut Report) -> anyhow::Result<()> {
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

async fn uninstall(setup: &Setup, report: &mut Report) -> anyhow::Result<ExitCode> {
    let manager = detect_manager();
    let mut removed = Vec::new();
    let units: Vec<PathBuf> = setup.systemd_units().into_iter().filter(|path| path.exists()).collect();
    if !units.is_empty() {
        if matches!(manager, Manager::Systemd) {
            if let Err(error) = systemctl(&["disable", "--now", SOCKET_UNIT, SERVICE_UNIT]) {
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
            systemctl(&["daemon-reload"])?;
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
    stop_answering_daemon(&setup.socket, report).await?;
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
        let program = std::fs::read_to_string(&plist).ok().and_then(|text| launchd_program(&text));
        (vec![plist], program)
    } else {
        let units = setup.systemd_units();
        let program = std::fs::read_to_string(&units[1]).ok().and_then(|unit| systemd_exec_start(&unit));
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
        let enabled = systemctl(&["is-enabled", SOCKET_UNIT])
            .map(|out| out.trim().to_owned())
            .unwrap_or_else(|_| "disabled".to_owned());
        let socket_active = systemctl(&["is-active", SOCKET_UNIT])
            .map(|out| out.trim().to_owned())
            .unwrap_or_else(|_| "inactive".to_owned());
        lines.push(format!("{SOCKET_UNIT}: {socket_active}, {enabled}"));
        result["socket_unit"] = json!({"active": socket_active, "enabled": enabled});
        if enabled != "enabled" {
            problems.push(format!("{SOCKET_UNIT} is not enabled: run `kbctl service install`"));
        }
    }

    // Whether the daemon answers: under a service manager, this call is what starts it.
    match query_status(&setup.socket).await {
        Ok(answer) => {
            let pid = answer["pid"].as_u64().unwrap_or(0);
            let mut line = format!(
                "daemon: knowhubd {} answers on {} (pid {pid})",
                answer["version"].as_str().unwrap_or("?"),
                setup.socket.display()
            );
            let mut daemon = json!({"answers": true, "pid": pid, "version": answer["version"]});
            if let Some(exe) = running_binary(pid) {
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

struct RunningBinary {
    path: PathBuf,
    /// The file was replaced (or deleted) after the process started: an older build runs.
    replaced: bool,
}

/// The executable a process runs, from `/proc` (Linux only).
fn running_binary(pid: u64) -> Option<RunningBinary> {
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

    fn setup(socket: &str, runtime_dir: Option<&str>, environment: &[(&str, &str)]) -> Setup {
        Setup {
            knowhubd: PathBuf::from("/opt/know hub/bin/knowhubd"),
            socket: PathBuf::from(socket),
            home: PathBuf::from("/home/ada"),
            environment: environment.iter().map(|(name, value)| ((*name).to_owned(), OsString::from(value))).collect(),
            runtime_dir: runtime_dir.map(PathBuf::from),
            knowhub_home: None,
        }
    }

    #[test]
    fn the_default_socket_is_written_with_the_runtime_dir_specifier() {
        let default = setup("/run/user/1000/knowhub/knowhubd.sock", Some("/run/user/1000"), &[]);
        assert!(default.render_systemd_socket().unwrap().contains("\nListenStream=%t/knowhub/knowhubd.sock\n"));
        let custom = setup("/tmp/100%/kh.sock", Some("/run/user/1000"), &[]);
        assert!(custom.render_systemd_socket().unwrap().contains("\nListenStream=/tmp/100%%/kh.sock\n"));
    }

    #[test]
    fn the_service_runs_the_quoted_binary_with_the_captured_environment() {
        let with_env =
            setup("/run/user/1000/knowhub/knowhubd.sock", Some("/run/user/1000"), &[("KNOWHUB_HOME", "/data/k h")]);
        let unit = with_env.render_systemd_service().unwrap();
        assert!(unit.contains("\nExecStart=\"/opt/know hub/bin/knowhubd\"\n"), "{unit}");
        assert!(unit.contains("\nEnvironment=\"KNOWHUB_HOME=/data/k h\"\n"), "{unit}");
        assert_eq!(leftover_placeholder(&unit), None, "{unit}");
        assert_eq!(systemd_exec_start(&unit), Some(PathBuf::from("/opt/know hub/bin/knowhubd")));
    }

    #[test]
    fn unit_words_are_escaped_for_systemd() {
        assert_eq!(systemd_quote("/usr/bin/knowhubd", false).unwrap(), "/usr/bin/knowhubd");
        assert_eq!(systemd_quote("/a b/$x%y\"z", false).unwrap(), "\"/a b/$$x%%y\\\"z\"");
        assert!(systemd_quote("a\nb", false).is_err());
        let unit = format!("ExecStart={}\n", systemd_quote("/a b/$x%y\"z", false).unwrap());
        assert_eq!(systemd_exec_start(&unit), Some(PathBuf::from("/a b/$x%y\"z")));
    }

    #[test]
    fn the_plist_names_the_binary_socket_and_log() {
        let plist = setup("/tmp/knowhub-501/knowhubd.sock", None, &[("ORT_DYLIB_PATH", "/x/<lib>.dylib")])
            .render_launchd_plist()
            .unwrap();
        assert!(plist.contains("<string>/opt/know hub/bin/knowhubd</string>"), "{plist}");
        assert!(plist.contains("<string>/tmp/knowhub-501/knowhubd.sock</string>"), "{plist}");
        assert!(plist.contains("<string>/home/ada/Library/Logs/knowhubd.log</string>"), "{plist}");
        assert!(plist.contains("<key>ORT_DYLIB_PATH</key>\n\t\t<string>/x/&lt;lib&gt;.dylib</string>"), "{plist}");
        assert!(!plist.contains("@LABEL@") && !plist.contains("@ENVIRONMENT@"), "{plist}");
        assert_eq!(launchd_program(&plist), Some(PathBuf::from("/opt/know hub/bin/knowhubd")));
    }

    #[test]
    fn a_placeholder_left_unfilled_is_an_error() {
        assert!(fill("a @X@ b", &[]).is_err());
        assert!(fill("a@b.c @Y@ @X@", &[("@X@", String::new())]).is_err());
        assert!(fill("a b", &[("@X@", String::new())]).is_err());
        assert_eq!(fill("user@example.org @X@", &[("@X@", "1".to_owned())]).unwrap(), "user@example.org 1");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_state_is_read_past_the_command_name() {
        // This test's own process is running (or, on a busy machine, briefly sleeping).
        assert!(matches!(process_state(std::process::id()), Some('R' | 'S')));
        assert_eq!(process_state(u32::MAX), None);
    }
}
