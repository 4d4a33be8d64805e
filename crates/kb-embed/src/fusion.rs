//! Pure helpers for hybrid search: the daemon's fusion of BM25's ranking with the vectors'
//! ([`hybrid`]), the fusions it was measured against ([`Fusion`]), exact terms, and a measure of
//! how Chinese a query is (an English model's vectors of Chinese text are noise). Which fusion
//! the daemon uses is decided by measurement (`kb-bench quality`).

use std::collections::HashMap;
use std::hash::Hash;

/// The customary constant of reciprocal-rank fusion (Cormack et al., 2009): large enough that
/// the first few ranks of one list do not drown out agreement between lists.
pub const RRF_K: f32 = 60.0;

/// Reciprocal-rank fusion: each id scores `Σ weight / (k + rank)` over the rankings it appears
/// in, ranks starting at 1. Only the order of each ranking matters, not its scores. Best first;
/// ties keep the order in which ids were first seen (earlier rankings, higher ranks first).
pub fn reciprocal_rank_fusion<I: Clone + Eq + Hash>(k: f32, rankings: &[(f32, &[I])]) -> Vec<(I, f32)> {
    let mut fused = Fused::default();
    for &(weight, ranking) in rankings {
        for (rank_idx, id) in ranking.iter().enumerate() {
            fused.add(id, weight / (k + (rank_idx + 1) as f32));
        }
    }
    fused.into_sorted()
}

/// Weighted sum of min-max normalised scores: each list's scores are mapped onto 0..=1 (its
/// best to 1, its worst to 0; a list whose scores are all equal maps them all to 1), then each
/// id scores `Σ weight × normalised score`, an absent id contributing 0. Best first; ties keep
/// the order in which ids were first seen.
pub fn weighted_score_fusion<I: Clone + Eq + Hash>(lists: &[(f32, &[(I, f32)])]) -> Vec<(I, f32)> {
    let mut fused = Fused::default();
    for &(weight, list) in lists {
        for (id, normalised) in min_max_normalize(list) {
            fused.add(&id, weight * normalised);
        }
    }
    fused.into_sorted()
}

/// Scores mapped linearly onto 0..=1, best to 1; all to 1 when they are all equal.
pub fn min_max_normalize<I: Clone>(list: &[(I, f32)]) -> Vec<(I, f32)> {
    let (min, max) = list
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(min, max), &(_, score)| (min.min(score), max.max(score)));
    let range = max - min;
    list.iter().map(|(id, score)| (id.clone(), if range > 0.0 { (score - min) / range } else { 1.0 })).collect()
}

/// Sums per id, remembering the order ids were first seen in.
struct Fused<I> {
    order: Vec<(I, f32)>,
    index_by_id: HashMap<I, usize>,
}

impl<I> Default for Fused<I> {
    fn default() -> Self {
        Fused { order: Vec::new(), index_by_id: HashMap::new() }
    }
}

impl<I: Clone + Eq + Hash> Fused<I> {
    fn add(&mut self, id: &I, score: f32) {
        match self.index_by_id.get(id) {
            Some(&entry_idx) => self.order[entry_idx].1 += score,
            None => {
                self.index_by_id.insert(id.clone(), self.order.len());
                self.order.push((id.clone(), score));
            }
        }
    }

    fn into_sorted(self) -> Vec<(I, f32)> {
        let mut fused = self.order;
        // A stable sort keeps first-seen order among equal scores.
        fused.sort_by(|a, b| b.1.total_cmp(&a.1));
        fused
    }
}

/// The fewest candidates each retriever contributes to a hybrid search, whatever its `top_k`.
pub const MIN_CANDIDATES: usize = 30;

/// How much the vector ranking counts against BM25's, by the script of the query: an English
/// model's vectors say little about Chinese text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScriptWeights {
    pub non_han: f32,
    pub mixed: f32,
    pub han: f32,
}

impl ScriptWeights {
    pub const fn uniform(weight: f32) -> ScriptWeights {
        ScriptWeights { non_han: weight, mixed: weight, han: weight }
    }

    pub fn for_query(&self, query: &str) -> f32 {
        match QueryScript::detect(query) {
            QueryScript::NonHan => self.non_han,
            QueryScript::Mixed => self.mixed,
            QueryScript::Han => self.han,
        }
    }
}

/// A way to fuse a BM25 ranking with a vector ranking (each best first, with its own scores).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal-rank fusion, BM25 at weight 1 and vectors at the query's script weight.
    Rrf { k: f32, vector: ScriptWeights },
    /// Min-max normalised scores summed, BM25 at weight 1 and vectors at the script weight.
    Weighted { vector: ScriptWeights },
    /// The OpenClaw gateway's: `0.7 × cosine + 0.3 / (1 + BM25 rank)` (rank from 0).
    OpenClaw,
    /// `(bm25 / (bm25 + half))^exponent + w × min-max(cosine)`, where the vectors' weight is
    /// `w = max((1 − han)^han_power, han × han_vectors × (1 − gap)^gap_power)`, `han` the share
    /// of Han characters in the query and `gap = (b1 − b2) / b1` how far BM25's best score
    /// stands above its second.
    /// BM25 keeps its absolute level, squashed into 0..1: a document matching only common
    /// words scores near 0 and cannot outweigh a good vector match, one matching the query's
    /// rare words near 1. The vectors' weight falls with the share of Han characters in the
    /// query, smoothly, because an English model's vectors of Chinese text are noise; for a
    /// Chinese query the vectors come back in as far as BM25 is undecided (its best two scores
    /// close), which is where a multilingual model's vectors carry what the words do not.
    Saturated { half: f32, exponent: i32, han_power: i32, han_vectors: f32, gap_power: i32 },
}

/// The fusion the daemon shipped before issue 25 (kept to be measured against): chosen with
/// `kb-bench quality` on CMRC (Chinese) and the English experience set with all-MiniLM-L6-v2,
/// with vectors cut by the model's relevance floor. It depended on that floor and on the cosine
/// scale it was tuned with: on held-out conversation, with the floor off, it fell below BM25
/// alone although its vectors got better. `han_power` 6, the Han term (`han_vectors` 0.25,
/// `gap_power` 4) for models that read Chinese.
pub const SHIPPED: Fusion =
    Fusion::Saturated { half: 10.0, exponent: 3, han_power: 6, han_vectors: 0.25, gap_power: 4 };

/// [`SHIPPED`] without the Han term (what English models got before issue 25).
pub const SHIPPED_FOR_ENGLISH_MODELS: Fusion =
    Fusion::Saturated { half: 10.0, exponent: 3, han_power: 6, han_vectors: 0.0, gap_power: 0 };

/// Whether a model's vectors of Chinese text carry meaning, by its name: multilingual models
/// (`multilingual-e5-*`, `paraphrase-multilingual-*`), BGE-M3, and names marked `zh` or
/// `chinese`. English models (all-MiniLM-L6-v2, bge-small-en) read Han characters as unknown or
/// single tokens: their cosines of Chinese text are noise.
pub fn reads_chinese(model_id: &str) -> bool {
    let id = model_id.to_ascii_lowercase();
    id.contains("multilingual")
        || id.contains("bge-m3")
        || id.contains("chinese")
        || id.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| part == "zh")
}

/// The fusion shipped for `model_id`'s vectors before issue 25 ([`SHIPPED`] or
/// [`SHIPPED_FOR_ENGLISH_MODELS`]), for comparison.
pub fn shipped_for(model_id: &str) -> Fusion {
    if reads_chinese(model_id) { SHIPPED } else { SHIPPED_FOR_ENGLISH_MODELS }
}

/// The vectors' share of a hybrid ranking: [`VECTOR_WEIGHT`], and for a model that does not read
/// Chinese ([`reads_chinese`]) that times the share of the query that is not Han, since its
/// cosines of Chinese text are noise.
pub fn vector_weight(model_id: &str, query: &str) -> f32 {
    if reads_chinese(model_id) { VECTOR_WEIGHT } else { VECTOR_WEIGHT * (1.0 - han_share(query)) }
}

/// The vectors' share of a hybrid ranking, BM25's ranking having the rest. Chosen by leaving each
/// set out (`tools/choose-fusion-weight.py` on `kb-bench quality --dump-candidates` of both
/// models, weights 0.1 to 0.9, the one whose worst margin over the better single retriever on the
/// other sets is best): 0.6 in four folds of six (0.8 without cmrc-trial, 0.5 divided by BM25's
/// best without english-experiences). The plain half lost 4.0 points of R@5 and 5.4 of MRR@10 to
/// all-MiniLM-L6-v2's vectors on english-experiences; 0.6 costs multilingual-e5-small 1.1 points
/// of MRR@10 against BM25 on the CMRC paragraphs (README). Rules of other kinds (reciprocal-rank
/// fusion, z-scores, weights set per query by BM25's coverage or by how far each list's best
/// leads) measured no better on the same candidates (`tools/compare-fusions.py`, README).
pub const VECTOR_WEIGHT: f32 = 0.6;

/// The daemon's hybrid ranking: BM25's own ranking ([`keyword`], what a search by BM25 alone
/// answers) and the vectors' cosines, each min-max normalised over its candidates for this query
/// (best 1, worst 0, absent 0), summed at `1 − w` and `w` = [`vector_weight`]. Nothing in it
/// depends on a model's cosine scale (the vectors are not cut by a floor either), so it holds
/// for fp32 and int8 and for another model unchanged; its one constant is the weight
/// ([`VECTOR_WEIGHT`], chosen by leaving sets out). Whether a hit is worth showing unasked is decided apart, on its evidence
/// (`kb_engine::relevance`).
///
/// The vectors' weight is also scaled by `window_share`, how much of the store's texts the
/// model sees (1 when every text fits its window; `kb_engine`'s `semantic::window`).
pub fn hybrid<I: Clone + Eq + Hash>(
    model_id: &str,
    query: &str,
    window_share: f32,
    bm25: &[(I, f32)],
    vector: &[(I, f32)],
    coverage: impl Fn(&I) -> f32,
) -> Vec<(I, f32)> {
    let seen = if window_share.is_finite() { window_share.clamp(0.0, 1.0) } else { 1.0 };
    min_max_hybrid(vector_weight(model_id, query) * seen, &keyword(bm25, coverage), vector)
}

/// `ranked` (BM25's ranking, [`keyword`]) and `vector` min-max normalised and summed at
/// `1 − vector_weight` and `vector_weight`, best first; BM25's ranking alone when the weight
/// is 0.
pub fn min_max_hybrid<I: Clone + Eq + Hash>(
    vector_weight: f32,
    ranked: &[(I, f32)],
    vector: &[(I, f32)],
) -> Vec<(I, f32)> {
    if vector_weight <= 0.0 {
        return ranked.to_vec();
    }
    weighted_score_fusion(&[(1.0 - vector_weight, ranked), (vector_weight, vector)])
}

/// As [`min_max_hybrid`], but BM25's ranking divided by its best score instead of min-max
/// normalised: its scores have a true zero (no word held), so a candidate a hair below the best
/// stays a hair below it however few candidates there are, where min-max would put the last of
/// three close ones at 0.
pub fn best_scaled_hybrid<I: Clone + Eq + Hash>(
    vector_weight: f32,
    ranked: &[(I, f32)],
    vector: &[(I, f32)],
) -> Vec<(I, f32)> {
    if vector_weight <= 0.0 {
        return ranked.to_vec();
    }
    let best = ranked.iter().map(|(_, score)| *score).fold(0.0f32, f32::max);
    let mut fused = Fused::default();
    for (id, score) in ranked {
        fused.add(id, (1.0 - vector_weight) * if best > 0.0 { score.max(0.0) / best } else { 1.0 });
    }
    for (id, normalised) in min_max_normalize(vector) {
        fused.add(&id, vector_weight * normalised);
    }
    fused.into_sorted()
}

/// How much a hybrid search adds for holding the whole query: `COVERAGE_WEIGHT × coverage`,
/// coverage being the idf-weighted share of the query's terms a candidate has (0..=1).
///
/// Lucene once had this as `coord`; BM25 lacks it, so a text that says one rare word of the
/// query often can outrank one that holds every word, and min-max-normalised cosines are blind
/// to it. The weight was chosen offline on the candidates of all six quality sets and both
/// models (`kb-bench quality --dump-candidates`, coverage first worked out in Python over
/// jieba's words) by leaving each set out in turn and taking the weight whose worst margin over
/// the better single retriever was best on the other five: 0.15 in five folds of six, 0.2 in the
/// sixth. From 0.3 on it cost the English experiences up to a point: it is a tie-breaker between
/// close candidates, not a second ranking. Whether the words stand close together (best
/// sentence, best window of 12 or 24 words) measured no better than whether they are held at
/// all, so only the latter is worked out. Redone with the daemon's own coverage (stemmed
/// analyzer terms, which the dumps now carry), the same procedure picks 0.1 in five folds, by
/// one English question; the sums over all sets favour 0.15 to 0.2. The differences are
/// noise, so the weight stayed.
///
/// Through the socket (`kb-bench quality`, R@5 / MRR@10 before and after), multilingual-e5-small:
/// conv-en 0.422 / 0.269 → 0.432 / 0.272, debian-en 0.905 / 0.835 → 0.909 / 0.840, the CMRC
/// chunks 0.952 / 0.855 → 0.954 / 0.857, debian-zh 0.945 / 0.877 → 0.941 / 0.878;
/// all-MiniLM-L6-v2: debian-en 0.898 / 0.808 → 0.903 / 0.817, the chunks 0.941 / 0.832 →
/// 0.944 / 0.839, english-experiences 0.872 / 0.799 → 0.867 / 0.800. Small, and mostly up.
pub const COVERAGE_WEIGHT: f32 = 0.15;

/// BM25 saturated as `(bm25 / (bm25 + KEYWORD_HALF))^KEYWORD_EXPONENT` in [`keyword`] (its
/// constants from the fusion shipped before issue 25, [`SHIPPED`]).
const KEYWORD_HALF: f32 = 10.0;
const KEYWORD_EXPONENT: i32 = 3;

/// BM25's candidates ranked as a search by BM25 alone ranks them, and as the hybrid takes BM25's
/// side: saturated (`(bm25 / (bm25 + 10))³`) plus [`COVERAGE_WEIGHT`] × coverage. Searches by
/// BM25 alone (no model, or `mode: bm25`) use it, and [`hybrid`] fuses it with the vectors. Through the socket (`kb-bench quality
/// --no-embeddings`, R@1 / R@5 / MRR@10, plain BM25 → this, the 30 best candidates reranked):
/// conv-en 0.062 / 0.295 / 0.167 → 0.069 / 0.320 / 0.181, the CMRC chunks 0.751 / 0.940 / 0.832
/// → 0.765 / 0.943 / 0.839, debian-zh 0.767 / 0.911 / 0.830 → 0.773 / 0.914 / 0.833, debian-en
/// 0.743 / 0.879 / 0.802 → 0.753 / 0.874 / 0.809, english-experiences 0.610 / 0.706 / 0.660 →
/// 0.605 / 0.705 / 0.657, CMRC paragraphs 0.975 / 0.995 / 0.984 → 0.976 / 0.995 / 0.985.
pub fn keyword<I: Clone>(bm25: &[(I, f32)], coverage: impl Fn(&I) -> f32) -> Vec<(I, f32)> {
    let saturated = bm25
        .iter()
        .map(|(id, score)| {
            let score = score.max(0.0);
            (id.clone(), (score / (score + KEYWORD_HALF)).powi(KEYWORD_EXPONENT))
        })
        .collect();
    with_coverage(saturated, COVERAGE_WEIGHT, coverage)
}

/// `fused` with `weight × coverage(id)` added to each score, best first; equal scores keep
/// their order.
pub fn with_coverage<I>(mut fused: Vec<(I, f32)>, weight: f32, coverage: impl Fn(&I) -> f32) -> Vec<(I, f32)> {
    for (id, score) in &mut fused {
        *score += weight * coverage(id).clamp(0.0, 1.0);
    }
    // A stable sort keeps the fused order among equal scores.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

/// Fuses the two rankings of `query` with `fusion`, best first.
pub fn fuse<I: Clone + Eq + Hash>(
    fusion: Fusion,
    query: &str,
    bm25: &[(I, f32)],
    vector: &[(I, f32)],
) -> Vec<(I, f32)> {
    match fusion {
        Fusion::Rrf { k, vector: weights } => {
            let bm25_ids: Vec<I> = bm25.iter().map(|(id, _)| id.clone()).collect();
            let vector_ids: Vec<I> = vector.iter().map(|(id, _)| id.clone()).collect();
            reciprocal_rank_fusion(k, &[(1.0, &bm25_ids), (weights.for_query(query), &vector_ids)])
        }
        Fusion::Weighted { vector: weights } => {
            weighted_score_fusion(&[(1.0, bm25), (weights.for_query(query), vector)])
        }
        Fusion::Saturated { half, exponent, han_power, han_vectors, gap_power } => {
            let mut fused = Fused::default();
            for (id, score) in bm25 {
                let score = score.max(0.0);
                fused.add(id, (score / (score + half)).powi(exponent));
            }
            let han = han_share(query);
            let weight = (1.0 - han).powi(han_power).max(han * han_vectors * (1.0 - bm25_gap(bm25)).powi(gap_power));
            // Below this the vectors could only reorder ties and add noise at the tail.
            if weight < 0.01 {
                return fused.into_sorted();
            }
            for (id, normalised) in min_max_normalize(vector) {
                fused.add(&id, weight * normalised);
            }
            fused.into_sorted()
        }
        Fusion::OpenClaw => {
            let mut fused = Fused::default();
            for (id, cosine) in vector {
                fused.add(id, 0.7 * cosine);
            }
            for (rank, (id, _)) in bm25.iter().enumerate() {
                fused.add(id, 0.3 / (1.0 + rank as f32));
            }
            fused.into_sorted()
        }
    }
}

/// How far BM25's best score stands above its second, as a share of the best: 1 when one
/// document alone matches, 0 when the first two tie or nothing matches.
fn bm25_gap<I>(bm25: &[(I, f32)]) -> f32 {
    let mut scores: Vec<f32> = bm25.iter().map(|(_, score)| score.max(0.0)).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    match scores.as_slice() {
        [first, second, ..] if *first > 0.0 => (first - second) / first,
        [first] if *first > 0.0 => 1.0,
        _ => 0.0,
    }
}

/// The parts of a query that must be found as written: quoted strings (`"..."`, `'...'`,
/// `` `...` ``, `“...”`, `「...」`) and identifiers (a word with a digit, an underscore, an inner
/// `.`, `-`, `/`, `:`, `@` or `#`, or a capital after a small letter: `ERR_4242`, `tsconfig.json`,
/// `v2.3.1`, `fooBar`; not a compound word of letters, `command-line`, `import/export`: see
/// `is_compound_word`). An experience that contains them is what such a query asks for, whatever
/// the vectors say: vectors barely see the difference between `ERR_4242` and `ERR_4243`.
/// Identifiers are compared ignoring case, quoted strings exactly (after trimming).
pub fn exact_terms(query: &str) -> Vec<ExactTerm> {
    let mut terms = Vec::new();
    let mut rest = String::with_capacity(query.len());
    let mut chars = query.char_indices().peekable();
    while let Some((start, open)) = chars.next() {
        let close = match open {
            '"' => '"',
            '\'' => '\'',
            '`' => '`',
            '“' => '”',
            '「' => '」',
            '『' => '』',
            _ => {
                rest.push(open);
                continue;
            }
        };
        let inner_start = start + open.len_utf8();
        // An apostrophe inside a word (don't) opens nothing.
        let after_letter = query[..start].chars().next_back().is_some_and(char::is_alphanumeric);
        match query[inner_start..].find(close) {
            Some(len) if !(open == '\'' && after_letter) => {
                let inner = query[inner_start..inner_start + len].trim();
                if inner.chars().filter(|c| c.is_alphanumeric()).count() >= 2 {
                    terms.push(ExactTerm { text: inner.to_owned(), ignore_case: false });
                }
                rest.push(' ');
                while chars.peek().is_some_and(|&(at, _)| at < inner_start + len + close.len_utf8()) {
                    chars.next();
                }
            }
            _ => rest.push(open),
        }
    }
    for word in rest.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ',' | ';'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '<'
                    | '>'
                    | '='
                    | '，'
                    | '。'
                    | '；'
                    | '：'
                    | '、'
                    | '？'
                    | '！'
            )
    }) {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
        if is_identifier(word) && !terms.iter().any(|term: &ExactTerm| term.text.eq_ignore_ascii_case(word)) {
            terms.push(ExactTerm { text: word.to_owned(), ignore_case: true });
        }
    }
    terms
}

/// A string a query asks for as written ([`exact_terms`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactTerm {
    pub text: String,
    /// True for an identifier (compared ignoring case), false for a quoted string.
    pub ignore_case: bool,
}

impl ExactTerm {
    /// Whether `text` contains this term.
    pub fn found_in(&self, text: &str) -> bool {
        if self.ignore_case {
            text.to_lowercase().contains(&self.text.to_lowercase())
        } else {
            text.contains(&self.text)
        }
    }
}

fn is_identifier(word: &str) -> bool {
    if word.chars().count() < 3 || word.chars().any(is_han) || !word.chars().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let chars: Vec<char> = word.chars().collect();
    let has_digit = chars.iter().any(char::is_ascii_digit);
    let has_underscore = chars.contains(&'_');
    let inner_joiner =
        chars.len() > 2 && chars[1..chars.len() - 1].iter().any(|c| matches!(c, '.' | '-' | '/' | ':' | '@' | '#'));
    let camel = chars.windows(2).any(|pair| pair[0].is_lowercase() && pair[1].is_uppercase());
    has_digit || has_underscore || (inner_joiner && !is_compound_word(&chars)) || camel
}

/// Whether `chars` are letters joined by hyphens (`command-line`, `non-interactive`,
/// `Single-cell`) or two words joined by one slash (`import/export`, `Tcl/Tk`): how prose joins
/// words, so such a word names no one thing (issue 25: putting first whatever held
/// `command-line` or `architecture-independent` pushed the answer down). With a digit, an
/// underscore, a dot or a capital after a small letter it is code again (`KH-1042`, `x86-64`,
/// `ssh.config`, `my-fooBar`), and so is a path of more than two parts (`usr/local/bin`).
fn is_compound_word(chars: &[char]) -> bool {
    chars.iter().filter(|&&c| c == '/').count() <= 1
        && chars.split(|&c| c == '-' || c == '/').all(|part| !part.is_empty() && part.iter().all(|c| c.is_alphabetic()))
}

/// Puts first the candidates whose text contains the most of `terms` (all of them before some,
/// some before none), keeping the given order within each group: an exact identifier or quoted
/// string wins over any score. Nothing moves when `terms` is empty or no candidate contains one.
pub fn pin_exact<I: Clone>(
    ranked: Vec<(I, f32)>,
    terms: &[ExactTerm],
    text_of: impl Fn(&I) -> Option<String>,
) -> Vec<(I, f32)> {
    if terms.is_empty() {
        return ranked;
    }
    let mut keyed: Vec<(usize, (I, f32))> = ranked
        .into_iter()
        .map(|(id, score)| {
            let found = text_of(&id).map_or(0, |text| terms.iter().filter(|term| term.found_in(&text)).count());
            (found, (id, score))
        })
        .collect();
    // Stable: equal counts keep the fused order.
    keyed.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    keyed.into_iter().map(|(_, hit)| hit).collect()
}

/// Whether `c` is a Han character (CJK Unified Ideographs, extensions A to H, compatibility
/// ideographs): the characters of Chinese text, one token each in BERT-style tokenizers.
pub fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2A6DF | 0x2A700..=0x2EBEF
        | 0x2F800..=0x2FA1F | 0x30000..=0x323AF)
}

/// The share of Han characters among the letters and digits of `text`, in 0..=1 (0 when it
/// has none). Spaces, punctuation and symbols do not count.
pub fn han_share(text: &str) -> f32 {
    let (n_han, n_alphanumeric) = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .fold((0usize, 0usize), |(n_han, n_all), c| (n_han + usize::from(is_han(c)), n_all + 1));
    if n_alphanumeric == 0 { 0.0 } else { n_han as f32 / n_alphanumeric as f32 }
}

/// What a query is written in, as far as choosing fusion weights is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryScript {
    /// Fewer than [`QueryScript::MIXED_FROM`] of its letters are Han (English, identifiers,
    /// other alphabets, or no letters at all).
    NonHan,
    /// Chinese and other letters, neither clearly dominating.
    Mixed,
    /// More than [`QueryScript::HAN_FROM`] of its letters are Han.
    Han,
}

impl QueryScript {
    pub const MIXED_FROM: f32 = 0.2;
    pub const HAN_FROM: f32 = 0.8;

    /// Classifies `query` by its [`han_share`].
    pub fn detect(query: &str) -> QueryScript {
        let share = han_share(query);
        if share > QueryScript::HAN_FROM {
            QueryScript::Han
        } else if share >= QueryScript::MIXED_FROM {
            QueryScript::Mixed
        } else {
            QueryScript::NonHan
        }
    }
}

#[cfg(test)]
mod tests;
