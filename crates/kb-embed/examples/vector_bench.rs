//! Latency of vector search over 100k random 384-dimensional vectors: a plain loop, the f32 index
//! and the int8 index, top-10, p50 and p99 over many queries. Run it in release:
//!
//! ```text
//! cargo run --release -p kb-embed --example vector_bench [n_vectors] [n_queries]
//! ```
//!
//! With `KNOWHUB_MODEL_DIR` (a model directory) and `ORT_DYLIB_PATH` set it also measures how
//! long embedding one short query takes, the other half of a hybrid search's vector side.

use std::time::{Duration, Instant};

use kb_embed::{Embedder, FastEmbedder, LoadOptions, ModelSpec, Precision, VectorIndex, normalize};

const DIMENSIONS: usize = 384;
const TOP_K: usize = 10;

struct Random(u64);

impl Random {
    fn next_f32(&mut self) -> f32 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn vector(&mut self) -> Vec<f32> {
        normalize(&(0..DIMENSIONS).map(|_| self.next_f32() + self.next_f32() + self.next_f32()).collect::<Vec<_>>())
    }
}

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |fraction: f64| samples[((samples.len() as f64 * fraction) as usize).min(samples.len() - 1)];
    format!("p50 {:>7.3} ms   p99 {:>7.3} ms", at(0.50).as_secs_f64() * 1e3, at(0.99).as_secs_f64() * 1e3)
}

fn time_queries(queries: &[Vec<f32>], mut search: impl FnMut(&[f32]) -> usize) -> Vec<Duration> {
    // One warm-up pass over a few queries, so page faults and cold caches are not measured.
    for query in queries.iter().take(5) {
        std::hint::black_box(search(query));
    }
    queries
        .iter()
        .map(|query| {
            let started = Instant::now();
            std::hint::black_box(search(query));
            started.elapsed()
        })
        .collect()
}

/// The baseline: one running sum per vector, then a full sort of the scores.
fn plain_loop(flat: &[f32], query: &[f32]) -> usize {
    let mut scores: Vec<(f32, usize)> = flat
        .chunks_exact(DIMENSIONS)
        .enumerate()
        .map(|(slot, vector)| (vector.iter().zip(query).map(|(a, b)| a * b).sum::<f32>(), slot))
        .collect();
    scores.select_nth_unstable_by(TOP_K, |a, b| b.0.total_cmp(&a.0));
    scores[0].1
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n_vectors: usize = args.next().map_or(100_000, |arg| arg.parse().expect("n_vectors"));
    let n_queries: usize = args.next().map_or(500, |arg| arg.parse().expect("n_queries"));
    let mut random = Random(42);

    let started = Instant::now();
    let vectors: Vec<Vec<f32>> = (0..n_vectors).map(|_| random.vector()).collect();
    let queries: Vec<Vec<f32>> = (0..n_queries).map(|_| random.vector()).collect();
    println!(
        "{n_vectors} vectors x {DIMENSIONS} dims, {n_queries} queries, top {TOP_K} (generated in {:.1?})",
        started.elapsed()
    );
    println!("avx2: {}", cfg!(target_arch = "x86_64") && std::arch::is_x86_feature_detected!("avx2"));

    let flat: Vec<f32> = vectors.concat();
    println!("plain loop    {}", percentiles(time_queries(&queries, |query| plain_loop(&flat, query))));
    drop(flat);

    let mut indexes = Vec::new();
    for precision in [Precision::F32, Precision::Int8] {
        let mut index = VectorIndex::<String>::new(DIMENSIONS, precision);
        let started = Instant::now();
        for (vector_idx, vector) in vectors.iter().enumerate() {
            index.upsert(format!("{vector_idx:026}"), vector).unwrap();
        }
        let built = started.elapsed();
        let samples = time_queries(&queries, |query| index.search(query, TOP_K).unwrap().len());
        println!(
            "{:<13} {}   (built in {:.0?}, {} MB of vectors)",
            format!("{precision:?} index"),
            percentiles(samples),
            built,
            index.vector_bytes() / 1_000_000
        );
        indexes.push(index);
    }
    let (mut n_top1_agree, mut n_recalled) = (0, 0);
    for query in &queries {
        let exact: Vec<String> = indexes[0].search(query, TOP_K).unwrap().into_iter().map(|hit| hit.id).collect();
        let quantized: Vec<String> = indexes[1].search(query, TOP_K).unwrap().into_iter().map(|hit| hit.id).collect();
        n_top1_agree += usize::from(exact[0] == quantized[0]);
        n_recalled += quantized.iter().filter(|id| exact.contains(id)).count();
    }
    println!(
        "int8 vs f32   top-1 agreement {:.1}%, top-{TOP_K} recall {:.1}%",
        100.0 * n_top1_agree as f64 / queries.len() as f64,
        100.0 * n_recalled as f64 / (queries.len() * TOP_K) as f64
    );
    drop(indexes);

    if let (Some(model_dir), Some(_)) = (std::env::var_os("KNOWHUB_MODEL_DIR"), std::env::var_os("ORT_DYLIB_PATH")) {
        for threads in [1, 2] {
            let options = LoadOptions { intra_threads: Some(threads), ..LoadOptions::default() };
            let started = Instant::now();
            let embedder = FastEmbedder::load_with(&ModelSpec::LocalDir(model_dir.clone().into()), None, &options)
                .unwrap_or_else(|error| panic!("{}", kb_embed::error_chain(&error)));
            let loaded = started.elapsed();
            let texts =
                ["how do I make the tests stop watching", "vitest --run", "tsconfig.json paths alias not resolved"];
            let samples: Vec<Duration> = (0..200)
                .map(|query_idx| {
                    let started = Instant::now();
                    std::hint::black_box(embedder.embed(&[texts[query_idx % texts.len()]]).unwrap());
                    started.elapsed()
                })
                .collect();
            println!(
                "embed 1 query {}   ({threads} thread(s), {} loaded in {loaded:.0?})",
                percentiles(samples),
                embedder.model_id()
            );
        }
    }
}
