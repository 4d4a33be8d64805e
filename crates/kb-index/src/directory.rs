//! The index's directory: tantivy's `MmapDirectory` with commits made visible at once and made
//! durable later, in one batch (`DeferredSyncDirectory::sync`).
//!
//! Why: a tantivy commit fsyncs every file of the new segment, `meta.json` and the directory,
//! about twenty syncs. Measured with 50 clients submitting at once, the index commit took 15 to
//! 24 ms of every group commit against 1 ms for SQLite's, and set the submit latency. The index
//! is derived from the store, so its durability only saves a rebuild: Lucene's near-real-time
//! readers make the same trade (visible first, durable at the next commit). A process crash
//! loses nothing (the kernel keeps the written pages). After a power loss, files written since
//! the last `sync` may be missing or damaged: opening the index checks every file's checksum
//! and rebuilds it from the store when one fails, and the store keeps the tombstones an older
//! index would need until a sync made the deletes durable (see the engine).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// A `MmapDirectory` whose writes skip `fsync`; [`DeferredSyncDirectory::sync`] syncs them.
#[derive(Clone, Debug)]
pub(crate) struct DeferredSyncDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    /// Files written (completely) since the last sync, relative to `root`.
    unsynced: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl DeferredSyncDirectory {
    pub(crate) fn open(root: &Path) -> Result<DeferredSyncDirectory, OpenDirectoryError> {
        Ok(DeferredSyncDirectory { inner: MmapDirectory::open(root)?, root: root.to_owned(), unsynced: Arc::default() })
    }

    /// Makes every file written so far durable, then the directory (new names, renames,
    /// deletions). Files deleted meanwhile are skipped. On an error the files not yet synced
    /// stay listed for the next attempt.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let pending = std::mem::take(&mut *self.lock_unsynced());
        if pending.is_empty() {
            return Ok(());
        }
        // Data files before `meta.json`: a sync that stops halfway leaves the new meta unsynced
        // sooner than the segments it names.
        let (meta, data): (Vec<&PathBuf>, Vec<&PathBuf>) =
            pending.iter().partition(|path| path.extension().is_some_and(|ext| ext == "json"));
        for (done, path) in data.iter().chain(&meta).enumerate() {
            let synced = match File::open(self.root.join(path)) {
                Ok(file) => file.sync_data(),
                Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error),
            };
            if let Err(error) = synced {
                self.lock_unsynced().extend(data.iter().chain(&meta).skip(done).map(|path| (*path).clone()));
                return Err(error);
            }
        }
        let synced_dir = File::open(&self.root).and_then(|dir| dir.sync_all());
        if synced_dir.is_err() {
            // The directory entries are what is missing: sync the names again next time.
            self.lock_unsynced().extend(meta.into_iter().cloned());
        }
        synced_dir
    }

    /// Whether anything written is not durable yet.
    pub(crate) fn has_unsynced(&self) -> bool {
        !self.lock_unsynced().is_empty()
    }

    fn lock_unsynced(&self) -> std::sync::MutexGuard<'_, BTreeSet<PathBuf>> {
        self.unsynced.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A new file; complete (and listed for the next sync) when tantivy terminates it.
struct UnsyncedFile {
    file: File,
    path: PathBuf,
    unsynced: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Like tantivy's own writer: the file is unbuffered and `BufWriter` above flushes into it.
        Ok(())
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.file.flush()?;
        self.unsynced.lock().unwrap_or_else(PoisonError::into_inner).insert(self.path.clone());
        Ok(())
    }
}

impl Directory for DeferredSyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)?;
        self.lock_unsynced().remove(path);
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new().write(true).create_new(true).open(self.root.join(path)).map_err(|error| {
            if error.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_owned())
            } else {
                OpenWriteError::wrap_io_error(error, path.to_owned())
            }
        })?;
        let writer = UnsyncedFile { file, path: path.to_owned(), unsynced: Arc::clone(&self.unsynced) };
        Ok(io::BufWriter::new(Box::new(writer)))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// Written to a temporary file in the same directory and renamed over the target, so a
    /// reader sees the old content or the new, never a part (tantivy's `meta.json` watcher reads
    /// it at any time); not synced until [`DeferredSyncDirectory::sync`].
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut temporary = tempfile::NamedTempFile::new_in(&self.root)?;
        temporary.write_all(data)?;
        temporary.flush()?;
        temporary.persist(self.root.join(path)).map_err(|error| error.error)?;
        self.lock_unsynced().insert(path.to_owned());
        Ok(())
    }

    fn sync_directory(&self) -> io::Result<()> {
        // Deferred with the files (see `sync`).
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_files_are_listed_until_synced_and_deleted_ones_are_forgotten() {
        let dir = tempfile::tempdir().expect("temp dir");
        let directory = DeferredSyncDirectory::open(dir.path()).expect("opens");
        let mut segment = directory.open_write(Path::new("a.idx")).expect("writes");
        segment.write_all(b"postings").expect("writes");
        assert!(!directory.has_unsynced(), "a file is listed only once complete");
        segment.terminate().expect("terminates");
        directory.atomic_write(Path::new("meta.json"), b"{}").expect("atomic write");
        let mut doomed = directory.open_write(Path::new("b.idx")).expect("writes");
        doomed.write_all(b"x").expect("writes");
        doomed.terminate().expect("terminates");
        directory.delete(Path::new("b.idx")).expect("deletes");
        assert_eq!(
            directory.lock_unsynced().iter().cloned().collect::<Vec<_>>(),
            [PathBuf::from("a.idx"), PathBuf::from("meta.json")]
        );
        directory.sync().expect("syncs");
        assert!(!directory.has_unsynced());
        assert_eq!(std::fs::read(dir.path().join("a.idx")).expect("reads"), b"postings");
        assert_eq!(directory.atomic_read(Path::new("meta.json")).expect("reads"), b"{}");
        assert!(
            matches!(directory.open_write(Path::new("a.idx")), Err(OpenWriteError::FileAlreadyExists(_))),
            "tantivy relies on never overwriting a file"
        );
    }
}
