//! Decoded views of a text, for redaction to see through the encodings text travels in: JSON
//! string escapes (`\n`, `\"`, `\\`, `\uXXXX` with surrogate pairs), percent-encoding
//! (`%3D`, `%E5%AF%86`), Unicode tag characters (ASCII spelled invisibly), and the forms of
//! `decoders.rs`: C-style escapes (`\x67`, `\147`, `\u{67}`), HTML entities, quoted-printable,
//! base64, hex and base32 runs, bytes smuggled in variation selectors, fullwidth ASCII folded, and
//! invisible characters inside a token dropped. All are decoded in one pass, each decoded
//! character or run mapped back to the bytes of the escape or run it came from.
//!
//! A span found in a view is mapped back to the text with [`View::to_source`], which widens it
//! to whole escapes: a secret that begins or ends inside an escape, or is split by one, is
//! replaced whole in the original encoding, never in part. A run (base64, hex, base32, a
//! quoted-printable or smuggled run) is one piece: a match anywhere in what it decodes to takes
//! the whole run. Base64, hex, base32 and smuggled runs stay in the view as written, and what
//! they decode to is added after the view's text, one line each, mapped to the whole run.
//! A dropped invisible character belongs to the character before it.
//!
//! Only what decodes to valid text is decoded; anything else (`\q`, `\u12`, a lone surrogate,
//! `%zz`, `%C3` without its continuation byte, odd hex, bad base64, a lone `&`) stays as it is,
//! so a view never panics and never invents characters. Decoding is one linear pass (a run that
//! does not decode is skipped whole, not tried again from each of its bytes); nested encodings
//! are reached by decoding the view again (`redact.rs` does it up to a fixed depth).

use std::ops::Range;

use super::decoders;

/// A run of the view and the bytes of the source it came from: copied as it is, or decoded from
/// one escape (or one percent-encoded character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    view_start: usize,
    view_len: usize,
    source_start: usize,
    source_len: usize,
    decoded: bool,
}

impl Piece {
    fn view_end(&self) -> usize {
        self.view_start + self.view_len
    }
}

/// A text with its escapes decoded, and the map back to the text it was decoded from.
#[derive(Debug, Clone)]
pub(super) struct View {
    pub(super) text: String,
    pieces: Vec<Piece>,
}

/// Whether `text` holds anything [`decode`] could decode: a backslash, a percent sign, an
/// ampersand or an equals sign, a character outside ASCII (a tag character, a selector, a
/// fullwidth or invisible one), or a run of base64, hex or base32 long enough to hold a secret.
/// One pass over the bytes: ordinary prose (short words, ASCII) has none of them.
pub(super) fn may_be_encoded(text: &str) -> bool {
    let mut run = 0;
    for &byte in text.as_bytes() {
        if matches!(byte, b'\\' | b'%' | b'&' | b'=') || byte >= 0xC2 {
            return true;
        }
        run = if decoders::is_run_byte(byte) { run + 1 } else { 0 };
        if run >= 12 {
            return true;
        }
    }
    false
}

/// The ASCII character a tag character at `idx` stands for (U+E0020 to U+E007E spell printable
/// ASCII invisibly), and its length in bytes (4).
fn tag_char_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    match bytes.get(idx..idx + 4)? {
        [0xF3, 0xA0, third @ (0x80 | 0x81), fourth] if fourth & 0xC0 == 0x80 => {
            let ascii = (u32::from(*third & 0x3F) << 6) | u32::from(*fourth & 0x3F);
            (0x20..=0x7E).contains(&ascii).then(|| (char::from(ascii as u8), 4))
        }
        _ => None,
    }
}

/// The view of `text` with every escape decoded, or `None` when nothing decodes.
pub(super) fn decode(text: &str) -> Option<View> {
    let bytes = text.as_bytes();
    let mut builder = Builder { view: View { text: String::new(), pieces: Vec::new() }, copied_up_to: 0 };
    let mut idx = 0;
    // Whether a run of base64, hex or base32 may start at `idx`: not in the middle of a word.
    let mut run_may_start = true;
    // Where the last fullwidth character folded ends: fullwidth punctuation right after it folds.
    let mut folded_up_to = usize::MAX;
    // Runs whose text is added after the view: where they start, their length, their text.
    let mut appended: Vec<(usize, usize, String)> = Vec::new();
    while idx < bytes.len() {
        let byte = bytes[idx];
        let decoded_char = match byte {
            b'\\' => json_escape_at(bytes, idx).or_else(|| decoders::c_escape_at(bytes, idx)),
            b'%' => percent_char_at(bytes, idx),
            b'&' => decoders::entity_at(bytes, idx),
            // A tag character: a secret spelled invisibly is read as the ASCII it spells.
            0xF3 => tag_char_at(bytes, idx),
            0xEF => decoders::fullwidth_at(bytes, idx, folded_up_to == idx),
            _ => None,
        };
        if let Some((ch, len)) = decoded_char {
            if byte == 0xEF {
                folded_up_to = idx + len;
            }
            builder.decoded(text, idx, len, ch);
            idx += len;
            run_may_start = true;
            continue;
        }
        if byte == b'='
            && let Some((decoded, len)) = decoders::quoted_printable_at(bytes, idx)
        {
            builder.decoded_run(text, idx, len, &decoded);
            idx += len;
            run_may_start = true;
            continue;
        }
        // Runs decoded whole (smuggled selectors, base64, hex, base32) are left as they are and
        // their text is added after the view, each on a line of its own: a rule may need the run
        // as written (`Basic dXNl…`, a JWT's segments) or its text on a line of its own (a
        // `.pgpass` line), and sees both.
        if matches!(byte, 0xEF | 0xF3)
            && let Some((decoded, len)) = decoders::smuggled_at(bytes, idx)
        {
            appended.push((idx, len, decoded));
            idx += len;
            run_may_start = true;
            continue;
        }
        if decoders::is_run_byte(byte) {
            let run = decoders::run_len(bytes, idx);
            if run_may_start && let Some((decoded, len)) = decoders::encoded_run_at(bytes, idx, run) {
                appended.push((idx, len, decoded));
                idx += len;
                run_may_start = true;
            } else {
                idx += run;
                run_may_start = false;
            }
            continue;
        }
        run_may_start = true;
        if let Some(len) = decoders::invisible_at(bytes, idx) {
            // Invisible characters between two visible ASCII ones (`ghp_\u{200B}16C7…`) are
            // dropped: they belong to the character before them.
            let mut end = idx + len;
            while let Some(len) = decoders::invisible_at(bytes, end) {
                end += len;
            }
            builder.drop_invisible(text, idx, end);
            idx = end;
            continue;
        }
        idx += 1;
    }
    if builder.view.pieces.is_empty() && appended.is_empty() {
        return None;
    }
    builder.copy_up_to(text, bytes.len());
    for (start, len, decoded) in appended {
        builder.view.pieces.push(Piece {
            view_start: builder.view.text.len(),
            view_len: decoded.len() + 1,
            source_start: start,
            source_len: len,
            decoded: true,
        });
        builder.view.text.push('\n');
        builder.view.text.push_str(&decoded);
    }
    Some(builder.view)
}

struct Builder {
    view: View,
    /// Source bytes before this are in the view already.
    copied_up_to: usize,
}

impl Builder {
    fn copy_up_to(&mut self, source: &str, end: usize) {
        if end > self.copied_up_to {
            self.view.pieces.push(Piece {
                view_start: self.view.text.len(),
                view_len: end - self.copied_up_to,
                source_start: self.copied_up_to,
                source_len: end - self.copied_up_to,
                decoded: false,
            });
            self.view.text.push_str(&source[self.copied_up_to..end]);
            self.copied_up_to = end;
        }
    }

    fn decoded(&mut self, source: &str, start: usize, len: usize, ch: char) {
        self.decoded_run(source, start, len, ch.encode_utf8(&mut [0; 4]));
    }

    /// `len` source bytes from `start` decoded to `decoded`, as one piece: a match in any part of
    /// it takes them all.
    fn decoded_run(&mut self, source: &str, start: usize, len: usize, decoded: &str) {
        self.copy_up_to(source, start);
        self.view.pieces.push(Piece {
            view_start: self.view.text.len(),
            view_len: decoded.len(),
            source_start: start,
            source_len: len,
            decoded: true,
        });
        self.view.text.push_str(decoded);
        self.copied_up_to = start + len;
    }

    /// Drops the invisible characters of `start..end` from the view when they sit between two
    /// visible ASCII characters (or fullwidth ones), joined to the character before them, so a
    /// match that takes that character takes them too. Elsewhere (after an emoji, at the start)
    /// they stay: they hide nothing there.
    fn drop_invisible(&mut self, source: &str, start: usize, end: usize) {
        let visible = |ch: char| {
            ch.is_ascii_graphic() || decoders::fullwidth_at(ch.encode_utf8(&mut [0; 4]).as_bytes(), 0, true).is_some()
        };
        let Some(before) = source[..start].chars().next_back() else { return };
        if !visible(before) || !source[end..].chars().next().is_some_and(visible) {
            return;
        }
        if self.copied_up_to == start && self.view.pieces.last().is_some_and(|piece| piece.decoded) {
            // The character before was decoded (a fullwidth one, an escape): its piece grows.
            if let Some(last) = self.view.pieces.last_mut() {
                last.source_len += end - start;
            }
        } else {
            let before_start = start - before.len_utf8();
            self.copy_up_to(source, before_start);
            self.decoded(source, before_start, end - before_start, before);
        }
        self.copied_up_to = end;
    }
}

impl View {
    /// The source bytes that `range` of the view came from, widened to whole escapes.
    pub(super) fn to_source(&self, range: Range<usize>) -> Range<usize> {
        self.source_start(range.start)..self.source_end(range.end).max(self.source_start(range.start))
    }

    fn source_start(&self, view_idx: usize) -> usize {
        // The piece that holds `view_idx`, the first whose end is past it.
        let piece_idx = self.pieces.partition_point(|piece| piece.view_end() <= view_idx);
        match self.pieces.get(piece_idx) {
            None => self.pieces.last().map_or(0, |last| last.source_start + last.source_len),
            Some(piece) if piece.decoded => piece.source_start,
            Some(piece) => piece.source_start + (view_idx - piece.view_start),
        }
    }

    fn source_end(&self, view_idx: usize) -> usize {
        if view_idx == 0 {
            return 0;
        }
        // The piece that holds the byte before `view_idx`.
        let piece_idx = self.pieces.partition_point(|piece| piece.view_end() < view_idx);
        match self.pieces.get(piece_idx) {
            None => self.pieces.last().map_or(0, |last| last.source_start + last.source_len),
            Some(piece) if piece.decoded => piece.source_start + piece.source_len,
            Some(piece) => piece.source_start + (view_idx - piece.view_start),
        }
    }
}

/// Whether `idx` is inside an escape that decodes (after its `%`, its `\u`, its first byte),
/// so that a match starting there misreads the escape's digits as text.
pub(super) fn starts_inside_escape(text: &str, idx: usize) -> bool {
    let bytes = text.as_bytes();
    // `%XX` begins at most 2 bytes before, `\uXXXX` at most 5, a percent-encoded character's
    // later bytes at most 11; whichever begins there must also reach past `idx`.
    (1..=11).filter_map(|back| idx.checked_sub(back)).any(|start| {
        let decoded = match bytes[start] {
            b'%' => percent_char_at(bytes, start),
            b'\\' => json_escape_at(bytes, start),
            _ => None,
        };
        decoded.is_some_and(|(_, len)| start + len > idx)
    })
}

fn hex_value(byte: u8) -> Option<u32> {
    (byte as char).to_digit(16)
}

/// Four hex digits at `idx`.
fn hex4(bytes: &[u8], idx: usize) -> Option<u32> {
    let digits = bytes.get(idx..idx + 4)?;
    digits.iter().try_fold(0u32, |value, &digit| Some(value * 16 + hex_value(digit)?))
}

/// The JSON escape at `idx` (a backslash): the character and the escape's length in bytes.
fn json_escape_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    let ch = match *bytes.get(idx + 1)? {
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'"' => '"',
        b'\'' => '\'',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'u' => return unicode_escape_at(bytes, idx),
        _ => return None,
    };
    Some((ch, 2))
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00`, at `idx`. A lone surrogate is not decoded.
fn unicode_escape_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    let unit = hex4(bytes, idx + 2)?;
    match unit {
        0xD800..=0xDBFF => {
            if bytes.get(idx + 6..idx + 8) != Some(b"\\u") {
                return None;
            }
            let low = hex4(bytes, idx + 8)?;
            if !(0xDC00..=0xDFFF).contains(&low) {
                return None;
            }
            let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
            char::from_u32(code).map(|ch| (ch, 12))
        }
        0xDC00..=0xDFFF => None,
        _ => char::from_u32(unit).map(|ch| (ch, 6)),
    }
}

/// The byte of `%XX` at `idx`.
fn percent_byte_at(bytes: &[u8], idx: usize) -> Option<u8> {
    if *bytes.get(idx)? != b'%' {
        return None;
    }
    let high = hex_value(*bytes.get(idx + 1)?)?;
    let low = hex_value(*bytes.get(idx + 2)?)?;
    Some((high * 16 + low) as u8)
}

/// One character percent-encoded at `idx` (one to four `%XX`, valid UTF-8), and its length.
fn percent_char_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    let first = percent_byte_at(bytes, idx)?;
    let n_bytes = match first {
        0x00..=0x7F => 1,
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let mut encoded = [first, 0, 0, 0];
    for (offset, slot) in encoded.iter_mut().enumerate().take(n_bytes).skip(1) {
        *slot = percent_byte_at(bytes, idx + offset * 3)?;
    }
    let decoded = std::str::from_utf8(&encoded[..n_bytes]).ok()?;
    decoded.chars().next().map(|ch| (ch, n_bytes * 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view_of(text: &str) -> String {
        decode(text).map_or_else(|| text.to_owned(), |view| view.text)
    }

    #[test]
    fn json_escapes_unicode_escapes_and_percent_encoding_decode() {
        assert_eq!(view_of(r#"a\nb\t\"c\"\\d\/e"#), "a\nb\t\"c\"\\d/e");
        assert_eq!(view_of(r"\u5bc6\u7801\uff1a x"), "密码： x");
        assert_eq!(view_of(r"\ud83d\ude00!"), "😀!");
        assert_eq!(view_of("a%3Db%20%E5%AF%86"), "a=b 密");
        assert!(decode("plain text, 100 percent").is_none());
    }

    #[test]
    fn what_does_not_decode_stays_as_it_is() {
        for text in [
            r"C:\Users\q\x4",
            r"\xZZ \u{} \u{110000} \400 &#; &bogus; &#xD800;",
            r"\u12",
            r"\u12g4",
            r"\ud800 lone high",
            r"\udc00 lone low",
            r"\ud83d\u0041",
            "100%",
            "%zz%4",
            "%C3 alone",
            "%FF%FE",
            "%ED%A0%80",
            "\\",
            "%",
        ] {
            let view = view_of(text);
            assert!(view == text || text.contains("\\u0041"), "{text:?} became {view:?}");
        }
        // A lone surrogate before a valid escape, a lead byte before a valid one: the valid one
        // still decodes.
        assert_eq!(view_of(r"\ud83d\u0041"), "\\ud83dA");
        assert_eq!(view_of("%C3%28"), "%C3(");
    }

    #[test]
    fn spans_map_back_to_whole_escapes() {
        let text = r"key=ab\u0063d%45f end";
        let view = decode(text).unwrap();
        assert_eq!(view.text, "key=abcdEf end");
        let secret = view.text.find("abcdEf").unwrap();
        let source = view.to_source(secret..secret + "abcdEf".len());
        assert_eq!(&text[source], r"ab\u0063d%45f");
        // A span that starts or ends on a decoded character takes the whole escape.
        let c = view.text.find('c').unwrap();
        assert_eq!(&text[view.to_source(c..c + 1)], r"\u0063");
        let source = view.to_source(c..view.text.len());
        assert_eq!(&text[source], r"\u0063d%45f end");
        // A multi-byte character from a percent run.
        let text = "x=%E5%AF%86!";
        let view = decode(text).unwrap();
        let ch = view.text.find('密').unwrap();
        assert_eq!(&text[view.to_source(ch..ch + '密'.len_utf8())], "%E5%AF%86");
    }

    #[test]
    fn nested_escapes_take_one_view_per_level() {
        let once = decode(r#"{\"a\":\"x\\ny\"}"#).unwrap();
        assert_eq!(once.text, r#"{"a":"x\ny"}"#);
        assert_eq!(view_of(&once.text), "{\"a\":\"x\ny\"}");
        assert_eq!(view_of(r"%255Cu0041"), r"%5Cu0041");
    }
}
