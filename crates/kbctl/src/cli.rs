//! The command line's definition: `Cli`, its subcommands and their arguments, as clap parses
//! them. Nothing here runs anything; `commands` and `service` act on what was parsed.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "kbctl", version, about = "Talk to the KnowHub daemon (knowhubd)")]
pub struct Cli {
    /// The daemon's socket (default: KNOWHUB_SOCKET, else the platform default).
    #[arg(long, global = true, env = "KNOWHUB_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum HubAction {
    /// The hub's state: connection, last sync and lag, outbox depth, last error.
    Status,
    /// Push what waits and pull what is new now; exit non-zero if the hub cannot be reached.
    Sync,
    /// Teammates' experiences you deleted here: kept hidden from later syncs.
    Hidden,
    /// Show a hidden teammate's experience again (it arrives with the next sync).
    Unhide {
        /// Who shared it (their login on the hub, as `kbctl hub hidden` prints it).
        author: String,
        /// Its id on the hub.
        id: String,
    },
    /// As the team's admin: create or upgrade the hub's schema in PostgreSQL, then print the
    /// SQL that adds each member (a login role, granted knowhub_member, listed in the team).
    /// Connects directly, not through the daemon.
    Init {
        /// The admin's PostgreSQL URL (postgresql://admin@host:5432/db?sslmode=verify-full&…).
        #[arg(long)]
        url: String,
        /// The team the members are added to.
        #[arg(long)]
        team: String,
        /// A member's role name; repeat for several.
        #[arg(long = "member")]
        members: Vec<String>,
        /// The environment variable holding the admin's password, if the URL has none.
        #[arg(long, default_value = "PGPASSWORD")]
        password_env: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ExtractionAction {
    /// Queue failed jobs again (they keep their conversation for a week).
    Retry {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the daemon: exit 0 only when it answers and is healthy.
    Status,
    /// Search experiences.
    Search {
        query: String,
        #[arg(long, short = 'k')]
        top_k: Option<i64>,
        /// Lowest rating to return (1-5).
        #[arg(long)]
        min_score: Option<i64>,
        #[arg(long)]
        agent_id: Option<String>,
        /// Which retrievers to ask: hybrid (default), bm25 or vector.
        #[arg(long)]
        mode: Option<String>,
        /// Whose experiences: mine (this daemon's own), team (pulled from the team hub) or all.
        #[arg(long)]
        origin: Option<String>,
    },
    /// Submit an experience.
    Submit {
        #[arg(long)]
        task: String,
        #[arg(long)]
        resource: String,
        #[arg(long)]
        result: String,
        /// The rating, 1-5 (default 3).
        #[arg(long)]
        score: Option<i64>,
        /// Detailed content (steps, code, logs).
        #[arg(long, conflicts_with = "content_file")]
        content: Option<String>,
        /// Read the detailed content from a file ('-' for standard input).
        #[arg(long, value_name = "FILE")]
        content_file: Option<PathBuf>,
        #[arg(long)]
        content_type: Option<String>,
        #[arg(long)]
        agent_id: Option<String>,
        #[arg(long)]
        submitted_by: Option<String>,
        /// Store it even though you rejected the same experience before: it becomes active
        /// again. Without this such a submit is refused, naming the rejected experience.
        #[arg(long)]
        confirm: bool,
    },
    /// Show one experience, with its detailed content.
    Show { id: String },
    /// List experiences, newest first.
    List {
        /// active, pending or rejected.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        agent_id: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// List the experiences held for review (suspected prompt injections, extracted
    /// proposals), newest first, with why each is held.
    Pending {
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Approve held experiences: they become searchable. One held as a suspected prompt
    /// injection keeps its flag, so auto-recall still leaves it out of prompts.
    Approve {
        #[arg(required = true)]
        ids: Vec<String>,
        /// Approve with this task instead (one id only; the edit passes the write gate).
        #[arg(long)]
        task: Option<String>,
        #[arg(long)]
        resource: Option<String>,
        #[arg(long)]
        result: Option<String>,
        #[arg(long)]
        score: Option<i64>,
        #[arg(long)]
        content: Option<String>,
        /// The version `kbctl show` printed, one per id: nothing is approved if the experience
        /// changed since (a teammate's edit, a merge).
        #[arg(long = "version")]
        versions: Vec<String>,
    },
    /// Extraction jobs, newest first, with their state and error; `retry ID…` queues failed
    /// ones again once the cause is fixed (an API key, the endpoint).
    Extraction {
        #[command(subcommand)]
        action: Option<ExtractionAction>,
        /// queued, done, failed or dropped.
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// Review held experiences one at a time, each beside the stored experience it resembles:
    /// approve, edit (in $VISUAL or $EDITOR), reject, skip or quit, one key and Enter each.
    Review {
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Reject held (or active) experiences: kept, so the same text submitted again stays
    /// rejected, but never searched.
    Reject {
        #[arg(required = true)]
        ids: Vec<String>,
        /// Why, for the daemon's log.
        #[arg(long)]
        reason: Option<String>,
    },
    /// The team hub: `status`, `sync`, `hidden`, `unhide`, and `init` (for the team's admin).
    Hub {
        #[command(subcommand)]
        action: HubAction,
    },
    /// Delete experiences by id.
    Delete {
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Import experiences from a JSONL file ('-' for standard input): one submit object per line.
    Import {
        file: PathBuf,
        /// Experiences sent per request.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
    },
    /// Export every experience, with content, as JSONL (to standard output without a file).
    Export { file: Option<PathBuf> },
    /// Rebuild the search index from the store and embed every experience again.
    ///
    /// The BM25 index is rebuilt first. Then, when an embedding model is ready, every active
    /// experience is queued to be embedded again with the current model and a progress bar
    /// follows the daemon's backlog until it is done; searches keep working meanwhile, on the
    /// vectors being replaced. While the model is still loading, the re-embedding starts once it
    /// has loaded, and kbctl waits for that first (and fails if the model does not load). Ctrl-C
    /// stops only the waiting: knowhubd finishes re-embedding in the background (`kbctl status`
    /// shows the backlog).
    Reindex {
        /// Only rebuild the search index; keep the stored vectors.
        #[arg(long)]
        no_embeddings: bool,
        /// Return once the experiences are queued (or will be, once the model has loaded),
        /// without waiting for them to be embedded.
        #[arg(long)]
        no_wait: bool,
    },
    /// Write a consistent copy of the database to PATH.
    Backup { path: PathBuf },
    /// Print the daemon's example configuration, with comments.
    Config,
    /// Run KnowHub as a user service (systemd or launchd), started on demand by its socket.
    Service {
        #[command(subcommand)]
        action: ServiceCommand,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum ServiceCommand {
    /// Install KnowHub as a user service started on demand (systemd or launchd) and start it;
    /// without a service manager, start knowhubd in the background instead.
    Install,
    /// Stop the service and remove its units; the data and the binaries stay.
    Uninstall,
    /// Which service manager runs KnowHub, which binary its units run, whether it answers.
    Status,
    /// Write the units (or the plist) that `install` would write into DIR, and nothing else.
    Render {
        #[arg(value_enum)]
        manager: ManagerKind,
        dir: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ManagerKind {
    Systemd,
    Launchd,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_cli_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
