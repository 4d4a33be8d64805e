//! Tests of `ExperienceIndex::score`: the BM25 score, coverage and evidence of given documents,
//! wherever a search ranked them, committed or staged, and nothing for those the index does not
//! hold or that share no word of the query.

use super::*;

fn doc<'a>(id: &'a str, task: &'a str, resource: &'a str, result: &'a str) -> IndexDoc<'a> {
    IndexDoc { id, task, resource, result, content: None, score: 3, status: Status::Active, agent_id: None }
}

fn search(index: &ExperienceIndex, query: &str, limit: usize) -> Vec<Hit> {
    let request = SearchRequest { query, limit, min_score: 1, agent_id: None, status: Status::Active, coverage: true };
    index.search(&request).expect("search")
}

fn assert_same(scored: &Hit, searched: &Hit) {
    assert_eq!(scored.id, searched.id);
    assert!((scored.bm25 - searched.bm25).abs() < 1e-4, "{scored:?} vs {searched:?}");
    assert!((scored.coverage - searched.coverage).abs() < 1e-6, "{scored:?} vs {searched:?}");
    assert_eq!(scored.evidence.words, searched.evidence.words);
}

/// Twenty documents about vitest, fewer and fewer of them saying "watch mode", over two commits.
fn vitest_index() -> ExperienceIndex {
    let index = ExperienceIndex::open_in_ram().expect("index");
    let texts: Vec<(String, String)> = (0..20)
        .map(|n| {
            let words = ["vitest", "watch", "mode", "exits", "once"];
            (format!("d{n:02}"), format!("{} filler text number {n}", words[..=(n % 5)].join(" ")))
        })
        .collect();
    let docs: Vec<IndexDoc<'_>> = texts.iter().map(|(id, task)| doc(id, task, "npx", "ok")).collect();
    index.add_new(&docs[..10]).expect("add");
    index.commit(1).expect("commit");
    index.add_new(&docs[10..]).expect("add");
    index.commit(2).expect("commit");
    index
}

#[test]
fn a_document_outside_the_top_scores_what_a_deeper_search_gives_it() {
    let index = vitest_index();
    let query = "vitest watch mode exits once";
    let deep = search(&index, query, 20);
    assert_eq!(deep.len(), 20);
    let shallow = search(&index, query, 3);
    // The documents the shallow search left out, and one it found, scored directly: the same
    // hits as the deep search, in the order asked.
    let asked: Vec<&str> = deep[3..].iter().map(|hit| hit.id.as_str()).chain([shallow[0].id.as_str()]).collect();
    let scored = index.score(query, &asked).expect("score");
    assert_eq!(scored.len(), asked.len());
    for (scored, id) in scored.iter().zip(&asked) {
        assert_same(scored, deep.iter().find(|hit| hit.id == *id).unwrap());
    }
    // A query of other words: one holding some of them is scored, the rest left out.
    let scored = index.score("exits quickly", &["d00", "d03", "d04"]).expect("score");
    assert_eq!(scored.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["d03", "d04"]);
}

#[test]
fn staged_and_replaced_documents_are_scored_as_searches_see_them() {
    let index = vitest_index();
    index
        .stage(
            3,
            &["d01"],
            &[doc("new", "vitest watch mode in CI", "CI=true", "exits once")],
            &[doc("d02", "cargo build", "jobs", "fits in memory")],
        )
        .expect("stage");
    let query = "vitest watch mode";
    let deep = search(&index, query, 30);
    let scored = index.score(query, &["new", "d05", "d02", "d01", "nobody", "new"]).expect("score");
    // The staged one as a search scores it; d02's replacement holds none of the words and the
    // deleted d01 is gone, as is an unknown id; an id asked twice is scored once.
    assert_eq!(scored.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["new", "d05"]);
    for hit in &scored {
        assert_same(hit, deep.iter().find(|found| found.id == hit.id).unwrap());
    }
    // Committed, it is scored as a search then scores it.
    index.commit_staged().expect("commit");
    let deep = search(&index, query, 30);
    for hit in index.score(query, &["new", "d05"]).expect("score") {
        assert_same(&hit, deep.iter().find(|found| found.id == hit.id).unwrap());
    }
}

#[test]
fn nothing_is_scored_for_a_query_without_words_or_a_shared_function_word_alone() {
    let index = vitest_index();
    assert!(index.score("", &["d00"]).expect("score").is_empty());
    assert!(index.score("?!", &["d00"]).expect("score").is_empty());
    assert!(index.score("vitest", &[]).expect("score").is_empty());
    // "number" is in every document, "the" in none: only the one with the content word counts.
    let docs = [doc("the", "the number of the beast", "r", "ok"), doc("plain", "a number", "r", "ok")];
    index.add_new(&docs).expect("add");
    index.commit(3).expect("commit");
    let scored = index.score("the vitest", &["the", "d00"]).expect("score");
    assert_eq!(scored.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["d00"]);
}
