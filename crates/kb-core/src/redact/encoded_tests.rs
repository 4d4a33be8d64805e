//! Tests of redaction through encodings (JSON escapes, nested JSON, `\uXXXX`, percent-encoding)
//! and of the formats issue 24 found leaking in plain text (`.ppk` private lines, passphrase
//! flags), hostile inputs included: nothing may panic, hang or leave part of a secret.

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

#[test]
fn passphrases_on_command_lines_and_ppk_private_lines_are_redacted() {
    check("ssh-keygen -t ed25519 -N 'Tr0ub4dor&3' -f ~/.ssh/id", "ssh-keygen -t ed25519 -N '[SECRET]' -f ~/.ssh/id");
    check("ssh-keygen -p -f k -P 0ldPass1 -N n3wPass2", "ssh-keygen -p -f k -P [SECRET] -N [SECRET]");
    check("ssh-keygen -q -N s3cretpw -f /tmp/k", "ssh-keygen -q -N [SECRET] -f /tmp/k");
    check("zip -r -P Zp4ss99 logs.zip logs/", "zip -r -P [SECRET] logs.zip logs/");
    check("7z a -p7zPass99 out.7z dir", "7z a -p[SECRET] out.7z dir");
    check(
        "keytool -importkeystore -srcstorepass Src9pass -deststorepass Dst9pass",
        "keytool -importkeystore -srcstorepass [SECRET] -deststorepass [SECRET]",
    );
    check(
        "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5\nAAAAIHf3\n\
         Private-Lines: 2\nAAAAIGx0dGhpc2lzbm90YXJlYWxrZXlhdGFsbA==\nAAAAEGFub3RoZXJsaW5l\nPrivate-MAC: 0a1b",
        "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5\nAAAAIHf3\n\
         Private-Lines: 2\n[PRIVATE_KEY]\nPrivate-MAC: 0a1b",
    );
    // Inside a JSON string, the escaped newlines separate the lines.
    check(
        r#"{"ppk": "Private-Lines: 1\nAAAAIGx0dGhpc2lzbm90YXJlYWxrZXk=\nPrivate-MAC: 0a"}"#,
        r#"{"ppk": "Private-Lines: 1\n[PRIVATE_KEY]\nPrivate-MAC: 0a"}"#,
    );
    // Not passphrases: an empty one, a prompt, another command's -N, the words about them.
    tests::assert_kept(&[
        "ssh-keygen -t ed25519 -N '' -f ~/.ssh/id",
        "ssh-keygen -t ed25519 -N \"\" -C me",
        "ssh -N -L 8080:localhost:80 bastion",
        "ssh-keygen -N is the new passphrase, -P the old one",
        "the .ppk has Private-Lines: 14 then the MAC",
        "unzip -P to give the password; 7z a -p prompts for it",
    ]);
}

#[test]
fn secrets_are_found_through_json_escapes_and_replaced_in_their_encoding() {
    // Line-anchored and word-anchored rules behind `\n`.
    check(
        r#"{"cmd": "echo ok\nexport DB_PASSWORD=hunter2x\nls"}"#,
        r#"{"cmd": "echo ok\nexport DB_PASSWORD=[SECRET]\nls"}"#,
    );
    check(r#"{"f": "[database]\npwd = Abc123xyz789"}"#, r#"{"f": "[database]\npwd = [SECRET]"}"#);
    check(r#"{"t": "admin_password = \"zeiBuqWQl4d8Dc3K\""}"#, r#"{"t": "admin_password = \"[SECRET]\""}"#);
    check(r#"{"line": "localhost:5432:*:postgres:TlqSGRAbTl0T"}"#, r#"{"line": "localhost:5432:*:postgres:[SECRET]"}"#);
    // Nested JSON: escaped twice.
    check(
        r#"{"arguments":"{\"command\":\"curl -H \\\"Authorization: Bearer abc123def456ghi\\\" x\"}"}"#,
        r#"{"arguments":"{\"command\":\"curl -H \\\"Authorization: Bearer [TOKEN]\\\" x\"}"}"#,
    );
    // Chinese rules behind `\uXXXX`: 密码是 escaped.
    check(
        r#"{"t": "\u6570\u636e\u5e93\u7684\u5bc6\u7801\u662fDb2pass9"}"#,
        r#"{"t": "\u6570\u636e\u5e93\u7684\u5bc6\u7801\u662f[SECRET]"}"#,
    );
    // Percent-encoded.
    check("q=token%3D%20Tk3nAbCdEf9GhIj%26x%3D1", "q=token%3D%20[SECRET]%26x%3D1");
    check("text=ghp_16C7e42F292c6912E7710c838347Ae178B4a%20ok", "text=[TOKEN]%20ok");
}

#[test]
fn a_secret_split_by_escapes_goes_whole() {
    // Every character of the key but letters and digits escaped: the key is found in the view
    // and replaced from its first escape to its last.
    let key = "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz_0123";
    let escaped = super::forms::unicode_escape(key);
    check(&format!("{{\"k\": \"{escaped}\"}}"), "{\"k\": \"[API_KEY]\"}");
    // Started in plain text, continued after an escape.
    check(r"use sk-abcdefghij\u006b0123456789ABCDEFG end", "use [API_KEY] end");
    // Mixed: percent-encoding inside a JSON string, and a JSON escape percent-encoded.
    check(
        r#"{"url": "https://x/cb?access_token%3Dabc123DEF456ghi%26state%3D1"}"#,
        r#"{"url": "https://x/cb?access_token%3D[SECRET]%26state%3D1"}"#,
    );
    check("q=password%5Cu003dHunter2xyz", "q=password%5Cu003d[SECRET]");
}

#[test]
fn ordinary_encoded_text_is_left_alone() {
    for text in [
        r#"{"name": "kb-core", "version": "1.2.3", "deps": ["regex", "serde"], "path": "src\\lib.rs"}"#,
        r#"{"msg": "line one\nline two\ttabbed \"quoted\" \u4e2d\u6587 \ud83d\ude00"}"#,
        "https://example.com/search?q=rust%20regex&page=2&lang=zh%2DCN",
        "printf(\"%d%%\\n\", 100); // 100% done, %s and %zu too",
        r"regex \d+\.\d+ and C:\Windows\System32\drivers and \\server\share",
        r#"{"password": "", "token": null, "api_key": "${API_KEY}", "secret": "<your secret>"}"#,
        r#"{"text": "\u5bc6\u7801\u5fc5\u987b\u81f3\u5c11\u5305\u542b 12 \u4e2a\u5b57\u7b26"}"#,
        "utm_source=newsletter&utm_medium=email%20blast&ref=%2Fdocs%2Finstall",
        // An escape's digits are not the start of an address (`%20` + `0.0.0.0`), and the
        // backslash of an escaped quote does not make a word look generated.
        "text=listen%20on%200.0.0.0%3A8080",
        r#"{"arguments":"{"command":"mysql -p prompts for the password interactively","t":1}"}"#,
    ] {
        let (redacted, found) = redact(text);
        assert_eq!(redacted, text, "falsely redacted: {found:?}");
        assert!(matches!(redacted, Cow::Borrowed(_)));
    }
}

#[test]
fn every_form_of_a_secret_is_redacted_and_the_json_stays_valid_json() {
    let texts = [
        "export GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a\nnpm publish",
        "[database]\nuser = app\npwd = livxhI0E39lfyYwl",
        "数据库的密码是Db2pass9，别外传",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
    ];
    let secrets = [
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "livxhI0E39lfyYwl",
        "Db2pass9",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ];
    for (text, secret) in texts.iter().zip(secrets) {
        for form in Form::ALL {
            let encoded = form.encode(text);
            let (redacted, found) = redact(&encoded);
            assert!(!found.is_empty(), "{}: nothing found in {encoded}", form.name());
            assert!(!survives(&redacted, secret), "{}: {secret} survived in {redacted}", form.name());
            if matches!(form, Form::JsonEscaped | Form::NestedJson | Form::UnicodeEscaped | Form::ToolArguments) {
                // The placeholder replaced whole escapes: the document still parses.
                let parsed: Result<serde_json::Value, _> = serde_json::from_str(&redacted);
                assert!(parsed.is_ok(), "{}: no longer JSON: {redacted}", form.name());
            }
            let (again, _) = redact(&redacted);
            assert_eq!(again, redacted, "{}: not idempotent", form.name());
        }
    }
}

#[test]
fn hostile_escapes_neither_panic_nor_hang() {
    let cases = [
        "\\".repeat(1_001),
        r"\u".repeat(500),
        r"\ud83d".repeat(300),
        r"\udc00\ud800".repeat(200),
        r"\uZZZZ\u12\u123".repeat(200),
        "%".repeat(999),
        "%E5%AF".repeat(300),
        "%ED%A0%80%F4%90%80%80%C0%AF".repeat(100),
        r"%5C%5C%5Cu0025%32%35".repeat(100),
        format!("password=\\u{:04x}", 0x10FFFF),
        "token=\\u0000\\u0000abc".to_owned(),
        format!("{}ghp_16C7e42F292c6912E7710c838347Ae178B4a", r"\\".repeat(64)),
    ];
    for text in &cases {
        let (redacted, _) = redact(text);
        let (again, _) = redact(&redacted);
        assert_eq!(again, redacted, "not idempotent on {text:?}");
    }
    assert!(!redact(&cases[cases.len() - 1]).0.contains("ghp_16C7e42F"));
}

/// Worst cases of 1 MB: every byte an escape, escapes of escapes to the depth limit and past it,
/// and secrets in each. Prints the times (`--nocapture`); fails only past 30 s, a hang.
#[test]
fn one_megabyte_of_adversarial_escapes_is_linear() {
    const MB: usize = 1 << 20;
    let fill = |unit: &str| unit.repeat(MB / unit.len());
    let inputs = [
        ("backslashes", fill("\\")),
        ("\\u escapes of letters", fill(r"\u0061")),
        ("lone surrogates", fill(r"\ud83d")),
        ("percent-encoded Chinese", fill("%E5%AF%86%E7%A0%81")),
        ("invalid percent", fill("%E5%%G")),
        ("escaped escapes", fill(r"\\\\\\\\u0025\\\\\\\\")),
        ("secrets behind \\u", fill(r"token\u003d\u0020Tk3nAbCdEf9GhIj\u000a")),
        ("secrets nested 3 deep", fill(r#"{\\\"password\\\": \\\"Hunter2xyz\\\"} "#)),
        ("newline escapes and keys", fill(r"\nsk-abcdefghij0123456789ABCDE\n")),
    ];
    tests::redact_each_within_30_s(&inputs);
}

/// A secret that no rule sees in the text as written, only once it is decoded, with nothing else
/// in the text for a rule to find: the views must not be skipped for text that looks clean.
/// Each text holds one kind of escape only (a percent sign, or a backslash), so a shortcut that
/// decided from the other kind, or from the text as written, would leave the secret.
#[test]
fn a_secret_seen_only_in_a_decoded_view_is_redacted() {
    let cases: &[(&str, &str, &str)] = &[
        ("password%3Dhunter2x", "password%3D[SECRET]", "secret_assignment"),
        ("mail alice%40example.com today", "mail [EMAIL] today", "email"),
        ("ip 10%2E1%2E2%2E3 down", "ip [IP] down", "ip"),
        (r"token\u003dabc123XYZ9", r"token\u003d[SECRET]", "secret_assignment"),
        (r"mail alice\u0040example.com today", "mail [EMAIL] today", "email"),
        // Two levels: percent-encoded JSON escapes.
        ("password%5Cu003Dhunter2x", "password%5Cu003D[SECRET]", "secret_assignment"),
    ];
    for &(input, expected, kind) in cases {
        assert!(engine::find(input).is_empty(), "{input:?}: a rule sees it as written, the case tests nothing");
        check(input, expected);
        let (_, found) = redact(input);
        assert_eq!(found.iter().map(|redaction| redaction.kind).collect::<Vec<_>>(), vec![kind], "{input:?}");
    }
}

#[test]
fn secrets_spelled_in_invisible_tag_characters_are_redacted_whole() {
    let hide = |text: &str| -> String { text.chars().map(|ch| char::from_u32(0xE0000 + ch as u32).unwrap()).collect() };
    // A token after visible text, and a password line, spelled invisibly.
    check(
        &format!("pods came back healthy {}", hide("ghp_16C7e42F292c6912E7710c838347Ae178B4a")),
        "pods came back healthy [TOKEN]",
    );
    let line = format!("note{}", hide(" export DB_PASSWORD=hunter2x"));
    let (redacted, found) = redact(&line);
    assert!(!found.is_empty(), "{redacted:?}");
    assert!(!crate::display::hidden_tag_text(&redacted).contains("hunter2x"), "{redacted:?}");
    // Tag characters that spell no secret, and an emoji flag, stay as they are.
    for text in
        [format!("ok {}", hide("hello")), "\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}".to_owned()]
    {
        assert_eq!(redact(&text).0, text.as_str());
    }
}
