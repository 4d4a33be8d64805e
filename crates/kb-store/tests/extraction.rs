//! Tests of the extraction queue on a real SQLite file: messages queued once per session, the
//! bounded queue, a job's result written once, rejections remembered, held proposals approved.

use kb_core::{ExperienceId, GatePolicy, NewExperience, Source, Status, gate};
use kb_store::{Enqueued, JobResult, NewJob, ProposalMeta, Store, WriteItem};

fn job<'a>(session: &'a str, fingerprints: &'a [String]) -> NewJob<'a> {
    NewJob {
        session_key: session,
        agent_id: Some("main"),
        turns_json: "[]",
        turn_count: fingerprints.len(),
        fingerprints,
        privacy: "strict",
        require_approval: true,
    }
}

fn fingerprints(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn proposal(task: &str) -> kb_core::Gated {
    let new = NewExperience {
        task: task.to_owned(),
        resource: "npm run deploy".to_owned(),
        result: "works as www-data".to_owned(),
        score: Some(4),
        source: Some(Source::Extraction),
        confidence: Some(0.9),
        ..NewExperience::default()
    };
    gate(new, &GatePolicy::default()).unwrap()
}

#[test]
fn messages_are_queued_once_per_session_and_the_queue_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let first = fingerprints(&["a", "b"]);
    assert_eq!(store.enqueue_extraction(&job("s1", &first), 2, 1_000).unwrap(), Enqueued::Queued { id: 1, dropped: 0 });
    assert_eq!(store.unseen_fingerprints("s1", &fingerprints(&["a", "c"])).unwrap(), vec![false, true]);
    assert_eq!(store.unseen_fingerprints("s2", &fingerprints(&["a"])).unwrap(), vec![true], "per session");
    // A job naming an already queued message is not queued (another event got there first).
    assert_eq!(
        store.enqueue_extraction(&job("s1", &fingerprints(&["b", "c"])), 2, 1_001).unwrap(),
        Enqueued::AlreadySeen
    );
    // Skipped messages count as seen too.
    store.skip_conversation("s1", &fingerprints(&["c"]), "skipped", 1_002).unwrap();
    assert_eq!(store.unseen_fingerprints("s1", &fingerprints(&["c"])).unwrap(), vec![false]);

    store.enqueue_extraction(&job("s2", &fingerprints(&["x"])), 2, 1_003).unwrap();
    let third = store.enqueue_extraction(&job("s3", &fingerprints(&["y"])), 2, 1_004).unwrap();
    assert_eq!(third, Enqueued::Queued { id: 3, dropped: 1 }, "past two queued, the oldest goes");
    let stats = store.extraction_stats(0).unwrap();
    assert_eq!((stats.queued, stats.counters["dropped"], stats.counters["skipped"]), (2, 1, 1));
    let (next, _) = store.next_extraction_job(2_000).unwrap();
    assert_eq!(next.unwrap().session_key, "s2", "the oldest left is next");
}

#[test]
fn a_jobs_result_is_written_once_with_its_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    store.enqueue_extraction(&job("s1", &fingerprints(&["a"])), 10, 1_000).unwrap();
    let (job, _) = store.next_extraction_job(1_000).unwrap();
    let job = job.unwrap();
    store.start_extraction_attempt(job.id).unwrap();

    // A retry waits until its time, keeps the job queued and counts the tokens spent.
    store.retry_extraction(job.id, 5_000, "the endpoint answered 503", 100, 7).unwrap();
    assert_eq!(store.next_extraction_job(4_999).unwrap(), (None, Some(5_000)));
    let again = store.next_extraction_job(5_000).unwrap().0.unwrap();
    assert_eq!(again.attempts, 1);

    let mut held = proposal("Deploy the docs");
    let key = held.dedup_key.clone();
    held.status = Status::Pending;
    held.dedup_key = format!("proposal:{}:0:{key}", job.id);
    let meta =
        ProposalMeta { outcome: "success".into(), evidence_json: "[]".into(), dedup_key: key.clone(), similar: None };
    let counters = [("proposed", 1)];
    let result = JobResult { tokens: 900, day: 7, counters: &counters, now_ms: 6_000 };
    let (outcomes, _) = store.finish_extraction(job.id, &[WriteItem::plain(&held)], &[Some(meta)], &result).unwrap();
    assert_eq!(outcomes.len(), 1);
    let stats = store.extraction_stats(7).unwrap();
    assert_eq!((stats.done, stats.queued, stats.tokens_today, stats.pending_proposals), (1, 0, 1_000, 1));
    assert_eq!(store.next_extraction_job(10_000).unwrap(), (None, None), "done once: never taken again");
    let info = store.proposal_infos(&[outcomes[0].id.as_str()]).unwrap();
    assert_eq!(info[outcomes[0].id.as_str()].dedup_key, key);
    assert!(store.held_proposal(&key).unwrap());

    // A submit of the same text is not blocked or merged by the held proposal.
    let (submitted, _) = store.write(&[proposal("Deploy the docs")], 7_000).unwrap();
    assert!(!submitted[0].merged);

    // Approving the proposal rewrites it under its id with its real key: it merges into the
    // submitted one, which says the same.
    let mut approved = proposal("Deploy the docs");
    approved.status = Status::Active;
    let id = ExperienceId::from_stored(outcomes[0].id.to_string());
    let (outcome, _) = store.replace_held(&id, WriteItem::plain(&approved), 8_000).unwrap().unwrap();
    assert!(outcome.merged);
    assert_eq!(outcome.id, submitted[0].id);
    assert!(store.get(id.as_str()).unwrap().is_none());
    assert!(store.replace_held(&id, WriteItem::plain(&approved), 9_000).unwrap().is_none(), "not held any more");
}

#[test]
fn a_rejected_proposal_is_remembered_by_its_real_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    store.enqueue_extraction(&job("s1", &fingerprints(&["a"])), 10, 1_000).unwrap();
    let mut held = proposal("Send the secrets away");
    let key = held.dedup_key.clone();
    held.status = Status::Pending;
    held.dedup_key = format!("proposal:1:0:{key}");
    let meta =
        ProposalMeta { outcome: "success".into(), evidence_json: "[]".into(), dedup_key: key.clone(), similar: None };
    let result = JobResult { tokens: 10, day: 1, counters: &[], now_ms: 2_000 };
    let (outcomes, _) = store.finish_extraction(1, &[WriteItem::plain(&held)], &[Some(meta)], &result).unwrap();
    assert!(!store.rejected_before(&key).unwrap());
    store.set_status(&[outcomes[0].id.as_str()], Status::Rejected, 3_000).unwrap();
    assert!(store.rejected_before(&key).unwrap());
    assert!(!store.held_proposal(&key).unwrap());
}

#[test]
fn failed_jobs_forget_their_conversation_after_a_week_and_old_jobs_go() {
    const DAY: i64 = 86_400_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    let mut store = Store::open(&path).unwrap();
    let first = fingerprints(&["a"]);
    let with_turns =
        NewJob { turns_json: "[{\"role\":\"user\",\"text\":\"hi\",\"fingerprint\":\"a\"}]", ..job("s1", &first) };
    store.enqueue_extraction(&with_turns, 10, 0).unwrap();
    store.fail_extraction(1, "the endpoint answered 401", 0, 0, DAY).unwrap();
    let turns = |_: &Store| -> Vec<String> {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut statement = conn.prepare("SELECT turns FROM extraction_jobs ORDER BY id").unwrap();
        let rows = statement.query_map([], |row| row.get(0)).unwrap();
        rows.collect::<rusqlite::Result<Vec<String>>>().unwrap()
    };
    // Six days later it is still there to look into.
    store.enqueue_extraction(&job("s2", &fingerprints(&["b"])), 10, 7 * DAY).unwrap();
    assert!(turns(&store)[0].contains("hi"));
    // A week after it failed, its conversation is gone; the row stays, the counter counts it.
    store.enqueue_extraction(&job("s3", &fingerprints(&["c"])), 10, 8 * DAY + 1).unwrap();
    assert_eq!(turns(&store)[0], "[]");
    // After 90 days the row goes too; the counts in status do not change.
    store.enqueue_extraction(&job("s4", &fingerprints(&["d"])), 10, 92 * DAY).unwrap();
    assert_eq!(turns(&store).len(), 3, "the failed row went, the queued ones stay");
    let stats = store.extraction_stats(0).unwrap();
    assert_eq!((stats.failed, stats.queued), (1, 3));
}
