//! Measures retrieval quality on a CMRC-style data set and indexing throughput on synthetic
//! experiences: `cargo run -p kb-index --release --example cmrc_recall -- crates/kb-bench/data/cmrc-trial-chunks`.
//!
//! Quality: the corpus text is indexed as the task field in RAM, every query runs with limit 10,
//! and Recall@1/5/10 (share of relevant ids in the top k, averaged over queries) and MRR@10 are
//! printed, with index time and query latency. Throughput: 100,000 synthetic mixed Chinese and
//! English experiences of about 200 characters are indexed on disk and committed once; then 200
//! single-experience upsert-and-commit rounds show what one submit costs.
//! Pass `--no-throughput` to skip the second part.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kb_core::Status;
use kb_index::{ExperienceIndex, IndexDoc, SearchRequest};
use serde::Deserialize;

#[derive(Deserialize)]
struct CorpusRow {
    id: String,
    text: String,
}

#[derive(Deserialize)]
struct QueryRow {
    text: String,
    relevant: Vec<String>,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(line_idx, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{}:{}: bad json: {err}", path.display(), line_idx + 1))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let data_dir =
        args.iter().find(|arg| !arg.starts_with("--")).map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../kb-bench/data/cmrc-trial-chunks"))
        });
    let run_throughput = !args.iter().any(|arg| arg == "--no-throughput");

    let warm_start = Instant::now();
    kb_index::warm_up();
    println!("jieba warm-up: {:.0} ms", ms(warm_start.elapsed()));

    let corpus: Vec<CorpusRow> = read_jsonl(&data_dir.join("corpus.jsonl"));
    let queries: Vec<QueryRow> = read_jsonl(&data_dir.join("queries.jsonl"));
    measure_quality(&data_dir, &corpus, &queries);
    if run_throughput {
        measure_throughput(&corpus);
    }
}

fn measure_quality(data_dir: &Path, corpus: &[CorpusRow], queries: &[QueryRow]) {
    let index = ExperienceIndex::open_in_ram().expect("in-memory index");
    let index_start = Instant::now();
    let docs: Vec<IndexDoc<'_>> = corpus
        .iter()
        .map(|row| IndexDoc {
            id: &row.id,
            task: &row.text,
            resource: "",
            result: "",
            content: None,
            score: 3,
            status: Status::Active,
            agent_id: None,
        })
        .collect();
    index.upsert(&docs).expect("upsert");
    index.commit(1).expect("commit");
    let index_time = index_start.elapsed();

    let ks = [1usize, 5, 10];
    let mut recall_sums = [0.0f64; 3];
    let mut mrr_sum = 0.0f64;
    let mut latencies = Vec::with_capacity(queries.len());
    for query in queries {
        let start = Instant::now();
        let hits = index
            .search(&SearchRequest {
                query: &query.text,
                limit: 10,
                min_score: 1,
                agent_id: None,
                status: Status::Active,
                coverage: false,
            })
            .expect("search");
        latencies.push(start.elapsed());
        let relevant: HashSet<&str> = query.relevant.iter().map(String::as_str).collect();
        for (k_idx, &k) in ks.iter().enumerate() {
            let found = hits.iter().take(k).filter(|hit| relevant.contains(hit.id.as_str())).count();
            recall_sums[k_idx] += found as f64 / relevant.len().max(1) as f64;
        }
        if let Some(rank) = hits.iter().position(|hit| relevant.contains(hit.id.as_str())) {
            mrr_sum += 1.0 / (rank + 1) as f64;
        }
    }
    latencies.sort();
    let n_queries = queries.len().max(1) as f64;
    println!("{}: {} docs, {} queries", data_dir.display(), corpus.len(), queries.len());
    println!(
        "Recall@1 {:.4}  Recall@5 {:.4}  Recall@10 {:.4}  MRR@10 {:.4}",
        recall_sums[0] / n_queries,
        recall_sums[1] / n_queries,
        recall_sums[2] / n_queries,
        mrr_sum / n_queries
    );
    println!(
        "index time {:.1} ms; query latency p50 {:.3} ms, p99 {:.3} ms",
        ms(index_time),
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
    );
}

/// Builds ~200-character experiences from corpus sentences and a pool of identifiers, indexes
/// 100,000 of them into an on-disk index and commits once.
fn measure_throughput(corpus: &[CorpusRow]) {
    const N_DOCS: usize = 100_000;
    let fragments: Vec<String> = corpus
        .iter()
        .flat_map(|row| row.text.split(['。', '，', '；']))
        .map(str::trim)
        .filter(|fragment| fragment.chars().count() >= 6)
        .map(|fragment| fragment.chars().take(50).collect())
        .collect();
    let identifiers = [
        "tsconfig.json",
        "vitest --run",
        "cargo test -p kb-index",
        "snake_case",
        "camelCase",
        "npm install --save-dev",
        "useEffect",
        "git rebase -i",
        "docker compose up -d",
        "SELECT * FROM users",
        "pytest -k test_login",
        "HTTPServer",
        "node_modules",
        "README.md",
        "kubectl get pods",
        "std::sync::Mutex",
        "async fn main()",
        "eslint --fix",
        "webpack.config.js",
        "Cargo.toml [workspace.dependencies]",
    ];
    let english = [
        "the build failed because the cache was stale",
        "running tests in watch mode blocks the agent",
        "use the release profile for benchmarks",
        "the API returns 429 when rate limited, retry with backoff",
        "configure the path alias in the compiler options",
        "avoid interactive prompts in CI",
    ];
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut texts: Vec<(String, String, String, String)> = Vec::with_capacity(N_DOCS);
    let mut total_chars = 0usize;
    for doc_idx in 0..N_DOCS {
        let task = format!(
            "{}，{} {}",
            fragments[rng.below(fragments.len())],
            identifiers[rng.below(identifiers.len())],
            english[rng.below(english.len())]
        );
        let resource = identifiers[rng.below(identifiers.len())].to_owned();
        let result = format!(
            "{}。{}；{}，{}",
            fragments[rng.below(fragments.len())],
            english[rng.below(english.len())],
            fragments[rng.below(fragments.len())],
            identifiers[rng.below(identifiers.len())]
        );
        total_chars += task.chars().count() + resource.chars().count() + result.chars().count();
        texts.push((format!("01SYNTH{doc_idx:08}"), task, resource, result));
    }
    let docs: Vec<IndexDoc<'_>> = texts
        .iter()
        .map(|(id, task, resource, result)| IndexDoc {
            id,
            task,
            resource,
            result,
            content: None,
            score: 3,
            status: Status::Active,
            agent_id: Some("main"),
        })
        .collect();

    let rss_before = peak_rss_mb();
    let dir = tempfile::tempdir().expect("temp dir");
    let (index, _) = ExperienceIndex::open(&dir.path().join("index")).expect("open");
    let cpu_start = cpu_seconds();
    let start = Instant::now();
    for batch in docs.chunks(1000) {
        index.upsert(batch).expect("upsert");
    }
    let added = start.elapsed();
    index.commit(N_DOCS as u64).expect("commit");
    let total = start.elapsed();
    let cpu = cpu_seconds() - cpu_start;
    println!("indexing CPU time {cpu:.2} s = {:.0} docs per CPU-second", N_DOCS as f64 / cpu);
    println!(
        "throughput: {N_DOCS} docs (avg {} chars) in {:.2} s (upsert {:.2} s + commit {:.2} s) = {:.0} docs/s; peak RSS {} MB before indexing (generated text), {} MB after",
        total_chars / N_DOCS,
        total.as_secs_f64(),
        added.as_secs_f64(),
        (total - added).as_secs_f64(),
        N_DOCS as f64 / total.as_secs_f64(),
        rss_before,
        peak_rss_mb()
    );

    // What one submit costs the daemon: upsert one experience, commit durably, search for it.
    let mut commit_latencies = Vec::new();
    for (round, doc) in docs.iter().take(200).enumerate() {
        let start = Instant::now();
        index.upsert(std::slice::from_ref(doc)).expect("upsert");
        index.commit(N_DOCS as u64 + round as u64 + 1).expect("commit");
        commit_latencies.push(start.elapsed());
    }
    commit_latencies.sort();
    println!(
        "single upsert + commit on a {N_DOCS}-doc index: p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&commit_latencies, 0.50)),
        ms(percentile(&commit_latencies, 0.99)),
    );

    // Reopening validates the checksum of every index file, so it scales with the index size.
    drop(index);
    let start = Instant::now();
    let (index, outcome) = ExperienceIndex::open(&dir.path().join("index")).expect("reopen");
    println!(
        "reopen of the {}-doc index ({outcome:?}) with checksum validation: {:.1} ms",
        index.num_docs(),
        ms(start.elapsed())
    );
}

struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], quantile: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * quantile).round() as usize;
    sorted[idx]
}

fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmHWM:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// User plus system CPU time of this process, from /proc (clock ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // The command name may contain spaces; fields after it are space-separated.
            let after_name = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}
