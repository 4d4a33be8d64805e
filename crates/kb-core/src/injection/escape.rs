//! Escaping of untrusted text put into a prompt, so that it cannot forge a role tag.

/// Escapes text for inclusion in a prompt block, so it cannot close or open tags.
pub fn escape_for_prompt(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
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
