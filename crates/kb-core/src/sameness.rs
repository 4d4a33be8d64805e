//! Whether two near-identical experiences say the same thing: the rule that decides if a
//! near-duplicate may merge.
//!
//! Embeddings put "deploy succeeded" and "deploy failed" at cosine 0.98, and `cache: true` and
//! `cache: false` at 0.99: a vector threshold alone merged genuinely different experiences and
//! threw the second one's text away. So a near-duplicate merges only when the words show no
//! material difference: the same outcome words, the same negations, the same values, numbers,
//! versions and identifiers, and the same content words (inflections, case, punctuation, word
//! order and function words aside). Anything else stays a separate experience. The rule is
//! deliberately strict: a missed merge costs one extra search hit, a wrong merge costs a
//! user's experience.

use std::collections::BTreeSet;
use std::fmt;

/// Why two texts are different experiences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Different outcome or state words: succeeded / failed, true / false, enabled / disabled.
    Outcome { only_in_first: Vec<String>, only_in_second: Vec<String> },
    /// One says "not" (or 不, 没有…) where the other does not.
    Negation,
    /// Different numbers, versions, flags, paths or identifiers.
    Value { only_in_first: Vec<String>, only_in_second: Vec<String> },
    /// Different content words.
    Wording { only_in_first: Vec<String>, only_in_second: Vec<String> },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pair = |f: &mut fmt::Formatter<'_>, what: &str, first: &[String], second: &[String]| {
            write!(f, "different {what}: {} vs {}", quoted(first), quoted(second))
        };
        match self {
            Difference::Outcome { only_in_first, only_in_second } => pair(f, "outcome", only_in_first, only_in_second),
            Difference::Negation => write!(f, "one is negated and the other is not"),
            Difference::Value { only_in_first, only_in_second } => pair(f, "values", only_in_first, only_in_second),
            Difference::Wording { only_in_first, only_in_second } => pair(f, "words", only_in_first, only_in_second),
        }
    }
}

fn quoted(words: &[String]) -> String {
    if words.is_empty() {
        return "(nothing)".to_owned();
    }
    words.iter().map(|word| format!("`{word}`")).collect::<Vec<_>>().join(", ")
}

/// Outcome and state words, each with its class: a text that has a word of one class the
/// other lacks reports a different outcome.
const OUTCOME_WORDS: &[&str] = &[
    "succeed",
    "succeeded",
    "succeeds",
    "success",
    "successful",
    "successfully",
    "work",
    "works",
    "worked",
    "working",
    "pass",
    "passed",
    "passes",
    "passing",
    "fixed",
    "resolved",
    "solved",
    "ok",
    "okay",
    "true",
    "yes",
    "on",
    "enable",
    "enabled",
    "enables",
    "allow",
    "allowed",
    "allows",
    "faster",
    "better",
    "correct",
    "correctly",
    "valid",
    "stable",
    "fail",
    "failed",
    "fails",
    "failing",
    "failure",
    "broken",
    "broke",
    "breaks",
    "error",
    "errors",
    "crash",
    "crashed",
    "crashes",
    "false",
    "no",
    "off",
    "disable",
    "disabled",
    "disables",
    "deny",
    "denied",
    "slower",
    "worse",
    "wrong",
    "incorrect",
    "invalid",
    "unstable",
    "timeout",
    "timed",
    "hang",
    "hangs",
    "hung",
    "flaky",
    "refused",
    "rejected",
    "missing",
    "leak",
    "leaks",
];

/// Chinese outcome and state words (matched as substrings: Chinese has no spaces).
const OUTCOME_WORDS_ZH: &[&str] = &[
    "成功", "失败", "可以", "不行", "正常", "异常", "报错", "错误", "正确", "开启", "关闭", "启用", "禁用", "打开",
    "通过", "崩溃", "超时", "更快", "更慢", "有效", "无效", "修复", "解决", "允许", "拒绝",
];

/// Negations. English contractions are split by the tokenizer into `don` + `t`, so the
/// contracted forms are listed by their first part with the `n't` kept (see [`tokens`]).
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "without",
    "cannot",
    "can't",
    "don't",
    "doesn't",
    "didn't",
    "isn't",
    "wasn't",
    "aren't",
    "weren't",
    "won't",
    "wouldn't",
    "shouldn't",
    "mustn't",
    "hasn't",
    "haven't",
    "hadn't",
    "nor",
    "neither",
    "none",
];

/// Chinese negation characters and words, counted as substrings.
const NEGATIONS_ZH: &[&str] = &["不", "没", "未", "无", "别", "勿", "非", "否"];

/// English words that carry no content of their own.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "in", "into", "to", "for", "with", "by", "from", "via", "using", "use",
    "used", "uses", "at", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that",
    "these", "those", "then", "than", "so", "when", "while", "after", "before", "also", "just", "only", "once", "all",
    "any", "each", "some", "my", "your", "our", "their", "we", "you", "i", "he", "she", "they", "them", "do", "does",
    "did", "done", "has", "have", "had", "will", "would", "should", "can", "could", "may", "might", "must", "on", "up",
    "out", "there", "here", "which", "what", "how", "by", "per", "instead", "now", "again", "very",
];

/// Chinese function characters: particles, prepositions, measure words.
const FUNCTION_CHARS_ZH: &[char] = &[
    '的', '了', '在', '是', '用', '把', '被', '和', '与', '及', '就', '都', '也', '又', '很', '将', '会', '要', '让',
    '对', '从', '以', '为', '而', '着', '过', '地', '得', '个', '这', '那', '其', '时', '后', '前', '再', '即', '并',
];

/// Whether `first` and `second` (each the task, resource and result of an experience) differ
/// in a way that makes them different experiences; `None` when they say the same thing.
pub fn material_difference(first: &[&str], second: &[&str]) -> Option<Difference> {
    Said::of(first).difference(&Said::of(second))
}

/// Whether `first` and `second` use the same content words once their outcome words and
/// negations are left out: near-identical by their words, so that a [`material_difference`]
/// between them is one of outcome, negation or values ("near-identical but says something
/// else"), not other wording. Chinese outcome and negation characters are not left out.
pub fn same_wording(first: &[&str], second: &[&str]) -> bool {
    Said::of(first).same_wording(&Said::of(second))
}

/// What an experience's words say, as [`material_difference`] and [`same_wording`] compare
/// them, worked out once: a submit is compared with each of its possible near-duplicates
/// (issue 25: tokenizing it again for each, twice, was a quarter of the CPU of a submit's
/// near-duplicate check).
#[derive(Debug, Clone)]
pub struct Said {
    outcome: BTreeSet<String>,
    negations: usize,
    values: BTreeSet<String>,
    words: BTreeSet<String>,
    /// The content words without outcome words and negations ([`same_wording`]).
    wording: BTreeSet<String>,
}

impl Said {
    /// The task, resource and result of an experience (or any texts), read once.
    pub fn of(parts: &[&str]) -> Said {
        let text = parts.join("\n").to_lowercase();
        let tokens = tokens(&text);
        let mut outcome: BTreeSet<String> =
            tokens.iter().filter(|token| OUTCOME_WORDS.contains(&token.as_str())).cloned().collect();
        outcome.extend(OUTCOME_WORDS_ZH.iter().filter(|word| text.contains(*word)).map(|word| (*word).to_owned()));
        let negations = tokens.iter().filter(|token| NEGATIONS.contains(&token.as_str())).count()
            + NEGATIONS_ZH.iter().map(|word| text.matches(word).count()).sum::<usize>();
        let values = tokens.iter().filter(|token| is_value(token)).cloned().collect();
        let words = content_words(&tokens);
        let plain: Vec<String> = tokens
            .into_iter()
            .filter(|token| !OUTCOME_WORDS.contains(&token.as_str()) && !NEGATIONS.contains(&token.as_str()))
            .collect();
        Said { outcome, negations, values, words, wording: content_words(&plain) }
    }

    /// [`material_difference`] of `self` (first) and `other` (second).
    pub fn difference(&self, other: &Said) -> Option<Difference> {
        if self.outcome != other.outcome {
            let (only_in_first, only_in_second) = one_sided(&self.outcome, &other.outcome);
            return Some(Difference::Outcome { only_in_first, only_in_second });
        }
        if self.negations != other.negations {
            return Some(Difference::Negation);
        }
        if self.values != other.values {
            let (only_in_first, only_in_second) = one_sided(&self.values, &other.values);
            return Some(Difference::Value { only_in_first, only_in_second });
        }
        if self.words != other.words {
            let (only_in_first, only_in_second) = one_sided(&self.words, &other.words);
            return Some(Difference::Wording { only_in_first, only_in_second });
        }
        None
    }

    /// [`same_wording`] of `self` and `other`.
    pub fn same_wording(&self, other: &Said) -> bool {
        self.wording == other.wording
    }
}

/// The stems of the content words among `tokens`: values, stopwords and Chinese function
/// characters aside.
fn content_words(tokens: &[String]) -> BTreeSet<String> {
    tokens
        .iter()
        .filter(|token| !is_value(token) && !STOPWORDS.contains(&token.as_str()))
        .filter(|token| !(token.chars().count() == 1 && token.chars().all(|c| FUNCTION_CHARS_ZH.contains(&c))))
        .map(|token| stem(token))
        .collect()
}

fn one_sided(first: &BTreeSet<String>, second: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (first.difference(second).cloned().collect(), second.difference(first).cloned().collect())
}

/// Lowercased tokens: runs of letters, digits and the characters identifiers, flags, paths and
/// versions are made of (`tsconfig.json`, `--run`, `v1.2.3`, `a_b`, `k=v`), with trailing
/// sentence punctuation trimmed, and every Han character on its own. Apostrophes stay inside
/// words, so `don't` is one token.
fn tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, tokens: &mut Vec<String>| {
        // Sentence punctuation after a word goes; a leading `-` stays (`--run` is a flag).
        let trimmed = current.trim_end_matches(['.', ':', '\'', '-', '/', '=', ',']).trim_start_matches('\'');
        if !trimmed.is_empty() {
            tokens.push(trimmed.to_owned());
        }
        current.clear();
    };
    for c in text.chars() {
        if is_han(c) {
            flush(&mut current, &mut tokens);
            tokens.push(c.to_string());
        } else if c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '=' | '@' | '#' | '+' | '\'' | '~') {
            current.push(if c == '\u{2019}' { '\'' } else { c });
        } else {
            flush(&mut current, &mut tokens);
        }
    }
    flush(&mut current, &mut tokens);
    tokens
}

/// A number, version, flag, path or identifier: anything with a digit or with punctuation
/// inside it (apostrophes aside).
fn is_value(token: &str) -> bool {
    token.chars().any(|c| c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '/' | ':' | '=' | '@' | '#' | '+' | '~'))
}

fn is_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{20000}'..='\u{2FA1F}')
}

/// A crude English stem, enough that "runs", "running" and "run", or "cache", "cached" and
/// "caching", compare equal.
fn stem(word: &str) -> String {
    let mut stem = word;
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(stripped) = word.strip_suffix(suffix)
            && stripped.chars().count() >= 3
        {
            stem = stripped;
            break;
        }
    }
    let mut stem = stem.strip_suffix('e').filter(|rest| rest.chars().count() >= 3).unwrap_or(stem).to_owned();
    // "running" → "runn" → "run"; "stopped" → "stopp" → "stop".
    let bytes = stem.as_bytes();
    if bytes.len() >= 4
        && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
        && bytes[bytes.len() - 1].is_ascii_alphabetic()
        && !b"aeiousl".contains(&bytes[bytes.len() - 1])
    {
        stem.pop();
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    fn differs(first: [&str; 3], second: [&str; 3]) -> Option<String> {
        material_difference(&first, &second).map(|difference| difference.to_string())
    }

    #[test]
    fn same_wording_leaves_outcomes_negations_and_values_aside_but_not_other_words() {
        let same = |first: [&str; 3], second: [&str; 3]| same_wording(&first, &second);
        assert!(same(
            ["deploy the app", "kubectl apply", "deploy succeeded"],
            ["deploy the app", "kubectl apply", "deploy failed"]
        ));
        assert!(same(["pin node", "nvm use 18", "tests pass"], ["pin node", "nvm use 20", "tests pass"]));
        assert!(same(
            ["cache layers", "docker build", "this is faster"],
            ["cache layers", "docker build", "this is not faster"]
        ));
        assert!(!same(["store sessions", "redis", "fast lookups"], ["store sessions", "memcached", "fast lookups"]));
        assert!(!same(["pin node", "nvm use 18", "tests pass"], ["pin python", "pyenv 3.12", "tests pass"]));
    }

    /// The pairs of the search-quality issue that a vector threshold merged.
    #[test]
    fn different_experiences_stay_apart() {
        let cases = [
            (
                ["deploy the app", "kubectl apply", "deploy succeeded"],
                ["deploy the app", "kubectl apply", "deploy failed"],
            ),
            (["enable the build cache", "ci.yml", "cache: true"], ["enable the build cache", "ci.yml", "cache: false"]),
            (["pin node", "nvm use 18", "tests pass"], ["pin node", "nvm use 20", "tests pass"]),
            (["upgrade lodash", "npm i lodash@4.17.21", "works"], ["upgrade lodash", "npm i lodash@4.17.20", "works"]),
            (["run tests", "vitest --run", "exits when done"], ["run tests", "vitest --watch", "exits when done"]),
            (
                ["cache layers", "docker build", "this is faster"],
                ["cache layers", "docker build", "this is not faster"],
            ),
            (["部署服务", "kubectl", "部署成功"], ["部署服务", "kubectl", "部署失败"]),
            (["设置代理", "npm config", "可以访问"], ["设置代理", "npm config", "不可以访问"]),
            (["store sessions", "redis", "fast lookups"], ["store sessions", "memcached", "fast lookups"]),
        ];
        for (first, second) in cases {
            assert!(differs(first, second).is_some(), "{first:?} and {second:?} merged");
        }
    }

    #[test]
    fn rewordings_of_the_same_experience_may_merge() {
        let cases = [
            (
                ["Run the tests once", "vitest --run", "No watch mode."],
                ["run tests once", "vitest --run", "no watch mode"],
            ),
            (
                ["deploy with helm", "helm upgrade", "rollout works"],
                ["Deploying using Helm", "helm upgrade", "the rollout works"],
            ),
            (["配置路径别名", "tsconfig.json", "导入更简洁"], ["配置的路径别名", "tsconfig.json", "导入就更简洁了"]),
            (
                ["cache docker layers in CI", "BuildKit", "fast"],
                ["Caching the docker layers in CI.", "BuildKit", "fast"],
            ),
            (["stop the runner", "systemctl", "it stopped"], ["Stopping the runner", "systemctl", "it stops"]),
        ];
        for (first, second) in cases {
            assert_eq!(differs(first, second), None, "{first:?} vs {second:?}");
        }
    }

    #[test]
    fn the_reason_names_the_words() {
        let reason = differs(["a", "b", "deploy succeeded"], ["a", "b", "deploy failed"]).unwrap();
        assert_eq!(reason, "different outcome: `succeeded` vs `failed`");
        let reason = differs(["x", "ci.yml", "cache: true"], ["x", "ci.yml", "cache: false"]).unwrap();
        assert_eq!(reason, "different outcome: `true` vs `false`");
        let reason = differs(["x", "nvm use 18", "ok"], ["x", "nvm use 20", "ok"]).unwrap();
        assert_eq!(reason, "different values: `18` vs `20`");
    }
}
