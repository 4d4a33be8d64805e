//! The forms a text travels in (plain, JSON-escaped, nested JSON, `\uXXXX`-escaped, URL-encoded,
//! a tool call's arguments, and the forms attack round 26 found leaking: base64, hex, base32,
//! HTML entities, C-style and `\u{}` escapes, quoted-printable, fullwidth letters, invisible
//! characters inside tokens, bytes smuggled in variation selectors; and round 27's: reversed,
//! rot13, spaced out, broken across lines, cut into concatenated literals, split across two
//! fields), as encoders, and what counts as a secret surviving in any of them: what the
//! catalogue tests and `kb-bench gate` check redaction against, on every path.
//!
//! The encoders and the leak check's decoders are written here independently of the decoding
//! views of `views.rs` and `decoders.rs`, so a secret inside a text is always found, encoded the
//! same way, inside the encoded text, or in what the leak check decodes from it: that is what
//! [`survives`] looks for.

use std::sync::LazyLock;

use regex::Regex;

/// One form a text travels in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Form {
    /// The text as it is.
    Plain,
    /// A JSON document holding the text as a string (`{"text": "…\n…"}`): `kb.submit` with JSON
    /// as content, a tool's JSON output.
    JsonEscaped,
    /// A JSON string holding JSON that holds the text, as Chat Completions carries a tool call's
    /// arguments (`"arguments": "{\"command\":\"…\"}"`): escaped twice.
    NestedJson,
    /// JSON with every character that is not an ASCII letter or digit written as `\uXXXX`
    /// (`ensure_ascii` and more): Chinese text and punctuation alike, and secrets split by escapes.
    UnicodeEscaped,
    /// Percent-encoded as `encodeURIComponent` does (`text=…%3D…`): query strings, form bodies.
    UrlEncoded,
    /// An OpenClaw tool call as JSON, the text in its arguments (`{"type":"toolCall",…}`).
    ToolArguments,
    /// Base64, standard alphabet, padded: a Kubernetes Secret's `data:`, an `Authorization:
    /// Basic` header, `.dockerconfigjson`.
    Base64,
    /// Base64, URL-safe alphabet, without padding (JWT segments, URL parameters).
    Base64Url,
    /// Every byte as two lower-case hex digits.
    Hex,
    /// Base32 (RFC 4648), padded: TOTP seeds, some CLIs' output.
    Base32,
    /// Every character an HTML character reference, decimal and hex in turn (`&#103;&#x68;`).
    HtmlEntities,
    /// Every byte a C-style `\xHH` escape (Python's and the shell's bytes literals).
    HexEscaped,
    /// Every byte an octal `\ooo` escape (`printf`, `echo -e`).
    OctalEscaped,
    /// Every character a Rust/JavaScript `\u{…}` escape.
    BraceEscaped,
    /// Every byte as quoted-printable `=XX` (mail bodies).
    QuotedPrintable,
    /// Printable ASCII in fullwidth forms (`ｇｈｐ＿…`), which NFKC folds back.
    Fullwidth,
    /// Invisible characters inside tokens: zero-width space, non-joiner and joiner, word joiner,
    /// byte-order mark, soft hyphen, combining marks and variation selectors, every few letters.
    Invisible,
    /// The text smuggled as one variation selector per byte after an emoji ("emoji smuggling").
    SelectorSmuggled,
    /// The text reversed, character by character (`rev`).
    Reversed,
    /// Every ASCII letter rotated by 13 (`tr 'A-Za-z' 'N-ZA-Mn-za-m'`).
    Rot13,
    /// Every line spaced out: one space between every two characters (`g h p _ 1 6 C 7 …`).
    SpacedOut,
    /// Every word of [`LONG_WORD`] characters or more broken in its middle by a line break and
    /// indentation, as a terminal or an editor wraps a long token.
    LineBroken,
    /// Every word of [`LONG_WORD`] characters or more cut in two string literals joined by a
    /// concatenation operator, several languages' in turn: `"ghp_16C7e42F" + "292c…"`, Lua's
    /// `..`, PHP's `.`, SQL's `||`, an appending statement (`"…"; s += "…"`), two literals on two
    /// lines (Python, C).
    Concatenated,
    /// The text cut in two in the middle of its longest word, the first part in one field of an
    /// experience and the rest in the next ([`Form::fields`]; `resource` and `result` in the
    /// tests and `kb-bench gate`); [`Form::encode`] gives the two joined by a line break, as the
    /// fields are read one after the other.
    AcrossFields,
}

impl Form {
    /// Round 27's forms that still leak some of the catalogue's formats (a name or a flag cut
    /// from its value, quotes inside a concatenated word, a URL or `.pgpass` line cut between its
    /// parts; the catalogue test holds each to the count it had when it was added): the daemon's
    /// tests run every other form over the whole catalogue, and these over the formats the
    /// attack used.
    pub const STILL_LEAKING: [Form; 5] =
        [Form::Reversed, Form::SpacedOut, Form::LineBroken, Form::Concatenated, Form::AcrossFields];
}

/// How long a word is, in characters, for [`Form::LineBroken`] and [`Form::Concatenated`] to cut
/// it: a token, or a name and a value with no space between them.
pub const LONG_WORD: usize = 16;

/// The joiners [`Form::Concatenated`] uses in turn, between a closing and an opening quote.
const JOINERS: [&str; 6] = [" + ", " .. ", " . ", " || ", "; s += ", "\n    "];

impl Form {
    pub const ALL: [Form; 24] = [
        Form::Plain,
        Form::JsonEscaped,
        Form::NestedJson,
        Form::UnicodeEscaped,
        Form::UrlEncoded,
        Form::ToolArguments,
        Form::Base64,
        Form::Base64Url,
        Form::Hex,
        Form::Base32,
        Form::HtmlEntities,
        Form::HexEscaped,
        Form::OctalEscaped,
        Form::BraceEscaped,
        Form::QuotedPrintable,
        Form::Fullwidth,
        Form::Invisible,
        Form::SelectorSmuggled,
        Form::Reversed,
        Form::Rot13,
        Form::SpacedOut,
        Form::LineBroken,
        Form::Concatenated,
        Form::AcrossFields,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Form::Plain => "plain",
            Form::JsonEscaped => "json",
            Form::NestedJson => "nested json",
            Form::UnicodeEscaped => "\\u-escaped",
            Form::UrlEncoded => "url-encoded",
            Form::ToolArguments => "tool arguments",
            Form::Base64 => "base64",
            Form::Base64Url => "base64url",
            Form::Hex => "hex",
            Form::Base32 => "base32",
            Form::HtmlEntities => "html entities",
            Form::HexEscaped => "\\x-escaped",
            Form::OctalEscaped => "octal-escaped",
            Form::BraceEscaped => "\\u{}-escaped",
            Form::QuotedPrintable => "quoted-printable",
            Form::Fullwidth => "fullwidth",
            Form::Invisible => "invisible inside",
            Form::SelectorSmuggled => "selector-smuggled",
            Form::Reversed => "reversed",
            Form::Rot13 => "rot13",
            Form::SpacedOut => "spaced out",
            Form::LineBroken => "line-broken",
            Form::Concatenated => "concatenated",
            Form::AcrossFields => "across fields",
        }
    }

    /// `text` in this form.
    pub fn encode(self, text: &str) -> String {
        match self {
            Form::Plain => text.to_owned(),
            Form::JsonEscaped => format!("{{\"text\": \"{}\"}}", json_escape(text)),
            Form::NestedJson => {
                let inner = format!("{{\"command\":\"{}\",\"timeout\":30}}", json_escape(text));
                format!(
                    "{{\"id\":\"call_1\",\"type\":\"function\",\"function\":{{\"name\":\"exec\",\"arguments\":\"{}\"}}}}",
                    json_escape(&inner)
                )
            }
            Form::UnicodeEscaped => format!("{{\"text\": \"{}\"}}", unicode_escape(text)),
            Form::UrlEncoded => format!("text={}", url_encode(text)),
            Form::ToolArguments => format!(
                "{{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"exec\",\"arguments\":{{\"command\":\"{}\",\"cwd\":\"/srv/app\"}}}}",
                json_escape(text)
            ),
            Form::Base64 => format!("data:\n  value: {}", base64_encode(text.as_bytes(), BASE64_STANDARD, true)),
            Form::Base64Url => format!("payload {} end", base64_encode(text.as_bytes(), BASE64_URL, false)),
            Form::Hex => format!("bytes {} end", text.bytes().map(|byte| format!("{byte:02x}")).collect::<String>()),
            Form::Base32 => format!("seed {} end", base32_encode(text.as_bytes())),
            Form::HtmlEntities => text
                .chars()
                .enumerate()
                .map(
                    |(idx, ch)| if idx % 2 == 0 { format!("&#{};", ch as u32) } else { format!("&#x{:x};", ch as u32) },
                )
                .collect(),
            Form::HexEscaped => text.bytes().map(|byte| format!("\\x{byte:02x}")).collect(),
            Form::OctalEscaped => text.bytes().map(|byte| format!("\\{byte:03o}")).collect(),
            Form::BraceEscaped => text.chars().map(|ch| format!("\\u{{{:x}}}", ch as u32)).collect(),
            Form::QuotedPrintable => text.bytes().map(|byte| format!("={byte:02X}")).collect(),
            Form::Fullwidth => text
                .chars()
                .map(|ch| if ('!'..='~').contains(&ch) { char::from_u32(ch as u32 + 0xFEE0).unwrap_or(ch) } else { ch })
                .collect(),
            Form::Invisible => invisible_inside(text),
            Form::SelectorSmuggled => {
                let selectors: String = text
                    .bytes()
                    .map(|byte| match byte {
                        0..16 => char::from_u32(0xFE00 + u32::from(byte)),
                        _ => char::from_u32(0xE0100 + u32::from(byte) - 16),
                    })
                    .map(|selector| selector.unwrap_or('?'))
                    .collect();
                format!("works now \u{1F600}{selectors}")
            }
            Form::Reversed => text.chars().rev().collect(),
            Form::Rot13 => rot13(text),
            Form::SpacedOut => text
                .split('\n')
                .map(|line| line.chars().map(String::from).collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
                .join("\n"),
            Form::LineBroken => cut_long_words(text, |_, left, right| format!("{left}\n    {right}")),
            Form::Concatenated => cut_long_words(text, |n_cut, left, right| {
                format!("\"{left}\"{}\"{right}\"", JOINERS[n_cut % JOINERS.len()])
            }),
            Form::AcrossFields => {
                let (first, rest) = split_in_longest_word(text);
                format!("{first}\n{rest}")
            }
        }
    }

    /// The two fields the text goes in, in the forms that take two ([`Form::AcrossFields`]).
    pub fn fields(self, text: &str) -> Option<(String, String)> {
        (self == Form::AcrossFields).then(|| split_in_longest_word(text))
    }
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|ch| match ch {
            'a'..='z' => char::from(b'a' + (ch as u8 - b'a' + 13) % 26),
            'A'..='Z' => char::from(b'A' + (ch as u8 - b'A' + 13) % 26),
            _ => ch,
        })
        .collect()
}

/// `text` with every word (a run without whitespace) of [`LONG_WORD`] characters or more cut in
/// its middle, the two halves given to `join` with the number of words cut before.
fn cut_long_words(text: &str, mut join: impl FnMut(usize, &str, &str) -> String) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut n_cut = 0;
    let mut word_start = None;
    for (idx, ch) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (ch.is_whitespace(), word_start) {
            (false, None) => word_start = Some(idx),
            (true, Some(start)) => {
                let word = &text[start..idx];
                let n_chars = word.chars().count();
                if n_chars >= LONG_WORD {
                    let middle = word.char_indices().nth(n_chars / 2).map_or(word.len(), |(at, _)| at);
                    out.push_str(&join(n_cut, &word[..middle], &word[middle..]));
                    n_cut += 1;
                } else {
                    out.push_str(word);
                }
                word_start = None;
            }
            _ => {}
        }
        if ch.is_whitespace() && idx < text.len() {
            out.push(ch);
        }
    }
    out
}

/// `text` cut in the middle of its longest word (the first of the longest).
fn split_in_longest_word(text: &str) -> (String, String) {
    let mut longest = 0..0;
    let mut word_start = None;
    for (idx, ch) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (ch.is_whitespace(), word_start) {
            (false, None) => word_start = Some(idx),
            (true, Some(start)) => {
                if text[start..idx].chars().count() > text[longest.clone()].chars().count() {
                    longest = start..idx;
                }
                word_start = None;
            }
            _ => {}
        }
    }
    let word = &text[longest.clone()];
    let middle = longest.start + word.char_indices().nth(word.chars().count() / 2).map_or(word.len(), |(at, _)| at);
    (text[..middle].to_owned(), text[middle..].to_owned())
}

const BASE64_STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn base64_encode(bytes: &[u8], alphabet: &[u8; 64], padded: bool) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let bits = group.iter().enumerate().fold(0u32, |bits, (idx, &byte)| bits | u32::from(byte) << (16 - 8 * idx));
        for idx in 0..=group.len() {
            out.push(alphabet[((bits >> (18 - 6 * idx)) & 63) as usize] as char);
        }
        if padded {
            out.push_str(&"=".repeat(3 - group.len()));
        }
    }
    out
}

fn base32_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for group in bytes.chunks(5) {
        let bits = group.iter().enumerate().fold(0u64, |bits, (idx, &byte)| bits | u64::from(byte) << (32 - 8 * idx));
        let n_digits = (group.len() * 8).div_ceil(5);
        for idx in 0..n_digits {
            out.push(BASE32[((bits >> (35 - 5 * idx)) & 31) as usize] as char);
        }
        out.push_str(&"=".repeat(8 - n_digits));
    }
    out
}

/// The invisible characters a writer can put inside a token, in the order [`invisible_inside`]
/// uses them.
const INVISIBLES: [char; 10] = [
    '\u{200B}',
    '\u{200C}',
    '\u{200D}',
    '\u{2060}',
    '\u{FEFF}',
    '\u{AD}',
    '\u{301}',
    '\u{34F}',
    '\u{FE0F}',
    '\u{E0101}',
];

/// `text` with an invisible character after every third visible ASCII character that another
/// one follows, cycling through [`INVISIBLES`].
fn invisible_inside(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() * 2);
    let mut n_inserted = 0;
    for (idx, &ch) in chars.iter().enumerate() {
        out.push(ch);
        let next_visible = chars.get(idx + 1).is_some_and(char::is_ascii_graphic);
        if ch.is_ascii_graphic() && next_visible && idx % 3 == 2 {
            out.push(INVISIBLES[n_inserted % INVISIBLES.len()]);
            n_inserted += 1;
        }
    }
    out
}

/// A JSON string's body for `text`, as serde_json writes it.
pub fn json_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ch if (ch as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", ch as u32)),
            ch => out.push(ch),
        }
    }
    out
}

/// A JSON string's body for `text` with every character but ASCII letters and digits as
/// `\uXXXX` (a surrogate pair beyond the BMP).
pub fn unicode_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch);
        } else {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// `text` percent-encoded as `encodeURIComponent` does: everything but `A-Za-z0-9-_.!~*'()`.
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for &byte in text.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Whether `secret`, or a large part of it, is still in `stored` in any form: as it is,
/// JSON-escaped once or twice, `\u`-escaped or percent-encoded, or in what [`decodings`] reads
/// out of `stored` (base64, hex and base32 runs, escapes and entities, fullwidth and invisible
/// characters, selectors). A part is any run of half its characters (at least 8, at most all): a
/// redaction that replaced only the start of a key, or stopped at an escape inside it, leaves one.
pub fn survives(stored: &str, secret: &str) -> bool {
    survives_as_written(stored, secret) || decodings(stored).iter().any(|decoded| survives_as_written(decoded, secret))
}

fn survives_as_written(stored: &str, secret: &str) -> bool {
    let chars: Vec<char> = secret.chars().collect();
    if chars.is_empty() {
        return false;
    }
    let window = (chars.len().div_ceil(2)).max(8).min(chars.len());
    let encoders: [fn(&str) -> String; 5] =
        [|text| text.to_owned(), json_escape, |text| json_escape(&json_escape(text)), unicode_escape, url_encode];
    chars.windows(window).any(|part| {
        let part: String = part.iter().collect();
        encoders.iter().any(|encode| {
            let encoded = encode(&part);
            stored.contains(&encoded)
        })
    })
}

static ESCAPE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\x([0-9a-fA-F]{2})|\\([0-3][0-7]{2})|=([0-9A-F]{2})|\\u\{([0-9a-fA-F]{1,6})\}|&#[xX]([0-9a-fA-F]{1,6});|&#([0-9]{1,7});")
        .expect("escape pattern compiles")
});
static JOIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\\*["'`]\s*(?:\+|\.\.|\.|\|\||;?\s*[A-Za-z_$][\w$]*\s*(?:\+|\.\.|\.)=)?\s*\\*["'`]"#)
        .expect("join pattern compiles")
});
static RUN: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_-]{8,}").expect("run pattern compiles"));

/// What a leak check reads out of `stored`, each decoding on its own and lossy (a secret found in
/// any of them leaked): invisible characters dropped and fullwidth folded; escapes and entities
/// decoded; every run decoded as base64, as hex, as base32; selectors read as bytes.
pub fn decodings(stored: &str) -> Vec<String> {
    let folded: String = stored
        .chars()
        .filter(|&ch| {
            !matches!(ch as u32, 0x200B..=0x200D | 0x2060 | 0xFEFF | 0xAD | 0x300..=0x36F | 0xFE00..=0xFE0F | 0xE0100..=0xE01EF)
        })
        .map(|ch| if ('\u{FF01}'..='\u{FF5E}').contains(&ch) { char::from_u32(ch as u32 - 0xFEE0).unwrap_or(ch) } else { ch })
        .collect();
    let mut bytes = Vec::with_capacity(stored.len());
    let mut copied_up_to = 0;
    for caps in ESCAPE.captures_iter(stored) {
        let whole = caps.get(0).map_or(0..0, |whole| whole.range());
        bytes.extend_from_slice(&stored.as_bytes()[copied_up_to..whole.start]);
        copied_up_to = whole.end;
        let number = |group: usize, radix: u32| {
            caps.get(group).and_then(|digits| u32::from_str_radix(digits.as_str(), radix).ok())
        };
        if let Some(byte) = number(1, 16).or_else(|| number(2, 8)).or_else(|| number(3, 16)) {
            bytes.push(byte as u8);
        } else if let Some(ch) =
            number(4, 16).or_else(|| number(5, 16)).or_else(|| number(6, 10)).and_then(char::from_u32)
        {
            bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        }
    }
    bytes.extend_from_slice(&stored.as_bytes()[copied_up_to..]);
    let unescaped = String::from_utf8_lossy(&bytes).into_owned();
    let runs = |decode: fn(&str) -> Option<Vec<u8>>| -> String {
        RUN.replace_all(stored, |caps: &regex::Captures<'_>| {
            decode(&caps[0]).map_or_else(|| caps[0].to_owned(), |bytes| String::from_utf8_lossy(&bytes).into_owned())
        })
        .into_owned()
    };
    let selectors: Vec<u8> = stored
        .chars()
        .flat_map(|ch| match ch as u32 {
            code @ 0xFE00..=0xFE0F => vec![(code - 0xFE00) as u8],
            code @ 0xE0100..=0xE01EF => vec![(code - 0xE0100 + 16) as u8],
            _ => ch.to_string().into_bytes(),
        })
        .collect();
    // Round 27's forms: reversed, rot13, spaced out (a single space between two characters
    // dropped, three kept as one), every whitespace dropped (lines and fields joined), string
    // literals' joins dropped.
    let stored_chars: Vec<char> = stored.chars().collect();
    let mut despaced = String::with_capacity(stored.len());
    let mut idx = 0;
    while idx < stored_chars.len() {
        let ch = stored_chars[idx];
        let before = idx.checked_sub(1).map(|before| stored_chars[before]);
        let after = stored_chars.get(idx + 1).copied();
        if ch == ' ' && after == Some(' ') && stored_chars.get(idx + 2) == Some(&' ') {
            despaced.push(' ');
            idx += 3;
            continue;
        }
        if !(ch == ' ' && before.is_some_and(|before| before != ' ') && after.is_some_and(|after| after != ' ')) {
            despaced.push(ch);
        }
        idx += 1;
    }
    vec![
        stored.chars().rev().collect(),
        rot13(stored),
        despaced,
        stored.chars().filter(|ch| !ch.is_whitespace()).collect(),
        JOIN.replace_all(stored, "").into_owned(),
        folded,
        unescaped,
        runs(|run| base64_decode(run.trim_end_matches('='))),
        runs(|run| {
            (run.len() % 2 == 0 && run.bytes().all(|byte| byte.is_ascii_hexdigit())).then(|| {
                run.as_bytes()
                    .chunks(2)
                    .filter_map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
                    .collect()
            })
        }),
        runs(base32_decode),
        String::from_utf8_lossy(&selectors).into_owned(),
    ]
}

fn base64_decode(run: &str) -> Option<Vec<u8>> {
    let url_safe = run.contains(['-', '_']);
    let alphabet = if url_safe { BASE64_URL } else { BASE64_STANDARD };
    let mut bits = 0u32;
    let mut n_bits = 0;
    let mut out = Vec::new();
    for byte in run.bytes() {
        bits = (bits << 6) | alphabet.iter().position(|&digit| digit == byte)? as u32;
        n_bits += 6;
        if n_bits >= 8 {
            n_bits -= 8;
            out.push((bits >> n_bits) as u8);
            bits &= (1 << n_bits) - 1;
        }
    }
    Some(out)
}

fn base32_decode(run: &str) -> Option<Vec<u8>> {
    let mut bits = 0u32;
    let mut n_bits = 0;
    let mut out = Vec::new();
    for byte in run.bytes() {
        bits = (bits << 5) | BASE32.iter().position(|&digit| digit == byte)? as u32;
        n_bits += 5;
        if n_bits >= 8 {
            n_bits -= 8;
            out.push((bits >> n_bits) as u8);
            bits &= (1 << n_bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_holds_the_secret_encoded_the_way_survives_looks_for_it() {
        let secret = "p@ss:\"密码\"\n1";
        for form in Form::ALL {
            let encoded = form.encode(&format!("password = {secret} ok"));
            assert!(survives(&encoded, secret), "{}: {encoded}", form.name());
            assert!(!survives(&form.encode("password = [SECRET] ok"), secret), "{}", form.name());
        }
        assert_eq!(unicode_escape("a-😀"), "a\\u002d\\ud83d\\ude00");
        assert_eq!(url_encode("a b=密"), "a%20b%3D%E5%AF%86");
        assert_eq!(json_escape("a\"\\\n\u{1}"), "a\\\"\\\\\\n\\u0001");
    }

    #[test]
    fn the_leak_check_sees_a_secret_in_every_form() {
        let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        for form in Form::ALL {
            let encoded = form.encode(&format!("token {secret} ok"));
            assert!(survives(&encoded, secret), "{}: {encoded}", form.name());
            assert!(!survives(&form.encode("token [TOKEN] ok"), secret), "{}", form.name());
        }
        assert_eq!(base64_encode(b"ghp_x", BASE64_STANDARD, true), "Z2hwX3g=");
        assert_eq!(base32_encode(b"ghp_abcdef"), "M5UHAX3BMJRWIZLG");
    }

    #[test]
    fn half_a_secret_counts_as_surviving() {
        let secret = "AbCdEfGh12345678IjKlMnOp";
        assert!(survives("token=[SECRET]12345678IjKlMnOp", secret));
        assert!(!survives("token=[SECRET]Op", secret));
    }
}
