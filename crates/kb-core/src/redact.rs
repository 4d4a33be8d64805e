//! Strict-mode redaction of secrets and personal data before anything is stored or sent to an LLM.
//!
//! The rules form one ordered table. Each rule is a regular expression plus a small function that
//! looks at a match in context and picks the byte range to replace (or declines the match), and a
//! placeholder such as `[API_KEY]`. Order matters: private key blocks go first because their body
//! would otherwise be chewed up by the token rules, URL credentials before emails (`user:pass@host`
//! looks like an email), JWTs and vendor token formats before the generic `token=…` rule, so each
//! secret is counted once under its most specific kind.
//!
//! Encodings: text travels JSON-escaped (a tool call's arguments, `kb.submit` with JSON as
//! content), escaped twice (JSON inside a JSON string), as `\uXXXX` escapes (`ensure_ascii`
//! turns every Chinese character into one) and percent-encoded (URLs, form bodies). The rules
//! are written for text as people read it, so after they ran on the text itself they run on its
//! decoded views (`views.rs`), each level of encoding in turn, and a match in a view replaces the
//! bytes it came from in the original encoding, widened to whole escapes: a secret split by an
//! escape, or starting inside one, goes whole.
//!
//! Since attack round 26 the views also decode `\x`, octal and `\u{}` escapes, HTML entities,
//! quoted-printable, base64, hex and base32 runs, bytes smuggled in variation selectors, and fold
//! fullwidth letters and invisible characters inside a token (`decoders.rs`).
//!
//! Since attack round 27 the rules also read the text put back together (`readings.rs`:
//! reversed, rot13, spaced out, line breaks and string literals' joins inside a token dropped),
//! from the text as written, and a match there replaces its whole span, both parts of a split
//! token and what joined them; `across.rs` reads two fields of one experience together, for a
//! token split between them. Personal data is not looked for in either.
//!
//! Cost: clean text is scanned once by a `RegexSet` of all rules; text with no backslash, `%`,
//! `&`, `=`, byte outside ASCII or run of 12 base64 characters has no view to check (one byte
//! scan). Each level of decoding is one linear pass, and one more run of the rules only when
//! something decoded, at most [`MAX_DEPTH`] levels.
//!
//! Idempotency: no placeholder can be matched by any rule (placeholders start with `[`, which no
//! secret pattern accepts as a first character), and no placeholder holds an escape, so
//! redacting redacted text changes nothing.
//!
//! The table is in `rules.rs`, as data; the checks that look at a match in its context are in
//! `spans.rs`; `engine.rs` runs the table over one text.

mod across;
mod anchors;
mod decoders;
#[cfg(test)]
mod encoded_tests;
mod engine;
pub mod forms;
#[cfg(test)]
mod obfuscated_tests;
mod readings;
#[cfg(test)]
mod readings_tests;
mod rules;
mod spans;
mod views;

use std::borrow::Cow;

pub use self::across::redact_across_fields;
use self::engine::Found;
use self::views::View;

/// How many levels of encoding are looked through: JSON in a JSON string in a JSON document,
/// percent-encoded, is four.
const MAX_DEPTH: usize = 4;

/// How many matches of one kind of secret were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    pub kind: &'static str,
    pub count: usize,
}

/// Replaces secrets and personal data in `text`, and in every encoded form inside it, with
/// placeholders such as `[API_KEY]`. Returns the text unchanged (borrowed) when nothing matched.
pub fn redact(text: &str) -> (Cow<'_, str>, Vec<Redaction>) {
    let mut redactions: Vec<Redaction> = Vec::new();
    let mut found = engine::find(text);
    let in_readings = found_in_readings(text);
    if !in_readings.is_empty() {
        found.extend(in_readings);
        found = engine::merge(found);
    }
    count(&found, &mut redactions);
    let mut current: Cow<'_, str> =
        if found.is_empty() { Cow::Borrowed(text) } else { Cow::Owned(engine::rewrite(text, &found)) };
    // A replacement can change what a reading reads (a spaced-out value that ran on into the next
    // line's name ends at the placeholder): the readings run again on the text as rewritten while
    // they find something, a few times at most, so that a second redaction finds nothing.
    let mut n_rereads = 0;
    while !found.is_empty() && n_rereads < MAX_DEPTH {
        found = engine::merge(found_in_readings(&current));
        if found.is_empty() {
            break;
        }
        count(&found, &mut redactions);
        current = Cow::Owned(engine::rewrite(&current, &found));
        n_rereads += 1;
    }
    if views::may_be_encoded(&current) {
        current = through_views(current, &mut redactions);
    }
    (current, redactions)
}

/// What the rules find in the readings of `text` (`readings.rs`: reversed, rot13, spaced out,
/// lines joined, literals joined), in `text`'s offsets. Read from the text as written, before
/// the rules replace anything in it: half of a token broken across two lines can match a rule
/// on its own (`GITHUB_TOKEN=ghp_16C7…`), and once replaced it would hide the other half.
fn found_in_readings(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let wanted = anchors::wanted(text);
    for kind in readings::KINDS {
        let rules = wanted.rules(kind);
        if rules.is_empty() {
            continue;
        }
        let Some(reading) = readings::read(kind, text) else { continue };
        found.extend(engine::find_among(&reading.text, rules).into_iter().filter_map(|span| {
            let range = reading.accept(text, span.range, span.rule_idx)?;
            Some(Found { range: reading.to_source(range), rule_idx: span.rule_idx })
        }));
    }
    found
}

/// What the rules find in the decoded views of `current`, each level in turn, replaced in
/// `current` in its own encoding.
fn through_views<'a>(mut current: Cow<'a, str>, redactions: &mut Vec<Redaction>) -> Cow<'a, str> {
    // `chain[k]` is the text as redacted so far, decoded k + 1 times.
    let mut chain: Vec<View> = Vec::new();
    while chain.len() < MAX_DEPTH {
        let Some(view) = views::decode(chain.last().map_or(current.as_ref(), |view| view.text.as_str())) else {
            break;
        };
        chain.push(view);
        let found = engine::find(&chain[chain.len() - 1].text);
        if found.is_empty() {
            continue;
        }
        count(&found, redactions);
        // Back through each level to the original encoding, widened to whole escapes.
        let in_source: Vec<Found> = found
            .into_iter()
            .map(|span| Found {
                range: chain.iter().rev().fold(span.range, |range, view| view.to_source(range)),
                rule_idx: span.rule_idx,
            })
            .collect();
        current = Cow::Owned(engine::rewrite(&current, &engine::merge(in_source)));
        // The views of the rewritten text, as deep as before; the rules have run at those levels.
        let depth = chain.len();
        chain.clear();
        while chain.len() < depth {
            match views::decode(chain.last().map_or(current.as_ref(), |view| view.text.as_str())) {
                Some(view) => chain.push(view),
                None => break,
            }
        }
        if chain.len() < depth {
            break;
        }
    }
    current
}

fn count(found: &[Found], redactions: &mut Vec<Redaction>) {
    for span in found {
        match redactions.iter_mut().find(|existing| existing.kind == span.kind()) {
            Some(existing) => existing.count += 1,
            None => redactions.push(Redaction { kind: span.kind(), count: 1 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redacts each input (1 MB of a worst case), printing the time; fails past 30 s.
    pub(super) fn redact_each_within_30_s(inputs: &[(&str, String)]) {
        let _ = redact("warm up");
        for (label, text) in inputs {
            let started = std::time::Instant::now();
            let (redacted, found) = redact(text);
            let elapsed = started.elapsed();
            eprintln!(
                "1 MB of {label}: {elapsed:?}, {} replaced, {} bytes out",
                found.iter().map(|redaction| redaction.count).sum::<usize>(),
                redacted.len()
            );
            assert!(elapsed.as_secs() < 30, "{label}: {elapsed:?}");
        }
    }

    /// Asserts that redaction leaves each text as it is.
    pub(super) fn assert_kept(texts: &[&str]) {
        for text in texts {
            let (redacted, found) = redact(text);
            assert_eq!(redacted, *text, "falsely redacted: {found:?}");
        }
    }

    /// Redacts `input`, checks the output, and checks that redacting again changes nothing.
    pub(super) fn check(input: &str, expected: &str) {
        let (redacted, _) = redact(input);
        assert_eq!(redacted, expected, "redacting {input:?}");
        let (again, found_again) = redact(&redacted);
        assert_eq!(again, redacted, "redaction is not idempotent for {input:?}");
        assert!(found_again.is_empty(), "second pass found {found_again:?} in {redacted:?}");
    }

    fn kinds(input: &str) -> Vec<(&'static str, usize)> {
        redact(input).1.into_iter().map(|redaction| (redaction.kind, redaction.count)).collect()
    }

    #[test]
    fn each_kind_is_redacted() {
        let cases: &[(&str, &str, &str)] = &[
            // home directories
            ("home_dir", "cd /Users/alice/proj && npm i", "cd /Users/[REDACTED]/proj && npm i"),
            ("home_dir", "error in /home/bob.smith/src/main.rs:12", "error in /home/[REDACTED]/src/main.rs:12"),
            ("home_dir", r"C:\Users\Carol\AppData\Local\npm", r"C:\Users\[REDACTED]\AppData\Local\npm"),
            ("home_dir", r#"{"path": "C:\\Users\\dave\\repo"}"#, r#"{"path": "C:\\Users\\[REDACTED]\\repo"}"#),
            ("home_dir", "C:/Users/erin/.cargo/bin", "C:/Users/[REDACTED]/.cargo/bin"),
            ("home_dir", "/mnt/c/Users/frank/code", "/mnt/c/Users/[REDACTED]/code"),
            ("home_dir", "PATH=/home/gina/.local/bin:/usr/bin", "PATH=/home/[REDACTED]/.local/bin:/usr/bin"),
            // emails
            ("email", "contact alice.smith+kb@example.co.uk now", "contact [EMAIL] now"),
            ("email", "<bob@corp.example.com>", "<[EMAIL]>"),
            // phones
            ("phone", "call 555-123-4567 or (555) 987-6543", "call [PHONE] or [PHONE]"),
            ("phone", "fax 555.123.4567", "fax [PHONE]"),
            ("phone", "toll free 1-800-555-1234", "toll free [PHONE]"),
            ("phone", "+14155552671 is the on-call", "[PHONE] is the on-call"),
            ("phone", "+44 20 7946 0958 (London)", "[PHONE] (London)"),
            ("phone", "+86 138 1234 5678 123 items", "[PHONE] 123 items"),
            ("phone", "+1 (415) 555-2671", "[PHONE]"),
            ("phone", "mobile 13812345678", "mobile [PHONE]"),
            ("phone", "138-1234-5678", "[PHONE]"),
            ("phone", "请拨打 010-12345678 或 0755-1234567", "请拨打 [PHONE] 或 [PHONE]"),
            ("id_number", "身份证号 11010519491231002X，", "身份证号 [ID_NUMBER]，"),
            ("id_number", "id=440304199001011233", "id=[ID_NUMBER]"),
            ("ip", "listen on [2001:db8:85a3::8a2e:370:7334]:443", "listen on [[IP]]:443"),
            ("ip", "addr 2001:0db8:85a3:0000:0000:8a2e:0370:7334 up", "addr [IP] up"),
            (
                "npm_token",
                "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789",
                "//registry.npmjs.org/:_authToken=[TOKEN]",
            ),
            ("huggingface_token", "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "HF_TOKEN=[TOKEN]"),
            (
                "pypi_token",
                "password = pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmFiLTEyMzQtNTY3OC05YWJjLWRlZjAxMjM0NTY3OAACKlszLCJhYmMiXQ",
                "password = [TOKEN]",
            ),
            (
                "cli_credentials",
                "curl -u admin:s3cret https://api.example.com",
                "curl -u [CREDENTIALS] https://api.example.com",
            ),
            ("cli_credentials", "curl --user=deploy:pw1 http://x", "curl --user=[CREDENTIALS] http://x"),
            // IPv4
            ("ip", "ssh deploy@host failed on 10.0.0.5:22", "ssh deploy@host failed on [IP]:22"),
            ("ip", "curl http://192.168.1.100:8080/health", "curl http://[IP]:8080/health"),
            ("ip", "host=203.0.113.7", "host=[IP]"),
            ("ip", "::ffff:172.16.4.2", "::ffff:[IP]"),
            // Attack round 26 (N16): a login at an address was read as a version pin.
            ("ip", "ssh deploy@10.1.1.9 uptime", "ssh deploy@[IP] uptime"),
            ("ip", "scp f root@10.1.1.10:/tmp", "scp f root@[IP]:/tmp"),
            ("ip", "ssh://deploy@192.168.7.58:22", "ssh://deploy@[IP]:22"),
            // secrets
            (
                "api_key",
                "OPENAI key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL works",
                "OPENAI key [API_KEY] works",
            ),
            ("api_key", "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz_0123-4567", "[API_KEY]"),
            ("api_key", "x-api-key: sk-ant-api03-AbCdEf0123456789_AbCdEf0123456789-xyzXYZ", "x-api-key: [API_KEY]"),
            ("bearer_token", "Authorization: Bearer abc123.def456-ghi789", "Authorization: Bearer [TOKEN]"),
            ("bearer_token", "-H 'authorization: bearer 9f8e7d6c5b4a3f2e1d0c'", "-H 'authorization: bearer [TOKEN]'"),
            ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [CREDENTIALS]"),
            ("aws_access_key_id", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=[API_KEY]"),
            ("aws_access_key_id", "temp key ASIAY34FZKBOKMUTVV7A", "temp key [API_KEY]"),
            (
                "aws_secret_key",
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [SECRET]",
            ),
            (
                "aws_secret_key",
                r#""SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY","#,
                r#""SecretAccessKey": "[SECRET]","#,
            ),
            ("github_token", "GH token ghp_16C7e42F292c6912E7710c838347Ae178B4a ok", "GH token [TOKEN] ok"),
            ("github_token", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "[TOKEN]"),
            ("github_token", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "[TOKEN]"),
            (
                "github_token",
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQ",
                "[TOKEN]",
            ),
            ("gitlab_token", "glpat-xxxxXXXX1234yyyyZZZZ", "[TOKEN]"),
            ("slack_token", "SLACK_BOT=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "SLACK_BOT=[TOKEN]"),
            (
                "slack_webhook",
                "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
                "https://hooks.slack.com/services/[TOKEN]",
            ),
            ("google_api_key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "key=[API_KEY]"),
            ("stripe_key", "STRIPE=sk_live_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE=[API_KEY]"),
            ("stripe_key", "rk_live_51H8abcdEFGHijklMNOPqrst", "[API_KEY]"),
            (
                "jwt",
                "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
                "token [TOKEN] end",
            ),
            ("secret_assignment", "password=hunter2", "password=[SECRET]"),
            ("secret_assignment", "DB_PASSWORD: 'correct horse battery'", "DB_PASSWORD: '[SECRET]'"),
            ("secret_assignment", r#"{"api_key": "abc123def456"}"#, r#"{"api_key": "[SECRET]"}"#),
            ("secret_assignment", "PGPASSWORD=s3cr3t psql -h db", "PGPASSWORD=[SECRET] psql -h db"),
            ("secret_assignment", "client_secret => 'Zx9-Qw8'", "client_secret => '[SECRET]'"),
            (
                "secret_assignment",
                "GET /cb?code=1&access_token=abcDEF123&x=1",
                "GET /cb?code=1&access_token=[SECRET]&x=1",
            ),
            ("secret_assignment", "spring.datasource.password=Pa55word.", "spring.datasource.password=[SECRET]."),
            ("secret_assignment", "{token: zzz999}", "{token: [SECRET]}"),
            ("secret_assignment", "mysql --password hunter2 -u root", "mysql --password [SECRET] -u root"),
            ("secret_assignment", "gh --api-key \"a b c\"", "gh --api-key \"[SECRET]\""),
            ("secret_assignment", "数据库密码：Abc12345，请勿外传", "数据库密码：[SECRET]，请勿外传"),
            (
                "url_credentials",
                "git clone https://x-access-token:abc123XYZ@github.com/org/repo.git",
                "git clone https://[CREDENTIALS]@github.com/org/repo.git",
            ),
            (
                "url_credentials",
                "DATABASE_URL=postgres://app:p%40ss@db.internal:5432/app",
                "DATABASE_URL=postgres://[CREDENTIALS]@db.internal:5432/app",
            ),
            ("url_credentials", "redis://:hunter2@cache:6379/0", "redis://[CREDENTIALS]@cache:6379/0"),
            (
                "private_key",
                "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xQ0\nabcdefghijklmnop\n-----END RSA PRIVATE KEY-----\ndone",
                "key:\n[PRIVATE_KEY]\ndone",
            ),
            (
                "private_key",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
                "[PRIVATE_KEY]",
            ),
            (
                "private_key",
                r#"{"key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}"#,
                r#"{"key": "[PRIVATE_KEY]\n"}"#,
            ),
            (
                "private_key",
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0ABCDEFGHIJKLMNOP\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
                "[PRIVATE_KEY]",
            ),
            // A log cut off before the END line: the base64 lines still go, the prose stays.
            (
                "private_key",
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBvYh1dMhTkA5vV0Sg3Z\nAoGBAM9tKxR1pQ2wZ8uH\n(truncated) then it failed",
                "[PRIVATE_KEY]\n(truncated) then it failed",
            ),
        ];
        for &(kind, input, expected) in cases {
            check(input, expected);
            let found = kinds(input);
            assert!(
                found.iter().any(|&(found_kind, _)| found_kind == kind),
                "{input:?}: expected {kind}, got {found:?}"
            );
        }
    }

    /// Formats that got through before (issue 14): each with its expected output, so the span
    /// kept (the name, the scheme, the host) is pinned too. The full catalogue is in
    /// `tests/data/redaction_catalogue.jsonl`.
    #[test]
    fn formats_from_the_hostile_review_are_redacted() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "azure_key",
                "DefaultEndpointsProtocol=https;AccountName=kb;AccountKey=q1w2E3r4T5y6U7i8O9p0aSdFgHjKlZxCvBnM+/==;EndpointSuffix=core",
                "DefaultEndpointsProtocol=https;AccountName=kb;AccountKey=[SECRET];EndpointSuffix=core",
            ),
            (
                "azure_key",
                "x.blob.core.windows.net/c?sv=2022&sp=r&sig=AbC123dEf456GhI789jKl012%3D",
                "x.blob.core.windows.net/c?sv=2022&sp=r&sig=[SECRET]",
            ),
            ("secret_assignment", "SECRET_KEY_BASE=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "SECRET_KEY_BASE=[SECRET]"),
            ("secret_assignment", "DJANGO_SECRET_KEY='django-insecure-a1b2c3d4e5'", "DJANGO_SECRET_KEY='[SECRET]'"),
            ("secret_assignment", "export SMTP_PASS=Zx9Qw8Er7T", "export SMTP_PASS=[SECRET]"),
            ("secret_assignment", "[database]\npwd = Abc123xyz789", "[database]\npwd = [SECRET]"),
            ("secret_assignment", "<password>Hunter2Hunter2</password>", "<password>[SECRET]</password>"),
            (
                "api_key",
                r#"{"client_secret": "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12"}"#,
                r#"{"client_secret": "[API_KEY]"}"#,
            ),
            ("api_key", "secret GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12 here", "secret [API_KEY] here"),
            (
                "api_key",
                "STRIPE_WEBHOOK_SECRET=whsec_AbCdEfGhIjKlMnOpQrStUvWxYz123456",
                "STRIPE_WEBHOOK_SECRET=[API_KEY]",
            ),
            (
                "api_key",
                "client.run('MTAxNTk4NzY1NDMyMTAxMjM0NQ.GaBcDe.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789')",
                "client.run('[API_KEY]')",
            ),
            (
                "api_key",
                "curl https://api.telegram.org/bot1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
                "curl https://api.telegram.org/bot[TOKEN]/getMe",
            ),
            ("cli_password", "mysql -u root -pS3cretPass shop", "mysql -u root -p[SECRET] shop"),
            ("cli_password", "sshpass -p 'Tr0ub4dor' ssh deploy@bastion", "sshpass -p '[SECRET]' ssh deploy@bastion"),
            (
                "cli_password",
                "docker login -u me -p Dkr9pass registry.io",
                "docker login -u me -p [SECRET] registry.io",
            ),
            ("cli_password", "redis-cli -h cache -a R3disPass ping", "redis-cli -h cache -a [SECRET] ping"),
            ("pgpass", "db.internal:5432:app:app_user:Pg9pass7", "db.internal:5432:app:app_user:[SECRET]"),
            (
                "secret_in_prose",
                "machine api.example.com login deploy password N3tRcPass",
                "machine api.example.com login deploy password [SECRET]",
            ),
            (
                "secret_in_prose",
                "The admin password is Adm1nPass until Friday.",
                "The admin password is [SECRET] until Friday.",
            ),
            ("secret_in_prose", "use the token Tk3nAbCdEf9GhIj for CI", "use the token [SECRET] for CI"),
            ("secret_in_prose", "数据库的密码是Db2pass9，别外传", "数据库的密码是[SECRET]，别外传"),
            ("secret_in_prose", "API密钥Ak3yAbCdEf9GhIjKl已配置", "API密钥[SECRET]已配置"),
            ("secret_in_prose", "令牌是 Tk9AbCdEf3GhIjKl，有效期一天", "令牌是 [SECRET]，有效期一天"),
            // Quoted values (session 29: the concatenated form's joins left them quoted, and so
            // does ordinary writing).
            ("secret_in_prose", "令牌是 \"Tk9AbCdEf3GhIjKl\"，有效期一天", "令牌是 \"[SECRET]\"，有效期一天"),
            ("secret_in_prose", "AppSecret 是「e12298b4359096044bbf」", "AppSecret 是「[SECRET]」"),
            (
                "cli_password",
                "smbclient //nas/share -U \"backup%z0wKh9ot3ahQ\"",
                "smbclient //nas/share -U \"backup%[SECRET]\"",
            ),
            (
                "basic_auth",
                "Authorization: Basic \"YWRtaW46WGtXT1NDTnFMeUw4\"",
                "Authorization: Basic \"[CREDENTIALS]\"",
            ),
            ("bearer_token", "Authorization: Bearer 'Ab3dEf9GhIjKlMn0pQ'", "Authorization: Bearer '[TOKEN]'"),
            ("secret_assignment", "-H 'X-API-Key: 0123456789abcdef0123'", "-H 'X-API-Key: [SECRET]'"),
            ("http_header", "Authorization: Token 0123456789abcdef0123", "Authorization: Token [TOKEN]"),
            ("cookie", "Cookie: sid=Ab3dEf9; csrftoken=Xy7", "Cookie: [COOKIE]"),
            (
                "webhook",
                "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2",
                "SENTRY_DSN=https://[TOKEN]@o1.ingest.sentry.io/2",
            ),
        ];
        for &(kind, input, expected) in cases {
            check(input, expected);
            let found = kinds(input);
            assert!(
                found.iter().any(|&(found_kind, _)| found_kind == kind),
                "{input:?}: expected {kind}, got {found:?}"
            );
        }
    }

    #[test]
    fn names_and_words_near_secrets_are_not_secrets() {
        let cases = [
            "the password is required and must be at least 12 characters",
            "the token is valid for one hour; tokens per second went up",
            "auth: required, key: my-config-map, pass: true",
            "sshpass -p is insecure; mysql -p prompts for the password",
            "docker login -u kbdemo --password-stdin",
            "the .pgpass format is hostname:port:database:username:password",
            "set the token cl100k_base in the tokenizer",
            "let key = blake3::hash(bytes).to_hex();",
            "SECRET_KEY_BASE is generated by rails secret",
            "密码必须至少包含 12 个字符，令牌桶每秒补充 100 个令牌",
            "Authorization header missing: 401",
        ];
        for input in cases {
            let (redacted, found) = redact(input);
            assert_eq!(redacted, input, "falsely redacted: {found:?}");
        }
    }

    #[test]
    fn ordinary_engineering_text_is_left_alone() {
        let cases = [
            "tsconfig.json paths: use @/ aliases",
            "vitest --run avoids watch mode",
            "upgraded to version 1.2.3 then 1.2.3.4",
            "v1.2.3.4 fixes it; pkg@1.2.3.4 and foo-1.2.3.4.tar.gz too",
            "pin requests==2.31.0.1 or >=10.0.0.1",
            "dev server on localhost:3000 and 127.0.0.1:8080, bind 0.0.0.0",
            "netmask 255.255.255.0, metadata at 169.254.169.254, dns 8.8.8.8 and 114.114.114.114",
            "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a reverted",
            "id 550e8400-e29b-41d4-a716-446655440000 stays",
            "git remote add origin git@github.com:owner/repo.git",
            "ssh://git@gitlab.com/group/project.git",
            "npm i @types/node@20.11.5 and lodash@4.17.21",
            "pin @scope/pkg@10.2.3.4 and org/tool@12.0.1.3",
            "use a Bearer token in the Authorization header (Bearer authentication)",
            "sk-learn-compatible-estimators are fine",
            "set max_tokens: 4096 and tokenizer: cl100k_base",
            "secretName: my-tls-secret",
            "password=$DB_PASSWORD and token: ${GITHUB_TOKEN} and api_key=<your key>",
            "token = process.env.GH_TOKEN; password = config.db.password; key = getToken()",
            "password: [SECRET] was already redacted",
            "ran 150 1000 2000 5000 ms timeouts",
            "timestamp 1700000000123 and size 13812345678901",
            "/home/linuxbrew/.linuxbrew/bin/brew and /Users/Shared/cache",
            "the /home/[REDACTED]/proj path",
            "date 2024-01-15 10:30:00, ratio 3.14159, port 5432",
            "cargo build --release -p kb-core",
            "pass --token-file ./tok to read it from a file",
            "C++ 2023, a+b=c, x = 1234567890",
            "docker run -u 1000:1000 image and git push -u origin main",
            "18-digit snowflake 123456789012345678 and 110101199003078888 with a bad check digit",
            "Rust: u8::MAX, Vec::new(), e::a1, std::io; C++ a::b; time 12:30:45",
            "loopback ::1 and link-local fe80::1%eth0",
            "MSRV 1.88, order 1234-567-8901, ISBN 978-3-16-148410-0",
        ];
        for input in cases {
            let (redacted, found) = redact(input);
            assert_eq!(redacted, input, "falsely redacted: {found:?}");
            assert!(found.is_empty(), "{input:?}: {found:?}");
        }
    }

    #[test]
    fn clean_text_is_borrowed() {
        let (redacted, found) = redact("vitest --run avoids watch mode");
        assert!(matches!(redacted, Cow::Borrowed(_)));
        assert!(found.is_empty());
        // The pre-check fires on a version string that looks like an address, but nothing is
        // replaced, so the text is still not copied.
        let (redacted, _) = redact("v1.2.3.4");
        assert!(matches!(redacted, Cow::Borrowed(_)));
    }

    #[test]
    fn chinese_text_with_personal_data() {
        check("请联系张三，邮箱zhangsan@example.com，手机13812345678。", "请联系张三，邮箱[EMAIL]，手机[PHONE]。");
        check("电话：+86 138 1234 5678，地址 /home/张三/项目", "电话：[PHONE]，地址 /home/[REDACTED]/项目");
        check("服务器IP是10.1.2.3，密钥sk-abc123def456ghi789jkl012mno", "服务器IP是[IP]，密钥[API_KEY]");
        check("版本 1.2.3.4 已发布", "版本 1.2.3.4 已发布");
    }

    #[test]
    fn counts_are_reported_per_kind() {
        let input = "a@example.com b@example.com 10.0.0.1 10.0.0.2 10.0.0.3 /home/x/y";
        let mut found = kinds(input);
        found.sort();
        assert_eq!(found, vec![("email", 2), ("home_dir", 1), ("ip", 3)]);
    }

    #[test]
    fn a_secret_is_counted_once_under_its_most_specific_kind() {
        // The generic `api_key=` rule sees `[API_KEY]` and leaves it, so nothing is counted twice.
        assert_eq!(kinds("OPENAI_API_KEY=sk-abc123def456ghi789jkl012mno"), vec![("api_key", 1)]);
        assert_eq!(kinds("GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a"), vec![("github_token", 1)]);
        assert_eq!(
            kinds("https://user:ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com"),
            vec![("url_credentials", 1)]
        );
        assert_eq!(kinds("token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"), vec![("jwt", 1)]);
    }

    #[test]
    fn private_key_block_goes_whole_before_other_rules_see_it() {
        // The body contains things other rules would match (an email, an address); the block is
        // taken first and reported once.
        let input =
            "-----BEGIN PRIVATE KEY-----\nowner a@b.com at 10.0.0.1\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----";
        check(input, "[PRIVATE_KEY]");
        assert_eq!(kinds(input), vec![("private_key", 1)]);
    }

    /// Regression: the PEM rule once searched for an END line anywhere after each BEGIN line, so
    /// text with many unterminated BEGIN lines took quadratic time (20 s for 700 KB). Each block
    /// now ends at the next `-----` marker.
    #[test]
    fn many_unterminated_private_key_headers_stay_linear() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xQ0abcd\n".repeat(5_000);
        let started = std::time::Instant::now();
        let (redacted, found) = redact(&text);
        eprintln!("5000 unterminated PEM headers: {:?}", started.elapsed());
        assert_eq!(found, vec![Redaction { kind: "private_key", count: 5_000 }]);
        assert_eq!(redacted, "[PRIVATE_KEY]\n".repeat(5_000));
    }

    #[test]
    fn two_private_key_blocks_with_text_between() {
        check(
            "a\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\nkeep me\n\
             -----BEGIN EC PRIVATE KEY-----\nBBBB\n-----END EC PRIVATE KEY-----\nz",
            "a\n[PRIVATE_KEY]\nkeep me\n[PRIVATE_KEY]\nz",
        );
    }

    #[test]
    fn redaction_is_idempotent_on_a_mixed_document() {
        let input = "\
            user alice (alice@example.com, +1 415 555 2671) on /Users/alice/work at 10.20.30.40\n\
            export OPENAI_API_KEY=sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz_0123\n\
            curl -H 'Authorization: Bearer abcdef123456' https://bob:pw123@api.example.com\n\
            password: hunter2, 密码=abc123";
        let (once, found) = redact(input);
        assert!(found.len() >= 6, "{found:?}");
        for secret in
            ["alice@", "415", "/Users/alice", "10.20.30.40", "sk-proj", "abcdef123456", "pw123", "hunter2", "abc123"]
        {
            assert!(!once.contains(secret), "{secret} survived in {once}");
        }
        let (twice, found_twice) = redact(&once);
        assert_eq!(twice, once);
        assert!(found_twice.is_empty());
    }

    /// Not a benchmark with thresholds: it prints what redaction costs on a large clean text and a
    /// large text with secrets, so a regression is visible when running with `--nocapture`.
    #[test]
    fn quick_bench_prints_throughput() {
        let clean_paragraph = "Ran vitest --run in the repo; tsconfig.json paths were wrong, fixed by \
            setting baseUrl. 使用 pnpm 安装依赖后构建成功，版本 1.2.3。 The build took 42s on CI.\n";
        let clean = clean_paragraph.repeat(10_000);
        let dirty = format!("{clean_paragraph}token=abc123 mail a@b.com at 10.0.0.1\n").repeat(2_000);
        // Compiling the patterns happens once per process; keep it out of the measurement.
        let _ = redact("warm up");
        for (label, text) in [("clean", &clean), ("dirty", &dirty)] {
            let started = std::time::Instant::now();
            let (redacted, _) = redact(text);
            let elapsed = started.elapsed();
            let mib = text.len() as f64 / (1024.0 * 1024.0);
            eprintln!("redact {label}: {mib:.2} MiB in {elapsed:?} ({:.1} MiB/s)", mib / elapsed.as_secs_f64());
            assert_eq!(matches!(redacted, Cow::Borrowed(_)), label == "clean");
        }
    }
}
