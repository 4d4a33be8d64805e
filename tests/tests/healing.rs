//! End-to-end tests of an index that cannot commit: the daemon says so, keeps every write, and
//! catches up by itself once the cause is gone (hostile-conditions issue, item 2).

mod common;

use std::time::{Duration, Instant};

use common::TestDaemon;
use rustix::process::{Pid, Resource, Rlimit, prlimit};
use serde_json::{Value, json};

fn open_files(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).expect("/proc lists the daemon's files").count() as u64
}

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

/// Regression: at the open-file limit, submits were acknowledged while the index commit failed;
/// `status` then said ready and healthy with the store's sequence number applied and 1 document
/// for 22 experiences, and 21 of 22 could not be found until `kbctl reindex`.
#[test]
fn an_index_that_cannot_commit_is_reported_degraded_and_heals_without_a_restart() {
    let daemon = TestDaemon::start();
    let pid = Pid::from_raw(daemon.pid() as i32).expect("a pid");
    // A few descriptors above what the idle daemon holds: enough to accept a connection, too
    // few for tantivy to write a segment. The hard limit stays, so raising it back needs no root.
    let (soft, hard) = nofile_limits(daemon.pid());
    let tight = open_files(daemon.pid()) + 4;
    let limits = prlimit(Some(pid), Resource::Nofile, Rlimit { current: Some(tight), maximum: hard }).expect("lower");
    assert_eq!(limits.current, soft);

    // One connection for all the submits: the limit leaves no room for more.
    let acknowledged: Vec<(usize, String)> = common::runtime().block_on(async {
        let mut client = kb_proto::Client::connect(&daemon.socket).await.expect("connects");
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
    let degraded = status(&daemon);
    assert_eq!(degraded["index"]["state"], "degraded", "{degraded}");
    assert_eq!(degraded["healthy"], false);
    // The reason is tantivy's error: "Too many open files" when a commit cannot open a file,
    // "Segment updater killed" when a background merge failed first.
    let detail = degraded["index"]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("the search index could not be updated"), "says what failed: {detail}");
    assert!(degraded["index"]["applied_seq"].as_u64() < degraded["index"]["store_seq"].as_u64(), "{degraded}");

    // Searches still answer, from what the index holds, and say it is behind.
    let answer = daemon.ok("kb.search", json!({"query": "tune worker pool", "min_score": 1}));
    assert!(answer["note"].as_str().unwrap_or_default().contains("behind"), "{answer}");

    // The cause goes away; nobody restarts anything or writes anything.
    prlimit(Some(pid), Resource::Nofile, limits).expect("raise the limit again");
    let deadline = Instant::now() + Duration::from_secs(20);
    let healed = loop {
        let status = status(&daemon);
        if status["index"]["state"] == "ready" {
            break status;
        }
        assert!(Instant::now() < deadline, "the index did not catch up by itself: {status}");
        std::thread::sleep(Duration::from_millis(200));
    };
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
