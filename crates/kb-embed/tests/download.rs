//! A model to download that cannot be downloaded is an error value, not a panic, so the daemon
//! falls back to BM25. The hub is pointed at a closed local port, so this never touches the
//! network. Its own test binary because it sets `HF_ENDPOINT` for the whole process.

mod common;

use common::ort_library;
use kb_embed::{DEFAULT_DOWNLOAD_MODEL, Error, FastEmbedder, ModelSpec};

#[test]
fn an_unreachable_hub_is_a_download_error_naming_the_model_and_cache() {
    // SAFETY: this is the only test in this binary, so no other thread reads the environment.
    unsafe {
        std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9");
        std::env::remove_var("HF_HOME");
    }
    let cache = tempfile::tempdir().unwrap();
    let spec = ModelSpec::default_download(cache.path());
    let error = FastEmbedder::load(&spec, Some(&ort_library())).unwrap_err();
    assert!(matches!(error, Error::Download { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "cannot download the embedding model {DEFAULT_DOWNLOAD_MODEL} into {}: ",
            cache.path().display()
        )),
        "{message}"
    );

    let unknown = ModelSpec::Download { name: "NoSuchModel".into(), cache_dir: cache.path().into() };
    let error = FastEmbedder::load(&unknown, Some(&ort_library())).unwrap_err();
    assert!(matches!(error, Error::UnknownModel { .. }), "{error:?}");
}
