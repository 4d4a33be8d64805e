//! What each `kbctl` subcommand does: one or more calls to the daemon, then printing. This
//! module connects and hands each subcommand to the module of its area.

mod extraction;
pub mod hub;
mod progress;
mod reindex;
mod review;
mod status;
mod store;
mod transfer;

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use kb_proto::wire::{EditParams, ListParams, SearchParams, SubmitParams};
use kb_proto::{Client, ClientError, Paths};

use crate::cli::{Cli, Command, ExtractionAction, HubAction};

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
        Command::Status => status::status(&mut client, json).await,
        Command::Search { query, top_k, min_score, agent_id, mode, origin } => {
            // The user sees everything, teammates' and extracted experiences not yet reviewed
            // included, each marked (agents do not see those).
            let params = SearchParams { query, top_k, min_score, agent_id, mode, origin, unreviewed: Some(true) };
            store::search(&mut client, &params, json).await
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
            confirm,
        } => {
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
                confirm,
            };
            store::submit(&mut client, params, content_file.as_deref(), json).await
        }
        Command::Show { id } => store::show(&mut client, &id, json).await,
        Command::List { status, agent_id, limit } => {
            let params = ListParams { status, agent_id, limit: Some(limit), before_id: None };
            store::list(&mut client, &params, json).await
        }
        Command::Pending { limit } => review::pending(&mut client, limit, json).await,
        Command::Approve { ids, task, resource, result, score, content, versions } => {
            let edit = EditParams { task, resource, result, score, content };
            review::approve(&mut client, &ids, edit, &versions, json).await
        }
        Command::Review { limit } => review::one_at_a_time(&mut client, limit).await,
        Command::Extraction { action: Some(ExtractionAction::Retry { ids }), .. } => {
            extraction::retry(&mut client, &ids, json).await
        }
        Command::Hub { action: HubAction::Status } => hub::status(&mut client, json).await,
        Command::Hub { action: HubAction::Sync } => hub::sync(&mut client, json).await,
        Command::Hub { action: HubAction::Hidden } => hub::hidden(&mut client, json).await,
        Command::Hub { action: HubAction::Unhide { author, id } } => hub::unhide(&mut client, &author, &id, json).await,
        Command::Hub { action: HubAction::Init { .. } } => unreachable!("run by main, outside the runtime"),
        Command::Extraction { action: None, state, limit } => {
            extraction::jobs(&mut client, state.as_deref(), limit, json).await
        }
        Command::Reject { ids, reason } => review::reject(&mut client, &ids, reason.as_deref(), json).await,
        Command::Delete { ids } => store::delete(&mut client, &ids, json).await,
        Command::Import { file, batch } => transfer::import(&mut client, &file, batch.max(1), json).await,
        Command::Export { file } => transfer::export(&mut client, file.as_deref(), json).await,
        Command::Reindex { no_embeddings, no_wait } => {
            reindex::reindex(&mut client, !no_embeddings, no_wait, json).await
        }
        Command::Backup { path } => store::backup(&mut client, &path, json).await,
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

/// One call to the daemon; an error names the method that failed.
async fn call<P: serde::Serialize, R: serde::de::DeserializeOwned>(
    client: &mut Client,
    method: &str,
    params: &P,
) -> anyhow::Result<R> {
    client.call(method, params).await.with_context(|| format!("{method} failed"))
}
