//! Escaping of untrusted text put into a prompt, so that it cannot forge a role tag.

use crate::display::{is_unsafe_to_show, push_visible};

/// Escapes text for inclusion in a prompt block, so it cannot close or open tags; control and
/// bidi characters are shown as `\u{…}` (`crate::display`), as everywhere stored text is shown.
pub fn escape_for_prompt(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            ch if is_unsafe_to_show(ch) => push_visible(ch, &mut escaped),
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            _ => escaped.push(ch),
        }
    }
    escaped
}
