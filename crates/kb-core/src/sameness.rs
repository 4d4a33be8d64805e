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

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::LazyLock;

/// The content words two experiences must share, in all and in their resource, for one to
/// reword the other ([`Claim::rewords`]).
pub const REWORDING_OVERLAP: f64 = 0.5;

/// An experience's task, resource and result as [`Claim::rewords`] compares them, read once.
#[derive(Debug, Clone)]
pub struct Claim {
    whole: Said,
    resource: Said,
}

impl Claim {
    pub fn of(task: &str, resource: &str, result: &str) -> Claim {
        Claim { whole: Said::of(&[task, resource, result]), resource: Said::of(&[resource]) }
    }

    /// Whether the two make the same claims ([`Said::same_claims`]).
    pub fn same_claims(&self, other: &Claim) -> bool {
        self.whole.same_claims(&other.whole)
    }

    /// Whether `other` says what `self` says in other words: the same claims, and at least
    /// [`REWORDING_OVERLAP`] of their content words shared (Jaccard of the stems), in all and in
    /// their resource. Looser than [`Said::difference`], which wants the same content words and
    /// decides merges (a wrong merge loses a user's text); this decides that a proposal rewords
    /// one the user rejected, where a wrong "yes" drops a proposal and a wrong "no" shows the
    /// user again what they turned down. Of the 83,436 pairs of the 409 distinct experiences of
    /// `kb-bench`'s english-experiences, none makes the same claims (their values differ).
    pub fn rewords(&self, other: &Claim) -> bool {
        self.same_claims(other)
            && self.whole.word_overlap(&other.whole) >= REWORDING_OVERLAP
            && self.resource.word_overlap(&other.resource) >= REWORDING_OVERLAP
    }
}

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
        let reading = Reading::of(&text);
        let owned = |words: Vec<&str>| words.into_iter().map(str::to_owned).collect();
        Said {
            outcome: owned(reading.outcome),
            negations: reading.negations,
            values: owned(reading.values),
            words: owned(reading.words),
            wording: owned(reading.wording),
        }
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

    /// Whether the two make the same claims: the same outcome words, negations and values,
    /// whatever their other words.
    pub fn same_claims(&self, other: &Said) -> bool {
        self.outcome == other.outcome && self.negations == other.negations && self.values == other.values
    }

    /// The share of content words two texts have in common (Jaccard of the stems, 0–1).
    pub fn word_overlap(&self, other: &Said) -> f64 {
        let union = self.words.union(&other.words).count();
        if union == 0 {
            return 1.0;
        }
        self.words.intersection(&other.words).count() as f64 / union as f64
    }

    /// [`same_wording`] of `self` and `other`.
    pub fn same_wording(&self, other: &Said) -> bool {
        self.wording == other.wording
    }

    /// [`keys_of`] the texts this was read from.
    pub fn keys(&self) -> SameKeys {
        keys(&strs(&self.outcome), self.negations, &strs(&self.values), &strs(&self.words))
    }
}

/// Keys that find, by lookup, the texts `parts` (an experience's task, resource and result) may
/// be compared with: equal keys for any two texts with no material difference
/// ([`Said::difference`]), and equal wording keys for any two that have the same wording
/// ([`Said::same_wording`]) or no difference (the content words without the stems of outcome
/// words and negations: a superset of both). Issue 25: a submit's possible near-duplicates were
/// found by a BM25 search of its whole text, two fifths of its CPU; the gate makes every
/// write's keys instead, without the strings a [`Said`] owns. Both start with [`KEY_PREFIX`]:
/// a change to this rule changes it and [`KEY_VERSION`], and stored keys made by another version
/// are made again.
pub fn keys_of(parts: &[&str]) -> SameKeys {
    let text = parts.join("\n").to_lowercase();
    let reading = Reading::of(&text);
    keys(&reading.outcome, reading.negations, &reading.values, &reading.words)
}

fn strs(set: &BTreeSet<String>) -> Vec<&str> {
    set.iter().map(String::as_str).collect()
}

fn keys(outcome: &[&str], negations: usize, values: &[&str], words: &[&str]) -> SameKeys {
    let key = digest(&[outcome, &[negations.to_string().as_str()], values, words]);
    let wording: Vec<&str> = words.iter().copied().filter(|word| !WORD_LISTS.set_aside_stems.contains(word)).collect();
    SameKeys { key, wording: digest(&[&wording]) }
}

/// What [`Said`] holds, borrowed from the lowercased text, each list sorted without repeats: one
/// pass over the tokens (for Chinese text a token per character; three passes and a string per
/// token cost 40 µs a submit).
struct Reading<'a> {
    outcome: Vec<&'a str>,
    negations: usize,
    values: Vec<&'a str>,
    words: Vec<&'a str>,
    wording: Vec<&'a str>,
}

impl<'a> Reading<'a> {
    fn of(text: &'a str) -> Reading<'a> {
        let mut reading =
            Reading { outcome: Vec::new(), negations: 0, values: Vec::new(), words: Vec::new(), wording: Vec::new() };
        for token in tokens(text) {
            let mut chars = token.chars();
            if let (Some(c), None) = (chars.next(), chars.next())
                && is_han(c)
            {
                // A Han character is no outcome word, negation, value or stopword of the lists.
                if !FUNCTION_CHARS_ZH.contains(&c) {
                    reading.words.push(token);
                    reading.wording.push(token);
                }
                continue;
            }
            let is_outcome = WORD_LISTS.outcome.contains(token);
            let is_negation = WORD_LISTS.negations.contains(token);
            if is_outcome {
                reading.outcome.push(token);
            }
            reading.negations += usize::from(is_negation);
            if is_value(token) {
                reading.values.push(token);
                continue;
            }
            if WORD_LISTS.stopwords.contains(token) {
                continue;
            }
            let stem = stem(token);
            reading.words.push(stem);
            if !is_outcome && !is_negation {
                reading.wording.push(stem);
            }
        }
        reading.outcome.extend(OUTCOME_WORDS_ZH.iter().filter(|word| text.contains(*word)));
        reading.negations += NEGATIONS_ZH.iter().map(|word| text.matches(word).count()).sum::<usize>();
        for list in [&mut reading.outcome, &mut reading.values, &mut reading.words, &mut reading.wording] {
            list.sort_unstable();
            list.dedup();
        }
        reading
    }
}

/// The version of the rule the keys of [`keys_of`] are made by; every key starts with
/// [`KEY_PREFIX`], which names it.
pub const KEY_VERSION: u32 = 1;

/// The start of every key made by this version of the rule ([`KEY_VERSION`]).
pub const KEY_PREFIX: &str = "s1:";

/// An experience's keys ([`keys_of`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameKeys {
    /// Equal for texts with no material difference.
    pub key: String,
    /// Equal for texts with the same content words, outcome words and negations aside.
    pub wording: String,
}

/// The English word lists as sets, and the stems of outcome words and negations, which the
/// wording key leaves out.
struct WordLists {
    outcome: HashSet<&'static str>,
    negations: HashSet<&'static str>,
    stopwords: HashSet<&'static str>,
    set_aside_stems: HashSet<&'static str>,
}

static WORD_LISTS: LazyLock<WordLists> = LazyLock::new(|| WordLists {
    outcome: OUTCOME_WORDS.iter().copied().collect(),
    negations: NEGATIONS.iter().copied().collect(),
    stopwords: STOPWORDS.iter().copied().collect(),
    set_aside_stems: OUTCOME_WORDS.iter().chain(NEGATIONS).map(|word| stem(word)).collect(),
});

/// [`KEY_PREFIX`] and 128 bits of a hash of `sections`, each word length-prefixed.
fn digest(sections: &[&[&str]]) -> String {
    // One buffer hashed at once: a hasher fed word by word spent more on its calls than on the
    // words.
    let mut bytes = Vec::with_capacity(256);
    for section in sections {
        bytes.extend_from_slice(&(section.len() as u64).to_le_bytes());
        for word in *section {
            bytes.extend_from_slice(&(word.len() as u64).to_le_bytes());
            bytes.extend_from_slice(word.as_bytes());
        }
    }
    let hash = blake3::hash(&bytes);
    let mut key = String::with_capacity(KEY_PREFIX.len() + 32);
    key.push_str(KEY_PREFIX);
    for byte in &hash.as_bytes()[..16] {
        for nibble in [byte >> 4, byte & 0xf] {
            key.push(char::from_digit(u32::from(nibble), 16).expect("a nibble is a hex digit"));
        }
    }
    key
}

fn one_sided(first: &BTreeSet<String>, second: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
    (first.difference(second).cloned().collect(), second.difference(first).cloned().collect())
}

/// Lowercased tokens: runs of letters, digits and the characters identifiers, flags, paths and
/// versions are made of (`tsconfig.json`, `--run`, `v1.2.3`, `a_b`, `k=v`), with trailing
/// sentence punctuation trimmed, and every Han character on its own. Apostrophes stay inside
/// words, so `don't` is one token.
fn tokens<'a>(text: &'a str) -> Vec<&'a str> {
    let mut tokens = Vec::new();
    let mut start = None;
    let flush = |start: &mut Option<usize>, end: usize, tokens: &mut Vec<&'a str>| {
        if let Some(start) = start.take() {
            // Sentence punctuation after a word goes; a leading `-` stays (`--run` is a flag).
            let trimmed = text[start..end].trim_end_matches(['.', ':', '\'', '-', '/', '=']).trim_start_matches('\'');
            if !trimmed.is_empty() {
                tokens.push(trimmed);
            }
        }
    };
    for (at, c) in text.char_indices() {
        if is_han(c) {
            flush(&mut start, at, &mut tokens);
            tokens.push(&text[at..at + c.len_utf8()]);
        } else if c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '=' | '@' | '#' | '+' | '\'' | '~') {
            start.get_or_insert(at);
        } else {
            flush(&mut start, at, &mut tokens);
        }
    }
    flush(&mut start, text.len(), &mut tokens);
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
fn stem(word: &str) -> &str {
    let mut stem = word;
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(stripped) = word.strip_suffix(suffix)
            && stripped.chars().count() >= 3
        {
            stem = stripped;
            break;
        }
    }
    let stem = stem.strip_suffix('e').filter(|rest| rest.chars().count() >= 3).unwrap_or(stem);
    // "running" → "runn" → "run"; "stopped" → "stopp" → "stop".
    let bytes = stem.as_bytes();
    if bytes.len() >= 4
        && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
        && bytes[bytes.len() - 1].is_ascii_alphabetic()
        && !b"aeiousl".contains(&bytes[bytes.len() - 1])
    {
        return &stem[..stem.len() - 1];
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

    /// A rewording makes the same claims with most of the words; another outcome, negation,
    /// value or resource is another experience, however many words it shares.
    #[test]
    fn a_rewording_shares_the_claims_and_most_words_and_another_experience_does_not() {
        let rewords = |first: [&str; 3], second: [&str; 3]| {
            Claim::of(first[0], first[1], first[2]).rewords(&Claim::of(second[0], second[1], second[2]))
        };
        let base =
            ["Deploy the docs site to /var/www/docs", "npm run deploy", "run it with sudo; the EACCES goes away"];
        assert!(rewords(base, ["Deploy the documentation site to /var/www/docs", base[1], base[2]]));
        assert!(rewords(base, [base[2], base[1], base[0]]), "the fields in another order");
        assert!(rewords(
            ["make vitest exit after one run in CI", "vitest --run", "watch mode is the default"],
            ["Make vitest stop after one run in CI", "vitest --run", "by default it runs in watch mode"]
        ));
        assert!(!rewords(base, [base[0], base[1], "run it with sudo; the EACCES still fails"]), "outcome");
        assert!(!rewords(base, [base[0], base[1], "run it without sudo; the EACCES goes away"]), "negation");
        assert!(!rewords(base, ["Deploy the docs site to /var/www/blog", base[1], base[2]]), "value");
        assert!(!rewords(base, [base[0], "rsync to the web host", base[2]]), "resource");
        assert!(!rewords(
            ["store sessions", "redis", "fast lookups for the web tier"],
            ["store sessions", "memcached", "fast lookups for the web tier"]
        ));
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

    /// The keys find what the comparison would: every pair of these texts (the pairs above and
    /// their crossings, English and Chinese) has equal keys exactly when it has no material
    /// difference, and equal wording keys whenever it has the same wording or no difference.
    #[test]
    fn keys_are_equal_for_texts_the_comparison_finds_the_same() {
        let texts: [[&str; 3]; 14] = [
            ["deploy the app", "kubectl apply", "deploy succeeded"],
            ["deploy the app", "kubectl apply", "deploy failed"],
            ["Deploying the app", "kubectl apply", "the deploy failed."],
            ["deploy the app", "kubectl apply", "deploy did not fail"],
            ["pin node", "nvm use 18", "tests pass"],
            ["pin node", "nvm use 20", "tests pass"],
            ["Pinning Node", "nvm use 20", "the tests pass"],
            ["cache layers", "docker build", "this is faster"],
            ["cache layers", "docker build", "this is not faster"],
            ["部署服务", "kubectl", "部署成功"],
            ["部署服务", "kubectl", "部署失败"],
            ["部署的服务", "kubectl", "部署就成功了"],
            ["stop the runner", "systemctl", "it stopped"],
            ["Stopping the runner", "systemctl", "it stops"],
        ];
        let mut merges = 0;
        let mut apart_by_wording = 0;
        for first in &texts {
            for second in &texts {
                let (a, b) = (Said::of(first), Said::of(second));
                assert_eq!(keys_of(first), a.keys(), "{first:?}: the gate's keys are the comparison's");
                let same = a.difference(&b).is_none();
                assert_eq!(a.keys().key == b.keys().key, same, "{first:?} vs {second:?}");
                if same || a.same_wording(&b) {
                    assert_eq!(a.keys().wording, b.keys().wording, "{first:?} vs {second:?}");
                }
                merges += usize::from(same && first != second);
                apart_by_wording += usize::from(!same && a.same_wording(&b));
            }
        }
        // The texts hold both kinds of pair, so the assertions above were put to work.
        assert!(merges >= 8 && apart_by_wording >= 8, "{merges} merges, {apart_by_wording} apart by wording");
        let keys = Said::of(&texts[0]).keys();
        assert!(keys.key.starts_with(KEY_PREFIX) && keys.wording.starts_with(KEY_PREFIX));
        assert_eq!(KEY_PREFIX, format!("s{KEY_VERSION}:"));
        assert_ne!(keys.key, keys.wording);
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
