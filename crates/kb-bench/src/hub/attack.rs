//! `kb-bench hub`'s attacks: sync lag while an outsider holds every lock a login of another
//! team can take (next to the lag measured without it, in the same run), and a teammate's
//! memory while it pulls rows at the size limit and far beyond it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use kb_hub::testing::TestPostgres;

use crate::daemon::BenchDaemon;
use super::{hub_status, measure_lag, until};
use crate::report::mebibytes_from_kib;
use crate::stats::LatencySummary;

pub async fn run(
    binary: &std::path::Path,
    postgres: &TestPostgres,
    a: &BenchDaemon,
    b: &BenchDaemon,
    baseline: &LatencySummary,
    samples: usize,
) -> anyhow::Result<()> {
    postgres.sql(
        "CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw'; GRANT knowhub_member TO outsider; \
         INSERT INTO knowhub.members VALUES ('other', 'outsider');",
    );
    // The outsider takes the advisory key the first schema locked for the team, a share lock on
    // the table (all its SELECT allows), and sits on them.
    let mut outsider = postgres
        .psql_as(
            "outsider",
            "outsider-pw",
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('knowhub.experiences'), hashtext('pair')); \
             SELECT pg_advisory_lock(hashtext('pair')); LOCK TABLE knowhub.experiences IN ACCESS SHARE MODE; \
             SELECT pg_sleep(3600); COMMIT;",
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = measure_lag(a, b, samples, "heldprobe").await;
    // The server goes on sleeping when psql dies: end the outsider's session there too.
    let _ = outsider.kill();
    let _ = outsider.wait();
    postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'outsider'");
    let held = held?;
    println!(
        "  sync lag with an outsider holding every lock it can take ({} submits): p50 {:.0} ms, p99 {:.0} ms \
         (without: p50 {:.0} ms, p99 {:.0} ms)",
        held.n_samples,
        held.p50_us / 1000.0,
        held.p99_us / 1000.0,
        baseline.p50_us / 1000.0,
        baseline.p99_us / 1000.0,
    );

    // Rows far beyond the limits, written behind the schema's back by a superuser as A's:
    // B must leave them unread, refuse those its gate refuses, and stay small. Then rows at the
    // limit, which B takes (and indexes, as it would a local submit of the same size).
    postgres.sql("ALTER TABLE knowhub.experiences DROP CONSTRAINT IF EXISTS sane");
    let idle = b.memory()?;
    let beyond = measure_pull(postgres, b, &[(10, 3_900_000, "refused"), (10, 20_000_000, "twenty"), (3, 150_000_000, "huge")]).await?;
    let after_beyond = b.memory()?;
    println!(
        "  a teammate pulling 10 rows of 3.9 MB (refused by its gate), 10 of 20 MB and 3 of 150 MB (over the 4.2 MB a \
         row may bring: skipped unread), handled {:.1} s after they were written: RSS idle {}, peak {} ({} above \
         idle; goal at most 50 MiB)",
        beyond.as_secs_f64(),
        mebibytes_from_kib(idle.rss_kib),
        mebibytes_from_kib(after_beyond.peak_rss_kib),
        mebibytes_from_kib(after_beyond.peak_rss_kib.saturating_sub(idle.rss_kib)),
    );
    let at_limit = measure_pull(postgres, b, &[(10, 999_000, "accepted")]).await?;
    let after = b.memory()?;
    // The baseline: a daemon without a hub taking the same ten experiences from a local import.
    let local = BenchDaemon::start(binary).await?;
    let local_idle = local.memory()?;
    let items: Vec<serde_json::Value> = (1..=10)
        .map(|n: usize| {
            serde_json::json!({"task": format!("rows at the limit local {n}"), "resource": "r", "result": "r", "score": 3,
                               "content": format!("{:x}", md5_like(n)).repeat(999_000 / 32)})
        })
        .collect();
    let mut client = kb_proto::Client::connect(local.socket()).await?;
    client.call_value(kb_proto::method::IMPORT, serde_json::json!({"items": items})).await?;
    let local_after = local.memory()?;
    println!(
        "  then 10 rows of 1 MB, the most content an experience may hold (taken, redacted, indexed), handled in \
         {:.1} s: RSS after {}, peak {} ({} above the idle RSS before both); the same 10 imported locally by a \
         daemon without a hub: peak {} above its idle {}",
        at_limit.as_secs_f64(),
        mebibytes_from_kib(after.rss_kib),
        mebibytes_from_kib(after.peak_rss_kib),
        mebibytes_from_kib(after.peak_rss_kib.saturating_sub(idle.rss_kib)),
        mebibytes_from_kib(local_after.peak_rss_kib.saturating_sub(local_idle.rss_kib)),
        mebibytes_from_kib(local_idle.rss_kib),
    );
    Ok(())
}

/// 32 hex digits that differ per `n`, like PostgreSQL's `md5(n::text)` in the rows above.
fn md5_like(n: usize) -> u128 {
    (n as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834) | (1 << 124)
}

/// Writes `(rows, bytes of content each, tag)` as A's rows and waits until B has handled all
/// of them (taken or skipped); how long that took after the write.
async fn measure_pull(postgres: &TestPostgres, b: &BenchDaemon, sets: &[(usize, usize, &str)]) -> anyhow::Result<Duration> {
    let before = hub_status(b).await?;
    let handled = |status: &serde_json::Value| {
        status["skipped"].as_u64().unwrap_or(0) + status["team_experiences"].as_u64().unwrap_or(0)
    };
    let handled_before = handled(&before);
    let total: usize = sets.iter().map(|(rows, _, _)| rows).sum();
    let sql: String = sets
        .iter()
        .map(|(rows, bytes, tag)| {
            format!(
                "INSERT INTO knowhub.experiences (team, id, author, machine, task, resource, result, score, content, \
                 created_at, updated_at, hub_seq) SELECT 'pair', '{tag}' || n, 'm0', 'bench', 'rows at the limit {tag} ' || n, \
                 'r', 'r', 3, repeat(md5(n::text), {repeats}), now(), now(), 0 FROM generate_series(1, {rows}) AS n;",
                repeats = bytes / 32
            )
        })
        .collect();
    postgres.sql(&sql);
    let written = Instant::now();
    until(b, Duration::from_secs(300), "pulling the big rows", |status| handled(status) >= handled_before + total as u64)
        .await?;
    Ok(written.elapsed())
}
