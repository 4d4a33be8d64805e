//! The forms a text travels in (plain, JSON-escaped, nested JSON, `\uXXXX`-escaped, URL-encoded,
//! a tool call's arguments), as encoders, and what counts as a secret surviving in any of them:
//! what the catalogue tests and `kb-bench gate` check redaction against, on every path.
//!
//! The encoders are written here independently of the decoding views of `views.rs`, char by
//! char, so a secret inside a text is always found, encoded the same way, inside the encoded
//! text: that is what [`survives`] looks for.

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
}

impl Form {
    pub const ALL: [Form; 6] =
        [Form::Plain, Form::JsonEscaped, Form::NestedJson, Form::UnicodeEscaped, Form::UrlEncoded, Form::ToolArguments];

    pub fn name(self) -> &'static str {
        match self {
            Form::Plain => "plain",
            Form::JsonEscaped => "json",
            Form::NestedJson => "nested json",
            Form::UnicodeEscaped => "\\u-escaped",
            Form::UrlEncoded => "url-encoded",
            Form::ToolArguments => "tool arguments",
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
        }
    }
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
/// JSON-escaped once or twice, `\u`-escaped or percent-encoded. A part is any run of
/// half its characters (at least 8, at most all): a redaction that replaced only the start of
/// a key, or stopped at an escape inside it, leaves one.
pub fn survives(stored: &str, secret: &str) -> bool {
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
    fn half_a_secret_counts_as_surviving() {
        let secret = "AbCdEfGh12345678IjKlMnOp";
        assert!(survives("token=[SECRET]12345678IjKlMnOp", secret));
        assert!(!survives("token=[SECRET]Op", secret));
    }
}
