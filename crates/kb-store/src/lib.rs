//! KnowHub's experience store: SQLite in WAL mode, the single source of truth.
//!
//! Architecture Invariant: every change that matters to a derived structure (the BM25 index,
//! the vectors) bumps the store's sequence number inside the same transaction, and
//! records the new `seq` on the changed row (or on a tombstone for a delete). A derived
//! structure that remembers the last `seq` it applied can therefore catch up with
//! `changes_since`, or be rebuilt from scratch with `for_each_index_row`.
//!
//! Architecture Invariant: a write returns only after its transaction committed with
//! `synchronous = FULL`, so an acknowledged write survives a crash of the process or machine.

mod error;
mod extraction;
mod hub;
mod migrations;
mod read;
mod store;
mod variants;
mod vectors;
mod write;

pub use error::{Error, Result};
pub use extraction::{Enqueued, ExtractionStats, Job, JobResult, JobSummary, NewJob, ProposalInfo, ProposalMeta};
pub use hub::{Applied, Held, Hidden, Incoming, Origin, OutboxDepth, Outgoing, PullBatch, SkipRecord, hub_day};
pub use migrations::SCHEMA_VERSION;
pub use read::{Changes, Counts, ExportRow, IndexRow, ListFilter, StoredContent, Variant};
pub use store::Store;
pub use variants::{TEAMMATE_VARIANT_BYTES_PER_AUTHOR, TEAMMATE_VARIANTS_PER_AUTHOR};
pub use vectors::{EmbeddingSource, VectorChanges, VectorRow};
pub use write::{KeptApart, OnRejected, VectorRef, WriteItem, WriteOutcome};
