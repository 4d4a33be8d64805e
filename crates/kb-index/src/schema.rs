//! The tantivy schema of the experience index, its version, and the commit payload.

use serde::{Deserialize, Serialize};
use tantivy::schema::{FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions};

use crate::analyzer::ANALYZER_NAME;

/// Version of the schema *and* of the analyzer. An index written with another version is wiped
/// and rebuilt from the store, so bump this whenever fields or tokenization change.
pub const SCHEMA_VERSION: u32 = 5;

/// Handles to the fields of [`build_schema`]'s schema.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    /// The experience id, a raw term: the key for upsert and delete, stored to answer searches.
    pub id: Field,
    /// Task, resource and result, as three values of one field. One field instead of three
    /// halves the term lookups of a query and lets tantivy's block-max WAND skip most
    /// documents; measured at 100k experiences, it cut search latency about in half.
    pub text: Field,
    /// The optional detailed body, matched with less weight than the summary.
    pub content: Field,
    /// The rating 1–5, a fast field for the `min_score` filter.
    pub score: Field,
    /// A fast field for the agent filter; absent when the experience has no agent.
    pub agent_id: Field,
}

impl Fields {
    /// The analyzed text fields with their query boosts, in the order they are searched.
    ///
    /// The optional long content is matched with less weight so that a passing mention in a
    /// log does not outrank an experience about the subject.
    pub fn text_fields_with_boosts(&self) -> [(Field, f32); 2] {
        [(self.text, 1.0), (self.content, 0.5)]
    }
}

pub(crate) fn build_schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // Frequencies are needed for BM25; positions are not (no phrase queries), and leaving them
    // out makes indexing faster and the index smaller.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(ANALYZER_NAME).set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        // Stored, not a fast field: a hit's id from the column is a lookup in its sstable
        // dictionary, which decompresses a zstd block (with a new decompression context) and
        // scans it on every hit, while the document store's blocks are lz4 and cached. Measured
        // at 100k experiences, 5 hits per query: CPU per search 329 → 270 µs (schema v5).
        id: builder.add_text_field("id", STRING | STORED),
        text: builder.add_text_field("text", text.clone()),
        content: builder.add_text_field("content", text),
        // The filters are checked on the documents the text query offers (see `top` in `index/collector.rs`),
        // never looked up as terms, so they are fast fields only.
        score: builder.add_u64_field("score", FAST),
        agent_id: builder.add_text_field("agent_id", FAST),
    };
    (builder.build(), fields)
}

/// What every commit records in tantivy's `meta.json`, as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommitPayload {
    pub schema_version: u32,
    /// The store sequence number the index reflects after this commit.
    pub applied_seq: u64,
}
