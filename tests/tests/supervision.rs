//! Supervised services, end to end: a fault injected into each background service (through the
//! debug build's `KNOWHUB_TEST_FAULTS` switch) is caught, the service restarted, `status` and
//! `kbctl status` say what happened and when until it has healed; a search index damaged while
//! the daemon runs answers every search and is whole again without a restart.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::postgres::{TestPostgres, init_hub, within};
use common::{TestDaemon, ids_of, stdout};
use serde_json::{Value, json};

/// Longer than the daemon's grace (10 s) before a failing service makes it unhealthy.
const PAST_THE_GRACE: Duration = Duration::from_secs(30);

/// A daemon on a fresh home with `config` and the fault switch pointing at a file of the home.
fn daemon_with_faults(config: &str, env: &[(&str, &OsStr)]) -> (TestDaemon, PathBuf) {
    let home = tempfile::Builder::new().prefix("kh-sup-").tempdir().expect("temp dir");
    std::fs::write(home.path().join("config.toml"), config).expect("config");
    let faults = home.path().join("faults");
    let mut env: Vec<(&str, &OsStr)> = env.to_vec();
    env.push(("KNOWHUB_TEST_FAULTS", faults.as_os_str()));
    (TestDaemon::start_in_with(home, &env), faults)
}

fn service<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["services"]
        .as_array()
        .expect("status lists the services")
        .iter()
        .find(|service| service["name"] == name)
        .unwrap_or_else(|| panic!("no service {name} in {status}"))
}

/// Injects `fault` into `name`, checks that the crash is reported and makes the daemon unhealthy
/// (`kbctl status` exits non-zero and names the service), then lifts it and checks that the
/// service is running again, the daemon healthy, and the failure still on record. `poke` wakes a
/// service that sleeps until something happens.
fn crash_and_heal(daemon: &TestDaemon, faults: &Path, name: &str, fault: &str, poke: &dyn Fn()) {
    let before = daemon.ok("status", json!({}));
    assert_eq!(before["healthy"], true, "{before}");
    assert_eq!(service(&before, name)["state"], "running", "{before}");
    let restarts_before = service(&before, name)["restarts"].as_u64().unwrap();

    std::fs::write(faults, format!("{name}={fault}\n")).expect("fault switch");
    let failed = within(PAST_THE_GRACE, || {
        poke();
        let status = daemon.ok("status", json!({}));
        service(&status, name)["unhealthy"] == true && status["healthy"] == false
    });
    let status = daemon.ok("status", json!({}));
    assert!(failed.is_some(), "the {name} service's fault was not reported as unhealthy: {status}");
    let reported = service(&status, name);
    assert!(reported["restarts"].as_u64().unwrap() > restarts_before, "{reported}");
    let failure = reported["last_failure"]["message"].as_str().expect("the failure is on record");
    assert!(failure.contains("fault injected"), "{failure}");
    assert!(reported["unhealthy_since"].is_string(), "{reported}");
    let last_error = status["last_error"]["message"].as_str().unwrap_or_default();
    assert!(last_error.contains(name) && last_error.contains("fault injected"), "{status}");
    let kbctl = daemon.kbctl(&["status"]);
    assert!(!kbctl.status.success(), "kbctl status exits non-zero while {name} fails: {}", stdout(&kbctl));
    let printed = stdout(&kbctl);
    assert!(printed.contains(name) && printed.contains("fault injected"), "kbctl status names the service: {printed}");

    std::fs::write(faults, "").expect("fault lifted");
    let healed = within(PAST_THE_GRACE * 2, || {
        poke();
        let status = daemon.ok("status", json!({}));
        status["healthy"] == true && service(&status, name)["state"] == "running"
    });
    let status = daemon.ok("status", json!({}));
    assert!(healed.is_some(), "the {name} service did not heal: {status}");
    assert!(service(&status, name)["last_failure"]["message"].is_string(), "the failure stays on record: {status}");
    assert!(status.get("last_error").is_none_or(Value::is_null), "no error outlives its cause: {status}");
    let kbctl = daemon.kbctl(&["status"]);
    assert!(kbctl.status.success(), "kbctl status exits 0 once {name} healed: {}", stdout(&kbctl));
    // The service does its work again after the restart.
    assert!(daemon.call("status", json!({})).is_ok());
}

fn wait_running(daemon: &TestDaemon, name: &str) {
    let running =
        within(Duration::from_secs(30), || service(&daemon.ok("status", json!({})), name)["state"] == "running");
    assert!(running.is_some(), "{name} never ran: {}", daemon.ok("status", json!({})));
}

#[test]
fn a_crashing_index_service_is_restarted_and_reported_until_it_heals() {
    let (daemon, faults) = daemon_with_faults("[embedding]\nenabled = false\n", &[]);
    wait_running(&daemon, "index");
    crash_and_heal(&daemon, &faults, "index", "panic", &|| {});
    // Writes are still indexed after the restart.
    let id = daemon.submit("Restarted index takes writes", "kbctl status", "searchable at once", 4);
    assert_eq!(daemon.search_ids("restarted index"), [id]);
}

#[test]
fn an_erring_flush_service_is_restarted_and_reported_until_it_heals() {
    let (daemon, faults) = daemon_with_faults("[embedding]\nenabled = false\n", &[]);
    wait_running(&daemon, "flush");
    crash_and_heal(&daemon, &faults, "flush", "error", &|| {});
}

#[test]
fn a_crashing_extraction_worker_is_restarted_and_reported_until_it_heals() {
    let (daemon, faults) = daemon_with_faults("[embedding]\nenabled = false\n", &[]);
    wait_running(&daemon, "extraction");
    // The worker sleeps until there is work; a retry (of no job) wakes it.
    let poke = || {
        let _ = daemon.call("extract.retry", json!({"ids": [1]}));
    };
    crash_and_heal(&daemon, &faults, "extraction", "panic", &poke);
}

#[test]
fn a_crashing_embedder_is_restarted_and_embeds_again() {
    let model = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/kb-embed/tests/fixtures/tiny-model"));
    let ort = kb_embed::runtime::library_for_tests_and_benchmarks()
        .unwrap_or_else(|reason| panic!("{reason} (tests/run installs it)"));
    let (daemon, faults) =
        daemon_with_faults("", &[("KNOWHUB_MODEL_DIR", model.as_os_str()), ("ORT_DYLIB_PATH", ort.as_os_str())]);
    wait_running(&daemon, "embedder");
    crash_and_heal(&daemon, &faults, "embedder", "panic", &|| {});
    // Embeds what is submitted after the restart: vector search finds it.
    let id = daemon.submit("Embedded after a restart", "tiny model", "vectors again", 4);
    let found = within(Duration::from_secs(20), || {
        daemon
            .call("kb.search", json!({"query": "Embedded after a restart", "mode": "vector"}))
            .is_ok_and(|answer| ids_of(&answer).contains(&id))
    });
    assert!(found.is_some(), "{}", daemon.ok("status", json!({})));
}

#[test]
fn a_crashing_hub_sync_is_reported_and_not_shown_as_connected_then_syncs_again() {
    let postgres = TestPostgres::start();
    init_hub(&postgres, "platform", &["alice"]);
    let home_config = |password: &Path| {
        format!(
            "[embedding]\nenabled = false\n[hub]\nurl = \"{}\"\npassword_file = \"{}\"\nteam = \"platform\"\npoll_seconds = 2\n",
            postgres.url("alice"),
            password.display()
        )
    };
    let password = tempfile::NamedTempFile::new().expect("password file");
    std::fs::write(password.path(), "alice-pw\n").expect("password");
    let (daemon, faults) = daemon_with_faults(&home_config(password.path()), &[]);
    wait_running(&daemon, "hub");
    assert_eq!(daemon.ok("status", json!({}))["hub"]["state"], "connected");

    std::fs::write(&faults, "hub=panic\n").expect("fault switch");
    // `hub.sync` does not hang for a minute on a dead sync thread: it says what happened.
    let answered = within(
        Duration::from_secs(20),
        || matches!(daemon.call("hub.sync", json!({})), Err(error) if error.to_string().contains("fault injected")),
    );
    assert!(answered.is_some(), "{}", daemon.ok("status", json!({})));
    let status = daemon.ok("status", json!({}));
    assert_eq!(status["hub"]["state"], "error", "a crashed sync is not `connected`: {status}");
    std::fs::write(&faults, "").expect("fault lifted");
    let healed = within(PAST_THE_GRACE * 2, || {
        let _ = daemon.call("hub.sync", json!({}));
        let status = daemon.ok("status", json!({}));
        status["healthy"] == true && service(&status, "hub")["state"] == "running"
    });
    assert!(healed.is_some(), "{}", daemon.ok("status", json!({})));

    crash_and_heal(&daemon, &faults, "hub", "error", &|| {
        let _ = daemon.call("hub.sync", json!({}));
    });
    let synced = daemon.ok("hub.sync", json!({}));
    assert_eq!(synced["hub"]["state"], "connected", "{synced}");
}

/// Overwrites every segment file of the index with garbage of the same length, as a disk or
/// another program might, while the daemon has them mapped.
fn damage_index(index_dir: &Path) -> usize {
    let mut damaged = 0;
    for entry in std::fs::read_dir(index_dir).expect("index dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".lock") || name.starts_with('.') || !path.is_file() {
            continue;
        }
        // A merge may remove a file between the listing and here: it is then no longer used.
        let Ok(mut file) = std::fs::OpenOptions::new().write(true).open(&path) else { continue };
        let length = file.metadata().expect("metadata").len() as usize;
        let garbage: Vec<u8> = (0..length).map(|i| (i * 7919 % 251) as u8 ^ 0xa5).collect();
        std::io::Write::write_all(&mut file, &garbage).expect("overwrite");
        damaged += 1;
    }
    damaged
}

#[test]
fn a_search_index_damaged_while_running_answers_every_search_and_heals_without_a_restart() {
    let daemon = TestDaemon::start();
    let mut ids = Vec::new();
    for n in 0..40 {
        ids.push(daemon.submit(
            &format!("Rotate the signing key number {n}"),
            &format!("keyctl rotate --slot {n}"),
            "the old tokens stay valid for a day",
            4,
        ));
    }
    let pid = daemon.pid();
    let index_dir = PathBuf::from(daemon.ok("status", json!({}))["paths"]["index"].as_str().unwrap());
    let wanted = ids[17].clone();
    assert_eq!(daemon.search_ids("keyctl rotate slot 17").first(), Some(&wanted));
    // The writes are in the segments (not only staged in memory) before they are damaged.
    daemon.wait_until_index_committed();
    assert!(damage_index(&index_dir) > 0, "the index has segment files");

    // Every search gets an answer: results, or an error that says the index is damaged.
    let mut errors = 0;
    for _ in 0..20 {
        match daemon.call("kb.search", json!({"query": "keyctl rotate slot 17"})) {
            Ok(answer) => assert!(answer["results"].is_array(), "{answer}"),
            Err(error) => {
                let text = error.to_string();
                assert!(text.contains("index") && !text.contains("connection"), "{text}");
                errors += 1;
            }
        }
    }
    eprintln!("{errors} of 20 searches on the damaged index answered with an error");
    // A write is stored whatever the index's state; the damage shows at the latest when the
    // index takes it (reads of garbage do not always fail).
    let after = daemon.submit("After the damage", "tantivy", "rebuilt from the store", 5);
    let healed = within(Duration::from_secs(30), || {
        let status = daemon.ok("status", json!({}));
        let finds = |query: &str, id: &String| {
            daemon.call("kb.search", json!({"query": query})).is_ok_and(|answer| ids_of(&answer).first() == Some(id))
        };
        status["index"]["state"] == "ready"
            && finds("keyctl rotate slot 17", &wanted)
            && finds("after the damage", &after)
    });
    let status = daemon.ok("status", json!({}));
    assert!(healed.is_some(), "the index did not heal: {status}\n{}", daemon.log_text());
    assert_eq!(status["pid"].as_u64(), Some(u64::from(pid)), "no restart");
    assert_eq!(status["index"]["documents"].as_u64(), Some(41), "{status}");
    assert_eq!(status["healthy"], true, "{status}");
    assert!(status.get("last_error").is_none_or(Value::is_null), "no error outlives its cause: {status}");
    // And new writes are indexed as before.
    let id = daemon.submit("Later still", "tantivy", "indexed at once", 5);
    assert_eq!(daemon.search_ids("later still"), [id]);
}
