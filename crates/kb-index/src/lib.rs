//! The BM25 index over experiences: tantivy with a Chinese-aware, identifier-aware analyzer.
//!
//! Architecture Invariant: the index is derived from the SQLite store and can always be rebuilt
//! from it. Every commit records the store sequence number it reflects (`applied_seq`), so the
//! daemon can tell a stale index from a current one.
//!
//! The daemon writes an experience to SQLite first and to this index second, then commits the
//! index with the store's sequence number. If the two ever disagree (a crash between the writes,
//! a damaged or outdated index), the store wins: [`ExperienceIndex::open`] reports a created or
//! recreated index, or an `applied_seq` behind the store, and the daemon re-indexes from SQLite
//! (`clear`, `upsert` everything, `commit`). Nothing is ever read from the index that is not also
//! in the store; the index answers only "which ids, in what order".
//!
//! Queries are text, never query syntax: they go through the same analyzer as the documents (see
//! [`analyze`]) and become a disjunction of term lookups over the text fields, ranked by
//! block-max WAND; the rating and agent filters are checked on the documents it offers. When the
//! rarest terms of a query already cost many postings, its other terms only rescore the best
//! candidates those find, so that a query of frequent words does not walk every posting list.

mod analyzer;
mod directory;
mod error;
mod index;
mod schema;

pub use analyzer::{analyze, jieba_words, warm_up};
pub use error::{Error, Result};
pub use index::{Evidence, ExperienceIndex, Hit, IndexDoc, OpenOutcome, SearchRequest, SearchTerm, StartThreads};
pub use schema::SCHEMA_VERSION;
