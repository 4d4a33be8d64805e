//! `kb-bench load`: import throughput, search latency over the socket and memory of the real
//! daemon at each size, next to SQLite FTS5 doing the same import and queries in-process.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchParams, SearchResult, StatusResult};
use serde::Serialize;

use crate::daemon::{BenchDaemon, CpuUse, Memory};
use crate::fts5::Fts5Store;
use crate::generate::{self, GeneratedExperience, GeneratedQuery, Language};
use crate::report::{self, row};
use crate::stats::LatencySummary;

/// What every search asks for.
pub const TOP_K: i64 = 5;
pub const MIN_SCORE: i64 = 1;

/// The goals of the issue, checked at 100,000 experiences.
pub const GOAL_P99_US: f64 = 1_000.0;
pub const GOAL_FTS5_RATIO: f64 = 5.0;
pub const GOAL_IMPORT_PER_S: f64 = 20_000.0;
pub const GOAL_SIZE: usize = 100_000;

/// Longest wait for the daemon to go idle (index merges) between import and queries.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct LoadOptions {
    pub sizes: Vec<usize>,
    pub n_queries: usize,
    pub n_warmup: usize,
    pub batch_size: usize,
    pub seed: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub batch_size: usize,
    pub n_queries: usize,
    pub n_warmup: usize,
    pub top_k: i64,
    pub min_score: i64,
    pub seed: u64,
    pub sizes: Vec<SizeReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SizeReport {
    pub n_experiences: usize,
    /// Mean characters per experience (task + resource + result).
    pub mean_chars: f64,
    pub knowhub: KnowhubFigures,
    pub fts5: Fts5Figures,
    /// FTS5 p99 / KnowHub p99: how many times faster KnowHub answers at the tail.
    pub fts5_over_knowhub_p99: f64,
    pub fts5_over_knowhub_p50: f64,
    pub goals: Goals,
}

#[derive(Debug, Clone, Serialize)]
pub struct KnowhubFigures {
    /// Wall time of all `kb.import` calls, from the first request to the last answer.
    pub import_s: f64,
    pub import_per_s: f64,
    /// Slowest and mean single `kb.import` call.
    pub import_batch_max_s: f64,
    pub import_batch_mean_s: f64,
    /// CPU the daemon used during the import (all threads), and the time its threads were
    /// runnable but waited for a CPU taken by other processes.
    pub import_daemon_cpu_s: f64,
    pub import_daemon_runqueue_wait_s: f64,
    pub imported: usize,
    pub duplicates: usize,
    pub rejected: usize,
    pub index_documents: u64,
    /// How long the daemon kept working (index merges) after the last import answered.
    pub settle_s: f64,
    pub search_mode: String,
    pub search: LatencySummary,
    pub search_by_language: BTreeMap<&'static str, LatencySummary>,
    /// CPU the daemon used per measured query, and the time its threads waited for a CPU
    /// over all measured queries.
    pub search_daemon_cpu_per_query_us: f64,
    pub search_daemon_runqueue_wait_s: f64,
    /// Share of queries with at least one result.
    pub hit_rate: f64,
    pub hit_rate_by_language: BTreeMap<&'static str, f64>,
    pub memory_after_import: Memory,
    pub memory_after_queries: Memory,
    pub disk_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fts5Figures {
    pub import_s: f64,
    pub import_per_s: f64,
    pub search: LatencySummary,
    pub search_by_language: BTreeMap<&'static str, LatencySummary>,
    pub hit_rate: f64,
    pub hit_rate_by_language: BTreeMap<&'static str, f64>,
    pub disk_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Goals {
    /// Whether the goals apply at this size (they are stated for 100,000).
    pub applies: bool,
    pub p99_at_most_1ms: bool,
    pub at_least_5x_faster_than_fts5: bool,
    pub import_at_least_20k_per_s: bool,
}

/// Runs the load benchmark at every size, printing each size's table as it completes unless
/// `quiet` (JSON output).
pub async fn run(daemon_binary: &Path, options: &LoadOptions, quiet: bool) -> anyhow::Result<LoadReport> {
    if options.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    if options.n_queries == 0 {
        bail!("--queries must be at least 1: the latency figures need measured queries");
    }
    let warmup = generate::queries(options.n_warmup, options.seed ^ 0x5157_4152_4d55_5000);
    let queries = generate::queries(options.n_queries, options.seed ^ 0x5155_4552_5953_0000);
    if !quiet {
        println!(
            "load: {} queries after {} warm-up, top_k {TOP_K}, min_score {MIN_SCORE}; import in batches of {} items per kb.import request",
            report::thousands(options.n_queries as u64),
            report::thousands(options.n_warmup as u64),
            report::thousands(options.batch_size as u64),
        );
        println!(
            "  KnowHub is measured over its Unix socket (JSON-RPC over HTTP, one keep-alive connection, one query at a time);"
        );
        println!(
            "  FTS5 runs in this process (no socket, no JSON): its numbers are a lower bound on what a client would see."
        );
    }
    let mut sizes = Vec::with_capacity(options.sizes.len());
    for &n_experiences in &options.sizes {
        eprintln!("[load] generating {} experiences", report::thousands(n_experiences as u64));
        let items = generate::experiences(n_experiences, options.seed);
        let mean_chars =
            items.iter().map(GeneratedExperience::n_chars).sum::<usize>() as f64 / items.len().max(1) as f64;
        let knowhub = measure_knowhub(daemon_binary, &items, &warmup, &queries, options.batch_size)
            .await
            .with_context(|| format!("KnowHub at {n_experiences} experiences"))?;
        let fts5 = measure_fts5(&items, &warmup, &queries, options.batch_size)
            .with_context(|| format!("FTS5 at {n_experiences} experiences"))?;
        let size = SizeReport {
            n_experiences,
            mean_chars,
            fts5_over_knowhub_p99: fts5.search.p99_us / knowhub.search.p99_us,
            fts5_over_knowhub_p50: fts5.search.p50_us / knowhub.search.p50_us,
            goals: Goals {
                applies: n_experiences == GOAL_SIZE,
                p99_at_most_1ms: knowhub.search.p99_us <= GOAL_P99_US,
                at_least_5x_faster_than_fts5: fts5.search.p99_us >= GOAL_FTS5_RATIO * knowhub.search.p99_us,
                import_at_least_20k_per_s: knowhub.import_per_s >= GOAL_IMPORT_PER_S,
            },
            knowhub,
            fts5,
        };
        if !quiet {
            print_size(&size);
        }
        sizes.push(size);
    }
    Ok(LoadReport {
        batch_size: options.batch_size,
        n_queries: options.n_queries,
        n_warmup: options.n_warmup,
        top_k: TOP_K,
        min_score: MIN_SCORE,
        seed: options.seed,
        sizes,
    })
}

async fn measure_knowhub(
    daemon_binary: &Path,
    items: &[GeneratedExperience],
    warmup: &[GeneratedQuery],
    queries: &[GeneratedQuery],
    batch_size: usize,
) -> anyhow::Result<KnowhubFigures> {
    let daemon = BenchDaemon::start(daemon_binary).await?;
    eprintln!("[load] knowhubd pid {} on {}", daemon.pid()?, daemon.home().display());
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;

    // The request bodies are built before the clock starts; serializing them to bytes is
    // part of the measurement, as it is for any client.
    let batches: Vec<serde_json::Value> =
        items.chunks(batch_size).map(|batch| serde_json::json!({ "items": batch })).collect();
    eprintln!("[load] importing {} experiences in {} requests", items.len(), batches.len());
    let (mut imported, mut duplicates, mut rejected) = (0, 0, 0);
    let mut batch_times = Vec::with_capacity(batches.len());
    let cpu_before_import = daemon.cpu_use()?;
    let started = Instant::now();
    for params in batches {
        let batch_started = Instant::now();
        let answer: ImportResult = serde_json::from_value(
            client.call_value(kb_proto::method::IMPORT, params).await.context("kb.import failed")?,
        )
        .context("cannot read the kb.import answer")?;
        batch_times.push(batch_started.elapsed());
        imported += answer.imported;
        duplicates += answer.duplicates;
        rejected += answer.rejected.len();
    }
    let import_time = started.elapsed();
    let import_cpu = daemon.cpu_use()?.since(cpu_before_import);
    let memory_after_import = daemon.memory()?;
    if rejected > 0 || duplicates > 0 {
        eprintln!("[load] warning: {rejected} items rejected and {duplicates} merged as duplicates");
    }

    let settle_time = daemon.settle(SETTLE_LIMIT).await?;
    let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
    eprintln!(
        "[load] imported in {:.2} s; daemon idle after {:.2} s more; index has {} documents; running {} queries",
        import_time.as_secs_f64(),
        settle_time.as_secs_f64(),
        status.index.documents,
        warmup.len() + queries.len()
    );

    let mut search_mode = String::new();
    for query in warmup {
        search_mode = knowhub_search(&mut client, &query.text).await?.mode;
    }
    let mut timings = Vec::with_capacity(queries.len());
    let mut hits = Vec::with_capacity(queries.len());
    let cpu_before_queries = daemon.cpu_use()?;
    for query in queries {
        let started = Instant::now();
        let answer = knowhub_search(&mut client, &query.text).await?;
        timings.push(started.elapsed());
        hits.push(answer.count > 0);
        search_mode = answer.mode;
    }
    let search_cpu: CpuUse = daemon.cpu_use()?.since(cpu_before_queries);
    let memory_after_queries = daemon.memory()?;
    let disk_bytes = daemon.disk_bytes();
    drop(client);
    daemon.stop().await?;

    let batch_max = batch_times.iter().max().copied().unwrap_or_default();
    let batch_mean = batch_times.iter().sum::<Duration>() / batch_times.len().max(1) as u32;
    Ok(KnowhubFigures {
        import_s: import_time.as_secs_f64(),
        import_per_s: items.len() as f64 / import_time.as_secs_f64(),
        import_batch_max_s: batch_max.as_secs_f64(),
        import_batch_mean_s: batch_mean.as_secs_f64(),
        import_daemon_cpu_s: import_cpu.cpu.as_secs_f64(),
        import_daemon_runqueue_wait_s: import_cpu.runqueue_wait.as_secs_f64(),
        imported,
        duplicates,
        rejected,
        index_documents: status.index.documents,
        settle_s: settle_time.as_secs_f64(),
        search_mode,
        search: LatencySummary::of(&timings),
        search_by_language: latency_by_language(queries, &timings),
        search_daemon_cpu_per_query_us: search_cpu.cpu.as_secs_f64() * 1e6 / queries.len().max(1) as f64,
        search_daemon_runqueue_wait_s: search_cpu.runqueue_wait.as_secs_f64(),
        hit_rate: share(&hits),
        hit_rate_by_language: hit_rate_by_language(queries, &hits),
        memory_after_import,
        memory_after_queries,
        disk_bytes,
    })
}

async fn knowhub_search(client: &mut Client, query: &str) -> anyhow::Result<SearchResult> {
    let params = SearchParams {
        query: query.to_owned(),
        top_k: Some(TOP_K),
        min_score: Some(MIN_SCORE),
        agent_id: None,
        mode: None,
        origin: None,
        unreviewed: None,
    };
    client.call(kb_proto::method::SEARCH, &params).await.with_context(|| format!("kb.search {query:?} failed"))
}

fn measure_fts5(
    items: &[GeneratedExperience],
    warmup: &[GeneratedQuery],
    queries: &[GeneratedQuery],
    batch_size: usize,
) -> anyhow::Result<Fts5Figures> {
    eprintln!("[load] FTS5: inserting {} experiences", items.len());
    let mut store = Fts5Store::create()?;
    let import_time = store.insert(
        items.iter().map(|item| (item.task.as_str(), item.resource.as_str(), item.result.as_str())),
        batch_size,
    )?;
    eprintln!(
        "[load] FTS5: inserted in {:.2} s; running {} queries",
        import_time.as_secs_f64(),
        warmup.len() + queries.len()
    );
    for query in warmup {
        store.search(&query.text, TOP_K as usize)?;
    }
    let mut timings = Vec::with_capacity(queries.len());
    let mut hits = Vec::with_capacity(queries.len());
    for query in queries {
        let started = Instant::now();
        let found = store.search(&query.text, TOP_K as usize)?;
        timings.push(started.elapsed());
        hits.push(!found.is_empty());
    }
    Ok(Fts5Figures {
        import_s: import_time.as_secs_f64(),
        import_per_s: items.len() as f64 / import_time.as_secs_f64(),
        search: LatencySummary::of(&timings),
        search_by_language: latency_by_language(queries, &timings),
        hit_rate: share(&hits),
        hit_rate_by_language: hit_rate_by_language(queries, &hits),
        disk_bytes: store.disk_bytes(),
    })
}

fn share(flags: &[bool]) -> f64 {
    flags.iter().filter(|&&flag| flag).count() as f64 / flags.len().max(1) as f64
}

fn hit_rate_by_language(queries: &[GeneratedQuery], hits: &[bool]) -> BTreeMap<&'static str, f64> {
    Language::ALL
        .iter()
        .map(|&language| {
            let of_language: Vec<bool> =
                queries.iter().zip(hits).filter(|(query, _)| query.language == language).map(|(_, &hit)| hit).collect();
            (language.label(), share(&of_language))
        })
        .collect()
}

fn latency_by_language(queries: &[GeneratedQuery], timings: &[Duration]) -> BTreeMap<&'static str, LatencySummary> {
    Language::ALL
        .iter()
        .map(|&language| {
            let of_language: Vec<Duration> = queries
                .iter()
                .zip(timings)
                .filter(|(query, _)| query.language == language)
                .map(|(_, &timing)| timing)
                .collect();
            (language.label(), LatencySummary::of(&of_language))
        })
        .collect()
}

fn print_size(size: &SizeReport) {
    let knowhub = &size.knowhub;
    let fts5 = &size.fts5;
    println!();
    println!(
        "== {} experiences (mean {:.0} characters each) ==",
        report::thousands(size.n_experiences as u64),
        size.mean_chars
    );
    row("", "KnowHub (socket)", "SQLite FTS5 (in-process)");
    row("import wall time", &report::seconds(knowhub.import_s), &report::seconds(fts5.import_s));
    row(
        "import throughput",
        &report::per_second(knowhub.import_per_s, "experiences"),
        &report::per_second(fts5.import_per_s, "rows"),
    );
    row(
        "  slowest / mean request",
        &format!("{:.0} / {:.0} ms", knowhub.import_batch_max_s * 1e3, knowhub.import_batch_mean_s * 1e3),
        "",
    );
    row(
        "  daemon CPU (waiting for a CPU)",
        &format!(
            "{} ({})",
            report::seconds(knowhub.import_daemon_cpu_s),
            report::seconds(knowhub.import_daemon_runqueue_wait_s)
        ),
        "",
    );
    row("  daemon idle again after", &report::seconds(knowhub.settle_s), "");
    row("search p50", &report::micros(knowhub.search.p50_us), &report::micros(fts5.search.p50_us));
    row("search p90", &report::micros(knowhub.search.p90_us), &report::micros(fts5.search.p90_us));
    row("search p99", &report::micros(knowhub.search.p99_us), &report::micros(fts5.search.p99_us));
    row("search mean", &report::micros(knowhub.search.mean_us), &report::micros(fts5.search.mean_us));
    row("search max", &report::micros(knowhub.search.max_us), &report::micros(fts5.search.max_us));
    row("  daemon CPU per query", &report::micros(knowhub.search_daemon_cpu_per_query_us), "");
    row("  daemon waiting for a CPU, total", &report::seconds(knowhub.search_daemon_runqueue_wait_s), "");
    for language in Language::ALL {
        let label = language.label();
        row(
            &format!("  p99 of {label} queries"),
            &report::micros(knowhub.search_by_language[label].p99_us),
            &report::micros(fts5.search_by_language[label].p99_us),
        );
    }
    row("queries with >= 1 result", &report::percent(knowhub.hit_rate), &report::percent(fts5.hit_rate));
    for language in Language::ALL {
        let label = language.label();
        row(
            &format!("  {label} queries with >= 1 result"),
            &report::percent(knowhub.hit_rate_by_language[label]),
            &report::percent(fts5.hit_rate_by_language[label]),
        );
    }
    for (label, memory) in [
        ("daemon RSS after import (peak)", &knowhub.memory_after_import),
        ("daemon RSS after queries (peak)", &knowhub.memory_after_queries),
    ] {
        row(label, &memory.rss_and_peak(), "n/a (in-process)");
        row("  of which heap + mapped files", &memory.heap_and_files(), "");
    }
    row("on disk", &report::mebibytes(knowhub.disk_bytes), &report::mebibytes(fts5.disk_bytes));
    println!(
        "  search mode: {}; imported {}, duplicates {}, rejected {}, index documents {}",
        knowhub.search_mode,
        report::thousands(knowhub.imported as u64),
        knowhub.duplicates,
        knowhub.rejected,
        report::thousands(knowhub.index_documents)
    );
    println!(
        "  FTS5 p99 / KnowHub p99 = {:.1}x   (p50: {:.1}x)",
        size.fts5_over_knowhub_p99, size.fts5_over_knowhub_p50
    );
    let scope = if size.goals.applies { "" } else { " (stated for 100,000; shown for reference)" };
    println!(
        "  goals:{scope}\n    search p99 <= 1 ms over the socket: {} ({})\n    p99 >= 5x lower than FTS5:          {} ({:.1}x)\n    import >= 20,000 experiences/s:     {} ({})",
        report::yes_no(size.goals.p99_at_most_1ms),
        report::micros(knowhub.search.p99_us),
        report::yes_no(size.goals.at_least_5x_faster_than_fts5),
        size.fts5_over_knowhub_p99,
        report::yes_no(size.goals.import_at_least_20k_per_s),
        report::per_second(knowhub.import_per_s, "experiences"),
    );
}
