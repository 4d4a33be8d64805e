//! What the core engine is configured with: the gate's policy, search's defaults and limits, and
//! the embedding model. The daemon reads these sections from `config.toml` (with its own) and
//! hands them over; the engine never reads a file or the environment for them.

use std::path::PathBuf;

use kb_core::GatePolicy;
use serde::Deserialize;

/// The engine's settings.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Privacy mode and limits every write passes.
    pub policy: GatePolicy,
    pub search: SearchConfig,
    pub embedding: EmbeddingConfig,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchConfig {
    pub default_top_k: usize,
    pub max_top_k: usize,
    pub default_min_score: u8,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig { default_top_k: 5, max_top_k: 50, default_min_score: 3 }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddingConfig {
    pub enabled: bool,
    /// A local model directory; `KNOWHUB_MODEL_DIR` wins over it.
    pub model_dir: Option<PathBuf>,
    /// The model downloaded (once, into the cache) when no local directory is given.
    pub model: String,
    pub download: bool,
    /// The ONNX Runtime library file; `ORT_DYLIB_PATH` when unset.
    pub onnxruntime: Option<PathBuf>,
    pub precision: PrecisionConfig,
    /// Load the model with its float weights rewritten as int8 (`kb_embed::quantize_int8`); a
    /// downloaded model is then loaded from its cached files as a local directory. Unset: the
    /// model's default (`semantic::quantized_by_default`).
    pub quantize: Option<bool>,
    /// Cosine similarity at or above which a submitted experience merges into a stored one.
    pub similar_threshold: f32,
    /// Vector matches less similar than this are no evidence for auto-recall (`relevance`; an
    /// explicit search ranks without a floor); unset, the model's own floor
    /// (`semantic::default_min_similarity`).
    pub min_similarity: Option<f32>,
    /// Seconds between attempts to load a model that could not be loaded.
    pub retry_seconds: u64,
    /// ONNX Runtime threads of the query session, a second session of the model that embeds
    /// only search queries so that they never wait for writes' runs (`semantic/queries.rs`);
    /// 0: no second session, queries take the main session's turns first.
    pub query_threads: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> EmbeddingConfig {
        EmbeddingConfig {
            enabled: true,
            model_dir: None,
            model: kb_embed::DEFAULT_DOWNLOAD_MODEL.to_owned(),
            download: true,
            onnxruntime: None,
            precision: PrecisionConfig::Int8,
            quantize: None,
            similar_threshold: 0.97,
            min_similarity: None,
            retry_seconds: 60,
            query_threads: 1,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrecisionConfig {
    F32,
    #[default]
    Int8,
}
