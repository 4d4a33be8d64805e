//! KnowHub's wire protocol: method names, parameter and result types, error codes, the
//! default paths every client agrees on, and a small JSON-RPC client over a Unix socket.
//!
//! Architecture Invariant: this is the only crate that knows the JSON shape of the protocol.
//! The daemon converts between these wire types and the domain types of `kb-core` at the edge.

pub mod client;
pub mod errors;
pub mod identity;
pub mod paths;
pub mod trust;
pub mod wire;

pub use client::{Client, ClientError};
pub use errors::ErrorCode;
pub use paths::Paths;

/// Bumped on any incompatible change to a method's parameters or results. `kbctl` and the
/// plugin stub compare it with `status.protocol` and say when the daemon is out of date.
pub const PROTOCOL_VERSION: u32 = 1;

/// The public method names. Add methods freely; never rename these.
pub mod method {
    pub const STATUS: &str = "status";
    pub const SUBMIT: &str = "kb.submit";
    pub const SEARCH: &str = "kb.search";
    pub const CONTENT: &str = "kb.content";
    pub const IMPORT: &str = "kb.import";
    pub const DELETE: &str = "kb.delete";
    pub const LIST: &str = "kb.list";
    pub const GET: &str = "kb.get";
    pub const EXPORT: &str = "kb.export";
    pub const REINDEX: &str = "kb.reindex";
    pub const BACKUP: &str = "kb.backup";
    pub const HOOK_EVENT: &str = "hook.event";
    pub const PENDING: &str = "kb.pending";
    pub const APPROVE: &str = "kb.approve";
    pub const REJECT: &str = "kb.reject";
    /// The OpenClaw plugin takes the next extraction job to run on OpenClaw's model.
    pub const EXTRACT_LEASE: &str = "extract.lease";
    /// The plugin hands back a leased job's answer (or why its call failed).
    pub const EXTRACT_RESULT: &str = "extract.result";
    /// Extraction jobs, newest first, with their state and error.
    pub const EXTRACT_JOBS: &str = "extract.jobs";
    /// Queues failed extraction jobs again (after the cause was fixed).
    pub const EXTRACT_RETRY: &str = "extract.retry";
    /// Syncs with the team hub now (push the outbox, pull what is new) and answers when done.
    pub const HUB_SYNC: &str = "hub.sync";
    /// Teammates' experiences deleted here and kept hidden from later syncs.
    pub const HUB_HIDDEN: &str = "hub.hidden";
    /// Shows a hidden teammate's experience again (fetched at the next sync).
    pub const HUB_UNHIDE: &str = "hub.unhide";
    /// The daemon proves it can read the key only the user can read (`identity`): for clients
    /// that cannot read the peer's uid, such as the OpenClaw plugin on Node.
    pub const DAEMON_PROVE: &str = "daemon.prove";
}
