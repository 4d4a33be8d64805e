//! KnowHub's core engine: the SQLite store (the truth), the BM25 index and the vector index
//! derived from it, the write gate, the write path (group commit, duplicate merging, review) and
//! search (BM25, vectors, fusion).
//!
//! Architecture Invariant: the engine knows nothing above it. The daemon's services (hooks,
//! extraction, the hub sync, the supervisor) hold an `Arc<Engine>`; the engine never calls them.
//! What a background loop of the engine must tell whoever runs it goes through [`Pulse`].

pub mod config;
pub mod engine;
pub mod lane;
pub mod memory;
pub mod relevance;
pub mod semantic;
pub mod stats;
pub mod turns;

pub use config::{EmbeddingConfig, EngineConfig, PrecisionConfig, SearchConfig};
pub use engine::{Engine, EngineError, EngineResult, IndexState, Pulse};
