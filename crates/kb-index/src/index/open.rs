//! Opening an index: the analyzer every index must have registered, and for a directory that
//! already holds files, whether they make a usable index, and wiping them when they do not.

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use tantivy::Index;
use tantivy::directory::error::LockError;

use super::reader::Reader;
use crate::analyzer::{ANALYZER_NAME, text_analyzer};
use crate::directory::DeferredSyncDirectory;
use crate::error::{Error, Result};
use crate::schema::{CommitPayload, SCHEMA_VERSION, build_schema};

pub(super) fn register_analyzer(index: &Index) {
    index.tokenizers().register(ANALYZER_NAME, text_analyzer());
}

pub(super) fn lock_error(dir: &Path, err: LockError) -> Error {
    match err {
        LockError::LockBusy => Error::Locked { path: dir.to_owned() },
        LockError::IoError(source) => Error::Io {
            action: "lock the index directory",
            path: dir.to_owned(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
    }
}

/// Opens an existing index and checks everything that could make it unusable, returning why
/// it cannot be used otherwise. Corrupt files can make tantivy panic, so panics count as
/// "cannot be used" too.
pub(super) fn open_existing(
    directory: &DeferredSyncDirectory,
    has_meta: bool,
) -> std::result::Result<(Index, Reader, u64), String> {
    if !has_meta {
        return Err("meta.json is missing".to_owned());
    }
    let attempt = catch_unwind(AssertUnwindSafe(|| try_open_existing(directory)));
    match attempt {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(format!("opening the index panicked: {message}"))
        }
    }
}

fn try_open_existing(directory: &DeferredSyncDirectory) -> std::result::Result<(Index, Reader, u64), String> {
    let index = Index::open(directory.clone()).map_err(|err| format!("cannot open: {err}"))?;
    let metas = index.load_metas().map_err(|err| format!("cannot read meta.json: {err}"))?;
    let payload = metas.payload.as_deref().ok_or_else(|| "the last commit has no payload".to_owned())?;
    let payload: CommitPayload =
        serde_json::from_str(payload).map_err(|err| format!("unreadable commit payload {payload:?}: {err}"))?;
    if payload.schema_version != SCHEMA_VERSION {
        return Err(format!("schema version {} on disk, {SCHEMA_VERSION} expected", payload.schema_version));
    }
    let (expected_schema, _) = build_schema();
    if index.schema() != expected_schema {
        return Err("the schema on disk differs from this version's".to_owned());
    }
    // Every byte of the live segments is checked once here, so a damaged file is found now
    // rather than as a wrong answer (or a panic) in some later search.
    let damaged = index.validate_checksum().map_err(|err| format!("cannot validate checksums: {err}"))?;
    if !damaged.is_empty() {
        return Err(format!("damaged files: {damaged:?}"));
    }
    // Opening the reader opens every segment, which finds missing files.
    register_analyzer(&index);
    let reader = Reader::new(&index).map_err(|err| format!("cannot open a reader: {err}"))?;
    Ok((index, reader, payload.applied_seq))
}

/// What an index directory holds, split into the files tantivy could have written and the rest.
pub(super) struct DirListing {
    pub(super) has_meta: bool,
    /// Names tantivy uses: `meta.json`, `.managed.json`, segment files, its temporary files.
    pub(super) index_files: Vec<PathBuf>,
    /// Everything else except the lock files.
    pub(super) other_files: Vec<PathBuf>,
}

impl DirListing {
    pub(super) fn read(dir: &Path) -> Result<DirListing> {
        let io_error = |source| Error::Io { action: "list the index directory", path: dir.to_owned(), source };
        let mut listing = DirListing { has_meta: false, index_files: Vec::new(), other_files: Vec::new() };
        for entry in fs::read_dir(dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".tantivy-writer.lock" || name == ".tantivy-meta.lock" {
                continue;
            }
            if name == "meta.json" {
                listing.has_meta = true;
            }
            if is_index_file_name(&name) && !entry.path().is_dir() {
                listing.index_files.push(entry.path());
            } else {
                listing.other_files.push(entry.path());
            }
        }
        Ok(listing)
    }
}

/// `meta.json`, `.managed.json`, `.tmpXXXXXX` (atomic writes), and segment files: 32 hex digits,
/// optionally a delete opstamp, then an extension (`<uuid>.idx`, `<uuid>.12.del`).
pub(super) fn is_index_file_name(name: &str) -> bool {
    if name == "meta.json" || name == ".managed.json" || name.starts_with(".tmp") {
        return true;
    }
    let mut parts = name.split('.');
    let segment_id = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let is_hex_id = segment_id.len() == 32 && segment_id.bytes().all(|b| b.is_ascii_hexdigit());
    let valid_rest = match rest.as_slice() {
        [extension] => is_extension(extension),
        [opstamp, extension] => opstamp.bytes().all(|b| b.is_ascii_digit()) && is_extension(extension),
        _ => false,
    };
    is_hex_id && valid_rest
}

fn is_extension(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_lowercase())
}

pub(super) fn wipe_index_files(dir: &Path, listing: &DirListing) -> Result<()> {
    for path in &listing.index_files {
        match fs::remove_file(path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::Io { action: "remove the unusable index file", path: path.clone(), source });
            }
        }
    }
    if !listing.other_files.is_empty() {
        tracing::warn!(
            path = %dir.display(),
            files = ?listing.other_files,
            "left files in the index directory that tantivy did not write"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_file_names_are_recognised() {
        for name in [
            "meta.json",
            ".managed.json",
            ".tmpA1b2C3",
            "0123456789abcdef0123456789abcdef.idx",
            "0123456789abcdef0123456789abcdef.12.del",
        ] {
            assert!(is_index_file_name(name), "{name}");
        }
        for name in [
            "notes.txt",
            "meta.json.bak",
            "0123456789abcdef.idx",
            "0123456789abcdef0123456789abcdeg.idx",
            "0123456789abcdef0123456789abcdef",
            ".tantivy-writer.lock",
        ] {
            assert!(!is_index_file_name(name), "{name}");
        }
    }
}
