//! The views of a text in which an attack could show (normalized, undisguised, squashed,
//! leetspeak undone, ROT13, base64), each handed to a check in turn.

use std::sync::LazyLock;

use regex::Regex;

use super::normalize::{fold, normalize_folded, undo_word_disguises};

/// Calls `check` on each view of `text` in which an attack could show, cheapest first, until it
/// returns true: the normalized text; the text with disguises inside words undone (`ig.no.re`,
/// `i g n o r e`, `prev-ious`); the same squashed to letters alone (for the squashed patterns,
/// which need no word boundaries); each of those ROT13-decoded; then, one level deep, every
/// base64 run that decodes to text. The boolean tells `check` whether the view is squashed.
pub(super) fn scan(text: &str, depth: usize, check: &mut dyn FnMut(&str, bool) -> bool) -> bool {
    let folded = fold(text);
    let normalized = normalize_folded(&folded);
    if check(&normalized, false) {
        return true;
    }
    let undisguised = undo_word_disguises(&folded);
    if undisguised != normalized && check(&undisguised, false) {
        return true;
    }
    let squashed: String = undisguised.chars().filter(|ch| ch.is_alphanumeric()).collect();
    if check(&squashed, true) {
        return true;
    }
    // Leetspeak (`ign0re prev1ous`): digits inside words read as the letters they stand for.
    if let Some(unleeted) = unleet(&undisguised) {
        let unleeted_squashed: String = unleeted.chars().filter(|ch| ch.is_alphanumeric()).collect();
        if check(&unleeted, false) || check(&unleeted_squashed, true) {
            return true;
        }
    }
    // ROT13 views cost three more passes, so they are taken only when the squashed text holds
    // the ROT13 form of a word every attack here uses.
    if ROT13_KEYWORDS.is_match(&squashed) {
        for (view, is_squashed) in [(&normalized, false), (&undisguised, false), (&squashed, true)] {
            if check(&rot13(view), is_squashed) {
                return true;
            }
        }
    }
    if depth == 0 {
        for decoded in base64_runs(text) {
            if scan(&decoded, depth + 1, check) {
                return true;
            }
        }
    }
    false
}

/// `text` with the digits of words that mix letters and digits read as letters (`0` as `o`,
/// `1` as `i`, `3` as `e`, `4` as `a`, `5` as `s`, `7` as `t`); `None` when no word does.
/// Version strings and identifiers change too, harmlessly: the view is only searched.
fn unleet(text: &str) -> Option<String> {
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    for word in text.split_inclusive(|ch: char| !ch.is_alphanumeric()) {
        let has_letter = word.chars().any(|ch| ch.is_ascii_alphabetic());
        let has_digit = word.chars().any(|ch| matches!(ch, '0' | '1' | '3' | '4' | '5' | '7'));
        if has_letter && has_digit {
            changed = true;
            out.extend(word.chars().map(|ch| match ch {
                '0' => 'o',
                '1' => 'i',
                '3' => 'e',
                '4' => 'a',
                '5' => 's',
                '7' => 't',
                _ => ch,
            }));
        } else {
            out.push_str(word);
        }
    }
    changed.then_some(out)
}

pub(super) fn rot13(text: &str) -> String {
    text.chars()
        .map(|ch| match ch {
            'a'..='m' | 'A'..='M' => (ch as u8 + 13) as char,
            'n'..='z' | 'N'..='Z' => (ch as u8 - 13) as char,
            _ => ch,
        })
        .collect()
}

/// ROT13 of ignore, disregard, forget, override, bypass, reveal, prompt, instruction, system,
/// rules, jailbreak, "you are now".
static ROT13_KEYWORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new("vtaber|qvfertneq|sbetrg|bireevqr|olcnff|eriyny|cebzcg|vafgehpgvba|flfgrz|ehyrf|wnvyoernx|lbhnerabj")
        .expect("rot13 keyword pattern compiles")
});

/// Runs of base64 (standard or URL-safe) long enough to hide an instruction.
static BASE64_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_-]{16,}={0,2}").expect("base64 run pattern compiles"));

/// The base64 runs of `text` that decode to readable text (UTF-8, almost no control
/// characters). At most 64 runs and 64 KiB of decoded text are looked at, so a large image
/// or key in a submission cannot make the check expensive.
pub(super) fn base64_runs(text: &str) -> Vec<String> {
    let mut decoded_texts = Vec::new();
    let mut budget = 64 * 1024;
    for run in BASE64_RUN.find_iter(text).take(64) {
        let run = run.as_str();
        if run.len() > budget {
            break;
        }
        let Some(bytes) = decode_base64(run) else { continue };
        budget -= run.len();
        let Ok(decoded) = String::from_utf8(bytes) else { continue };
        let n_control = decoded.chars().filter(|ch| ch.is_control() && !matches!(ch, '\n' | '\r' | '\t')).count();
        if n_control == 0 && decoded.chars().any(char::is_alphabetic) {
            decoded_texts.push(decoded);
        }
    }
    decoded_texts
}

/// Decodes standard or URL-safe base64, with or without padding; `None` when it is not base64.
pub(super) fn decode_base64(run: &str) -> Option<Vec<u8>> {
    let value = |byte: u8| -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        } as u32)
    };
    let digits = run.trim_end_matches('=').as_bytes();
    if digits.len() % 4 == 1 {
        return None;
    }
    let mut bytes = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let mut accumulator = 0u32;
        for &digit in chunk {
            accumulator = (accumulator << 6) | value(digit)?;
        }
        accumulator <<= 6 * (4 - chunk.len() as u32);
        let decoded = accumulator.to_be_bytes();
        bytes.extend_from_slice(&decoded[1..chunk.len()]);
    }
    Some(bytes)
}
