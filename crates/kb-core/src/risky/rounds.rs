//! Every round's tables of the risky-action check, one list per kind (plain rules, rules read
//! with a context around, gates, exceptions, scopes, tools' forms), in the order the check
//! compiles them: a new round adds its tables here as entries, and `risky.rs` iterates the lists.

use std::sync::LazyLock;

use super::round6_rules::{ROUND6_LINE_RULES, ROUND6_RULES, SHARED_PLACE_RULES};
use super::round7_rules::{ROUND7_GATES, ROUND7_LINE_RULES, ROUND7_RULES};
use super::rules::{EXCEPTIONS, GATES, RULES, SCOPED};
use super::target_rules::{LINE_RULES, TARGET_RULES};
use super::tools::{
    CREDENTIAL_FORMS, DESTRUCTIVE_FORMS, EXFILTRATION_FORMS, PIPE_FORMS, TLS_OFF_FORMS, TOOL_EXCEPTIONS,
    TOOL_LINE_RULES, TOOL_SCOPED, local_words,
};
use super::tools9::{
    CREDENTIAL_FORMS9, DESTRUCTIVE_FORMS9, EXFILTRATION_FORMS9, PIPE_FORMS9, TLS_OFF_FORMS9, TOOL9_EXCEPTIONS,
    TOOL9_LINE_RULES, TOOL9_REDUCED, TOOL9_SCOPED,
};

/// A table of `(class, pattern)` rules (`RULES`' format).
type Rules = &'static [(&'static str, &'static str)];

/// A table of `(class, anchor, context)` rules, counted only with their context around (`LINE_RULES`' format).
type LineRules = &'static [(&'static str, &'static str, &'static str)];

/// A table of `(tool, form)` entries of one class (`tools.rs`' format).
type Forms = &'static [(&'static str, &'static str)];

/// One `(tool, form)` entry.
type Form = &'static (&'static str, &'static str);

/// Rules written one by one, round by round; the tools' forms, joined, follow them (`FORM_RULES`).
const PLAIN_RULES: &[Rules] = &[RULES, TARGET_RULES, ROUND6_RULES, ROUND7_RULES];

/// Rules that count only with their context in the lines around.
pub(super) const LINE_RULE_TABLES: &[LineRules] =
    &[LINE_RULES, ROUND6_LINE_RULES, SHARED_PLACE_RULES, ROUND7_LINE_RULES, TOOL_LINE_RULES, TOOL9_LINE_RULES];

/// `(rule, gate)`: a costly rule runs only on a view its cheap gate matches.
pub(super) const GATE_TABLES: &[Rules] = &[GATES, ROUND7_GATES];

/// `(class, pattern)`: what spares a match that contains it, for every rule of its class.
pub(super) const EXCEPTION_TABLES: &[Rules] = &[EXCEPTIONS, TOOL_EXCEPTIONS, TOOL9_EXCEPTIONS];

/// `(class, pattern)`: what in a match's line or the next narrows it to something harmless.
pub(super) const SCOPED_TABLES: &[Rules] = &[SCOPED, TOOL_SCOPED, TOOL9_SCOPED];

/// `(class, pattern)`: what in a match's line or the next makes it harmless whatever the
/// environment, read before the production check that turns the scopes off.
pub(super) const REDUCED_TABLES: &[Rules] = &[TOOL9_REDUCED];

/// The tools' forms per class, every round's: a class's forms are joined together (`FORM_RULES`).
const FORM_TABLES: &[(&str, Forms)] = &[
    ("pipe_to_shell", PIPE_FORMS),
    ("destructive", DESTRUCTIVE_FORMS),
    ("tls_off", TLS_OFF_FORMS),
    ("exfiltration", EXFILTRATION_FORMS),
    ("credential_read", CREDENTIAL_FORMS),
    // Round 9 (`tools9.rs`).
    ("pipe_to_shell", PIPE_FORMS9),
    ("destructive", DESTRUCTIVE_FORMS9),
    ("tls_off", TLS_OFF_FORMS9),
    ("exfiltration", EXFILTRATION_FORMS9),
    ("credential_read", CREDENTIAL_FORMS9),
];

/// Every plain rule, in the order the check runs them: the rules written one by one, then the
/// tools' forms joined.
pub(super) fn plain_rules() -> impl Iterator<Item = &'static (&'static str, &'static str)> + Clone {
    PLAIN_RULES.iter().flat_map(|table| table.iter()).chain(FORM_RULES.iter())
}

/// Every rule read with a context around, in order.
pub(super) fn line_rules() -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> + Clone {
    LINE_RULE_TABLES.iter().flat_map(|table| table.iter())
}

/// Every entry of a list of `(class, pattern)` tables, in order.
pub(super) fn all_of(tables: &'static [Rules]) -> impl Iterator<Item = &'static (&'static str, &'static str)> + Clone {
    tables.iter().flat_map(|table| table.iter())
}

/// How many forms of a class one compiled rule joins (measured with `gate_stages time`: 24 cost
/// about twice what 8 or 4 do, their joined lazy DFAs too large): enough that the tables cost a
/// few scans of a text, few enough that each rule's lazy DFA stays small. Forms whose every
/// branch starts with a word are joined apart from the others, so that the rules they make keep
/// a literal prefilter.
const FORMS_PER_RULE: usize = 8;

/// How many word-led forms one rule joins: their rule runs only where the literal prefilter
/// finds one of their words, so more of them share a scan (round 9, `gate_stages time`).
const LED_FORMS_PER_RULE: usize = 12;

/// The tools' rules, in `RULES`' format: each a few forms of one class joined, the forms of
/// every round's tables of that class together.
static FORM_RULES: LazyLock<Vec<(&'static str, &'static str)>> = LazyLock::new(|| {
    let mut classes: Vec<&'static str> = Vec::new();
    for (class, _) in FORM_TABLES {
        if !classes.contains(class) {
            classes.push(class);
        }
    }
    let mut rules = Vec::new();
    for class in classes {
        let forms = FORM_TABLES.iter().filter(|(of, _)| *of == class).flat_map(|(_, forms)| forms.iter());
        let (led, others): (Vec<Form>, Vec<Form>) = forms.partition(|(_, form)| word_led(form));
        for (led_group, group) in [(true, led), (false, others)] {
            for chunk in group.chunks(if led_group { LED_FORMS_PER_RULE } else { FORMS_PER_RULE }) {
                let joined: Vec<String> = chunk.iter().map(|(_, form)| format!("(?:{})", local_words(form))).collect();
                let pattern: &'static str = Box::leak(joined.join("|").into_boxed_str());
                rules.push((class, pattern));
            }
        }
    }
    rules
});

/// Whether every top-level branch of `form` starts with a word or a literal (`\bvssadmin`,
/// `\b(?:wmic`, `--nosslverify`, `%req`, 删除, `_insecure`, `\.curlrc`): a literal the regex engine
/// can look for first.
fn word_led(form: &str) -> bool {
    let led = |branch: &str| {
        let mut rest = branch;
        while let Some(after) = rest.strip_prefix(r"\b").or_else(|| rest.strip_prefix("(?:")) {
            rest = after;
        }
        // A word, or punctuation taken literally (`_insecure`, `/api`, `\.setinsecure`, `\(load-string`).
        rest.starts_with(|ch: char| ch.is_alphabetic() || matches!(ch, '-' | '%' | '<' | '_' | '/' | ':'))
            || [r"\.", r"\(", r"\["].iter().any(|escaped| rest.starts_with(escaped))
    };
    let (mut depth, mut start, mut escaped) = (0usize, 0usize, false);
    let mut all_led = true;
    for (idx, ch) in form.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => {
                all_led &= led(&form[start..idx]);
                start = idx + 1;
            }
            _ => {}
        }
    }
    all_led && led(&form[start..])
}
