//! Times `ExperienceIndex::search` in-process, without the daemon's socket, JSON and SQLite, on
//! the experiences and queries `kb-bench load` generates:
//! `cargo run -p kb-index --release --example search_bench -- --docs 100000 --queries 2000`.
//!
//! The index is built on disk the way the daemon builds it on `kb.import` (batches of 5,000,
//! one commit each). Prints the latency of whole searches, of the query analysis alone, and how
//! many terms the queries have, so a change to the search path can be judged in seconds.
//! `--top-k N` sets the hits asked for (5); `--min-score N` and `--agent ID` time the filtered
//! paths; `--repeat N` runs the queries N times, for profiling with `perf record`, and times each
//! query by its median run; `--slowest N` lists the N slowest queries (10) with the terms the
//! search scores and their document frequencies, to see which queries make the tail; `--dump FILE`
//! writes each query's hits (`id:bm25`, best first, one line per query), to compare the rankings
//! of two builds; `--coverage yes` also works out each hit's coverage, as hybrid search does.

// The generator is kb-bench's own module, included by path so the two always measure the same
// data; kb-bench is a binary crate, so it cannot be a dependency. Only part of it is used here.
#[allow(dead_code)]
#[path = "../../kb-bench/src/generate.rs"]
mod generate;

use std::time::{Duration, Instant};

use kb_core::Status;
use kb_index::{ExperienceIndex, IndexDoc, SearchRequest, SearchTerm, analyze};

/// The seeds `kb-bench load` uses by default, so the numbers compare with its report.
const SEED: u64 = 42;
const QUERY_SEED: u64 = SEED ^ 0x5155_4552_5953_0000;
const WARMUP_SEED: u64 = SEED ^ 0x5157_4152_4d55_5000;
const BATCH_SIZE: usize = 5_000;
/// Seconds to let background merges finish before timing queries.
const MERGE_WAIT_S: u64 = 4;

struct Options {
    n_docs: usize,
    n_queries: usize,
    /// Hits asked for per query: `kb-bench load` asks for 5, and a hybrid search asks the index
    /// for more candidates.
    top_k: usize,
    repeat: usize,
    min_score: u8,
    agent_id: Option<String>,
    n_slowest: usize,
    dump: Option<String>,
    /// Work out each hit's coverage, as a hybrid search's candidates do.
    coverage: bool,
}

fn parse_options() -> Options {
    let mut options = Options {
        n_docs: 100_000,
        n_queries: 2_000,
        top_k: 5,
        repeat: 1,
        min_score: 1,
        agent_id: None,
        n_slowest: 10,
        dump: None,
        coverage: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        let number = || value.parse::<usize>().unwrap_or_else(|err| panic!("{flag} {value}: {err}"));
        match flag.as_str() {
            "--docs" => options.n_docs = number(),
            "--queries" => options.n_queries = number(),
            "--top-k" => options.top_k = number(),
            "--repeat" => options.repeat = number().max(1),
            "--min-score" => options.min_score = number() as u8,
            "--agent" => options.agent_id = Some(value),
            "--slowest" => options.n_slowest = number(),
            "--dump" => options.dump = Some(value),
            "--coverage" => options.coverage = matches!(value.as_str(), "yes" | "true" | "1"),
            _ => panic!(
                "unknown flag {flag}; expected --docs, --queries, --top-k, --repeat, --min-score, --agent, --slowest, --dump or --coverage"
            ),
        }
    }
    options
}

/// Agents the generated experiences are spread over, so `--agent` filters to a fifth of them.
const AGENTS: [&str; 5] = ["agent-0", "agent-1", "agent-2", "agent-3", "agent-4"];

fn main() {
    let options = parse_options();
    let dir = tempfile::tempdir().expect("temp dir");
    let (index, _) = ExperienceIndex::open(dir.path()).expect("open index");

    let items = generate::experiences(options.n_docs, SEED);
    let ids: Vec<String> = (0..items.len()).map(|item_idx| format!("{item_idx:032x}")).collect();
    let started = Instant::now();
    for (batch_idx, batch) in items.chunks(BATCH_SIZE).enumerate() {
        let first = batch_idx * BATCH_SIZE;
        let docs: Vec<IndexDoc<'_>> = batch
            .iter()
            .enumerate()
            .map(|(offset, item)| IndexDoc {
                id: &ids[first + offset],
                task: &item.task,
                resource: &item.resource,
                result: &item.result,
                content: None,
                score: item.score as u8,
                status: Status::Active,
                agent_id: Some(AGENTS[(first + offset) % AGENTS.len()]),
            })
            .collect();
        index.add_new(&docs).expect("add");
        index.commit(batch_idx as u64 + 1).expect("commit");
    }
    println!("indexed {} experiences in {:.2} s", items.len(), started.elapsed().as_secs_f64());
    // Merges go on in the background after the last commit; queries timed meanwhile would
    // compete with them for the CPUs. (The daemon's benchmark waits for it to go idle too.)
    std::thread::sleep(Duration::from_secs(MERGE_WAIT_S));

    let warmup = generate::queries(200, WARMUP_SEED);
    let queries = generate::queries(options.n_queries, QUERY_SEED);
    let search = |text: &str| {
        index
            .search(&SearchRequest {
                query: text,
                limit: options.top_k,
                min_score: options.min_score,
                agent_id: options.agent_id.as_deref(),
                status: Status::Active,
                coverage: options.coverage,
            })
            .expect("search")
    };
    for query in &warmup {
        search(&query.text);
    }

    // Query-major: the runs of one query are times of the same work, so their median is its cost.
    let mut runs_by_query = vec![Vec::with_capacity(options.repeat); queries.len()];
    let mut cpu_times = Vec::with_capacity(queries.len() * options.repeat);
    let mut n_empty = 0;
    let cpu_before = thread_cpu_time();
    for round in 0..options.repeat {
        for (query, runs) in queries.iter().zip(&mut runs_by_query) {
            let cpu_started = thread_cpu_clock();
            let started = Instant::now();
            let hits = search(&query.text);
            runs.push(started.elapsed());
            cpu_times.push(thread_cpu_clock().saturating_sub(cpu_started));
            n_empty += usize::from(round == 0 && hits.is_empty());
        }
    }
    let n_searches = queries.len() * options.repeat;
    let cpu_per_query = match (cpu_before, thread_cpu_time()) {
        (Some(before), Some(after)) => {
            format!("{:.0} µs", (after - before).as_secs_f64() * 1e6 / n_searches as f64)
        }
        _ => "unknown".to_owned(),
    };
    let mut search_times: Vec<Duration> = runs_by_query.iter().flatten().copied().collect();
    let query_times: Vec<Duration> = runs_by_query
        .iter_mut()
        .map(|runs| {
            runs.sort();
            runs[runs.len() / 2]
        })
        .collect();
    let mut analyze_times = Vec::with_capacity(queries.len());
    let mut n_terms = Vec::with_capacity(queries.len());
    for query in &queries {
        let started = Instant::now();
        let terms = analyze(&query.text);
        analyze_times.push(started.elapsed());
        n_terms.push(terms.len());
    }
    println!("segments: {}", index.num_segments());
    print_latency("search", &mut search_times);
    println!("  CPU per query (mean) {cpu_per_query}");
    print_latency("search CPU time", &mut cpu_times);
    print_latency("  of which analysis", &mut analyze_times);
    println!(
        "terms per query: mean {:.1}, max {}; queries without hits: {n_empty}",
        n_terms.iter().sum::<usize>() as f64 / n_terms.len().max(1) as f64,
        n_terms.iter().max().unwrap_or(&0)
    );
    print_tail(&index, &queries, &query_times, options.n_slowest);
    if let Some(path) = &options.dump {
        // One line per query: its hits as `id:bm25`, best first.
        let mut out = String::new();
        for query in &queries {
            let hits: Vec<String> = search(&query.text).iter().map(|hit| format!("{}:{}", hit.id, hit.bm25)).collect();
            out.push_str(&hits.join(" "));
            out.push('\n');
        }
        std::fs::write(path, out).unwrap_or_else(|err| panic!("--dump {path}: {err}"));
    }
}

/// Where the time goes: latency by query language and by the number of terms WAND walks, then
/// the slowest queries with their terms.
fn print_tail(index: &ExperienceIndex, queries: &[generate::GeneratedQuery], times: &[Duration], n_slowest: usize) {
    let plans: Vec<Vec<SearchTerm>> =
        queries.iter().map(|query| index.search_terms(&query.text).expect("search terms")).collect();
    for language in generate::Language::ALL {
        let mut of_language: Vec<Duration> =
            queries.iter().zip(times).filter(|(query, _)| query.language == language).map(|(_, time)| *time).collect();
        print_latency(&format!("  {}", language.label()), &mut of_language);
    }
    let n_walked: Vec<usize> = plans.iter().map(|terms| terms.iter().filter(|term| term.walked).count()).collect();
    let max_walked = n_walked.iter().copied().max().unwrap_or(0);
    println!(
        "terms scored per query: mean {:.1}; walked by WAND: mean {:.1}, max {max_walked}; queries with rescored terms: {}",
        plans.iter().map(Vec::len).sum::<usize>() as f64 / plans.len().max(1) as f64,
        n_walked.iter().sum::<usize>() as f64 / n_walked.len().max(1) as f64,
        plans.iter().zip(&n_walked).filter(|(terms, n_walked)| terms.len() > **n_walked).count()
    );
    for n_terms in 1..=max_walked {
        let mut with_n: Vec<Duration> =
            n_walked.iter().zip(times).filter(|(n_walked, _)| **n_walked == n_terms).map(|(_, time)| *time).collect();
        if !with_n.is_empty() {
            print_latency(&format!("  {n_terms} walked ({})", with_n.len()), &mut with_n);
        }
    }
    let mut order: Vec<usize> = (0..queries.len()).collect();
    order.sort_by_key(|&query_idx| std::cmp::Reverse(times[query_idx]));
    println!("slowest queries (median time; terms with their document frequencies, rescored ones in brackets):");
    for &query_idx in order.iter().take(n_slowest) {
        let terms: Vec<String> = plans[query_idx]
            .iter()
            .map(|term| {
                let text = format!("{}:{}", term.text, term.doc_freq);
                if term.walked { text } else { format!("[{text}]") }
            })
            .collect();
        println!(
            "  {:>6.0} µs  {:<7} {:?} → {}",
            times[query_idx].as_secs_f64() * 1e6,
            queries[query_idx].language.label(),
            queries[query_idx].text,
            terms.join(" ")
        );
    }
}

/// The CPU time this thread has run (Linux `schedstat`): unlike wall time, it leaves out the time
/// other processes held the CPUs, so its mean stays comparable on a busy machine. It advances in
/// scheduler ticks, so it is no use for single queries.
fn thread_cpu_time() -> Option<Duration> {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = schedstat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// This thread's CPU time from `CLOCK_THREAD_CPUTIME_ID`, exact to the nanosecond: the CPU time
/// of one search, which leaves out the time other processes held the CPUs, so its percentiles
/// stay comparable on a busy machine (wall-clock percentiles then grow with the preemptions).
fn thread_cpu_clock() -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock_id: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `time` is a valid, writable timespec (64-bit Linux layout) for the call.
    let status = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

fn print_latency(label: &str, times: &mut [Duration]) {
    times.sort();
    let at = |quantile: f64| times[((times.len() as f64 * quantile) as usize).min(times.len() - 1)];
    let mean = times.iter().sum::<Duration>() / times.len().max(1) as u32;
    println!(
        "{label:<20} p50 {:>6.0} µs   p90 {:>6.0} µs   p99 {:>6.0} µs   mean {:>6.0} µs",
        at(0.50).as_secs_f64() * 1e6,
        at(0.90).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        mean.as_secs_f64() * 1e6
    );
}
