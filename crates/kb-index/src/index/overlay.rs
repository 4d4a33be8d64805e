//! Experiences staged since the index's last commit: searchable at once from memory, scored with
//! the statistics of the committed index and the overlay together, until the next commit takes
//! them into tantivy's segments.
//!
//! Why: a tantivy commit has a fixed cost (a new segment with its term table, its files, the
//! merges it sets off) that was paid once per group commit of submits; measured with 50
//! submitting clients it was ~48 ms for ~25 documents against 3–4 ms for SQLite, and it bounded
//! submit latency (issue 25). Staged documents are also in tantivy's writer, so a commit takes
//! them all and the overlay starts empty again; only the commit's timing changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use kb_core::Status;
use tantivy::Score;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;

use super::writer::IndexDoc;
use crate::analyzer::analyze_with_spans;

/// Tantivy skips tokens longer than this when indexing (`MAX_TOKEN_LEN`), so they count for
/// nothing here either.
const MAX_TOKEN_BYTES: usize = u16::MAX as usize - 5;

/// The text fields, as `Fields::text_fields_with_boosts` orders them: `text` (task, resource
/// and result) and `content`.
pub(super) const TEXT_FIELDS: usize = 2;

/// One text field of a staged document: how often each term occurs and how many tokens it has
/// (its fieldnorm, before tantivy's quantization).
#[derive(Debug, Default)]
pub(super) struct FieldTerms {
    counts: HashMap<String, u32>,
    num_tokens: u32,
}

impl FieldTerms {
    fn add(&mut self, text: &str) {
        for (term, _) in analyze_with_spans(text) {
            if term.len() > MAX_TOKEN_BYTES {
                continue;
            }
            self.num_tokens = self.num_tokens.saturating_add(1);
            *self.counts.entry(term).or_default() += 1;
        }
    }
}

/// A staged, active experience as the index would hold it.
#[derive(Debug)]
pub(super) struct StagedDoc {
    pub(super) id: String,
    score: u8,
    agent_id: Option<String>,
    fields: [FieldTerms; TEXT_FIELDS],
}

impl StagedDoc {
    fn of(doc: &IndexDoc<'_>) -> StagedDoc {
        let mut text = FieldTerms::default();
        for value in [doc.task, doc.resource, doc.result] {
            text.add(value);
        }
        let mut content = FieldTerms::default();
        if let Some(body) = doc.content {
            content.add(body);
        }
        StagedDoc {
            id: doc.id.to_owned(),
            score: doc.score,
            agent_id: doc.agent_id.map(str::to_owned),
            fields: [text, content],
        }
    }

    /// Whether the document has `term` in any text field.
    pub(super) fn has(&self, term: &str) -> bool {
        self.fields.iter().any(|field| field.counts.contains_key(term))
    }

    /// Whether the document passes a search's rating and agent filters.
    pub(super) fn passes(&self, min_score: u8, agent_id: Option<&str>) -> bool {
        (min_score <= 1 || self.score >= min_score)
            && agent_id.is_none_or(|agent| self.agent_id.as_deref() == Some(agent))
    }

    /// The document's BM25 score for `terms`, as tantivy's query over the text fields would
    /// give it: per term and field, the field's boost times BM25 of the term's count and the
    /// field's quantized length. `weights[term][field]` are the terms' weights.
    pub(super) fn score(
        &self,
        terms: &[(String, u64)],
        weights: &[[Bm25Weight; TEXT_FIELDS]],
        boosts: &[f32; TEXT_FIELDS],
    ) -> Score {
        let mut score = 0.0;
        for ((term, _), weights) in terms.iter().zip(weights) {
            for ((field, weight), boost) in self.fields.iter().zip(weights).zip(boosts) {
                if let Some(&count) = field.counts.get(term) {
                    score += boost * weight.score(FieldNormReader::fieldnorm_to_id(field.num_tokens), count);
                }
            }
        }
        score
    }
}

/// The staged documents and what they change of the committed index.
#[derive(Debug, Clone, Default)]
pub(super) struct Overlay {
    /// Active staged documents by staging order (the order breaks ties between equal scores).
    docs: BTreeMap<u64, Arc<StagedDoc>>,
    by_id: HashMap<String, u64>,
    next_key: u64,
    /// Ids whose committed version, if any, is no longer what the store holds (replaced by a
    /// staged document, made inactive or deleted): searches never return it.
    shadowed: HashSet<String>,
    /// For BM25's statistics, like tantivy's (which count a replaced document until a merge
    /// drops it): every document staged, replaced ones included; per text field, those that
    /// have each term, and their tokens in all. So a commit changes no score.
    counted_docs: u64,
    doc_freqs: [HashMap<String, u64>; TEXT_FIELDS],
    num_tokens: [u64; TEXT_FIELDS],
}

impl Overlay {
    /// Stages the changes of one write, in order: `deleted` ids go, `created` documents (known
    /// not to be committed) and `updated` ones (replacing any committed or staged version; an
    /// inactive one removes it) come. Returns the ids newly shadowed.
    pub(super) fn stage(
        &mut self,
        deleted: &[&str],
        created: &[IndexDoc<'_>],
        updated: &[IndexDoc<'_>],
    ) -> Vec<String> {
        let mut newly_shadowed = Vec::new();
        let mut shadow = |overlay: &mut Overlay, id: &str| {
            overlay.remove(id);
            if overlay.shadowed.insert(id.to_owned()) {
                newly_shadowed.push(id.to_owned());
            }
        };
        for id in deleted {
            shadow(self, id);
        }
        for doc in updated {
            shadow(self, doc.id);
            if doc.status == Status::Active {
                self.insert(StagedDoc::of(doc));
            }
        }
        for doc in created.iter().filter(|doc| doc.status == Status::Active) {
            self.remove(doc.id);
            self.insert(StagedDoc::of(doc));
        }
        newly_shadowed
    }

    fn insert(&mut self, doc: StagedDoc) {
        for ((field, doc_freqs), num_tokens) in doc.fields.iter().zip(&mut self.doc_freqs).zip(&mut self.num_tokens) {
            for term in field.counts.keys() {
                *doc_freqs.entry(term.clone()).or_default() += 1;
            }
            *num_tokens += u64::from(field.num_tokens);
        }
        self.counted_docs += 1;
        let key = self.next_key;
        self.next_key += 1;
        self.by_id.insert(doc.id.clone(), key);
        self.docs.insert(key, Arc::new(doc));
    }

    /// Drops a staged document from searches; it still counts in the statistics (see
    /// `counted_docs`).
    fn remove(&mut self, id: &str) {
        if let Some(key) = self.by_id.remove(id) {
            self.docs.remove(&key);
        }
    }

    /// The number of staged (active) documents.
    pub(super) fn n_docs(&self) -> u64 {
        self.docs.len() as u64
    }

    pub(super) fn changes_nothing(&self) -> bool {
        self.docs.is_empty() && self.shadowed.is_empty()
    }

    /// The ids whose committed versions searches must not return.
    pub(super) fn shadowed(&self) -> impl Iterator<Item = &str> {
        self.shadowed.iter().map(String::as_str)
    }

    /// The documents BM25's statistics count: every one staged, replaced ones included.
    pub(super) fn counted_docs(&self) -> u64 {
        self.counted_docs
    }

    /// The staged documents having `term` in text field `field_idx`, replaced ones included.
    pub(super) fn doc_freq(&self, field_idx: usize, term: &str) -> u64 {
        self.doc_freqs[field_idx].get(term).copied().unwrap_or(0)
    }

    /// The tokens of text field `field_idx` over the staged documents, replaced ones included.
    pub(super) fn num_tokens(&self, field_idx: usize) -> u64 {
        self.num_tokens[field_idx]
    }

    /// The staged documents with their keys, in staging order.
    pub(super) fn docs(&self) -> impl Iterator<Item = (u64, &StagedDoc)> {
        self.docs.iter().map(|(key, doc)| (*key, doc.as_ref()))
    }

    /// The staged document with this key.
    pub(super) fn doc(&self, key: u64) -> Option<&StagedDoc> {
        self.docs.get(&key).map(Arc::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc<'a>(id: &'a str, task: &'a str, status: Status) -> IndexDoc<'a> {
        IndexDoc { id, task, resource: "r", result: "ok", content: None, score: 3, status, agent_id: None }
    }

    #[test]
    fn statistics_count_every_version_as_tantivy_does_until_a_merge() {
        let mut overlay = Overlay::default();
        assert!(overlay.stage(&[], &[doc("a", "vitest watch", Status::Active)], &[]).is_empty());
        assert_eq!(overlay.doc_freq(0, "vitest"), 1);
        // Replaced by an update: searches see the new version only, the id is shadowed once,
        // and both versions count in the statistics.
        assert_eq!(overlay.stage(&[], &[], &[doc("a", "cargo build", Status::Active)]), ["a"]);
        assert_eq!((overlay.doc_freq(0, "vitest"), overlay.doc_freq(0, "cargo")), (1, 1));
        assert_eq!((overlay.n_docs(), overlay.counted_docs()), (1, 2));
        assert_eq!(overlay.docs().map(|(_, doc)| doc.has("cargo")).collect::<Vec<_>>(), [true]);
        // Made inactive: gone from searches, nothing added to the statistics.
        assert!(overlay.stage(&[], &[], &[doc("a", "cargo build", Status::Pending)]).is_empty());
        assert_eq!((overlay.n_docs(), overlay.counted_docs()), (0, 2));
        overlay.stage(&["b"], &[], &[]);
        assert_eq!(overlay.shadowed().count(), 2);
        // A created document that is not active is not staged.
        overlay.stage(&[], &[doc("c", "held", Status::Pending)], &[]);
        assert_eq!(overlay.n_docs(), 0);
    }
}
