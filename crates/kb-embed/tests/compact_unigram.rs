//! This crate's own way of running a local model gives what fastembed gives: the compact
//! Unigram tokenizer makes the same tokens as `tokenizers`' Unigram (as fastembed sets it up) on
//! every text of the project's data sets and on texts made to be awkward, and the vectors of
//! both local models (SentencePiece and WordPiece) are fastembed's to float rounding. Stored
//! vectors stay valid across the change because the model id does not change.

mod common;

use std::path::{Path, PathBuf};

use common::{cosine, e5_dir, minilm_dir, ort_library};
use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use kb_embed::onnx::{LocalTokenizer, TokenizerBytes};
use kb_embed::{Embedder, FastEmbedder, LoadOptions, ModelSpec};

fn files(dir: &Path) -> TokenizerFiles {
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    TokenizerFiles {
        tokenizer_file: read("tokenizer.json"),
        config_file: read("config.json"),
        special_tokens_map_file: read("special_tokens_map.json"),
        tokenizer_config_file: read("tokenizer_config.json"),
    }
}

/// fastembed's own model and tokenizer, as the daemon loaded them before.
fn fastembed_model(dir: &Path) -> TextEmbedding {
    let environment = kb_embed::runtime::environment(Some(&ort_library())).unwrap();
    let model = UserDefinedEmbeddingModel::new(std::fs::read(dir.join("model.onnx")).unwrap(), files(dir))
        .with_pooling(Pooling::Mean);
    let options =
        InitOptionsUserDefined::new().with_environment(environment).with_max_length(256).with_intra_threads(2);
    TextEmbedding::try_new_from_user_defined(model, options).unwrap()
}

fn compact_tokenizer(dir: &Path) -> LocalTokenizer {
    let files = files(dir);
    let bytes = TokenizerBytes {
        tokenizer: &files.tokenizer_file,
        config: &files.config_file,
        special_tokens_map: &files.special_tokens_map_file,
        tokenizer_config: &files.tokenizer_config_file,
    };
    LocalTokenizer::load(&bytes, 256).unwrap()
}

/// Every text field of every JSON Lines file of the project's data sets.
fn data_set_texts() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut paths: Vec<PathBuf> = Vec::new();
    for dir in [
        "crates/kb-bench/data/cmrc-trial",
        "crates/kb-bench/data/cmrc-trial-chunks",
        "crates/kb-bench/data/english-experiences",
        "crates/kb-core/tests/data",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|extension| extension == "jsonl") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut texts = Vec::new();
    for path in paths {
        for line in std::fs::read_to_string(&path).unwrap().lines().filter(|line| !line.trim().is_empty()) {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            for key in ["text", "task", "resource", "result", "content"] {
                if let Some(text) = row[key].as_str() {
                    texts.push(text.to_owned());
                }
            }
        }
    }
    texts
}

/// Texts that are hard on a tokenizer: unknown scripts and symbols in runs, combining marks,
/// emoji sequences, control and zero-width characters, full-width forms, special tokens written
/// out, very long words, only spaces.
fn awkward_texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "",
        " ",
        "   ",
        "\t\n",
        "a",
        "▁",
        "▁▁x",
        "<s>",
        "</s> <unk> <pad> <mask>",
        "x<unk>y",
        "𓀀𓀁𓀂 hieroglyphs 𓀃",
        "ꙮꙮꙮ",
        "🏳️‍🌈👩‍👩‍👧‍👦 family",
        "e\u{301}\u{301}\u{301}",
        "\u{200b}zero\u{200d}width\u{feff}",
        "ＦＵＬＬ　ＷＩＤＴＨ　１２３",
        "ﬁﬂ ligatures Ⅻ ㎏ ①",
        "\u{1}\u{7f}controls\u{85}",
        "a\u{0}b",
        "数据库迁移失败，回滚后用事务重试成功。",
        "日本語のテキストとカタカナ",
        "한국어 텍스트",
        "Ελληνικά кириллица עברית العربية हिन्दी ไทย",
        "supercalifragilisticexpialidociousantidisestablishmentarianism",
        "snake_case_identifier.with.dots/and/slashes --flag=value",
    ]
    .iter()
    .map(|text| text.to_string())
    .collect();
    texts.push("🙂".repeat(300));
    texts.push("词".repeat(600));
    texts.push("x".repeat(5000));
    // Every code point class in a deterministic walk over the Basic Multilingual Plane and beyond.
    let walk: String = (0..6000u32).filter_map(|step| char::from_u32(step.wrapping_mul(7919) % 0x2_0000)).collect();
    texts.extend(walk.chars().collect::<Vec<char>>().chunks(40).map(|chunk| chunk.iter().collect::<String>()));
    texts
}

#[test]
fn the_compact_unigram_makes_the_tokens_fastembed_makes_on_every_text() {
    let dir = e5_dir();
    let reference = fastembed_model(&dir);
    let compact = compact_tokenizer(&dir);
    assert!(matches!(compact, LocalTokenizer::Compact(_)), "multilingual-e5-small has a Unigram vocabulary");
    let mut texts = data_set_texts();
    assert!(texts.len() > 5000, "{} texts", texts.len());
    texts.extend(awkward_texts());
    let mut differences = Vec::new();
    for batch in texts.chunks(64) {
        let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
        let expected = reference.tokenizer.encode_batch(batch.clone(), true).unwrap();
        let got = compact.encode_batch(&batch).unwrap();
        for ((text, expected), got) in batch.iter().zip(&expected).zip(&got) {
            if expected.get_ids() != got.get_ids() || expected.get_attention_mask() != got.get_attention_mask() {
                differences.push(format!("{text:?}: {:?} != {:?}", &expected.get_ids(), &got.get_ids()));
            }
        }
    }
    assert!(differences.is_empty(), "{} of {} texts differ, first: {}", differences.len(), texts.len(), differences[0]);
}

#[test]
fn both_local_models_embed_what_fastembed_embeds() {
    let texts = [
        "vitest --run avoids watch mode",
        "数据库迁移失败，回滚后用事务重试成功。",
        "how do I make the tests stop watching",
        "the container ran out of memory and was killed by the kernel",
        "kubectl rollout restart fixed the stuck deployment after the config map changed",
    ];
    for dir in [e5_dir(), minilm_dir()] {
        let own =
            FastEmbedder::load_with(&ModelSpec::LocalDir(dir.clone()), Some(&ort_library()), &LoadOptions::default())
                .unwrap();
        let got = own.embed(&texts).unwrap();
        // `embed` writes the model's passage prefix before each text; fastembed is given the same.
        let prefixed: Vec<String> = texts.iter().map(|text| format!("{}{text}", own.prefixes().passage)).collect();
        drop(own);
        let expected = fastembed_model(&dir).embed(&prefixed, None).unwrap();
        for ((text, expected), got) in texts.iter().zip(&expected).zip(&got) {
            let similarity = cosine(expected, got);
            assert!(similarity > 0.99999, "{}: {text:?}: cosine {similarity}", dir.display());
        }
    }
}
