//! Secrets split across two fields of one experience (attack round 27: a token's start in
//! `resource`, its rest in `result`): each field alone holds half a secret no rule reads, so the
//! fields are also read in pairs, the end of one joined to the start of the next.
//!
//! The rule: for every two fields in the order they are given (each pair both ways), the last
//! line of the first and the first line of the second (at most [`EDGE`] bytes each) are joined
//! with nothing between them, the join point treated as a split point. A secret the rules find
//! there that reaches over the join point (personal data excepted, as in the readings) is a
//! secret split in two: its part at the end of the first field and its part at the start of the
//! second are each replaced by the placeholder. A secret wholly on one side is left to the
//! redaction of that field. Only fields that end and start with a token character are joined,
//! so most pairs cost one byte comparison.
//!
//! This runs before each field is redacted on its own: a half that a rule would take alone (the
//! first half of an `sk-` key is itself shaped like a key) would otherwise be replaced first and
//! leave the other half in the next field.

use super::engine::{self, Found};
use super::readings::looks_like_a_fragment;
use super::{Redaction, count};

/// How many bytes of a field's edge are read: longer than any token the rules know.
const EDGE: usize = 512;

/// Replaces, in `fields`, every secret split between the end of one field and the start of
/// another; returns what was replaced (once per secret).
pub fn redact_across_fields(fields: &mut [&mut String]) -> Vec<Redaction> {
    let mut redactions = Vec::new();
    for first in 0..fields.len() {
        for second in 0..fields.len() {
            if first == second {
                continue;
            }
            let (head_end, tail_start, found) = split_secrets(fields[first], fields[second]);
            let Some(found) = found else { continue };
            count(std::slice::from_ref(&found), &mut redactions);
            let placeholder = found.placeholder();
            fields[first].replace_range(tail_start.., placeholder);
            fields[second].replace_range(..head_end, placeholder);
        }
    }
    redactions
}

/// The first secret that reaches over the join of the end of `before` and the start of
/// `after`: where it starts in `before`, where it ends in `after`.
fn split_secrets(before: &str, after: &str) -> (usize, usize, Option<Found>) {
    let is_token_end = |ch: Option<char>| ch.is_some_and(|ch| ch.is_ascii_alphanumeric() || "_-+/=.".contains(ch));
    if !is_token_end(before.chars().next_back()) || !is_token_end(after.chars().next()) {
        return (0, 0, None);
    }
    let mut tail_start = before.rfind('\n').map_or(0, |newline| newline + 1).max(before.len().saturating_sub(EDGE));
    while !before.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let mut head_end = after.find('\n').unwrap_or(after.len()).min(EDGE);
    while !after.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let tail = &before[tail_start..];
    let joined = format!("{tail}{}", &after[..head_end]);
    // The secret itself reaches over the join, not a match that takes a word on the other side
    // with the space before it (a PEM block's END line and the next field's first word).
    let found = engine::find_secrets(&joined).into_iter().find(|span| {
        span.range.start < tail.len()
            && span.range.end > tail.len()
            && !joined[span.range.clone()].contains(char::is_whitespace)
    });
    let Some(span) = found else { return (0, 0, None) };
    // A secret whole at the end of the first field, then a word: two things, unless what follows
    // looks like the rest of a token (the first half of an `sk-` key is a key to the rules too).
    // Regression (kb.submit, `X-Auth-Key: …` in both result and content): the next field's
    // `X-Auth-Key` was read as the rest of the key, replaced, and its own value left without
    // its name. The rest of a token holds a digit and ends where the next field's word ends.
    let whole_before = engine::find(tail).iter().any(|before| before.range.end == tail.len());
    let rest = &joined[tail.len()..span.range.end];
    let rest_is_a_word = joined[span.range.end..].chars().next().is_none_or(char::is_whitespace);
    if whole_before
        && !(looks_like_a_fragment(rest) && rest.bytes().any(|byte| byte.is_ascii_digit()) && rest_is_a_word)
    {
        return (0, 0, None);
    }
    (span.range.end - tail.len(), tail_start + span.range.start, Some(span))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn across(first: &str, second: &str) -> (String, String, Vec<Redaction>) {
        let (mut first, mut second) = (first.to_owned(), second.to_owned());
        let found = redact_across_fields(&mut [&mut first, &mut second]);
        (first, second, found)
    }

    /// Attack round 27: a token's start in one field, its rest in the next.
    #[test]
    fn a_token_split_between_two_fields_goes_from_both() {
        for (first, second, expected_first, expected_second) in [
            ("deploy key ghp_16C7e42F292c69", "12E7710c838347Ae178B4a works", "deploy key [TOKEN]", "[TOKEN] works"),
            ("use sk-proj-Ab3dEfGhIjKlMnOpQrSt", "UvWxYz0123456789abcdefGH", "use [API_KEY]", "[API_KEY]"),
            ("line one\nAKIAIOSFOD", "NN7EXAMPLE then", "line one\n[API_KEY]", "[API_KEY] then"),
            ("the password is Adm1n", "Pass9 until Friday", "the password is [SECRET]", "[SECRET] until Friday"),
        ] {
            let (first, second, found) = across(first, second);
            assert_eq!((first.as_str(), second.as_str()), (expected_first, expected_second));
            assert_eq!(found.len(), 1, "{found:?}");
            // Idempotent: the placeholders joined are no secret.
            let (again_first, again_second, again) = across(&first, &second);
            assert_eq!((again_first, again_second), (first, second));
            assert!(again.is_empty());
        }
        // The other order: the rest in the first field given.
        let (first, second, _) = across("12E7710c838347Ae178B4a works", "deploy key ghp_16C7e42F292c69");
        assert_eq!((first.as_str(), second.as_str()), ("[TOKEN] works", "deploy key [TOKEN]"));
    }

    #[test]
    fn fields_that_merely_meet_are_left_alone() {
        for (first, second) in [
            ("fix the build", "cargo clean"),
            ("call 555", "123 4567 later"),
            ("version 10.0", ".0.1 released"),
            ("token", "=abc"),
            ("", ""),
            ("é", "é"),
            ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", " done"),
            ("Authorization: Bearer abc123def456", "deploy for alice"),
            ("X-Auth-Key: fa13ccc58469debc624fd22217275a116587b", "X-Auth-Key: fa13ccc58469debc624fd22217275a116587b"),
        ] {
            let (after_first, after_second, found) = across(first, second);
            assert_eq!((after_first.as_str(), after_second.as_str()), (first, second), "{found:?}");
        }
    }
}
