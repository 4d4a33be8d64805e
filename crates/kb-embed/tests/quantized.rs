//! Models loaded with int8 weights (`LoadOptions::quantize`): the rewrite of the real MiniLM and
//! of the tiny model loads in ONNX Runtime, its vectors stay close to the float model's and
//! still find paraphrases, and a model it cannot rewrite is left alone with the reason.

mod common;

use common::{cosine, minilm, minilm_dir, ort_library, tiny, tiny_model_dir};
use kb_embed::{Embedder, FastEmbedder, LoadOptions, ModelSpec, quantize_int8};

fn load_quantized(dir: std::path::PathBuf) -> FastEmbedder {
    let options = LoadOptions { quantize: true, ..LoadOptions::default() };
    FastEmbedder::load_with(&ModelSpec::LocalDir(dir), Some(&ort_library()), &options)
        .unwrap_or_else(|error| panic!("the quantized model must load: {}", kb_embed::error_chain(&error)))
}

const TEXTS: [&str; 6] = [
    "make the tests stop watching",
    "vitest --run avoids watch mode",
    "the container ran out of memory and was killed by the kernel",
    "SQLite database is locked during concurrent writes without WAL",
    "如何让测试停止监视模式",
    "kubectl rollout restart fixed the stuck deployment",
];

#[test]
fn minilm_with_int8_weights_is_a_quarter_of_the_size_and_embeds_nearly_the_same_vectors() {
    let float_model = std::fs::read(minilm_dir().join("model.onnx")).unwrap();
    let quantized = quantize_int8(&float_model).expect("MiniLM quantizes");
    // Six layers of query, key, value, output and two feed-forward matrices; the word table.
    assert_eq!((quantized.matmuls, quantized.gathers), (36, 1));
    assert!(quantized.bytes_after * 7 / 2 < quantized.bytes_before, "{quantized:?}");
    assert!(quantized.model.len() < float_model.len() / 3, "{} of {} bytes", quantized.model.len(), float_model.len());

    let int8 = load_quantized(minilm_dir());
    assert_eq!(int8.model_id(), format!("{}+int8", minilm().model_id()), "its vectors are not the float model's");
    assert_eq!(int8.dimensions(), 384);
    let exact = minilm().embed(&TEXTS).unwrap();
    for ((text, exact), close) in TEXTS.iter().zip(&exact).zip(int8.embed(&TEXTS).unwrap()) {
        let similarity = cosine(exact, &close);
        // Measured: 0.994 to 0.996 for the English texts, 0.979 for the Chinese one (which this
        // English model mostly reads as unknown tokens).
        assert!(similarity > 0.97, "{text:?}: cosine {similarity} with the float model's vector");
    }
}

#[test]
fn minilm_with_int8_weights_still_finds_a_paraphrase_with_no_word_in_common() {
    let int8 = load_quantized(minilm_dir());
    let distractors = [
        "npm install fails behind a corporate proxy until the registry is set",
        "git rebase rewrote the commit history of the shared branch",
        "tsconfig.json strict mode reports possible null values",
        "the CSS grid layout breaks on safari versions before 15",
        "kubernetes pod cannot pull the image from a private registry",
        "cargo build is slow until incremental compilation is enabled",
    ];
    let (query, target) = ("stop the test runner from waiting for file changes", "vitest --run avoids watch mode");
    let mut texts = vec![query, target];
    texts.extend(distractors);
    let vectors = int8.embed(&texts).unwrap();
    let target_score = cosine(&vectors[0], &vectors[1]);
    let rank = 1 + vectors[2..].iter().filter(|distractor| cosine(&vectors[0], distractor) >= target_score).count();
    assert!(rank <= 3, "{target:?} ranked {rank} for {query:?}");
}

#[test]
fn the_tiny_model_keeps_its_vectors_with_an_int8_table() {
    let quantized = quantize_int8(&std::fs::read(tiny_model_dir().join("model.onnx")).unwrap()).unwrap();
    // The word table is quantized; the two-row token type table is too small to bother.
    assert_eq!((quantized.matmuls, quantized.gathers), (0, 1));
    let int8 = load_quantized(tiny_model_dir());
    assert!(int8.model_id().ends_with("+int8"), "{}", int8.model_id());
    let exact = tiny().embed(&TEXTS).unwrap();
    for ((text, exact), close) in TEXTS.iter().zip(&exact).zip(int8.embed(&TEXTS).unwrap()) {
        assert!(cosine(exact, &close) > 0.999, "{text:?}");
    }
}

#[test]
fn a_model_that_cannot_be_quantized_is_left_alone_with_the_reason() {
    let error = quantize_int8(b"not a model at all").unwrap_err();
    assert!(error.contains("not an ONNX model"), "{error}");
    // Quantizing twice finds nothing left to do.
    let once = quantize_int8(&std::fs::read(tiny_model_dir().join("model.onnx")).unwrap()).unwrap();
    let error = quantize_int8(&once.model).unwrap_err();
    assert!(error.contains("no float weight matrix"), "{error}");
}

/// MiniLM with int8 weights, cached under `cache`.
fn load_cached(cache: &std::path::Path) -> FastEmbedder {
    let options = LoadOptions { quantize: true, int8_cache: Some(cache.to_path_buf()), ..LoadOptions::default() };
    FastEmbedder::load_with(&ModelSpec::LocalDir(minilm_dir()), Some(&ort_library()), &options)
        .unwrap_or_else(|error| panic!("the cached model must load: {}", kb_embed::error_chain(&error)))
}

/// The one model directory in the cache, and the modification time of its tables.
fn cached_model(cache: &std::path::Path) -> Option<(std::path::PathBuf, std::time::SystemTime)> {
    let dirs: Vec<_> =
        std::fs::read_dir(cache).ok()?.flatten().map(|entry| entry.path()).filter(|path| path.is_dir()).collect();
    assert!(dirs.len() <= 1, "one model at a time: {dirs:?}");
    let dir = dirs.into_iter().next()?;
    let modified = std::fs::metadata(dir.join("weights.bin")).ok()?.modified().unwrap();
    Some((dir, modified))
}

#[test]
fn the_int8_model_is_cached_with_mapped_tables_reused_at_the_next_start_and_healed_when_damaged() {
    let cache = tempfile::tempdir().unwrap();
    let in_memory = load_quantized(minilm_dir());
    let expected = in_memory.embed(&TEXTS).unwrap();

    // The first start writes the cache; the model and its vectors are the in-memory rewrite's.
    let first = load_cached(cache.path());
    assert_eq!(first.model_id(), in_memory.model_id());
    let (dir, written) = cached_model(cache.path()).expect("the first start caches the int8 model");
    let graph_size = std::fs::metadata(dir.join("model.onnx")).unwrap().len();
    let tables_size = std::fs::metadata(dir.join("weights.bin")).unwrap().len();
    // The 30,522 × 384 word table (11.7 MB in int8) lives in the tables file, not in the graph
    // (which keeps the int8 matrices, each under the 1 MiB threshold: 11.8 MB).
    assert!(tables_size > 11_700_000 && graph_size < 12_500_000, "graph {graph_size} B, tables {tables_size} B");
    let check = |embedder: &FastEmbedder| {
        for ((text, expected), got) in TEXTS.iter().zip(&expected).zip(embedder.embed(&TEXTS).unwrap()) {
            let similarity = cosine(expected, &got);
            assert!(similarity > 0.99999, "{text:?}: cosine {similarity}");
        }
    };
    check(&first);
    drop(first);

    // The next start loads it as it is.
    let second = load_cached(cache.path());
    assert_eq!(second.model_id(), in_memory.model_id());
    assert_eq!(cached_model(cache.path()), Some((dir.clone(), written)), "the cache must not be rewritten");
    check(&second);
    drop(second);

    // A damaged cache (a flipped byte in the word table, then a truncated file) is found by
    // its checksums and written again: the vectors stay right.
    let mut tables = std::fs::read(dir.join("weights.bin")).unwrap();
    tables[5_000_000] ^= 0x40;
    std::fs::write(dir.join("weights.bin"), &tables).unwrap();
    check(&load_cached(cache.path()));
    tables[5_000_000] ^= 0x40;
    assert!(std::fs::read(dir.join("weights.bin")).unwrap() == tables, "the flipped byte must be found and mended");
    std::fs::write(dir.join("weights.bin"), b"truncated").unwrap();
    let healed = load_cached(cache.path());
    assert_eq!(healed.model_id(), in_memory.model_id());
    check(&healed);
    let (healed_dir, _) = cached_model(cache.path()).expect("the damaged cache is written again");
    assert_eq!(std::fs::metadata(healed_dir.join("weights.bin")).unwrap().len(), tables_size);
}
