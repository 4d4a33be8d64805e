//! The experiences themselves: `kbctl search`, `submit`, `show`, `list`, `delete` and `backup`.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use kb_proto::wire::{self, ListParams, ListResult, SearchParams, SearchResult, SubmitParams, SubmitResult};
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use crate::output::{self, clip};

pub(super) async fn search(client: &mut Client, params: &SearchParams, json: bool) -> anyhow::Result<ExitCode> {
    let result: SearchResult = call(client, method::SEARCH, params).await?;
    if json {
        output::json(&result)?;
    } else {
        print_search(&result)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `content_file`, when given, replaces `params.content` with the file's text.
pub(super) async fn submit(
    client: &mut Client,
    mut params: SubmitParams,
    content_file: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if let Some(path) = content_file {
        params.content = Some(read_text(path)?);
    }
    let submitted: SubmitResult = call(client, method::SUBMIT, &params).await?;
    if json {
        output::json(&submitted)?;
    } else {
        let mut text = match &submitted.duplicate_of {
            Some(id) => format!("merged into the existing experience {id}"),
            None => format!("stored {} ({})", submitted.id, submitted.status),
        };
        if !submitted.redactions.is_empty() {
            let kinds: Vec<String> = submitted.redactions.iter().map(|(kind, n)| format!("{kind} ×{n}")).collect();
            text.push_str(&format!("\nredacted: {}", kinds.join(", ")));
        }
        if !submitted.flags.is_empty() {
            text.push_str(&format!("\nheld for review: {}", submitted.flags.join(", ")));
        }
        output::line(text)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn show(client: &mut Client, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let record: wire::ExperienceRecord = call(client, method::GET, &json!({"experience_id": id})).await?;
    let content: Option<wire::ContentResult> = if record.has_content {
        Some(call(client, method::CONTENT, &json!({"experience_id": record.id, "unreviewed": true})).await?)
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
        if let Some(provenance) = &record.provenance {
            output::line(format!("origin:   {provenance}"))?;
        }
        // What a decision should name, so that it applies to this text and no later one.
        if let Some(version) =
            record.version.as_deref().filter(|_| record.status == "pending" || record.provenance.is_some())
        {
            output::line(format!(
                "version:  {version}  (to approve exactly this: kbctl approve {} --version {version})",
                record.id
            ))?;
        }
        if let Some(content) = content {
            output::line(format!("--- content ({}) ---\n{}", content.content_type, content.content))?;
        }
        for origin in &record.origins {
            output::line(format!(
                "--- from the team: {} on machine {} ({}, hub change {}){} ---",
                kb_core::display::shown_login(&origin.author),
                origin.machine,
                if origin.merged { "counted towards this experience" } else { "this copy" },
                origin.hub_seq,
                origin.conflict.as_deref().map(|conflict| format!("\nCONFLICT: {conflict}")).unwrap_or_default(),
            ))?;
        }
        for not_kept in &record.variants_not_kept {
            output::line(format!(
                "--- {} more {} from {} {} not kept (a teammate's copies keep their newest {} variants, about {} KiB) ---",
                not_kept.copies,
                if not_kept.copies == 1 { "copy" } else { "copies" },
                kb_core::display::shown_login(&not_kept.author),
                if not_kept.copies == 1 { "was" } else { "were" },
                kb_core::experience::TEAMMATE_VARIANTS_PER_AUTHOR,
                kb_core::experience::TEAMMATE_VARIANT_BYTES_PER_AUTHOR >> 10,
            ))?;
        }
        if let Some(total) = record.variants_total {
            output::line(format!(
                "--- {total} variants; the newest {} shown (kbctl export has them all) ---",
                record.variants.len()
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

pub(super) async fn list(client: &mut Client, params: &ListParams, json: bool) -> anyhow::Result<ExitCode> {
    let result: ListResult = call(client, method::LIST, params).await?;
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

pub(super) async fn delete(client: &mut Client, ids: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::DeleteResult = call(client, method::DELETE, &json!({"ids": ids})).await?;
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

pub(super) async fn backup(client: &mut Client, path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let absolute = std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let result: wire::BackupResult = call(client, method::BACKUP, &json!({"path": absolute})).await?;
    if json {
        output::json(&result)?;
    } else {
        output::line(format!("wrote {} ({} bytes)", result.path, result.bytes))?;
    }
    Ok(ExitCode::SUCCESS)
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
        if let Some(provenance) = &hit.provenance {
            output::line(format!("   {provenance}"))?;
        }
    }
    if let Some(note) = &result.note {
        output::error_line(format!("note: {note}"));
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
