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
