//! What the integration tests share: where ONNX Runtime and the two test models are, the models
//! loaded once per test binary, and cosine similarity.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use kb_embed::{FastEmbedder, ModelSpec};

/// The ONNX Runtime library: `ORT_DYLIB_PATH` when set, else the one in Python's `onnxruntime`
/// package (`kb_embed::runtime::library_for_tests_and_benchmarks`). The tests fail, rather than
/// skip, when there is none: without it they would test nothing.
pub fn ort_library() -> PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            kb_embed::runtime::library_for_tests_and_benchmarks()
                .unwrap_or_else(|reason| panic!("{reason} (tests/run installs it)"))
        })
        .clone()
}

/// A library in the onnxruntime package that is a real shared library but not ONNX Runtime.
pub fn not_onnx_runtime_library() -> PathBuf {
    let library = ort_library().with_file_name("libonnxruntime_providers_shared.so");
    assert!(library.is_file(), "expected {} beside the ONNX Runtime library", library.display());
    library
}

/// The tiny deterministic model committed with this crate (tools/make_tiny_model.py).
pub fn tiny_model_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-model")
}

/// The real all-MiniLM-L6-v2 model, built from PyPI by `tools/models.sh` into `.cache/models`.
pub fn minilm_dir() -> PathBuf {
    kb_embed::test_models::model_dir(kb_embed::test_models::MINILM).unwrap_or_else(|reason| panic!("{reason}"))
}

/// The real multilingual-e5-small model, built the same way.
pub fn e5_dir() -> PathBuf {
    kb_embed::test_models::model_dir(kb_embed::test_models::MULTILINGUAL_E5).unwrap_or_else(|reason| panic!("{reason}"))
}

pub fn tiny() -> &'static FastEmbedder {
    static TINY: OnceLock<FastEmbedder> = OnceLock::new();
    TINY.get_or_init(|| {
        FastEmbedder::load(&ModelSpec::LocalDir(tiny_model_dir()), Some(&ort_library()))
            .unwrap_or_else(|error| panic!("the tiny model must load: {}", kb_embed::error_chain(&error)))
    })
}

pub fn minilm() -> &'static FastEmbedder {
    static MINILM: OnceLock<FastEmbedder> = OnceLock::new();
    MINILM.get_or_init(|| {
        FastEmbedder::load(&ModelSpec::LocalDir(minilm_dir()), Some(&ort_library()))
            .unwrap_or_else(|error| panic!("the MiniLM model must load: {}", kb_embed::error_chain(&error)))
    })
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

pub fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}
