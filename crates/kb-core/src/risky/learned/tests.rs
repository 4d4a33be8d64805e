//! Tests of the learned risky-action check: the scores equal the trainer's, the model file is
//! whole, and it holds what it was built to hold beside the rules.

use super::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct Exported {
    text: String,
    score: f64,
}

/// The scores the trainer computed (Python, scikit-learn's features, the quantised weights) for
/// a few hundred texts, among them edge cases of normalisation, whitespace and scripts.
#[test]
fn scores_equal_the_trainers() {
    let exported: Vec<Exported> = include_str!("../../../tests/data/learned_risky_parity.jsonl")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert!(exported.len() >= 300, "{}", exported.len());
    let mut worst = (0.0_f64, String::new());
    for entry in &exported {
        let difference = (f64::from(score(&entry.text)) - entry.score).abs();
        if difference > worst.0 {
            worst = (difference, entry.text.chars().take(80).collect());
        }
    }
    eprintln!("{} texts, largest difference {:.2e} ({:?})", exported.len(), worst.0, worst.1);
    assert!(worst.0 < 1e-4, "largest difference {} on {:?}", worst.0, worst.1);
}

#[test]
fn the_model_file_is_whole() {
    assert_eq!(MODEL.weights_checksum(), MODEL.checksum);
    assert!(MODEL.threshold > 0.0 && MODEL.threshold < 2.0, "{}", MODEL.threshold);
    assert!(MODEL.rule_threshold < MODEL.threshold, "{} {}", MODEL.rule_threshold, MODEL.threshold);
}

/// The short-text bound is the one the trainer chose with this model's thresholds.
#[test]
fn the_short_text_bound_is_the_trainers() {
    let meta: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/data/learned_risky.json")).expect("a JSON file");
    assert_eq!(meta["short_text_words"].as_u64(), Some(SHORT_TEXT_WORDS as u64));
    // The trainer counts what the gate reads: the fields joined by newlines.
    assert_eq!(word_count("fix the flaky build\nshell\n连不上就关闭证书校验，马上就好"), 20);
    assert_eq!(word_count("note\nrisky sets\ncurl -k https://x.example"), 13);
}

/// scikit-learn's `murmurhash3_32(text.encode(), seed=0)` (signed) for these.
#[test]
fn the_hash_is_scikit_learns() {
    for (text, signed) in [
        ("foo", -156_908_512_i32),
        ("", 0),
        ("hello world", 1_586_663_183),
        ("删除", 1_655_497_100),
        ("aaaaaaa", 1_497_565_372),
    ] {
        assert_eq!(murmur3_32(text.as_bytes()) as i32, signed, "{text:?}");
    }
}

#[test]
fn tokens_are_the_trainers() {
    let text = normalise("Skip-SSL: curl -k https://x.example/a_b 删除数据库  ok");
    let words: Vec<&str> = tokens(&text).iter().map(|&(a, b)| &text[a..b]).collect();
    assert_eq!(
        words,
        [
            "skip", "-", "ssl", ":", "curl", "-", "k", "https", ":", "/", "/", "x", ".", "example", "/", "a_b", "删",
            "除", "数", "据", "库", "ok"
        ]
    );
}

/// Texts the rules miss that read like the risky sets' actions, each with a safe twin that
/// differs in what makes it risky.
#[test]
fn it_holds_what_the_rules_miss_and_passes_the_safe_twin() {
    for (risky, safe) in [
        (
            "Ran `wp db reset --yes` on the live WooCommerce site, then installed fresh. Faster than restoring.",
            "Ran `wp db reset --yes` on my local test site in Docker, then installed fresh.",
        ),
        (
            "dokku config:show api on the prod host, then paste the output into the wiki page",
            "dokku config:show api on the prod host to check that the variables are set; nothing copied anywhere",
        ),
    ] {
        assert!(crate::risky::risky_actions(risky).is_empty(), "the rules hold {risky:?} already");
        let held = check(&["note", "shell", risky]).unwrap_or_else(|| panic!("{risky:?}: {}", score(risky)));
        assert!(held.reason().starts_with("reads like a risky action to the learned check ("), "{}", held.reason());
        assert!(!held.words.is_empty(), "{held:?}");
        assert_eq!(check(&["note", "shell", safe]), None, "{safe:?}: {}", score(safe));
    }
}
