//! Tests of staged writes (`ExperienceIndex::stage`): searchable at once, ranked as the same
//! documents are once committed, and never found twice or in an old version.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

fn doc<'a>(id: &'a str, task: &'a str, resource: &'a str, result: &'a str) -> IndexDoc<'a> {
    IndexDoc { id, task, resource, result, content: None, score: 3, status: Status::Active, agent_id: None }
}

fn request(query: &str) -> SearchRequest<'_> {
    SearchRequest { query, limit: 10, min_score: 1, agent_id: None, status: Status::Active, coverage: true }
}

fn hits(index: &ExperienceIndex, query: &str) -> Vec<Hit> {
    index.search(&SearchRequest { limit: 20, ..request(query) }).expect("search")
}

fn found(index: &ExperienceIndex, query: &str) -> Vec<String> {
    hits(index, query).into_iter().map(|hit| hit.id).collect()
}

/// Texts with shared and distinct words, English and Chinese, some with content.
const TEXTS: [(&str, &str, &str, Option<&str>); 12] = [
    ("run vitest once without watch mode", "vitest --run", "exits after one pass", None),
    ("vitest hangs in watch mode on CI", "CI=true vitest", "set CI so vitest does not watch", None),
    (
        "configure path aliases for TypeScript",
        "tsconfig.json",
        "set baseUrl and paths",
        Some("restart the language server after editing tsconfig.json"),
    ),
    ("docker build is slow", "docker build --cache-from", "reuse the layer cache", None),
    ("在容器里安装依赖太慢", "docker build", "使用国内镜像源并利用构建缓存", None),
    ("合并分支时出现冲突", "git rebase -i", "先解决冲突再继续变基", None),
    ("rename database columns to snake_case", "sqlx migrate", "a migration renames userName", None),
    (
        "postgres connection times out",
        "pgbouncer",
        "pool connections, timeout 30s",
        Some("the database refused new connections under load"),
    ),
    ("数据库连接超时", "连接池", "把超时时间调到三十秒", None),
    ("cargo build runs out of memory", "CARGO_BUILD_JOBS=1", "one job at a time fits in 2 GB", None),
    ("vitest coverage report is empty", "vitest --coverage", "install @vitest/coverage-v8", None),
    ("git push rejected after rebase", "git push --force-with-lease", "pushed the rebased branch safely", None),
];

const QUERIES: [&str; 10] = [
    "vitest watch mode",
    "docker build cache",
    "数据库 连接 超时",
    "tsconfig.json paths",
    "git rebase conflict",
    "database connection timeout",
    "cargo memory",
    "vitest coverage",
    "构建缓存",
    "language server",
];

fn text_doc<'a>(id: &'a str, text: (&'static str, &'static str, &'static str, Option<&'static str>)) -> IndexDoc<'a> {
    IndexDoc { content: text.3, ..doc(id, text.0, text.1, text.2) }
}

/// Staged documents are scored as tantivy scores them once committed: the same hits in the same
/// order with the same scores, coverage and evidence before and after the commit (the statistics
/// count the same documents either way).
#[test]
fn staged_documents_rank_as_committed_ones() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.writer.without_merges();
    let ids: Vec<String> = (0..TEXTS.len()).map(|idx| format!("e{idx}")).collect();
    let first: Vec<IndexDoc<'_>> = (0..6).map(|idx| text_doc(&ids[idx], TEXTS[idx])).collect();
    index.add_new(&first).expect("add");
    index.commit(1).expect("commit");
    for idx in 6..TEXTS.len() {
        index.stage(idx as u64, &[], &[text_doc(&ids[idx], TEXTS[idx])], &[]).expect("stage");
    }
    assert_eq!((index.applied_seq(), index.staged_seq(), index.staged_docs()), (1, 11, 6));
    assert_eq!(index.staged_writes(), 6);
    assert_eq!(index.num_docs(), 12);
    let before: Vec<Vec<Hit>> = QUERIES.iter().map(|query| hits(&index, query)).collect();
    assert!(before.iter().flatten().any(|hit| hit.id == "e11"), "staged documents are found");
    index.commit_staged().expect("commit");
    assert_eq!((index.applied_seq(), index.staged_docs()), (11, 0));
    for (query, before) in QUERIES.iter().zip(before) {
        let after = hits(&index, query);
        let ids = |hits: &[Hit]| hits.iter().map(|hit| hit.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&before), ids(&after), "{query:?}");
        for (before, after) in before.iter().zip(&after) {
            assert!((before.bm25 - after.bm25).abs() < 1e-4, "{query:?}: {before:?} vs {after:?}");
            assert!((before.coverage - after.coverage).abs() < 1e-5, "{query:?}: {before:?} vs {after:?}");
            assert!((before.evidence.share - after.evidence.share).abs() < 1e-5, "{query:?}: {before:?}");
            assert_eq!(before.evidence.words, after.evidence.words, "{query:?}");
        }
    }
}

/// The same writes, staged in one index and committed one by one in the other, find the same
/// documents: an update of a committed document is found in its new version only, one made
/// inactive or deleted is not found at all.
#[test]
fn staged_updates_and_deletes_hide_the_committed_versions() {
    let staged = ExperienceIndex::open_in_ram().expect("index");
    let committed = ExperienceIndex::open_in_ram().expect("index");
    let ids: Vec<String> = (0..TEXTS.len()).map(|idx| format!("e{idx}")).collect();
    let all: Vec<IndexDoc<'_>> = (0..TEXTS.len()).map(|idx| text_doc(&ids[idx], TEXTS[idx])).collect();
    for index in [&staged, &committed] {
        index.add_new(&all).expect("add");
        index.commit(1).expect("commit");
    }
    let mut seq = 1;
    let mut write = |deleted: &[&str], updated: &[IndexDoc<'_>]| {
        seq += 1;
        staged.stage(seq, deleted, &[], updated).expect("stage");
        committed.delete(deleted).expect("delete");
        committed.upsert(updated).expect("upsert");
        committed.commit(seq).expect("commit");
    };
    write(&[], &[doc("e0", "vitest in watch mode never exits", "vitest --watch=false", "exits now")]);
    write(&[], &[IndexDoc { status: Status::Rejected, ..text_doc("e3", TEXTS[3]) }]);
    write(&["e5"], &[]);
    assert_eq!(staged.num_docs(), committed.num_docs());
    assert_eq!(staged.num_docs(), 10);
    for query in QUERIES {
        let mut got = found(&staged, query);
        let mut want = found(&committed, query);
        got.sort();
        want.sort();
        assert_eq!(got, want, "{query:?}");
    }
    // Not by the words only the old version had, nor the ones removed.
    assert!(!found(&staged, "once").contains(&"e0".to_owned()));
    assert_eq!(found(&staged, "--watch=false"), ["e0"]);
    assert!(!found(&staged, "layer cache").contains(&"e3".to_owned()));
    assert!(!found(&staged, "变基").contains(&"e5".to_owned()));
}

#[test]
fn staged_documents_pass_the_filters_and_outlast_a_reset() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.add_new(&[doc("old", "flaky vitest run", "vitest", "retry once")]).expect("add");
    index.commit(1).expect("commit");
    let rated = IndexDoc {
        score: 5,
        agent_id: Some("builder"),
        ..doc("new", "flaky vitest suite", "vitest --retry", "retry twice")
    };
    index.stage(2, &[], &[rated], &[]).expect("stage");
    let mut both = found(&index, "flaky vitest");
    both.sort();
    assert_eq!(both, ["new", "old"]);
    let filtered = |min_score, agent_id| {
        let request = SearchRequest { min_score, agent_id, ..request("flaky vitest") };
        index.search(&request).expect("search").into_iter().map(|hit| hit.id).collect::<Vec<_>>()
    };
    assert_eq!(filtered(4, None), ["new"]);
    assert_eq!(filtered(1, Some("builder")), ["new"]);
    assert!(filtered(1, Some("someone-else")).is_empty());

    // A reset of the writer (after a failed commit) keeps the staged writes: they are given to
    // the writer only by a commit, which then takes them.
    index.reset_writer().expect("reset");
    assert_eq!((index.staged_seq(), index.staged_docs(), index.staged_writes()), (2, 1, 1));
    index.commit_staged().expect("commit");
    assert_eq!((index.applied_seq(), index.staged_writes()), (2, 0));
    let mut both = found(&index, "flaky vitest");
    both.sort();
    assert_eq!(both, ["new", "old"]);
    // A direct write comes after the staged ones: they are committed first, so the direct
    // update wins.
    index.stage(3, &[], &[], &[doc("old", "flaky vitest run", "vitest", "staged version")]).expect("stage");
    index.upsert(&[doc("old", "flaky vitest run", "vitest", "direct version")]).expect("upsert");
    index.commit(4).expect("commit");
    assert_eq!(found(&index, "version"), ["old"]);
    assert_eq!(found(&index, "direct"), ["old"]);
    assert!(found(&index, "staged").is_empty());
}

/// A committed document replaced by a staged version, then merged into other segments: still
/// found once, in its new version.
#[test]
fn a_document_is_never_found_twice_across_commits_and_merges() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    for round in 0..12u64 {
        let id = format!("d{round}");
        index.add_new(&[doc(&id, "shared topic words", "tool", &format!("round {round}"))]).expect("add");
        index.commit(round + 1).expect("commit");
    }
    index.stage(13, &[], &[], &[doc("d3", "shared topic words", "tool", "updated round")]).expect("stage");
    index.stage(14, &[], &[doc("d12", "shared topic words", "tool", "new")], &[]).expect("stage");
    // A staged document updated again: its first version is gone.
    index.stage(15, &[], &[], &[doc("d12", "shared topic words", "tool", "newer")]).expect("stage");
    assert!(found(&index, "new").is_empty());
    assert_eq!(found(&index, "newer"), ["d12"]);
    let all = found(&index, "shared topic words");
    assert_eq!(all.len(), 13, "{all:?}");
    assert_eq!(all.iter().filter(|id| *id == "d3").count(), 1);
    assert_eq!(found(&index, "updated"), ["d3"]);
    index.commit_staged().expect("commit");
    let all = found(&index, "shared topic words");
    assert_eq!(all.len(), 13, "{all:?}");
    assert_eq!(found(&index, "updated"), ["d3"]);
}

/// Writers stage while commits run back to back and searches look on: every search sees each
/// document at most once, a document staged before a search started is found by it, and in the
/// end everything is committed once.
#[test]
fn staging_goes_on_during_commits_and_nothing_is_found_twice_or_lost() {
    const WRITERS: usize = 3;
    const EACH: usize = 60;
    let index = std::sync::Arc::new(ExperienceIndex::open_in_ram().expect("index"));
    let seq = std::sync::Arc::new(std::sync::Mutex::new(0u64));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Commits and searches made so far: the writers' last writes wait until both have run a
    // few times, so that they overlap whatever the scheduler does (in a release build on a busy
    // machine the writers once finished before the searcher's first search ended).
    let (commits_made, searches_made) =
        (std::sync::Arc::new(AtomicUsize::new(0)), std::sync::Arc::new(AtomicUsize::new(0)));
    let committer = {
        let (index, done, commits_made) = (index.clone(), done.clone(), commits_made.clone());
        std::thread::spawn(move || {
            let mut commits = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                index.commit_staged().expect("commit");
                commits += 1;
                commits_made.store(commits, Ordering::Release);
            }
            commits
        })
    };
    let searcher = {
        let (index, done, searches_made) = (index.clone(), done.clone(), searches_made.clone());
        std::thread::spawn(move || {
            let mut searches = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let hits = index.search(&SearchRequest { limit: 500, ..request("shared") }).expect("search");
                let mut ids: Vec<&str> = hits.iter().map(|hit| hit.id.as_str()).collect();
                let all = ids.len();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), all, "a document was found twice");
                searches += 1;
                searches_made.store(searches, Ordering::Release);
            }
            searches
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let (index, seq) = (index.clone(), seq.clone());
            let (commits_made, searches_made) = (commits_made.clone(), searches_made.clone());
            std::thread::spawn(move || {
                for n in 0..EACH {
                    if n == EACH - 1 {
                        let waited = std::time::Instant::now();
                        while commits_made.load(Ordering::Acquire) < 2 || searches_made.load(Ordering::Acquire) < 2 {
                            assert!(waited.elapsed() < std::time::Duration::from_secs(30), "no commits or searches");
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                    let id = format!("w{writer}n{n}");
                    let word = format!("zq{writer}x{n}");
                    let task = format!("shared words {word}");
                    {
                        // Stages in store order, as the engine does under `index_sync`.
                        let mut seq = seq.lock().unwrap();
                        *seq += 1;
                        index.stage(*seq, &[], &[doc(&id, &task, "tool", "first")], &[]).expect("stage");
                        if n % 4 == 0 {
                            *seq += 1;
                            index.stage(*seq, &[], &[], &[doc(&id, &task, "tool", "second")]).expect("stage");
                        }
                    }
                    assert_eq!(found(&index, &word), std::slice::from_ref(&id), "read your write");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    let (commits, searches) = (committer.join().expect("committer"), searcher.join().expect("searcher"));
    assert!(commits > 1 && searches > 1, "{commits} commits, {searches} searches");
    index.commit_staged().expect("commit");
    assert_eq!((index.staged_writes(), index.num_docs()), (0, (WRITERS * EACH) as u64));
    assert_eq!(index.applied_seq(), *seq.lock().unwrap());
    let second = index.search(&SearchRequest { limit: 500, ..request("second") }).expect("search");
    assert_eq!(second.len(), WRITERS * EACH.div_ceil(4), "the updates are in");
    let first = index.search(&SearchRequest { limit: 500, ..request("first") }).expect("search");
    assert_eq!(first.len() + second.len(), WRITERS * EACH, "and the first versions of the rest");
}

/// Document frequencies are remembered per snapshot of the segments: a term asked before a
/// commit is counted anew after it. A term no document had is left out of a query
/// (`query_terms`), so a remembered 0 would hide every document committed with it since.
#[test]
fn remembered_document_frequencies_never_outlive_their_segments() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.writer.without_merges();
    index.add_new(&[doc("a", "docker build is slow", "docker", "cache layers")]).expect("add");
    index.commit(1).expect("commit");
    assert!(found(&index, "vitest watch").is_empty());
    index.stage(2, &[], &[doc("b", "vitest watch mode", "vitest", "hangs")], &[]).expect("stage");
    assert_eq!(found(&index, "vitest watch"), ["b"], "staged: counted by the overlay");
    index.commit_staged().expect("commit staged");
    assert_eq!(found(&index, "vitest watch"), ["b"], "committed: counted anew");
    index.add_new(&[doc("c", "vitest once", "vitest --run", "one pass")]).expect("add");
    index.commit(3).expect("commit");
    assert_eq!(found(&index, "vitest watch"), ["b", "c"]);
    // With a staged write on top (scored with the committed and staged statistics together),
    // the same scores as an index that never remembered anything.
    let staged = doc("d", "vitest watch in CI", "CI=true vitest", "exits");
    index.stage(4, &[], std::slice::from_ref(&staged), &[]).expect("stage");
    let fresh = ExperienceIndex::open_in_ram().expect("index");
    fresh.writer.without_merges();
    fresh
        .add_new(&[
            doc("a", "docker build is slow", "docker", "cache layers"),
            doc("b", "vitest watch mode", "vitest", "hangs"),
            doc("c", "vitest once", "vitest --run", "one pass"),
        ])
        .expect("add");
    fresh.commit(3).expect("commit");
    fresh.stage(4, &[], &[staged], &[]).expect("stage");
    let (got, want) = (hits(&index, "vitest watch"), hits(&fresh, "vitest watch"));
    assert_eq!(got.len(), 3);
    for (got, want) in got.iter().zip(&want) {
        assert_eq!(got.id, want.id);
        assert!((got.bm25 - want.bm25).abs() < 1e-4, "remembered {got:?}, fresh {want:?}");
        assert!((got.coverage - want.coverage).abs() < 1e-5, "remembered {got:?}, fresh {want:?}");
    }
}
