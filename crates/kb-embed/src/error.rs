//! The one error type of the embedding crate, with the context each failure needs to be understood.

use std::path::PathBuf;

/// Everything that can go wrong while loading or running an embedding model or using the vector
/// index. Variants say what was being done and with which file, so that the daemon can show the
/// message as the reason vector search is unavailable.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ONNX Runtime library file named by the caller, `ORT_DYLIB_PATH` or the config does
    /// not exist.
    #[error(
        "the ONNX Runtime library {path} does not exist (set ORT_DYLIB_PATH to the libonnxruntime file; \
         `pip install onnxruntime==1.31.1` provides one under site-packages/onnxruntime/capi)"
    )]
    RuntimeMissing { path: PathBuf },

    /// The file exists (or was searched for by name) but the dynamic loader refused it: not a
    /// shared library, wrong architecture, missing dependencies.
    #[error("cannot load the ONNX Runtime library {path}: {reason}")]
    RuntimeUnloadable { path: PathBuf, reason: String },

    /// The library loaded but is not ONNX Runtime (it has no `OrtGetApiBase`).
    #[error("{path} is not an ONNX Runtime library (it does not export OrtGetApiBase)")]
    RuntimeNotOnnx { path: PathBuf },

    /// The library is ONNX Runtime, but older than the API version `ort` needs.
    #[error("the ONNX Runtime library {path} is version {found}, too old: version 1.{required}.0 or newer is needed")]
    RuntimeTooOld { path: PathBuf, found: String, required: u32 },

    /// ONNX Runtime is process-global: once one library is loaded, another cannot replace it.
    #[error(
        "ONNX Runtime is already loaded from {loaded} in this process; {requested} can only be used after a restart"
    )]
    RuntimeAlreadyLoaded { loaded: PathBuf, requested: PathBuf },

    /// Any other failure of the runtime itself (creating its environment, for example).
    #[error("cannot set up ONNX Runtime: {reason}")]
    Runtime { reason: String },

    /// The local model directory is missing or is not a directory.
    #[error("the model directory {path} does not exist or is not a directory")]
    ModelDirMissing { path: PathBuf },

    /// A file the local model needs could not be read.
    #[error("cannot read {path} of the local model")]
    ModelFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// fastembed (tokenizer files, ONNX session) refused the model.
    #[error("cannot load the embedding model {model}: {reason}")]
    ModelLoad { model: String, reason: String },

    /// A named model is not one fastembed knows.
    #[error("unknown embedding model {name:?} (expected one of fastembed's EmbeddingModel names, e.g. {example})")]
    UnknownModel { name: String, example: &'static str },

    /// Downloading a named model failed: no network, hub unreachable, disk full.
    #[error("cannot download the embedding model {model} into {cache_dir}: {reason}")]
    Download { model: String, cache_dir: PathBuf, reason: String },

    /// Running the model on texts failed.
    #[error("cannot embed {n_texts} texts with {model_id}: {reason}")]
    Embed { model_id: String, n_texts: usize, reason: String },

    /// The model produced something that is not a usable embedding (NaN, zero, wrong length).
    #[error("the model {model} produced an unusable embedding: {reason}")]
    BadOutput { model: String, reason: String },

    /// A vector of the wrong length was given to the index or to a query.
    #[error("expected a vector of {expected} dimensions, got {actual}")]
    Dimensions { expected: usize, actual: usize },

    /// A vector given to the index or as a query has a NaN or infinite value.
    #[error("the vector contains NaN or infinity")]
    NonFinite,

    /// A stored vector blob cannot be a vector of f32 (its length is not a multiple of 4).
    #[error("a vector blob of {n_bytes} bytes is not a whole number of little-endian f32 values")]
    BlobLength { n_bytes: usize },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
