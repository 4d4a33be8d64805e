//! Experiences staged since the index's last commit: searchable at once from memory, scored with
//! the statistics of the committed index and the overlay together, until the next commit takes
//! them into tantivy's segments.
//!
//! Why: a tantivy commit has a fixed cost (a new segment with its term table, its files, the
//! merges it sets off) that was paid once per group commit of submits; measured with 50
//! submitting clients it was ~48 ms for ~25 documents against 3–4 ms for SQLite, and it bounded
//! submit latency (issue 25). The overlay keeps the staged writes in order ([`Staged`]); a commit
//! gives a prefix of them to tantivy's writer, and the overlay is then made again from the rest
//! (staged while the commit ran), so staging never waits for a commit.

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

/// An experience as given to [`Overlay::stage`], kept for the commit that gives it to tantivy.
#[derive(Debug, Clone)]
pub(super) struct OwnedDoc {
    id: String,
    task: String,
    resource: String,
    result: String,
    content: Option<String>,
    score: u8,
    status: Status,
    agent_id: Option<String>,
}

impl OwnedDoc {
    fn of(doc: &IndexDoc<'_>) -> OwnedDoc {
        OwnedDoc {
            id: doc.id.to_owned(),
            task: doc.task.to_owned(),
            resource: doc.resource.to_owned(),
            result: doc.result.to_owned(),
            content: doc.content.map(str::to_owned),
            score: doc.score,
            status: doc.status,
            agent_id: doc.agent_id.map(str::to_owned),
        }
    }

    pub(super) fn as_index_doc(&self) -> IndexDoc<'_> {
        IndexDoc {
            id: &self.id,
            task: &self.task,
            resource: &self.resource,
            result: &self.result,
            content: self.content.as_deref(),
            score: self.score,
            status: self.status,
            agent_id: self.agent_id.as_deref(),
        }
    }
}

/// One write as staged: what `ExperienceIndex::stage` was given, with the analyzed form of each
/// active document, so that making the overlay again after a commit analyzes nothing twice.
#[derive(Debug)]
pub(super) struct Staged {
    pub(super) deleted: Vec<String>,
    pub(super) created: Vec<OwnedDoc>,
    pub(super) updated: Vec<OwnedDoc>,
    analyzed: HashMap<String, Arc<StagedDoc>>,
}

/// The staged documents and what they change of the committed index.
#[derive(Debug, Clone, Default)]
pub(super) struct Overlay {
    /// Every write staged since the last commit, in order.
    writes: Vec<Arc<Staged>>,
    /// The store sequence number of the last write staged; 0 when none was.
    seq: u64,
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
    /// Stages the changes of one write, reflecting the store up to `seq`, in order: `deleted`
    /// ids go, `created` documents (known not to be committed) and `updated` ones (replacing any
    /// committed or staged version; an inactive one removes it) come. Returns the ids newly
    /// shadowed.
    pub(super) fn stage(
        &mut self,
        seq: u64,
        deleted: &[&str],
        created: &[IndexDoc<'_>],
        updated: &[IndexDoc<'_>],
    ) -> Vec<String> {
        let analyzed = created
            .iter()
            .chain(updated)
            .filter(|doc| doc.status == Status::Active)
            .map(|doc| (doc.id.to_owned(), Arc::new(StagedDoc::of(doc))))
            .collect();
        let staged = Arc::new(Staged {
            deleted: deleted.iter().map(|id| (*id).to_owned()).collect(),
            created: created.iter().map(OwnedDoc::of).collect(),
            updated: updated.iter().map(OwnedDoc::of).collect(),
            analyzed,
        });
        self.seq = self.seq.max(seq);
        self.apply(staged)
    }

    /// The overlay of the writes after the first `committed` ones (which a commit took into the
    /// segments), reflecting the store up to the same sequence number.
    pub(super) fn after(&self, committed: usize) -> Overlay {
        let mut overlay = Overlay { seq: self.seq, ..Overlay::default() };
        for staged in self.writes.iter().skip(committed) {
            overlay.apply(Arc::clone(staged));
        }
        overlay
    }

    fn apply(&mut self, staged: Arc<Staged>) -> Vec<String> {
        let mut newly_shadowed = Vec::new();
        let mut shadow = |overlay: &mut Overlay, id: &str| {
            overlay.remove(id);
            if overlay.shadowed.insert(id.to_owned()) {
                newly_shadowed.push(id.to_owned());
            }
        };
        for id in &staged.deleted {
            shadow(self, id);
        }
        for doc in &staged.updated {
            shadow(self, &doc.id);
            if let Some(analyzed) = staged.analyzed.get(&doc.id).filter(|_| doc.status == Status::Active) {
                self.insert(Arc::clone(analyzed));
            }
        }
        for doc in staged.created.iter().filter(|doc| doc.status == Status::Active) {
            self.remove(&doc.id);
            if let Some(analyzed) = staged.analyzed.get(&doc.id) {
                self.insert(Arc::clone(analyzed));
            }
        }
        self.writes.push(staged);
        newly_shadowed
    }

    /// The writes staged, in order.
    pub(super) fn writes(&self) -> &[Arc<Staged>] {
        &self.writes
    }

    /// The store sequence number of the last write staged; 0 when none was.
    pub(super) fn seq(&self) -> u64 {
        self.seq
    }

    fn insert(&mut self, doc: Arc<StagedDoc>) {
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
        self.docs.insert(key, doc);
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
        self.docs.is_empty() && self.shadowed.is_empty() && self.counted_docs == 0
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

    /// The key of the staged document with this id, when one is staged.
    pub(super) fn key_of(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).copied()
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
        assert!(overlay.stage(1, &[], &[doc("a", "vitest watch", Status::Active)], &[]).is_empty());
        assert_eq!(overlay.doc_freq(0, "vitest"), 1);
        // Replaced by an update: searches see the new version only, the id is shadowed once,
        // and both versions count in the statistics.
        assert_eq!(overlay.stage(2, &[], &[], &[doc("a", "cargo build", Status::Active)]), ["a"]);
        assert_eq!((overlay.doc_freq(0, "vitest"), overlay.doc_freq(0, "cargo")), (1, 1));
        assert_eq!((overlay.n_docs(), overlay.counted_docs()), (1, 2));
        assert_eq!(overlay.docs().map(|(_, doc)| doc.has("cargo")).collect::<Vec<_>>(), [true]);
        // Made inactive: gone from searches, nothing added to the statistics.
        assert!(overlay.stage(3, &[], &[], &[doc("a", "cargo build", Status::Pending)]).is_empty());
        assert_eq!((overlay.n_docs(), overlay.counted_docs()), (0, 2));
        overlay.stage(4, &["b"], &[], &[]);
        assert_eq!(overlay.shadowed().count(), 2);
        // A created document that is not active is not staged.
        overlay.stage(5, &[], &[doc("c", "held", Status::Pending)], &[]);
        assert_eq!((overlay.n_docs(), overlay.seq(), overlay.writes().len()), (0, 5, 5));
        // After a commit of the first three writes: only the last two's effects remain.
        let rest = overlay.after(3);
        assert_eq!((rest.seq(), rest.writes().len(), rest.counted_docs()), (5, 2, 0));
        assert_eq!(rest.shadowed().collect::<Vec<_>>(), ["b"]);
        let none = Overlay::default().after(0);
        assert!(none.changes_nothing());
    }
}
