//! The daemon's log output: stderr (journald, launchd's log file, a terminal) with the characters
//! a terminal or a log viewer would act on written out as `\u{…}` (`kb_core::display`), so that
//! text logged from a teammate's row, an endpoint's answer or a request (an id, an error body)
//! cannot drive whatever shows the log.

use std::io::Write;

/// A writer for `tracing_subscriber::fmt`: each formatted event arrives whole and goes to stderr
/// made safe to show. Colours are off with it (their escape codes would be written out too).
#[derive(Debug, Default, Clone, Copy)]
pub struct SafeStderr;

impl Write for SafeStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().lock().write_all(safe_to_show(buf).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().lock().flush()
    }
}

/// `bytes` as text (invalid UTF-8 replaced) with every character that must not reach a terminal
/// written out; newlines and tabs stay.
pub fn safe_to_show(bytes: &[u8]) -> String {
    kb_core::display::visible_controls(&String::from_utf8_lossy(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logged_teammates_id_cannot_drive_the_terminal_that_shows_the_log() {
        let line = "WARN hub: skipped a row: id=\"E\u{1b}]0;owned\u{7}\" \u{9b}2J \u{202e}exe \u{e0049}\n";
        let shown = safe_to_show(line.as_bytes());
        assert!(!shown.chars().any(|ch| kb_core::display::is_unsafe_to_show(ch) && ch != '\n'), "{shown:?}");
        assert!(shown.contains("\\u{1b}]0;owned\\u{7}") && shown.ends_with('\n'), "{shown:?}");
        assert_eq!(safe_to_show(b"plain \xff line\n"), "plain \u{fffd} line\n");
    }
}
