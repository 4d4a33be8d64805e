//! The review queue. `kbctl pending` lists the held experiences, `kbctl approve` and `kbctl
//! reject` decide on them by id, and `kbctl review` goes through them in a terminal, one held
//! experience at a time beside the stored experience it resembles. Each answer is one key and
//! Enter (so a script can drive it through standard input too): approve, edit in
//! `$VISUAL`/`$EDITOR` then approve, reject, skip, quit.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use kb_proto::wire::{self, EditParams, PendingRecord};
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use crate::output::{self, clip};

/// Why an experience is held, in a few words: `extracted (success, 0.85)`, `prompt_injection`.
fn why_held(held: &PendingRecord) -> String {
    let flags: Vec<&str> =
        held.experience.flags.iter().map(String::as_str).filter(|flag| *flag != "extracted").collect();
    let mut parts = Vec::new();
    if let Some(extraction) = &held.extraction {
        let confidence = held.experience.confidence.map(|confidence| format!(", {confidence:.2}")).unwrap_or_default();
        parts.push(format!("extracted ({}{confidence})", extraction.outcome));
    }
    parts.extend(flags.iter().map(|flag| (*flag).to_owned()));
    if parts.is_empty() { "held".to_owned() } else { parts.join(" ") }
}

pub(super) async fn pending(client: &mut Client, limit: i64, json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::PendingResult =
        call(client, method::PENDING, &json!({"limit": limit, "unreviewed": true})).await?;
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
                why_held(held),
                record.score,
                clip(&record.task, 60),
                clip(&record.resource, 30)
            ))?;
            for reason in &held.reasons {
                output::line(format!("    {}", clip(reason, 110)))?;
            }
            if let Some(content) = &held.content {
                output::line(format!("    content ({} characters): {}", content.chars().count(), clip(content, 90)))?;
            }
            if let (Some(similar), Some(similarity)) = (&held.similar, held.similarity) {
                output::line(format!("    resembles {} ({:.2}): {}", similar.id, similarity, clip(&similar.task, 60)))?;
            }
        }
        output::line(
            "review one by one with `kbctl review`, or `kbctl approve ID…` / `kbctl reject ID…`; read with `kbctl show ID`",
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn approve(
    client: &mut Client,
    ids: &[String],
    edit: EditParams,
    versions: &[String],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut params = json!({"ids": ids});
    if edit != EditParams::default() {
        params["edit"] = json!(edit);
    }
    if !versions.is_empty() {
        params["versions"] = json!(versions);
    }
    approve_or_reject(client, method::APPROVE, "approved", &params, json).await
}

pub(super) async fn reject(
    client: &mut Client,
    ids: &[String],
    reason: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    approve_or_reject(client, method::REJECT, "rejected", &json!({"ids": ids, "reason": reason}), json).await
}

/// `kbctl approve` and `kbctl reject`: fails when an id names no experience.
async fn approve_or_reject(
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

/// `kbctl review`: each held experience in turn, answered from standard input.
pub(super) async fn one_at_a_time(client: &mut Client, limit: i64) -> anyhow::Result<ExitCode> {
    let pending: wire::PendingResult =
        call(client, method::PENDING, &json!({"limit": limit, "unreviewed": true})).await?;
    if pending.experiences.is_empty() {
        output::line("nothing is waiting for review")?;
        return Ok(ExitCode::SUCCESS);
    }
    let total = pending.experiences.len();
    let (mut approved, mut rejected, mut skipped) = (0usize, 0usize, 0usize);
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    'items: for (position, held) in pending.experiences.iter().enumerate() {
        show(held, position + 1, total)?;
        loop {
            prompt("[a]pprove  [e]dit  [r]eject  [s]kip  [q]uit > ")?;
            let Some(answer) = lines.next().transpose()? else { break 'items };
            let id = &held.experience.id;
            // Each decision names the version shown above: if the experience changed since (a
            // teammate's edit pulled in while it was read), nothing is decided and it says so.
            let versions: Vec<&str> = held.experience.version.as_deref().into_iter().collect();
            match answer.trim().to_lowercase().as_str() {
                "a" | "approve" => {
                    let params = json!({"ids": [id], "versions": versions});
                    match decide(client, method::APPROVE, params, "approved").await? {
                        true => approved += 1,
                        false => skipped += 1,
                    }
                }
                "e" | "edit" => {
                    let Some(edit) = edit_in_editor(held)? else {
                        output::line("unchanged; still held")?;
                        continue;
                    };
                    let params = json!({"ids": [id], "edit": edit, "versions": versions});
                    match decide(client, method::APPROVE, params, "edited and approved").await? {
                        true => approved += 1,
                        false => skipped += 1,
                    }
                }
                "r" | "reject" => {
                    let params = json!({"ids": [id], "reason": "kbctl review", "versions": versions});
                    match decide(client, method::REJECT, params, "rejected").await? {
                        true => rejected += 1,
                        false => skipped += 1,
                    }
                }
                "s" | "skip" | "" => skipped += 1,
                "q" | "quit" => break 'items,
                other => {
                    output::line(format!("{other:?} is not an answer"))?;
                    continue;
                }
            }
            break;
        }
    }
    let left = total - approved - rejected;
    output::line(format!("approved {approved}, rejected {rejected}, skipped {skipped}; {left} still held"))?;
    Ok(ExitCode::SUCCESS)
}

/// One decision of `kbctl review`, reported; or, when the daemon refuses it (the experience
/// changed since it was shown, an edit of one no longer held), the reason, the item left as it
/// is. Whether it was decided.
async fn decide(client: &mut Client, method: &str, params: serde_json::Value, done: &str) -> anyhow::Result<bool> {
    match call::<_, wire::ReviewResult>(client, method, &params).await {
        Ok(result) => {
            report(&result, done)?;
            Ok(true)
        }
        Err(error) => {
            output::line(format!("not {done}: {error:#}"))?;
            Ok(false)
        }
    }
}

fn prompt(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

fn report(result: &wire::ReviewResult, done: &str) -> std::io::Result<()> {
    for id in &result.changed {
        match result.merged.iter().find(|(approved, _)| approved == id) {
            Some((_, into)) => output::line(format!("{done}: merged into {into}, which says the same"))?,
            None => output::line(format!("{done}: {id}"))?,
        }
    }
    for id in result.unchanged.iter().chain(&result.missing) {
        output::line(format!("{id} is no longer held"))?;
    }
    Ok(())
}

/// Characters of a held experience's content `kbctl review` shows before asking.
const REVIEW_CONTENT_CHARS: usize = 1_500;

fn show(held: &PendingRecord, position: usize, total: usize) -> std::io::Result<()> {
    let record = &held.experience;
    output::line(format!("\n── {position} of {total}: {}  {}", record.id, why_held(held)))?;
    output::line(format!("task:     {}", record.task))?;
    output::line(format!("resource: {}", record.resource))?;
    output::line(format!("result:   {}", record.result))?;
    output::line(format!("score:    {}/5", record.score))?;
    if let Some(content) = &held.content {
        // What approving lets agents read through `kb_content`: shown before the decision.
        let length = content.chars().count();
        let shown: String = content.chars().take(REVIEW_CONTENT_CHARS).collect();
        output::line(format!("content:  ({length} characters)"))?;
        for line in shown.lines() {
            output::line(format!("  │ {line}"))?;
        }
        if length > REVIEW_CONTENT_CHARS {
            output::line(format!("  … {} more characters: `kbctl show {}`", length - REVIEW_CONTENT_CHARS, record.id))?;
        }
    }
    for reason in &held.reasons {
        output::line(format!("held:     {reason}"))?;
    }
    if let Some(session) = &record.session_key {
        output::line(format!("session:  {session}"))?;
    }
    if let Some(extraction) = &held.extraction
        && let Some(cited) = extraction.evidence.as_array()
    {
        for turn in cited {
            let number = turn.get("turn").and_then(serde_json::Value::as_u64).unwrap_or(0);
            let role = turn.get("role").and_then(serde_json::Value::as_str).unwrap_or("?");
            let excerpt = turn.get("excerpt").and_then(serde_json::Value::as_str).unwrap_or("");
            output::line(format!("  evidence #{number} {role}: {}", clip(excerpt, 100)))?;
        }
    }
    if let (Some(similar), Some(similarity)) = (&held.similar, held.similarity) {
        output::line(format!("resembles {} (similarity {similarity:.2}, {}):", similar.id, similar.status))?;
        output::line(format!("  task:     {}", similar.task))?;
        output::line(format!("  resource: {}", similar.resource))?;
        output::line(format!("  result:   {}", similar.result))?;
        output::line("  approving merges into it when the two say the same")?;
    }
    Ok(())
}

const CONTENT_MARKER: &str = "--- content (everything below this line; leave empty for none) ---";

/// Opens the experience in the user's editor; returns the fields that changed, `None` when none did.
fn edit_in_editor(held: &PendingRecord) -> anyhow::Result<Option<EditParams>> {
    let record = &held.experience;
    let text = format!(
        "task: {}\nresource: {}\nresult: {}\nscore: {}\n{CONTENT_MARKER}\n",
        one_line(&record.task),
        one_line(&record.resource),
        one_line(&record.result),
        record.score
    );
    let path = private_temp_file(&text)?;
    let edited = run_editor(&path).and_then(|()| std::fs::read_to_string(&path).context("cannot read the edited file"));
    let _ = std::fs::remove_file(&path);
    let edited = parse_edit(&edited?)?;
    let changed = EditParams {
        task: edited.task.filter(|task| *task != one_line(&record.task)),
        resource: edited.resource.filter(|resource| *resource != one_line(&record.resource)),
        result: edited.result.filter(|result| *result != one_line(&record.result)),
        score: edited.score.filter(|score| *score != i64::from(record.score)),
        content: edited.content,
    };
    Ok((changed != EditParams::default()).then_some(changed))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn private_temp_file(text: &str) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = std::env::temp_dir().join(format!("kbctl-review-{}-{}.txt", std::process::id(), rand_suffix()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_nanos()).unwrap_or(0)
}

/// Runs `$VISUAL`, else `$EDITOR`, else `vi`, on `path` (through the shell, so an editor with
/// arguments such as `code --wait` works).
fn run_editor(path: &Path) -> anyhow::Result<()> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_owned());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("kbctl-editor")
        .arg(path)
        .status()
        .with_context(|| format!("cannot run the editor {editor:?}"))?;
    anyhow::ensure!(status.success(), "the editor {editor:?} failed ({status}); nothing was changed");
    Ok(())
}

/// Reads the edited file back: `key: value` lines, then the content below the marker.
fn parse_edit(text: &str) -> anyhow::Result<EditParams> {
    let (head, content) = match text.split_once(CONTENT_MARKER) {
        Some((head, content)) => (head, Some(content.trim_matches('\n'))),
        None => (text, None),
    };
    let mut edit = EditParams::default();
    for line in head.lines().filter(|line| !line.trim().is_empty()) {
        let (key, value) = line.split_once(':').with_context(|| format!("the line {line:?} is not `field: value`"))?;
        let value = value.trim().to_owned();
        match key.trim() {
            "task" => edit.task = Some(value),
            "resource" => edit.resource = Some(value),
            "result" => edit.result = Some(value),
            "score" => {
                edit.score = Some(value.parse().with_context(|| format!("score must be 1 to 5, got {value:?}"))?)
            }
            other => anyhow::bail!("{other:?} is not a field (task, resource, result, score)"),
        }
    }
    edit.content = content.filter(|content| !content.trim().is_empty()).map(str::to_owned);
    Ok(edit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_file_reads_back() {
        let text = format!(
            "task: Deploy\nresource: make deploy\nresult: works with -j1\nscore: 5\n{CONTENT_MARKER}\nstep 1\nstep 2\n"
        );
        let edit = parse_edit(&text).unwrap();
        assert_eq!(edit.task.as_deref(), Some("Deploy"));
        assert_eq!(edit.score, Some(5));
        assert_eq!(edit.content.as_deref(), Some("step 1\nstep 2"));
        assert!(parse_edit("colour: blue\n").unwrap_err().to_string().contains("not a field"));
        assert!(parse_edit("score: high\n").unwrap_err().to_string().contains("score"));
    }
}
