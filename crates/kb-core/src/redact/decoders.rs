//! The decoders behind the views of `views.rs` for the forms attack round 26 found secrets
//! travelling in: C-style escapes (`\x67`, octal `\147`, `\u{67}`), HTML entities (`&#x67;`,
//! `&#103;`, `&amp;`), quoted-printable (`=67=68`), runs of base64 (standard and URL-safe, with
//! and without padding), hex and base32, bytes smuggled in variation selectors after a visible
//! character, and the folding of fullwidth ASCII and of the invisible characters written inside a
//! token (zero-width characters, the soft hyphen, combining marks, variation selectors).
//!
//! Each decoder looks at one position and answers what it decodes to and how many bytes of the
//! source that takes, or `None`: nothing here panics on what does not decode (an odd hex run,
//! bad base64, a lone `&`, a truncated escape), and a run decodes only to text: valid UTF-8 with
//! no control character but whitespace, so random bytes (a hash, a key that is already random)
//! never become a view.

/// The shortest run of base64 (with its padding) that is decoded: 12 characters hold 9 bytes, a
/// short password (`aHVudGVyMg==` is `hunter2`). Hex and base32 need 16 (8 and 10 bytes).
const MIN_BASE64_RUN: usize = 12;
const MIN_HEX_RUN: usize = 16;
const MIN_BASE32_RUN: usize = 16;
/// The fewest escapes of a quoted-printable run or selectors of a smuggled run that are decoded:
/// fewer are ordinary text (`x=3D` in a formula, the one selector that makes an emoji colourful).
const MIN_QP_ESCAPES: usize = 3;
const MIN_SMUGGLED_BYTES: usize = 4;

fn hex_value(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Whether `decoded` is text a rule could read: valid UTF-8, not empty, and no control
/// character but a newline, a carriage return or a tab.
fn as_text(decoded: Vec<u8>) -> Option<String> {
    let text = String::from_utf8(decoded).ok()?;
    let printable = !text.is_empty() && text.chars().all(|ch| !ch.is_control() || matches!(ch, '\n' | '\r' | '\t'));
    printable.then_some(text)
}

/// One byte written as an escape at `idx` (a backslash): `\xHH` or octal `\ooo` (three digits,
/// at most `\377`), and the escape's length.
fn escaped_byte_at(bytes: &[u8], idx: usize) -> Option<(u8, usize)> {
    if *bytes.get(idx)? != b'\\' {
        return None;
    }
    match *bytes.get(idx + 1)? {
        b'x' => {
            let high = hex_value(*bytes.get(idx + 2)?)?;
            let low = hex_value(*bytes.get(idx + 3)?)?;
            Some((high * 16 + low, 4))
        }
        first @ b'0'..=b'3' => {
            let digits = [first, *bytes.get(idx + 2)?, *bytes.get(idx + 3)?];
            if !digits.iter().all(|digit| (b'0'..=b'7').contains(digit)) {
                return None;
            }
            Some((digits.iter().fold(0u8, |value, digit| value * 8 + (digit - b'0')), 4))
        }
        _ => None,
    }
}

/// A C-style escape at `idx` (a backslash) that JSON does not have: `\u{1F600}`, or one
/// character written as one to four `\xHH` or octal escapes of its UTF-8 bytes.
pub(super) fn c_escape_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    if bytes.get(idx + 1..idx + 3) == Some(b"u{") {
        let digits_end = bytes[idx + 3..].iter().take(7).position(|&byte| byte == b'}')? + idx + 3;
        let digits = &bytes[idx + 3..digits_end];
        if digits.is_empty() || digits.len() > 6 {
            return None;
        }
        let code = digits.iter().try_fold(0u32, |value, &digit| Some(value * 16 + u32::from(hex_value(digit)?)))?;
        return char::from_u32(code).map(|ch| (ch, digits_end + 1 - idx));
    }
    let (first, first_len) = escaped_byte_at(bytes, idx)?;
    let n_bytes = utf8_len(first)?;
    let mut encoded = [first, 0, 0, 0];
    let mut len = first_len;
    for slot in encoded.iter_mut().take(n_bytes).skip(1) {
        let (byte, byte_len) = escaped_byte_at(bytes, idx + len)?;
        *slot = byte;
        len += byte_len;
    }
    let decoded = std::str::from_utf8(&encoded[..n_bytes]).ok()?;
    decoded.chars().next().map(|ch| (ch, len))
}

/// How many bytes a UTF-8 character starting with `first` has.
pub(super) fn utf8_len(first: u8) -> Option<usize> {
    match first {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// The HTML character reference at `idx` (an ampersand): `&#103;`, `&#x67;` or one of the named
/// ones that spell ASCII, with its closing semicolon.
pub(super) fn entity_at(bytes: &[u8], idx: usize) -> Option<(char, usize)> {
    let body_len = bytes.get(idx + 1..)?.iter().take(10).position(|&byte| byte == b';')?;
    let body = &bytes[idx + 1..idx + 1 + body_len];
    let ch = match body {
        [b'#', b'x' | b'X', digits @ ..] if (1..=6).contains(&digits.len()) => char::from_u32(
            digits.iter().try_fold(0u32, |value, &digit| Some(value * 16 + u32::from(hex_value(digit)?)))?,
        )?,
        [b'#', digits @ ..] if (1..=7).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) => {
            char::from_u32(digits.iter().fold(0u32, |value, &digit| value * 10 + u32::from(digit - b'0')))?
        }
        b"amp" => '&',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        b"nbsp" => ' ',
        b"commat" => '@',
        b"period" => '.',
        b"colon" => ':',
        b"equals" => '=',
        b"lowbar" => '_',
        b"sol" => '/',
        b"plus" => '+',
        b"num" => '#',
        _ => return None,
    };
    Some((ch, body_len + 2))
}

/// A run of at least [`MIN_QP_ESCAPES`] quoted-printable escapes (`=67=68=70`, upper-case hex as
/// the format writes it) at `idx`, decoded to text, and the run's length.
pub(super) fn quoted_printable_at(bytes: &[u8], idx: usize) -> Option<(String, usize)> {
    let mut decoded = Vec::new();
    let mut end = idx;
    while let Some([b'=', high, low]) = bytes.get(end..end + 3) {
        let upper_hex = |byte: &u8| byte.is_ascii_digit() || (b'A'..=b'F').contains(byte);
        if !upper_hex(high) || !upper_hex(low) {
            break;
        }
        decoded.push(hex_value(*high)? * 16 + hex_value(*low)?);
        end += 3;
    }
    if decoded.len() < MIN_QP_ESCAPES {
        return None;
    }
    Some((as_text(decoded)?, end - idx))
}

/// Whether `byte` can be part of a base64 (either alphabet), hex or base32 run.
pub(super) fn is_run_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'-' | b'_')
}

/// The length of the run of [`is_run_byte`] bytes at `idx`, without its padding.
pub(super) fn run_len(bytes: &[u8], idx: usize) -> usize {
    bytes[idx..].iter().take_while(|&&byte| is_run_byte(byte)).count()
}

/// The run at `idx` (whole, `run` bytes long, plus up to six `=` of padding after it) decoded as
/// hex, base32 or base64 to text, and the length it takes with its padding. The first reading
/// that gives text wins; a run that none does is not decoded.
pub(super) fn encoded_run_at(bytes: &[u8], idx: usize, run: usize) -> Option<(String, usize)> {
    let padding = bytes[idx + run..].iter().take(6).take_while(|&&byte| byte == b'=').count();
    let digits = &bytes[idx..idx + run];
    if run + padding < MIN_BASE64_RUN {
        return None;
    }
    if run >= MIN_HEX_RUN && run.is_multiple_of(2) && padding == 0 && digits.iter().all(u8::is_ascii_hexdigit) {
        let decoded: Option<Vec<u8>> =
            digits.chunks(2).map(|pair| Some(hex_value(pair[0])? * 16 + hex_value(pair[1])?)).collect();
        if let Some(text) = decoded.and_then(as_text) {
            return Some((text, run));
        }
    }
    if run >= MIN_BASE32_RUN
        && digits.iter().all(|byte| byte.is_ascii_uppercase() || (b'2'..=b'7').contains(byte))
        && let Some(text) = base32(digits).and_then(as_text)
    {
        return Some((text, run + padding));
    }
    if padding > 2 {
        return None;
    }
    let standard = !digits.iter().any(|byte| matches!(byte, b'-' | b'_'));
    let url_safe = !digits.iter().any(|byte| matches!(byte, b'+' | b'/'));
    if !standard && !url_safe {
        return None;
    }
    let text = base64(digits, url_safe).and_then(as_text)?;
    Some((text, run + padding))
}

/// Base64 without its padding, in the standard or the URL-safe alphabet; `None` for a length no
/// encoder writes (one character past a whole group).
fn base64(digits: &[u8], url_safe: bool) -> Option<Vec<u8>> {
    let value = |byte: u8| -> Option<u32> {
        Some(match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' if !url_safe => 62,
            b'/' if !url_safe => 63,
            b'-' if url_safe => 62,
            b'_' if url_safe => 63,
            _ => return None,
        } as u32)
    };
    if digits.len() % 4 == 1 {
        return None;
    }
    let mut decoded = Vec::with_capacity(digits.len() * 3 / 4);
    for group in digits.chunks(4) {
        let bits = group.iter().try_fold(0u32, |bits, &byte| Some((bits << 6) | value(byte)?))?;
        let bits = bits << (6 * (4 - group.len()));
        let n_bytes = group.len() * 6 / 8;
        decoded.extend_from_slice(&bits.to_be_bytes()[1..1 + n_bytes]);
    }
    Some(decoded)
}

/// Base32 (RFC 4648, upper case) without its padding.
fn base32(digits: &[u8]) -> Option<Vec<u8>> {
    if matches!(digits.len() % 8, 1 | 3 | 6) {
        return None;
    }
    let mut decoded = Vec::with_capacity(digits.len() * 5 / 8);
    for group in digits.chunks(8) {
        let bits = group.iter().try_fold(0u64, |bits, &byte| {
            let value = match byte {
                b'A'..=b'Z' => byte - b'A',
                b'2'..=b'7' => byte - b'2' + 26,
                _ => return None,
            };
            Some((bits << 5) | u64::from(value))
        })?;
        let bits = bits << (5 * (8 - group.len()));
        let n_bytes = group.len() * 5 / 8;
        decoded.extend_from_slice(&bits.to_be_bytes()[3..3 + n_bytes]);
    }
    Some(decoded)
}

/// The byte a variation selector at `idx` stands for when text is smuggled in selectors (U+FE00
/// to U+FE0F are 0 to 15, U+E0100 to U+E01EF are 16 to 255), and its length in bytes.
pub(super) fn selector_at(bytes: &[u8], idx: usize) -> Option<(u8, usize)> {
    match bytes.get(idx..)? {
        [0xEF, 0xB8, third @ 0x80..=0x8F, ..] => Some((third - 0x80, 3)),
        [0xF3, 0xA0, third @ 0x84..=0x87, fourth @ 0x80..=0xBF, ..] => {
            let code = (u32::from(third & 0x3F) << 6) | u32::from(fourth & 0x3F);
            let byte = code.checked_sub(0x100)? + 16;
            u8::try_from(byte).ok().map(|byte| (byte, 4))
        }
        _ => None,
    }
}

/// A run of selectors at `idx` that spells text, one byte a selector (`"😀" + selectors`, the
/// "emoji smuggling" of round 26), and the run's length.
pub(super) fn smuggled_at(bytes: &[u8], idx: usize) -> Option<(String, usize)> {
    let mut decoded = Vec::new();
    let mut end = idx;
    while let Some((byte, len)) = selector_at(bytes, end) {
        decoded.push(byte);
        end += len;
    }
    if decoded.len() < MIN_SMUGGLED_BYTES {
        return None;
    }
    Some((as_text(decoded)?, end - idx))
}

/// The code point of the fullwidth form of printable ASCII (U+FF01 to U+FF5E) at `idx`.
fn fullwidth_code_at(bytes: &[u8], idx: usize) -> Option<u32> {
    match bytes.get(idx..idx + 3)? {
        [0xEF, 0xBC, third @ 0x81..=0xBF] => Some(0xFF00 + u32::from(third - 0x80)),
        [0xEF, 0xBD, third @ 0x80..=0x9E] => Some(0xFF40 + u32::from(third - 0x80)),
        _ => None,
    }
}

/// The fullwidth punctuation of Chinese text: `，：；！？（）`.
fn is_chinese_punctuation(code: u32) -> bool {
    matches!(code, 0xFF01 | 0xFF08 | 0xFF09 | 0xFF0C | 0xFF1A | 0xFF1B | 0xFF1F)
}

/// The ASCII character a fullwidth form at `idx` folds to (U+FF01 to U+FF5E, as NFKC folds
/// them). The fullwidth punctuation Chinese text is written with (`，：；！？（）`), which
/// rules already read as it is, folds only next to fullwidth ASCII: right after a fullwidth form
/// that was folded (`after_folded`: `ｋｅｙ：：`) or right before one that folds (`（ｃａｔ`),
/// but not in `密码：` or `（注意）`.
pub(super) fn fullwidth_at(bytes: &[u8], idx: usize, after_folded: bool) -> Option<(char, usize)> {
    let code = fullwidth_code_at(bytes, idx)?;
    if is_chinese_punctuation(code)
        && !after_folded
        && fullwidth_code_at(bytes, idx + 3).is_none_or(is_chinese_punctuation)
    {
        return None;
    }
    char::from_u32(code - 0xFEE0).map(|ch| (ch, 3))
}

/// The length of an invisible character at `idx` that a writer can put inside a token without
/// changing how it looks: a zero-width space, joiner or non-joiner, the word joiner, a byte-order
/// mark, the soft hyphen, a combining mark (U+0300 to U+036F, the grapheme joiner U+034F among
/// them) or a variation selector.
pub(super) fn invisible_at(bytes: &[u8], idx: usize) -> Option<usize> {
    match bytes.get(idx..)? {
        [0xE2, 0x80, 0x8B..=0x8D, ..] | [0xE2, 0x81, 0xA0, ..] | [0xEF, 0xBB, 0xBF, ..] => Some(3),
        [0xC2, 0xAD, ..] | [0xCC, 0x80..=0xBF, ..] | [0xCD, 0x80..=0xAF, ..] => Some(2),
        _ => selector_at(bytes, idx).map(|(_, len)| len),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_decoder_reads_its_form() {
        assert_eq!(c_escape_at(br"\x67", 0), Some(('g', 4)));
        assert_eq!(c_escape_at(br"\147", 0), Some(('g', 4)));
        assert_eq!(c_escape_at(br"\u{67}", 0), Some(('g', 6)));
        assert_eq!(c_escape_at(br"\u{1F600}!", 0), Some(('😀', 9)));
        assert_eq!(c_escape_at(br"\xe5\xaf\x86", 0), Some(('密', 12)));
        assert_eq!(c_escape_at(br"\345\257\206", 0), Some(('密', 12)));
        assert_eq!(entity_at(b"&#x67;", 0), Some(('g', 6)));
        assert_eq!(entity_at(b"&#103;", 0), Some(('g', 6)));
        assert_eq!(entity_at(b"&amp;", 0), Some(('&', 5)));
        assert_eq!(entity_at(b"&#64;", 0), Some(('@', 5)));
        assert_eq!(quoted_printable_at(b"=67=68=70=5F", 0), Some(("ghp_".to_owned(), 12)));
        let run = b"Z2hwX2FiY2RlZg==";
        assert_eq!(encoded_run_at(run, 0, run_len(run, 0)), Some(("ghp_abcdef".to_owned(), 16)));
        let run = b"Z2hwX2FiY2RlZg";
        assert_eq!(encoded_run_at(run, 0, run_len(run, 0)), Some(("ghp_abcdef".to_owned(), 14)));
        let run = b"6768705f616263646566";
        assert_eq!(encoded_run_at(run, 0, run_len(run, 0)), Some(("ghp_abcdef".to_owned(), 20)));
        let run = b"M5UHAX3BMJRWIZLG";
        assert_eq!(encoded_run_at(run, 0, run_len(run, 0)), Some(("ghp_abcdef".to_owned(), 16)));
        // URL-safe: `-` and `_` for `+` and `/`.
        let run = b"Pz8_Pz8-Pj4-c2VjcmV0";
        assert_eq!(encoded_run_at(run, 0, run_len(run, 0)), Some(("?????>>>>secret".to_owned(), 20)));
        let smuggled: String = "😀"
            .chars()
            .chain(b"ghp_".iter().map(|&byte| char::from_u32(0xFE00 + u32::from(byte) % 16).unwrap()))
            .collect();
        assert!(smuggled_at(smuggled.as_bytes(), 4).is_none(), "selectors 0 to 15 only spell control bytes");
        let smuggled: String =
            b"ghp_x".iter().map(|&byte| char::from_u32(0xE0100 + u32::from(byte) - 16).unwrap()).collect();
        assert_eq!(smuggled_at(smuggled.as_bytes(), 0), Some(("ghp_x".to_owned(), 20)));
        assert_eq!(fullwidth_at("ｇ".as_bytes(), 0, false), Some(('g', 3)));
        assert_eq!(fullwidth_at("＠".as_bytes(), 0, false), Some(('@', 3)));
        assert_eq!(fullwidth_at("，".as_bytes(), 0, false), None);
        assert_eq!(fullwidth_at("，".as_bytes(), 0, true), Some((',', 3)));
        for invisible in ["\u{200B}", "\u{200D}", "\u{2060}", "\u{FEFF}", "\u{AD}", "\u{301}", "\u{34F}", "\u{FE0F}"] {
            assert_eq!(invisible_at(invisible.as_bytes(), 0), Some(invisible.len()), "{invisible:?}");
        }
    }

    #[test]
    fn malformed_input_does_not_decode_and_does_not_panic() {
        for text in [
            r"\x",
            r"\x6",
            r"\xZZ",
            r"\47",
            r"\4",
            r"\400",
            r"\u{",
            r"\u{}",
            r"\u{110000}",
            r"\u{D800}",
            r"\u{1234567}",
            r"\xe5\xaf",
            r"\xff",
            r"\",
        ] {
            assert_eq!(c_escape_at(text.as_bytes(), 0), None, "{text:?}");
        }
        for text in ["&", "&;", "&#;", "&#x;", "&#xZZ;", "&#99999999;", "&#xD800;", "&amp", "&bogus;", "&#x110000;"] {
            assert_eq!(entity_at(text.as_bytes(), 0), None, "{text:?}");
        }
        for text in ["=", "=6", "=67=6", "=67=68", "=ff=ff=ff", "=FF=FE=FD"] {
            assert_eq!(quoted_printable_at(text.as_bytes(), 0), None, "{text:?}");
        }
        for run in [
            "676870",
            "6768705f61626364656",
            "74fec0c33e96ab90ac88666979207a50a6ea7b9b3eea6ec0e8b916d64c0a0706",
            "Z2hwX2FiY2RlZ",
            "Z2hw+2Fi_2RlZg==",
            "Z2hwX2FiY2RlZg=====",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "internationalization",
            "AKIAIOSFODNN7EXAMPLE",
        ] {
            let bytes = run.as_bytes();
            assert_eq!(encoded_run_at(bytes, 0, run_len(bytes, 0)), None, "{run:?}");
        }
        assert_eq!(selector_at("\u{FE0F}".as_bytes(), 1), None);
        assert_eq!(smuggled_at(&[0xF3, 0xA0, 0x84], 0), None);
        assert_eq!(fullwidth_at(&[0xEF, 0xBC], 0, true), None);
        assert_eq!(invisible_at(&[0xE2, 0x80], 0), None);
    }
}
