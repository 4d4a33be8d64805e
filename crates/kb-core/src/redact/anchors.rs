//! Which rules for secrets can match in a text's reversed or rot13 reading, found in one scan of
//! the text as written: each rule's pattern (parsed by `regex_syntax`) says which literals every
//! match of it holds, one of them at least (a vendor's prefix, a secret's name; compared
//! ignoring ASCII case), and a reading holds such a literal exactly where the text holds it
//! reversed or rotated. A rule none of whose literals the text holds that
//! way cannot match the reading, so it is not run there, and a reading no rule can match is not
//! built at all.
//!
//! Why: the two readings ran every rule for secrets on every text, and more than doubled the
//! cost of redacting ordinary text (whose reversed or rot13 reading almost never holds a vendor's
//! prefix or a secret's name). The answers are the same: a rule skipped could not have matched.
//! A rule without such literals (too many, or none of two characters) is always run, and so is every rule on a text holding a placeholder (a reading keeps
//! placeholders as they are written, so a literal can show there unreversed and unrotated).

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::engine;
use super::readings::{Kind, rot13_byte};
use super::rules::RULES;
use crate::literals::literals_of;

/// The rules each reading of `text` must be searched with ([`Wanted::rules`]), from one scan.
pub(super) fn wanted(text: &str) -> Wanted {
    let anchors = &*ANCHORS;
    if text.contains('[') && RULES.iter().any(|rule| text.contains(rule.placeholder)) {
        return Wanted { per_slot: None };
    }
    let mut per_slot = anchors.always.clone();
    for found in anchors.automaton.find_overlapping_iter(text) {
        let (slot, rule_idx) = anchors.owners[found.pattern().as_usize()];
        per_slot[slot][rule_idx] = true;
    }
    Wanted { per_slot: Some(per_slot) }
}

/// Which rules for secrets can match the reversed and the rot13 reading of one text.
pub(super) struct Wanted {
    /// Per slot ([`slot`]) and rule; `None`: every rule for secrets, in every reading.
    per_slot: Option<[Vec<bool>; 2]>,
}

impl Wanted {
    /// The rules the reading of kind `kind` must be searched with, ascending: every rule for
    /// secrets but, for reversal and rot13, those whose literals the text holds transformed, and
    /// those with none. Empty: no rule can match that reading.
    pub(super) fn rules(&self, kind: Kind) -> Vec<usize> {
        match (&self.per_slot, slot(kind)) {
            (Some(per_slot), Some(slot)) => {
                per_slot[slot].iter().enumerate().filter(|(_, wanted)| **wanted).map(|(rule_idx, _)| rule_idx).collect()
            }
            _ => engine::secret_rules().collect(),
        }
    }
}

/// Where the reading of kind `kind` is in [`Anchors`], if it transforms the rules' literals.
fn slot(kind: Kind) -> Option<usize> {
    match kind {
        Kind::Reversed => Some(0),
        Kind::Rot13 => Some(1),
        Kind::Spaced | Kind::LinesJoined | Kind::Concatenated => None,
    }
}

/// The transformed literals of every rule for secrets, for the two readings that transform them.
struct Anchors {
    automaton: AhoCorasick,
    /// For each pattern of the automaton: the reading's slot and the rule.
    owners: Vec<(usize, usize)>,
    /// Per slot and rule: always run (no literal); rules that are not for secrets are false.
    always: [Vec<bool>; 2],
}

/// A literal as a reading shows it; `None` when it cannot be said.
type Transform = fn(&[u8]) -> Option<Vec<u8>>;

static ANCHORS: LazyLock<Anchors> = LazyLock::new(|| {
    let mut patterns: Vec<Vec<u8>> = Vec::new();
    let mut owners = Vec::new();
    let mut always = [vec![false; RULES.len()], vec![false; RULES.len()]];
    for rule_idx in engine::secret_rules() {
        let literals = literals_of(RULES[rule_idx].pattern);
        let transforms: [Transform; 2] = [reversed, |literal| Some(rot13(literal))];
        for (slot, transform) in transforms.iter().enumerate() {
            let transformed: Option<Vec<Vec<u8>>> =
                literals.as_ref().and_then(|literals| literals.iter().map(|literal| transform(literal)).collect());
            match transformed {
                Some(transformed) => {
                    for literal in transformed {
                        patterns.push(literal);
                        owners.push((slot, rule_idx));
                    }
                }
                None => always[slot][rule_idx] = true,
            }
        }
    }
    let automaton = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&patterns)
        .expect("the rules' literals make an automaton");
    Anchors { automaton, owners, always }
});

/// `literal` read backwards character by character; `None` when it is not whole UTF-8.
fn reversed(literal: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(literal).ok()?;
    Some(text.chars().rev().collect::<String>().into_bytes())
}

/// `literal` with every ASCII letter rotated by 13, as the rot13 reading shows it.
fn rot13(literal: &[u8]) -> Vec<u8> {
    literal.iter().map(|&byte| rot13_byte(byte)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::readings;

    /// Which rules keep literals: printed, and most of them must (else the filter saves little).
    #[test]
    fn most_rules_for_secrets_have_literals() {
        let anchors = &*ANCHORS;
        let mut without = Vec::new();
        for rule_idx in engine::secret_rules() {
            if anchors.always[0][rule_idx] || anchors.always[1][rule_idx] {
                without.push((rule_idx, RULES[rule_idx].kind));
            }
        }
        println!("rules run on every reading: {without:?}");
        let n_secret = engine::secret_rules().len();
        assert!(without.len() * 4 <= n_secret, "{} of {n_secret} rules have no literal: {without:?}", without.len());
    }

    /// The filter never drops a rule that matches the reading: on the readings of secrets in
    /// many formats and of ordinary text, the rules run on the whole reading and on the filtered
    /// rules find the same.
    #[test]
    fn the_rules_left_out_find_nothing_in_the_reading() {
        let secrets = [
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "export OPENAI_API_KEY=sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGH",
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "postgres://admin:hunter2secret@db.internal:5432/app",
            "mysql -u root -pS3cretPassw0rd db",
            "password: correct-horse-battery-staple",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "xoxb-2345678901-ABCDEFGHIJKLmnopqrstuv",
            "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "密码是 Zx9!qw3rty",
            "curl -u alice:s3cr3tpassw0rd https://api.example.com",
        ];
        let ordinary = [
            "Rebuilt the cache and the tests passed in 12 s.",
            "tokens: 1234, the reversed string of 'olleh' is hello",
            "Uryyb jbeyq: rot13 of hello world",
        ];
        for text in secrets.iter().chain(&ordinary) {
            for form in
                [text.to_string(), text.chars().rev().collect(), String::from_utf8(rot13(text.as_bytes())).unwrap()]
            {
                for kind in [Kind::Reversed, Kind::Rot13] {
                    let Some(reading) = readings::read(kind, &form) else { continue };
                    let all = engine::find_secrets(&reading.text);
                    let filtered = engine::find_among(&reading.text, wanted(&form).rules(kind));
                    assert_eq!(filtered, all, "{kind:?} reading of {form:?}");
                }
            }
        }
    }

    #[test]
    fn ordinary_text_needs_few_rules_in_its_readings() {
        let text = "Rebuilt the cache with --no-cache, and the integration tests passed in 12 s on CI.";
        for kind in [Kind::Reversed, Kind::Rot13] {
            let rules = wanted(text).rules(kind);
            assert!(rules.len() * 2 < engine::secret_rules().len(), "{kind:?}: {} rules", rules.len());
        }
    }
}
