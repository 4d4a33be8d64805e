//! Readings of a text that undo the obfuscations attack round 27 found secrets leaving in: the
//! text reversed, rot13, spaced out (one separator between every character), broken across lines
//! inside a token, and cut into string literals joined by a concatenation operator. Unlike the
//! decoding views of `views.rs`, which decode escapes a program would decode, these read text a
//! person (or a model) can put back together.
//!
//! Each reading maps a span back to the text it was read from: reversal mirrors offsets, rot13
//! keeps them, and the three splicing readings only drop bytes (separators, line breaks with
//! their indentation, a closing quote, joiner and opening quote), so a span that crosses a drop
//! takes every dropped byte inside it: both parts of a split token go, and what joined them.
//!
//! What counts: a reading finds secrets, not personal data (an address or a number read
//! backwards, rot13 or joined across two lines is ordinary text far more often than a disguise),
//! and rot13's match must hold a letter (digits read the same). A splicing reading's match that
//! joins a secret found in the text as written to what follows a break counts only when that
//! looks like the rest of a token. Placeholders are read as they are (not
//! reversed, not rotated), so redacted text reads the same and redaction stays idempotent.
//!
//! Cost: reversal and rot13 are one pass each and one more run of the rules; the splicing
//! readings are built only when their scan finds something to drop (a spaced run of at least
//! [`MIN_SPACED`] characters, a line broken between two token characters, two literals joined),
//! and their rules run only then. Every scan is linear: each starts where the last one stopped.

use std::cell::OnceCell;
use std::ops::Range;
use std::sync::LazyLock;

use super::rules::{PERSONAL, RULES};

/// How many characters a spaced-out run must have, separators not counted.
const MIN_SPACED: usize = 8;

/// How many characters the two words around a line break have together, at least, for the break
/// to be read as inside a token.
const MIN_BROKEN: usize = 12;

/// How far the word after a line break is read, at most.
const EDGE_WORD: usize = 256;

/// The separators a spaced-out token is written with, one between every two characters.
const SEPARATORS: &[char] = &[' ', '-', '.', '_', '|', ',', '/', ':', '*', '+', '~', '\t', '\u{3000}'];

/// One way to read a text, in the order [`read`] is asked for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Reversed,
    Rot13,
    Spaced,
    LinesJoined,
    Concatenated,
}

pub(super) const KINDS: [Kind; 5] = [Kind::Reversed, Kind::Rot13, Kind::Spaced, Kind::LinesJoined, Kind::Concatenated];

/// A reading of a text, and the map back to it.
#[derive(Debug, Clone)]
pub(super) struct Reading {
    pub(super) text: String,
    kind: Kind,
    map: Map,
    /// Whether the reading reads more like English than the text (reversal and rot13 only).
    reads_better: OnceCell<bool>,
}

#[derive(Debug, Clone)]
enum Map {
    /// Units (characters, placeholders) in reverse order: a span maps to its mirror.
    Reversed { len: usize },
    /// The same bytes at the same offsets.
    Same,
    /// Pieces of the text kept, in order, with bytes dropped between them.
    Spliced { kept: Vec<Kept> },
}

/// `len` bytes of the text from `source_start`, at `view_start` in the reading.
#[derive(Debug, Clone, Copy)]
struct Kept {
    view_start: usize,
    source_start: usize,
    len: usize,
}

/// The reading of `text` of `kind`, or `None` when it would read the same or find nothing new.
pub(super) fn read(kind: Kind, text: &str) -> Option<Reading> {
    match kind {
        Kind::Reversed => Some(reversed(text)),
        Kind::Rot13 => text.bytes().any(|byte| byte.is_ascii_alphabetic()).then(|| rot13(text)),
        Kind::Spaced => spliced(kind, text, spaced_drops(text)),
        Kind::LinesJoined => spliced(kind, text, line_break_drops(text)),
        Kind::Concatenated => spliced(kind, text, concatenation_drops(text)),
    }
}

impl Reading {
    /// The bytes of the text that `range` of the reading came from, with what was dropped inside.
    pub(super) fn to_source(&self, range: Range<usize>) -> Range<usize> {
        match &self.map {
            Map::Reversed { len } => len - range.end..len - range.start,
            Map::Same => range,
            Map::Spliced { kept } => {
                let start_idx = kept.partition_point(|piece| piece.view_start + piece.len <= range.start);
                let end_idx = kept.partition_point(|piece| piece.view_start + piece.len < range.end);
                let start =
                    kept.get(start_idx).map_or(0, |piece| piece.source_start + (range.start - piece.view_start));
                let end = kept.get(end_idx).map_or(start, |piece| piece.source_start + (range.end - piece.view_start));
                start..end.max(start)
            }
        }
    }

    /// Whether a match of rule `rule_idx` at `range` of the reading counts, and how much of it: a
    /// secret (not personal data) that the reading, not the text as written, shows. A splicing
    /// reading's match ends before a part after a drop that does not look like the rest of a
    /// token (a secret at the end of a line, then a word on the next, is two things), and does
    /// not count when no drop is left inside it: the text as written holds what is left.
    pub(super) fn accept(&self, source: &str, range: Range<usize>, rule_idx: usize) -> Option<Range<usize>> {
        if PERSONAL.contains(&RULES[rule_idx].kind) {
            return None;
        }
        // Reversed or rotated, ordinary text turns into words that can look like a flag (rot13
        // turns `-http=` into `-uggc=`, a `-u user:password`): a rule that reads a one-letter flag
        // counts there only when the reading reads more like English than the text does.
        // So does a command line the reading starts with the command the rule names (`keytool
        // -srcstorepass …`, `7z a -p…` written backwards): ordinary text read backwards or
        // rotated does not begin a line with `keytool`.
        let in_context = || {
            !FLAG_READ.contains(&RULES[rule_idx].kind)
                || *self.reads_better.get_or_init(|| english_score(&self.text) > english_score(source))
                || line_starts_with_its_command(&self.text, range.start, rule_idx)
        };
        match &self.map {
            Map::Reversed { .. } => in_context().then_some(range),
            Map::Same => {
                let has_letter = source.as_bytes()[range.clone()].iter().any(u8::is_ascii_alphabetic);
                (has_letter && in_context()).then_some(range)
            }
            Map::Spliced { .. } if self.kind == Kind::Spaced => Some(range),
            Map::Spliced { kept } => {
                // Where the pieces after the drops inside the match start.
                let first = kept.partition_point(|piece| piece.view_start <= range.start);
                let mut drops: Vec<usize> =
                    kept[first..].iter().map(|piece| piece.view_start).take_while(|&at| at < range.end).collect();
                if drops.is_empty() {
                    // No drop inside: what the reading joined before it (a URL broken before its
                    // token) showed it.
                    return Some(range);
                }
                // A vendor's format ends where its pattern ends: only a lower-case word (`npm` on
                // the next line) runs on past a token's end.
                let self_evident = SELF_EVIDENT.contains(&RULES[rule_idx].kind);
                let mut end = range.end;
                while let Some(&drop) = drops.last() {
                    let part = &self.text[drop..end];
                    let lower_case_word = part.len() > 1 && part.bytes().all(|byte| byte.is_ascii_lowercase());
                    if if self_evident { !lower_case_word } else { looks_like_a_fragment(part) } {
                        break;
                    }
                    end = drop;
                    drops.pop();
                }
                (!drops.is_empty()).then_some(range.start..end)
            }
        }
    }
}

/// The kinds of secret whose format alone says what they are (a vendor's prefix, a PEM block, a
/// JWT's shape), without a name or a flag before them.
const SELF_EVIDENT: &[&str] = &[
    "private_key",
    "jwt",
    "api_key",
    "stripe_key",
    "aws_access_key_id",
    "github_token",
    "gitlab_token",
    "slack_token",
    "slack_webhook",
    "google_api_key",
    "npm_token",
    "huggingface_token",
    "pypi_token",
];

/// The kinds of secret read after a one-letter flag (`-u user:password`, `-pSecret`), which
/// reversed or rotated ordinary text spells by chance.
const FLAG_READ: &[&str] = &["cli_credentials", "cli_password"];

/// Whether the line of `text` that holds `at` starts (after spaces and `sudo`) with a command
/// the pattern of rule `rule_idx` names: one of the literals every match of it holds
/// (`literals.rs`), as a whole word. Rules without such literals (`-u user:password`) name none.
fn line_starts_with_its_command(text: &str, at: usize, rule_idx: usize) -> bool {
    static COMMANDS: LazyLock<Vec<Option<Vec<Vec<u8>>>>> =
        LazyLock::new(|| RULES.iter().map(|rule| crate::literals::literals_of(rule.pattern)).collect());
    let Some(commands) = &COMMANDS[rule_idx] else { return false };
    let line_start = text[..at.min(text.len())].rfind('\n').map_or(0, |newline| newline + 1);
    let line = text[line_start..].trim_start();
    let line = line.strip_prefix("sudo ").map_or(line, str::trim_start);
    let first_word = line.split(|ch: char| ch.is_whitespace()).next().unwrap_or("");
    commands.iter().any(|command| first_word.as_bytes().eq_ignore_ascii_case(command.trim_ascii()))
}

/// How many words `text` holds that people write around secrets and in ordinary English (and
/// Chinese):
/// reversed or in rot13 they are gone (`drowssap`, `cnffjbeq`), so text written backwards or in
/// rot13 scores low and its reading high, and ordinary text the other way round.
fn english_score(text: &str) -> usize {
    const WORDS: [&str; 120] = [
        "a",
        "access",
        "account",
        "add",
        "admin",
        "after",
        "all",
        "an",
        "and",
        "api",
        "app",
        "are",
        "as",
        "at",
        "auth",
        "authorization",
        "aws",
        "backup",
        "basic",
        "be",
        "bearer",
        "bot",
        "build",
        "but",
        "by",
        "cache",
        "can",
        "cli",
        "client",
        "config",
        "cookie",
        "credential",
        "credentials",
        "curl",
        "data",
        "database",
        "db",
        "default",
        "deploy",
        "do",
        "docker",
        "echo",
        "env",
        "export",
        "file",
        "for",
        "from",
        "get",
        "git",
        "github",
        "gpg",
        "has",
        "have",
        "header",
        "host",
        "http",
        "https",
        "id",
        "if",
        "in",
        "is",
        "it",
        "key",
        "ldapsearch",
        "login",
        "logs",
        "machine",
        "mysql",
        "new",
        "no",
        "not",
        "of",
        "on",
        "openssl",
        "or",
        "pass",
        "passphrase",
        "password",
        "ping",
        "port",
        "private",
        "psql",
        "pwd",
        "redis",
        "registry",
        "root",
        "run",
        "scp",
        "secret",
        "select",
        "server",
        "service",
        "session",
        "set",
        "share",
        "should",
        "smbclient",
        "so",
        "sqlcmd",
        "ssh",
        "sshpass",
        "tar",
        "that",
        "the",
        "this",
        "to",
        "token",
        "url",
        "use",
        "used",
        "user",
        "uses",
        "value",
        "was",
        "we",
        "when",
        "wifi",
        "with",
        "you",
        "zip",
    ];
    const CHINESE: [&str; 8] = ["密码", "密钥", "秘钥", "令牌", "口令", "凭证", "账号", "用户"];
    let english = text
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter(|word| (1..=13).contains(&word.len()))
        .filter(|word| WORDS.binary_search(&word.to_ascii_lowercase().as_str()).is_ok())
        .count();
    let chinese: usize = if text.is_ascii() { 0 } else { CHINESE.iter().map(|word| text.matches(word).count()).sum() };
    english + chinese
}

/// Whether `part` looks like part of a token rather than a word: a digit, an upper-case letter
/// after its first character with a lower-case one (`UvWx`, not `Deploy` or `README`), or a
/// short end in capitals (`PLE` of an AWS key).
pub(super) fn looks_like_a_fragment(part: &str) -> bool {
    let bytes = part.as_bytes();
    bytes.iter().any(u8::is_ascii_digit)
        || (bytes.iter().skip(1).any(u8::is_ascii_uppercase) && bytes.iter().any(u8::is_ascii_lowercase))
        || (!bytes.is_empty() && bytes.len() <= 4 && bytes.iter().all(u8::is_ascii_uppercase))
}

/// Where each placeholder of `text` is: read as one unit, as written.
fn placeholder_at(text: &str, idx: usize) -> Option<usize> {
    if text.as_bytes()[idx] != b'[' {
        return None;
    }
    RULES.iter().map(|rule| rule.placeholder).find(|placeholder| text[idx..].starts_with(placeholder)).map(str::len)
}

/// The text's characters in reverse order, placeholders kept as they are.
fn reversed(text: &str) -> Reading {
    let mut units: Vec<Range<usize>> = Vec::with_capacity(text.len());
    let mut idx = 0;
    while idx < text.len() {
        let len = placeholder_at(text, idx).unwrap_or_else(|| text[idx..].chars().next().map_or(1, char::len_utf8));
        units.push(idx..idx + len);
        idx += len;
    }
    let mut reading = String::with_capacity(text.len());
    for unit in units.into_iter().rev() {
        reading.push_str(&text[unit]);
    }
    Reading {
        text: reading,
        kind: Kind::Reversed,
        map: Map::Reversed { len: text.len() },
        reads_better: OnceCell::new(),
    }
}

/// Every ASCII letter rotated by 13, placeholders kept as they are.
fn rot13(text: &str) -> Reading {
    let mut bytes = text.as_bytes().to_vec();
    let mut idx = 0;
    while idx < bytes.len() {
        if let Some(len) = placeholder_at(text, idx) {
            idx += len;
            continue;
        }
        bytes[idx] = rot13_byte(bytes[idx]);
        idx += 1;
    }
    // Only ASCII letters changed, each to an ASCII letter: still UTF-8.
    let text = String::from_utf8(bytes).unwrap_or_default();
    Reading { text, kind: Kind::Rot13, map: Map::Same, reads_better: OnceCell::new() }
}

/// `byte` rotated by 13 if it is an ASCII letter (rot13 is its own inverse).
pub(super) fn rot13_byte(byte: u8) -> u8 {
    match byte {
        b'a'..=b'z' => b'a' + (byte - b'a' + 13) % 26,
        b'A'..=b'Z' => b'A' + (byte - b'A' + 13) % 26,
        _ => byte,
    }
}

/// The reading of `text` with `drops` (sorted, not overlapping) left out, or `None` when there is
/// nothing to drop.
fn spliced(kind: Kind, text: &str, drops: Vec<Range<usize>>) -> Option<Reading> {
    if drops.is_empty() {
        return None;
    }
    let mut reading = String::with_capacity(text.len());
    let mut kept = Vec::with_capacity(drops.len() + 1);
    let mut copied_up_to = 0;
    for drop in drops.iter().chain(std::iter::once(&(text.len()..text.len()))) {
        if drop.start > copied_up_to {
            kept.push(Kept { view_start: reading.len(), source_start: copied_up_to, len: drop.start - copied_up_to });
            reading.push_str(&text[copied_up_to..drop.start]);
        }
        copied_up_to = copied_up_to.max(drop.end);
    }
    Some(Reading { text: reading, kind, map: Map::Spliced { kept }, reads_better: OnceCell::new() })
}

/// The separators of every spaced-out run (`g h p _ 1 6 C 7 …`, `g-h-p-_-…`): runs where every
/// other character is one separator, at least [`MIN_SPACED`] characters long, in one line. The
/// characters between the separators are kept, spaces among them too (a spaced-out space is
/// three spaces).
fn spaced_drops(text: &str) -> Vec<Range<usize>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut drops = Vec::new();
    let mut idx = 0;
    while idx + 2 < chars.len() {
        let (_, first) = chars[idx];
        let (_, separator) = chars[idx + 1];
        if first.is_whitespace() || !SEPARATORS.contains(&separator) || first == separator {
            idx += 1;
            continue;
        }
        // `end` is the index of the run's last character.
        let mut end = idx;
        while end + 2 < chars.len() && chars[end + 1].1 == separator && !matches!(chars[end + 2].1, '\n' | '\r') {
            end += 2;
        }
        while end > idx && chars[end].1.is_whitespace() {
            end -= 2;
        }
        // A first character that ends a word written as usual (`once g h p …`), or a last one
        // that starts one, belongs to that word, not to the run.
        let mut start = idx;
        if idx > 0 && chars[idx - 1].1.is_alphanumeric() {
            start += 2;
        }
        let mut last = end;
        if end + 1 < chars.len() && chars[end + 1].1.is_alphanumeric() && last >= start + 2 {
            last -= 2;
        }
        let n_visible = if last >= start {
            (start..=last).step_by(2).filter(|&at| !chars[at].1.is_whitespace()).count()
        } else {
            0
        };
        if n_visible >= MIN_SPACED {
            for at in (start..last).step_by(2) {
                let (separator_at, separator) = chars[at + 1];
                drops.push(separator_at..separator_at + separator.len_utf8());
            }
        }
        // The run's last character may begin a run with another separator.
        idx = if end > idx { end } else { idx + 1 };
    }
    drops
}

/// Every line break between two token characters, with the indentation after it: a newline (or
/// `\r\n`), or one written as a JSON escape (`\n`, `\r\n`), then spaces and tabs.
fn line_break_drops(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut drops = Vec::new();
    let mut idx = 1;
    while idx < bytes.len() {
        let break_len = [&b"\r\n"[..], b"\n", b"\\r\\n", b"\\n"]
            .iter()
            .find(|newline| bytes[idx..].starts_with(newline))
            .map(|newline| newline.len());
        let Some(break_len) = break_len else {
            idx += 1;
            continue;
        };
        let mut end = idx + break_len;
        while end < bytes.len() && matches!(bytes[end], b' ' | b'\t') {
            end += 1;
        }
        // A token broken in two is long: the words on both sides of the break, together, are at
        // least [`MIN_BROKEN`] characters (`app` then `pwd = …` on the next line are two lines).
        // `idx` and `end` are on character boundaries: a break and spaces are ASCII.
        let in_word = |ch: &char| ch.is_alphanumeric() || "_-+/=.".contains(*ch);
        let word_before = text[..idx].chars().rev().take_while(in_word).take(MIN_BROKEN).count();
        let word_after = text[end..].chars().take_while(in_word).take(MIN_BROKEN).count();
        // A line that starts with `name=value` or `name:` starts a statement of its own (what
        // follows a break is read for at most [`EDGE_WORD`] bytes: the scan stays linear). A name
        // is a run of word characters: a line that starts with `=` (a value on the line after its
        // name) or whose word holds `@`, a quote or `/` before its `:` (the rest of a URL's
        // password, a JSON key cut before its closing quote) goes on from the line before.
        let next_word = bytes[end..].iter().take(EDGE_WORD).take_while(|byte| !byte.is_ascii_whitespace());
        let next_word: Vec<u8> = next_word.copied().collect();
        let unpadded = next_word.iter().rposition(|&byte| byte != b'=').map_or(&[][..], |last| &next_word[..=last]);
        let starts_an_assignment = unpadded.iter().position(|&byte| byte == b'=' || byte == b':').is_some_and(|at| {
            at > 0 && unpadded[..at].iter().all(|&byte| byte.is_ascii_alphanumeric() || b"_-.".contains(&byte))
        });
        if word_before > 0 && word_after > 0 && word_before + word_after >= MIN_BROKEN && !starts_an_assignment {
            drops.push(idx..end);
        }
        idx = end.max(idx + 1);
    }
    drops
}

/// Every join of two string literals: a closing quote, a concatenation operator (`+`, `..`,
/// `.`, `||`, `&`, none at all, or a statement that appends: `; s += `, `.=`, `..=`), and an
/// opening quote of the same kind, with the spaces, line breaks and backslashes (an escaped
/// quote, a line continuation) around them.
fn concatenation_drops(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut drops = Vec::new();
    let mut idx = 0;
    while idx < bytes.len() {
        let quote = bytes[idx];
        if !matches!(quote, b'"' | b'\'' | b'`') {
            idx += 1;
            continue;
        }
        let Some(end) = joined_quote_after(bytes, idx + 1, quote) else {
            idx += 1;
            continue;
        };
        // Backslashes before the closing quote escape it: they go with it.
        let mut start = idx;
        while start > 0 && bytes[start - 1] == b'\\' {
            start -= 1;
        }
        // A literal before: not at the start of the text, not right after another join.
        if start > 0 && drops.last().is_none_or(|last: &Range<usize>| last.end < start) {
            drops.push(start..end);
            idx = end;
        } else {
            idx += 1;
        }
    }
    drops
}

/// Where the opening quote `quote` of the next literal ends (one past it), when what follows a
/// closing quote at `idx - 1` is a concatenation: spaces, an operator, spaces, backslashes, the
/// quote. The literal after it must hold something.
fn joined_quote_after(bytes: &[u8], idx: usize, quote: u8) -> Option<usize> {
    let skip_space = |mut at: usize| {
        while at < bytes.len()
            && (matches!(bytes[at], b' ' | b'\t' | b'\r' | b'\n')
                || (bytes[at] == b'\\' && matches!(bytes.get(at + 1), Some(b'\n' | b'\r'))))
        {
            at += 1;
        }
        at
    };
    let after_space = skip_space(idx);
    let mut at = after_space;
    let rest = &bytes[at..];
    let operator = OPERATORS.iter().find(|operator| rest.starts_with(operator));
    if let Some(operator) = operator {
        at = skip_space(at + operator.len());
    } else if let Some(len) = appending_statement(rest) {
        at = skip_space(at + len);
    } else if !bytes[idx..after_space].contains(&b'\n') || literal_is_a_key(bytes, after_space, quote) {
        // Two literals side by side are joined on two lines (Python's and C's long strings), not
        // on one (`--flag" "value`, two arguments; nothing between them, one empty string), and
        // not when the second is a key (`"a": "b"` then `"c": "d"`, two entries).
        return None;
    }
    while at < bytes.len() && bytes[at] == b'\\' {
        at += 1;
    }
    if bytes.get(at) != Some(&quote) || matches!(bytes.get(at + 1), None | Some(b' ' | b'\n' | b',' | b';' | b')')) {
        return None;
    }
    (bytes.get(at + 1) != Some(&quote)).then_some(at + 1)
}

/// Whether the literal opened by the quote at `at` is followed by `:` or `=` on its line: a key.
fn literal_is_a_key(bytes: &[u8], at: usize, quote: u8) -> bool {
    let Some(len) = bytes.get(at + 1..).and_then(|rest| rest.iter().position(|&byte| byte == quote || byte == b'\n'))
    else {
        return false;
    };
    let after = at + 1 + len;
    if bytes[after] != quote {
        return false;
    }
    let next = bytes[after + 1..].iter().find(|byte| !matches!(byte, b' ' | b'\t'));
    matches!(next, Some(b':' | b'='))
}

/// The operators that join two literals, longest first.
const OPERATORS: [&[u8]; 5] = [b"||", b"..", b"+", b".", b"&"];

/// The operators that append a literal to a variable, longest first.
const APPENDING: [&[u8]; 3] = [b"..=", b"+=", b".="];

/// The length of `; name += ` (or `.=`, `..=`; the `;` may be a line break) at the start of
/// `rest`, up to the operator's end.
fn appending_statement(rest: &[u8]) -> Option<usize> {
    let mut at = usize::from(rest.first() == Some(&b';'));
    while at < rest.len() && matches!(rest[at], b' ' | b'\t' | b'\r' | b'\n') {
        at += 1;
    }
    let name_start = at;
    while at < rest.len() && (rest[at].is_ascii_alphanumeric() || matches!(rest[at], b'_' | b'$')) {
        at += 1;
    }
    if at == name_start || at - name_start > 64 {
        return None;
    }
    while at < rest.len() && matches!(rest[at], b' ' | b'\t') {
        at += 1;
    }
    let operator = APPENDING.iter().find(|operator| rest[at..].starts_with(operator))?;
    Some(at + operator.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(kind: Kind, text: &str) -> String {
        read(kind, text).map_or_else(|| text.to_owned(), |reading| reading.text)
    }

    #[test]
    fn each_reading_puts_the_text_back_together() {
        assert_eq!(reading(Kind::Reversed, "ab[SECRET]c😀d"), "d😀c[SECRET]ba");
        assert_eq!(reading(Kind::Rot13, "tuc_Nop [TOKEN] 12"), "ghp_Abc [TOKEN] 12");
        assert_eq!(reading(Kind::Spaced, "key g h p _ 1 6 C 7 e 4 end"), "key ghp_16C7e4 end");
        assert_eq!(reading(Kind::Spaced, "g-h-p-_-1-6-C-7-e-4"), "ghp_16C7e4");
        assert_eq!(reading(Kind::Spaced, "p a s s w o r d   =   h u n t e r 2"), "password = hunter2");
        assert_eq!(reading(Kind::Spaced, "a b c d e f g"), "a b c d e f g");
        assert_eq!(reading(Kind::Spaced, "once g h p _ 1 6 C 7 e 4 is"), "once ghp_16C7e4 is");
        assert_eq!(reading(Kind::LinesJoined, "t = ghp_16C7\n    e42F92c6\nok"), "t = ghp_16C7e42F92c6\nok");
        assert_eq!(reading(Kind::LinesJoined, r#"{"t": "ghp_16\n  C7e42F92c6"}"#), r#"{"t": "ghp_16C7e42F92c6"}"#);
        assert_eq!(reading(Kind::LinesJoined, "user = app\npwd = x"), "user = app\npwd = x");
        // A value on the line after its name, the rest of a URL's password, a JSON key cut
        // before its closing quote: not statements of their own (session 29).
        assert_eq!(reading(Kind::LinesJoined, "--password\n    =V6LpqtZ7mm x"), "--password=V6LpqtZ7mm x");
        assert_eq!(
            reading(Kind::LinesJoined, "mysql://root:GxRYHy2cMc\n    wZRv@db:3306/shop"),
            "mysql://root:GxRYHy2cMcwZRv@db:3306/shop"
        );
        assert_eq!(reading(Kind::LinesJoined, "{\"refresh_toke\n    n\":\"Dx6lj\"}"), "{\"refresh_token\":\"Dx6lj\"}");
        assert_eq!(
            reading(Kind::LinesJoined, "user_name=alice\nbackup_path: /srv"),
            "user_name=alice\nbackup_path: /srv"
        );
        assert_eq!(reading(Kind::LinesJoined, "end.\n\nnext"), "end.\n\nnext");
        for (text, joined) in [
            (r#"x = "ghp_16C7" + "e42F""#, r#"x = "ghp_16C7e42F""#),
            (r#"x = 'ghp_16C7' .. 'e42F'"#, "x = 'ghp_16C7e42F'"),
            (r#"$x = 'ghp_16C7' . 'e42F';"#, "$x = 'ghp_16C7e42F';"),
            (r#"SELECT 'ghp_16C7' || 'e42F'"#, "SELECT 'ghp_16C7e42F'"),
            ("s = \"ghp_16C7\"; s += \"e42F\"", "s = \"ghp_16C7e42F\""),
            ("s = (\"ghp_16C7\"\n     \"e42F\")", "s = (\"ghp_16C7e42F\")"),
            (r#"{"code": "x = \"ghp_16C7\" + \"e42F\""}"#, r#"{"code": "x = \"ghp_16C7e42F\""}"#),
        ] {
            assert_eq!(reading(Kind::Concatenated, text), joined, "{text}");
        }
        // Not joins: an empty string, literals given as arguments, a quote at the start.
        for text in [r#"x = """#, r#"f("a", "b")"#, r#"" + "x"#, r#"a = "b" + c + "d""#] {
            assert_eq!(reading(Kind::Concatenated, text), text);
        }
    }

    #[test]
    fn spans_map_back_over_what_was_dropped() {
        let text = "k = \"ghp_16C7\" + \"e42F\" end";
        let reading = read(Kind::Concatenated, text).unwrap();
        let at = reading.text.find("ghp").unwrap();
        let source = reading.to_source(at..at + "ghp_16C7e42F".len());
        assert_eq!(&text[source], "ghp_16C7\" + \"e42F");
        let text = "ab😀c";
        let reading = read(Kind::Reversed, text).unwrap();
        assert_eq!(&text[reading.to_source(0..5)], "😀c");
    }

    #[test]
    fn hostile_input_neither_panics_nor_hangs() {
        for text in ["", "\"", "\"\"\"", "'+'", "\\", "\n", "\\n", "a \n", "; s +=", "\" ; += \"", "é é é é é é é é é"]
        {
            for kind in KINDS {
                if let Some(reading) = read(kind, text) {
                    let _ = reading.to_source(0..reading.text.len());
                }
            }
        }
    }
}
