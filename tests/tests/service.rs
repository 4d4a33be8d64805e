//! KnowHub as a service: socket activation (`systemd-socket-activate`), the rendered systemd
//! units (`systemd-analyze --user verify`) and launchd plist, and `kbctl service install`
//! where no service manager is available.
//!
//! The systemd tools come from Debian's `systemd` package; `tests/run` installs it.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bin, stderr, stdout};
use serde_json::Value;

/// A systemd tool, or a failure that says how to get it (no test is skipped for lack of it).
fn systemd_tool(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file());
    found.unwrap_or_else(|| panic!("{name} is not installed: `apt-get install systemd` (tests/run does)"))
}

/// The built daemon as `kbctl` names it in the units: the canonical path.
fn knowhubd() -> PathBuf {
    bin("knowhubd").canonicalize().expect("knowhubd has a canonical path")
}

fn temp_home() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("kh-svc-").tempdir().expect("temp dir")
}

/// Polls `condition` every 10 ms for up to `limit`; false if it never held.
fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn exe_of(pid: u32) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe")).ok()
}

fn terminate(pid: u32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM is delivered");
}

/// Waits for a child (or an orphan this process adopted as subreaper) to exit; its exit code.
fn reap(pid: u32) -> i32 {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG).expect("waitpid") {
            Some((_, status)) => {
                return status.exit_status().unwrap_or_else(|| panic!("knowhubd was killed: {status:?}"));
            }
            None => {
                assert!(Instant::now() < deadline, "knowhubd (pid {pid:?}) did not exit after SIGTERM");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// Runs the built `kbctl` in an environment of its own (nothing inherited but `PATH`).
fn kbctl_in(env: &[(&str, &Path)], args: &[&str]) -> Output {
    let mut command = Command::new(bin("kbctl"));
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (name, value) in env {
        command.env(name, value);
    }
    command.args(args).stdin(Stdio::null()).output().expect("kbctl runs")
}

/// Runs `command` to completion, killing it (and failing) if it takes longer than `limit`.
fn output_within(command: &mut Command, limit: Duration) -> Output {
    let mut child =
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the command starts");
    let finished = eventually(limit, || child.try_wait().expect("try_wait").is_some());
    if !finished {
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("output");
    assert!(finished, "no answer within {limit:?}: {}{}", stdout(&output), stderr(&output));
    output
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {}\n{}", stdout(output), stderr(output)))
}

/// The daemon started by `systemd-socket-activate` on the first connection gets the
/// listening socket (LISTEN_FDS), answers, says READY=1 and STOPPING=1 over NOTIFY_SOCKET,
/// and exits cleanly on SIGTERM without removing the socket file, which belongs to the
/// service manager (systemd's socket unit keeps listening on it to start the next daemon).
#[test]
fn socket_activation_hands_the_socket_to_the_daemon() {
    let activate = systemd_tool("systemd-socket-activate");
    let home = temp_home();
    let socket = home.path().join("knowhubd.sock");
    let notify_path = home.path().join("notify");
    let notify = UnixDatagram::bind(&notify_path).expect("bind the notify socket");
    notify.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let log_path = home.path().join("daemon.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let log_text = || std::fs::read_to_string(&log_path).unwrap_or_default();

    let mut manager = Command::new(activate)
        .arg(format!("--listen={}", socket.display()))
        .arg("--fdname=knowhubd.socket")
        .arg(format!("--setenv=KNOWHUB_HOME={}", home.path().display()))
        .arg(format!("--setenv=NOTIFY_SOCKET={}", notify_path.display()))
        .arg("--setenv=KNOWHUB_LOG=info")
        .arg(bin("knowhubd"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("systemd-socket-activate starts");
    let pid = manager.id();
    assert!(eventually(Duration::from_secs(10), || socket.exists()), "no socket; log:\n{}", log_text());
    let socket_inode = std::fs::metadata(&socket).unwrap().ino();
    // Nothing has connected yet: the daemon is not running, only the manager listens.
    assert_ne!(exe_of(pid), Some(knowhubd()), "knowhubd started before the first connection");

    // Bounded: a daemon that ignored the passed socket would leave this connection unanswered.
    let status = output_within(
        Command::new(bin("kbctl")).env("KNOWHUB_SOCKET", &socket).args(["status", "--json"]),
        Duration::from_secs(30),
    );
    assert!(
        status.status.success(),
        "kbctl status failed: {}{}\nlog:\n{}",
        stdout(&status),
        stderr(&status),
        log_text()
    );
    let answer = json_of(&status);
    assert_eq!(answer["healthy"], true, "{answer}");
    // systemd-socket-activate execs the daemon in its own process, as systemd does.
    assert_eq!(answer["pid"], pid, "{answer}");
    assert_eq!(exe_of(pid), Some(knowhubd()));
    // The daemon served the socket it was given: it did not bind a new one in its place.
    assert_eq!(std::fs::metadata(&socket).unwrap().ino(), socket_inode, "the socket was replaced");
    // It wrote its key beside that socket before answering (kbctl status checked its proof).
    let key_file = kb_proto::identity::key_file(&socket);
    assert_eq!(answer["identity"]["ready"], true, "{answer}");
    assert_eq!(std::fs::metadata(&key_file).unwrap().mode() & 0o777, 0o600);

    let mut buffer = [0u8; 512];
    let n = notify.recv(&mut buffer).expect("READY=1 arrives");
    let message = String::from_utf8_lossy(&buffer[..n]).into_owned();
    assert!(message.lines().any(|line| line == "READY=1"), "{message:?}");

    terminate(pid);
    let n = notify.recv(&mut buffer).expect("STOPPING=1 arrives");
    let message = String::from_utf8_lossy(&buffer[..n]).into_owned();
    assert!(message.lines().any(|line| line == "STOPPING=1"), "{message:?}");
    let exit = manager.wait().expect("wait");
    assert!(exit.success(), "knowhubd exited with {exit}; log:\n{}", log_text());
    assert!(exe_of(pid).is_none(), "the process is still there");
    // The socket file is the manager's: still there, but nothing answers on it any more.
    assert!(socket.exists(), "the daemon removed a socket it does not own");
    // Its key is gone with it: the next daemon the manager starts writes its own.
    assert!(!key_file.exists(), "the key outlived the daemon");
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err(), "something still answers");
}

/// Renders the units into `dir` with `kbctl service render systemd`.
fn render_systemd(home: &Path, runtime_dir: &Path, dir: &Path, extra: &[(&str, &Path)]) {
    let mut env = vec![("HOME", home), ("XDG_RUNTIME_DIR", runtime_dir)];
    env.extend_from_slice(extra);
    let output = kbctl_in(&env, &["service", "render", "systemd", dir.to_str().unwrap()]);
    assert!(output.status.success(), "render failed: {}{}", stdout(&output), stderr(&output));
}

fn verify_units(runtime_dir: &Path, dir: &Path) {
    let output = Command::new(systemd_tool("systemd-analyze"))
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .args(["--user", "verify"])
        .arg(dir.join("knowhubd.socket"))
        .arg(dir.join("knowhubd.service"))
        .output()
        .expect("systemd-analyze runs");
    assert!(output.status.success(), "verify failed: {}{}", stdout(&output), stderr(&output));
    assert_eq!(stderr(&output), "", "systemd-analyze warned");
}

/// The units `kbctl service install` writes pass `systemd-analyze --user verify` without a
/// warning, both as installed by default and with a relocated home that needs quoting.
#[test]
fn rendered_systemd_units_verify_cleanly() {
    let home = temp_home();
    let runtime_dir = home.path().join("run");
    std::fs::create_dir(&runtime_dir).unwrap();
    std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).unwrap();

    let default_units = home.path().join("default");
    render_systemd(home.path(), &runtime_dir, &default_units, &[]);
    verify_units(&runtime_dir, &default_units);
    let socket_unit = std::fs::read_to_string(default_units.join("knowhubd.socket")).unwrap();
    let service_unit = std::fs::read_to_string(default_units.join("knowhubd.service")).unwrap();
    // The path clients use by default: $XDG_RUNTIME_DIR/knowhub/knowhubd.sock.
    assert!(socket_unit.lines().any(|line| line == "ListenStream=%t/knowhub/knowhubd.sock"), "{socket_unit}");
    assert!(socket_unit.lines().any(|line| line == "SocketMode=0600"), "{socket_unit}");
    let exec_start = service_unit.lines().find(|line| line.starts_with("ExecStart=")).expect("ExecStart=");
    assert!(exec_start.contains(&knowhubd().display().to_string()), "{service_unit}");
    assert!(service_unit.lines().any(|line| line == "Type=notify"), "{service_unit}");
    assert!(service_unit.lines().any(|line| line == "Restart=on-failure"), "{service_unit}");

    let knowhub_home = home.path().join("know hub");
    let relocated_units = home.path().join("relocated");
    render_systemd(home.path(), &runtime_dir, &relocated_units, &[("KNOWHUB_HOME", &knowhub_home)]);
    verify_units(&runtime_dir, &relocated_units);
    let socket_unit = std::fs::read_to_string(relocated_units.join("knowhubd.socket")).unwrap();
    let listen = format!("ListenStream={}", knowhub_home.join("knowhubd.sock").display());
    assert!(socket_unit.lines().any(|line| line == listen), "{socket_unit}");
    let service_unit = std::fs::read_to_string(relocated_units.join("knowhubd.service")).unwrap();
    let environment = format!("Environment=\"KNOWHUB_HOME={}\"", knowhub_home.display());
    assert!(service_unit.lines().any(|line| line == environment), "{service_unit}");
}

/// The LaunchAgent plist is a well-formed property list with what launchd needs to start the
/// daemon on demand: the socket, the binary, restart on crash, the log in ~/Library/Logs.
#[test]
fn the_launchd_plist_parses_and_holds_the_required_keys() {
    let home = temp_home();
    let knowhub_home = home.path().join("kh & co");
    let dir = home.path().join("agents");
    let output = kbctl_in(
        &[("HOME", home.path()), ("KNOWHUB_HOME", &knowhub_home)],
        &["service", "render", "launchd", dir.to_str().unwrap()],
    );
    assert!(output.status.success(), "render failed: {}{}", stdout(&output), stderr(&output));
    let text = std::fs::read_to_string(dir.join("dev.knowhub.knowhubd.plist")).unwrap();
    let plist = plist::parse(&text).unwrap_or_else(|error| panic!("not a property list: {error}\n{text}"));

    let string = |value: &plist::Value| match value {
        plist::Value::String(text) => text.clone(),
        other => panic!("not a string: {other:?}"),
    };
    let dict = |value: &plist::Value| match value {
        plist::Value::Dict(entries) => entries.clone(),
        other => panic!("not a dict: {other:?}"),
    };
    let root = dict(&plist);
    assert_eq!(string(&root["Label"]), "dev.knowhub.knowhubd");
    let plist::Value::Array(arguments) = &root["ProgramArguments"] else { panic!("ProgramArguments: {root:?}") };
    assert_eq!(string(&arguments[0]), knowhubd().display().to_string());
    // "Listeners" is the name knowhubd asks launch_activate_socket for.
    let listener = dict(&dict(&root["Sockets"])["Listeners"]);
    assert_eq!(string(&listener["SockPathName"]), knowhub_home.join("knowhubd.sock").display().to_string());
    assert_eq!(listener["SockPathMode"], plist::Value::Integer(0o600));
    assert_eq!(string(&listener["SockType"]), "stream");
    assert_eq!(string(&listener["SockFamily"]), "Unix");
    assert_eq!(dict(&root["KeepAlive"])["Crashed"], plist::Value::Bool(true));
    assert_eq!(root["RunAtLoad"], plist::Value::Bool(false));
    let logs = home.path().join("Library/Logs").display().to_string();
    assert!(string(&root["StandardErrorPath"]).starts_with(&logs), "{root:?}");
    assert!(string(&root["StandardOutPath"]).starts_with(&logs), "{root:?}");
    let environment = dict(&root["EnvironmentVariables"]);
    assert_eq!(string(&environment["KNOWHUB_HOME"]), knowhub_home.display().to_string());
}

/// Without a systemd user manager (no XDG_RUNTIME_DIR, no session bus: a container, CI),
/// `kbctl service install` says so and starts the daemon in the background; installing again
/// restarts it; SIGTERM leaves no socket file and no process behind.
#[test]
fn install_without_a_service_manager_starts_a_background_daemon() {
    // Adopt the daemon once kbctl exits, so this test can reap it and see how it exited.
    rustix::process::set_child_subreaper(Some(rustix::process::getpid())).expect("become a subreaper");
    let home = temp_home();
    let knowhub_home = home.path().join("kh");
    let socket = knowhub_home.join("knowhubd.sock");
    let env = [("HOME", home.path()), ("KNOWHUB_HOME", knowhub_home.as_path())];

    let install = kbctl_in(&env, &["service", "install"]);
    let text = stdout(&install);
    assert!(install.status.success(), "install failed: {text}{}", stderr(&install));
    assert!(text.contains("no service manager is available"), "{text}");
    assert!(text.contains("starting knowhubd in the background"), "{text}");
    let status = kbctl_in(&env, &["status"]);
    assert!(status.status.success(), "kbctl status failed: {}{}", stdout(&status), stderr(&status));
    let first_pid = json_of(&kbctl_in(&env, &["status", "--json"]))["pid"].as_u64().expect("a pid") as u32;
    assert_eq!(exe_of(first_pid), Some(knowhubd()));
    assert!(knowhub_home.join("knowhubd.log").exists(), "the background daemon logs to its home");

    let service_status = kbctl_in(&env, &["service", "status", "--json"]);
    assert!(service_status.status.success(), "{}{}", stdout(&service_status), stderr(&service_status));
    let report = json_of(&service_status);
    assert_eq!(report["manager"], "none", "{report}");
    assert_eq!(report["daemon"]["answers"], true, "{report}");
    assert_eq!(report["daemon"]["pid"], first_pid, "{report}");

    // Installing again replaces the running daemon (say, after an upgrade of the binary).
    let again = kbctl_in(&env, &["service", "install", "--json"]);
    assert!(again.status.success(), "{}{}", stdout(&again), stderr(&again));
    let second_pid = json_of(&again)["pid"].as_u64().expect("a pid") as u32;
    assert_ne!(second_pid, first_pid);
    assert_eq!(reap(first_pid), 0, "the replaced daemon exits cleanly");

    terminate(second_pid);
    assert_eq!(reap(second_pid), 0, "SIGTERM is a clean exit");
    assert!(exe_of(second_pid).is_none(), "no knowhubd process is left");
    assert!(!socket.exists(), "the daemon removes the socket it created");
    let service_status = kbctl_in(&env, &["service", "status"]);
    assert!(!service_status.status.success(), "service status is green with no daemon");
    assert!(stdout(&service_status).contains("knowhubd does not answer"), "{}", stdout(&service_status));
}

/// `kbctl service status` says when the installed unit runs another binary than the
/// `knowhubd` beside this `kbctl` (an old install, or a second checkout).
#[test]
fn service_status_reports_units_that_run_another_binary() {
    let home = temp_home();
    let unit_dir = home.path().join(".config/systemd/user");
    let runtime_dir = home.path().join("run");
    std::fs::create_dir_all(&runtime_dir).unwrap();
    render_systemd(home.path(), &runtime_dir, &unit_dir, &[]);
    let service_path = unit_dir.join("knowhubd.service");
    let unit = std::fs::read_to_string(&service_path).unwrap();
    let old = unit.replace(&knowhubd().display().to_string(), "/opt/old/knowhubd");
    std::fs::write(&service_path, old).unwrap();

    let env = [("HOME", home.path()), ("KNOWHUB_HOME", home.path())];
    let output = kbctl_in(&env, &["service", "status", "--json"]);
    assert!(!output.status.success(), "a unit running another binary is not green");
    let report = json_of(&output);
    assert_eq!(report["unit_binary"], "/opt/old/knowhubd", "{report}");
    assert_eq!(report["unit_binary_matches"], false, "{report}");
    let problems = report["problems"].to_string();
    assert!(problems.contains("/opt/old/knowhubd") && problems.contains("kbctl service install"), "{report}");
}

/// Just enough of an XML property list parser to check the plist: dict, array, string,
/// integer, true and false, with entities, comments and the prolog; anything else is an error.
mod plist {
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Dict(BTreeMap<String, Value>),
        Array(Vec<Value>),
        String(String),
        Integer(i64),
        Bool(bool),
    }

    pub fn parse(text: &str) -> Result<Value, String> {
        let mut parser = Parser { rest: text };
        parser.skip_misc();
        if parser.rest.starts_with("<?xml") {
            parser.skip_past("?>")?;
        }
        parser.skip_misc();
        if parser.rest.starts_with("<!DOCTYPE") {
            parser.skip_past(">")?;
        }
        parser.skip_misc();
        let tag = parser.open_tag()?;
        if tag != "plist version=\"1.0\"" {
            return Err(format!("expected <plist version=\"1.0\">, found <{tag}>"));
        }
        let value = parser.value()?;
        parser.close_tag("plist")?;
        parser.skip_misc();
        if !parser.rest.is_empty() {
            return Err(format!("text after </plist>: {:.40}", parser.rest));
        }
        Ok(value)
    }

    struct Parser<'a> {
        rest: &'a str,
    }

    impl Parser<'_> {
        /// Skips whitespace and comments.
        fn skip_misc(&mut self) {
            loop {
                self.rest = self.rest.trim_start();
                if self.rest.starts_with("<!--") {
                    if self.skip_past("-->").is_err() {
                        return;
                    }
                } else {
                    return;
                }
            }
        }

        fn skip_past(&mut self, end: &str) -> Result<(), String> {
            let at = self.rest.find(end).ok_or_else(|| format!("unterminated, expected {end}"))?;
            self.rest = &self.rest[at + end.len()..];
            Ok(())
        }

        /// Reads `<tag …>` or `<tag/>` (returned with its trailing `/`).
        fn open_tag(&mut self) -> Result<String, String> {
            self.skip_misc();
            let inner = self.rest.strip_prefix('<').ok_or_else(|| format!("expected a tag at {:.40}", self.rest))?;
            let end = inner.find('>').ok_or("unterminated tag")?;
            let tag = inner[..end].to_owned();
            if let Some(name) = tag.strip_prefix('/') {
                return Err(format!("unexpected </{name}>"));
            }
            self.rest = &inner[end + 1..];
            Ok(tag)
        }

        fn close_tag(&mut self, name: &str) -> Result<(), String> {
            self.skip_misc();
            let expected = format!("</{name}>");
            self.rest =
                self.rest.strip_prefix(&expected).ok_or_else(|| format!("expected {expected} at {:.40}", self.rest))?;
            Ok(())
        }

        fn text_until_close(&mut self, name: &str) -> Result<String, String> {
            let end = self.rest.find('<').ok_or("unterminated text")?;
            let text = unescape(&self.rest[..end])?;
            self.rest = &self.rest[end..];
            self.close_tag(name)?;
            Ok(text)
        }

        fn value(&mut self) -> Result<Value, String> {
            let tag = self.open_tag()?;
            match tag.as_str() {
                "true/" => Ok(Value::Bool(true)),
                "false/" => Ok(Value::Bool(false)),
                "dict/" => Ok(Value::Dict(BTreeMap::new())),
                "string/" => Ok(Value::String(String::new())),
                "string" => Ok(Value::String(self.text_until_close("string")?)),
                "integer" => {
                    let text = self.text_until_close("integer")?;
                    text.trim().parse().map(Value::Integer).map_err(|_| format!("bad integer {text:?}"))
                }
                "array" => {
                    let mut items = Vec::new();
                    loop {
                        self.skip_misc();
                        if self.rest.starts_with("</array>") {
                            self.close_tag("array")?;
                            return Ok(Value::Array(items));
                        }
                        items.push(self.value()?);
                    }
                }
                "dict" => {
                    let mut entries = BTreeMap::new();
                    loop {
                        self.skip_misc();
                        if self.rest.starts_with("</dict>") {
                            self.close_tag("dict")?;
                            return Ok(Value::Dict(entries));
                        }
                        let key_tag = self.open_tag()?;
                        if key_tag != "key" {
                            return Err(format!("expected <key> in a dict, found <{key_tag}>"));
                        }
                        let key = self.text_until_close("key")?;
                        let value = self.value()?;
                        if entries.insert(key.clone(), value).is_some() {
                            return Err(format!("duplicate key {key:?}"));
                        }
                    }
                }
                other => Err(format!("unsupported element <{other}>")),
            }
        }
    }

    fn unescape(text: &str) -> Result<String, String> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('&') {
            out.push_str(&rest[..at]);
            let end = rest[at..].find(';').ok_or("unterminated entity")? + at;
            out.push(match &rest[at + 1..end] {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                other => return Err(format!("unknown entity &{other};")),
            });
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    #[test]
    fn the_parser_rejects_what_launchd_would() {
        assert!(parse("<plist version=\"1.0\"><dict><key>a</key></dict></plist>").is_err());
        assert!(parse("<plist version=\"1.0\"><dict><key>a</key><string>x</dict></plist>").is_err());
        assert!(parse("<plist version=\"1.0\"><string>a &nbsp; b</string></plist>").is_err());
        assert_eq!(
            parse("<plist version=\"1.0\"><array><string>a &amp; b</string><true/></array></plist>"),
            Ok(Value::Array(vec![Value::String("a & b".to_owned()), Value::Bool(true)]))
        );
    }
}
