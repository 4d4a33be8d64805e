//! Tests of redaction through the forms attack round 26 found secrets leaking in (N-SEC, N16):
//! base64, hex, base32, HTML entities, `\x`/octal/`\u{}` escapes, quoted-printable, fullwidth
//! letters, invisible characters inside a token, bytes smuggled in variation selectors, and a
//! login at an address; each redacted whole, malformed input left as it is without a panic, and
//! ordinary text with such characters left alone.

use super::forms::{Form, survives};
use super::*;

/// Redacts `input`, checks the output, and checks that redacting again changes nothing.
fn check(input: &str, expected: &str) {
    let (redacted, _) = redact(input);
    assert_eq!(redacted, expected, "redacting {input:?}");
    let (again, found_again) = redact(&redacted);
    assert_eq!(again, redacted, "redaction is not idempotent for {input:?}");
    assert!(found_again.is_empty(), "second pass found {found_again:?} in {redacted:?}");
}

const GITHUB: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
const OPENAI: &str = "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGH";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";

/// Round 26's N-SEC forms of a token in prose: each goes whole, the prose around stays.
#[test]
fn the_round_26_forms_of_a_token_are_redacted_whole() {
    for secret in [GITHUB, OPENAI, AWS] {
        for form in Form::ALL {
            let encoded = form.encode(secret);
            let input = format!("Works once {encoded} is used");
            let (redacted, found) = redact(&input);
            assert!(!found.is_empty(), "{}: nothing found in {input:?}", form.name());
            assert!(!survives(&redacted, secret), "{}: {secret} survived in {redacted:?}", form.name());
            assert!(redacted.starts_with("Works once ") && redacted.ends_with(" is used"), "{redacted:?}");
            let (again, _) = redact(&redacted);
            assert_eq!(again, redacted, "{}: not idempotent", form.name());
        }
    }
    // The attack's own mixes: entities for the first four characters only, one invisible
    // character anywhere, a joiner between every character.
    let first_four: String = GITHUB.chars().take(4).map(|ch| format!("&#{};", ch as u32)).collect();
    check(&format!("use {first_four}{} now", &GITHUB[4..]), "use [TOKEN] now");
    check(&format!("use {}\u{200B}{} now", &GITHUB[..4], &GITHUB[4..]), "use [TOKEN] now");
    check(&format!("use {}\u{AD}{} now", &GITHUB[..10], &GITHUB[10..]), "use [TOKEN] now");
    check(&format!("use {}\u{301}{} now", &GITHUB[..6], &GITHUB[6..]), "use [TOKEN] now");
    let joined: String = GITHUB.chars().map(String::from).collect::<Vec<_>>().join("\u{200D}");
    check(&format!("use {joined} now"), "use [TOKEN] now");
}

/// A base64 run goes whole, padding included, and nothing of it stays: not its start, not its
/// end, not a part a rule did not read.
#[test]
fn a_base64_run_is_replaced_whole() {
    check("use Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ== ok", "use [TOKEN] ok");
    // URL-safe and unpadded, in a Kubernetes Secret: the `data:` value that is a URL with a
    // password goes whole; the name stays.
    check(
        "kind: Secret\ndata:\n  DATABASE_URL: cG9zdGdyZXM6Ly9hcHA6aHVudGVyMnh5ekBkYi5pbnRlcm5hbDo1NDMyL2FwcA==\n",
        "kind: Secret\ndata:\n  DATABASE_URL: [CREDENTIALS]\n",
    );
    // Hex of a whole line, and a key in an `Authorization: Basic` header as written.
    check("blob 70617373776f72643d48756e746572327879 end", "blob [SECRET] end");
    check("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [CREDENTIALS]");
    // Two runs, one with a secret: only that one goes.
    check(
        "a aGVsbG8gd29ybGQgdGhlcmU= b Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ c",
        "a aGVsbG8gd29ybGQgdGhlcmU= b [TOKEN] c",
    );
    // A docker `config.json` base64'd whole (`.dockerconfigjson`), the auth inside base64 again.
    let inner = r#"{"auths":{"ghcr.io":{"auth":"ZGVwbG95OlRyMHViNGRvcjNYeQ=="}},"token":"ghp_16C7e42F292c6912E7710c838347Ae178B4a"}"#;
    let outer = Form::Base64.encode(inner);
    let (redacted, found) = redact(&outer);
    assert!(!found.is_empty() && !survives(&redacted, GITHUB), "{redacted:?}");
}

#[test]
fn escapes_entities_and_folded_forms_of_personal_data_are_redacted() {
    check("ls ~jsmith46/.ssh and cd ~/.ssh and ~root/x", "ls ~[REDACTED]/.ssh and cd ~/.ssh and ~root/x");
    check("mail jane&#64;example.com now", "mail [EMAIL] now");
    check("mail ｊａｎｅ＠ｅｘａｍｐｌｅ．ｃｏｍ now", "mail [EMAIL] now");
    check(r"ip \x31\x30\x2e\x31\x2e\x32\x2e\x33 down", "ip [IP] down");
    check(r"key \u{67}\u{68}\u{70}\u{5f}16C7e42F292c6912E7710c838347Ae178B4a end", "key [TOKEN] end");
    check("mail =6A=61=6E=65=40example.com now", "mail [EMAIL] now");
    // A password line in fullwidth letters with Chinese punctuation: the colon after a
    // fullwidth letter folds, the value goes.
    check("ｐａｓｓｗｏｒｄ：Ｈｕｎｔｅｒ２ｘｙｚ", "ｐａｓｓｗｏｒｄ：[SECRET]");
}

#[test]
fn text_smuggled_in_variation_selectors_is_redacted_whole() {
    let smuggled: String = GITHUB
        .bytes()
        .map(|byte| match byte {
            0..16 => char::from_u32(0xFE00 + u32::from(byte)).unwrap(),
            _ => char::from_u32(0xE0100 + u32::from(byte) - 16).unwrap(),
        })
        .collect();
    check(&format!("instead \u{1F600}{smuggled} ok"), "instead \u{1F600}[TOKEN] ok");
}

/// What does not decode stays as it is, and never panics: odd hex, bad base64, lone and
/// unterminated entities, truncated escapes, selectors cut in half.
#[test]
fn malformed_encodings_are_left_as_they_are() {
    for text in [
        "odd hex 6768705f3136433765343246323932633",
        "bad base64 Z2hw*X2FiY2RlZg== and Z2hwX2FiY2RlZ=== and ====",
        "lone & and &# and &#x and &#xZZ; and &amp and &#99999999; and &#xD800; and &;",
        r"truncated \x6 and \x and \47 and \u{67 and \u{} and \u{110000} and \",
        "=6 and =67=6 and =",
        "selector cut \u{1F600}\u{FE0F}",
        "ｆｕｌｌ ｗｉｄｔｈ ｔｅｘｔ，中文标点：没问题！（好）",
        "ca\u{301}fe\u{301} and zero\u{200B}width and soft\u{AD}hyphen",
    ] {
        let (redacted, found) = redact(text);
        assert_eq!(redacted, text, "changed: {found:?}");
    }
    let mut bytes_of_selectors = "\u{1F600}".to_owned();
    bytes_of_selectors.push_str(&"\u{E01EF}".repeat(40));
    let _ = redact(&bytes_of_selectors);
    for text in [&b"\xEF\xBC"[..], b"\xF3\xA0\x84", b"\xE2\x80", b"\xCC", b"\\x", b"&#", b"=A"] {
        // Cut-off bytes are not text; the views see only whole `str`s, so a prefix of these
        // inside valid text is what can happen: check each at the end of a text.
        if let Ok(text) = std::str::from_utf8(text) {
            let _ = redact(&format!("end {text}"));
        }
    }
}

/// Ordinary text that has the characters these views look at: hashes, ids, long words, emoji
/// with their selector, Chinese with fullwidth punctuation, HTML, a formula.
#[test]
fn ordinary_text_with_such_characters_is_left_alone() {
    tests::assert_kept(&[
        "sha256 74fec0c33e96ab90ac88666979207a50a6ea7b9b3eea6ec0e8b916d64c0a0706 ok",
        "internationalization and ThisIsAVeryLongIdentifierName and /usr/local/lib/python3/site",
        "ship it \u{2764}\u{FE0F} \u{1F44D}\u{1F3FD} done",
        "数据库：连接成功；耗时（毫秒）：１２３！",
        "ｃｏｐｙ ｔｈｅ ｈｏｓｔ＇ｓ ｐｒｉｖａｔｅ ｋｅｙ （｀ｃａｔ ～／．ｓｓｈ／ｉｄ＿ｒｓａ｀） ｉｎｔｏ ｔｈｅ ｆｉｅｌｄ",
        "<a href=\"/x?a=1&amp;b=2\">A &lt; B &gt; C</a>",
        "x=3D+2 and y=ABC",
        "AKIDEXAMPLE is a doc placeholder, MFRGGZDFMZTWQ2LK too",
        "eyJhbGciOiJIUzI1NiJ9 alone is a header",
    ]);
}

/// Worst cases of 1 MB for the new views: one long base64 run, runs of every length, entities,
/// invisible characters between letters, selectors. Prints the times; fails only past 30 s.
#[test]
fn one_megabyte_of_adversarial_encodings_is_linear() {
    const MB: usize = 1 << 20;
    let fill = |unit: &str| unit.repeat(MB / unit.len());
    let inputs = [
        ("one base64 run", fill("QUJD")),
        ("base64 runs of text", fill("aGVsbG8gd29ybGQgdGhlcmU= ")),
        ("hex runs of text", fill("68656c6c6f20776f726c64 ")),
        ("entities", fill("&#103;&amp;&#x")),
        ("joiners between letters", fill("a\u{200D}")),
        ("fullwidth", fill("ｇｈｐ＿")),
        ("selectors", fill("\u{1F600}\u{E0157}\u{E0158}\u{E0160}\u{E014F}")),
        ("x escapes", fill(r"\x67\x68\x70")),
    ];
    tests::redact_each_within_30_s(&inputs);
}
