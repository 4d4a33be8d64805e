//! Embeddings for KnowHub: a small [`Embedder`] trait, fastembed on ONNX Runtime behind it
//! ([`FastEmbedder`]), the in-memory [`VectorIndex`] searched by cosine similarity, and the pure
//! helpers that fuse BM25 and vector rankings.
//!
//! Vectors are derived data: the store (SQLite) is the truth and every vector can be recomputed
//! from it with the same model, which is why each embedder has a [`Embedder::model_id`] that
//! changes whenever its output would.
//!
//! ONNX Runtime is loaded at run time from a library file ([`runtime`]), never linked, so a
//! machine without it still runs the daemon, on BM25 alone; every way that loading can fail is
//! an [`Error`], never a panic.

mod error;
mod fastembedder;
pub mod fusion;
mod int8_cache;
pub mod onnx;
pub mod quantize;
pub mod runtime;
mod state;
pub mod test_models;
pub mod unigram;
mod vector;

pub use error::{Error, Result};
pub use fastembedder::{
    DEFAULT_DOWNLOAD_MODEL, FastEmbedder, LOCAL_MODEL_FILES, LoadOptions, ModelSpec, Prefixes, estimated_tokens, is_e5,
};
pub use quantize::{Quantized, TablesFile, quantize_int8, quantize_int8_to};
pub use state::{EmbedderState, error_chain};
pub use vector::{Hit, Precision, VectorIndex, from_bytes, normalize, to_bytes};

/// Turns texts into embedding vectors. Implementations batch internally and return one vector
/// per text, in order, each of [`Embedder::dimensions`] values and L2-normalised, so that cosine
/// similarity is a dot product.
pub trait Embedder: Send + Sync {
    /// Identifies the model and every setting that changes its output. Vectors made under one
    /// id must not be compared with vectors made under another.
    fn model_id(&self) -> &str;

    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;

    /// Embeds every text as a stored passage; the i-th vector belongs to the i-th text.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// Embeds a search query. Models trained with different prefixes for queries and passages
    /// (E5's `query: ` and `passage: `) need to know which one a text is; for the others this
    /// is [`Embedder::embed`] of the one text.
    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed(&[query])?;
        vectors.pop().ok_or_else(|| Error::Embed {
            model_id: self.model_id().to_owned(),
            n_texts: 1,
            reason: "no vector came back".to_owned(),
        })
    }

    /// The share of each passage's tokens the model sees (its window over the passage's whole
    /// length, 1 for one that fits), as [`Embedder::embed`] would tokenize it: a vector of a
    /// text cut short says less about it. 1 for every passage unless the embedder knows better.
    fn window_shares(&self, passages: &[&str]) -> Result<Vec<f32>> {
        Ok(vec![1.0; passages.len()])
    }
}
