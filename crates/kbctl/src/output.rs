//! Printing: text for people, JSON for programs, and quiet exits on a closed pipe.
//!
//! Everything kbctl prints passes through here, and text from the daemon is someone else's
//! (an agent's, an endpoint's, a teammate's): control and bidi characters, invisible ones and
//! runs of variation selectors in it are shown as `\u{…}` (`kb_core::display`), never sent to the
//! terminal.

use std::io::Write;

use kb_core::display::{is_safe_to_show, shown_marks, visible_controls};

/// Writes a line to standard output, made safe for a terminal; a closed pipe surfaces as an
/// error that `main` ignores.
pub fn line(text: impl AsRef<str>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(visible_controls(text.as_ref()).as_bytes())?;
    stdout.write_all(b"\n")
}

/// Writes a line to standard error, made safe for a terminal like [`line`].
pub fn error_line(text: impl AsRef<str>) {
    eprintln!("{}", visible_controls(text.as_ref()));
}

/// Pretty JSON. serde_json escapes C0 controls itself; the other characters a terminal would
/// act on (DEL, C1, bidi controls) can stand only inside strings, where `\uXXXX` means the same.
pub fn json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(json_text(value)?.as_bytes())?;
    stdout.write_all(b"\n")?;
    Ok(())
}

/// One JSON value on one line, escaped as [`json`] escapes: what `kbctl export` writes, to a
/// file or to the terminal (the file may be `cat` later).
pub fn json_line(value: &impl serde::Serialize) -> serde_json::Result<String> {
    Ok(escape_unsafe(serde_json::to_string(value)?))
}

fn json_text(value: &impl serde::Serialize) -> serde_json::Result<String> {
    Ok(escape_unsafe(serde_json::to_string_pretty(value)?))
}

/// JSON text with every character `kb_core::display::shown_marks` marks written as `\uXXXX`
/// (UTF-16 units for characters beyond the first plane): inside a JSON string that means the
/// same character.
fn escape_unsafe(text: String) -> String {
    if is_safe_to_show(&text) {
        return text;
    }
    let mut shown = String::with_capacity(text.len());
    for (ch, unsafe_to_show) in shown_marks(&text) {
        if unsafe_to_show {
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                shown.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            shown.push(ch);
        }
    }
    shown
}

pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Shortens text to `max_chars` for one-line listings (and progress messages, which do not pass
/// through [`line`]), with control and bidi characters made visible.
pub fn clip(text: &str, max_chars: usize) -> String {
    let flat: String = visible_controls(text).split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_escapes_what_a_terminal_would_act_on_and_still_means_the_same() {
        let value = serde_json::json!({"task": "a\u{1b}[8mb\u{9b}2J\u{202e}c\u{7f}\u{e0049}\u{200b}\u{1F600}\u{E0139}\u{E0157}\u{ad}",
                "plain": "多 é 🚀 \u{2764}\u{FE0F} 邉\u{E0100}"});
        for text in [json_text(&value).unwrap(), json_line(&value).unwrap()] {
            assert!(is_safe_to_show(&text.replace('\n', " ")), "{text}");
            assert!(!text.bytes().any(|byte| byte == 0x1b || byte == 0x9b), "{text}");
            assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value, "{text}");
            assert!(text.contains("多 é 🚀 \u{2764}\u{FE0F} 邉\u{E0100}") && text.contains("\\udb40\\udc49"), "{text}");
            assert!(text.contains("\u{1F600}\\udb40\\udd39\\udb40\\udd57\\u00ad"), "{text}");
        }
        assert!(!json_line(&value).unwrap().contains('\n'), "one line");
    }

    #[test]
    fn clipped_text_shows_controls() {
        assert_eq!(clip("a\u{1b}]0;title\u{7} b", 40), "a\\u{1b}]0;title\\u{7} b");
    }
}
