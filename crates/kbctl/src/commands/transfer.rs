//! `kbctl import` and `kbctl export`: experiences as JSONL, sent in batches and read back in
//! pages, with a progress bar on standard error.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use indicatif::ProgressBar;
use kb_proto::wire::{ExportParams, ExportResult, ImportResult, StatusResult};
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use super::progress::progress_bar;
use crate::output;

/// Sends the lines of a JSONL file in batches. Lines that are not JSON objects are reported
/// with their line number and skipped; the daemon reports items it refuses the same way.
pub(super) async fn import(
    client: &mut Client,
    file: &Path,
    batch_size: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
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

pub(super) async fn export(client: &mut Client, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
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
            // Escaped as everything kbctl prints: the lines may go to a terminal, now or later.
            writer.write_all(output::json_line(item)?.as_bytes())?;
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
