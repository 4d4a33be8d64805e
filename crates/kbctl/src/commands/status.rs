//! `kbctl status`: the daemon's health in one screen, exiting 0 only when it answers, speaks
//! this kbctl's protocol version and is healthy.

use std::process::ExitCode;

use kb_proto::wire::{self, StatusResult};
use kb_proto::{Client, PROTOCOL_VERSION, method};
use serde_json::json;

use super::call;
use crate::output;

pub(super) async fn status(client: &mut Client, json: bool) -> anyhow::Result<ExitCode> {
    let status: StatusResult = call(client, method::STATUS, &json!({})).await?;
    let mut problems = Vec::new();
    if status.protocol != PROTOCOL_VERSION {
        problems.push(format!(
            "daemon is out of date: expected protocol {PROTOCOL_VERSION}, knowhubd {} speaks {}; restart it after upgrading",
            status.version, status.protocol
        ));
    }
    // The OpenClaw plugin refuses a daemon that cannot prove itself (`daemon.prove`).
    let identity_problem = match &status.identity {
        None => Some(
            "knowhubd does not prove its identity (it is older than this kbctl): the OpenClaw plugin refuses it; \
             restart it after upgrading"
                .to_owned(),
        ),
        Some(identity) if !identity.ready => Some(format!(
            "the OpenClaw plugin refuses this daemon: {}; fix that and restart knowhubd",
            identity.error.as_deref().unwrap_or("its key file could not be written")
        )),
        Some(_) => None,
    };
    let identity_problem = match identity_problem {
        // The check the plugin makes on every connection, made here too: a key file that
        // was changed or loosened since the daemon wrote it shows here, not only in OpenClaw.
        None => {
            client.prove().await.err().map(|error| format!("the OpenClaw plugin would refuse this daemon: {error}"))
        }
        problem => problem,
    };
    if let Some(problem) = &identity_problem {
        problems.push(problem.clone());
    }
    if !status.healthy {
        let failing: Vec<&wire::ServiceStatus> = status.services.iter().filter(|service| service.unhealthy).collect();
        if let Some(since) = &status.hub.stalled_since {
            problems.push(format!(
                "the hub sync has not completed a round since {since}{}",
                status.hub.last_error.as_ref().map(|error| format!(": {}", error.message)).unwrap_or_default()
            ));
        }
        if status.index.state != "ready"
            || (failing.is_empty() && status.hub.stalled_since.is_none() && identity_problem.is_none())
        {
            problems.push(format!(
                "the search index is {}{}",
                status.index.state,
                status.index.detail.as_deref().map(|detail| format!(": {detail}")).unwrap_or_default()
            ));
        }
        for service in failing {
            problems.push(format!(
                "the {} service is {} since {}{}",
                service.name,
                service.state,
                service.unhealthy_since.as_deref().unwrap_or(&service.since),
                service.reason.as_deref().map(|reason| format!(": {reason}")).unwrap_or_default()
            ));
        }
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
             services: {}\n\
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
            services_line(&status.services),
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
    if hub.skipped > 0 {
        line.push_str(&format!(", {} teammates' rows skipped", hub.skipped));
    }
    let held: u64 = hub.held.iter().map(|held| held.changes).sum();
    if held > 0 {
        line.push_str(&format!(", {held} held back"));
    }
    if (hub.state == "error" || hub.state == "stalled")
        && let Some(error) = &hub.last_error
    {
        line.push_str(&format!(": {}", error.message));
    }
    line
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
    if extraction.over_limit > 0 {
        line.push_str(&format!(
            "\n  {} proposals not kept: over the per-answer or review-queue limit (review, or raise [extraction] max_pending_proposals)",
            extraction.over_limit
        ));
    }
    if let Some(waiting) = &extraction.waiting {
        line.push_str(&format!("\n  waiting: {waiting}"));
    }
    if let Some(error) = &extraction.last_error {
        line.push_str(&format!("\n  last extraction error ({}): {}", error.at, error.message));
    }
    line
}

/// One line on the supervised services for `kbctl status`: each one's state, with its restarts
/// and the reason when it is not simply running.
fn services_line(services: &[wire::ServiceStatus]) -> String {
    if services.is_empty() {
        return "not reported by this daemon".to_owned();
    }
    let each: Vec<String> = services
        .iter()
        .map(|service| {
            let mut text = format!("{} {}", service.name, service.state);
            if service.restarts > 0 {
                text.push_str(&format!(" (restarted {}x", service.restarts));
                if let Some(failure) = &service.last_failure {
                    text.push_str(&format!(", last at {}: {}", failure.at, failure.message));
                }
                text.push(')');
            }
            if service.state != "running"
                && let Some(reason) = &service.reason
            {
                text.push_str(&format!(": {reason}"));
            }
            text
        })
        .collect();
    each.join("; ")
}
