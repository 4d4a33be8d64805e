//! The real all-MiniLM-L6-v2 model (built from PyPI by `tools/models.sh`): it loads as it is, and its vectors
//! mean what hybrid search needs them to mean (paraphrases close, unrelated texts far).

mod common;

use common::{cosine, minilm, norm};
use kb_embed::Embedder;

fn embed_all(texts: &[&str]) -> Vec<Vec<f32>> {
    minilm().embed(texts).unwrap()
}

/// The distractors of the ranking tests: plausible experiences about other things.
const DISTRACTORS: [&str; 10] = [
    "npm install fails behind a corporate proxy until the registry is set",
    "git rebase rewrote the commit history of the shared branch",
    "tsconfig.json strict mode reports possible null values",
    "python virtual environment activation differs on windows",
    "the CSS grid layout breaks on safari versions before 15",
    "SQLite database is locked during concurrent writes without WAL",
    "the rust borrow checker rejects a second mutable reference",
    "kubernetes pod cannot pull the image from a private registry",
    "timezone conversion bug when parsing ISO dates",
    "cargo build is slow until incremental compilation is enabled",
];

#[test]
fn minilm_loads_with_384_dimensions_and_unit_vectors() {
    assert_eq!(minilm().dimensions(), 384);
    assert!(minilm().model_id().starts_with("all-minilm-l6-v2-onnx@"), "{}", minilm().model_id());
    for vector in embed_all(&["make the tests stop watching", "如何让测试停止监视模式", ""]) {
        assert_eq!(vector.len(), 384);
        assert!((norm(&vector) - 1.0).abs() < 1e-4);
    }
}

#[test]
fn a_related_experience_is_closer_than_an_unrelated_one() {
    let vectors = embed_all(&[
        "make the tests stop watching",
        "vitest --run avoids watch mode",
        "the nightly database backup failed because the disk was full",
    ]);
    let related = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    assert!(related > unrelated + 0.1, "related {related}, unrelated {unrelated}");
}

/// Rank of `target` (1-based) among the target and the distractors for `query`.
fn rank_of_target(query: &str, target: &str) -> usize {
    let mut texts = vec![query, target];
    texts.extend(DISTRACTORS);
    let vectors = embed_all(&texts);
    let target_score = cosine(&vectors[0], &vectors[1]);
    1 + vectors[2..].iter().filter(|distractor| cosine(&vectors[0], distractor) >= target_score).count()
}

#[test]
fn a_paraphrase_with_no_word_in_common_finds_its_target_in_the_top_three() {
    let cases = [
        ("stop the test runner from waiting for file changes", "vitest --run avoids watch mode"),
        (
            "docker process terminated because RAM exhausted",
            "the container ran out of memory and was killed by the kernel",
        ),
    ];
    for (query, target) in cases {
        let query_words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        assert!(
            target.split_whitespace().all(|word| !query_words.contains(&word.to_lowercase())),
            "{query:?} and {target:?} must share no word"
        );
        let rank = rank_of_target(query, target);
        assert!(rank <= 3, "{target:?} ranked {rank} for {query:?}");
    }
}

#[test]
fn batching_matches_embedding_one_at_a_time() {
    let texts =
        ["make the tests stop watching", "vitest --run avoids watch mode", DISTRACTORS[0], DISTRACTORS[5], "短文本"];
    let batched = embed_all(&texts);
    for (text, vector) in texts.iter().zip(&batched) {
        let alone = minilm().embed(&[text]).unwrap().remove(0);
        assert!(cosine(&alone, vector) > 0.99999, "{text:?}");
    }
}

#[test]
fn a_text_longer_than_the_window_reports_the_share_of_it_the_model_sees() {
    // One word-piece per repeated English word here; the window is 256 tokens, two of them the
    // model's own ([CLS] and [SEP]).
    let words = |n: usize| vec!["deploy"; n].join(" ");
    let (fits, twice, four_times) = (words(100), words(2 * 254), words(4 * 254));
    let shares = minilm().window_shares(&["make the tests stop watching", &fits, &twice, &four_times, ""]).unwrap();
    assert_eq!(shares[0], 1.0, "a short text is seen whole");
    assert_eq!(shares[1], 1.0, "100 words fit the window");
    assert!((shares[2] - 0.5).abs() < 0.01, "twice the window: {}", shares[2]);
    assert!((shares[3] - 0.25).abs() < 0.01, "four times the window: {}", shares[3]);
    assert_eq!(shares[4], 1.0, "an empty text has nothing unseen");
}
