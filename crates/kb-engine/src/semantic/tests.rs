//! Tests of the semantic side: models' floors and precision, the backlog's refresh and reindex.

use super::*;

#[test]
fn each_model_gets_its_floor_and_precision() {
    let e5_dir = ModelSpec::LocalDir(PathBuf::from("/models/multilingual-e5-small-onnx"));
    let minilm_dir = ModelSpec::LocalDir(PathBuf::from("/models/all-minilm-l6-v2-onnx"));
    let e5_download =
        ModelSpec::Download { name: "intfloat/multilingual-e5-small".to_owned(), cache_dir: PathBuf::from("/c") };
    assert!(quantized_by_default(&e5_dir) && quantized_by_default(&e5_download));
    assert!(!quantized_by_default(&minilm_dir));
    assert_eq!(default_min_similarity("multilingual-e5-small-onnx@5737e5c6166f1c20+int8"), 0.83);
    assert_eq!(default_min_similarity("intfloat/multilingual-e5-small query_prefix=\"query: \""), 0.83);
    assert_eq!(default_min_similarity("all-minilm-l6-v2-onnx@0123456789abcdef"), 0.25);
    // "e5" only as a word of its own: a hash or another name holding the letters is not E5.
    assert_eq!(default_min_similarity("bge-small@00e5a1"), 0.25);
}

#[test]
fn a_failed_batch_of_refreshed_experiences_stays_refresh() {
    let semantic = Semantic::new(choice(None));
    {
        let mut backlog = semantic.lock_backlog();
        backlog.push_refresh("a");
        backlog.push("b");
    }
    let taken = semantic.take_backlog(16, Duration::ZERO);
    semantic.requeue(&taken);
    semantic.batch_done();
    assert_eq!((semantic.coverage().1, semantic.missing()), (2, 1));
    let _ = semantic.take_backlog(16, Duration::ZERO);
    semantic.batch_done();
    assert_eq!((semantic.coverage().1, semantic.missing()), (0, 0));
    assert!(semantic.lock_backlog().refresh.is_empty());
}

#[test]
fn a_reindex_before_the_model_is_loaded_is_deferred_or_refused() {
    let loading = Semantic::new(choice(Some(ModelSpec::LocalDir(PathBuf::from("/nonexistent/model")))));
    assert_eq!(loading.refresh_all(), Refresh::Deferred);
    assert!(loading.refresh_on_attach.load(Ordering::Acquire), "attach will queue everything");

    let off = Semantic::new(choice(None));
    let Refresh::Unavailable { reason } = off.refresh_all() else { panic!("no model, nothing queued") };
    assert!(reason.contains("turned off"), "{reason}");
}

fn choice(spec: Option<ModelSpec>) -> ModelChoice {
    ModelChoice {
        off_reason: spec.is_none().then(|| "embeddings are turned off".to_owned()),
        spec,
        onnxruntime: None,
        precision: Precision::F32,
        quantize: Some(false),
        retry: Duration::from_secs(60),
        similar_threshold: 0.97,
        min_similarity: Some(0.25),
        int8_cache: PathBuf::from("/nonexistent/int8"),
        query_threads: 1,
    }
}
