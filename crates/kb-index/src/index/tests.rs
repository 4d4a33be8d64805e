//! Tests of `ExperienceIndex` through its API: ranking, filters, coverage, writes and commits,
//! and recovery of a directory whose index cannot be used.

use std::path::PathBuf;
use std::sync::Arc;

use tantivy::IndexWriter;

use super::open::is_index_file_name;
use super::*;
use crate::schema::SCHEMA_VERSION;

fn doc<'a>(id: &'a str, task: &'a str, resource: &'a str, result: &'a str) -> IndexDoc<'a> {
    IndexDoc { id, task, resource, result, content: None, score: 3, status: Status::Active, agent_id: None }
}

fn request(query: &str) -> SearchRequest<'_> {
    SearchRequest { query, limit: 10, min_score: 1, agent_id: None, status: Status::Active, coverage: true }
}

fn search_ids(index: &ExperienceIndex, request: &SearchRequest<'_>) -> Vec<String> {
    let hits = index.search(request).expect("search");
    for pair in hits.windows(2) {
        assert!(pair[0].bm25 >= pair[1].bm25, "hits not best first: {hits:?}");
    }
    hits.into_iter().map(|hit| hit.id).collect()
}

fn ids_for(index: &ExperienceIndex, query: &str) -> Vec<String> {
    search_ids(index, &request(query))
}

/// Experiences in Chinese, English and both, about different things.
fn sample_docs() -> Vec<IndexDoc<'static>> {
    vec![
        doc("zh-vitest", "用vitest运行单元测试时避免进入watch模式", "vitest --run", "加上--run参数后测试跑完自动退出"),
        doc(
            "en-paths",
            "Configure path aliases for TypeScript imports",
            "tsconfig.json",
            "Set compilerOptions.paths and baseUrl, then restart the language server",
        ),
        doc("zh-docker", "在容器里安装依赖太慢", "docker build", "使用国内镜像源并利用构建缓存，速度提升明显"),
        doc(
            "en-snake",
            "Rename database columns to snake_case",
            "sqlx migrate",
            "Wrote a migration that renames userName to user_name",
        ),
        doc(
            "en-effect",
            "Fix useEffect running twice in development",
            "React StrictMode",
            "StrictMode mounts components twice; make the callback idempotent",
        ),
        doc("zh-git", "合并分支时出现冲突", "git rebase -i", "先解决冲突再继续变基，最后强制推送"),
        doc("zh-field", "修改配置文件中的字段名", "config.yaml", "字段名区分大小写"),
        doc("zh-para", "把段落中的文字加粗", "markdown", "用两个星号包住文字"),
    ]
}

fn sample_index() -> ExperienceIndex {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.upsert(&sample_docs()).expect("upsert");
    index.commit(1).expect("commit");
    index
}

/// Each query must rank the given experience first.
fn check_first(index: &ExperienceIndex, cases: &[(&str, &str)]) {
    for (query, expected_first) in cases {
        let ids = ids_for(index, query);
        assert_eq!(ids.first().map(String::as_str), Some(*expected_first), "query {query:?} gave {ids:?}");
    }
}

#[test]
fn chinese_english_and_mixed_queries_find_the_right_experience_first() {
    let index = sample_index();
    check_first(
        &index,
        &[
            ("怎么避免测试进入watch模式", "zh-vitest"),
            ("vitest watch模式", "zh-vitest"),
            ("容器 安装依赖 很慢", "zh-docker"),
            ("分支冲突", "zh-git"),
            ("TypeScript path alias", "en-paths"),
            ("rename columns", "en-snake"),
            ("git rebase", "zh-git"),
            ("docker镜像源", "zh-docker"),
        ],
    );
}

#[test]
fn coverage_is_the_idf_weighted_share_of_the_query_a_hit_holds() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index
        .upsert(&[
            // One rare word of the query, said three times in a short text.
            doc("repeats", "flaky flaky flaky", "", ""),
            doc("all", "flaky test in the nightly pipeline", "retry", "quarantined the test"),
            doc("other", "nightly backup of the database", "cron", "runs at two"),
            doc("another", "nightly restore drill", "", ""),
            doc("filler", "nothing to see", "", ""),
        ])
        .expect("upsert");
    index.commit(1).expect("commit");
    let hits = index.search(&request("flaky nightly pipeline")).expect("search");
    let coverage = |id: &str| hits.iter().find(|hit| hit.id == id).map(|hit| hit.coverage);
    assert_eq!(coverage("all"), Some(1.0), "{hits:?}");
    let repeats = coverage("repeats").expect("found");
    let other = coverage("other").expect("found");
    // "flaky" is rarer than "nightly", so it weighs more; "pipeline" is in neither.
    assert!(repeats > other && other > 0.0, "{hits:?}");
    assert!(repeats + other < 1.0, "{hits:?}");
    assert_eq!(coverage("filler"), None);
    assert!(hits.iter().all(|hit| (0.0..=1.0).contains(&hit.coverage)));
    let plain = index.search(&SearchRequest { coverage: false, ..request("flaky nightly pipeline") }).expect("search");
    assert_eq!(
        plain.iter().map(|hit| (&hit.id, hit.bm25)).collect::<Vec<_>>(),
        hits.iter().map(|hit| (&hit.id, hit.bm25)).collect::<Vec<_>>()
    );
    assert!(plain.iter().all(|hit| hit.coverage == 0.0), "not asked for: {plain:?}");
}

#[test]
fn max_holders_bounds_how_many_documents_hold_a_text() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index
        .upsert(&[
            doc("a", "deploy failed with ERR_4242", "x11 session", ""),
            doc("b", "x11 forwarding over ssh", "", ""),
            doc("c", "x11 fonts look blurry", "", ""),
        ])
        .expect("upsert");
    index.commit(1).expect("commit");
    assert_eq!(index.max_holders("ERR_4242").expect("holders"), 1);
    assert_eq!(index.max_holders("X11").expect("holders"), 3);
    assert_eq!(index.max_holders("ERR_9999").expect("holders"), 0);
    assert_eq!(index.max_holders("").expect("holders"), 0);
}

#[test]
fn identifiers_are_found_whole_and_by_their_parts() {
    let index = sample_index();
    check_first(
        &index,
        &[
            ("tsconfig.json", "en-paths"),
            ("tsconfig", "en-paths"),
            ("TSCONFIG.JSON", "en-paths"),
            ("--run", "zh-vitest"),
            ("run", "zh-vitest"),
            ("snake_case", "en-snake"),
            ("snake", "en-snake"),
            ("user_name", "en-snake"),
            ("userName", "en-snake"),
            ("useEffect", "en-effect"),
            ("effect", "en-effect"),
            ("compilerOptions", "en-paths"),
        ],
    );
}

#[test]
fn english_words_match_across_inflections() {
    let index = sample_index();
    check_first(
        &index,
        &[("runs twice", "en-effect"), ("renaming column", "en-snake"), ("mounted component", "en-effect")],
    );
}

/// Regression: jieba cuts the query `字段` into `字`, `段` but the document's `字段名` into
/// `字段`, `字段名`, so the query found nothing until single characters yielded bigrams.
#[test]
fn words_missing_from_the_dictionary_match_as_a_unit() {
    let index = sample_index();
    check_first(&index, &[("字段", "zh-field")]);
}

#[test]
fn a_match_in_the_task_outranks_a_match_in_the_content() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let mut in_content = doc("in-content", "Ship the release", "ci", "done");
    in_content.content = Some("steps: build, then deploy with kubernetes");
    let in_task = doc("in-task", "Roll out to kubernetes", "kubectl", "works");
    index.upsert(&[in_content, in_task]).expect("upsert");
    index.commit(1).expect("commit");
    assert_eq!(ids_for(&index, "kubernetes"), ["in-task", "in-content"]);
}

#[test]
fn query_syntax_and_odd_input_never_error() {
    let index = sample_index();
    let long_query = "tsconfig ".repeat(5_000);
    let odd_queries = [
        "\"foo\" AND bar: (baz]",
        "title:vitest",
        "-run",
        "*",
        "vitest*",
        "a AND OR NOT",
        "((((",
        "\"unbalanced",
        "[1 TO 5]",
        "{x TO}",
        "field:\"x",
        "^2 ~3 \\",
        "+-!&&||",
        "😀🚀",
        "\u{0}\u{1}",
        "\u{FEFF}零宽\u{200B}空格",
        long_query.as_str(),
    ];
    for query in odd_queries {
        index.search(&request(query)).unwrap_or_else(|err| panic!("query {query:?} failed: {err}"));
    }
    check_first(&index, &[("title:vitest", "zh-vitest"), ("\"tsconfig.json\" AND (baz]", "en-paths")]);
}

#[test]
fn queries_without_words_have_no_hits() {
    let index = sample_index();
    for query in ["", "   ", "\t\n", "?!.,;", "？！。，", "--", "..."] {
        assert_eq!(ids_for(&index, query), Vec::<String>::new(), "query {query:?}");
    }
}

#[test]
fn function_words_alone_find_nothing_when_a_query_has_other_words() {
    let index = sample_index();
    // "for", "in", "the", "的", "中" are in the sample texts; lasagna and spinach are not.
    assert_eq!(ids_for(&index, "recipe for vegetarian lasagna in the oven"), Vec::<String>::new());
    assert_eq!(ids_for(&index, "菠菜千层面的做法"), Vec::<String>::new());
    // They still count beside a word the document has, and alone they still find.
    assert_eq!(ids_for(&index, "aliases for the imports").first().map(String::as_str), Some("en-paths"));
    assert!(!ids_for(&index, "for the").is_empty());
}

#[test]
fn very_long_queries_keep_their_rare_terms() {
    let index = sample_index();
    let mut words: Vec<String> = (0..300).map(|word_idx| format!("filler{word_idx}")).collect();
    words.push("kubernetes".to_owned());
    words.push("镜像源".to_owned());
    let query = words.join(" ");
    assert_eq!(ids_for(&index, &query), ["zh-docker"]);
}

#[test]
fn filters_on_status_rating_and_agent() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let with = |id, score, status, agent_id| IndexDoc {
        score,
        status,
        agent_id,
        ..doc(id, "deploy the service", "deploy.sh", "ok")
    };
    index
        .upsert(&[
            with("a", 5, Status::Active, Some("alpha")),
            with("b", 2, Status::Active, Some("beta")),
            with("c", 4, Status::Pending, None),
            with("d", 3, Status::Rejected, Some("alpha")),
        ])
        .expect("upsert");
    index.commit(1).expect("commit");

    let cases: &[(u8, Option<&str>, Status, &[&str])] = &[
        (1, None, Status::Active, &["a", "b"]),
        (0, None, Status::Active, &["a", "b"]),
        (3, None, Status::Active, &["a"]),
        (5, None, Status::Active, &["a"]),
        (1, Some("alpha"), Status::Active, &["a"]),
        (3, Some("beta"), Status::Active, &[]),
        (1, Some("nobody"), Status::Active, &[]),
        // The index holds active experiences only.
        (1, None, Status::Pending, &[]),
        (1, Some("alpha"), Status::Rejected, &[]),
    ];
    for &(min_score, agent_id, status, expected) in cases {
        let request = SearchRequest { query: "deploy", limit: 10, min_score, agent_id, status, coverage: false };
        let mut ids = search_ids(&index, &request);
        ids.sort();
        assert_eq!(ids, expected, "{request:?}");
    }
}

#[test]
fn the_rating_filter_finds_a_weak_match_behind_many_strong_low_rated_ones() {
    // Every strong match is rated 1: the filter must hold back all of them, not only the
    // first few, to find the only experience rated 5.
    let index = ExperienceIndex::open_in_ram().expect("index");
    let ids: Vec<String> = (0..100).map(|n| format!("low{n:03}")).collect();
    let mut docs: Vec<IndexDoc<'_>> = ids
        .iter()
        .map(|id| IndexDoc { score: 1, ..doc(id, "deploy deploy deploy service", "deploy.sh", "deployed") })
        .collect();
    docs.push(IndexDoc {
        score: 5,
        ..doc("good", "service notes", "wiki", "mentions deploy once among many other words")
    });
    index.upsert(&docs).expect("upsert");
    index.commit(1).expect("commit");
    let found = search_ids(&index, &SearchRequest { min_score: 5, limit: 3, ..request("deploy") });
    assert_eq!(found, ["good"]);
    let unfiltered = search_ids(&index, &SearchRequest { min_score: 1, limit: 3, ..request("deploy") });
    assert_eq!(unfiltered.len(), 3);
    assert!(!unfiltered.contains(&"good".to_owned()));
}

#[test]
fn common_terms_are_pruned_but_a_query_of_only_common_terms_still_finds() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let ids: Vec<String> = (0..1_200).map(|n| format!("doc{n:04}")).collect();
    let mut docs: Vec<IndexDoc<'_>> = ids.iter().map(|id| doc(id, "common words everywhere", "tool", "done")).collect();
    docs.push(doc("rare", "common words and a zebra", "tool", "done"));
    index.add_new(&docs).expect("add");
    index.commit(1).expect("commit");
    assert_eq!(search_ids(&index, &SearchRequest { limit: 1, ..request("common zebra") }), ["rare"]);
    assert_eq!(search_ids(&index, &SearchRequest { limit: 3, ..request("common words") }).len(), 3);
}

#[test]
fn a_short_query_keeps_its_frequent_terms() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    // `frequent` is in a sixth of the documents: left out of a query with three rarer terms,
    // kept in a query with one, where it orders the hits.
    let ids: Vec<String> = (0..1_200).map(|n| format!("doc{n:04}")).collect();
    let mut docs: Vec<IndexDoc<'_>> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| doc(id, if n % 6 == 0 { "frequent filler" } else { "other filler" }, "tool", "done"))
        .collect();
    docs.push(doc("alpha-only", "alpha words", "tool", "done"));
    docs.push(doc("alpha-frequent", "alpha frequent", "tool", "done"));
    index.add_new(&docs).expect("add");
    index.commit(1).expect("commit");
    assert_eq!(search_ids(&index, &SearchRequest { limit: 1, ..request("frequent alpha") }), ["alpha-frequent"]);
}

#[test]
fn terms_past_the_postings_budget_only_rescore_the_candidates() {
    let mut index = ExperienceIndex::open_in_ram().expect("index");
    // `lacks` and `has` tie on the three rarest terms; only `delta` tells them apart.
    let mut docs =
        vec![doc("lacks", "alpha beta gamma other", "x", "y"), doc("has", "alpha beta gamma delta", "x", "y")];
    let delta_ids: Vec<String> = (0..3).map(|n| format!("delta{n}")).collect();
    docs.extend(delta_ids.iter().map(|id| doc(id, "delta only", "x", "y")));
    index.add_new(&docs).expect("add");
    index.commit(1).expect("commit");
    let query = "alpha beta gamma delta";

    // Within the budget (any index under 5,000 documents), every term is walked.
    assert!(index.search_terms(query).expect("terms").iter().all(|term| term.walked));
    assert_eq!(ids_for(&index, query)[..2], ["has", "lacks"]);
    assert_eq!(ids_for(&index, query).len(), 5);

    // Past it, the three rarest terms find the candidates and `delta` still orders them, but
    // a document with `delta` alone is no candidate.
    index.wand_postings_budget = 0;
    let terms = index.search_terms(query).expect("terms");
    let walked: Vec<(&str, bool)> = terms.iter().map(|term| (term.text.as_str(), term.walked)).collect();
    assert_eq!(walked, [("alpha", true), ("beta", true), ("gamma", true), ("delta", false)]);
    assert_eq!(terms.iter().map(|term| term.doc_freq).collect::<Vec<_>>(), [2, 2, 2, 4]);
    let hits = index.search(&request(query)).expect("search");
    assert_eq!(hits.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["has", "lacks"]);
    // The scores are those of walking every term (up to the order of the float additions).
    index.wand_postings_budget = WAND_POSTINGS_BUDGET;
    let walked_hits = index.search(&request(query)).expect("search");
    for (rescored, walked) in hits.iter().zip(&walked_hits) {
        assert_eq!(rescored.id, walked.id);
        assert!((rescored.bm25 - walked.bm25).abs() <= walked.bm25 * 1e-6, "{rescored:?} vs {walked:?}");
    }
}

#[test]
fn parts_are_searched_only_when_the_whole_token_is_in_no_document() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index
        .add_new(&[
            doc("whole", "edit tsconfig.json", "x", "y"),
            doc("part", "json output", "x", "y"),
            doc("zh-whole", "数据库连接", "x", "y"),
            doc("zh-part", "数据不一致", "x", "y"),
        ])
        .expect("add");
    index.commit(1).expect("commit");
    // Every document with the whole token has its parts: they would only add weight.
    assert_eq!(ids_for(&index, "tsconfig.json"), ["whole"]);
    assert_eq!(ids_for(&index, "数据库"), ["zh-whole"]);
    // A whole token in no document leaves its parts to be searched.
    assert_eq!(ids_for(&index, "tsconfig.yaml"), ["whole"]);
    let mut found = ids_for(&index, "package.json");
    found.sort();
    assert_eq!(found, ["part", "whole"]);
}

#[test]
fn filters_hold_across_segments() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let with = |id, score, agent_id| IndexDoc { score, agent_id, ..doc(id, "deploy the service", "x", "y") };
    // Two commits, two segments; the agent `beta` has documents in the second only.
    index.add_new(&[with("a1", 5, Some("alpha")), with("a2", 2, Some("alpha"))]).expect("add");
    index.commit(1).expect("commit");
    index.add_new(&[with("b1", 4, Some("beta")), with("n1", 5, None)]).expect("add");
    index.commit(2).expect("commit");
    let cases: &[(u8, Option<&str>, &[&str])] = &[
        (1, None, &["a1", "a2", "b1", "n1"]),
        (4, None, &["a1", "b1", "n1"]),
        (1, Some("alpha"), &["a1", "a2"]),
        (3, Some("alpha"), &["a1"]),
        (1, Some("beta"), &["b1"]),
        (5, Some("beta"), &[]),
    ];
    for &(min_score, agent_id, expected) in cases {
        let request = SearchRequest { min_score, agent_id, ..request("deploy") };
        let mut ids = search_ids(&index, &request);
        ids.sort();
        assert_eq!(ids, expected, "{request:?}");
    }
}

#[test]
fn add_new_and_inactive_documents() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index
        .add_new(&[
            doc("a", "vitest run", "x", "y"),
            IndexDoc { status: Status::Pending, ..doc("b", "vitest run", "x", "y") },
        ])
        .expect("add");
    index.commit(1).expect("commit");
    assert_eq!(search_ids(&index, &request("vitest")), ["a"]);
    // An upsert that makes an experience inactive removes it.
    index.upsert(&[IndexDoc { status: Status::Rejected, ..doc("a", "vitest run", "x", "y") }]).expect("upsert");
    index.commit(2).expect("commit");
    assert!(search_ids(&index, &request("vitest")).is_empty());
    assert_eq!(index.num_docs(), 0);
}

#[test]
fn filters_do_not_add_to_the_relevance() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.upsert(&[doc("a", "deploy", "x", "y")]).expect("upsert");
    index.commit(1).expect("commit");
    let unfiltered = index.search(&SearchRequest { min_score: 0, ..request("deploy") }).expect("search");
    let filtered = index.search(&SearchRequest { min_score: 3, ..request("deploy") }).expect("search");
    assert_eq!(unfiltered, filtered);
    assert!(filtered[0].bm25 > 0.0);
}

#[test]
fn limit_caps_the_hits() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let ids: Vec<String> = (0..20).map(|doc_idx| format!("doc{doc_idx:02}")).collect();
    let docs: Vec<IndexDoc<'_>> = ids.iter().map(|id| doc(id, "common words here", "tool", "result")).collect();
    index.upsert(&docs).expect("upsert");
    index.commit(1).expect("commit");
    assert_eq!(index.search(&SearchRequest { limit: 5, ..request("common") }).expect("search").len(), 5);
    assert_eq!(index.search(&SearchRequest { limit: 0, ..request("common") }).expect("search").len(), 0);
    let all = index.search(&SearchRequest { limit: usize::MAX, ..request("common") }).expect("search");
    assert_eq!(all.len(), 20);
}

#[test]
fn writes_are_visible_only_after_commit() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.upsert(&[doc("a", "pending write", "x", "y")]).expect("upsert");
    assert_eq!(ids_for(&index, "pending"), Vec::<String>::new());
    assert_eq!(index.num_docs(), 0);
    index.commit(7).expect("commit");
    assert_eq!(ids_for(&index, "pending"), ["a"]);
    assert_eq!(index.num_docs(), 1);
    assert_eq!(index.applied_seq(), 7);
}

#[test]
fn upsert_replaces_instead_of_duplicating() {
    let index = ExperienceIndex::open_in_ram().expect("index");
    index.upsert(&[doc("x", "old alpha", "tool", "r")]).expect("upsert");
    index.commit(1).expect("commit");
    index.upsert(&[doc("x", "new beta", "tool", "r")]).expect("upsert");
    index.commit(2).expect("commit");
    assert_eq!(ids_for(&index, "alpha"), Vec::<String>::new());
    assert_eq!(ids_for(&index, "beta"), ["x"]);
    assert_eq!(ids_for(&index, "tool"), ["x"]);
    assert_eq!(index.num_docs(), 1);

    // Twice before one commit, and twice in one batch: the last version wins.
    index.upsert(&[doc("y", "first gamma", "t", "r")]).expect("upsert");
    index.upsert(&[doc("y", "second delta", "t", "r")]).expect("upsert");
    index.upsert(&[doc("z", "third epsilon", "t", "r"), doc("z", "fourth zeta", "t", "r")]).expect("upsert");
    index.commit(3).expect("commit");
    assert_eq!(ids_for(&index, "gamma"), Vec::<String>::new());
    assert_eq!(ids_for(&index, "delta"), ["y"]);
    assert_eq!(ids_for(&index, "epsilon"), Vec::<String>::new());
    assert_eq!(ids_for(&index, "zeta"), ["z"]);
    assert_eq!(index.num_docs(), 3);
}

#[test]
fn delete_removes_only_the_given_ids() {
    let index = sample_index();
    let before = index.num_docs();
    index.delete(&["en-paths", "no-such-id"]).expect("delete");
    index.commit(2).expect("commit");
    assert_eq!(ids_for(&index, "tsconfig.json"), Vec::<String>::new());
    assert_eq!(index.num_docs(), before - 1);
    check_first(&index, &[("snake_case", "en-snake")]);
}

#[test]
fn clear_then_reindex_leaves_only_the_new_documents() {
    let index = sample_index();
    index.clear().expect("clear");
    index.upsert(&[doc("fresh", "rebuilt from the store", "sqlite", "ok")]).expect("upsert");
    index.commit(9).expect("commit");
    assert_eq!(index.num_docs(), 1);
    assert_eq!(ids_for(&index, "tsconfig"), Vec::<String>::new());
    assert_eq!(ids_for(&index, "rebuilt"), ["fresh"]);
}

#[test]
fn reopening_keeps_documents_and_applied_seq() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("index");
    let (index, outcome) = ExperienceIndex::open(&path).expect("open");
    assert_eq!(outcome, OpenOutcome::Created);
    assert_eq!(index.applied_seq(), 0);
    index.upsert(&sample_docs()).expect("upsert");
    index.commit(42).expect("commit");
    drop(index);

    let (index, outcome) = ExperienceIndex::open(&path).expect("reopen");
    assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 42 });
    assert_eq!(index.applied_seq(), 42);
    assert_eq!(index.num_docs(), sample_docs().len() as u64);
    check_first(&index, &[("tsconfig.json", "en-paths"), ("分支冲突", "zh-git")]);

    // Still writable after reopening.
    index.upsert(&[doc("later", "added after reopen", "x", "y")]).expect("upsert");
    index.commit(43).expect("commit");
    assert_eq!(ids_for(&index, "reopen"), ["later"]);
}

#[test]
fn an_empty_existing_directory_is_created_not_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_index, outcome) = ExperienceIndex::open(dir.path()).expect("open");
    assert_eq!(outcome, OpenOutcome::Created);
}

/// Opens `dir`, expects a recreated index, and checks that it works and reopens cleanly.
fn assert_recreated_and_usable(dir: &Path, reason_contains: &str) {
    let (index, outcome) = ExperienceIndex::open(dir).expect("open must recover");
    match &outcome {
        OpenOutcome::Recreated { reason } => {
            assert!(reason.contains(reason_contains), "reason {reason:?} lacks {reason_contains:?}")
        }
        other => panic!("expected Recreated, got {other:?}"),
    }
    assert_eq!(index.num_docs(), 0);
    assert_eq!(index.applied_seq(), 0);
    index.upsert(&sample_docs()).expect("upsert");
    index.commit(5).expect("commit");
    check_first(&index, &[("tsconfig.json", "en-paths")]);
    drop(index);
    let (_index, outcome) = ExperienceIndex::open(dir).expect("reopen");
    assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 5 });
}

/// Builds a committed index in `dir` and returns the paths of its segment files.
fn committed_index(dir: &Path) -> Vec<PathBuf> {
    let (index, _) = ExperienceIndex::open(dir).expect("open");
    index.upsert(&sample_docs()).expect("upsert");
    index.commit(3).expect("commit");
    drop(index);
    fs::read_dir(dir)
        .expect("list")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            is_index_file_name(&name) && name != "meta.json" && name != ".managed.json"
        })
        .collect()
}

#[test]
fn garbage_meta_json_is_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    committed_index(dir.path());
    fs::write(dir.path().join("meta.json"), b"{ this is not json \xff\xfe").expect("write");
    assert_recreated_and_usable(dir.path(), "cannot open");
}

#[test]
fn random_files_without_meta_json_are_recreated_and_foreign_files_kept() {
    let dir = tempfile::tempdir().expect("temp dir");
    let junk: Vec<u8> = (0..4096u32).map(|byte_idx| (byte_idx.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let foreign = dir.path().join("notes.txt");
    let segment_like = dir.path().join("0123456789abcdef0123456789abcdef.idx");
    fs::write(&foreign, &junk).expect("write");
    fs::write(&segment_like, &junk).expect("write");
    fs::write(dir.path().join(".managed.json"), &junk).expect("write");
    assert_recreated_and_usable(dir.path(), "meta.json is missing");
    assert!(foreign.exists(), "a file tantivy did not write must be left alone");
    assert!(!segment_like.exists(), "a stale segment file must be removed");
}

#[test]
fn a_damaged_segment_file_is_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let segment_files = committed_index(dir.path());
    let target = segment_files
        .iter()
        .find(|path| path.extension().is_some_and(|ext| ext == "term"))
        .expect("a term dictionary file");
    let mut bytes = fs::read(target).expect("read");
    let middle = bytes.len() / 2;
    for byte in &mut bytes[middle.saturating_sub(8)..middle + 8] {
        *byte ^= 0xA5;
    }
    fs::write(target, &bytes).expect("write");
    assert_recreated_and_usable(dir.path(), "damaged");
}

#[test]
fn a_truncated_or_missing_segment_file_is_recreated() {
    for remove in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        let segment_files = committed_index(dir.path());
        let target = segment_files
            .iter()
            .find(|path| path.extension().is_some_and(|ext| ext == "idx"))
            .expect("a postings file");
        if remove {
            fs::remove_file(target).expect("remove");
        } else {
            fs::write(target, b"xy").expect("truncate");
        }
        assert_recreated_and_usable(dir.path(), "");
    }
}

/// Commits `payload` (or none) to the tantivy index in `dir` behind ExperienceIndex's back.
fn recommit_with_payload(dir: &Path, payload: Option<&str>) {
    let index = Index::open_in_dir(dir).expect("tantivy open");
    register_analyzer(&index);
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
    let mut prepared = writer.prepare_commit().expect("prepare");
    if let Some(payload) = payload {
        prepared.set_payload(payload);
    }
    prepared.commit().expect("commit");
}

#[test]
fn another_schema_version_is_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    committed_index(dir.path());
    recommit_with_payload(dir.path(), Some(r#"{"schema_version":999,"applied_seq":3}"#));
    assert_recreated_and_usable(dir.path(), "schema version 999");
}

#[test]
fn a_commit_without_our_payload_is_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    committed_index(dir.path());
    recommit_with_payload(dir.path(), None);
    assert_recreated_and_usable(dir.path(), "no payload");

    let dir = tempfile::tempdir().expect("temp dir");
    committed_index(dir.path());
    recommit_with_payload(dir.path(), Some("not json"));
    assert_recreated_and_usable(dir.path(), "unreadable commit payload");
}

#[test]
fn a_foreign_tantivy_index_is_recreated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut builder = tantivy::schema::Schema::builder();
    builder.add_text_field("title", tantivy::schema::TEXT);
    let index = Index::create_in_dir(dir.path(), builder.build()).expect("create");
    let mut writer: IndexWriter = index.writer_with_num_threads(1, 15_000_000).expect("writer");
    let mut prepared = writer.prepare_commit().expect("prepare");
    prepared.set_payload(&format!(r#"{{"schema_version":{SCHEMA_VERSION},"applied_seq":1}}"#));
    prepared.commit().expect("commit");
    drop(writer);
    assert_recreated_and_usable(dir.path(), "schema on disk differs");
}

#[test]
fn an_index_locked_by_a_live_writer_is_an_error_and_left_intact() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (first, _) = ExperienceIndex::open(dir.path()).expect("open");
    first.upsert(&sample_docs()).expect("upsert");
    first.commit(4).expect("commit");

    let second = ExperienceIndex::open(dir.path());
    assert!(matches!(second, Err(Error::Locked { .. })), "got {second:?}");

    // The first index is untouched and still works.
    check_first(&first, &[("tsconfig.json", "en-paths")]);
    first.upsert(&[doc("more", "still writable", "x", "y")]).expect("upsert");
    first.commit(5).expect("commit");
    drop(first);
    let (reopened, outcome) = ExperienceIndex::open(dir.path()).expect("reopen");
    assert_eq!(outcome, OpenOutcome::Opened { applied_seq: 5 });
    assert_eq!(reopened.num_docs(), sample_docs().len() as u64 + 1);
}

#[test]
fn searches_run_while_another_thread_writes() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ExperienceIndex>();

    let index = Arc::new(sample_index());
    let writer_index = Arc::clone(&index);
    let writer = std::thread::spawn(move || {
        for round in 0..20u64 {
            let id = format!("round-{round}");
            writer_index.upsert(&[doc(&id, "concurrent write", "thread", "ok")]).expect("upsert");
            writer_index.commit(round + 2).expect("commit");
        }
    });
    for _ in 0..200 {
        let ids = ids_for(&index, "tsconfig.json");
        assert_eq!(ids.first().map(String::as_str), Some("en-paths"));
    }
    writer.join().expect("writer thread");
    assert_eq!(ids_for(&index, "concurrent").len(), 10);
    assert_eq!(index.num_docs(), sample_docs().len() as u64 + 20);
    assert_eq!(index.applied_seq(), 21);
}

/// Overwrites every segment file under `dir` with garbage of the same length, as a disk or
/// another program might while the index is open.
fn damage_segment_files(dir: &std::path::Path) -> usize {
    let mut damaged = 0;
    for entry in std::fs::read_dir(dir).expect("index dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".json") || name.ends_with(".lock") || name.starts_with('.') || !path.is_file() {
            continue;
        }
        let length = std::fs::metadata(&path).expect("metadata").len() as usize;
        let garbage: Vec<u8> = (0..length).map(|i| (i * 7919 % 251) as u8 ^ 0xa5).collect();
        std::fs::write(&path, garbage).expect("overwrite");
        damaged += 1;
    }
    damaged
}

#[test]
fn a_damaged_index_is_cleared_without_reading_its_segments_and_rebuilt_in_place() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("index");
    let (index, _) = ExperienceIndex::open(&path).expect("open");
    // One commit per document, as submits make them: many segments, merged in the background.
    for (n, doc) in sample_docs().iter().cycle().take(40).enumerate() {
        let id = format!("doc-{n}");
        index.upsert(&[IndexDoc { id: &id, ..*doc }]).expect("upsert");
        index.commit(n as u64 + 1).expect("commit");
    }
    index.make_durable().expect("durable");
    assert!(damage_segment_files(&path) > 0);
    // Reading the damaged index fails or panics; either way it is then rebuilt.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ids_for(&index, "vitest")));
    index.reset_writer().expect("reset");
    index.clear().expect("clear");
    index.commit(0).expect("a commit after clear reads none of the damaged segments");
    index.upsert(&[doc("fresh", "rebuilt from the store", "sqlite", "ok")]).expect("upsert");
    index.commit(9).expect("commit");
    assert_eq!(index.num_docs(), 1);
    assert_eq!(ids_for(&index, "rebuilt"), ["fresh"]);
}
