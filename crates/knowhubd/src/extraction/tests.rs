//! The extraction worker on a real store: what `status` reads of the queue while the worker
//! holds a job back for the daily token cap.

use std::path::PathBuf;

use kb_engine::EngineConfig;
use kb_proto::Paths;

use super::*;

/// A data directory of its own, removed when dropped.
struct Home(PathBuf);

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn queue(engine: &Engine, session: &str) -> i64 {
    let fingerprints = vec![format!("{session}-1")];
    let job = NewJob {
        session_key: session,
        agent_id: None,
        turns_json: "[]",
        turn_count: 0,
        fingerprints: &fingerprints,
        privacy: "strict",
        require_approval: true,
    };
    match engine.lock_writer().enqueue_extraction(&job, 100, now_ms()).unwrap() {
        Enqueued::Queued { id, .. } => id,
        other => panic!("not queued: {other:?}"),
    }
}

/// CI read `status` while the worker held a job back for the daily cap and got `queued: 0`
/// beside the wait: the queue was counted before the job arrived, and the worker's wait read
/// after it held the job. Here the job arrives and the worker holds it exactly between the two
/// reads of `status`, every time: a wait for the cap is never shown with nothing queued.
#[test]
fn status_never_shows_a_wait_for_the_cap_with_nothing_queued() {
    let home = Home(std::env::temp_dir().join(format!("kh-queue-status-{}-{}", std::process::id(), now_ms())));
    let engine = Engine::open(Paths::resolve(Some(home.0.clone()), None), EngineConfig::default()).unwrap();
    let config = ExtractionConfig {
        base_url: Some("http://127.0.0.1:9/v1".to_owned()),
        model: Some("scripted".to_owned()),
        daily_token_cap: 5_000,
        ..ExtractionConfig::default()
    };
    let extraction = Extraction::new(config);
    let day = now_ms().div_euclid(DAY_MS);
    // Today's cap is spent but for 100 tokens, by a job that failed.
    let spent = queue(&engine, "s0");
    engine.lock_writer().fail_extraction(spent, "spent", 4_900, day, now_ms()).unwrap();

    let (waiting, stats) = read_queue_status(&engine, &extraction, day, || {
        queue(&engine, "s1");
        assert!(matches!(take_next(&engine, &extraction).unwrap(), Next::Wait(_)), "held back for the cap");
    })
    .unwrap();
    let held = extraction.waiting().expect("the worker says it waits");
    assert!(held.contains("daily token cap is reached"), "{held}");
    let says_waiting_for_cap = waiting.as_deref().is_some_and(|waiting| waiting.contains("cap"));
    assert!(!says_waiting_for_cap || stats.queued >= 1, "waiting {waiting:?} with {} queued", stats.queued);

    // Read again, while the worker holds it: the wait and the job.
    let (waiting, stats) = queue_status(&engine, &extraction, day).unwrap();
    assert_eq!((waiting.as_deref(), stats.queued), (Some(held.as_str()), 1));
    assert_eq!(stats.tokens_today, 4_900);
}
