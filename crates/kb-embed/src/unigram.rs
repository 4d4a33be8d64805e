//! [`CompactUnigram`]: a SentencePiece Unigram tokenizer model that gives the same tokens as
//! `tokenizers`' own `Unigram` in a few megabytes instead of a few hundred.
//!
//! `tokenizers` keeps a Unigram vocabulary in a byte trie whose every node owns a hash map: for
//! multilingual-e5-small's 250,002 pieces that is 281 MiB of heap (measured by
//! `examples/model_memory.rs`), more than the int8 model itself. Here the pieces live in one
//! string, sorted once; a common-prefix search narrows a range of that order byte by byte (two
//! binary searches per byte), which is what the trie walk did. The Viterbi search over those
//! prefixes, the unknown-character rule and the fusing of unknown runs follow `tokenizers`'
//! `Unigram::encode_optimized` exactly, ties included, so that vectors stored with one are
//! valid with the other; `tests/compact_unigram.rs` checks that token for token on every text
//! of the project's data sets.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::{Model, Token};

/// What an unknown character costs below the least likely piece (`tokenizers`' `K_UNK_PENALTY`).
const UNKNOWN_PENALTY: f64 = 10.0;

/// A Unigram vocabulary: pieces, their log probabilities, and an order to search them by.
#[derive(Debug, Clone)]
pub struct CompactUnigram {
    /// Every piece, one after the other.
    text: Box<str>,
    /// Piece `id` is `text[starts[id]..starts[id + 1]]`.
    starts: Box<[u32]>,
    scores: Box<[f64]>,
    /// Ids in the byte order of their pieces; of equal pieces the greatest id comes first (it is
    /// the one `tokenizers`' map keeps).
    sorted: Box<[u32]>,
    unk_id: Option<u32>,
    min_score: f64,
}

/// The `model` object of a `tokenizer.json` whose `type` is `Unigram`.
#[derive(Deserialize)]
struct UnigramJson {
    #[serde(default)]
    unk_id: Option<usize>,
    vocab: Vec<(String, f64)>,
    #[serde(default)]
    byte_fallback: bool,
}

impl<'de> Deserialize<'de> for CompactUnigram {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = UnigramJson::deserialize(deserializer)?;
        if json.byte_fallback {
            // Not used by any model KnowHub loads; `tokenizers`' own model handles it.
            return Err(serde::de::Error::custom("byte_fallback Unigram models are not supported by CompactUnigram"));
        }
        CompactUnigram::new(json.vocab, json.unk_id).map_err(serde::de::Error::custom)
    }
}

impl CompactUnigram {
    /// The model of `vocab` (piece, log probability), `unk_id` naming the unknown piece.
    pub fn new(vocab: Vec<(String, f64)>, unk_id: Option<usize>) -> Result<CompactUnigram, String> {
        if vocab.is_empty() {
            return Err("the Unigram vocabulary is empty".to_owned());
        }
        if vocab.len() >= u32::MAX as usize {
            return Err(format!("the Unigram vocabulary has {} pieces, too many", vocab.len()));
        }
        if let Some(unk_id) = unk_id.filter(|&unk_id| unk_id >= vocab.len()) {
            return Err(format!("unk_id {unk_id} is not in the vocabulary of {} pieces", vocab.len()));
        }
        let total: usize = vocab.iter().map(|(piece, _)| piece.len()).sum();
        let total = u32::try_from(total).map_err(|_| "the Unigram vocabulary is over 4 GiB".to_owned())?;
        let mut text = String::with_capacity(total as usize);
        let mut starts = Vec::with_capacity(vocab.len() + 1);
        let mut scores = Vec::with_capacity(vocab.len());
        let mut min_score = f64::INFINITY;
        for (piece, score) in &vocab {
            starts.push(text.len() as u32);
            text.push_str(piece);
            scores.push(*score);
            min_score = min_score.min(*score);
        }
        starts.push(text.len() as u32);
        drop(vocab);
        let mut model = CompactUnigram {
            text: text.into_boxed_str(),
            starts: starts.into_boxed_slice(),
            scores: scores.into_boxed_slice(),
            sorted: Box::default(),
            unk_id: unk_id.map(|id| id as u32),
            min_score,
        };
        let mut sorted: Vec<u32> = (0..model.scores.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| model.piece(a).as_bytes().cmp(model.piece(b).as_bytes()).then(b.cmp(&a)));
        model.sorted = sorted.into_boxed_slice();
        Ok(model)
    }

    fn piece(&self, id: u32) -> &str {
        &self.text[self.starts[id as usize] as usize..self.starts[id as usize + 1] as usize]
    }

    /// The id of `piece`, if it is one (the greatest id of equal pieces).
    fn id_of(&self, piece: &str) -> Option<u32> {
        let at = self.sorted.partition_point(|&id| self.piece(id).as_bytes() < piece.as_bytes());
        self.sorted.get(at).copied().filter(|&id| self.piece(id) == piece)
    }

    /// Calls `found(id, length)` for every piece that `bytes` starts with, shortest first: the
    /// walk of a trie, over the sorted order.
    fn prefixes_of(&self, bytes: &[u8], mut found: impl FnMut(u32, usize)) {
        let (mut low, mut high) = (0, self.sorted.len());
        for (depth, &byte) in bytes.iter().enumerate() {
            // Every piece in low..high starts with bytes[..depth]; the one equal to it sorts first.
            let range = &self.sorted[low..high];
            let byte_at = |id: &u32| self.piece(*id).as_bytes().get(depth).copied();
            let first = range.partition_point(|id| byte_at(id) < Some(byte));
            let end = range.partition_point(|id| byte_at(id) <= Some(byte));
            if first == end {
                return;
            }
            (low, high) = (low + first, low + end);
            let shortest = self.sorted[low];
            if self.piece(shortest).len() == depth + 1 {
                found(shortest, depth + 1);
            }
        }
    }

    /// The most likely segmentation of `sentence`, as byte ranges and ids (`None`: unknown),
    /// unknown runs fused: `tokenizers`' `encode_optimized`.
    fn segment(&self, sentence: &str) -> Vec<(usize, usize, Option<u32>)> {
        #[derive(Clone, Copy)]
        struct Best {
            id: Option<u32>,
            score: f64,
            starts_at: Option<usize>,
        }
        let size = sentence.len();
        let unknown_score = self.min_score - UNKNOWN_PENALTY;
        let mut best = vec![Best { id: None, score: 0.0, starts_at: None }; size + 1];
        let mut starts_at = 0;
        while starts_at < size {
            let till_here = best[starts_at].score;
            let char_len = sentence[starts_at..].chars().next().map_or(1, char::len_utf8);
            let mut has_single = false;
            self.prefixes_of(&sentence.as_bytes()[starts_at..], |id, length| {
                let target = &mut best[starts_at + length];
                let candidate = self.scores[id as usize] + till_here;
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Best { id: Some(id), score: candidate, starts_at: Some(starts_at) };
                }
                has_single |= length == char_len;
            });
            if !has_single {
                let target = &mut best[starts_at + char_len];
                let candidate = unknown_score + till_here;
                if target.starts_at.is_none() || candidate > target.score {
                    *target = Best { id: self.unk_id, score: candidate, starts_at: Some(starts_at) };
                }
            }
            starts_at += char_len;
        }
        let mut pieces = Vec::new();
        let mut ends_at = size;
        while ends_at > 0 {
            let node = best[ends_at];
            let starts_at = node.starts_at.unwrap_or(0);
            let unknown = node.id.is_none() || node.id == self.unk_id;
            match pieces.last_mut() {
                // Unknown runs are one token (the map is read again below, as `tokenizers` does).
                Some((start, _, None)) if unknown => *start = starts_at,
                _ => pieces.push((starts_at, ends_at, if unknown { None } else { node.id })),
            }
            ends_at = starts_at;
        }
        pieces.reverse();
        pieces
    }
}

impl Model for CompactUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sentence: &str) -> tokenizers::Result<Vec<Token>> {
        if sentence.is_empty() {
            return Ok(Vec::new());
        }
        self.segment(sentence)
            .into_iter()
            .map(|(start, end, id)| {
                let value = &sentence[start..end];
                // A fused unknown run is looked up as a whole, like `tokenizers` does.
                let id = id.or_else(|| self.id_of(value)).or(self.unk_id).ok_or("the Unigram model has no unk_id")?;
                Ok(Token::new(id, value.to_owned(), (start, end)))
            })
            .collect()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.id_of(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        ((id as usize) < self.scores.len()).then(|| self.piece(id).to_owned())
    }

    fn get_vocab(&self) -> HashMap<String, u32> {
        (0..self.scores.len() as u32).map(|id| (self.piece(id).to_owned(), id)).collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.scores.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("CompactUnigram is read-only: save the tokenizer.json it was read from".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> CompactUnigram {
        let vocab = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5), ("abc", -10.0), ("c", -4.0), ("好", -3.0)];
        CompactUnigram::new(vocab.iter().map(|(piece, score)| (piece.to_string(), *score)).collect(), Some(0)).unwrap()
    }

    fn tokens(model: &CompactUnigram, text: &str) -> Vec<(String, u32)> {
        model.tokenize(text).unwrap().into_iter().map(|token| (token.value, token.id)).collect()
    }

    #[test]
    fn prefixes_are_found_shortest_first() {
        let model = model();
        let mut found = Vec::new();
        model.prefixes_of(b"abcd", |id, length| found.push((model.piece(id).to_owned(), length)));
        assert_eq!(found, [("a".to_owned(), 1), ("ab".to_owned(), 2), ("abc".to_owned(), 3)]);
        let mut none = Vec::new();
        model.prefixes_of(b"zz", |id, _| none.push(id));
        assert!(none.is_empty());
    }

    #[test]
    fn the_most_likely_segmentation_wins_and_unknown_runs_fuse() {
        let model = model();
        // "ab" (-2.5) beats "a" + "b" (-3.0); "abc" (-10) loses to "ab" + "c" (-6.5).
        assert_eq!(tokens(&model, "abc"), [("ab".to_owned(), 3), ("c".to_owned(), 5)]);
        assert_eq!(tokens(&model, "xy好"), [("xy".to_owned(), 0), ("好".to_owned(), 6)]);
        assert_eq!(model.token_to_id("好"), Some(6));
        assert_eq!(model.token_to_id("zz"), None);
        assert_eq!(model.id_to_token(3).as_deref(), Some("ab"));
        assert_eq!(model.get_vocab_size(), 7);
    }

    #[test]
    fn bad_vocabularies_are_refused_with_a_reason() {
        assert!(CompactUnigram::new(Vec::new(), None).unwrap_err().contains("empty"));
        assert!(CompactUnigram::new(vec![("a".into(), 0.0)], Some(3)).unwrap_err().contains("unk_id 3"));
    }
}
