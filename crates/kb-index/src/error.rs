//! The one error type of the index crate, with the context each failure needs to be understood.

use std::path::PathBuf;

/// Everything that can go wrong in the index. Variants say what was being done and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation on the index directory failed (create, list, remove).
    #[error("cannot {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Another live writer, in this process or another one, holds the index directory. The
    /// directory is left untouched: wiping it would pull the files out from under that writer.
    #[error("the index at {path} is locked by another writer (is another knowhubd running?)")]
    Locked { path: PathBuf },

    /// Creating or opening the index failed even after wiping the directory.
    #[error("cannot create the index at {path}")]
    Create {
        path: PathBuf,
        #[source]
        source: tantivy::TantivyError,
    },

    /// An in-memory index could not be set up (writer or reader creation).
    #[error("cannot create the in-memory index")]
    CreateInRam {
        #[source]
        source: tantivy::TantivyError,
    },

    /// Adding or deleting documents failed (typically: the indexing threads died).
    #[error("cannot {operation} in the index")]
    Write {
        operation: &'static str,
        #[source]
        source: tantivy::TantivyError,
    },

    /// The commit of the pending changes failed; they are not durable.
    #[error("cannot commit the index at applied_seq {applied_seq}")]
    Commit {
        applied_seq: u64,
        #[source]
        source: tantivy::TantivyError,
    },

    /// Syncing committed index files to disk failed; they stay listed for the next attempt.
    #[error("cannot sync the index files to disk")]
    Sync {
        #[source]
        source: std::io::Error,
    },

    /// The commit went through but the reader could not be reloaded to see it.
    #[error("cannot reload the index reader after commit")]
    Reload {
        #[source]
        source: tantivy::TantivyError,
    },

    /// Executing a search failed.
    #[error("search failed for query {query:?}")]
    Search {
        query: String,
        #[source]
        source: tantivy::TantivyError,
    },

    /// The commit payload could not be serialised.
    #[error("cannot encode the commit payload")]
    Payload {
        #[source]
        source: serde_json::Error,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether this failure says the index's files are damaged (a footer or checksum that does
    /// not match, data that cannot be decoded): no retry of the same operation can succeed, the
    /// index must be rebuilt from the store. A missing descriptor or a full disk is not damage.
    pub fn is_damage(&self) -> bool {
        let source = match self {
            Error::Create { source, .. }
            | Error::CreateInRam { source }
            | Error::Write { source, .. }
            | Error::Commit { source, .. }
            | Error::Reload { source }
            | Error::Search { source, .. } => source,
            Error::Io { .. } | Error::Locked { .. } | Error::Sync { .. } | Error::Payload { .. } => return false,
        };
        match source {
            tantivy::TantivyError::DataCorruption(_) => true,
            tantivy::TantivyError::OpenReadError(tantivy::directory::error::OpenReadError::IoError {
                io_error,
                ..
            }) => io_error.kind() == std::io::ErrorKind::InvalidData,
            tantivy::TantivyError::OpenReadError(tantivy::directory::error::OpenReadError::IncompatibleIndex(_)) => {
                true
            }
            tantivy::TantivyError::IoError(io_error) => io_error.kind() == std::io::ErrorKind::InvalidData,
            _ => false,
        }
    }
}
