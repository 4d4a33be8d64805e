//! Folding and normalization of text before matching: Unicode look-alikes, invisible characters,
//! case, whitespace, and disguises inside words.

use std::ops::Range;

use unicode_normalization::UnicodeNormalization;

/// Unicode NFKC (full-width and mathematical letters, ligatures, circled letters to plain ones),
/// then look-alike letters of other scripts folded to Latin and invisible characters dropped.
/// ASCII text is its own NFKC form, so it skips that step.
pub(super) fn fold(text: &str) -> String {
    let fold_char = |ch: char| -> Option<char> {
        if is_invisible(ch) {
            return None;
        }
        Some(match ch {
            '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
            '\u{201C}' | '\u{201D}' => '"',
            '\u{FF5C}' | '\u{2223}' | '\u{01C0}' => '|',
            // Tag characters spell ASCII invisibly ("ASCII smuggling"): read as what they spell.
            '\u{E0020}'..='\u{E007E}' => char::from((u32::from(ch) - 0xE0000) as u8),
            _ => fold_homoglyph(ch),
        })
    };
    if text.is_ascii() {
        return text.to_owned();
    }
    // Variation selectors that carry text ("emoji smuggling") are read as what they spell; the
    // others (an emoji's VS16, a CJK variant) are dropped with the invisible characters.
    crate::display::with_selector_text_read(text).nfkc().filter_map(fold_char).collect()
}

/// Cyrillic and Greek letters that look like Latin ones, and a few Latin variants (dotless i,
/// script l). Folding them everywhere is harmless: Russian or Greek words folded to Latin
/// letters do not spell English attack phrases.
fn fold_homoglyph(ch: char) -> char {
    match ch {
        'а' | 'А' | 'α' | 'Α' | 'ɑ' => 'a',
        'в' | 'В' | 'β' | 'Β' => 'b',
        'с' | 'С' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'Е' | 'ё' | 'Ё' | 'ε' | 'Ε' => 'e',
        'ɡ' => 'g',
        'һ' | 'Н' | 'Η' => 'h',
        'і' | 'І' | 'ї' | 'Ї' | 'ι' | 'Ι' | 'ı' | 'ӏ' => 'i',
        'ј' | 'Ј' => 'j',
        'к' | 'К' | 'κ' | 'Κ' => 'k',
        'ℓ' => 'l',
        'м' | 'М' | 'Μ' => 'm',
        'η' | 'Ν' | 'п' => 'n',
        'о' | 'О' | 'ο' | 'Ο' | 'σ' => 'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => 'p',
        'ԛ' => 'q',
        'ѕ' | 'Ѕ' => 's',
        'т' | 'Т' | 'τ' | 'Τ' => 't',
        'υ' | 'μ' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ω' => 'w',
        'х' | 'Х' | 'χ' | 'Χ' => 'x',
        'у' | 'У' | 'γ' | 'Υ' => 'y',
        'Ζ' => 'z',
        _ => ch,
    }
}

/// Lowercases and collapses whitespace of folded text: runs of whitespace become one space (or
/// one newline when the run held one, for line-anchored patterns such as a fake `Human:` turn),
/// and whitespace between two CJK characters goes (`忽 略 之 前 的 指 令`).
pub(super) fn normalize_folded(text: &str) -> String {
    let mut normalized = String::with_capacity(text.len());
    let mut previous: Option<char> = None;
    // The separator owed before the next visible character.
    let mut pending_separator: Option<char> = None;
    for ch in text.chars() {
        if ch.is_whitespace() {
            if previous.is_some() && pending_separator != Some('\n') {
                pending_separator = Some(if ch == '\n' { '\n' } else { ' ' });
            }
            continue;
        }
        if let Some(separator) = pending_separator.take() {
            // Chinese needs no spaces between words, so spaces there only serve to split a phrase.
            if !(previous.is_some_and(is_cjk) && is_cjk(ch)) {
                normalized.push(separator);
            }
        }
        if ch.is_ascii() {
            normalized.push(ch.to_ascii_lowercase());
        } else {
            normalized.extend(ch.to_lowercase());
        }
        previous = Some(ch);
    }
    normalized
}

/// The normalized form of raw text.
pub(super) fn normalize(text: &str) -> String {
    normalize_folded(&fold(text))
}

/// Undoes disguises inside words: punctuation between two letters or digits goes (`ig.no.re`,
/// `prev-ious`, `忽.略`), and runs of three or more single letters separated by single spaces are
/// joined (`i g n o r e`); a wider gap between them still separates words, as the spacing of
/// `i g n o r e  a l l` intends. The result is lowercased with whitespace collapsed.
pub(super) fn undo_word_disguises(folded: &str) -> String {
    // One lowercased buffer of token text, and per token its range in it, the width of the gap
    // before it (1 for one space, 2 for more or a line break) and whether that gap held a newline.
    let mut buffer = String::with_capacity(folded.len());
    let mut tokens: Vec<(Range<usize>, usize, bool)> = Vec::new();
    let mut token_start = 0;
    let mut gap = 0;
    let mut saw_newline = false;
    let mut last_in_token: Option<char> = None;
    let mut chars = folded.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch.is_whitespace() {
            if last_in_token.is_some() {
                tokens.push((token_start..buffer.len(), gap, std::mem::take(&mut saw_newline)));
                gap = 0;
                last_in_token = None;
            }
            gap += if ch == '\n' { 2 } else { 1 };
            saw_newline |= ch == '\n';
            continue;
        }
        if last_in_token.is_none() {
            token_start = buffer.len();
        }
        let between_word_chars = !ch.is_alphanumeric()
            && !matches!(ch, '\'' | ':' | '<' | '>' | '|' | '/')
            && last_in_token.is_some_and(char::is_alphanumeric)
            && chars.peek().is_some_and(|next| next.is_alphanumeric());
        if between_word_chars {
            continue;
        }
        if ch.is_ascii() {
            buffer.push(ch.to_ascii_lowercase());
        } else {
            buffer.extend(ch.to_lowercase());
        }
        last_in_token = Some(ch);
    }
    if last_in_token.is_some() {
        tokens.push((token_start..buffer.len(), gap, saw_newline));
    }
    let is_single_letter = |range: &Range<usize>| {
        let mut letters = buffer[range.clone()].chars();
        letters.next().is_some_and(char::is_alphabetic) && letters.next().is_none()
    };
    let mut joined = String::with_capacity(buffer.len() + tokens.len());
    let mut idx = 0;
    while idx < tokens.len() {
        // The run of single letters starting here, each after a one-space gap.
        let mut end = idx;
        while end < tokens.len() && is_single_letter(&tokens[end].0) && (end == idx || tokens[end].1 == 1) {
            end += 1;
        }
        if !joined.is_empty() {
            joined.push(if tokens[idx].2 { '\n' } else { ' ' });
        }
        if end - idx >= 3 {
            for (range, _, _) in &tokens[idx..end] {
                joined.push_str(&buffer[range.clone()]);
            }
            idx = end;
        } else {
            joined.push_str(&buffer[tokens[idx].0.clone()]);
            idx += 1;
        }
    }
    joined
}

/// Characters that render as nothing and so can split a keyword without a reader noticing.
fn is_invisible(ch: char) -> bool {
    matches!(ch,
        '\u{00AD}' | '\u{034F}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E001F}' | '\u{E007F}')
        || crate::display::is_variation_selector(ch)
}

/// Chinese characters and Japanese kana, which need no spaces between words.
fn is_cjk(ch: char) -> bool {
    matches!(ch, '\u{3001}'..='\u{303F}' | '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}
