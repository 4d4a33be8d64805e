//! Runs the rule table over one text and says what to replace, in that text's own offsets.
//!
//! Rules run in table order, each on the text as the rules before it rewrote it (so a secret
//! is taken by its most specific rule and no rule sees another's placeholder as a value). What
//! they replaced is kept as spans of the original text: a later match that covers part of a
//! placeholder takes the whole span that placeholder stands for. The caller rewrites once.
//!
//! Cost: each rule is first asked whether it matches at all (`crate::matchset`); only the rules
//! that do are then run for their spans, one after the other.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::matchset::MatchSet;

use super::rules::{PERSONAL, RULES, Rule};
use super::views;

/// A span of the text to replace, and the rule that first replaced any of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) range: Range<usize>,
    pub(super) rule_idx: usize,
}

impl Found {
    pub(super) fn kind(&self) -> &'static str {
        RULES[self.rule_idx].kind
    }

    pub(super) fn placeholder(&self) -> &'static str {
        RULES[self.rule_idx].placeholder
    }
}

/// What the rules replace in `text`: sorted, not overlapping, in `text`'s offsets.
pub(super) fn find(text: &str) -> Vec<Found> {
    find_among(text, 0..RULES.len())
}

/// What the rules for secrets replace in `text` ([`find`] without the personal data rules,
/// which come last in the table, so the secrets' matches are the same): for the readings, where
/// personal data is not looked for, and which it made a third more costly (the IP rules are
/// the dearest on ordinary text).
pub(super) fn find_secrets(text: &str) -> Vec<Found> {
    find_among(text, secret_rules())
}

/// The rules for secrets: every rule before the first personal data rule (the table puts them
/// last).
pub(super) fn secret_rules() -> Range<usize> {
    0..*FIRST_PERSONAL
}

/// The index of the first personal data rule: every rule from it on is one, none before it.
static FIRST_PERSONAL: LazyLock<usize> =
    LazyLock::new(|| RULES.iter().position(|rule| PERSONAL.contains(&rule.kind)).unwrap_or(RULES.len()));

/// What the rules at `rules` (ascending) replace in `text`: [`find`] when the others cannot match
/// it.
pub(super) fn find_among(text: &str, rules: impl IntoIterator<Item = usize>) -> Vec<Found> {
    let compiled = &*COMPILED;
    let mut found: Vec<Found> = Vec::new();
    let mut current: Cow<'_, str> = Cow::Borrowed(text);
    for rule_idx in compiled.set.matching_among(text, rules) {
        let spans = rule_spans(&RULES[rule_idx], compiled.set.regex(rule_idx), &current);
        if spans.is_empty() {
            continue;
        }
        let shown = Shown::of(&found);
        let mapped: Vec<Found> = spans.into_iter().map(|span| Found { range: shown.to_text(span), rule_idx }).collect();
        found.extend(mapped);
        found = merge(found);
        current = Cow::Owned(rewrite(text, &found));
    }
    found
}

/// Sorts `spans` and joins the overlapping ones; a joined span keeps the earliest rule's kind.
pub(super) fn merge(mut spans: Vec<Found>) -> Vec<Found> {
    spans.sort_by_key(|span| (span.range.start, span.range.end));
    let mut merged: Vec<Found> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.range.start < last.range.end => {
                last.range.end = last.range.end.max(span.range.end);
                last.rule_idx = last.rule_idx.min(span.rule_idx);
            }
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each span replaced by its placeholder.
pub(super) fn rewrite(text: &str, found: &[Found]) -> String {
    let mut rewritten = String::with_capacity(text.len());
    let mut copied_up_to = 0;
    for span in found {
        rewritten.push_str(&text[copied_up_to..span.range.start]);
        rewritten.push_str(span.placeholder());
        copied_up_to = span.range.end;
    }
    rewritten.push_str(&text[copied_up_to..]);
    rewritten
}

/// Where each placeholder stands in the rewritten text, to map its offsets back to the text's.
struct Shown<'a> {
    found: &'a [Found],
    /// Start and end of each placeholder in the rewritten text.
    placed: Vec<Range<usize>>,
}

impl<'a> Shown<'a> {
    fn of(found: &'a [Found]) -> Shown<'a> {
        let mut placed = Vec::with_capacity(found.len());
        let mut shift: isize = 0;
        for span in found {
            let start = (span.range.start as isize + shift) as usize;
            placed.push(start..start + span.placeholder().len());
            shift += span.placeholder().len() as isize - span.range.len() as isize;
        }
        Shown { found, placed }
    }

    /// A span of the rewritten text as a span of the text; a placeholder it touches, whole.
    fn to_text(&self, span: Range<usize>) -> Range<usize> {
        let start = {
            // The first placeholder that ends after the start: the start is inside it or before it.
            let idx = self.placed.partition_point(|placed| placed.end <= span.start);
            match self.placed.get(idx) {
                Some(placed) if placed.start <= span.start => self.found[idx].range.start,
                _ => self.verbatim(idx, span.start),
            }
        };
        let end = {
            // The first placeholder that ends at or after the end.
            let idx = self.placed.partition_point(|placed| placed.end < span.end);
            match self.placed.get(idx) {
                Some(placed) if placed.start < span.end => self.found[idx].range.end,
                _ => self.verbatim(idx, span.end),
            }
        };
        start..end.max(start)
    }

    /// An offset of the rewritten text outside any placeholder, the next being `next_idx`.
    fn verbatim(&self, next_idx: usize, offset: usize) -> usize {
        match next_idx.checked_sub(1) {
            Some(previous) => self.found[previous].range.end + (offset - self.placed[previous].end),
            None => offset,
        }
    }
}

/// The spans one rule replaces in `text`, in order, not overlapping. A match that starts inside
/// an escape (`200.0.0.1` in `on%200.0.0.1`) misreads it: the decoded view reads it right.
fn rule_spans(rule: &Rule, regex: &Regex, text: &str) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut covered_up_to = 0;
    for caps in regex.captures_iter(text) {
        let Some(span) = (rule.span)(text, &caps) else { continue };
        // A span may reach past the regex match (a PEM block runs on to its END line), so a later
        // match inside text already taken is skipped.
        if span.start < covered_up_to || span.is_empty() || views::starts_inside_escape(text, span.start) {
            continue;
        }
        covered_up_to = span.end;
        spans.push(span);
    }
    spans
}

struct Compiled {
    set: MatchSet,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns = RULES.iter().map(|rule| rule.pattern);
    Compiled { set: MatchSet::new(patterns).expect("redaction patterns compile") }
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_match_over_a_placeholder_takes_what_the_placeholder_stands_for() {
        let found = vec![Found { range: 4..10, rule_idx: 0 }, Found { range: 20..22, rule_idx: 0 }];
        // "abcd" + placeholder + text 10..20 + placeholder + rest.
        let shown = Shown::of(&found);
        let width = RULES[0].placeholder.len();
        assert_eq!(shown.to_text(0..2), 0..2);
        assert_eq!(shown.to_text(5..6), 4..10, "inside the placeholder");
        assert_eq!(shown.to_text(2..4 + width + 3), 2..13);
        assert_eq!(shown.to_text(4 + width..4 + width + 10), 10..20, "between the placeholders");
        let second = 4 + width + 10;
        assert_eq!(shown.to_text(second - 1..second + 1), 19..22);
        assert_eq!(shown.to_text(second + width..second + width + 3), 22..25);
    }

    #[test]
    fn the_personal_data_rules_are_the_last_of_the_table() {
        let first = *FIRST_PERSONAL;
        assert!(first < RULES.len(), "no personal data rule");
        assert!(RULES[..first].iter().all(|rule| !PERSONAL.contains(&rule.kind)));
        assert!(RULES[first..].iter().all(|rule| PERSONAL.contains(&rule.kind)), "a secret rule after personal data");
        let text = "ghp_16C7e42F292c6912E7710c838347Ae178B4a from 10.0.0.1, mail bob@example.com";
        let secrets = find_secrets(text);
        assert_eq!(secrets.len(), 1);
        assert_eq!(find(text).into_iter().filter(|span| !PERSONAL.contains(&span.kind())).collect::<Vec<_>>(), secrets);
    }

    #[test]
    fn overlapping_spans_join() {
        let joined = merge(vec![
            Found { range: 5..9, rule_idx: 3 },
            Found { range: 0..2, rule_idx: 1 },
            Found { range: 8..12, rule_idx: 2 },
            Found { range: 2..4, rule_idx: 1 },
        ]);
        assert_eq!(
            joined,
            vec![
                Found { range: 0..2, rule_idx: 1 },
                Found { range: 2..4, rule_idx: 1 },
                Found { range: 5..12, rule_idx: 2 }
            ]
        );
    }
}
