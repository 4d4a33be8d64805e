//! The learned risky-action check: a linear model over hashed word and character n-grams that holds
//! a text reading like the risky sets' actions, and that a rule's hold must reach a lower score of.
//!
//! The model is trained by `tests/data/make_learned_risky.py` (scikit-learn's `HashingVectorizer`
//! and `LinearSVC`) on every labelled set of `tests/data`, and shipped as
//! `tests/data/learned_risky.bin`: 2 × 2^20 weights quantised to `i8` with one scale, the bias, two
//! thresholds and a checksum. The gate holds a text whose score reaches [`Model::threshold`], or
//! that a rule holds and whose score reaches [`Model::rule_threshold`]; both were chosen out of
//! fold on the blind parts, each judged with the rules of its first run, to hold the most with
//! at most 1% of their ordinary texts flagged (`/work/r11-study/NOTES.md`).
//! The features here replicate the trainer's exactly, which `learned/tests.rs` checks against
//! scores the trainer exported:
//!
//! - the text NFKC-normalised, then lowercased;
//! - block 1, word 1- and 2-grams over the tokens `[a-z0-9_]+`, one CJK ideograph (U+4E00–U+9FFF)
//!   or one other character that is not whitespace, a bigram being two tokens joined by a space;
//! - block 2, character 2- to 5-grams of the text with every run of two or more whitespace
//!   characters made one space (scikit-learn's `char` analyzer);
//! - each n-gram hashed as UTF-8 by MurmurHash3 (x86, 32 bits, seed 0) into the slot
//!   `|h| mod 2^bits`; a slot counts once however often it is hit; each block is L2-normalised.
//!
//! The score is `bias + scale × Σ_blocks (Σ weights of its slots) / √(its slot count)`, the
//! trainer's `decision_function`. Whitespace is Python's (`str.isspace`): Unicode's plus
//! U+001C–U+001F.
//!
//! Measured leaving one blind part out (blinds 1–10, r11 study): the rules alone at each part's
//! first run held 55.6% and flagged 6.1%, the rules OR this check 79.1% and 6.6%, the rules held only
//! where this check's score reaches the rule threshold, OR this check: 67.6% and 1.0%. The rules'
//! false flags are mostly frames (a prohibition, a refusal, a post-mortem) that it scores low.
//! Since session 27 it is also trained on thirteen training sets written for it
//! (`tests/data/TRAIN27-README.md`): first runs on blinds 12, 13 and 14, each written meanwhile,
//! 64.7%, 81.9% and 80.3% held with 0 to 1 of 400 flagged, against 42.2%, 55.3% and 46.9% for the
//! model before them.

use std::sync::LazyLock;

use unicode_normalization::UnicodeNormalization;

static MODEL_FILE: &[u8] = include_bytes!("../../tests/data/learned_risky.bin");

const MAGIC: &[u8; 8] = b"KBLRISK2";
const HEADER: usize = 8 + 4 * 4 + 4 * 4 + 8;

/// The model as the trainer wrote it.
pub struct Model {
    bits: u32,
    word_max_n: usize,
    char_min: usize,
    char_max: usize,
    scale: f32,
    bias: f32,
    /// The score from which a text is held.
    pub threshold: f32,
    /// The score from which a text a rule holds stays held (below it the rule's hold is dropped).
    pub rule_threshold: f32,
    /// FNV-1a (64 bits) of the weight bytes, as recorded by the trainer.
    pub checksum: u64,
    weights: &'static [u8],
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
}

impl Model {
    fn parse(file: &'static [u8]) -> Model {
        assert!(file.len() > HEADER && &file[..8] == MAGIC, "learned_risky.bin: not a model file");
        let bits = u32_at(file, 8);
        let model = Model {
            bits,
            word_max_n: u32_at(file, 12) as usize,
            char_min: u32_at(file, 16) as usize,
            char_max: u32_at(file, 20) as usize,
            scale: f32_at(file, 24),
            bias: f32_at(file, 28),
            threshold: f32_at(file, 32),
            rule_threshold: f32_at(file, 36),
            checksum: u64::from_le_bytes(file[40..48].try_into().expect("eight bytes")),
            weights: &file[HEADER..],
        };
        assert_eq!(model.weights.len(), 2usize << bits, "learned_risky.bin: weights for 2 × 2^{bits} slots");
        assert!(model.word_max_n == 2 && model.char_min >= 1 && model.char_min <= model.char_max);
        model
    }

    /// FNV-1a (64 bits) of the weights as loaded, to compare with [`Model::checksum`].
    pub fn weights_checksum(&self) -> u64 {
        self.weights
            .iter()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3))
    }

    fn weight(&self, block: usize, slot: u32) -> i32 {
        i32::from(self.weights[(block << self.bits) + slot as usize] as i8)
    }

    fn slot(&self, bytes: &[u8]) -> u32 {
        // scikit-learn: abs(h) % n_features on the signed hash, abs(i32::MIN) taken as 2^31.
        (murmur3_32(bytes) as i32).unsigned_abs() & ((1u32 << self.bits) - 1)
    }
}

/// The model, parsed once from the bytes compiled in.
pub static MODEL: LazyLock<Model> = LazyLock::new(|| Model::parse(MODEL_FILE));

/// MurmurHash3 x86 32-bit with seed 0, as scikit-learn's `murmurhash3_32`.
fn murmur3_32(data: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut hash: u32 = 0;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes(chunk.try_into().expect("four bytes"));
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        hash ^= k;
        hash = hash.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k: u32 = 0;
        for (index, &byte) in tail.iter().enumerate() {
            k |= u32::from(byte) << (8 * index);
        }
        hash ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    hash ^= data.len() as u32;
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^ (hash >> 16)
}

/// Python's `str.isspace`: Unicode's whitespace and the ASCII separators U+001C–U+001F.
fn is_space(ch: char) -> bool {
    ch.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&ch)
}

fn normalise(text: &str) -> String {
    text.nfkc().collect::<String>().to_lowercase()
}

/// The word tokens of a normalised text, as byte ranges.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut run: Option<usize> = None;
    for (at, ch) in text.char_indices() {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_' {
            run.get_or_insert(at);
            continue;
        }
        if let Some(start) = run.take() {
            found.push((start, at));
        }
        if !is_space(ch) {
            found.push((at, at + ch.len_utf8()));
        }
    }
    if let Some(start) = run {
        found.push((start, text.len()));
    }
    found
}

/// Each word n-gram of a normalised text: its slot and its first and last token.
fn word_ngrams(model: &Model, text: &str, tokens: &[(usize, usize)], mut each: impl FnMut(u32, usize, usize)) {
    let mut buffer = Vec::with_capacity(64);
    for (index, &(start, end)) in tokens.iter().enumerate() {
        each(model.slot(&text.as_bytes()[start..end]), index, index);
    }
    for index in 1..tokens.len() {
        let ((a, b), (c, d)) = (tokens[index - 1], tokens[index]);
        buffer.clear();
        buffer.extend_from_slice(&text.as_bytes()[a..b]);
        buffer.push(b' ');
        buffer.extend_from_slice(&text.as_bytes()[c..d]);
        each(model.slot(&buffer), index - 1, index);
    }
}

/// The slots of the character n-grams of a collapsed text ([`collapse`]), by length, then by start.
fn char_slots(model: &Model, collapsed: &str, slots: &mut Vec<u32>) {
    let bounds: Vec<usize> = collapsed.char_indices().map(|(at, _)| at).chain([collapsed.len()]).collect();
    let length = bounds.len() - 1;
    let bytes = collapsed.as_bytes();
    for n in model.char_min..=model.char_max.min(length) {
        for start in 0..=length - n {
            slots.push(model.slot(&bytes[bounds[start]..bounds[start + n]]));
        }
    }
}

/// A normalised text with every run of two or more whitespace characters made one space, as
/// scikit-learn's `char` analyzer does before it cuts n-grams.
fn collapse(text: &str) -> String {
    let mut collapsed = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if is_space(ch) && chars.peek().is_some_and(|&next| is_space(next)) {
            while chars.peek().is_some_and(|&next| is_space(next)) {
                chars.next();
            }
            collapsed.push(' ');
        } else {
            collapsed.push(ch);
        }
    }
    collapsed
}

/// Sum of a block's weights over its distinct slots, and how many there are.
fn block_sum(model: &Model, block: usize, slots: &mut Vec<u32>) -> (i64, usize) {
    slots.sort_unstable();
    slots.dedup();
    (slots.iter().map(|&slot| i64::from(model.weight(block, slot))).sum(), slots.len())
}

thread_local! {
    /// One bit per slot of a block, all clear between calls: counts each slot once without sorting.
    static SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`block_sum`] without sorting (`slots` left as they are), by a bitmap of the slots seen.
fn distinct_sum(model: &Model, block: usize, slots: &[u32]) -> (i64, usize) {
    SEEN.with_borrow_mut(|seen| {
        seen.resize((1usize << model.bits) / 64, 0);
        let (mut sum, mut count) = (0_i64, 0_usize);
        for &slot in slots {
            let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                sum += i64::from(model.weight(block, slot));
                count += 1;
            }
        }
        for &slot in slots {
            seen[slot as usize / 64] = 0;
        }
        (sum, count)
    })
}

fn score_with(model: &Model, text: &str) -> f32 {
    let normalised = normalise(text);
    let mut slots = Vec::with_capacity(normalised.len() * 5);
    word_ngrams(model, &normalised, &tokens(&normalised), |slot, _, _| slots.push(slot));
    let (word_sum, word_count) = distinct_sum(model, 0, &slots);
    slots.clear();
    char_slots(model, &collapse(&normalised), &mut slots);
    let (char_sum, char_count) = distinct_sum(model, 1, &slots);
    let block = |sum: i64, count: usize| if count == 0 { 0.0 } else { sum as f64 / (count as f64).sqrt() };
    (f64::from(model.bias) + f64::from(model.scale) * (block(word_sum, word_count) + block(char_sum, char_count)))
        as f32
}

/// How many of the model's word tokens `text` has (NFKC, lowercased; `[a-z0-9_]+`, one CJK
/// ideograph or one other character that is not whitespace): the trainer's `word_count`.
pub fn word_count(text: &str) -> usize {
    tokens(&normalise(text)).len()
}

/// A rule's hold of a text with at most this many word tokens ([`word_count`] of the text the
/// rules read) stands whatever the learned score: a frame that would make a rule's match harmless
/// (a prohibition, a post-mortem, a refusal) needs words, and in a short text the match is the
/// instruction ("连不上就关闭证书校验，马上就好" scores low once the model has seen many policies
/// that forbid turning verification off). Chosen by the trainer with the thresholds (session 27,
/// round 3: the largest of 0, 8, 12, 16, 20, 24, 32 keeping the out-of-fold flags over blinds
/// 1-13 within 1%), recorded in `learned_risky.json` as `short_text_words`.
pub const SHORT_TEXT_WORDS: usize = 20;

/// The learned check's score of one text: above [`Model::threshold`] it reads like a risky action.
pub fn score(text: &str) -> f32 {
    score_with(&MODEL, text)
}

/// A text the learned check holds: its score and the words that weighed most towards it.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    pub score: f32,
    /// The runs of words that weigh most towards it, as the normalised text has them (redacted).
    pub words: Vec<String>,
}

impl Learned {
    /// The reason a reviewer reads.
    pub fn reason(&self) -> String {
        let words: Vec<String> = self.words.iter().map(|words| format!("`{words}`")).collect();
        format!("reads like a risky action to the learned check ({:.2}): {}", self.score, words.join(", "))
    }
}

/// The words of `text` that weigh most towards a risky action, at most `most` runs of them: each
/// n-gram's weight (word and character blocks alike) is spread over the characters it covers, a
/// token's weight is its characters' sum, and runs of adjacent tokens with at least 30% of the
/// heaviest token's weight are ranked by their sum.
fn strongest_words(model: &Model, text: &str, most: usize) -> Vec<String> {
    let collapsed = collapse(&normalise(text));
    let tokens = tokens(&collapsed);
    let bounds: Vec<usize> = collapsed.char_indices().map(|(at, _)| at).chain([collapsed.len()]).collect();
    let char_at = |byte: usize| bounds.partition_point(|&start| start < byte);
    let mut per_char = vec![0.0_f64; bounds.len() - 1];
    let mut spread = |from: usize, to: usize, weight: f64| {
        let share = weight / (to - from).max(1) as f64;
        per_char[from..to].iter_mut().for_each(|value| *value += share);
    };
    let mut slots = Vec::new();
    word_ngrams(model, &collapsed, &tokens, |slot, _, _| slots.push(slot));
    let (_, word_count) = block_sum(model, 0, &mut slots);
    let mut seen = std::collections::HashSet::new();
    word_ngrams(model, &collapsed, &tokens, |slot, first, last| {
        if seen.insert(slot) {
            let weight = f64::from(model.weight(0, slot)) / (word_count as f64).sqrt();
            spread(char_at(tokens[first].0), char_at(tokens[last].1), weight);
        }
    });
    slots.clear();
    char_slots(model, &collapsed, &mut slots);
    let char_count = {
        let mut distinct = slots.clone();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len()
    };
    let mut seen = std::collections::HashSet::new();
    let length = bounds.len() - 1;
    let mut index = 0;
    for n in model.char_min..=model.char_max.min(length) {
        for start in 0..=length - n {
            let slot = slots[index];
            index += 1;
            if seen.insert(slot) {
                spread(start, start + n, f64::from(model.weight(1, slot)) / (char_count as f64).sqrt());
            }
        }
    }
    let weights: Vec<f64> =
        tokens.iter().map(|&(start, end)| per_char[char_at(start)..char_at(end)].iter().sum()).collect();
    let heaviest = weights.iter().copied().fold(0.0_f64, f64::max);
    if heaviest <= 0.0 {
        return Vec::new();
    }
    let mut runs: Vec<(f64, usize, usize)> = Vec::new();
    for (at, &weight) in weights.iter().enumerate() {
        if weight < 0.3 * heaviest {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.2 + 1 == at => {
                run.0 += weight;
                run.2 = at;
            }
            _ => runs.push((weight, at, at)),
        }
    }
    runs.sort_by(|a, b| b.0.total_cmp(&a.0));
    runs.iter()
        .take(most)
        .map(|&(_, first, last)| {
            let shown: String = collapsed[tokens[first].0..tokens[last].1].chars().take(40).collect();
            crate::redact::redact(&shown).0.into_owned()
        })
        .collect()
}

/// The learned score of a submission: its text fields each scored on its own (the model was
/// trained on single texts), the highest.
#[derive(Debug, Clone, Copy)]
pub struct Assessment<'a> {
    pub score: f32,
    field: &'a str,
}

impl<'a> Assessment<'a> {
    /// Scores `fields`; `None` when there is none.
    pub fn of(fields: &[&'a str]) -> Option<Assessment<'a>> {
        let model = &*MODEL;
        let (score, field) =
            fields.iter().map(|field| (score_with(model, field), *field)).max_by(|a, b| a.0.total_cmp(&b.0))?;
        Some(Assessment { score, field })
    }

    /// Whether the learned check holds it on its own.
    pub fn holds(&self) -> bool {
        self.score >= MODEL.threshold
    }

    /// Whether a rule's hold of it stands (the score reaches the rule threshold). A rule's hold of
    /// a short text stands anyway ([`SHORT_TEXT_WORDS`]; the gate decides that on the whole text).
    pub fn confirms_a_rule(&self) -> bool {
        self.score >= MODEL.rule_threshold
    }

    /// The held text's score and the words that weighed most towards it.
    pub fn learned(&self) -> Learned {
        Learned { score: self.score, words: strongest_words(&MODEL, self.field, 3) }
    }
}

/// The learned check over the text fields of a submission, each scored on its own: the highest
/// score, when it reaches the threshold.
pub fn check(fields: &[&str]) -> Option<Learned> {
    Assessment::of(fields).filter(Assessment::holds).map(|assessment| assessment.learned())
}

#[cfg(test)]
mod tests;
