//! The real fastembed + ONNX Runtime path with the tiny fixture model: loading, determinism,
//! shape, batching, truncation, model identity, and the errors for broken model directories.

mod common;

use std::path::Path;

use common::{cosine, norm, ort_library, tiny, tiny_model_dir};
use kb_embed::{Embedder, Error, FastEmbedder, LOCAL_MODEL_FILES, LoadOptions, ModelSpec};

fn embed_one(embedder: &dyn Embedder, text: &str) -> Vec<f32> {
    embedder.embed(&[text]).unwrap().remove(0)
}

fn copy_model(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for name in LOCAL_MODEL_FILES {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

#[test]
fn tiny_model_loads_through_fastembed_with_64_dimensions() {
    let embedder = tiny();
    assert_eq!(embedder.dimensions(), 64);
    assert!(embedder.model_id().starts_with("tiny-model@"), "{}", embedder.model_id());
    assert_eq!(embedder.model_id().len(), "tiny-model@".len() + 16);
}

#[test]
fn embeddings_are_unit_vectors_of_the_model_dimensions() {
    let texts = ["make the tests stop watching", "如何停止监视模式", "", "zzzz qqqq", "tsconfig.json --strict"];
    let vectors = tiny().embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (text, vector) in texts.iter().zip(&vectors) {
        assert_eq!(vector.len(), 64, "{text:?}");
        assert!((norm(vector) - 1.0).abs() < 1e-5, "{text:?}: norm {}", norm(vector));
    }
}

#[test]
fn the_same_text_gives_the_same_vector_every_time_and_in_every_load() {
    let text = "vitest --run avoids watch mode";
    let first = embed_one(tiny(), text);
    let second = embed_one(tiny(), text);
    assert_eq!(first, second, "two runs differ");
    let reloaded = FastEmbedder::load(&ModelSpec::LocalDir(tiny_model_dir()), Some(&ort_library())).unwrap();
    assert_eq!(reloaded.model_id(), tiny().model_id());
    assert_eq!(embed_one(&reloaded, text), first, "a second load differs");
}

#[test]
fn texts_sharing_words_are_closer_than_texts_that_share_none() {
    let query = embed_one(tiny(), "stop the watch mode");
    let sharing = embed_one(tiny(), "vitest --run avoids watch mode");
    let unrelated = [
        "docker container network timeout",
        "install python package with pip",
        "git merge conflict in the main branch",
    ];
    let sharing_score = cosine(&query, &sharing);
    for text in unrelated {
        let score = cosine(&query, &embed_one(tiny(), text));
        assert!(sharing_score > score + 0.2, "{text:?} scored {score}, the sharing text only {sharing_score}");
    }
    // Inflections share their stem through the ## suffix pieces.
    let tests = embed_one(tiny(), "tests");
    assert!(cosine(&tests, &embed_one(tiny(), "test")) > 0.8);
    // Chinese characters are single tokens, so shared characters count too.
    let chinese = embed_one(tiny(), "停止监视模式");
    assert!(
        cosine(&chinese, &embed_one(tiny(), "测试监视模式")) > cosine(&chinese, &embed_one(tiny(), "数据库索引")) + 0.2
    );
}

#[test]
fn batches_give_the_same_vectors_as_texts_one_by_one() {
    let words = ["make", "the", "test", "stop", "watch", "mode", "vitest", "run", "error", "配置", "文件", "npm"];
    let texts: Vec<String> = (0..45)
        .map(|text_idx| {
            words.iter().cycle().skip(text_idx).take(1 + text_idx % 9).cloned().collect::<Vec<_>>().join(" ")
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = tiny().embed(&texts).unwrap();
    let small_batches = FastEmbedder::load_with(
        &ModelSpec::LocalDir(tiny_model_dir()),
        Some(&ort_library()),
        &LoadOptions { batch_size: 4, ..LoadOptions::default() },
    )
    .unwrap();
    assert_eq!(small_batches.model_id(), tiny().model_id(), "the batch size does not change the vectors");
    let in_small_batches = small_batches.embed(&texts).unwrap();
    for (text_idx, text) in texts.iter().enumerate() {
        let alone = embed_one(tiny(), text);
        for (other, label) in [(&batched[text_idx], "batch of 32"), (&in_small_batches[text_idx], "batch of 4")] {
            let max_difference = alone.iter().zip(other).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            assert!(max_difference < 1e-6, "{text:?} differs by {max_difference} in a {label}");
        }
    }
    assert!(tiny().embed(&[]).unwrap().is_empty());
}

#[test]
fn texts_are_truncated_at_256_tokens() {
    let words =
        ["make", "the", "test", "stop", "watch", "mode", "vitest", "run", "error", "config", "file", "npm", "git"];
    let text_of = |n_words: usize| words.iter().cycle().take(n_words).cloned().collect::<Vec<_>>().join(" ");
    let long = embed_one(tiny(), &text_of(1000));
    // [CLS] + 254 words + [SEP] = 256 tokens.
    assert!(cosine(&long, &embed_one(tiny(), &text_of(254))) > 0.999_999);
    assert!(cosine(&long, &embed_one(tiny(), &text_of(40))) < 0.999);
}

#[test]
fn embedding_from_several_threads_at_once_agrees_with_one_thread() {
    let texts = ["make the tests stop watching", "git push rejected", "如何配置文件"];
    let expected = tiny().embed(&texts).unwrap();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4).map(|_| scope.spawn(|| tiny().embed(&texts).unwrap())).collect();
        for worker in workers {
            assert_eq!(worker.join().unwrap(), expected);
        }
    });
}

#[test]
fn model_id_changes_with_the_model_files_and_not_with_the_path_alone() {
    let temp = tempfile::tempdir().unwrap();
    let copy = temp.path().join("tiny-model");
    copy_model(&tiny_model_dir(), &copy);
    let same = FastEmbedder::load(&ModelSpec::LocalDir(copy.clone()), Some(&ort_library())).unwrap();
    assert_eq!(same.model_id(), tiny().model_id(), "the same files in another place are the same model");

    let config = std::fs::read_to_string(copy.join("tokenizer_config.json")).unwrap();
    std::fs::write(
        copy.join("tokenizer_config.json"),
        config.replace("\"model_max_length\": 256", "\"model_max_length\": 128"),
    )
    .unwrap();
    let changed = FastEmbedder::load(&ModelSpec::LocalDir(copy), Some(&ort_library())).unwrap();
    assert_ne!(changed.model_id(), tiny().model_id(), "a changed tokenizer config is a different model");
}

#[test]
fn a_missing_model_directory_is_an_error_naming_it() {
    let error = FastEmbedder::load(&ModelSpec::LocalDir("/nonexistent/knowhub-model".into()), Some(&ort_library()))
        .unwrap_err();
    assert!(matches!(error, Error::ModelDirMissing { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the model directory /nonexistent/knowhub-model does not exist or is not a directory"
    );
}

#[test]
fn a_model_directory_without_a_tokenizer_is_an_error_naming_the_file() {
    let temp = tempfile::tempdir().unwrap();
    copy_model(&tiny_model_dir(), temp.path());
    std::fs::remove_file(temp.path().join("tokenizer.json")).unwrap();
    let error = FastEmbedder::load(&ModelSpec::LocalDir(temp.path().into()), Some(&ort_library())).unwrap_err();
    assert!(matches!(error, Error::ModelFile { .. }), "{error:?}");
    let message = kb_embed::error_chain(&error);
    assert!(message.contains("tokenizer.json") && message.contains("No such file"), "{message}");
}

#[test]
fn a_corrupt_model_file_is_an_error_not_a_panic() {
    let temp = tempfile::tempdir().unwrap();
    copy_model(&tiny_model_dir(), temp.path());
    std::fs::write(temp.path().join("model.onnx"), b"this is not an onnx graph").unwrap();
    let error = FastEmbedder::load(&ModelSpec::LocalDir(temp.path().into()), Some(&ort_library())).unwrap_err();
    assert!(matches!(error, Error::ModelLoad { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with(&format!("cannot load the embedding model {}", temp.path().display())),
        "{error}"
    );
}

#[test]
fn a_corrupt_tokenizer_is_an_error_not_a_panic() {
    let temp = tempfile::tempdir().unwrap();
    copy_model(&tiny_model_dir(), temp.path());
    std::fs::write(temp.path().join("tokenizer.json"), b"{\"version\": \"1.0\"").unwrap();
    let error = FastEmbedder::load(&ModelSpec::LocalDir(temp.path().into()), Some(&ort_library())).unwrap_err();
    assert!(matches!(error, Error::ModelLoad { .. }), "{error:?}");
    assert!(error.to_string().contains("tokenizer.json"), "{error}");
}

#[test]
fn a_second_runtime_library_in_the_same_process_is_refused() {
    tiny();
    let other = common::not_onnx_runtime_library();
    let error = FastEmbedder::load(&ModelSpec::LocalDir(tiny_model_dir()), Some(&other)).unwrap_err();
    assert!(matches!(error, Error::RuntimeAlreadyLoaded { .. }), "{error:?}");
    assert_eq!(
        kb_embed::runtime::loaded_library().as_deref(),
        Some(std::path::absolute(ort_library()).unwrap().as_path())
    );
}
