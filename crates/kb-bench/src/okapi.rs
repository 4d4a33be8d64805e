//! A plain BM25 baseline for `quality`: Okapi BM25 (k1 1.2, b 0.75, Lucene's idf) over jieba's
//! plain words, lowercased, punctuation dropped, nothing else: no search-mode sub-words, no
//! bigrams, no stemming, no stop words. What KnowHub's analyzer adds must beat this on long
//! Chinese text (issue 13 measured the daemon below it on held-out paragraphs). In this process.

use std::collections::HashMap;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// An inverted index of documents numbered in the order they were given.
pub struct OkapiIndex {
    /// Per word: (document, occurrences), documents in order.
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<u32>,
    average_length: f64,
}

impl OkapiIndex {
    pub fn build<'a>(documents: impl IntoIterator<Item = &'a str>) -> OkapiIndex {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (doc, text) in documents.into_iter().enumerate() {
            let words = words(text);
            lengths.push(words.len() as u32);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for word in words {
                *counts.entry(word).or_default() += 1;
            }
            for (word, count) in counts {
                postings.entry(word).or_default().push((doc as u32, count));
            }
        }
        let average_length = lengths.iter().map(|&length| f64::from(length)).sum::<f64>() / lengths.len().max(1) as f64;
        OkapiIndex { postings, lengths, average_length }
    }

    /// The `limit` best documents for `query` (each distinct word counted once), best first,
    /// ties to the earlier document.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut query_words = words(query);
        query_words.sort_unstable();
        query_words.dedup();
        let n_docs = self.lengths.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for word in &query_words {
            let Some(postings) = self.postings.get(word) else { continue };
            let doc_freq = postings.len() as f64;
            let idf = (1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5)).ln();
            for &(doc, count) in postings {
                let count = f64::from(count);
                let norm = 1.0 - B + B * f64::from(self.lengths[doc as usize]) / self.average_length;
                *scores.entry(doc).or_default() += idf * count * (K1 + 1.0) / (count + K1 * norm);
            }
        }
        let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
        ranked.sort_unstable_by(|one, other| other.1.total_cmp(&one.1).then(one.0.cmp(&other.0)));
        ranked.into_iter().take(limit).map(|(doc, _)| doc as usize).collect()
    }
}

/// jieba's plain words of `text` that have a letter or digit, lowercased.
fn words(text: &str) -> Vec<String> {
    kb_index::jieba_words(text)
        .into_iter()
        .filter(|word| word.chars().any(char::is_alphanumeric))
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rarer_word_and_the_shorter_document_win() {
        let index = OkapiIndex::build([
            "数据库连接池耗尽了，重启服务后恢复",
            "数据库 索引 重建 数据库 数据库 很慢 很慢 很慢 很慢 很慢 很慢",
            "Docker build cache invalidated by COPY",
        ]);
        assert_eq!(index.search("连接池", 3), [0]);
        assert_eq!(index.search("数据库", 3)[0], 1, "three occurrences outweigh the length");
        assert_eq!(index.search("docker CACHE", 3), [2]);
        assert!(index.search("，。", 3).is_empty());
    }
}
