//! The span checks of the redaction rules: given a match and the text around it, the byte range
//! to replace, or `None` when the context shows it is not a secret (a version number, an
//! environment variable reference, an identifier made of words).

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Captures, Regex};

pub(super) fn whole_match(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    caps.get(0).map(|whole| whole.range())
}

/// The body of a PEM block whose END line is missing (a log cut short): base64 lines and
/// `Proc-Type:`-style headers, separated by newlines or by escaped `\n` inside a JSON string.
static TRUNCATED_PEM_BODY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:\s|\\[nr])+(?:[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: [^\n\\]*))*").expect("pem body pattern compiles")
});

/// Extends a BEGIN line to the end of its block. Base64 has no `-`, so the next `-----` after the
/// BEGIN line is the END line of an intact block. Looking only that far (rather than for an END
/// line anywhere later) keeps text with many unterminated BEGIN lines linear, not quadratic.
pub(super) fn pem_block(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let header = caps.get(0)?;
    let rest = &text[header.end()..];
    if let Some(marker) = rest.find("-----") {
        let after_marker = &rest[marker..];
        let end_line_len = after_marker[5..].find("-----").map(|close| close + 10);
        if let Some(end_line_len) = end_line_len
            && after_marker.starts_with("-----END")
            && after_marker[..end_line_len].contains("PRIVATE KEY")
        {
            return Some(header.start()..header.end() + marker + end_line_len);
        }
    }
    let body = TRUNCATED_PEM_BODY.find(rest).map_or(0, |body| body.end());
    Some(header.start()..header.end() + body)
}

/// The base64 lines of a `.ppk` file's private key: as many as `Private-Lines: N` says, each
/// after a newline (or an escaped `\n`, in JSON), from the first to the last.
pub(super) fn ppk_private_lines(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let header = caps.get(0)?;
    let n_lines: usize = caps.get(1)?.as_str().parse().ok()?;
    let bytes = text.as_bytes();
    let mut idx = header.end();
    let mut body: Option<Range<usize>> = None;
    for _ in 0..n_lines {
        let mut line_start = idx;
        let mut after_newline = false;
        loop {
            let rest = &bytes[line_start..];
            let skip = if rest.starts_with(b"\r\n") || rest.starts_with(b"\\n") {
                2
            } else if rest.starts_with(b"\\r\\n") {
                4
            } else if matches!(rest.first(), Some(b'\n' | b'\r' | b' ' | b'\t')) {
                1
            } else {
                break;
            };
            after_newline |= skip > 1 || matches!(rest.first(), Some(b'\n' | b'\r'));
            line_start += skip;
        }
        if line_start == idx {
            break;
        }
        let line_len = bytes[line_start..]
            .iter()
            .take_while(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'='))
            .count();
        // A line on a line of its own; joined by spaces (a flattened file) only when it is long
        // enough not to be a word: "Private-Lines: 14 then …" is prose.
        if line_len == 0 || (!after_newline && line_len < 16) {
            break;
        }
        idx = line_start + line_len;
        body = Some(body.map_or(line_start, |body| body.start)..idx);
    }
    body
}

pub(super) fn first_group_or_whole(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    caps.iter().skip(1).flatten().next().or_else(|| caps.get(0)).map(|found| found.range())
}

fn byte_before(text: &str, idx: usize) -> Option<u8> {
    idx.checked_sub(1).map(|before| text.as_bytes()[before])
}

fn byte_at(text: &str, idx: usize) -> Option<u8> {
    text.as_bytes().get(idx).copied()
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Whether `value` is a stand-in rather than a secret: a placeholder we wrote earlier, an
/// environment or template reference, a masked value, or a code expression that reads the secret
/// from somewhere else. Replacing those would hide useful information and protect nothing.
fn is_reference_not_secret(value: &str) -> bool {
    let Some(first) = value.chars().next() else { return true };
    if matches!(first, '[' | '$' | '<' | '{' | '%' | '*' | '=' | '(' | '.') {
        return true;
    }
    // Backslashes alone are the escape of a quote that opens the value in JSON-escaped text
    // (`password = \"…\"`): the decoded view sees the quoted value and takes it.
    if value.bytes().all(|byte| byte == b'\\') {
        return true;
    }
    let lowered = value.to_ascii_lowercase();
    const NON_SECRETS: &[&str] =
        &["null", "none", "nil", "true", "false", "undefined", "empty", "required", "optional", "string", "str", "..."];
    if NON_SECRETS.contains(&lowered.as_str()) || lowered.bytes().all(|byte| byte == b'x') {
        return true;
    }
    // `process.env.TOKEN`, `os.environ[...]`, `config.db.password`, `self.api_key`, `getToken()`.
    const CODE_ROOTS: &[&str] = &[
        "process",
        "os",
        "env",
        "self",
        "this",
        "config",
        "cfg",
        "conf",
        "settings",
        "secrets",
        "vars",
        "ctx",
        "context",
        "options",
        "opts",
        "args",
        "params",
        "request",
        "req",
        "response",
        "res",
        "credentials",
        "creds",
    ];
    let root = lowered.split(['.', '[', '(']).next().unwrap_or("");
    let has_accessor = lowered.len() > root.len();
    (has_accessor && CODE_ROOTS.contains(&root)) || lowered.contains("()")
}

pub(super) fn url_credentials(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let userinfo = caps.get(1)?;
    let password = userinfo.as_str().split_once(':').map_or("", |(_, password)| password);
    if is_reference_not_secret(password) {
        return None;
    }
    Some(userinfo.range())
}

/// `Bearer` is also an ordinary word ("a Bearer token", "Bearer authentication"), so what follows
/// it must look generated: it contains a digit, or it is too long to be a word.
pub(super) fn bearer_token(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let token = caps.get(1)?;
    let has_digit = token.as_str().bytes().any(|byte| byte.is_ascii_digit());
    let looks_generated = (has_digit && token.len() >= 8) || token.len() >= 32;
    looks_generated.then(|| token.range())
}

/// `sk-` also starts words (`sk-learn-compatible-estimators`); real keys are random and so, with
/// overwhelming probability, contain a digit.
pub(super) fn sk_api_key(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let key = caps.get(0)?;
    key.as_str()[3..].bytes().any(|byte| byte.is_ascii_digit()).then(|| key.range())
}

/// The value of a named-group match (`dq`, `sq` or `bare`), unless it is a stand-in.
pub(super) fn secret_value(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let (value, quoted) = value_group(caps)?;
    // An unquoted value at the end of a sentence or inside brackets should not take the closing
    // punctuation with it: `{password: hunter2}` keeps its `}`.
    // Nor the backslash of an escaped closing quote (`\"` in JSON-escaped text).
    let kept = if quoted { value.as_str() } else { value.as_str().trim_end_matches(['.', ')', ']', '}', '>', '\\']) };
    // The untrimmed value too: trimming `getToken()` to `getToken(` hides the call.
    if is_reference_not_secret(kept) || is_reference_not_secret(value.as_str()) || kept.contains('[') {
        return None;
    }
    Some(value.start()..value.start() + kept.len())
}

fn value_group<'t>(caps: &Captures<'t>) -> Option<(regex::Match<'t>, bool)> {
    if let Some(quoted) = caps.name("dq").or_else(|| caps.name("sq")) {
        return Some((quoted, true));
    }
    caps.name("bare").map(|bare| (bare, false))
}

/// Like [`secret_value`], for names that are also ordinary words: the value must look generated.
pub(super) fn generated_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = &text[span.clone()];
    let name = caps.name("name").map_or(String::new(), |name| name.as_str().to_ascii_lowercase());
    // Public keys are not secrets, and `session_key` is KnowHub's own routing id, not a key.
    if name.contains("public") || name.ends_with("session_key") || value.contains("://") {
        return None;
    }
    // `pass`/`pwd` values may be weak human passwords; under `auth`, `sig` or `key` a value with
    // a digit is as often a setting (`auth: oauth2`), so it must look machine-made.
    let password_like = name.ends_with("pass") || name.ends_with("pwd") || name.contains("credential");
    let secret_like = if password_like || name.contains("secret") || name.contains("token") || name.contains("password")
    {
        looks_generated(value)
    } else {
        looks_machine_made(value)
    };
    secret_like.then_some(span)
}

/// A password given on a command line: anything but a stand-in or an English word of the
/// surrounding prose ("sshpass -p is insecure").
pub(super) fn cli_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = &text[span.clone()];
    let is_word = value.len() <= 4 && value.bytes().all(|byte| byte.is_ascii_lowercase());
    (!is_word && !value.starts_with('-')).then_some(span)
}

/// A secret named in prose. Passwords may be weak (`hunter2`), so for them a digit or symbol
/// is enough; a token, key or secret must look machine-made (several changes between letters,
/// digits and case, or long and mixed), since "token" and "key" also precede ordinary words and
/// identifiers ("the token cl100k_base").
pub(super) fn prose_value(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let span = secret_value(text, caps)?;
    let value = text[span.clone()].trim_end_matches(['.', ':', '!', '?']);
    // A colon inside is a structured name (`v2:user:1234`), not a generated secret.
    if value.len() < 6 || value.contains(':') || value.starts_with(['/', '~', '#', '@', '-']) {
        return None;
    }
    let name = caps.name("name").map(|name| name.as_str().to_ascii_lowercase());
    // Chinese names are checked like passwords: the rule already needs the value glued to the
    // name or after a verb (是, 为, 设置成), which ordinary Chinese prose does not produce.
    let password_like =
        name.as_deref().is_none_or(|name| name.starts_with("pass") || name.starts_with("pw") || !name.is_ascii());
    let ok = if password_like { looks_generated(value) } else { looks_machine_made(value) };
    ok.then_some(span.start..span.start + value.len())
}

/// At least six characters, with a letter and a digit, or with mixed case and a symbol, and not
/// a version number or a word: the least a set password or key has.
fn looks_generated(value: &str) -> bool {
    if value.len() < 6 {
        return false;
    }
    let has_digit = value.bytes().any(|byte| byte.is_ascii_digit());
    let has_alpha = value.bytes().any(|byte| byte.is_ascii_alphabetic());
    let has_upper = value.bytes().any(|byte| byte.is_ascii_uppercase());
    let has_lower = value.bytes().any(|byte| byte.is_ascii_lowercase());
    let has_symbol = value.bytes().any(|byte| !byte.is_ascii_alphanumeric() && !matches!(byte, b'.' | b'-' | b'_'));
    let version_like = value.bytes().all(|byte| byte.is_ascii_digit() || byte == b'.');
    // Code, not a value: `blake3::hash(bytes)`, `getenv("X")`.
    let code_like = value.contains("::") || value.contains('(');
    !version_like
        && !code_like
        && ((has_digit && has_alpha)
            || (has_upper && has_lower && has_symbol)
            || (has_symbol && has_alpha && value.len() >= 12))
}

/// Random-looking: at least three changes between letter and digit or lower and upper case
/// (`Zx9Qw8…`), or 20+ characters with letters and digits. Identifiers made of words
/// (`cl100k_base`, `max_tokens`) have fewer.
fn looks_machine_made(value: &str) -> bool {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |byte: u8| match byte {
        b'a'..=b'z' => Class::Lower,
        b'A'..=b'Z' => Class::Upper,
        b'0'..=b'9' => Class::Digit,
        _ => Class::Other,
    };
    let mut transitions = 0;
    let mut previous = Class::Other;
    for byte in value.bytes() {
        let current = class(byte);
        if current != Class::Other && previous != Class::Other && current != previous {
            transitions += 1;
        }
        previous = current;
    }
    let has_digit = value.bytes().any(|byte| byte.is_ascii_digit());
    let has_alpha = value.bytes().any(|byte| byte.is_ascii_alphabetic());
    // A digit is required: CamelCase identifiers (`BucketRateLimiter`) change case often too.
    has_digit && has_alpha && (transitions >= 4 || value.len() >= 20)
}

/// A Telegram token glued to `bot` in a URL is fine; glued to more digits it is some other number.
pub(super) fn not_glued_to_digits(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some(whole.range())
}

pub(super) fn home_dir_user(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let user = caps.get(1)?;
    // Directories under /Users and C:\Users that belong to nobody in particular, and Homebrew's
    // fixed prefix on Linux (`/home/linuxbrew/.linuxbrew`), which is not a person.
    // `~root/` and `~nobody/` (a shell's tilde form) are accounts, not people.
    const NOT_PEOPLE: &[&str] = &["Shared", "Public", "Default", "All", "Guest", "linuxbrew", "root", "nobody"];
    (!NOT_PEOPLE.contains(&user.as_str())).then(|| user.range())
}

/// `git@github.com:owner/repo.git` is an SSH remote, not anyone's address.
pub(super) fn email(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let local_part = caps.get(1)?;
    if local_part.as_str().eq_ignore_ascii_case("git") {
        return None;
    }
    caps.get(0).map(|whole| whole.range())
}

/// The greedy pattern may run on into a following number ("+86 138 1234 5678 123 items"), so the
/// number is cut back to the longest prefix that ends a digit group and holds 10 to 15 digits.
pub(super) fn international_phone(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(is_word_byte) {
        return None;
    }
    let bytes = whole.as_str().as_bytes();
    let mut n_digits = 0;
    let mut best_end = None;
    for (idx, &byte) in bytes.iter().enumerate() {
        if !byte.is_ascii_digit() {
            continue;
        }
        n_digits += 1;
        let ends_group = bytes.get(idx + 1).is_none_or(|next| !next.is_ascii_digit());
        if ends_group && (10..=15).contains(&n_digits) {
            best_end = Some(idx + 1);
        }
    }
    let end = whole.start() + best_end?;
    if byte_at(text, end).is_some_and(is_word_byte) {
        return None;
    }
    Some(whole.start()..end)
}

pub(super) fn chinese_mobile(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    // Inside a longer number, a hex string, an identifier or a decimal: not a phone number.
    if before.is_some_and(|byte| is_word_byte(byte) || byte == b'.' || byte == b'+')
        || after.is_some_and(is_word_byte)
        || (after == Some(b'.') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit()))
    {
        return None;
    }
    // Grouped with spaces, it must not be part of a longer list of numbers ("150 1000 2000 5000").
    if whole.as_str().contains(' ') {
        let digit_before =
            before == Some(b' ') && whole.start() >= 2 && text.as_bytes()[whole.start() - 2].is_ascii_digit();
        let digit_after =
            after == Some(b' ') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit());
        if digit_before || digit_after {
            return None;
        }
    }
    Some(whole.range())
}

pub(super) fn north_american_phone(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    // 555-123-4567 and 555.123.4567, but not a mix such as 555.123-4567.
    if let (Some(first), Some(second)) = (caps.get(1), caps.get(2))
        && first.as_str() != second.as_str()
    {
        return None;
    }
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b'.' | b'-' | b'+' | b'/'))
        || after.is_some_and(is_word_byte)
        || (matches!(after, Some(b'.' | b'-'))
            && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit()))
    {
        return None;
    }
    Some(whole.range())
}

pub(super) fn cli_credentials(_text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let userinfo = caps.get(1)?;
    let (user, password) = userinfo.as_str().split_once(':')?;
    // `docker run -u 1000:1000` is a uid and gid, not a login.
    let numeric = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if (numeric(user) && numeric(password)) || is_reference_not_secret(password) {
        return None;
    }
    Some(userinfo.range())
}

pub(super) fn chinese_id_number(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    if byte_before(text, whole.start()).is_some_and(is_word_byte)
        || byte_at(text, whole.end()).is_some_and(is_word_byte)
    {
        return None;
    }
    // GB 11643: weighted sum of the first 17 digits modulo 11 selects the check character.
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECK: &[u8; 11] = b"10X98765432";
    let bytes = whole.as_str().as_bytes();
    let sum: u32 = bytes[..17].iter().zip(WEIGHTS).map(|(&digit, weight)| u32::from(digit - b'0') * weight).sum();
    (CHECK[(sum % 11) as usize] == bytes[17].to_ascii_uppercase()).then(|| whole.range())
}

pub(super) fn chinese_landline(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b'-' | b'.' | b'/'))
        || after.is_some_and(|byte| is_word_byte(byte) || byte == b'-')
    {
        return None;
    }
    Some(whole.range())
}

/// Leaves loopback and link-local addresses, which identify nobody, and the many `a::b`-shaped
/// things in code (`u8::MAX`, `e::a1`) that are not addresses: those are glued to an identifier,
/// have no digit, or are too short to be a routable address.
pub(super) fn ipv6(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    let before = byte_before(text, whole.start());
    let after = byte_at(text, whole.end());
    if before.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b':' | b'.'))
        || after.is_some_and(|byte| is_word_byte(byte) || matches!(byte, b':' | b'.'))
    {
        return None;
    }
    let address = whole.as_str().to_ascii_lowercase();
    let has_digit = address.bytes().any(|byte| byte.is_ascii_digit());
    let n_hex_digits = address.bytes().filter(u8::is_ascii_hexdigit).count();
    let link_local = ["fe8", "fe9", "fea", "feb"].iter().any(|prefix| address.starts_with(prefix));
    if !has_digit || n_hex_digits < 5 || address == "::1" || link_local {
        return None;
    }
    Some(whole.range())
}

/// Addresses that identify nobody and appear constantly in engineering notes: loopback, the
/// unspecified address, netmasks and broadcast, the cloud metadata endpoint, and public DNS
/// resolvers (including the ones common in China).
fn is_well_known_ip(ip: &str) -> bool {
    const WELL_KNOWN: &[&str] = &[
        "0.0.0.0",
        "169.254.169.254",
        "8.8.8.8",
        "8.8.4.4",
        "1.1.1.1",
        "1.0.0.1",
        "9.9.9.9",
        "114.114.114.114",
        "223.5.5.5",
        "223.6.6.6",
        "119.29.29.29",
    ];
    ip.starts_with("127.") || ip.starts_with("255.") || WELL_KNOWN.contains(&ip)
}

/// Four dotted octets are an address unless the context says version number: `v1.2.3.4`,
/// `pkg@1.2.3.4`, `foo-1.2.3.4.tar.gz`, `==1.2.3.4`, `version 1.2.3.4`, or more than four parts.
pub(super) fn ipv4(text: &str, caps: &Captures<'_>) -> Option<Range<usize>> {
    let whole = caps.get(0)?;
    // All four parts single digits (`1.2.3.4`, `4.2.1.0`) is how versions look; the few thousand
    // public addresses of that shape are not worth mangling every four-part version number for.
    if is_well_known_ip(whole.as_str()) || whole.as_str().split('.').all(|octet| octet.len() == 1) {
        return None;
    }
    let start = whole.start();
    let before = byte_before(text, start);
    let after = byte_at(text, whole.end());
    let version_prefix = match before {
        // `deploy@10.1.1.9` is a login at an address (ssh, scp, `ssh://`): the address goes, the
        // login stays as it does before a host name. Only a package name pins a version with `@`
        // (`@types/node@…`, `org/pkg@…`); a bare `pkg@1.2.3.4` is all single digits, left above.
        Some(b'@') => {
            let word = text[..start - 1].rsplit(|ch: char| ch.is_whitespace() || "\"'`(".contains(ch)).next();
            word.is_some_and(|word| word.starts_with('@') || (word.contains('/') && !word.contains("://")))
        }
        Some(byte) if is_word_byte(byte) || matches!(byte, b'.' | b'^' | b'~' | b'=' | b'>' | b'<') => {
            // A single `=` is an assignment (`host=10.0.0.5`); `==`, `>=`, `<=` are version pins.
            byte != b'=' || matches!(byte_before(text, start - 1), Some(b'=' | b'>' | b'<' | b'!' | b'~'))
        }
        Some(b'-') => byte_before(text, start - 1).is_some_and(|byte| byte.is_ascii_alphabetic()),
        _ => false,
    };
    if version_prefix {
        return None;
    }
    let more_parts =
        matches!(after, Some(b'.')) && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_digit());
    let suffix = after.is_some_and(is_word_byte)
        || (after == Some(b'-') && byte_at(text, whole.end() + 1).is_some_and(|byte| byte.is_ascii_alphabetic()));
    if more_parts || suffix {
        return None;
    }
    let preceding = text[..start].trim_end_matches([' ', '\t', ':']);
    let preceding_word = preceding.rsplit(|ch: char| !ch.is_alphanumeric()).next().unwrap_or("").to_lowercase();
    if matches!(preceding_word.as_str(), "version" | "ver" | "v" | "release" | "build" | "版本" | "版本号") {
        return None;
    }
    Some(whole.range())
}
