//! What each `kbctl` subcommand does: one or more calls to the daemon, then printing.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use kb_proto::wire::{
    self, ExportParams, ExportResult, ImportResult, ListParams, ListResult, SearchParams, SearchResult, StatusResult,
    SubmitParams, SubmitResult,
};
use kb_proto::{Client, ClientError, PROTOCOL_VERSION, Paths, method};
use serde_json::json;

use crate::output::{self, clip};
use crate::{Cli, Command};

/// The daemon's example config, embedded so `kbctl config` works without the daemon.
const EXAMPLE_CONFIG: &str = include_str!("../../knowhubd/config.example.toml");

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let socket = cli.socket.clone().unwrap_or_else(|| Paths::from_env().socket);
    let json = cli.json;
    if let Command::Config = cli.command {
        print!("{EXAMPLE_CONFIG}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Command::Service { action } = &cli.command {
        return crate::service::run(action, &socket, json).await;
    }
    let mut client = connect(&socket).await?;
    match cli.command {
        Command::Status => status(&mut client, json).await,
        Command::Search { query, top_k, min_score, agent_id, mode, origin } => {
            let params = SearchParams { query, top_k, min_score, agent_id, mode, origin };
            let result: SearchResult = call(&mut client, method::SEARCH, &params).await?;
            if json {
                output::json(&result)?;
            } else {
                print_search(&result)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Submit {
            task,
            resource,
            result,
            score,
            content,
            content_file,
            content_type,
            agent_id,
            submitted_by,
        } => {
            let content = match content_file {
                Some(path) => Some(read_text(&path)?),
                None => content,
            };
            let params = SubmitParams {
                task,
                resource,
                result,
                score,
                content,
                content_type,
                agent_id,
                submitted_by,
                session_key: None,
                source: Some("cli".to_owned()),
            };
            let submitted: SubmitResult = call(&mut client, method::SUBMIT, &params).await?;
            if json {
                output::json(&submitted)?;
            } else {
                let mut text = match &submitted.duplicate_of {
                    Some(id) => format!("merged into the existing experience {id}"),
                    None => format!("stored {} ({})", submitted.id, submitted.status),
                };
                if !submitted.redactions.is_empty() {
                    let kinds: Vec<String> =
                        submitted.redactions.iter().map(|(kind, n)| format!("{kind} ×{n}")).collect();
                    text.push_str(&format!("\nredacted: {}", kinds.join(", ")));
                }
                if !submitted.flags.is_empty() {
                    text.push_str(&format!("\nheld for review: {}", submitted.flags.join(", ")));
                }
                output::line(text)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { id } => {
            let record: wire::ExperienceRecord = call(&mut client, method::GET, &json!({"experience_id": id})).await?;
            let content: Option<wire::ContentResult> = if record.has_content {
                Some(call(&mut client, method::CONTENT, &json!({"experience_id": record.id})).await?)
            } else {
                None
            };
            if json {
                output::json(&json!({"experience": record, "content": content}))?;
            } else {
                output::line(format!(
                    "{}  [{}] score {}/5  {}\ntask:     {}\nresource: {}\nresult:   {}\nsource:   {}{}  created {}  merged {}×  recalled {}×",
                    record.id,
                    record.status,
                    record.score,
                    record.flags.join(","),
                    record.task,
                    record.resource,
                    record.result,
                    record.source,
                    record.agent_id.as_deref().map(|agent| format!("  agent {agent}")).unwrap_or_default(),
                    record.created_at,
                    record.merge_count,
                    record.recall_count,
                ))?;
                if let Some(content) = content {
                    output::line(format!("--- content ({}) ---\n{}", content.content_type, content.content))?;
                }
                for origin in &record.origins {
                    output::line(format!(
                        "--- from the team: {} on machine {} ({}, hub change {}){} ---",
                        origin.author,
                        origin.machine,
                        if origin.merged { "counted towards this experience" } else { "this copy" },
                        origin.hub_seq,
                        origin
                            .conflict
                            .as_deref()
                            .map(|conflict| format!("\nCONFLICT: {conflict}"))
                            .unwrap_or_default(),
                    ))?;
                }
                for (number, variant) in record.variants.iter().enumerate() {
                    let how = match variant.similarity {
                        Some(similarity) => format!("near-identical, similarity {similarity:.3}"),
                        None => "identical".to_owned(),
                    };
                    output::line(format!(
                        "--- variant {} ({how}, {}{}) ---\ntask:     {}\nresource: {}\nresult:   {}{}",
                        number + 1,
                        variant.created_at,
                        variant.submitted_by.as_deref().map(|who| format!(", by {who}")).unwrap_or_default(),
                        variant.task,
                        variant.resource,
                        variant.result,
                        variant.content.as_deref().map(|content| format!("\ncontent:  {content}")).unwrap_or_default(),
                    ))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List { status, agent_id, limit } => {
            let params = ListParams { status, agent_id, limit: Some(limit), before_id: None };
            let result: ListResult = call(&mut client, method::LIST, &params).await?;
            if json {
                output::json(&result)?;
            } else if result.experiences.is_empty() {
                output::line("no experiences")?;
            } else {
                for record in &result.experiences {
                    output::line(format!(
                        "{}  {:<8} {}/5  {}  ({})",
                        record.id,
                        record.status,
                        record.score,
                        clip(&record.task, 60),
                        clip(&record.resource, 30)
                    ))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Pending { limit } => {
            let result: wire::PendingResult = call(&mut client, method::PENDING, &json!({"limit": limit})).await?;
            if json {
                output::json(&result)?;
            } else if result.experiences.is_empty() {
                output::line("nothing is waiting for review")?;
            } else {
                for held in &result.experiences {
                    let record = &held.experience;
                    output::line(format!(
                        "{}  {}  {}/5  {}  ({})",
                        record.id,
                        crate::review::why_held(held),
                        record.score,
                        clip(&record.task, 60),
                        clip(&record.resource, 30)
                    ))?;
                    if let (Some(similar), Some(similarity)) = (&held.similar, held.similarity) {
                        output::line(format!(
                            "    resembles {} ({:.2}): {}",
                            similar.id,
                            similarity,
                            clip(&similar.task, 60)
                        ))?;
                    }
                }
                output::line(
                    "review one by one with `kbctl review`, or `kbctl approve ID…` / `kbctl reject ID…`; read with `kbctl show ID`",
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Approve { ids, task, resource, result, score, content } => {
            let edit = wire::EditParams { task, resource, result, score, content };
            let params = if edit == wire::EditParams::default() {
                json!({"ids": ids})
            } else {
                json!({"ids": ids, "edit": edit})
            };
            review(&mut client, method::APPROVE, "approved", &params, json).await
        }
        Command::Review { limit } => crate::review::run(&mut client, limit).await,
        Command::Extraction { action: Some(crate::ExtractionAction::Retry { ids }), .. } => {
            let result: wire::RetryResult = call(&mut client, method::EXTRACT_RETRY, &json!({"ids": ids})).await?;
            if json {
                output::json(&result)?;
            } else {
                output::line(format!("queued again: {}", result.retried.len()))?;
                for id in &result.not_retried {
                    output::line(format!("job {id} is not a failed job that still holds its conversation"))?;
                }
            }
            Ok(if result.not_retried.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Hub { action: crate::HubAction::Status } => {
            let status: StatusResult = call(&mut client, method::STATUS, &json!({})).await?;
            if json {
                output::json(&status.hub)?;
            } else {
                output::line(hub_text(&status.hub))?;
            }
            Ok(if status.hub.state == "error" { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Hub { action: crate::HubAction::Sync } => {
            let result: wire::HubSyncResult = call(&mut client, method::HUB_SYNC, &json!({})).await?;
            if json {
                output::json(&result)?;
            } else {
                output::line(format!("pushed {}, pulled {}\n{}", result.pushed, result.pulled, hub_text(&result.hub)))?;
            }
            Ok(if result.hub.state == "connected" { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Hub { action: crate::HubAction::Init { .. } } => unreachable!("run by main, outside the runtime"),
        Command::Extraction { action: None, state, limit } => {
            let result: wire::JobsResult =
                call(&mut client, method::EXTRACT_JOBS, &json!({"state": state, "limit": limit})).await?;
            if json {
                output::json(&result)?;
            } else if result.jobs.is_empty() {
                output::line("no extraction jobs")?;
            } else {
                for job in &result.jobs {
                    output::line(format!(
                        "{:>5}  {:<7} {} messages, {} attempts, {} tokens, {} proposals  {}  ({})",
                        job.id,
                        job.state,
                        job.messages,
                        job.attempts,
                        job.tokens,
                        job.proposals,
                        job.created_at,
                        clip(&job.session_key, 40)
                    ))?;
                    if let Some(error) = &job.error {
                        output::line(format!("       {}", clip(error, 200)))?;
                    }
                }
                if result.jobs.iter().any(|job| job.retryable) {
                    output::line("queue failed jobs again with `kbctl extraction retry ID…`")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reject { ids, reason } => {
            review(&mut client, method::REJECT, "rejected", &json!({"ids": ids, "reason": reason}), json).await
        }
        Command::Delete { ids } => {
            let result: wire::DeleteResult = call(&mut client, method::DELETE, &json!({"ids": ids})).await?;
            if json {
                output::json(&result)?;
            } else {
                output::line(format!("deleted {}", result.deleted))?;
                for id in &result.missing {
                    output::line(format!("no experience with id {id}"))?;
                }
            }
            Ok(if result.missing.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Import { file, batch } => import(&mut client, &file, batch.max(1), json).await,
        Command::Export { file } => export(&mut client, file.as_deref(), json).await,
        Command::Reindex { no_embeddings, no_wait } => reindex(&mut client, !no_embeddings, no_wait, json).await,
        Command::Backup { path } => {
            let absolute = std::path::absolute(&path).with_context(|| format!("cannot resolve {}", path.display()))?;
            let result: wire::BackupResult = call(&mut client, method::BACKUP, &json!({"path": absolute})).await?;
            if json {
                output::json(&result)?;
            } else {
                output::line(format!("wrote {} ({} bytes)", result.path, result.bytes))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Config | Command::Service { .. } => unreachable!("handled before connecting"),
    }
}

async fn connect(socket: &Path) -> anyhow::Result<Client> {
    Client::connect(socket).await.map_err(|error| match error {
        ClientError::Connect { socket, source } => anyhow::anyhow!(
            "knowhubd is not running (cannot connect to {}: {source})\n\
             start it with `kbctl service install`, or run `knowhubd` in another terminal",
            socket.display()
        ),
        other => anyhow::Error::new(other),
    })
}

pub(crate) async fn call<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    client: &mut Client,
    method: &str,
    params: &P,
) -> anyhow::Result<R> {
    client.call(method, params).await.with_context(|| format!("{method} failed"))
}

async fn status(client: &mut Client, json: bool) -> anyhow::Result<ExitCode> {
    let status: StatusResult = call(client, method::STATUS, &json!({})).await?;
    let mut problems = Vec::new();
    if status.protocol != PROTOCOL_VERSION {
        problems.push(format!(
            "daemon is out of date: expected protocol {PROTOCOL_VERSION}, knowhubd {} speaks {}; restart it after upgrading",
            status.version, status.protocol
        ));
    }
    if !status.healthy {
        problems.push(format!(
            "the search index is {}{}",
            status.index.state,
            status.index.detail.as_deref().map(|detail| format!(": {detail}")).unwrap_or_default()
        ));
    }
    if json {
        output::json(&status)?;
    } else {
        let verdict = if problems.is_empty() { "healthy" } else { "UNHEALTHY" };
        let mut text = format!(
            "knowhubd {} (protocol {}) is {verdict}\n\
             pid {}, up {}s, socket {}\n\
             experiences: {} ({} active, {} pending, {} rejected)\n\
             index: {}, {} documents (change {} of {})\n\
             embedder: {}{}, backlog {}\n\
             extraction: {}\n\
             hub: {}\n\
             search latency: p50 {:.3} ms, p99 {:.3} ms over the last {} searches\n\
             submit latency: p50 {:.3} ms, p99 {:.3} ms\n\
             database: {}\nconfig: {}",
            status.version,
            status.protocol,
            status.pid,
            status.uptime_s,
            status.socket,
            status.experiences,
            status.counts.active,
            status.counts.pending,
            status.counts.rejected,
            status.index.state,
            status.index.documents,
            status.index.applied_seq,
            status.index.store_seq,
            status.embedder.state,
            status.embedder.detail.as_deref().map(|detail| format!(" ({detail})")).unwrap_or_default(),
            status.embedder.backlog,
            extraction_line(&status.extraction),
            hub_line(&status.hub),
            status.latencies.search.p50_ms,
            status.latencies.search.p99_ms,
            status.latencies.search.count.min(1024),
            status.latencies.submit.p50_ms,
            status.latencies.submit.p99_ms,
            status.paths.database,
            status.paths.config,
        );
        if let Some(error) = &status.last_error {
            text.push_str(&format!("\nlast error ({}): {}", error.at, error.message));
        }
        for problem in &problems {
            text.push_str(&format!("\nproblem: {problem}"));
        }
        output::line(text)?;
    }
    Ok(if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// One line on the team hub for `kbctl status`.
fn hub_line(hub: &wire::HubStatus) -> String {
    if hub.state == "off" {
        return "off".to_owned();
    }
    let mut line = format!(
        "{} ({} on {}), {} of the team's experiences here, outbox {}",
        hub.state,
        hub.team.as_deref().unwrap_or("?"),
        hub.target.as_deref().unwrap_or("?"),
        hub.team_experiences,
        hub.outbox,
    );
    if let Some(lag) = hub.lag_s {
        line.push_str(&format!(", synced {lag}s ago"));
    }
    if hub.state == "error"
        && let Some(error) = &hub.last_error
    {
        line.push_str(&format!(": {}", error.message));
    }
    line
}

/// `kbctl hub status`.
fn hub_text(hub: &wire::HubStatus) -> String {
    if hub.state == "off" {
        return "hub: off (set [hub] url and team in the daemon's config.toml)".to_owned();
    }
    let mut text = format!(
        "hub: {}\nteam: {}\nserver: {} (sslmode {})\nlast sync: {}{}\noutbox: {} waiting, {} refused by the hub\n\
         behind: {} changes of teammates (applied up to hub change {})\n\
         since start: {} pushed, {} pulled\nteam's experiences held here: {}",
        hub.state,
        hub.team.as_deref().unwrap_or("?"),
        hub.target.as_deref().unwrap_or("?"),
        hub.tls.as_deref().unwrap_or("?"),
        hub.last_sync.as_deref().unwrap_or("never"),
        hub.lag_s.map(|lag| format!(" ({lag}s ago)")).unwrap_or_default(),
        hub.outbox,
        hub.refused,
        hub.behind,
        hub.pulled_seq,
        hub.pushed,
        hub.pulled,
        hub.team_experiences,
    );
    if let Some(error) = &hub.last_error {
        text.push_str(&format!("\nlast error ({}): {}", error.at, error.message));
    }
    text
}

/// `kbctl hub init`: the schema, then the SQL for each member. Blocking (the PostgreSQL
/// client runs a runtime of its own): called outside kbctl's runtime.
pub fn hub_init(url: &str, team: &str, members: &[String], password_env: &str, json: bool) -> anyhow::Result<ExitCode> {
    let password = std::env::var(password_env).ok().filter(|password| !password.is_empty());
    let options = kb_hub::ConnectOptions::parse(url, password.as_deref())?;
    let mut client = options.connect()?;
    let (before, after) = kb_hub::schema::migrate(&mut client)?;
    let sql: Vec<String> = members.iter().map(|member| kb_hub::schema::member_sql(team, member)).collect();
    if json {
        output::json(
            &json!({"target": options.target, "version_before": before, "version": after, "member_sql": sql}),
        )?;
    } else {
        let done = if before == after {
            format!("the hub schema on {} is up to date (version {after})", options.target)
        } else if before == 0 {
            format!("created the hub schema on {} (version {after})", options.target)
        } else {
            format!("upgraded the hub schema on {} from version {before} to {after}", options.target)
        };
        output::line(done)?;
        if sql.is_empty() {
            output::line(kb_hub::schema::member_sql(team, "MEMBER"))?;
        }
        for statement in &sql {
            output::line(statement)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line on extraction for `kbctl status`.
fn extraction_line(extraction: &wire::ExtractionStatus) -> String {
    if !extraction.enabled {
        return "off (the plugin's enableServerExtraction)".to_owned();
    }
    let via = match (&extraction.model, &extraction.endpoint) {
        (Some(model), Some(endpoint)) => format!("{model} at {endpoint}"),
        _ => extraction.route.clone(),
    };
    let mut line = format!(
        "{via}; {} queued, {} done, {} skipped, {} failed, {} dropped; {} proposals waiting for review; {} of {} tokens today",
        extraction.queued,
        extraction.done,
        extraction.skipped,
        extraction.failed,
        extraction.dropped,
        extraction.pending_proposals,
        extraction.tokens_today,
        extraction.daily_token_cap
    );
    if let Some(waiting) = &extraction.waiting {
        line.push_str(&format!("\n  waiting: {waiting}"));
    }
    if let Some(error) = &extraction.last_error {
        line.push_str(&format!("\n  last extraction error ({}): {}", error.at, error.message));
    }
    line
}

fn print_search(result: &SearchResult) -> anyhow::Result<()> {
    if result.results.is_empty() {
        output::line("no matching experiences")?;
    }
    for (rank, hit) in result.results.iter().enumerate() {
        output::line(format!(
            "{}. [{}]\n   resource: {}\n   result:   {}\n   score {}/5, relevance {:.3}, id {}{}",
            rank + 1,
            hit.task,
            hit.resource,
            hit.result,
            hit.score,
            hit.relevance,
            hit.id,
            if hit.has_content { " (has detailed content: kbctl show ID)" } else { "" }
        ))?;
    }
    if let Some(note) = &result.note {
        eprintln!("note: {note}");
    }
    Ok(())
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).context("cannot read standard input")?;
    } else {
        text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    }
    Ok(text)
}

/// Sends the lines of a JSONL file in batches. Lines that are not JSON objects are reported
/// with their line number and skipped; the daemon reports items it refuses the same way.
async fn import(client: &mut Client, file: &Path, batch_size: usize, json: bool) -> anyhow::Result<ExitCode> {
    let (reader, total_bytes): (Box<dyn BufRead>, Option<u64>) = if file == Path::new("-") {
        (Box::new(BufReader::new(std::io::stdin())), None)
    } else {
        let opened = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let size = opened.metadata().ok().map(|meta| meta.len());
        (Box::new(BufReader::with_capacity(1 << 20, opened)), size)
    };
    let progress = progress_bar(json, total_bytes);
    let mut totals = ImportTotals::default();
    let mut batch: Vec<serde_json::Value> = Vec::with_capacity(batch_size);
    let mut batch_lines: Vec<usize> = Vec::with_capacity(batch_size);
    for (line_index, line) in reader.lines().enumerate() {
        let line_number = line_index + 1;
        let line = line.with_context(|| format!("cannot read line {line_number} of {}", file.display()))?;
        progress.inc(line.len() as u64 + 1);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<serde_json::Value>(&line) {
            Ok(value) if value.is_object() => {
                batch.push(value);
                batch_lines.push(line_number);
            }
            Ok(_) => totals.reject(line_number, "not a JSON object".to_owned()),
            Err(error) => totals.reject(line_number, format!("not valid JSON: {error}")),
        }
        if batch.len() == batch_size {
            send_batch(client, &mut batch, &mut batch_lines, &mut totals).await?;
            progress.set_message(format!("{} imported", totals.imported));
        }
    }
    send_batch(client, &mut batch, &mut batch_lines, &mut totals).await?;
    progress.finish_and_clear();
    if json {
        output::json(&json!({
            "imported": totals.imported,
            "duplicates": totals.duplicates,
            "rejected": totals.rejected.iter().map(|(line, error)| json!({"line": line, "error": error})).collect::<Vec<_>>(),
        }))?;
    } else {
        output::line(format!(
            "imported {}, duplicates {}, rejected {}",
            totals.imported,
            totals.duplicates,
            totals.rejected.len()
        ))?;
        for (line, error) in totals.rejected.iter().take(20) {
            output::line(format!("  line {line}: {error}"))?;
        }
        if totals.rejected.len() > 20 {
            output::line(format!("  … and {} more", totals.rejected.len() - 20))?;
        }
    }
    Ok(if totals.rejected.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[derive(Default)]
struct ImportTotals {
    imported: usize,
    duplicates: usize,
    rejected: Vec<(usize, String)>,
}

impl ImportTotals {
    fn reject(&mut self, line: usize, error: String) {
        self.rejected.push((line, error));
    }
}

async fn send_batch(
    client: &mut Client,
    batch: &mut Vec<serde_json::Value>,
    lines: &mut Vec<usize>,
    totals: &mut ImportTotals,
) -> anyhow::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let items = std::mem::take(batch);
    let result: ImportResult = call(client, method::IMPORT, &json!({"items": items})).await?;
    totals.imported += result.imported;
    totals.duplicates += result.duplicates;
    for rejected in result.rejected {
        let line = lines.get(rejected.index).copied().unwrap_or(0);
        totals.reject(line, rejected.error);
    }
    lines.clear();
    Ok(())
}

async fn export(client: &mut Client, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let status: StatusResult = call(client, method::STATUS, &json!({})).await?;
    let mut writer: Box<dyn Write> = match file {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    // Progress goes to stderr, and only when the export goes to a file.
    let progress = if file.is_some() { progress_bar(json, Some(status.experiences)) } else { ProgressBar::hidden() };
    let mut after_id: Option<String> = None;
    let mut n_written = 0u64;
    loop {
        let page: ExportResult =
            call(client, method::EXPORT, &ExportParams { after_id: after_id.clone(), limit: Some(500) }).await?;
        for item in &page.items {
            serde_json::to_writer(&mut writer, item)?;
            writer.write_all(b"\n")?;
        }
        n_written += page.items.len() as u64;
        progress.inc(page.items.len() as u64);
        match page.next_after_id {
            Some(next) => after_id = Some(next),
            None => break,
        }
    }
    writer.flush()?;
    progress.finish_and_clear();
    if let Some(path) = file {
        if json {
            output::json(&json!({"exported": n_written, "path": path}))?;
        } else {
            output::line(format!("exported {n_written} experiences to {}", path.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How often `kbctl reindex` asks the daemon how far the re-embedding is.
const EMBED_POLL: Duration = Duration::from_millis(300);

/// Rebuilds the BM25 index (a spinner while the daemon works), then follows the re-embedding
/// the daemon queued, by its backlog, until it is done, the embedder stops or Ctrl-C. When the
/// model is still loading, the daemon defers the re-embedding until it has loaded: then it
/// waits for the model first.
async fn reindex(client: &mut Client, embeddings: bool, no_wait: bool, json: bool) -> anyhow::Result<ExitCode> {
    let spinner = progress_spinner(json, "rebuilding the search index");
    let params = wire::ReindexParams { embeddings: Some(embeddings) };
    let result: wire::ReindexResult = call(client, method::REINDEX, &params).await?;
    spinner.finish_and_clear();
    let indexed = format!("indexed {} experiences in {} ms", result.indexed, result.took_ms);
    let queued = match result.embeddings.as_deref() {
        Some("queued") if result.queued_embeddings > 0 => Some(Queued::Now(result.queued_embeddings)),
        Some("deferred") => Some(Queued::OnceLoaded),
        _ => None,
    };
    let Some(queued) = queued.filter(|_| !no_wait) else {
        if json {
            output::json(&result)?;
            return Ok(ExitCode::SUCCESS);
        }
        output::line(&indexed)?;
        if result.embeddings.as_deref() == Some("queued") && result.queued_embeddings > 0 {
            output::line(format!(
                "queued {} experiences to be embedded again{}; knowhubd works in the background (`kbctl status` shows the backlog)",
                result.queued_embeddings,
                result.model.as_deref().map(|model| format!(" with {model}")).unwrap_or_default()
            ))?;
        } else if let Some(note) = &result.note {
            output::line(note)?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    if !json {
        output::line(&indexed)?;
        if queued == Queued::OnceLoaded {
            // A line of its own (not only the spinner): the wait may be long, and it says what
            // Ctrl-C does.
            output::line(
                "the embedding model is still loading: waiting for it, then for every experience to be embedded again \
                 (Ctrl-C stops only the waiting)",
            )?;
        }
    }
    let started = Instant::now();
    let waited = wait_for_embeddings(client, queued, json).await?;
    let took_ms = started.elapsed().as_millis() as u64;
    let code = match &waited {
        EmbedWait::Done { .. } => ExitCode::SUCCESS,
        EmbedWait::Interrupted { .. } => ExitCode::from(130),
        EmbedWait::Stopped { .. } | EmbedWait::NotLoaded { .. } => ExitCode::FAILURE,
    };
    if json {
        let mut report = serde_json::to_value(&result)?;
        report["wait"] = wait_report(&waited, took_ms);
        output::json(&report)?;
        match &waited {
            EmbedWait::Stopped { reason, .. } => eprintln!("kbctl: stopped waiting for the embeddings: {reason}"),
            EmbedWait::NotLoaded { reason } => eprintln!("kbctl: the embedding model did not load: {reason}"),
            EmbedWait::Done { .. } | EmbedWait::Interrupted { .. } => {}
        }
        return Ok(code);
    }
    match waited {
        EmbedWait::Done { queued, model } => output::line(format!(
            "embedded {queued} experiences again{} in {:.1} s",
            model.or(result.model).map(|model| format!(" with {model}")).unwrap_or_default(),
            took_ms as f64 / 1000.0
        ))?,
        EmbedWait::Interrupted { backlog: Some(backlog) } => eprintln!(
            "stopped waiting: knowhubd goes on embedding the {backlog} experiences left in the background (`kbctl status` shows the backlog)"
        ),
        EmbedWait::Interrupted { backlog: None } => eprintln!(
            "stopped waiting: knowhubd embeds every experience again once the model has loaded (`kbctl status` shows the embedder)"
        ),
        EmbedWait::Stopped { backlog, reason } => eprintln!(
            "kbctl: stopped waiting for the embeddings with {backlog} experiences left: {reason}\n\
             the experiences not embedded again keep their previous vectors"
        ),
        EmbedWait::NotLoaded { reason } => eprintln!(
            "kbctl: the embedding model did not load, so no experience was embedded again: {reason}\n\
             the experiences keep their previous vectors"
        ),
    }
    Ok(code)
}

/// What the daemon did with a reindex's embeddings, for the wait that follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Queued {
    /// This many experiences are in the embedder's backlog.
    Now(u64),
    /// The model is loading; every experience goes into the backlog once it has loaded.
    OnceLoaded,
}

/// How waiting for the re-embedding ended.
#[derive(Debug)]
enum EmbedWait {
    /// The backlog is empty: every queued experience (`queued` of them) has its new vector.
    Done { queued: u64, model: Option<String> },
    /// Ctrl-C: the daemon goes on without us. No backlog while the model was still loading.
    Interrupted { backlog: Option<u64> },
    /// The embedder can no longer work, or the daemon stopped answering.
    Stopped { backlog: u64, reason: String },
    /// The model we waited for failed to load (or the daemon stopped answering meanwhile):
    /// nothing was queued.
    NotLoaded { reason: String },
}

/// `wait` in the JSON `kbctl reindex --json` prints: how the wait ended (`done`, `interrupted`,
/// `stopped`, or `not_loaded` when the model it waited for failed to load), the experiences
/// still waiting, why it stopped, and how many were embedded with which model.
fn wait_report(waited: &EmbedWait, took_ms: u64) -> serde_json::Value {
    let (state, backlog, reason, queued, model) = match waited {
        EmbedWait::Done { queued, model } => ("done", Some(0), None, Some(*queued), model.as_deref()),
        EmbedWait::Interrupted { backlog } => ("interrupted", *backlog, None, None, None),
        EmbedWait::Stopped { backlog, reason } => ("stopped", Some(*backlog), Some(reason.as_str()), None, None),
        EmbedWait::NotLoaded { reason } => ("not_loaded", None, Some(reason.as_str()), None, None),
    };
    json!({"state": state, "took_ms": took_ms, "backlog": backlog, "reason": reason, "queued": queued, "model": model})
}

/// Polls `status` until the embedder's backlog is empty, with a progress bar over the queued
/// experiences (the backlog may also hold experiences that other writes added meanwhile). When
/// the re-embedding waits for the model, a spinner comes first, until the model is ready.
async fn wait_for_embeddings(client: &mut Client, queued: Queued, quiet: bool) -> anyhow::Result<EmbedWait> {
    let no_params = json!({});
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // A batch that fails is retried by the daemon, which records why: show it rather than a bar
    // or a spinner that silently stops moving.
    let mut first_error: Option<Option<wire::LastError>> = None;
    let mut show_new_error = |status: &StatusResult, bar: &ProgressBar| {
        let since_start = first_error.get_or_insert_with(|| status.last_error.clone());
        if let Some(error) = status.last_error.as_ref().filter(|error| Some(*error) != since_start.as_ref()) {
            bar.set_message(format!("knowhubd: {}", output::clip(&error.message, 80)));
        }
    };

    // Deferred: wait for the model first. The daemon fills the backlog with every experience
    // before it reports the model ready, so the first `ready` shows all of them queued (some may
    // be done already: every active experience was queued).
    let mut first_status: Option<StatusResult> = None;
    let queued = match queued {
        Queued::Now(queued) => queued,
        Queued::OnceLoaded => {
            let spinner = progress_spinner(quiet, "waiting for the embedding model to load");
            let loaded = loop {
                let status: StatusResult = tokio::select! {
                    _ = &mut ctrl_c => break Err(EmbedWait::Interrupted { backlog: None }),
                    answer = client.call::<_, StatusResult>(method::STATUS, &no_params) => match answer {
                        Ok(status) => status,
                        Err(error) => {
                            break Err(EmbedWait::NotLoaded { reason: format!("knowhubd stopped answering: {error:#}") });
                        }
                    },
                };
                match status.embedder.state.as_str() {
                    "ready" => break Ok(status),
                    "loading" => show_new_error(&status, &spinner),
                    state => {
                        let detail = status.embedder.detail.as_deref().unwrap_or("no reason given");
                        break Err(EmbedWait::NotLoaded { reason: format!("the embedder is {state}: {detail}") });
                    }
                }
                tokio::select! {
                    _ = &mut ctrl_c => break Err(EmbedWait::Interrupted { backlog: None }),
                    () = tokio::time::sleep(EMBED_POLL) => {}
                }
            };
            spinner.finish_and_clear();
            let status = match loaded {
                Ok(status) => status,
                Err(waited) => return Ok(waited),
            };
            let queued = status.counts.active.max(status.embedder.backlog);
            first_status = Some(status);
            queued
        }
    };
    let mut total = queued;
    let bar = progress_bar(quiet, Some(total));
    bar.set_message("embedding again");
    let mut last_backlog = total;
    let waited = loop {
        let status: StatusResult = match first_status.take() {
            Some(status) => status,
            None => tokio::select! {
                _ = &mut ctrl_c => break EmbedWait::Interrupted { backlog: Some(last_backlog) },
                answer = client.call::<_, StatusResult>(method::STATUS, &no_params) => match answer {
                    Ok(status) => status,
                    Err(error) => {
                        break EmbedWait::Stopped {
                            backlog: last_backlog,
                            reason: format!("knowhubd stopped answering: {error:#}"),
                        };
                    }
                },
            },
        };
        let embedder = &status.embedder;
        last_backlog = embedder.backlog;
        if embedder.state != "ready" {
            let detail = embedder.detail.as_deref().map(|detail| format!(": {detail}")).unwrap_or_default();
            break EmbedWait::Stopped {
                backlog: last_backlog,
                reason: format!("the embedder is {}{detail}", embedder.state),
            };
        }
        if embedder.backlog > total {
            total = embedder.backlog;
            bar.set_length(total);
        }
        bar.set_position(total - embedder.backlog);
        if embedder.backlog == 0 {
            break EmbedWait::Done { queued, model: embedder.model.clone() };
        }
        show_new_error(&status, &bar);
        tokio::select! {
            _ = &mut ctrl_c => break EmbedWait::Interrupted { backlog: Some(last_backlog) },
            () = tokio::time::sleep(EMBED_POLL) => {}
        }
    };
    bar.finish_and_clear();
    Ok(waited)
}

fn progress_bar(quiet: bool, total: Option<u64>) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = match total {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::no_length(),
    };
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {percent:>3}% {elapsed_precise} {msg}") {
        bar.set_style(style);
    }
    bar
}

fn progress_spinner(quiet: bool, message: &'static str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner().with_message(message);
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// `kbctl approve` and `kbctl reject`: fails when an id names no experience.
pub(crate) async fn review(
    client: &mut Client,
    method: &str,
    done: &str,
    params: &serde_json::Value,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let result: wire::ReviewResult = call(client, method, params).await?;
    if json {
        output::json(&result)?;
    } else {
        output::line(format!("{done} {}", result.changed.len()))?;
        for (id, into) in &result.merged {
            output::line(format!("{id} merged into {into}, which says the same"))?;
        }
        for id in &result.unchanged {
            output::line(format!("{id} was already {done}"))?;
        }
        for id in &result.missing {
            output::line(format!("no experience with id {id}"))?;
        }
    }
    Ok(if result.missing.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        crate::Cli::command().debug_assert();
    }

    #[test]
    fn reindex_json_says_how_the_wait_ended() {
        use super::{EmbedWait, wait_report};
        use serde_json::json;
        let done = EmbedWait::Done { queued: 42, model: Some("tiny-model@0123".to_owned()) };
        assert_eq!(
            wait_report(&done, 1500),
            json!({"state": "done", "took_ms": 1500, "backlog": 0, "reason": null, "queued": 42, "model": "tiny-model@0123"})
        );
        // Ctrl-C while the model was still loading: nothing queued yet, so no backlog to tell.
        let interrupted = EmbedWait::Interrupted { backlog: None };
        assert_eq!(wait_report(&interrupted, 7)["state"], "interrupted");
        assert_eq!(wait_report(&interrupted, 7)["backlog"], json!(null));
        let stopped = EmbedWait::Stopped { backlog: 3, reason: "the embedder is unavailable".to_owned() };
        assert_eq!(
            (wait_report(&stopped, 7)["state"].as_str(), wait_report(&stopped, 7)["backlog"].as_u64()),
            (Some("stopped"), Some(3))
        );
        let not_loaded = EmbedWait::NotLoaded { reason: "the embedder is unavailable: bad config.json".to_owned() };
        let report = wait_report(&not_loaded, 7);
        assert_eq!(
            (report["state"].as_str(), report["reason"].as_str()),
            (Some("not_loaded"), Some("the embedder is unavailable: bad config.json"))
        );
    }
}
