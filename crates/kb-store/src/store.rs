//! The `Store`: one SQLite connection, opened for writing (migrated, in WAL mode with
//! `synchronous = FULL`) or for reading, and the sequence number every change bumps. What it
//! reads and writes is in the modules beside this one: `write`, `read`, `vectors`, `hub` and
//! `extraction` each add their methods to it.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::Context;
use crate::{Error, Result, migrations};

/// SQLite's page cache of a read-only connection, in KiB (see [`Store::open_reader`]).
const READER_CACHE_KIB: i64 = 256;

/// One connection to the experience database. The daemon keeps one writer and a few readers;
/// SQLite in WAL mode lets readers run while the writer commits.
pub struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the database for reading and writing, migrates it and makes
    /// the near-duplicate keys it lacks.
    pub fn open(path: &Path) -> Result<Store> {
        let mut conn = Connection::open(path).map_err(|source| Error::Open { path: path.to_owned(), source })?;
        configure(&conn).map_err(|source| Error::Open { path: path.to_owned(), source })?;
        migrations::migrate(&mut conn, path)?;
        migrations::fill_same_keys(&mut conn)?;
        Ok(Store { conn, path: path.to_owned() })
    }

    /// Opens an existing, migrated database for reading only.
    pub fn open_reader(path: &Path) -> Result<Store> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let conn =
            Connection::open_with_flags(path, flags).map_err(|source| Error::Open { path: path.to_owned(), source })?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|source| Error::Open { path: path.to_owned(), source })?;
        // Readers look up a few rows per request, which the kernel's page cache serves as fast;
        // SQLite's own cache (2 MiB per connection by default) would hold a second, resident
        // copy of them. Measured with `kb-bench hybrid` at 100k: RSS 3.3 MiB lower with the
        // four readers at 256 KiB, BM25 p50/p99 unchanged.
        conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)
            .map_err(|source| Error::Open { path: path.to_owned(), source })?;
        Ok(Store { conn, path: path.to_owned() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sequence number of the last change committed.
    pub fn seq(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = 'seq'", [], |row| row.get::<_, i64>(0))
            .doing("reading the sequence number")
            .map(|seq| seq as u64)
    }

    /// Copies the database to `destination` with SQLite's online backup, consistent even
    /// while writes go on.
    pub fn backup_to(&self, destination: &Path) -> Result<()> {
        self.conn.execute("VACUUM INTO ?1", [destination.to_string_lossy()]).doing("writing a backup").map(|_| ())
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL fsyncs the WAL on every commit: an acknowledged write survives power loss too.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

pub(crate) fn read_seq(conn: &Connection) -> Result<u64> {
    conn.query_row("SELECT value FROM meta WHERE key = 'seq'", [], |row| row.get::<_, i64>(0))
        .doing("reading the sequence number")
        .map(|seq| seq as u64)
}

pub(crate) fn write_seq(conn: &Connection, seq: u64) -> Result<()> {
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'seq'", [seq as i64])
        .doing("writing the sequence number")
        .map(|_| ())
}
