//! Printing: text for people, JSON for programs, and quiet exits on a closed pipe.

use std::io::Write;

/// Writes a line to standard output; a closed pipe surfaces as an error that `main` ignores.
pub fn line(text: impl AsRef<str>) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_ref().as_bytes())?;
    stdout.write_all(b"\n")
}

pub fn json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    line(serde_json::to_string_pretty(value)?)?;
    Ok(())
}

pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Shortens text to `max_chars` for one-line listings.
pub fn clip(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}
