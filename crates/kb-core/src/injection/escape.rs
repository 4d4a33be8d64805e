//! Escaping of untrusted text put into a prompt, so that it cannot forge a role tag.

use crate::display::{push_visible, shown_marks};

/// Escapes text for inclusion in a prompt block, so it cannot close or open tags; control and
/// bidi characters and variation selectors that carry text are shown as `\u{…}` (`crate::display`),
/// as everywhere stored text is shown.
pub fn escape_for_prompt(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for (ch, unsafe_to_show) in shown_marks(text) {
        match ch {
            ch if unsafe_to_show => push_visible(ch, &mut escaped),
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
