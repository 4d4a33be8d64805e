//! `kb-bench hub`: the team hub on a real PostgreSQL (started here, TLS with a certificate
//! made here) between release daemons: sync lag from one member's acknowledgement to another's
//! first successful search, push and pull throughput for a large import, local search latency
//! while a large pull is indexed (next to the same searches before it), and a simulated team
//! converging, with the hub's CPU time and size.

mod attack;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use kb_hub::testing::{ADMIN_PASSWORD, TestPostgres};
use kb_proto::Client;
use serde_json::{Value, json};

use crate::daemon::BenchDaemon;
use crate::report::thousands;
use crate::stats::LatencySummary;

#[derive(Debug, Clone, clap::Args)]
pub struct HubArgs {
    /// Submits whose lag to a teammate's search is measured, one at a time.
    #[arg(long, default_value_t = 100)]
    pub lag_samples: usize,
    /// Experiences imported by one member, pushed, and pulled by another.
    #[arg(long, default_value_t = 100_000)]
    pub import: usize,
    /// Daemons of the simulated team, and experiences each one imports.
    #[arg(long, default_value_t = 20)]
    pub team_daemons: usize,
    #[arg(long, default_value_t = 5_000)]
    pub per_daemon: usize,
}

/// A member's daemon, with a config for the hub.
async fn member(binary: &Path, postgres: &TestPostgres, name: &str, team: &str) -> anyhow::Result<BenchDaemon> {
    let home = tempfile::Builder::new().prefix("kb-bench-hub-").tempdir().context("temp home")?;
    let password = home.path().join("hub.password");
    std::fs::write(&password, format!("{name}-pw\n"))?;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[embedding]\nenabled = false\n[hub]\nurl = \"{}\"\npassword_file = \"{}\"\nteam = \"{team}\"\n",
            postgres.url(name),
            password.display()
        ),
    )?;
    BenchDaemon::start_in(binary, home, &[]).await
}

async fn call(daemon: &BenchDaemon, method: &str, params: Value) -> anyhow::Result<Value> {
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect")?;
    client.call_value(method, params).await.with_context(|| format!("{method} failed"))
}

async fn hub_status(daemon: &BenchDaemon) -> anyhow::Result<Value> {
    Ok(call(daemon, kb_proto::method::STATUS, json!({})).await?["hub"].clone())
}

/// Waits until `done(hub status)`, polling every 20 ms, up to `limit`; the time it took.
async fn until(
    daemon: &BenchDaemon,
    limit: Duration,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let status = hub_status(daemon).await?;
        if done(&status) {
            return Ok(started.elapsed());
        }
        anyhow::ensure!(started.elapsed() < limit, "{what} did not happen within {limit:?}: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sync lag: each of `samples` submits to A, one at a time, until B's first search finds it.
async fn measure_lag(a: &BenchDaemon, b: &BenchDaemon, samples: usize, tag: &str) -> anyhow::Result<LatencySummary> {
    let started = Instant::now();
    let mut searcher = Client::connect(b.socket()).await?;
    let mut submitter = Client::connect(a.socket()).await?;
    let mut lags = Vec::with_capacity(samples);
    for index in 0..samples {
        let token = format!("{tag}{index}x{}", started.elapsed().as_micros());
        submitter
            .call_value(
                kb_proto::method::SUBMIT,
                json!({"task": format!("measure the sync lag {token}"), "resource": "kb-bench", "result": "found", "score": 3}),
            )
            .await?;
        let acknowledged = Instant::now();
        loop {
            let answer = searcher
                .call_value(kb_proto::method::SEARCH, json!({"query": token, "mode": "bm25", "min_score": 1}))
                .await?;
            if answer["count"].as_u64().unwrap_or(0) > 0 {
                lags.push(acknowledged.elapsed());
                break;
            }
            anyhow::ensure!(acknowledged.elapsed() < Duration::from_secs(30), "submit {index} never reached B");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    Ok(LatencySummary::of(&lags))
}

/// CPU time of the PostgreSQL server: the postmaster and its live children (backends,
/// walwriter, checkpointer, …), from `/proc`. Backends that exited are not counted.
fn postgres_cpu(postgres: &TestPostgres) -> Duration {
    let Some(postmaster) = postgres.pid() else { return Duration::ZERO };
    let ticks = rustix::param::clock_ticks_per_second().max(1);
    let mut total = 0u64;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Duration::ZERO };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some((_, rest)) = stat.rsplit_once(')') else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let parent: u32 = fields.get(1).and_then(|field| field.parse().ok()).unwrap_or(0);
        if pid == postmaster || parent == postmaster {
            let utime: u64 = fields.get(11).and_then(|field| field.parse().ok()).unwrap_or(0);
            let stime: u64 = fields.get(12).and_then(|field| field.parse().ok()).unwrap_or(0);
            total += utime + stime;
        }
    }
    Duration::from_secs_f64(total as f64 / ticks as f64)
}

fn items(prefix: &str, n: usize, seed: u64) -> Vec<Value> {
    crate::generate::experiences(n, seed)
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            json!({"task": format!("{} ({prefix} {index})", item.task), "resource": item.resource,
                   "result": item.result, "score": item.score})
        })
        .collect()
}

async fn import(daemon: &BenchDaemon, items: &[Value]) -> anyhow::Result<()> {
    let mut client = Client::connect(daemon.socket()).await?;
    for chunk in items.chunks(1000) {
        client.call_value(kb_proto::method::IMPORT, json!({"items": chunk})).await.context("kb.import failed")?;
    }
    Ok(())
}

pub async fn run(binary: &Path, args: &HubArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let postgres = TestPostgres::start();
    // The PostgreSQL client runs a runtime of its own: on a thread outside this one's.
    let url = postgres.url("postgres");
    std::thread::spawn(move || -> anyhow::Result<()> {
        let mut client = kb_hub::ConnectOptions::parse(&url, Some(ADMIN_PASSWORD))?.connect()?;
        kb_hub::schema::migrate(&mut client)?;
        Ok(())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the migration thread panicked"))??;
    let n_members = 2 + args.team_daemons;
    let mut sql = String::new();
    for index in 0..n_members {
        let team = if index < 2 { "pair" } else { "sim" };
        sql.push_str(&format!(
            "CREATE ROLE m{index} LOGIN PASSWORD 'm{index}-pw'; GRANT knowhub_member TO m{index}; \
             INSERT INTO knowhub.members VALUES ('{team}', 'm{index}');"
        ));
    }
    postgres.sql(&sql);
    println!(
        "hub: PostgreSQL {} on 127.0.0.1:{} with TLS (verify-full), release daemons, embeddings off",
        postgres.sql("SHOW server_version"),
        postgres.port
    );

    // 1. Lag: A's acknowledgement to B's first search that finds it.
    let a = member(binary, &postgres, "m0", "pair").await?;
    let b = member(binary, &postgres, "m1", "pair").await?;
    for daemon in [&a, &b] {
        until(daemon, Duration::from_secs(30), "connecting", |status| status["state"] == "connected").await?;
    }
    let lag = measure_lag(&a, &b, args.lag_samples, "lagprobe").await?;
    println!(
        "  sync lag, A's acknowledgement to B's first successful search ({} submits, one at a time): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        lag.n_samples,
        lag.p50_us / 1000.0,
        lag.p99_us / 1000.0,
        lag.max_us / 1000.0
    );

    // 1b. The attacks of a hostile member and an outsider, measured against the lag above.
    attack::run(binary, &postgres, &a, &b, &lag, args.lag_samples).await?;

    // 2. A large import: pushed by A, pulled and indexed by B while B answers searches.
    let mut searcher = Client::connect(b.socket()).await?;
    let queries: Vec<String> = crate::generate::queries(200, 7).into_iter().map(|query| query.text).collect();
    let mut before = Vec::new();
    for query in &queries {
        let asked = Instant::now();
        searcher.call_value(kb_proto::method::SEARCH, json!({"query": query})).await?;
        before.push(asked.elapsed());
    }
    let before = LatencySummary::of(&before);
    let held_before = hub_status(&b).await?["team_experiences"].as_u64().unwrap_or(0);
    let big = items("import", args.import, 11);
    let import_started = Instant::now();
    let a_cpu = a.cpu_time()?;
    let b_cpu = b.cpu_time()?;
    let pg_cpu = postgres_cpu(&postgres);
    import(&a, &big).await?;
    let imported_in = import_started.elapsed();
    // The daemon closes connections idle past its keep-alive timeout: a fresh one for B.
    let mut searcher = Client::connect(b.socket()).await?;
    let target = held_before + args.import as u64;
    let mut during = Vec::new();
    let mut pushed_in = None;
    let pulled_in = loop {
        for query in &queries[..20] {
            let asked = Instant::now();
            searcher.call_value(kb_proto::method::SEARCH, json!({"query": query})).await?;
            during.push(asked.elapsed());
        }
        if pushed_in.is_none() && hub_status(&a).await?["outbox"] == 0 {
            pushed_in = Some(import_started.elapsed());
        }
        let held = hub_status(&b).await?["team_experiences"].as_u64().unwrap_or(0);
        if held >= target {
            break import_started.elapsed();
        }
        anyhow::ensure!(
            import_started.elapsed() < Duration::from_secs(1800),
            "B holds {held} of {target} after 30 min"
        );
    };
    let pushed_in = match pushed_in {
        Some(pushed_in) => pushed_in,
        None => {
            import_started.elapsed()
                + until(&a, Duration::from_secs(600), "the push", |status| status["outbox"] == 0).await?
        }
    };
    let during = LatencySummary::of(&during);
    // The same searches once the pull is done: the store the same size, nothing being indexed.
    let mut after = Vec::new();
    for query in &queries {
        let asked = Instant::now();
        searcher.call_value(kb_proto::method::SEARCH, json!({"query": query})).await?;
        after.push(asked.elapsed());
    }
    let after = LatencySummary::of(&after);
    let rate = |n: usize, time: Duration| n as f64 / time.as_secs_f64();
    println!(
        "  {} experiences imported by A in {:.1} s ({:.0}/s); on the hub {:.1} s after the import began ({:.0}/s pushed); \
         held and indexed by B after {:.1} s ({:.0}/s pulled)",
        thousands(args.import as u64),
        imported_in.as_secs_f64(),
        rate(args.import, imported_in),
        pushed_in.as_secs_f64(),
        rate(args.import, pushed_in),
        pulled_in.as_secs_f64(),
        rate(args.import, pulled_in),
    );
    println!(
        "  CPU meanwhile: A {:.1} s, B {:.1} s, PostgreSQL {:.1} s",
        (a.cpu_time()? - a_cpu).as_secs_f64(),
        (b.cpu_time()? - b_cpu).as_secs_f64(),
        (postgres_cpu(&postgres).saturating_sub(pg_cpu)).as_secs_f64(),
    );
    println!(
        "  B's search latency: before the pull (small store) p50 {:.2} ms, p99 {:.2} ms; while the pull is indexed p50 {:.2} ms, \
         p99 {:.2} ms ({} searches); after it (same store, idle) p50 {:.2} ms, p99 {:.2} ms ({} searches each before and after)",
        before.p50_us / 1000.0,
        before.p99_us / 1000.0,
        during.p50_us / 1000.0,
        during.p99_us / 1000.0,
        during.n_samples,
        after.p50_us / 1000.0,
        after.p99_us / 1000.0,
        after.n_samples,
    );
    drop(a);
    drop(b);

    // 3. A simulated team: every daemon imports its own, all at once; time until every one
    // holds everyone else's.
    if args.team_daemons >= 2 {
        let mut team = Vec::with_capacity(args.team_daemons);
        for index in 0..args.team_daemons {
            team.push(member(binary, &postgres, &format!("m{}", index + 2), "sim").await?);
        }
        for daemon in &team {
            until(daemon, Duration::from_secs(60), "connecting", |status| status["state"] == "connected").await?;
        }
        let pg_cpu = postgres_cpu(&postgres);
        let converging = Instant::now();
        let imports = team.iter().enumerate().map(|(index, daemon)| {
            let items = items(&format!("member {index}"), args.per_daemon, 100 + index as u64);
            async move { import(daemon, &items).await }
        });
        for result in futures_join_all(imports).await {
            result?;
        }
        let others = ((args.team_daemons - 1) * args.per_daemon) as u64;
        let mut slowest = Duration::ZERO;
        for daemon in &team {
            let took = until(daemon, Duration::from_secs(3600), "convergence", |status| {
                status["team_experiences"].as_u64().unwrap_or(0) >= others
            })
            .await?;
            slowest = slowest.max(took);
        }
        let converged = converging.elapsed();
        let size: u64 = postgres.sql("SELECT pg_total_relation_size('knowhub.experiences')").parse().unwrap_or(0);
        println!(
            "  team of {} daemons × {} experiences each: every daemon holds all {} after {:.1} s; PostgreSQL CPU {:.1} s, table with indexes {}",
            args.team_daemons,
            thousands(args.per_daemon as u64),
            thousands((args.team_daemons * args.per_daemon) as u64),
            converged.as_secs_f64(),
            (postgres_cpu(&postgres).saturating_sub(pg_cpu)).as_secs_f64(),
            crate::report::mebibytes(size),
        );
        let _ = slowest;
    }
    println!("hub: done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Runs the futures concurrently on this thread and collects their results in order.
async fn futures_join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut results: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut pending = false;
        for (index, future) in set.iter_mut().enumerate() {
            if results[index].is_none() {
                match future.as_mut().poll(context) {
                    std::task::Poll::Ready(output) => results[index] = Some(output),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    results.into_iter().map(|result| result.expect("every future finished")).collect()
}
