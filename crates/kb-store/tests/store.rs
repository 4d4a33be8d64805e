//! Tests of the store on real SQLite files: merging, sequence numbers, tombstones, migrations.

use kb_core::{GatePolicy, NewExperience, Status, gate};
use kb_store::{Error, ListFilter, Store, StoredContent};

fn gated(task: &str, score: i64, content: Option<&str>) -> kb_core::Gated {
    let new = NewExperience {
        task: task.to_owned(),
        resource: "resource".to_owned(),
        result: "result".to_owned(),
        score: Some(score),
        content: content.map(str::to_owned),
        ..NewExperience::default()
    };
    gate(new, &GatePolicy::default()).unwrap()
}

#[test]
fn duplicates_merge_within_and_across_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let (outcomes, seq) = store
        .write(&[gated("same task", 2, None), gated("Same  TASK.", 4, None), gated("other", 3, None)], 1_000)
        .unwrap();
    assert_eq!(seq, 3, "insert, merge raising the rating, insert");
    assert!(!outcomes[0].merged && outcomes[1].merged && !outcomes[2].merged);
    assert_eq!(outcomes[0].id, outcomes[1].id);
    let stored = store.get(outcomes[0].id.as_str()).unwrap().unwrap();
    assert_eq!((stored.score, stored.merge_count), (4, 1));

    // A merge that changes nothing the index sees does not bump the sequence number...
    let (_, seq_after) = store.write(&[gated("same task", 1, None)], 2_000).unwrap();
    assert_eq!(seq_after, 3);
    // ...one that adds content does.
    let (_, seq_after) = store.write(&[gated("same task", 1, Some("details"))], 3_000).unwrap();
    assert_eq!(seq_after, 4);
    assert_eq!(
        store.content(outcomes[0].id.as_str()).unwrap(),
        StoredContent::Content { content: "details".to_owned(), content_type: "text/plain".to_owned() }
    );
    assert_eq!(store.get(outcomes[0].id.as_str()).unwrap().unwrap().merge_count, 3);
}

#[test]
fn changes_since_reports_upserts_and_deletes_until_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let (outcomes, _) = store.write(&[gated("a", 3, None), gated("b", 3, None), gated("c", 3, None)], 1).unwrap();
    let (existed, seq) = store.delete(&[outcomes[1].id.as_str(), "01ARZ3NDEKTSV4RRFFQ69G5FAV"]).unwrap();
    assert_eq!(existed, vec![true, false]);
    assert_eq!(seq, 4);
    let status_seq = store.set_status(outcomes[2].id.as_str(), Status::Rejected, 2).unwrap();
    assert_eq!(status_seq, Some(5));

    let changes = store.changes_since(3).unwrap();
    assert_eq!(changes.seq, 5);
    assert_eq!(changes.deleted_ids, vec![outcomes[1].id.to_string()]);
    assert_eq!(changes.upserts.len(), 1);
    assert_eq!(changes.upserts[0].status, Status::Rejected);

    let everything = store.changes_since(0).unwrap();
    assert_eq!(everything.upserts.len(), 2);
    store.prune_tombstones(5).unwrap();
    assert!(store.changes_since(0).unwrap().deleted_ids.is_empty());

    let mut n_rows = 0;
    let rebuilt_seq = store
        .for_each_index_row(1, |rows| -> kb_store::Result<()> {
            n_rows += rows.len();
            Ok(())
        })
        .unwrap();
    assert_eq!((n_rows, rebuilt_seq), (2, 5));
    let listed = store.list(&ListFilter { status: Some(Status::Active), limit: 10, ..ListFilter::default() }).unwrap();
    assert_eq!(listed.len(), 1);
}

#[test]
fn data_survives_reopening_and_readers_see_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    let id = {
        let mut store = Store::open(&path).unwrap();
        store.write(&[gated("persisted", 5, Some("body"))], 1).unwrap().0[0].id.clone()
    };
    let reader = Store::open_reader(&path).unwrap();
    assert_eq!(reader.get(id.as_str()).unwrap().unwrap().task, "persisted");
    let mut writer = Store::open(&path).unwrap();
    assert_eq!(writer.seq().unwrap(), 1);
    writer.write(&[gated("second", 3, None)], 2).unwrap();
    assert_eq!(reader.counts().unwrap().total, 2, "a reader sees what the writer committed");

    let backup = dir.path().join("backup.db");
    reader.backup_to(&backup).unwrap();
    assert_eq!(Store::open(&backup).unwrap().counts().unwrap().active, 2);
}

#[test]
fn a_database_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    match Store::open(&path) {
        Err(Error::SchemaTooNew { found: 99, .. }) => {}
        other => panic!("expected SchemaTooNew, got {:?}", other.map(|_| ())),
    }
    let message = Store::open(&path).err().unwrap().to_string();
    assert!(message.contains("upgrade knowhubd"), "{message}");
}

#[test]
fn a_file_that_is_not_a_database_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    let junk = b"this is not sqlite at all, just text that is long enough to have a header".repeat(20);
    std::fs::write(&path, &junk).unwrap();
    assert!(Store::open(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), junk, "the file is left as it was");
}
