//! The store's error type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open the database at {path}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error(
        "the database at {path} has schema version {found}, newer than this build knows ({known}); upgrade knowhubd"
    )]
    SchemaTooNew { path: PathBuf, found: i64, known: i64 },
    #[error("migration to schema version {version} failed")]
    Migration {
        version: i64,
        #[source]
        source: rusqlite::Error,
    },
    #[error("database error while {doing}")]
    Sqlite {
        doing: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    #[error("stored row {id} is malformed: {reason}")]
    Malformed { id: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;

/// Adds what the store was doing to a rusqlite error.
pub(crate) trait Context<T> {
    fn doing(self, doing: &'static str) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, rusqlite::Error> {
    fn doing(self, doing: &'static str) -> Result<T> {
        self.map_err(|source| Error::Sqlite { doing, source })
    }
}
