//! Tests of the store on real SQLite files: merging, sequence numbers, tombstones, migrations.

use kb_core::{GatePolicy, NewExperience, Status, gate};
use kb_store::{Error, ListFilter, SCHEMA_VERSION, Store, StoredContent, VectorRef, WriteItem};

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
    let (before, status_seq) =
        store.set_status(&[outcomes[2].id.as_str(), "01ARZ3NDEKTSV4RRFFQ69G5FAV"], Status::Rejected, 2).unwrap();
    assert_eq!(before, vec![Some(Status::Active), None]);
    assert_eq!(status_seq, 5);
    // Setting the status it already has changes nothing, and takes no sequence number.
    let (before, unchanged_seq) = store.set_status(&[outcomes[2].id.as_str()], Status::Rejected, 3).unwrap();
    assert_eq!((before, unchanged_seq), (vec![Some(Status::Rejected)], 5));

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

#[test]
fn a_version_1_database_is_migrated_with_its_data_intact() {
    // schema-v1.sqlite was written by the first release's schema (see tests/fixtures).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.sqlite"), &path).unwrap();
    let mut store = Store::open(&path).unwrap();
    let version: i64 =
        rusqlite::Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(store.seq().unwrap(), 3);
    let counts = store.counts().unwrap();
    assert_eq!((counts.total, counts.active, counts.pending), (3, 2, 1));
    let chinese = store.get("01JA0000000000000000000002").unwrap().unwrap();
    assert_eq!((chinese.task.as_str(), chinese.score, chinese.has_content), ("配置 TypeScript 路径别名", 4, true));
    // The new table works on the migrated file: every active experience lacks a vector.
    let mut missing = Vec::new();
    store
        .for_each_vector_row("model-a", 10, |rows| -> kb_store::Result<()> {
            missing.extend(rows.iter().filter(|row| row.vector.is_none()).map(|row| row.id.clone()));
            Ok(())
        })
        .unwrap();
    assert_eq!(missing.len(), 2);
    assert_eq!(store.put_vectors("model-a", &[("01JA0000000000000000000001", &[0, 0, 128, 63])]).unwrap(), 1);
    assert_eq!(store.vector_counts("model-a").unwrap(), (1, 1));
}

#[test]
fn vectors_belong_to_a_model_follow_changes_and_go_with_their_experience() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let first = gated("first task", 4, None);
    let second = gated("second task", 2, None);
    let vector = VectorRef { model_id: "model-a", bytes: &[1, 2, 3, 4] };
    let items = [WriteItem { vector: Some(vector), ..WriteItem::plain(&first) }, WriteItem::plain(&second)];
    let (outcomes, seq) = store.write_items(&items, 1).unwrap();
    let (a, b) = (outcomes[0].id.to_string(), outcomes[1].id.to_string());

    let changes = store.vector_changes_since(0, "model-a").unwrap();
    assert_eq!(changes.seq, seq);
    let by_id = |id: &str| changes.rows.iter().find(|row| row.id == id).unwrap().clone();
    assert_eq!(by_id(&a).vector.as_deref(), Some(&[1u8, 2, 3, 4][..]));
    assert_eq!(by_id(&b).vector, None);
    // Another model's vectors are missing vectors to this one.
    assert!(store.vector_changes_since(0, "model-b").unwrap().rows.iter().all(|row| row.vector.is_none()));

    // Texts to embed come back in the order asked; a vector of a deleted experience is skipped.
    let sources = store.embedding_sources(&[&b, &a]).unwrap();
    assert_eq!(sources.iter().map(|source| source.id.as_str()).collect::<Vec<_>>(), vec![b.as_str(), a.as_str()]);
    assert_eq!(sources[0].task, "second task");
    assert_eq!(store.put_vectors("model-b", &[(&b, &[9, 9, 9, 9]), ("01ARZ3NDEKTSV4RRFFQ69G5FAV", &[1])]).unwrap(), 1);
    assert_eq!(store.vector_counts("model-b").unwrap(), (1, 2));

    store.delete(&[&a]).unwrap();
    assert_eq!(store.vector_counts("model-a").unwrap(), (0, 1), "the vector went with its experience");
    let changes = store.vector_changes_since(seq, "model-b").unwrap();
    assert_eq!(changes.deleted_ids, vec![a.clone()]);
}

#[test]
fn a_near_identical_experience_merges_into_the_one_named_unless_it_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let (outcomes, _) = store.write(&[gated("run vitest once in CI", 3, None)], 1).unwrap();
    let stored = outcomes[0].id.to_string();

    let similar = gated("run vitest just once in CI", 5, Some("use --run"));
    let (outcomes, _) =
        store.write_items(&[WriteItem { similar_to: Some((&stored, 0.98)), ..WriteItem::plain(&similar) }], 2).unwrap();
    assert!(outcomes[0].merged && outcomes[0].similar);
    assert_eq!(outcomes[0].id.as_str(), stored);
    let merged = store.get(&stored).unwrap().unwrap();
    assert_eq!(
        (merged.task.as_str(), merged.score, merged.merge_count, merged.has_content),
        ("run vitest once in CI", 5, 1, true)
    );
    // Its own wording and content are kept as a variant: nothing the second submitter wrote is lost.
    let variants = store.variants(&stored).unwrap();
    assert_eq!(variants.len(), 1);
    assert_eq!(variants[0].task, "run vitest just once in CI");
    assert_eq!(variants[0].content.as_deref(), Some("use --run"));
    assert!((variants[0].similarity.unwrap() - 0.98).abs() < 1e-6);

    // An exact duplicate wins over the similar one named.
    let exact = gated("run vitest once in CI", 1, None);
    let (outcomes, _) = store
        .write_items(
            &[WriteItem { similar_to: Some(("01ARZ3NDEKTSV4RRFFQ69G5FAV", 0.98)), ..WriteItem::plain(&exact) }],
            3,
        )
        .unwrap();
    assert!(outcomes[0].merged && !outcomes[0].similar);

    // A similar experience deleted meanwhile: the item is stored as new.
    store.delete(&[&stored]).unwrap();
    let (outcomes, _) =
        store.write_items(&[WriteItem { similar_to: Some((&stored, 0.98)), ..WriteItem::plain(&similar) }], 4).unwrap();
    assert!(!outcomes[0].merged);
    assert_ne!(outcomes[0].id.as_str(), stored);
}

/// Regression (search-quality issue): with the model loaded, "deploy succeeded" merged into
/// "deploy failed" (cosine 0.983) and `cache: true` into `cache: false` (0.992); the second
/// text was discarded and its submitter got the other's id.
#[test]
fn near_identical_vectors_with_different_meanings_stay_two_experiences() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let pairs = [
        ("deploy the app with kubectl: deploy succeeded", "deploy the app with kubectl: deploy failed", "outcome"),
        ("enable the CI cache with cache: true", "enable the CI cache with cache: false", "outcome"),
        ("pin node with nvm use 18", "pin node with nvm use 20", "values"),
        ("the build is faster with ccache", "the build is not faster with ccache", "negated"),
    ];
    for (first, second, why) in pairs {
        let (outcomes, _) = store.write(&[gated(first, 3, None)], 1).unwrap();
        let stored = outcomes[0].id.to_string();
        let other = gated(second, 3, None);
        let (outcomes, _) = store
            .write_items(&[WriteItem { similar_to: Some((&stored, 0.99)), ..WriteItem::plain(&other) }], 2)
            .unwrap();
        let outcome = &outcomes[0];
        assert!(!outcome.merged, "{second:?} merged into {first:?}");
        assert_ne!(outcome.id.as_str(), stored);
        let kept_apart = outcome.kept_apart.as_ref().expect("the answer says why they were kept apart");
        assert_eq!(kept_apart.similar_to, stored);
        assert!(kept_apart.reason.contains(why), "{}", kept_apart.reason);
        assert_eq!(store.get(outcome.id.as_str()).unwrap().unwrap().task, second);
        // Deleting one leaves the other.
        store.delete(&[outcome.id.as_str()]).unwrap();
        assert!(store.get(&stored).unwrap().is_some());
    }
}

#[test]
fn an_exact_duplicate_with_other_content_keeps_that_content_as_a_variant() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let (outcomes, _) = store.write(&[gated("cache docker layers", 3, Some("order COPY after deps"))], 1).unwrap();
    let stored = outcomes[0].id.to_string();
    // Same words, other content: merged, and the other content kept.
    let (outcomes, _) = store.write(&[gated("cache docker layers", 4, Some("use BuildKit cache mounts"))], 2).unwrap();
    assert!(outcomes[0].merged && outcomes[0].variant_kept);
    assert_eq!(outcomes[0].id.as_str(), stored);
    let variants = store.variants(&stored).unwrap();
    assert_eq!(variants[0].content.as_deref(), Some("use BuildKit cache mounts"));
    assert_eq!(variants[0].similarity, None);
    // The very same submission again brings nothing new: no variant.
    let (outcomes, _) = store.write(&[gated("cache docker layers", 3, Some("order COPY after deps"))], 3).unwrap();
    assert!(outcomes[0].merged && !outcomes[0].variant_kept);
    assert_eq!(store.variants(&stored).unwrap().len(), 1);
    // Variants go with their experience.
    store.delete(&[&stored]).unwrap();
    assert!(store.variants(&stored).unwrap().is_empty());
}

/// Thousands of copies merged into one experience (a teammate's flood, attack round 26) are all
/// kept, but a reader gets the newest that fit, oldest of them first, and the count of all.
#[test]
fn a_reader_gets_the_newest_variants_that_fit_and_how_many_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let (outcomes, _) = store.write(&[gated("cache docker layers", 3, Some("order COPY after deps"))], 1).unwrap();
    let stored = outcomes[0].id.to_string();
    for n in 0..30 {
        let content = format!("variant {n:02} {}", "x".repeat(1000));
        store.write(&[gated("cache docker layers", 3, Some(&content))], 2 + n).unwrap();
    }
    assert_eq!(store.variants(&stored).unwrap().len(), 30, "every one kept");
    let (newest, total) = store.newest_variants(&stored, 20, 1 << 20).unwrap();
    assert_eq!((newest.len(), total), (20, 30));
    assert!(newest[0].content.as_deref().unwrap().starts_with("variant 10"), "oldest of the newest first");
    assert!(newest[19].content.as_deref().unwrap().starts_with("variant 29"));
    let (fit, total) = store.newest_variants(&stored, 20, 5_000).unwrap();
    assert_eq!((fit.len(), total), (4, 30), "about 5,000 bytes: four of about 1,040");
    let (one, _) = store.newest_variants(&stored, 20, 10).unwrap();
    assert_eq!(one.len(), 1, "at least the newest, whatever its size");
}

/// Issue 24: a teammate's or an extracted experience waits for the user's review; approving
/// marks it once (the mark bumps the sequence number, so the hub and the index see the change),
/// and the user's own experiences are never listed as unreviewed.
#[test]
fn active_foreign_experiences_are_listed_until_marked_reviewed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    let with_source = |task: &str, source: kb_core::Source| {
        let mut gated = gated(task, 3, None);
        gated.experience.source = Some(source);
        gated
    };
    let (outcomes, seq) = store
        .write(
            &[
                with_source("a teammate's", kb_core::Source::Hub),
                with_source("an extracted one", kb_core::Source::Extraction),
                with_source("my own", kb_core::Source::Tool),
            ],
            1_000,
        )
        .unwrap();
    let ids: Vec<&str> = outcomes.iter().map(|outcome| outcome.id.as_str()).collect();
    let listed = |store: &Store| -> Vec<String> {
        let mut listed: Vec<String> =
            store.unreviewed(10).unwrap().into_iter().map(|experience| experience.id.to_string()).collect();
        listed.sort();
        listed
    };
    let mut foreign = vec![ids[0].to_owned(), ids[1].to_owned()];
    foreign.sort();
    assert_eq!(listed(&store), foreign);

    let marked = store.mark_reviewed(&[ids[0], ids[2]], 2_000).unwrap();
    assert_eq!(marked, vec![ids[0].to_owned(), ids[2].to_owned()]);
    assert_eq!(listed(&store), vec![ids[1].to_owned()]);
    let teammate = store.get(ids[0]).unwrap().unwrap();
    assert!(teammate.reviewed() && teammate.flags == vec!["reviewed".to_owned()], "{:?}", teammate.flags);
    assert_eq!(store.seq().unwrap(), seq + 2);
    // Marking again changes nothing.
    assert!(store.mark_reviewed(&[ids[0]], 3_000).unwrap().is_empty());
}

/// The user's own submit near-identical to a teammate's or an extracted experience they have
/// not reviewed is kept as their own (merged, their agents would not find it: unreviewed
/// foreign experiences do not reach agents); once reviewed, an extracted one merges as any
/// other, a teammate's never (N12f).
#[test]
fn an_own_near_duplicate_of_an_unreviewed_foreign_experience_is_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    for (source, whose) in [(kb_core::Source::Hub, "a teammate's"), (kb_core::Source::Extraction, "an extracted")] {
        let mut foreign = gated(&format!("run vitest once in CI {whose}"), 3, None);
        foreign.experience.source = Some(source);
        let (outcomes, _) = store.write(&[foreign], 1).unwrap();
        let stored = outcomes[0].id.to_string();

        let mine = gated(&format!("run vitest just once in CI {whose}"), 4, None);
        let item = WriteItem { similar_to: Some((&stored, 0.98)), ..WriteItem::plain(&mine) };
        let (outcomes, _) = store.write_items(&[item], 2).unwrap();
        assert!(!outcomes[0].merged, "{whose}");
        assert_ne!(outcomes[0].id.as_str(), stored);
        let apart = outcomes[0].kept_apart.as_ref().expect("the answer says why");
        assert_eq!(apart.similar_to, stored);
        assert!(apart.reason.contains(whose) && apart.reason.contains("not reviewed"), "{}", apart.reason);
        let own = store.get(outcomes[0].id.as_str()).unwrap().unwrap();
        assert_eq!(own.source, kb_core::Source::Tool, "stored as the user's own");

        // Once the user reviewed an extracted one, an own submit near it merges as any other; a
        // teammate's stays apart (their withdrawal would take the user's words with it, N12f).
        store.mark_reviewed(&[&stored], 3).unwrap();
        let again = gated(&format!("run vitest only once in CI {whose}"), 5, None);
        let item = WriteItem { similar_to: Some((&stored, 0.98)), ..WriteItem::plain(&again) };
        let (outcomes, _) = store.write_items(&[item], 4).unwrap();
        if source == kb_core::Source::Extraction {
            assert!(outcomes[0].merged && outcomes[0].id.as_str() == stored, "{whose}: reviewed, it merges");
        } else {
            assert!(!outcomes[0].merged, "{whose}");
            let apart = outcomes[0].kept_apart.as_ref().expect("the answer says why");
            assert!(apart.reason.contains("withdraw"), "{}", apart.reason);
        }
    }
}

#[test]
fn an_own_submit_word_for_word_an_unreviewed_foreign_experience_is_stored_as_the_users_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("kb.db")).unwrap();
    for (source, whose) in [(kb_core::Source::Hub, "a teammate's"), (kb_core::Source::Extraction, "an extracted")] {
        let text = format!("pin the node version {whose}");
        let mut foreign = gated(&text, 3, None);
        foreign.experience.source = Some(source);
        let (outcomes, _) = store.write(&[foreign], 1).unwrap();
        let theirs = outcomes[0].id.to_string();

        // Word for word: not merged away into theirs, which stays as it was.
        let (outcomes, _) = store.write(&[gated(&text, 4, None)], 2).unwrap();
        assert!(!outcomes[0].merged, "{whose}");
        let mine = outcomes[0].id.to_string();
        assert_ne!(mine, theirs);
        let apart = outcomes[0].kept_apart.as_ref().expect("the answer says why");
        assert_eq!(apart.similar_to, theirs);
        assert!(apart.reason.contains(whose) && apart.reason.contains("not reviewed"), "{}", apart.reason);
        assert_eq!(store.get(&mine).unwrap().unwrap().source, kb_core::Source::Tool);
        let kept = store.get(&theirs).unwrap().unwrap();
        assert_eq!((kept.source, kept.task.as_str(), kept.score), (source, text.as_str(), 3));

        // The text is the user's now: the same submit again merges into theirs, not the foreign one.
        let (outcomes, _) = store.write(&[gated(&text, 5, None)], 3).unwrap();
        assert!(outcomes[0].merged && outcomes[0].id.as_str() == mine, "{whose}");
    }
    // A reviewed extracted one is the user's to merge into, as any other; a reviewed teammate's
    // is not (N12f: the teammate's withdrawal deleted the user's submit with it).
    for (source, merges) in [(kb_core::Source::Extraction, true), (kb_core::Source::Hub, false)] {
        let text = format!("rotate the grafana key, {}", source.as_str());
        let mut reviewed = gated(&text, 3, None);
        reviewed.experience.source = Some(source);
        let (outcomes, _) = store.write(&[reviewed], 4).unwrap();
        let theirs = outcomes[0].id.to_string();
        store.mark_reviewed(&[&theirs], 5).unwrap();
        let (outcomes, _) = store.write(&[gated(&text, 4, None)], 6).unwrap();
        assert_eq!(outcomes[0].merged, merges, "{source:?}");
        assert_eq!(outcomes[0].id.as_str() == theirs, merges, "{source:?}");
    }
}

fn said(task: &str, resource: &str, result: &str) -> kb_core::Gated {
    let new = NewExperience {
        task: task.to_owned(),
        resource: resource.to_owned(),
        result: result.to_owned(),
        ..NewExperience::default()
    };
    gate(new, &GatePolicy::default()).unwrap()
}

fn found_by_keys(store: &Store, gated: &kb_core::Gated) -> Vec<String> {
    store.same_key_sources(&gated.same, 5).unwrap().into_iter().map(|source| source.result).collect()
}

/// A submit finds the stored experiences it may be a near-duplicate of by its keys: a rewording
/// by the same key, one that says otherwise in the same words by the wording key, only active
/// ones, nothing for other words; keys are made for what older builds stored, and again when the
/// rule's version changed.
#[test]
fn near_duplicates_are_found_by_their_keys_old_rows_and_stale_keys_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kb.db");
    let mut store = Store::open(&path).unwrap();
    let mut held = said("deploy the app", "kubectl apply", "the rollout succeeded, held");
    held.status = Status::Pending;
    store.write(&[said("deploy the app", "kubectl apply", "rollout succeeded"), held], 1).unwrap();
    let rewording = said("Deploying the app", "kubectl apply", "the rollout succeeded.");
    assert_eq!(found_by_keys(&store, &rewording), ["rollout succeeded"]);
    let otherwise = said("deploy the app", "kubectl apply", "rollout failed");
    assert_eq!(found_by_keys(&store, &otherwise), ["rollout succeeded"], "same words, another outcome");
    assert!(found_by_keys(&store, &said("deploy the app", "helm upgrade", "rollout succeeded")).is_empty());
    assert!(found_by_keys(&store, &said("deploy the app", "kubectl apply", "the rollout succeeded, held")).is_empty());
    drop(store);

    // Keys missing (as after the migration) or of another version (as after an upgrade that
    // changed the rule) are made again on open.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE experiences SET same_key = NULL WHERE status = 'active'", []).unwrap();
    conn.execute("UPDATE experiences SET wording_key = 's0:' || substr(wording_key, 4)", []).unwrap();
    conn.execute("UPDATE meta SET value = 0 WHERE key = 'same_keys'", []).unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    assert_eq!(found_by_keys(&store, &rewording), ["rollout succeeded"]);
    assert_eq!(found_by_keys(&store, &otherwise), ["rollout succeeded"]);

    // A database of the first release gets keys for what it holds.
    let old = dir.path().join("v1.db");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema-v1.sqlite"), &old).unwrap();
    let store = Store::open(&old).unwrap();
    let chinese = store.get("01JA0000000000000000000002").unwrap().unwrap();
    let again = said(&chinese.task, &chinese.resource, &chinese.result);
    assert_eq!(found_by_keys(&store, &again), std::slice::from_ref(&chinese.result));
}
