//! Tests of redaction through the obfuscations attack round 27 found secrets leaving in: a token
//! reversed, rot13, spaced out, broken across lines, cut into concatenated string literals (each
//! replaced whole, both parts and what joined them), ordinary text that looks like them left
//! alone, and 1 MB of adversarial input for each reading.

use super::forms::{Form, survives};
use super::tests::check;
use super::*;

/// The attack's three formats, with the placeholder each is replaced by.
const SECRETS: [(&str, &str); 3] = [
    ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "[TOKEN]"),
    ("sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGH", "[API_KEY]"),
    ("AKIAIOSFODNN7EXAMPLE", "[API_KEY]"),
];

fn rot13(text: &str) -> String {
    Form::Rot13.encode(text)
}

#[test]
fn a_reversed_or_rot13_token_is_redacted_whole() {
    for (secret, placeholder) in SECRETS {
        let reversed: String = secret.chars().rev().collect();
        check(&format!("use {reversed} now"), &format!("use {placeholder} now"));
        check(&format!("use {} now", rot13(secret)), &format!("use {placeholder} now"));
        // The whole line written backwards, or in rot13, context words and all.
        let line = format!("export TOKEN={secret}");
        let reversed_line: String = line.chars().rev().collect();
        let (redacted, _) = redact(&reversed_line);
        assert!(!survives(&redacted, secret), "{redacted}");
        let rot13_line = rot13(&line);
        let (redacted, _) = redact(&rot13_line);
        assert!(!survives(&redacted, secret), "{redacted}");
    }
    // A password in rot13 with its name: the value goes, the name stays.
    check(&rot13("password=hunter2xyz"), "cnffjbeq=[SECRET]");
}

/// A command line written backwards whose reading starts with the command its rule names
/// (session 29): counted although the reading scores no better as English than the text.
#[test]
fn a_reversed_command_line_that_names_its_command_is_redacted() {
    let line = "keytool -importkeystore -srckeystore a.p12 -srcstorepass h0QxWK0H5vcC -deststorepass Ww2WoXEjtv4K";
    let reversed: String = line.chars().rev().collect();
    let (redacted, _) = redact(&reversed);
    for secret in ["h0QxWK0H5vcC", "Ww2WoXEjtv4K"] {
        assert!(!survives(&redacted, secret), "{redacted}");
    }
    // Ordinary text read backwards starts no line with a command.
    for text in ["ssap-p- a z7 nur ton od", "keytool -list printed the chain; -v shows more"] {
        let reversed: String = text.chars().rev().collect();
        assert_eq!(redact(&reversed).0, reversed);
    }
}

#[test]
fn a_spaced_out_token_is_redacted_whole() {
    for (secret, placeholder) in SECRETS {
        for separator in [" ", "-", ".", "_", "|", ",", "\t"] {
            let spaced = secret.chars().map(String::from).collect::<Vec<_>>().join(separator);
            check(&format!("key: {spaced} (expires)"), &format!("key: {placeholder} (expires)"));
            check(&format!("once {spaced} is set"), &format!("once {placeholder} is set"));
        }
    }
}

#[test]
fn a_token_broken_across_lines_is_redacted_whole() {
    for (secret, placeholder) in SECRETS {
        for cut in [4, 8, secret.len() / 2, secret.len() - 3] {
            let (left, right) = secret.split_at(cut);
            for line_break in ["\n", "\n    ", "\r\n\t", "\n  "] {
                check(&format!("token {left}{line_break}{right} ok"), &format!("token {placeholder} ok"));
            }
            // Named, so that the first part alone is a secret to a rule: both go.
            let named = format!("export GITHUB_TOKEN={left}\n{right}\nnpm publish");
            let (redacted, _) = redact(&named);
            assert!(!survives(&redacted, secret), "{redacted}");
            assert!(redacted.ends_with("\nnpm publish"), "{redacted}");
            // Inside a JSON string: the break is an escape.
            check(&format!(r#"{{"t": "{left}\n  {right}"}}"#), &format!(r#"{{"t": "{placeholder}"}}"#));
        }
    }
    // A whole token at the end of a line keeps the next line.
    check(
        "GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a\nnpm publish --access public",
        "GITHUB_TOKEN=[TOKEN]\nnpm publish --access public",
    );
}

#[test]
fn a_token_cut_into_concatenated_literals_is_redacted_whole() {
    for (secret, placeholder) in SECRETS {
        let (left, right) = secret.split_at(secret.len() / 2);
        for (written, expected) in [
            (format!(r#"t = "{left}" + "{right}""#), format!(r#"t = "{placeholder}""#)),
            (format!(r#"local t = '{left}' .. '{right}'"#), format!("local t = '{placeholder}'")),
            (format!(r#"$t = '{left}' . '{right}';"#), format!("$t = '{placeholder}';")),
            (format!(r#"SELECT '{left}' || '{right}'"#), format!("SELECT '{placeholder}'")),
            (format!("t = \"{left}\"; t += \"{right}\""), format!("t = \"{placeholder}\"")),
            (format!("$t = \"{left}\";\n$t .= \"{right}\";"), format!("$t = \"{placeholder}\";")),
            (format!("t = (\"{left}\"\n     \"{right}\")"), format!("t = (\"{placeholder}\")")),
            (format!("t = \"{left}\" +\n    \"{right}\""), format!("t = \"{placeholder}\"")),
            (format!("t = `{left}` + `{right}`"), format!("t = `{placeholder}`")),
            (
                format!(r#"{{"code": "t = \"{left}\" + \"{right}\""}}"#),
                format!(r#"{{"code": "t = \"{placeholder}\""}}"#),
            ),
        ] {
            check(&written, &expected);
        }
        // In three parts.
        let (middle, last) = right.split_at(right.len() / 2);
        check(&format!(r#"t = "{left}" + "{middle}" + "{last}";"#), &format!(r#"t = "{placeholder}";"#));
    }
}

/// Prose and code that look like the obfuscations: headings spaced out, words reversed, rot13
/// puzzles, literals joined, long lines wrapped. Nothing is a secret; nothing changes.
#[test]
fn ordinary_text_that_looks_obfuscated_is_left_alone() {
    tests::assert_kept(&[
        "The banner read W E L C O M E   T O   T H E   S H O W in big letters.",
        "Type the letters s-l-o-w-l-y and spell your name: J-O-H-N-S-M-I-T-H-2-0-2-4.",
        "the keycap sequence is 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 then enter",
        "Reversed words: olleh dlrow, and 'racecar' is a palindrome; gnirts esrever",
        "rot13 of hello is uryyb and of password is cnffjbeq, a toy cipher",
        "const greeting = \"Hello, \" + \"world\" + \"!\";",
        "local msg = \"con\" .. \"cat\" .. \"enated\" -- Lua",
        "$sql = 'SELECT * FROM users ' . 'WHERE id = ' . $id;",
        "s = \"part one of a long message\"; s += \"part two of the message\"",
        "msg = (\"This is a long string that \"\n       \"continues on the next line\")",
        "url = \"https://example.com/api/v1/\" + \"users/\" + user_id + \"/settings\"",
        "id = \"user_\" + \"1234567890\" + \"_\" + \"abcdefghij\"",
        "the hash is 3f2a1b9c8d7e6f5a4b3c\n2d1e0f9a8b7c6d5e4f3a split over lines",
        "uuid 550e8400-e29b-41d4-\na716-446655440000 wrapped by the terminal",
        "[database]\nuser = app\npassword_file = /run/secrets/db",
        "{\n  \"a\": \"x\"\n  \"b\": \"y\"\n}",
        "Run: p y t h o n   - m   p i p   i n s t a l l   r e q u e s t s",
        "字 间 有 空 格 的 中 文 标 题 也 很 常 见",
        "tr 'A-Za-z' 'N-ZA-Mn-za-m' is rot13; try it on 'Gur dhvpx oebja sbk'",
    ]);
}

/// Worst cases of 1 MB for the readings: one endless spaced run, spaced runs just too short,
/// line breaks between token characters, joins of literals, appending statements, placeholders
/// to keep whole when reversing. Prints the times; fails only past 30 s.
#[test]
fn one_megabyte_of_adversarial_obfuscations_is_linear() {
    const MB: usize = 1 << 20;
    let fill = |unit: &str| unit.repeat(MB / unit.len());
    let inputs = [
        ("one spaced run", fill("a ")),
        ("spaced runs too short", fill("a b c d e f g ")),
        ("separators alternating", fill("a-b.c_d|e,")),
        ("line breaks in tokens", fill("abcdefgh\n  ")),
        ("escaped line breaks", fill(r"abcdefgh\n")),
        ("joined literals", fill(r#""ab" + "#)),
        ("quotes", fill(r#""'`"#)),
        ("appending statements", fill(r#""a"; s += "#)),
        ("literals on lines", fill("\"ab\"\n")),
        ("placeholders", fill("[SECRET]x")),
        ("a token broken on every line", fill("ghp_16C7e42F292c6912E77\n10c838347Ae178B4a\n")),
        ("concatenated tokens", fill(r#""ghp_16C7e42F292c6912E77" + "10c838347Ae178B4a" "#)),
    ];
    tests::redact_each_within_30_s(&inputs);
}
