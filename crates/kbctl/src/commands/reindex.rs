//! `kbctl reindex`: rebuilds the search index, then follows the re-embedding of every
//! experience until it is done, with a progress bar, or until Ctrl-C.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use kb_proto::wire::{self, StatusResult};
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use super::progress::{progress_bar, progress_spinner};
use crate::output;

/// How often `kbctl reindex` asks the daemon how far the re-embedding is.
const EMBED_POLL: Duration = Duration::from_millis(300);

/// Rebuilds the BM25 index (a spinner while the daemon works), then follows the re-embedding
/// the daemon queued, by its backlog, until it is done, the embedder stops or Ctrl-C. When the
/// model is still loading, the daemon defers the re-embedding until it has loaded: then it
/// waits for the model first.
pub(super) async fn reindex(
    client: &mut Client,
    embeddings: bool,
    no_wait: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
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
            EmbedWait::Stopped { reason, .. } => {
                output::error_line(format!("kbctl: stopped waiting for the embeddings: {reason}"))
            }
            EmbedWait::NotLoaded { reason } => {
                output::error_line(format!("kbctl: the embedding model did not load: {reason}"))
            }
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
        EmbedWait::Interrupted { backlog: Some(backlog) } => output::error_line(format!(
            "stopped waiting: knowhubd goes on embedding the {backlog} experiences left in the background (`kbctl status` shows the backlog)"
        )),
        EmbedWait::Interrupted { backlog: None } => output::error_line(
            "stopped waiting: knowhubd embeds every experience again once the model has loaded (`kbctl status` shows the embedder)",
        ),
        EmbedWait::Stopped { backlog, reason } => output::error_line(format!(
            "kbctl: stopped waiting for the embeddings with {backlog} experiences left: {reason}\n\
             the experiences not embedded again keep their previous vectors"
        )),
        EmbedWait::NotLoaded { reason } => output::error_line(format!(
            "kbctl: the embedding model did not load, so no experience was embedded again: {reason}\n\
             the experiences keep their previous vectors"
        )),
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

#[cfg(test)]
mod tests {
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
