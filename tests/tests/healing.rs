//! End-to-end tests of an index that cannot commit: the daemon says so, keeps every write, and
//! catches up by itself once the cause is gone (hostile-conditions issue, item 2).

mod common;

use std::time::{Duration, Instant};

use std::path::{Path, PathBuf};

use common::{TestDaemon, ids_of};
use rustix::process::{Pid, Resource, Rlimit, prlimit};
use serde_json::{Value, json};

/// The soft and hard limits of open files of a process (`None`: unlimited), from /proc.
fn nofile_limits(pid: u32) -> (Option<u64>, Option<u64>) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("/proc has the limits");
    let line = limits.lines().find(|line| line.starts_with("Max open files")).expect("an open-files line");
    let mut numbers = line["Max open files".len()..].split_whitespace().map(|value| value.parse::<u64>().ok());
    (numbers.next().flatten(), numbers.next().flatten())
}

fn status(daemon: &TestDaemon) -> Value {
    daemon.ok("status", json!({}))
}

/// Waits (up to 5 s) for the index to say degraded: a write is staged in memory and answered,
/// and the index's commit (within 250 ms) is what fails on a full disk; returns that status.
fn wait_until_index_degraded(daemon: &TestDaemon) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = status(daemon);
        if status["index"]["state"] == "degraded" {
            return status;
        }
        assert!(Instant::now() < deadline, "the failing index was not reported: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Regression: at the open-file limit, submits were acknowledged while the index commit failed;
/// `status` then said ready and healthy with the store's sequence number applied and 1 document
/// for 22 experiences, and 21 of 22 could not be found until `kbctl reindex`.
#[test]
fn an_index_that_cannot_commit_is_reported_degraded_and_heals_without_a_restart() {
    let daemon = TestDaemon::start();
    let pid = Pid::from_raw(daemon.pid() as i32).expect("a pid");
    let (soft, hard) = nofile_limits(daemon.pid());
    // One connection for all the submits, made first; then the daemon may open no new file at
    // all: SQLite writes through the files it holds, tantivy cannot create a segment. (A few
    // descriptors of headroom made the test depend on timing: with commits that need fewer
    // files at once, a clean-clone run saw every commit succeed.) The hard limit stays, so
    // raising it back needs no root.
    let acknowledged: Vec<(usize, String)> = common::runtime().block_on(async {
        let mut client = kb_proto::Client::connect(&daemon.socket).await.expect("connects");
        // The daemon has accepted the connection once it answers on it.
        client.call_value("status", json!({})).await.expect("status");
        let tight = common::lowest_free_descriptor(daemon.pid());
        let limits =
            prlimit(Some(pid), Resource::Nofile, Rlimit { current: Some(tight), maximum: hard }).expect("lower");
        assert_eq!(limits.current, soft);
        let mut acknowledged = Vec::new();
        for number in 0..22 {
            let params = json!({"task": format!("tune worker pool {number}"), "resource": format!("knob-{number}-zq"), "result": "steady"});
            match client.call_value("kb.submit", params).await {
                Ok(answer) => acknowledged.push((number, answer["id"].as_str().expect("an id").to_owned())),
                Err(error) => eprintln!("submit {number} refused: {error}"),
            }
        }
        acknowledged
    });
    assert!(
        acknowledged.len() >= 10,
        "too few submits got through to test anything: {}; log:\n{}",
        acknowledged.len(),
        daemon.log_text()
    );
    let degraded = wait_until_index_degraded(&daemon);
    assert_eq!(degraded["healthy"], false);
    // The reason is tantivy's error: "Too many open files" when a commit cannot open a file,
    // "Segment updater killed" when a background merge failed first.
    let detail = degraded["index"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("the search index could not be updated"), "says what failed: {detail}");
    // The segments are behind the store (writes staged before the failure stay searchable from
    // memory, those after it are not staged).
    assert!(degraded["index"]["committed_seq"].as_u64() < degraded["index"]["store_seq"].as_u64(), "{degraded}");

    // Searches still answer, from what the index holds, and say it is behind.
    let answer = daemon.ok("kb.search", json!({"query": "tune worker pool", "min_score": 1}));
    assert!(answer["note"].as_str().unwrap_or_default().contains("behind"), "{answer}");

    // The cause goes away; nobody restarts anything or writes anything.
    prlimit(Some(pid), Resource::Nofile, Rlimit { current: soft, maximum: hard }).expect("raise the limit again");
    let healed = daemon.wait_until_index_ready();
    assert_eq!(healed["healthy"], true, "{healed}");
    assert_eq!(healed["index"]["applied_seq"], healed["index"]["store_seq"]);
    assert_eq!(healed["index"]["documents"].as_u64(), Some(acknowledged.len() as u64), "{healed}");
    for (number, id) in &acknowledged {
        let found = daemon.search_ids(&format!("knob-{number}-zq"));
        assert_eq!(found.first(), Some(id), "experience {number} is findable after healing");
    }
}

/// An index whose commit recorded the store's sequence number while it lost documents is not
/// trusted at the next start: the document count must agree with the store, or it is rebuilt.
#[test]
fn an_index_missing_documents_is_rebuilt_at_start() {
    let mut daemon = TestDaemon::start();
    let ids: Vec<String> = (0..5)
        .map(|number| daemon.submit(&format!("cache step {number}"), &format!("layer-{number}-qx"), "faster builds", 4))
        .collect();
    daemon.terminate();
    // Behind the daemon's back, drop two documents and commit at the same sequence number: the
    // shape a writer that lost documents left behind.
    {
        let (index, _) = kb_index::ExperienceIndex::open(&daemon.home.path().join("index")).expect("the index opens");
        let applied = index.applied_seq();
        index.delete(&[ids[1].as_str(), ids[3].as_str()]).unwrap();
        index.commit(applied).unwrap();
        assert_eq!(index.num_docs(), 3);
    }
    daemon.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = status(&daemon);
        if status["index"]["state"] == "ready" {
            assert_eq!(status["index"]["documents"], 5, "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(100));
    }
    for (number, id) in ids.iter().enumerate() {
        assert_eq!(daemon.search_ids(&format!("layer-{number}-qx")), vec![id.clone()]);
    }
    assert!(
        daemon.log_text().contains("the index holds 3 documents for 5 active experiences"),
        "{}",
        daemon.log_text()
    );
}

/// Runs a daemon whose home is a small tmpfs of its own, with a smaller one for the index
/// inside it (a private mount namespace: as root, or as an unprivileged user through a user
/// namespace), its socket outside both.
fn start_on_small_disks() -> TestDaemon {
    let home = tempfile::Builder::new().prefix("kh-full-").tempdir().expect("temp dir");
    let disk = home.path().join("disk");
    std::fs::create_dir(&disk).expect("mount point");
    let as_root = rustix::process::geteuid().is_root();
    let namespace: &[&str] = if as_root { &["--mount"] } else { &["--user", "--map-root-user", "--mount"] };
    // The config goes in after the mount, which hides whatever the directory held.
    let script = "mount -t tmpfs -o size=16m,mode=0700 knowhub-store-disk \"$KNOWHUB_HOME\" && \
         mkdir \"$KNOWHUB_HOME/index\" && \
         mount -t tmpfs -o size=4m,mode=0700 knowhub-index-disk \"$KNOWHUB_HOME/index\" && \
         printf '[embedding]\\nenabled = false\\n' > \"$KNOWHUB_HOME/config.toml\" && exec \"$0\"";
    let mut wrapper: Vec<std::ffi::OsString> = vec!["unshare".into()];
    wrapper.extend(namespace.iter().map(Into::into));
    wrapper.extend(["--propagation", "private", "--", "sh", "-c", script].map(Into::into));
    let socket = home.path().join("knowhub-run").join("knowhubd.sock");
    let log = home.path().join("daemon.log");
    let env = vec![("KNOWHUB_HOME".into(), disk.into()), ("KNOWHUB_SOCKET".into(), socket.clone().into())];
    let mut daemon = TestDaemon { home, socket, child: None, log, env, wrapper };
    daemon.spawn();
    daemon
}

/// Writes zeros to `path` until its filesystem is full.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).expect("filler");
    let block = vec![0u8; 64 * 1024];
    loop {
        match std::io::Write::write(&mut file, &block) {
            Ok(0) => return,
            Ok(_) => {}
            Err(error) => {
                assert_eq!(error.raw_os_error(), Some(libc_enospc()), "filling stops at a full disk: {error}");
                return;
            }
        }
    }
}

/// Full disks: the index's (writes are kept and acknowledged, status says degraded, searches
/// answer with a note), then the store's (writes fail with an error that says so). Nothing
/// acknowledged is lost, and once space is freed everything works again without a restart (the
/// hostile-conditions issue saw every search fail with -32005 until a restart).
#[test]
fn full_disks_fail_clearly_lose_nothing_and_need_no_restart_once_freed() {
    let daemon = start_on_small_disks();
    let pid = daemon.pid();
    // The daemon's own view of its disks: the mounts exist in its namespace only.
    let disk = PathBuf::from(format!("/proc/{pid}/root{}", daemon.home.path().join("disk").display()));
    assert!(disk.join("knowhub.db").exists(), "the store is on the small disk; log:\n{}", daemon.log_text());

    let mut acknowledged: Vec<(String, String)> = Vec::new();
    // With long content every write needs new pages in the store.
    let mut submit = |label: String, long: bool| -> Result<(), String> {
        let content = if long { format!("{label} ").repeat(2000) } else { String::new() };
        let params = json!({"task": format!("provision volume {label}"), "resource": format!("disk-{label}-qz"), "result": "mounted", "content": content});
        match daemon.call("kb.submit", params) {
            Ok(answer) => {
                acknowledged.push((label, answer["id"].as_str().expect("an id").to_owned()));
                Ok(())
            }
            Err(error) => Err(error.to_string()),
        }
    };
    for number in 0..5 {
        submit(format!("before{number}"), false).expect("the disks have room");
    }

    // Those are in the index's segments before its disk fills up.
    daemon.wait_until_index_committed();

    // The index's disk fills up: the store still takes every write.
    let index_filler = disk.join("index").join("filler");
    fill(&index_filler);
    for number in 0..5 {
        submit(format!("indexfull{number}"), false).expect("the store has room");
    }
    let degraded = wait_until_index_degraded(&daemon);
    assert_eq!(degraded["healthy"], false, "{degraded}");
    let detail = degraded["index"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("No space left") || detail.contains("bytes free"), "says why: {detail}");
    let answer = daemon.ok("kb.search", json!({"query": "provision volume", "min_score": 1}));
    assert!(!ids_of(&answer).is_empty(), "searches answer from what the index holds: {answer}");
    assert!(answer["note"].as_str().unwrap_or_default().contains("behind"), "{answer}");

    // The store's disk fills up too: writes are refused, saying why.
    let store_filler = disk.join("filler");
    fill(&store_filler);
    let mut refusals = Vec::new();
    for number in 0..5 {
        if let Err(error) = submit(format!("storefull{number}"), true) {
            refusals.push(error);
        }
    }
    assert!(!refusals.is_empty(), "a full disk refuses writes; log:\n{}", daemon.log_text());
    for refusal in &refusals {
        assert!(refusal.contains("disk is full") && refusal.contains("nothing was stored"), "{refusal}");
    }

    std::fs::remove_file(&store_filler).expect("space freed");
    std::fs::remove_file(&index_filler).expect("space freed");
    // No restart: the index catches up by itself, new writes succeed, and every acknowledged
    // experience is found, the ones acknowledged while the index's disk was full included.
    let healed = daemon.wait_until_index_ready();
    assert_eq!(healed["healthy"], true, "{healed}");
    submit("after".to_owned(), true).expect("writes work again");
    let status = status(&daemon);
    assert_eq!(status["experiences"].as_u64(), Some(acknowledged.len() as u64), "{status}");
    assert_eq!(status["index"]["documents"], status["experiences"], "{status}");
    assert_eq!(daemon.pid(), pid, "the same process");
    for (label, id) in &acknowledged {
        let found = daemon.ok("kb.search", json!({"query": format!("disk-{label}-qz"), "min_score": 1}));
        assert_eq!(ids_of(&found).first(), Some(id), "{label} is found first after the disks were freed: {found}");
    }
}

fn libc_enospc() -> i32 {
    rustix::io::Errno::NOSPC.raw_os_error()
}
