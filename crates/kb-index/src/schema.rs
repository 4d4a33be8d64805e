//! The tantivy schema of the experience index, its version, and the commit payload.

use serde::{Deserialize, Serialize};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::analyzer::ANALYZER_NAME;

/// Version of the schema *and* of the analyzer. An index written with another version is wiped
/// and rebuilt from the store, so bump this whenever fields or tokenization change.
pub const SCHEMA_VERSION: u32 = 1;

/// Handles to the fields of [`build_schema`]'s schema.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields {
    /// The experience id, a raw term: the key for upsert and delete, stored to answer searches.
    pub id: Field,
    pub task: Field,
    pub resource: Field,
    pub result: Field,
    pub content: Field,
    /// The rating 1–5, indexed and fast for the `min_score` range filter.
    pub score: Field,
    /// `active`, `pending` or `rejected`, a raw term.
    pub status: Field,
    /// A raw term; absent when the experience has no agent.
    pub agent_id: Field,
}

impl Fields {
    /// The analyzed text fields with their query boosts, in the order they are searched.
    ///
    /// The task says what the experience is about and is what queries resemble most; the
    /// resource names the tool; the result and the optional long content are matched with less
    /// weight so that a passing mention does not outrank an experience about the subject.
    pub fn text_fields_with_boosts(&self) -> [(Field, f32); 4] {
        [(self.task, 1.5), (self.resource, 1.3), (self.result, 1.0), (self.content, 0.6)]
    }
}

pub(crate) fn build_schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // Frequencies are needed for BM25; positions are kept so phrase or proximity boosts can be
    // added later without a schema change, and they cost little at this size.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        id: builder.add_text_field("id", STRING | STORED),
        task: builder.add_text_field("task", text.clone()),
        resource: builder.add_text_field("resource", text.clone()),
        result: builder.add_text_field("result", text.clone()),
        content: builder.add_text_field("content", text),
        score: builder.add_u64_field("score", INDEXED | FAST),
        status: builder.add_text_field("status", STRING),
        agent_id: builder.add_text_field("agent_id", STRING),
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
