//! The team hub: a PostgreSQL schema every daemon of a team pushes the experiences it shares to
//! and pulls its teammates' from. PostgreSQL is the server (its roles, row-level security and
//! TLS); this crate is the client each daemon runs, blocking, on a thread of its own.
//!
//! - [`connect`]: the connection URL (`sslmode` and `sslrootcert` as libpq reads them) and TLS
//!   through rustls.
//! - [`schema`]: the hub's versioned migrations and the SQL a team admin runs to add members.
//! - [`Hub`]: push (idempotent upserts and tombstones through the schema's functions, one
//!   transaction a batch), pull (rows after a hub sequence number that is assigned in commit
//!   order, each decoded on its own so that no row stops the ones after it, within a byte
//!   budget), and `LISTEN`/`NOTIFY` wake-ups on the team's private channel.

pub mod connect;
mod hub;
pub mod schema;
pub mod testing;

pub use connect::{ConnectOptions, SslMode};
pub use hub::{Change, Hub, Page, PullLimits, Pulled, Shared, Skipped};

/// What went wrong talking to the hub; its message names the hub and what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the hub URL is not valid: {0}")]
    Url(String),
    #[error("cannot read {what} {path}: {source}")]
    File { what: &'static str, path: std::path::PathBuf, source: std::io::Error },
    #[error("TLS set-up failed: {0}")]
    Tls(String),
    #[error("cannot connect to the hub at {target}: {message}")]
    Connect { target: String, message: String },
    #[error("the hub at {target} has no KnowHub schema yet: run `kbctl hub init` as the team's admin")]
    NoSchema { target: String },
    #[error("the hub's schema is version {found}, newer than this build knows ({known}): upgrade knowhubd")]
    SchemaTooNew { found: i32, known: i32 },
    #[error("role {role} is not a member of team {team:?} on {target} (any more): the team's admin adds it with `kbctl hub init --member {role}`'s SQL")]
    NotMember { role: String, team: String, target: String },
    #[error("{doing}: {message}")]
    Query { doing: &'static str, message: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// A PostgreSQL error with its server message, detail and hint, which `Display` of
/// `postgres::Error` leaves out ("db error" alone).
pub(crate) fn describe(error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => {
            let mut message = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                message.push_str(&format!("; {detail}"));
            }
            if let Some(hint) = db.hint() {
                message.push_str(&format!("; hint: {hint}"));
            }
            message
        }
        None => {
            // The source chain holds the useful part (refused, TLS, timeout).
            let mut message = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            message
        }
    }
}

pub(crate) trait Doing<T> {
    fn doing(self, doing: &'static str) -> Result<T>;
}

impl<T> Doing<T> for std::result::Result<T, postgres::Error> {
    fn doing(self, doing: &'static str) -> Result<T> {
        self.map_err(|error| Error::Query { doing, message: describe(&error) })
    }
}
