//! The text analyzer shared by indexing and querying: jieba for Han text, identifier-aware
//! splitting for everything else, then lowercasing and English stemming of plain words.
//!
//! The same analyzer runs on documents and on queries, so whatever it does to a word it does on
//! both sides; the rules below only decide which extra tokens exist to be matched.
//!
//! - Han runs go to jieba in search mode without HMM (`cut_for_search`): `中华人民共和国` yields the
//!   whole word and its dictionary sub-words, so both a long and a short query word match.
//!   Adjacent characters that jieba leaves single also yield their bigram (`字`, `字段`, `段`).
//! - Other runs are split into chunks at whitespace and punctuation, except the joiners
//!   `_ - . / : @ + #`, which hold identifiers together. A chunk is emitted whole (`tsconfig.json`,
//!   `--run`, `snake_case`) and, when it has parts, also as its parts (`tsconfig`, `json`; `run`;
//!   `snake`, `case`), and camelCase parts (`camel`, `case`).
//! - Tokens are lowercased; only tokens made of ASCII letters alone are stemmed, so `running`
//!   matches `run` while `tsconfig.json` or `node_modules` stay exactly as written.
//!
//! Changing anything here changes the terms in the index: bump `SCHEMA_VERSION` so existing
//! indexes are rebuilt from the store.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::LazyLock;

use jieba_rs::Jieba;
use tantivy::tokenizer::{Language, RawTokenizer, Stemmer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer};

/// The name the analyzer is registered under in the index's tokenizer manager.
pub(crate) const ANALYZER_NAME: &str = "kb_mixed";

/// Chunks longer than this (hashes, base64, long URLs) are not emitted whole; their parts still
/// are, when short enough. Long terms are useless for search and bloat the term dictionary.
const MAX_TOKEN_BYTES: usize = 80;

/// Characters that join the parts of an identifier instead of separating words.
const JOINERS: &[char] = &['_', '-', '.', '/', ':', '@', '+', '#'];

/// jieba's default dictionary, zstd-compressed (`data/README.md`): streamed into jieba rather
/// than taken from jieba-rs's `default-dict` feature, which keeps its decompressed 5 MB text in
/// memory for good (measured: 5 MiB of heap and 2 MiB of mapped binary less).
static DICTIONARY: &[u8] = include_bytes!("../data/jieba-dict.txt.zst");

/// Loading the dictionary takes about 100 ms, so it happens once per process.
static JIEBA: LazyLock<Jieba> = LazyLock::new(|| {
    // The dictionary is part of the binary, checked by `the_embedded_dictionary_loads`: failing
    // here is a build defect, not an input the daemon could meet at run time.
    let decoder = zstd::stream::read::Decoder::with_buffer(DICTIONARY).expect("the embedded dictionary is zstd");
    Jieba::with_dict(&mut std::io::BufReader::new(decoder)).expect("the embedded dictionary is jieba's")
});

/// Loads the jieba dictionary now instead of on the first Chinese text, so the first request
/// after start-up is not the slow one.
pub fn warm_up() {
    LazyLock::force(&JIEBA);
}

/// jieba's plain segmentation of `text` (`cut`, with its HMM for words outside the dictionary,
/// as Python's `jieba.cut`), over the dictionary the analyzer uses. Not used for indexing: the
/// words of the plain Okapi BM25 baseline `kb-bench quality` compares the analyzer with.
pub fn jieba_words(text: &str) -> Vec<&str> {
    JIEBA.cut(text, true).into_iter().map(|token| token.word).collect()
}

/// Builds the analyzer used for both indexing and querying.
pub(crate) fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(MixedTokenizer::default()).filter(WordStemmer).build()
}

/// Runs the analyzer over `text` and returns the token texts in order, as they are indexed.
pub fn analyze(text: &str) -> Vec<String> {
    analyze_with_spans(text).into_iter().map(|(token, _)| token).collect()
}

/// Like [`analyze`], with the byte range of `text` each token came from. A token that is part of
/// another (`json` of `tsconfig.json`, `数据` of `数据库`, `字` of the bigram `字段`) has a range
/// inside the other's.
pub(crate) fn analyze_with_spans(text: &str) -> Vec<(String, Range<usize>)> {
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut tokens = Vec::new();
    while let Some(token) = stream.next() {
        tokens.push((token.text.clone(), token.offset_from..token.offset_to));
    }
    tokens
}

/// Function words of English and Chinese: Lucene's English stop set without its negations
/// (`no`, `not`: an experience that something does not work says the opposite), and the
/// commonest Chinese particles and conjunctions. A query leaves them out when it has any other
/// word (see `is_stop_word`): they match nearly every text, so in a small store a document
/// sharing only "for" and "with" with a query was returned as relevant.
const STOP_WORDS: [&str; 49] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "of", "on", "or",
    "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with", "的", "了",
    "是", "在", "和", "与", "及", "或", "也", "就", "都", "而", "被", "把", "吗", "呢", "吧", "啊",
];

/// Words that frame a request rather than say what it is about: question words, pronouns,
/// auxiliaries and politeness ("how do I", "can you please", "怎么", "我"). They are left out of
/// the words a hit must hold to be shown unasked (`index::Evidence`), not out of the search.
const FRAMING_WORDS: [&str; 58] = [
    "how", "what", "why", "when", "where", "which", "who", "do", "does", "did", "done", "i", "me", "my", "we", "us",
    "our", "you", "your", "he", "she", "him", "her", "its", "can", "could", "should", "would", "may", "might",
    "must", "shall", "have", "has", "had", "am", "been", "being", "please", "thanks", "hi", "hello", "so", "just",
    "from", "about", "without", "怎么", "怎样", "如何", "为什么", "什么", "我", "你", "我们", "请", "吗", "哪",
];

/// Whether an analyzed token is a function word or a word that frames a request
/// ([`FRAMING_WORDS`]): no evidence of what a prompt is about.
pub(crate) fn is_framing_word(token: &str) -> bool {
    static ANALYZED: std::sync::LazyLock<std::collections::HashSet<String>> =
        std::sync::LazyLock::new(|| FRAMING_WORDS.iter().flat_map(|word| analyze(word)).collect());
    is_stop_word(token) || ANALYZED.contains(token)
}

/// Whether an analyzed token is a function word (as the analyzer emits it: lowercased, stemmed).
pub(crate) fn is_stop_word(token: &str) -> bool {
    static ANALYZED: std::sync::LazyLock<std::collections::HashSet<String>> =
        std::sync::LazyLock::new(|| STOP_WORDS.iter().flat_map(|word| analyze(word)).collect());
    ANALYZED.contains(token)
}

/// Splits text into Han words (via jieba) and identifier-aware chunks with their parts.
///
/// Tokens are computed eagerly into a buffer that is reused from one text to the next.
#[derive(Clone, Default)]
pub(crate) struct MixedTokenizer {
    sink: TokenSink,
    /// Scratch space for the identifier chunk being read, kept to reuse its allocation.
    chunk: Vec<(usize, char)>,
}

impl Tokenizer for MixedTokenizer {
    type TokenStream<'a> = MixedTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> MixedTokenStream<'a> {
        self.sink.n_used = 0;
        split_mixed(text, &mut self.sink, &mut self.chunk);
        MixedTokenStream { tokens: &mut self.sink.tokens[..self.sink.n_used], n_advanced: 0 }
    }
}

pub(crate) struct MixedTokenStream<'a> {
    tokens: &'a mut [Token],
    n_advanced: usize,
}

impl TokenStream for MixedTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.n_advanced < self.tokens.len() {
            self.n_advanced += 1;
            true
        } else {
            false
        }
    }

    // Tantivy only asks for the token after `advance` returned true, so `n_advanced >= 1` here.
    fn token(&self) -> &Token {
        &self.tokens[self.n_advanced - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.n_advanced - 1]
    }
}

/// What a character does in the splitter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Han,
    Word,
    Joiner,
    Separator,
}

fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3007 | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Maps full-width ASCII forms (`ｖｉｔｅｓｔ`, `１２３`, `：`) to ASCII, as typed by Chinese IMEs.
fn fold_width(c: char) -> char {
    match c as u32 {
        code @ 0xFF01..=0xFF5E => char::from_u32(code - 0xFEE0).unwrap_or(c),
        0x3000 => ' ',
        _ => c,
    }
}

fn classify(c: char) -> CharClass {
    if is_han(c) {
        CharClass::Han
    } else if c.is_alphanumeric() {
        CharClass::Word
    } else if JOINERS.contains(&c) {
        CharClass::Joiner
    } else {
        CharClass::Separator
    }
}

/// The tokens of one text, with consecutive positions and byte offsets into the original text.
///
/// The tokens of earlier texts stay allocated and are overwritten, so indexing many documents
/// does not allocate a string per token.
#[derive(Clone, Default)]
struct TokenSink {
    tokens: Vec<Token>,
    n_used: usize,
}

impl TokenSink {
    /// Starts a new token at `offset_from` and returns its (empty) text to be filled.
    fn start(&mut self, offset_from: usize, offset_to: usize) -> &mut String {
        if self.n_used == self.tokens.len() {
            self.tokens.push(Token::default());
        }
        let token = &mut self.tokens[self.n_used];
        token.offset_from = offset_from;
        token.offset_to = offset_to;
        token.position = self.n_used;
        token.position_length = 1;
        token.text.clear();
        self.n_used += 1;
        &mut token.text
    }
}

fn split_mixed(text: &str, sink: &mut TokenSink, chunk: &mut Vec<(usize, char)>) {
    // The current run: Han text, or an identifier chunk as (original byte offset, folded char).
    let mut han_start: Option<usize> = None;
    chunk.clear();
    for (offset, raw) in text.char_indices() {
        let folded = fold_width(raw);
        match classify(folded) {
            CharClass::Han => {
                if !chunk.is_empty() {
                    emit_chunk(chunk, offset, sink);
                    chunk.clear();
                }
                han_start.get_or_insert(offset);
            }
            CharClass::Word | CharClass::Joiner => {
                if let Some(start) = han_start.take() {
                    emit_han(text, start, offset, sink);
                }
                chunk.push((offset, folded));
            }
            CharClass::Separator => {
                if let Some(start) = han_start.take() {
                    emit_han(text, start, offset, sink);
                }
                if !chunk.is_empty() {
                    emit_chunk(chunk, offset, sink);
                    chunk.clear();
                }
            }
        }
    }
    if let Some(start) = han_start {
        emit_han(text, start, text.len(), sink);
    }
    if !chunk.is_empty() {
        emit_chunk(chunk, text.len(), sink);
    }
}

fn emit_han(text: &str, start: usize, end: usize, sink: &mut TokenSink) {
    let run = &text[start..end];
    // Search mode emits long words and their dictionary sub-words. HMM is off: it guesses words
    // for text outside the dictionary, and a guess made in a document's context need not match
    // the one made in a query's; unknown text as single characters matches consistently. This
    // measured better on CMRC (Recall@5 0.942 vs 0.936 on the chunked set) and is faster.
    //
    // Adjacent single characters also yield their bigram. Jieba cuts a short query differently
    // from the same characters in a document's context: a lone `字段` comes out as `字`, `段`,
    // while `字段名` in a document is indexed as `字段`, `字段名`, so without the bigram the query
    // finds nothing. Words missing from the dictionary (common in technical jargon) are helped
    // the same way. Neutral on CMRC (Recall@5 0.941 vs 0.942 on the chunked set).
    let mut prev_single: Option<(usize, usize)> = None;
    for word in JIEBA.cut_for_search(run, false) {
        let is_single = word.end - word.start == 1;
        if let Some((prev_start, prev_end)) = prev_single
            && is_single
            && prev_end == word.byte_start
        {
            sink.start(start + prev_start, start + word.byte_end).push_str(&run[prev_start..word.byte_end]);
        }
        prev_single = is_single.then_some((word.byte_start, word.byte_end));
        sink.start(start + word.byte_start, start + word.byte_end).push_str(word.word);
    }
}

/// Emits one identifier chunk: the whole (trimmed) chunk, then its parts and camelCase parts.
/// `end` is the byte offset just past the chunk's last character.
fn emit_chunk(chunk: &[(usize, char)], end: usize, sink: &mut TokenSink) {
    let byte_at = |idx: usize| chunk.get(idx).map_or(end, |&(offset, _)| offset);
    // Emits chunk[from..to] lowercased, unless it is too long to be a useful term.
    let mut emit = |from: usize, to: usize| {
        if byte_at(to) - byte_at(from) <= MAX_TOKEN_BYTES {
            let text = sink.start(byte_at(from), byte_at(to));
            for &(_, c) in &chunk[from..to] {
                if c.is_ascii() {
                    text.push(c.to_ascii_lowercase());
                } else {
                    text.extend(c.to_lowercase());
                }
            }
        }
    };

    // Leading `-` (`--run`), one `.` (`.env`) and `@` (`@types/node`) belong to identifiers;
    // trailing `+` and `#` do too (`c++`, `c#`). Other joiners at the edges are punctuation,
    // like the dots of an ellipsis (`...and`) or of `./configure`.
    let mut start = 0;
    loop {
        let next_is_word = chunk.get(start + 1).is_some_and(|&(_, c)| c.is_alphanumeric());
        let after_dot = start > 0 && chunk[start - 1].1 == '.';
        match chunk.get(start).map(|&(_, c)| c) {
            Some('_' | '/' | ':' | '+' | '#') => start += 1,
            Some('.') if !next_is_word || after_dot => start += 1,
            _ => break,
        }
    }
    let mut stop = chunk.len();
    while stop > start && matches!(chunk[stop - 1].1, '_' | '-' | '.' | '/' | ':' | '@') {
        stop -= 1;
    }
    let is_word = |&(_, c): &(usize, char)| c.is_alphanumeric();
    if !chunk[start..stop].iter().any(is_word) {
        return;
    }
    emit(start, stop);

    // Segments are the maximal runs of word characters between joiners.
    let mut segments: Vec<(usize, usize)> = Vec::new();
    let mut idx = start;
    while idx < stop {
        if is_word(&chunk[idx]) {
            let seg_start = idx;
            while idx < stop && is_word(&chunk[idx]) {
                idx += 1;
            }
            segments.push((seg_start, idx));
        } else {
            idx += 1;
        }
    }
    let whole_is_one_segment = segments.len() == 1 && segments[0] == (start, stop);
    for &(seg_start, seg_stop) in &segments {
        if !whole_is_one_segment {
            emit(seg_start, seg_stop);
        }
        let camel_bounds = camel_boundaries(&chunk[seg_start..seg_stop]);
        if camel_bounds.len() > 2 {
            for pair in camel_bounds.windows(2) {
                emit(seg_start + pair[0], seg_start + pair[1]);
            }
        }
    }
}

/// Part boundaries of a camelCase word, including 0 and the length: `camelCase` → [0, 5, 9],
/// `HTTPServer` → [0, 4, 10], `utf8Encode` → [0, 4, 10].
fn camel_boundaries(segment: &[(usize, char)]) -> Vec<usize> {
    let mut bounds = vec![0];
    for idx in 1..segment.len() {
        let prev = segment[idx - 1].1;
        let cur = segment[idx].1;
        let lower_to_upper = (prev.is_lowercase() || prev.is_ascii_digit()) && cur.is_uppercase();
        let acronym_end = prev.is_uppercase()
            && cur.is_uppercase()
            && segment.get(idx + 1).is_some_and(|&(_, next)| next.is_lowercase());
        if lower_to_upper || acronym_end {
            bounds.push(idx);
        }
    }
    bounds.push(segment.len());
    bounds
}

/// Stems plain English words only: a token of ASCII letters goes through tantivy's English
/// stemmer, anything else (identifiers, numbers, Chinese) is left as it is.
#[derive(Clone, Copy)]
pub(crate) struct WordStemmer;

/// Tantivy's stemmer applied to a single token: the raw tokenizer yields the input unchanged.
type SingleWordStemmer = <Stemmer as TokenFilter>::Tokenizer<RawTokenizer>;

impl TokenFilter for WordStemmer {
    type Tokenizer<T: Tokenizer> = WordStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> WordStemmerFilter<T> {
        WordStemmerFilter {
            inner,
            stemmer: Stemmer::new(Language::English).transform(RawTokenizer::default()),
            cache: HashMap::new(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct WordStemmerFilter<T> {
    inner: T,
    stemmer: SingleWordStemmer,
    /// Word → stem. The same few thousand English words recur across documents, and the
    /// stemmer is a visible share of indexing time without this.
    cache: HashMap<String, String>,
}

/// The stem cache is emptied when it grows past this many words, bounding its memory.
const STEM_CACHE_CAPACITY: usize = 4096;

impl<T: Tokenizer> Tokenizer for WordStemmerFilter<T> {
    type TokenStream<'a> = WordStemmerStream<'a, T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        WordStemmerStream { tail: self.inner.token_stream(text), stemmer: &mut self.stemmer, cache: &mut self.cache }
    }
}

pub(crate) struct WordStemmerStream<'a, S> {
    tail: S,
    stemmer: &'a mut SingleWordStemmer,
    cache: &'a mut HashMap<String, String>,
}

impl<S: TokenStream> TokenStream for WordStemmerStream<'_, S> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        if token.text.len() > 2 && token.text.bytes().all(|b| b.is_ascii_lowercase()) {
            if let Some(stem) = self.cache.get(&token.text) {
                token.text.clear();
                token.text.push_str(stem);
            } else {
                let mut stemmed = self.stemmer.token_stream(&token.text);
                if stemmed.advance() {
                    let stem = std::mem::take(&mut stemmed.token_mut().text);
                    drop(stemmed);
                    if self.cache.len() >= STEM_CACHE_CAPACITY {
                        self.cache.clear();
                    }
                    let word = std::mem::replace(&mut token.text, stem.clone());
                    self.cache.insert(word, stem);
                }
            }
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::{JIEBA, analyze};

    #[test]
    fn the_embedded_dictionary_loads() {
        // Words of the dictionary, from its first line to its last, and one that is not.
        for word in ["1号店", "数据库", "迁移", "龢"] {
            assert!(JIEBA.has_word(word), "{word}");
        }
        assert!(!JIEBA.has_word("kb-bench"));
        let words: Vec<&str> = JIEBA.cut("数据库迁移失败", true).iter().map(|token| token.word).collect();
        assert_eq!(words, ["数据库", "迁移", "失败"]);
    }

    /// Checks the analyzer's output token by token, so a change in tokenization shows as a
    /// readable diff of the tokens.
    fn check(cases: &[(&str, &[&str])]) {
        for (input, expected) in cases {
            assert_eq!(analyze(input), *expected, "tokens of {input:?}");
        }
    }

    #[test]
    fn identifiers_are_kept_whole_and_split_into_parts() {
        check(&[
            ("tsconfig.json", &["tsconfig.json", "tsconfig", "json"]),
            ("--run", &["--run", "run"]),
            ("snake_case", &["snake_case", "snake", "case"]),
            // The whole camelCase word is plain letters, so it is stemmed like any word.
            ("camelCase", &["camelcas", "camel", "case"]),
            ("vitest", &["vitest"]),
            ("HTTPServer", &["httpserver", "http", "server"]),
            ("utf8Encode", &["utf8encode", "utf8", "encod"]),
            ("node_modules/.bin/tsc", &["node_modules/.bin/tsc", "node", "modul", "bin", "tsc"]),
            ("std::sync::Mutex", &["std::sync::mutex", "std", "sync", "mutex"]),
            ("C++ C#", &["c++", "c", "c#", "c"]),
            (".env @types/node", &[".env", "env", "@types/node", "type", "node"]),
            ("v1.2.3", &["v1.2.3", "v1", "2", "3"]),
        ]);
    }

    #[test]
    fn punctuation_at_the_edges_of_a_chunk_is_not_part_of_it() {
        check(&[
            ("Use tsconfig.json.", &["use", "tsconfig.json", "tsconfig", "json"]),
            ("(see: README.md)", &["see", "readme.md", "readm", "md"]),
            ("...and ./configure", &["and", "configur"]),
            ("-- -> --- ... ::", &[]),
        ]);
    }

    #[test]
    fn chinese_is_segmented_by_jieba_in_search_mode() {
        check(&[
            ("中华人民共和国", &["中华", "华人", "人民", "共和", "共和国", "中华人民共和国"]),
            ("避免监听模式", &["避免", "监听", "模式"]),
            // Jieba cuts a lone `字段` into single characters; their bigram is added.
            ("字段", &["字", "字段", "段"]),
        ]);
    }

    #[test]
    fn mixed_text_yields_chinese_words_and_identifiers() {
        check(&[
            ("用vitest --run避免watch模式", &["用", "vitest", "--run", "run", "避免", "watch", "模式"]),
            ("配置tsconfig.json的paths", &["配置", "tsconfig.json", "tsconfig", "json", "的", "path"]),
        ]);
    }

    #[test]
    fn english_is_lowercased_and_stemmed() {
        check(&[("Running runs RUN", &["run", "run", "run"]), ("The tests failed", &["the", "test", "fail"])]);
    }

    #[test]
    fn full_width_forms_match_ascii() {
        check(&[("ｖｉｔｅｓｔ　－－ｒｕｎ", &["vitest", "--run", "run"])]);
    }

    #[test]
    fn nothing_to_search_yields_no_tokens() {
        check(&[("", &[]), ("   \t\n", &[]), (",.!?;()[]{}\"'", &[]), ("，。？！、", &[])]);
    }

    #[test]
    fn query_syntax_is_just_text() {
        check(&[("\"foo\" AND bar: (baz]", &["foo", "and", "bar", "baz"])]);
    }

    #[test]
    fn overlong_chunks_keep_only_their_parts() {
        let hash = "a".repeat(100);
        let input = format!("{hash}.txt");
        assert_eq!(analyze(&input), vec!["txt".to_owned()]);
    }
}
