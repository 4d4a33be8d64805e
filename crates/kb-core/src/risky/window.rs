//! The bounded windows the risky-action check reads around a match: how far before and after
//! it, in bytes and lines, each look reaches, and byte cuts at character boundaries that keep the
//! check linear.

/// How far a window around a match reaches, in bytes and in lines, for the looks that read the
/// lines around a match rather than its sentence (see [`window_around`]).
pub(super) struct Window {
    /// At most this many bytes before the match, cut at a character boundary.
    pub(super) before: usize,
    /// Whether the window starts no earlier than the match's line.
    pub(super) from_its_line: bool,
    /// At most this many bytes from the match on.
    pub(super) after: usize,
    /// At most this many bytes in all, from the window's start.
    pub(super) in_all: usize,
    /// It ends at the latest at the end of the line this many lines after the match's.
    pub(super) lines_after: usize,
}

/// Where `LINE_RULES` look for their context: up to 160 bytes before the match (the line before
/// included, as in a script that sets `f=/var/log/app.log` and then uploads `$f`), its line and
/// the next, 400 bytes in all.
pub(super) const CONTEXT_WINDOW: Window =
    Window { before: 160, from_its_line: false, after: 240, in_all: 400, lines_after: 1 };

/// Where a scope (`SCOPED`) is looked for: the match's line (at most 160 bytes of it before the
/// match) and the next, 360 bytes in all.
pub(super) const SCOPE_WINDOW: Window =
    Window { before: 160, from_its_line: true, after: 360, in_all: 360, lines_after: 1 };

/// Where a guard (`GUARD`) before a destructive statement is looked for: up to 240 bytes before
/// it, its line up to it.
pub(super) const GUARD_WINDOW: Window =
    Window { before: 240, from_its_line: false, after: 0, in_all: 240, lines_after: 0 };

/// Where a search command is looked for: the match's line up to the match, at most 160 bytes.
pub(super) const SEARCH_WINDOW: Window =
    Window { before: 160, from_its_line: true, after: 0, in_all: 160, lines_after: 0 };

/// The window of `view` around a match starting at `start`, within `bounds`.
pub(super) fn window_around<'a>(view: &'a str, start: usize, bounds: &Window) -> &'a str {
    let earliest = if bounds.from_its_line { view[..start].rfind('\n').map_or(0, |idx| idx + 1) } else { 0 };
    let window_start = start - last_bytes(&view[earliest..start], bounds.before).len();
    let max_after = bounds.after.min((window_start + bounds.in_all).saturating_sub(start));
    let after = first_bytes(&view[start..], max_after);
    let end = start + after.match_indices('\n').nth(bounds.lines_after).map_or(after.len(), |(idx, _)| idx);
    &view[window_start..end]
}

/// At most the last `max` bytes of `text`, cut at a character boundary: the bounded windows that
/// keep the check linear.
pub(super) fn last_bytes(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// At most the first `max` bytes of `text`, cut at a character boundary.
pub(super) fn first_bytes(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
