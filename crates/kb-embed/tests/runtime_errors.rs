//! ONNX Runtime that cannot be loaded is an error naming the library, never a panic or an abort,
//! and it leaves the process able to load a good library afterwards. This is its own test
//! binary because loading a library is process-wide and cannot be undone.

mod common;

use std::path::PathBuf;

use common::{ort_library, tiny_model_dir};
use kb_embed::{Embedder, Error, FastEmbedder, ModelSpec, runtime};

fn load_with_runtime(library: &std::path::Path) -> Result<FastEmbedder, Error> {
    FastEmbedder::load(&ModelSpec::LocalDir(tiny_model_dir()), Some(library))
}

#[test]
fn bad_runtime_libraries_are_errors_and_a_good_one_still_loads_afterwards() {
    // One test, in order: the failures must come before the success, which pins the library.
    let missing = PathBuf::from("/nonexistent/onnxruntime/libonnxruntime.so.1.31.1");
    let error = load_with_runtime(&missing).unwrap_err();
    assert!(matches!(error, Error::RuntimeMissing { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("/nonexistent/onnxruntime/libonnxruntime.so.1.31.1 does not exist"), "{message}");
    assert!(message.contains("ORT_DYLIB_PATH") && message.contains("pip install onnxruntime==1.31.1"), "{message}");

    let temp = tempfile::tempdir().unwrap();
    let not_a_library = temp.path().join("libonnxruntime.so");
    std::fs::write(&not_a_library, "plain text, not an ELF file\n").unwrap();
    let error = load_with_runtime(&not_a_library).unwrap_err();
    assert!(matches!(error, Error::RuntimeUnloadable { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with(&format!("cannot load the ONNX Runtime library {}", not_a_library.display())),
        "{error}"
    );

    let error = load_with_runtime(temp.path()).unwrap_err();
    assert!(matches!(error, Error::RuntimeMissing { .. }), "a directory is not a library: {error:?}");

    let other_library = common::not_onnx_runtime_library();
    let error = load_with_runtime(&other_library).unwrap_err();
    assert!(matches!(error, Error::RuntimeNotOnnx { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        format!("{} is not an ONNX Runtime library (it does not export OrtGetApiBase)", other_library.display())
    );

    assert_eq!(runtime::loaded_library(), None, "failed loads must not pin anything");
    let embedder = load_with_runtime(&ort_library()).expect("the real library loads after the failures");
    assert_eq!(embedder.dimensions(), 64);
    assert!(runtime::loaded_library().is_some());
}

#[test]
fn the_library_comes_from_the_caller_then_the_environment_then_the_loader_path() {
    let explicit = PathBuf::from("/opt/onnxruntime/lib/libonnxruntime.so");
    assert_eq!(runtime::resolve_library(Some(&explicit)), explicit);
    let from_environment = runtime::resolve_library(None);
    match std::env::var_os(runtime::ORT_DYLIB_PATH).filter(|value| !value.is_empty()) {
        Some(value) => assert_eq!(from_environment, PathBuf::from(value)),
        None => assert_eq!(from_environment, PathBuf::from(runtime::LIBRARY_NAME)),
    }
}
