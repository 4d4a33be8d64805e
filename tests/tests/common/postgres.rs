//! The hub tests' PostgreSQL (`kb_hub::testing`), and waiting for a condition.

use std::time::{Duration, Instant};

// Used by the hub tests only; every test binary compiles this module.
#[allow(unused_imports)]
pub use kb_hub::testing::{ADMIN_PASSWORD, TestPostgres, make_ca};

/// Creates the hub schema with `kbctl hub init` as the admin, and adds `members` with the SQL
/// it printed (each member's password is `<name>-pw`). Returns what kbctl printed.
pub fn init_hub(postgres: &TestPostgres, team: &str, members: &[&str]) -> String {
    let mut args = vec![
        "hub".to_owned(),
        "init".to_owned(),
        "--url".to_owned(),
        postgres.url("postgres"),
        "--team".to_owned(),
        team.to_owned(),
    ];
    for member in members {
        args.extend(["--member".to_owned(), (*member).to_owned()]);
    }
    let output = std::process::Command::new(super::bin("kbctl"))
        .args(&args)
        .env("PGPASSWORD", ADMIN_PASSWORD)
        .env("KNOWHUB_SOCKET", "/nonexistent/socket")
        .output()
        .expect("kbctl runs");
    let printed = super::stdout(&output);
    assert!(output.status.success(), "kbctl hub init failed: {printed}{}", super::stderr(&output));
    for member in members {
        let sql = printed.replace(
            &format!("CREATE ROLE \"{member}\" LOGIN PASSWORD 'change-me'"),
            &format!("CREATE ROLE \"{member}\" LOGIN PASSWORD '{member}-pw'"),
        );
        // Only this member's block.
        let block: String = sql
            .split("-- add ")
            .find(|block| block.starts_with(&format!("{member} ")))
            .expect("a block per member")
            .lines()
            .filter(|line| !line.starts_with("--") && !line.trim().is_empty() && !line.starts_with(member))
            .collect::<Vec<_>>()
            .join("\n");
        postgres.sql(&block);
    }
    printed
}

/// A daemon of `team` logging in to the hub at `url` with `password`, with more `[hub]`
/// settings in `extra`; started, not waited for. Embeddings are off.
pub fn hub_daemon(team: &str, url: &str, password: &str, extra: &str) -> super::TestDaemon {
    hub_daemon_with(team, url, password, extra, "enabled = false", &[])
}

/// [`hub_daemon`] with `embedding` as its `[embedding]` settings and `env` for the process
/// (a model directory and ONNX Runtime, say).
pub fn hub_daemon_with(
    team: &str,
    url: &str,
    password: &str,
    extra: &str,
    embedding: &str,
    env: &[(&str, &std::ffi::OsStr)],
) -> super::TestDaemon {
    let home = tempfile::Builder::new().prefix("kh-").tempdir().expect("temp dir");
    let password_file = home.path().join("hub.password");
    std::fs::write(&password_file, format!("{password}\n")).expect("password file");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[embedding]\n{embedding}\n[hub]\nurl = \"{url}\"\npassword_file = \"{}\"\nteam = \"{team}\"\npoll_seconds = 2\n{extra}",
            password_file.display()
        ),
    )
    .expect("config");
    super::TestDaemon::start_in_with(home, env)
}

/// A daemon of `team` logging in to the hub as `name` (password `<name>-pw`), with more
/// `[hub]` settings in `extra`, once it says it is connected.
pub fn member_of(postgres: &TestPostgres, team: &str, name: &str, extra: &str) -> super::TestDaemon {
    let daemon = hub_daemon(team, &postgres.url(name), &format!("{name}-pw"), extra);
    let connected = within(Duration::from_secs(20), || hub_status(&daemon)["state"] == "connected");
    assert!(connected.is_some(), "{name} never connected: {}", daemon.log_text());
    daemon
}

/// The hub's part of a daemon's `status`.
pub fn hub_status(daemon: &super::TestDaemon) -> serde_json::Value {
    daemon.ok("status", serde_json::json!({}))["hub"].clone()
}

/// Polls `check` every 50 ms until it is true or `timeout` passes; how long it took.
pub fn within(timeout: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    loop {
        if check() {
            return Some(started.elapsed());
        }
        if started.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
