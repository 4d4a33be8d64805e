//! `kb-bench hybrid`: what embeddings cost in the real daemon. The raw throughput and query
//! latency of the model in this process, import throughput with embeddings against it, and at
//! each store size hybrid search latency over the socket (query embedding included), next to
//! BM25 and vectors alone, with the daemon's memory while the model is loaded.
//!
//! Embedding 100,000 experiences with a real model takes over an hour on two cores, so the
//! large stores get their vectors another way: the experiences are imported with embeddings
//! off, and the daemon is stopped; then the vectors table is filled in this process under the
//! model's id, each experience getting a real embedding of a generated experience plus a little
//! noise; then the daemon starts again with the model and loads them as its own. Queries are
//! embedded by the daemon for real. Vector scans and fusion cost the same whatever the vectors
//! say, so the latency is that of a store embedded for real.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_embed::{Embedder as _, FastEmbedder, LoadOptions, ModelSpec, Precision, VectorIndex};
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchResult, StatusResult};
use serde::Serialize;

use crate::daemon::{BenchDaemon, Memory, model_config};
use crate::generate::{self, GeneratedExperience, GeneratedQuery, Rng};
use crate::report::{self, row};
use crate::stats::LatencySummary;

/// What every search asks for, as in `kb-bench load`.
const TOP_K: i64 = 5;

/// The goals of the issue, checked at 100,000 experiences.
pub const GOAL_P99_US: f64 = 10_000.0;
pub const GOAL_IMPORT_SHARE: f64 = 0.80;
pub const GOAL_RSS_MIB: f64 = 250.0;
pub const GOAL_SIZE: usize = 100_000;

/// Longest wait for the daemon to embed an import, or to load a store's vectors.
const EMBED_LIMIT: Duration = Duration::from_secs(1_800);
/// Longest wait for the daemon to go idle after an import.
const SETTLE_LIMIT: Duration = Duration::from_secs(30);
/// Half-width of the uniform noise added to each coordinate of a borrowed embedding: about
/// 0.03 standard deviation, so a copy keeps a cosine of about 0.87 with its original.
const NOISE: f32 = 0.05;

#[derive(Debug, Clone)]
pub struct HybridOptions {
    pub sizes: Vec<usize>,
    pub n_queries: usize,
    pub n_warmup: usize,
    /// Experiences embedded for the throughput comparison (and lent to the large stores).
    pub n_embedded: usize,
    pub batch_size: usize,
    pub seed: u64,
    pub model_dir: PathBuf,
    pub onnxruntime: PathBuf,
    /// The model loaded with int8 weights, in this process and in the daemon.
    pub quantize: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct HybridReport {
    pub model_dir: String,
    pub onnxruntime: String,
    pub model_id: String,
    pub dimensions: usize,
    pub n_queries: usize,
    pub top_k: i64,
    pub raw: RawModelFigures,
    pub import: EmbeddedImportFigures,
    pub sizes: Vec<HybridSizeReport>,
}

/// The model in this process, with the daemon's settings (one ONNX Runtime thread).
#[derive(Debug, Clone, Serialize)]
pub struct RawModelFigures {
    pub load_s: f64,
    pub n_texts: usize,
    /// `Embedder::embed` over all texts at once: fastembed's own batching, sorted by length.
    pub embed_s: f64,
    pub per_s: f64,
    /// One query at a time, as a search embeds it.
    pub query_embedding: LatencySummary,
}

/// The same texts imported into a daemon with the model: from the first `kb.import` request
/// until the last of them is embedded and searchable by vector.
#[derive(Debug, Clone, Serialize)]
pub struct EmbeddedImportFigures {
    pub n_experiences: usize,
    pub import_s: f64,
    pub embedded_s: f64,
    pub per_s: f64,
    /// `per_s` over the raw throughput.
    pub share_of_raw: f64,
    pub daemon_cpu_s: f64,
    /// Hybrid searches sent one after another while the daemon embeds a second import.
    pub search_while_embedding: LatencySummary,
}

#[derive(Debug, Clone, Serialize)]
pub struct HybridSizeReport {
    pub n_experiences: usize,
    /// From the daemon's start with the model until its vectors are all loaded.
    pub ready_s: f64,
    pub vectors: u64,
    pub hybrid: LatencySummary,
    pub bm25: LatencySummary,
    pub vector: LatencySummary,
    pub hybrid_daemon_cpu_per_query_us: f64,
    /// Share of hybrid searches that were answered in hybrid mode (not BM25 for a reason).
    pub hybrid_answered: f64,
    /// The vector search alone, in this process, on an int8 index of the same size, and the
    /// share of an exact f32 scan's top hits it finds.
    pub scan: LatencySummary,
    pub scan_recall: f64,
    pub memory_ready: Memory,
    pub memory_after_queries: Memory,
    pub goals: HybridGoals,
}

#[derive(Debug, Clone, Serialize)]
pub struct HybridGoals {
    pub applies: bool,
    pub p99_at_most_10ms: bool,
    pub rss_at_most_250mib: bool,
}

pub async fn run(daemon_binary: &Path, options: &HybridOptions, quiet: bool) -> anyhow::Result<HybridReport> {
    if options.n_queries == 0 || options.n_embedded == 0 || options.batch_size == 0 {
        bail!("--queries, --embedded and --batch-size must be at least 1");
    }
    let queries = generate::queries(options.n_queries, options.seed ^ 0x5155_4552_5953_0000);
    let warmup = generate::queries(options.n_warmup, options.seed ^ 0x5157_4152_4d55_5000);
    // The first `n_embedded` are embedded for the throughput figures; the rest are imported
    // while searches are timed.
    let mut embedded_items = generate::experiences(options.n_embedded + options.n_embedded / 2, options.seed);
    let more_items = embedded_items.split_off(options.n_embedded);
    let texts: Vec<String> = embedded_items.iter().map(embedding_text).collect();

    eprintln!("[hybrid] loading {} in this process", options.model_dir.display());
    let started = Instant::now();
    let load_options = LoadOptions { quantize: options.quantize, ..LoadOptions::default() };
    let model = FastEmbedder::load_with(
        &ModelSpec::LocalDir(options.model_dir.clone()),
        Some(&options.onnxruntime),
        &load_options,
    )
    .context("cannot load the model in this process")?;
    let load_s = started.elapsed().as_secs_f64();
    eprintln!("[hybrid] embedding {} experiences in this process", texts.len());
    let text_refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let started = Instant::now();
    let pool = model.embed(&text_refs).context("cannot embed in this process")?;
    let embed_s = started.elapsed().as_secs_f64();
    let mut query_times = Vec::with_capacity(queries.len());
    for query in &queries {
        let started = Instant::now();
        model.embed(&[query.text.as_str()]).context("cannot embed a query in this process")?;
        query_times.push(started.elapsed());
    }
    let query_vectors = model
        .embed(&queries.iter().map(|query| query.text.as_str()).collect::<Vec<_>>())
        .context("cannot embed the queries in this process")?;
    let raw = RawModelFigures {
        load_s,
        n_texts: texts.len(),
        embed_s,
        per_s: texts.len() as f64 / embed_s,
        query_embedding: LatencySummary::of(&query_times),
    };
    let model_id = model.model_id().to_owned();
    let dimensions = model.dimensions();
    // The daemon runs the model on its own; two copies would compete for the CPUs.
    drop(model);

    let env = [("KNOWHUB_MODEL_DIR", options.model_dir.as_path()), ("ORT_DYLIB_PATH", options.onnxruntime.as_path())];
    let import =
        measure_import(daemon_binary, &env, options, (&embedded_items, &more_items), &queries, &model_id, raw.per_s)
            .await?;
    if !quiet {
        print_header(options, &model_id, dimensions, &raw, &import);
    }

    let mut sizes = Vec::with_capacity(options.sizes.len());
    for &n_experiences in &options.sizes {
        let workload = Workload { pool: &pool, warmup: &warmup, queries: &queries, query_vectors: &query_vectors };
        let size = measure_size(daemon_binary, &env, options, n_experiences, &model_id, &workload)
            .await
            .with_context(|| format!("hybrid search at {n_experiences} experiences"))?;
        if !quiet {
            print_size(&size);
        }
        sizes.push(size);
    }
    Ok(HybridReport {
        model_dir: options.model_dir.display().to_string(),
        onnxruntime: options.onnxruntime.display().to_string(),
        model_id,
        dimensions,
        n_queries: queries.len(),
        top_k: TOP_K,
        raw,
        import,
        sizes,
    })
}

/// What the daemon embeds of an experience (`semantic::embedding_text` in knowhubd).
fn embedding_text(item: &GeneratedExperience) -> String {
    format!("{}\n{}\n{}", item.task, item.resource, item.result)
}

async fn measure_import(
    daemon_binary: &Path,
    env: &[(&str, &Path)],
    options: &HybridOptions,
    (items, more_items): (&[GeneratedExperience], &[GeneratedExperience]),
    queries: &[GeneratedQuery],
    model_id: &str,
    raw_per_s: f64,
) -> anyhow::Result<EmbeddedImportFigures> {
    let daemon = BenchDaemon::start_with_config(daemon_binary, env, &model_config(options.quantize)).await?;
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;
    wait_for_vectors(&daemon, &mut client, model_id, 0).await?;
    eprintln!("[hybrid] importing {} experiences into a daemon with the model", items.len());
    let cpu_before = daemon.cpu_use()?;
    let started = Instant::now();
    let answer: ImportResult = client
        .call(kb_proto::method::IMPORT, &serde_json::json!({ "items": items }))
        .await
        .context("kb.import failed")?;
    let import_s = started.elapsed().as_secs_f64();
    if answer.imported != items.len() {
        bail!("imported {} of {} experiences ({} duplicates)", answer.imported, items.len(), answer.duplicates);
    }
    wait_for_vectors(&daemon, &mut client, model_id, items.len() as u64).await?;
    let embedded_s = started.elapsed().as_secs_f64();
    let daemon_cpu_s = daemon.cpu_use()?.since(cpu_before).cpu.as_secs_f64();

    // Then searches while the daemon embeds another import: they go before the backlog's
    // next run, so they wait at most for the run in progress.
    let more = more_items;
    eprintln!("[hybrid] importing {} more and searching while they are embedded", more.len());
    let _: ImportResult = client
        .call(kb_proto::method::IMPORT, &serde_json::json!({ "items": more }))
        .await
        .context("kb.import failed")?;
    let mut times = Vec::new();
    let deadline = Instant::now() + EMBED_LIMIT;
    'embedding: for query in queries.iter().cycle() {
        let started = Instant::now();
        search(&mut client, &query.text, "hybrid").await?;
        times.push(started.elapsed());
        if times.len() % 10 == 0 {
            let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
            if status.embedder.backlog == 0 || Instant::now() > deadline {
                break 'embedding;
            }
        }
    }
    drop(client);
    daemon.stop().await?;
    let per_s = items.len() as f64 / embedded_s;
    Ok(EmbeddedImportFigures {
        n_experiences: items.len(),
        import_s,
        embedded_s,
        per_s,
        share_of_raw: per_s / raw_per_s,
        daemon_cpu_s,
        search_while_embedding: LatencySummary::of(&times),
    })
}

/// Waits until the daemon has loaded `model_id` and holds `n_vectors` vectors with no backlog.
async fn wait_for_vectors(
    daemon: &BenchDaemon,
    client: &mut Client,
    model_id: &str,
    n_vectors: u64,
) -> anyhow::Result<StatusResult> {
    let deadline = Instant::now() + EMBED_LIMIT;
    loop {
        let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
        let embedder = &status.embedder;
        match embedder.state.as_str() {
            "ready" if embedder.model.as_deref() != Some(model_id) => bail!(
                "the daemon loaded the model as {:?}, this process as {model_id:?}: they must be the same build",
                embedder.model
            ),
            "ready" if embedder.backlog == 0 && embedder.vectors >= n_vectors => return Ok(status),
            "ready" | "loading" if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            state => bail!(
                "the embedder is {state} with {} vectors and a backlog of {}: {}; daemon log:\n{}",
                embedder.vectors,
                embedder.backlog,
                embedder.detail.as_deref().unwrap_or("no detail"),
                daemon.log_tail()
            ),
        }
    }
}

/// The embeddings and queries every size is measured with.
#[derive(Clone, Copy)]
struct Workload<'a> {
    /// Real embeddings of the first generated experiences, lent to the rest.
    pool: &'a [Vec<f32>],
    warmup: &'a [GeneratedQuery],
    queries: &'a [GeneratedQuery],
    /// The queries embedded in this process, for the in-process scan.
    query_vectors: &'a [Vec<f32>],
}

async fn measure_size(
    daemon_binary: &Path,
    env: &[(&str, &Path)],
    options: &HybridOptions,
    n_experiences: usize,
    model_id: &str,
    workload: &Workload<'_>,
) -> anyhow::Result<HybridSizeReport> {
    let Workload { pool, warmup, queries, query_vectors } = *workload;
    eprintln!("[hybrid] importing {} experiences with embeddings off", report::thousands(n_experiences as u64));
    let items = generate::experiences(n_experiences, options.seed);
    let daemon = BenchDaemon::start(daemon_binary).await?;
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;
    for batch in items.chunks(options.batch_size) {
        let _: ImportResult = client
            .call(kb_proto::method::IMPORT, &serde_json::json!({ "items": batch }))
            .await
            .context("kb.import failed")?;
    }
    drop(client);
    daemon.settle(SETTLE_LIMIT).await?;
    let home = daemon.stop_keeping_home().await?;

    eprintln!("[hybrid] writing {} vectors under {model_id}", report::thousands(n_experiences as u64));
    let written = write_vectors(&home.path().join("knowhub.db"), model_id, pool, options.seed)?;

    // The import ran with embeddings off in the config; the model now comes from `env`.
    let config = home.path().join("config.toml");
    std::fs::write(&config, model_config(options.quantize))
        .with_context(|| format!("cannot write {}", config.display()))?;
    eprintln!("[hybrid] restarting the daemon with the model");
    let started = Instant::now();
    let daemon = BenchDaemon::start_in(daemon_binary, home, env).await?;
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;
    let status = wait_for_vectors(&daemon, &mut client, model_id, written).await?;
    let ready_s = started.elapsed().as_secs_f64();
    daemon.settle(SETTLE_LIMIT).await?;
    let memory_ready = daemon.memory()?;

    eprintln!("[hybrid] {} queries in each mode", queries.len());
    for query in warmup {
        search(&mut client, &query.text, "hybrid").await?;
    }
    let cpu_before = daemon.cpu_use()?;
    let (hybrid, modes) = time_queries(&mut client, queries, "hybrid").await?;
    let hybrid_cpu = daemon.cpu_use()?.since(cpu_before).cpu;
    let (bm25, _) = time_queries(&mut client, queries, "bm25").await?;
    let (vector, _) = time_queries(&mut client, queries, "vector").await?;
    let memory_after_queries = daemon.memory()?;
    drop(client);
    daemon.stop().await?;

    let (scan, scan_recall) = scan_figures(n_experiences, pool, query_vectors)?;
    let hybrid_answered = modes.iter().filter(|mode| *mode == "hybrid").count() as f64 / modes.len().max(1) as f64;
    // The steady state: resident memory with the model and every vector loaded, after the
    // queries. The peak is reported beside it: ONNX Runtime holds the model file and its own
    // copy while it builds the session, for about a second at start-up.
    let rss_mib = memory_after_queries.rss_kib.max(memory_ready.rss_kib) as f64 / 1024.0;
    Ok(HybridSizeReport {
        n_experiences,
        ready_s,
        vectors: status.embedder.vectors,
        hybrid_daemon_cpu_per_query_us: hybrid_cpu.as_secs_f64() * 1e6 / queries.len() as f64,
        hybrid_answered,
        goals: HybridGoals {
            applies: n_experiences == GOAL_SIZE,
            p99_at_most_10ms: hybrid.p99_us <= GOAL_P99_US,
            rss_at_most_250mib: rss_mib <= GOAL_RSS_MIB,
        },
        hybrid,
        bm25,
        vector,
        scan,
        scan_recall,
        memory_ready,
        memory_after_queries,
    })
}

/// Gives every experience in the stopped daemon's database a vector under `model_id`, in
/// import order ([`lent_vector`]).
fn write_vectors(database: &Path, model_id: &str, pool: &[Vec<f32>], seed: u64) -> anyhow::Result<u64> {
    let mut conn =
        rusqlite::Connection::open(database).with_context(|| format!("cannot open {}", database.display()))?;
    let tx = conn.transaction()?;
    let ids: Vec<String> = {
        let mut statement = tx.prepare("SELECT id FROM experiences ORDER BY rowid")?;
        statement.query_map([], |row| row.get(0))?.collect::<Result<_, _>>()?
    };
    let mut rng = Rng::new(seed ^ 0x5645_4354_4f52_5300);
    {
        let mut insert =
            tx.prepare("INSERT OR REPLACE INTO vectors (experience_id, model_id, vector) VALUES (?1, ?2, ?3)")?;
        for (row_idx, id) in ids.iter().enumerate() {
            let vector = lent_vector(pool, row_idx, &mut rng);
            insert.execute(rusqlite::params![id, model_id, kb_embed::to_bytes(&vector)])?;
        }
    }
    tx.commit()?;
    Ok(ids.len() as u64)
}

/// The vector experience `row_idx` gets: the embedding of the generated experience imported at
/// that place for the first `pool.len()`, then a pool embedding (round robin) plus noise;
/// normalized.
fn lent_vector(pool: &[Vec<f32>], row_idx: usize, rng: &mut Rng) -> Vec<f32> {
    let mut vector = pool[row_idx % pool.len()].clone();
    if row_idx >= pool.len() {
        for value in &mut vector {
            *value += (rng.unit() as f32 * 2.0 - 1.0) * NOISE;
        }
    }
    kb_embed::normalize(&vector)
}

/// Queries whose int8 hits are compared with an exact f32 scan (which takes ~20 ms each).
const RECALL_QUERIES: usize = 200;

/// The int8 vector search alone, in this process, over `n` vectors made like
/// [`write_vectors`]'s: its latency, and its recall of an exact f32 scan's top hits (the
/// sign-bit prefilter of large indexes is approximate).
fn scan_figures(n: usize, pool: &[Vec<f32>], query_vectors: &[Vec<f32>]) -> anyhow::Result<(LatencySummary, f64)> {
    let dimensions = pool.first().map_or(0, Vec::len);
    let mut index = VectorIndex::<String>::new(dimensions, Precision::Int8);
    let mut exact = VectorIndex::<String>::new(dimensions, Precision::F32);
    let mut rng = Rng::new(0x5343_414e);
    for row_idx in 0..n {
        let vector = lent_vector(pool, row_idx, &mut rng);
        let id = format!("{row_idx:032x}");
        index.upsert(&id, &vector)?;
        exact.upsert(&id, &vector)?;
    }
    let k = (TOP_K as usize * 3).max(kb_embed::fusion::MIN_CANDIDATES);
    let mut times = Vec::with_capacity(query_vectors.len());
    for query in query_vectors {
        let started = Instant::now();
        index.search(query, k)?;
        times.push(started.elapsed());
    }
    let (mut n_found, mut n_expected) = (0, 0);
    for query in query_vectors.iter().take(RECALL_QUERIES) {
        let approximate: Vec<String> = index.search(query, k)?.into_iter().map(|hit| hit.id).collect();
        let expected = exact.search(query, k)?;
        n_expected += expected.len();
        n_found += expected.iter().filter(|hit| approximate.contains(&hit.id)).count();
    }
    Ok((LatencySummary::of(&times), n_found as f64 / n_expected.max(1) as f64))
}

async fn time_queries(
    client: &mut Client,
    queries: &[GeneratedQuery],
    mode: &str,
) -> anyhow::Result<(LatencySummary, Vec<String>)> {
    let mut times = Vec::with_capacity(queries.len());
    let mut modes = Vec::with_capacity(queries.len());
    for query in queries {
        let started = Instant::now();
        let answer = search(client, &query.text, mode).await?;
        times.push(started.elapsed());
        modes.push(answer.mode);
    }
    Ok((LatencySummary::of(&times), modes))
}

async fn search(client: &mut Client, query: &str, mode: &str) -> anyhow::Result<SearchResult> {
    crate::daemon::search_mode(client, query, mode, TOP_K).await
}

fn print_header(
    options: &HybridOptions,
    model_id: &str,
    dimensions: usize,
    raw: &RawModelFigures,
    import: &EmbeddedImportFigures,
) {
    println!(
        "hybrid: model {} ({model_id}, {dimensions} dimensions), ONNX Runtime {}",
        options.model_dir.display(),
        options.onnxruntime.display()
    );
    println!(
        "  {} queries per mode, top_k {TOP_K}, over the socket; large stores get real embeddings of {} generated experiences plus noise (see `kb-bench hybrid --help`)",
        report::thousands(options.n_queries as u64),
        report::thousands(options.n_embedded as u64),
    );
    println!();
    println!("== the model: in this process vs through the daemon ==");
    row("", "in this process", "daemon (kb.import)");
    row("model load", &report::seconds(raw.load_s), "");
    row(
        &format!("embed {} experiences", report::thousands(raw.n_texts as u64)),
        &report::seconds(raw.embed_s),
        &report::seconds(import.embedded_s),
    );
    row("throughput", &report::per_second(raw.per_s, "experiences"), &report::per_second(import.per_s, "experiences"));
    row("  kb.import answered after", "", &report::seconds(import.import_s));
    row("  daemon CPU", "", &report::seconds(import.daemon_cpu_s));
    row("query embedding p50", &report::micros(raw.query_embedding.p50_us), "");
    row("query embedding p99", &report::micros(raw.query_embedding.p99_us), "");
    row(
        "hybrid search while embedding p50 / p99",
        "",
        &format!(
            "{} / {}",
            report::micros(import.search_while_embedding.p50_us),
            report::micros(import.search_while_embedding.p99_us)
        ),
    );
    row("  searches timed", "", &report::thousands(import.search_while_embedding.n_samples as u64));
    println!(
        "  goal: import with embeddings >= {:.0}% of the raw throughput: {} ({:.0}%)",
        GOAL_IMPORT_SHARE * 100.0,
        report::yes_no(import.share_of_raw >= GOAL_IMPORT_SHARE),
        import.share_of_raw * 100.0
    );
}

fn print_size(size: &HybridSizeReport) {
    println!();
    println!("== {} experiences with vectors ==", report::thousands(size.n_experiences as u64));
    row("", "p50", "p99");
    let latency = |label: &str, summary: &LatencySummary| {
        row(label, &report::micros(summary.p50_us), &report::micros(summary.p99_us));
    };
    latency("hybrid search (socket)", &size.hybrid);
    latency("BM25 search (socket)", &size.bm25);
    latency("vector search (socket)", &size.vector);
    latency("int8 vector search (in-process)", &size.scan);
    row("  its recall of an exact f32 scan's top hits", &report::percent(size.scan_recall), "");
    row("  daemon CPU per hybrid query", &report::micros(size.hybrid_daemon_cpu_per_query_us), "");
    row("  answered as hybrid", &report::percent(size.hybrid_answered), "");
    let memory = |label: &str, memory: &Memory| row(label, &memory.rss_and_peak(), &memory.heap_and_files());
    row("daemon memory", "RSS (peak)", "heap + mapped files");
    memory("  with the model, vectors loaded", &size.memory_ready);
    memory("  after the queries", &size.memory_after_queries);
    row("restart to all vectors loaded", &report::seconds(size.ready_s), "");
    let scope = if size.goals.applies { "" } else { " (stated for 100,000; shown for reference)" };
    println!(
        "  goals:{scope}\n    hybrid p99 <= 10 ms over the socket: {} ({})\n    RSS <= 250 MiB with the model:       {} ({} after the queries; {} at the peak, while the model loads)",
        report::yes_no(size.goals.p99_at_most_10ms),
        report::micros(size.hybrid.p99_us),
        report::yes_no(size.goals.rss_at_most_250mib),
        report::mebibytes_from_kib(size.memory_after_queries.rss_kib.max(size.memory_ready.rss_kib)),
        report::mebibytes_from_kib(size.memory_after_queries.peak_rss_kib.max(size.memory_ready.peak_rss_kib)),
    );
}
