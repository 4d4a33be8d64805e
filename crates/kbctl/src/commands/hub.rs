//! The team hub: `kbctl hub status`, `kbctl hub sync`, and `kbctl hub init` for the team's
//! admin, which talks to PostgreSQL directly rather than to the daemon.

use std::process::ExitCode;

use kb_proto::wire::{self, StatusResult};
use kb_proto::{Client, method};
use serde_json::json;

use super::call;
use crate::output;

pub(super) async fn status(client: &mut Client, json: bool) -> anyhow::Result<ExitCode> {
    let status: StatusResult = call(client, method::STATUS, &json!({})).await?;
    if json {
        output::json(&status.hub)?;
    } else {
        output::line(hub_text(&status.hub))?;
    }
    Ok(if status.hub.state == "error" || status.hub.stalled_since.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub(super) async fn sync(client: &mut Client, json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::HubSyncResult = call(client, method::HUB_SYNC, &json!({})).await?;
    if json {
        output::json(&result)?;
    } else {
        output::line(format!("pushed {}, pulled {}\n{}", result.pushed, result.pulled, hub_text(&result.hub)))?;
    }
    Ok(if result.hub.state == "connected" { ExitCode::SUCCESS } else { ExitCode::FAILURE })
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
    if let Some(role) = &hub.role {
        text.push_str(&format!("\nshares as: {role}"));
    }
    if let Some(since) = &hub.stalled_since {
        text.push_str(&format!("\nSTALLED: no sync round has completed since {since}"));
    }
    if hub.hidden > 0 {
        text.push_str(&format!("\nhidden here: {} teammates' experiences you deleted (kbctl hub hidden)", hub.hidden));
    }
    for held in &hub.held {
        text.push_str(&format!(
            "\nheld back: {} changes of {} (over their daily allowance here; fetched when it allows)",
            held.changes,
            kb_core::display::shown_login(&held.author)
        ));
    }
    if hub.skipped > 0 {
        text.push_str(&format!("\nskipped: {} teammates' rows could not be taken; the newest:", hub.skipped));
        for skip in &hub.skipped_recent {
            text.push_str(&format!(
                "\n  hub change {} by {} (id {}): {}",
                skip.hub_seq,
                kb_core::display::shown_login(skip.author.as_deref().unwrap_or("?")),
                skip.id.as_deref().unwrap_or("?"),
                skip.reason
            ));
        }
    }
    if let Some(error) = &hub.last_error {
        text.push_str(&format!("\nlast error ({}): {}", error.at, error.message));
    }
    text
}

pub(super) async fn hidden(client: &mut Client, json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::HubHiddenResult = call(client, method::HUB_HIDDEN, &json!({})).await?;
    if json {
        output::json(&result)?;
    } else if result.hidden.is_empty() {
        output::line("no teammate's experience is hidden here")?;
    } else {
        for hidden in &result.hidden {
            output::line(format!(
                "{} {}  deleted here {}  {}",
                kb_core::display::shown_login(&hidden.author),
                hidden.id,
                hidden.at,
                hidden.task
            ))?;
        }
        output::line("(kbctl hub unhide AUTHOR ID shows one again)")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn unhide(client: &mut Client, author: &str, id: &str, json: bool) -> anyhow::Result<ExitCode> {
    let result: wire::HubUnhideResult = call(client, method::HUB_UNHIDE, &json!({"author": author, "id": id})).await?;
    if json {
        output::json(&result)?;
    } else if result.unhidden {
        output::line(format!("{author}'s {id} is shown again; it arrives with the next sync"))?;
    } else {
        output::line(format!("{author}'s {id} was not hidden"))?;
    }
    Ok(if result.unhidden { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `kbctl hub init`: the schema, then the SQL for each member. Blocking (the PostgreSQL
/// client runs a runtime of its own): called outside kbctl's runtime.
pub fn init(url: &str, team: &str, members: &[String], password_env: &str, json: bool) -> anyhow::Result<ExitCode> {
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
