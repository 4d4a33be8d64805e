//! Where an embedding model's memory goes: resident memory (heap and mapped files) and its peak
//! after each stage of loading a model and embedding with it. Linux only. Run it in release:
//!
//! ```text
//! KNOWHUB_MODEL_DIR=.cache/models/all-minilm-l6-v2-onnx ORT_DYLIB_PATH=.../libonnxruntime.so.1.31.1 \
//!     cargo run --release -p kb-embed --example model_memory
//! ```
//!
//! With `KB_QUANTIZE=1` the model is loaded with int8 weights (`LoadOptions::quantize`), with
//! `KB_CPU_ARENA=1` ONNX Runtime keeps its CPU arena (`LoadOptions::cpu_arena`), with
//! `KB_INT8_CACHE=DIR` the int8 model is cached there with mapped tables (`LoadOptions::int8_cache`;
//! run twice: the second start loads the cache). `KB_SKIP_TOKENIZER=1` skips loading
//! `tokenizers`' own tokenizer first, so that the peak is the model's. `tokenizers`'
//! own tokenizer is first loaded alone, to show what the compact Unigram saves.

use kb_embed::{Embedder, FastEmbedder, LoadOptions, ModelSpec};

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Resident KiB of the mappings of files whose name ends with `suffix` (the int8 cache's tables).
fn mapped_kib(suffix: &str) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut inside = false;
    let mut total = 0;
    for line in smaps.lines() {
        if line.split_whitespace().next().is_some_and(|first| first.contains('-') && !first.ends_with(':')) {
            inside = line.ends_with(suffix);
        } else if inside && let Some(kib) = line.strip_prefix("Rss:") {
            total += kib.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap_or(0);
        }
    }
    total
}

fn report(stage: &str) {
    let mib = |field| status_kib(field) as f64 / 1024.0;
    println!(
        "{stage:<34} rss {:>6.1} MiB  (heap {:>6.1}, files {:>5.1}, of which mapped tables {:>5.1})  peak {:>6.1} MiB",
        mib("VmRSS:"),
        mib("RssAnon:"),
        mib("RssFile:"),
        mapped_kib("weights.bin") as f64 / 1024.0,
        mib("VmHWM:")
    );
}

fn trim() {
    // SAFETY: malloc_trim only returns free pages of the allocator's own arenas to the system.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        malloc_trim(0);
    }
}

fn main() {
    let Some(dir) = std::env::var_os("KNOWHUB_MODEL_DIR") else {
        eprintln!("set KNOWHUB_MODEL_DIR to a model directory (and ORT_DYLIB_PATH to ONNX Runtime)");
        std::process::exit(2);
    };
    report("start");
    // The tokenizer alone first (the same file fastembed loads below): how much of the model's
    // memory is its vocabulary.
    let dir_path = std::path::PathBuf::from(&dir);
    let alone = if std::env::var_os("KB_SKIP_TOKENIZER").is_some() {
        Err("skipped (KB_SKIP_TOKENIZER)".into())
    } else {
        tokenizers::Tokenizer::from_file(dir_path.join("tokenizer.json"))
    };
    match alone {
        Ok(tokenizer) => {
            trim();
            report("tokenizer alone, trimmed");
            drop(tokenizer);
            trim();
            report("tokenizer dropped, trimmed");
        }
        Err(error) => eprintln!("cannot load the tokenizer alone: {error}"),
    }
    let options = LoadOptions {
        quantize: std::env::var_os("KB_QUANTIZE").is_some(),
        cpu_arena: std::env::var_os("KB_CPU_ARENA").is_some(),
        int8_cache: std::env::var_os("KB_INT8_CACHE").map(std::path::PathBuf::from),
        ..LoadOptions::default()
    };
    let embedder = match FastEmbedder::load_with(&ModelSpec::LocalDir(dir.into()), None, &options) {
        Ok(embedder) => embedder,
        Err(error) => {
            eprintln!("cannot load the model: {error}");
            std::process::exit(1);
        }
    };
    report("model loaded");
    trim();
    report("model loaded, trimmed");
    let short = ["vitest --run avoids watch mode"; 1];
    for _ in 0..100 {
        embedder.embed(&short).expect("embed");
    }
    report("100 short queries");
    let long: Vec<String> = (0..64)
        .map(|text_idx| format!("{text_idx} 数据库迁移失败，回滚后用事务重试成功。 ").repeat(1 + text_idx % 12))
        .collect();
    let long_refs: Vec<&str> = long.iter().map(String::as_str).collect();
    for chunk in long_refs.chunks(16) {
        embedder.embed(chunk).expect("embed");
    }
    report("64 long texts in runs of 16");
    trim();
    report("trimmed");
}
