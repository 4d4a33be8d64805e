//! The `Store`: one SQLite connection, with the reads and writes the daemon needs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kb_core::{Experience, ExperienceId, Gated, Source, Status};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params, params_from_iter};

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

/// What happened to one proposed experience in `Store::write`.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOutcome {
    /// The new id, or the existing one when the experience merged into a duplicate.
    pub id: ExperienceId,
    pub status: Status,
    /// Set when the experience merged into `id`: an exact duplicate of it, or near-identical.
    pub merged: bool,
    /// Set when it merged into `id` as near-identical (`WriteItem::similar_to`), not exact.
    pub similar: bool,
    /// Set when it merged and brought something `id` does not hold (other wording, other
    /// content, another submitter): that is kept as a variant of `id`, so nothing is lost.
    pub variant_kept: bool,
    /// Set when a near-identical experience was found but the two say different things
    /// (`kb_core::sameness`): this one was stored on its own, and this says why.
    pub kept_apart: Option<KeptApart>,
}

/// A near-identical experience that a new one did not merge into, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptApart {
    pub similar_to: String,
    pub reason: String,
}

/// What a merged duplicate brought that its experience does not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    pub content: Option<String>,
    pub content_type: Option<String>,
    pub agent_id: Option<String>,
    pub submitted_by: Option<String>,
    pub session_key: Option<String>,
    pub source: String,
    /// The cosine similarity it merged at; `None` for an exact duplicate.
    pub similarity: Option<f64>,
    pub created_at: i64,
}

/// The columns [`variant_from_row`] reads, in its order.
const VARIANT_COLUMNS: &str = "task, resource, result, score, content, content_type, agent_id, submitted_by, \
    session_key, source, similarity, created_at";

/// A [`Variant`] from [`VARIANT_COLUMNS`], starting at column `first`.
fn variant_from_row(row: &Row<'_>, first: usize) -> rusqlite::Result<Variant> {
    Ok(Variant {
        task: row.get(first)?,
        resource: row.get(first + 1)?,
        result: row.get(first + 2)?,
        score: row.get::<_, i64>(first + 3)?.clamp(1, 5) as u8,
        content: row.get(first + 4)?,
        content_type: row.get(first + 5)?,
        agent_id: row.get(first + 6)?,
        submitted_by: row.get(first + 7)?,
        session_key: row.get(first + 8)?,
        source: row.get(first + 9)?,
        similarity: row.get(first + 10)?,
        created_at: row.get(first + 11)?,
    })
}

/// A stored experience a new one may merge into: what the merge must compare.
struct MergeTarget {
    id: String,
    score: i64,
    status: String,
    content: Option<String>,
    task: String,
    resource: String,
    result: String,
    agent_id: Option<String>,
    submitted_by: Option<String>,
}

/// One experience to store, with what the daemon computed for it beforehand.
#[derive(Debug, Clone, Copy)]
pub struct WriteItem<'a> {
    pub gated: &'a Gated,
    /// Its embedding, stored with it when it is inserted (a merge keeps the stored one's).
    pub vector: Option<VectorRef<'a>>,
    /// A stored experience found near-identical to this one, with their cosine similarity: the
    /// item merges into it, unless it is an exact duplicate of another, that experience is gone
    /// by the time of the write, or the two differ materially (`kb_core::sameness`).
    pub similar_to: Option<(&'a str, f32)>,
    /// Variants the item brings along (an export line's): kept beside whichever experience the
    /// item becomes or merges into, unless that experience already holds the same variant.
    pub carried: &'a [Variant],
    /// The id to store the item under when it is inserted (an approved proposal keeps its
    /// id); a new one when `None`.
    pub id: Option<&'a ExperienceId>,
}

impl<'a> WriteItem<'a> {
    pub fn plain(gated: &'a Gated) -> WriteItem<'a> {
        WriteItem { gated, vector: None, similar_to: None, carried: &[], id: None }
    }
}

/// An embedding as stored: the model that made it and its bytes (`kb_embed::to_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct VectorRef<'a> {
    pub model_id: &'a str,
    pub bytes: &'a [u8],
}

/// What the BM25 index needs of one experience.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub id: String,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub content: Option<String>,
    pub score: u8,
    pub status: Status,
    pub agent_id: Option<String>,
}

/// Changes after a given sequence number, for catching a derived structure up.
#[derive(Debug, Default)]
pub struct Changes {
    pub upserts: Vec<IndexRow>,
    pub deleted_ids: Vec<String>,
    /// The store's sequence number the changes lead up to.
    pub seq: u64,
}

/// The detailed content of an experience, if the experience exists.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredContent {
    NoSuchExperience,
    NoContent,
    Content { content: String, content_type: String },
}

/// Which experiences `Store::list` returns, newest first.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub status: Option<Status>,
    pub agent_id: Option<String>,
    /// Only experiences with ids sorting before this one (for paging).
    pub before_id: Option<String>,
    pub limit: usize,
}

/// One experience with its content, as exported to JSONL.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRow {
    pub experience: Experience,
    pub content: Option<String>,
    /// What merged duplicates brought (see [`Store::variants`]), oldest first.
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub total: u64,
    pub active: u64,
    pub pending: u64,
    pub rejected: u64,
}

pub(crate) const EXPERIENCE_COLUMNS: &str = "e.id, e.task, e.resource, e.result, e.score, \
    EXISTS (SELECT 1 FROM contents c WHERE c.experience_id = e.id), \
    (SELECT c.content_type FROM contents c WHERE c.experience_id = e.id), \
    e.agent_id, e.submitted_by, e.session_key, e.source, e.status, e.confidence, e.flags, \
    e.created_at, e.updated_at, e.merge_count, e.recall_count";

impl Store {
    /// Opens (creating if needed) the database for reading and writing and migrates it.
    pub fn open(path: &Path) -> Result<Store> {
        let mut conn = Connection::open(path).map_err(|source| Error::Open { path: path.to_owned(), source })?;
        configure(&conn).map_err(|source| Error::Open { path: path.to_owned(), source })?;
        migrations::migrate(&mut conn, path)?;
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

    /// Stores gated experiences in one transaction. An exact duplicate (same dedup key as a
    /// stored experience, or as an earlier item of the same call) merges into it: its merge
    /// count goes up, it keeps the better rating, and it gains content it lacked.
    /// Returns one outcome per item and the sequence number after the write.
    pub fn write(&mut self, items: &[Gated], now_ms: i64) -> Result<(Vec<WriteOutcome>, u64)> {
        let items: Vec<WriteItem<'_>> = items.iter().map(WriteItem::plain).collect();
        self.write_items(&items, now_ms)
    }

    /// [`Store::write`] with vectors to store beside new experiences and near-identical
    /// experiences to merge into.
    pub fn write_items(&mut self, items: &[WriteItem<'_>], now_ms: i64) -> Result<(Vec<WriteOutcome>, u64)> {
        let tx = self.conn.transaction().doing("starting a write")?;
        let mut seq = read_seq(&tx)?;
        let outcomes = write_in(&tx, &mut seq, items, now_ms)?;
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a write")?;
        Ok((outcomes, seq))
    }

    /// Sets the status of experiences (the review queue's approve and reject). Returns, per id,
    /// the status it had (`None`: no such experience), and the sequence number after. A changed
    /// row gets a new sequence number, so the indexes take it in or drop it.
    pub fn set_status(&mut self, ids: &[&str], status: Status, now_ms: i64) -> Result<(Vec<Option<Status>>, u64)> {
        let tx = self.conn.transaction().doing("starting a review")?;
        let mut seq = read_seq(&tx)?;
        let mut before = Vec::with_capacity(ids.len());
        {
            let mut current = tx
                .prepare_cached("SELECT status FROM experiences WHERE id = ?1")
                .doing("preparing the status lookup")?;
            let mut update = tx
                .prepare_cached("UPDATE experiences SET status = ?2, updated_at = ?3, seq = ?4 WHERE id = ?1")
                .doing("preparing the status update")?;
            for id in ids {
                let found: Option<String> =
                    current.query_row([id], |row| row.get(0)).optional().doing("reading a status")?;
                let found = match found {
                    None => None,
                    Some(text) => Some(Status::parse(&text).ok_or_else(|| Error::Malformed {
                        id: (*id).to_owned(),
                        reason: format!("unknown status {text:?}"),
                    })?),
                };
                if found.is_some_and(|found| found != status) {
                    seq += 1;
                    update.execute(params![id, status.as_str(), now_ms, seq as i64]).doing("setting a status")?;
                }
                before.push(found);
            }
        }
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a review")?;
        Ok((before, seq))
    }

    /// Deletes experiences (and their content). Returns, per id, whether it existed, and the
    /// sequence number after the delete.
    pub fn delete(&mut self, ids: &[&str]) -> Result<(Vec<bool>, u64)> {
        let tx = self.conn.transaction().doing("starting a delete")?;
        let mut seq = read_seq(&tx)?;
        let mut existed = Vec::with_capacity(ids.len());
        {
            let mut delete =
                tx.prepare_cached("DELETE FROM experiences WHERE id = ?1").doing("preparing the delete")?;
            let mut tombstone = tx
                .prepare_cached("INSERT OR REPLACE INTO tombstones (id, seq) VALUES (?1, ?2)")
                .doing("preparing the tombstone")?;
            for id in ids {
                let n_deleted = delete.execute([id]).doing("deleting an experience")?;
                if n_deleted > 0 {
                    seq += 1;
                    tombstone.execute(params![id, seq as i64]).doing("writing a tombstone")?;
                }
                existed.push(n_deleted > 0);
            }
        }
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a delete")?;
        Ok((existed, seq))
    }

    /// Experiences by id, in the order asked, skipping ids that do not exist.
    pub fn get_many(&self, ids: &[&str]) -> Result<Vec<Experience>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let sql = format!("SELECT {EXPERIENCE_COLUMNS} FROM experiences e WHERE e.id IN ({placeholders})");
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing a lookup")?;
        let mut found = statement
            .query_map(params_from_iter(ids.iter()), experience_from_row)
            .doing("looking up experiences")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading experiences")?;
        let mut ordered = Vec::with_capacity(found.len());
        for id in ids {
            if let Some(position) = found.iter().position(|experience| experience.id.as_str() == *id) {
                ordered.push(found.swap_remove(position));
            }
        }
        Ok(ordered)
    }

    pub fn get(&self, id: &str) -> Result<Option<Experience>> {
        Ok(self.get_many(&[id])?.pop())
    }

    /// What merged duplicates of `id` brought that it does not hold, oldest first.
    pub fn variants(&self, id: &str) -> Result<Vec<Variant>> {
        let mut statement = self
            .conn
            .prepare_cached(&format!("SELECT {VARIANT_COLUMNS} FROM variants WHERE experience_id = ?1 ORDER BY id"))
            .doing("preparing the variants lookup")?;
        statement
            .query_map([id], |row| variant_from_row(row, 0))
            .doing("reading variants")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading variants")
    }

    pub fn content(&self, id: &str) -> Result<StoredContent> {
        let found = self
            .conn
            .query_row(
                "SELECT c.content, c.content_type FROM experiences e LEFT JOIN contents c ON c.experience_id = e.id WHERE e.id = ?1",
                [id],
                |row| Ok((row.get::<_, Option<String>>(0)?, row.get::<_, Option<String>>(1)?)),
            )
            .optional()
            .doing("reading content")?;
        Ok(match found {
            None => StoredContent::NoSuchExperience,
            Some((None, _)) => StoredContent::NoContent,
            Some((Some(content), content_type)) => StoredContent::Content {
                content,
                content_type: content_type.unwrap_or_else(|| "text/plain".to_owned()),
            },
        })
    }

    /// Experiences newest first, filtered.
    pub fn list(&self, filter: &ListFilter) -> Result<Vec<Experience>> {
        let sql = format!(
            "SELECT {EXPERIENCE_COLUMNS} FROM experiences e \
             WHERE (?1 IS NULL OR e.status = ?1) AND (?2 IS NULL OR e.agent_id = ?2) AND (?3 IS NULL OR e.id < ?3) \
             ORDER BY e.id DESC LIMIT ?4"
        );
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing the list")?;
        statement
            .query_map(
                params![filter.status.map(Status::as_str), filter.agent_id, filter.before_id, filter.limit as i64],
                experience_from_row,
            )
            .doing("listing experiences")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading experiences")
    }

    /// Up to `limit` experiences with their content, oldest first, after `after_id`.
    pub fn export_page(&self, after_id: Option<&str>, limit: usize) -> Result<Vec<ExportRow>> {
        let sql = format!(
            "SELECT {EXPERIENCE_COLUMNS}, (SELECT c.content FROM contents c WHERE c.experience_id = e.id) \
             FROM experiences e WHERE (?1 IS NULL OR e.id > ?1) ORDER BY e.id LIMIT ?2"
        );
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing the export")?;
        let mut rows = statement
            .query_map(params![after_id, limit as i64], |row| {
                Ok(ExportRow { experience: experience_from_row(row)?, content: row.get(18)?, variants: Vec::new() })
            })
            .doing("exporting experiences")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading experiences")?;
        // The page's variants in one range scan: ids are ordered, so the page is a range.
        if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
            let (first, last) = (first.experience.id.to_string(), last.experience.id.to_string());
            let mut statement = self
                .conn
                .prepare_cached(&format!(
                    "SELECT experience_id, {VARIANT_COLUMNS} FROM variants \
                     WHERE experience_id >= ?1 AND experience_id <= ?2 ORDER BY experience_id, id"
                ))
                .doing("preparing the variants export")?;
            let variants = statement
                .query_map([first, last], |row| Ok((row.get::<_, String>(0)?, variant_from_row(row, 1)?)))
                .doing("exporting variants")?;
            let positions: HashMap<String, usize> =
                rows.iter().enumerate().map(|(position, row)| (row.experience.id.to_string(), position)).collect();
            for variant in variants {
                let (owner, variant) = variant.doing("reading variants")?;
                if let Some(&position) = positions.get(&owner) {
                    rows[position].variants.push(variant);
                }
            }
        }
        Ok(rows)
    }

    pub fn counts(&self) -> Result<Counts> {
        let mut counts = Counts::default();
        let mut statement = self
            .conn
            .prepare_cached("SELECT status, count(*) FROM experiences GROUP BY status")
            .doing("preparing the counts")?;
        let rows = statement
            .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
            .doing("counting experiences")?;
        for row in rows {
            let (status, n) = row.doing("counting experiences")?;
            let n = n as u64;
            counts.total += n;
            match Status::parse(&status) {
                Some(Status::Active) => counts.active += n,
                Some(Status::Pending) => counts.pending += n,
                Some(Status::Rejected) => counts.rejected += n,
                None => {}
            }
        }
        Ok(counts)
    }

    /// What changed after `seq`: rows to (re)index and ids to remove.
    pub fn changes_since(&self, seq: u64) -> Result<Changes> {
        let (upserts, deleted_ids, seq) = self.scan_changes(
            &format!("{INDEX_ROW_SELECT} WHERE e.seq > ?1 ORDER BY e.seq"),
            [seq as i64],
            seq,
            index_row_from_row,
        )?;
        Ok(Changes { upserts, deleted_ids, seq })
    }

    /// Calls `each_batch` with every experience, in batches of `batch_size`, for a full
    /// rebuild. Returns the sequence number the rows reflect.
    pub fn for_each_index_row<E: From<Error>>(
        &self,
        batch_size: usize,
        each_batch: impl FnMut(&[IndexRow]) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        self.scan_in_batches(INDEX_ROW_SELECT, [], index_row_from_row, batch_size, each_batch)
    }

    /// In one read: the rows `sql` selects with `params` (the changed rows after `seq`), the
    /// tombstones after `seq`, and the sequence number they lead up to. Derived structures
    /// catch up with this, so rows and tombstones must come from the same snapshot.
    pub(crate) fn scan_changes<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        seq: u64,
        from_row: fn(&Row<'_>) -> rusqlite::Result<Result<T>>,
    ) -> Result<(Vec<T>, Vec<String>, u64)> {
        let tx = self.conn.unchecked_transaction().doing("starting a read")?;
        let current = read_seq(&tx)?;
        let mut changed = Vec::new();
        {
            let mut statement = tx.prepare_cached(sql).doing("preparing the change scan")?;
            let mut rows = statement.query(params).doing("scanning changes")?;
            while let Some(row) = rows.next().doing("scanning changes")? {
                changed.push(from_row(row).doing("scanning changes")??);
            }
        }
        let deleted_ids = {
            let mut statement =
                tx.prepare_cached("SELECT id FROM tombstones WHERE seq > ?1").doing("preparing the tombstone scan")?;
            statement
                .query_map([seq as i64], |row| row.get::<_, String>(0))
                .doing("scanning tombstones")?
                .collect::<rusqlite::Result<Vec<_>>>()
                .doing("scanning tombstones")?
        };
        tx.finish().doing("ending a read")?;
        Ok((changed, deleted_ids, current))
    }

    /// In one read: calls `each_batch` with the rows `sql` selects, `batch_size` at a time, so a
    /// full scan never holds the whole table. Returns the sequence number the rows reflect.
    pub(crate) fn scan_in_batches<T, E: From<Error>>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        from_row: fn(&Row<'_>) -> rusqlite::Result<Result<T>>,
        batch_size: usize,
        mut each_batch: impl FnMut(&[T]) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        let tx = self.conn.unchecked_transaction().doing("starting a read")?;
        let current = read_seq(&tx)?;
        {
            let mut statement = tx.prepare(sql).doing("preparing a full scan")?;
            let mut rows = statement.query(params).doing("scanning experiences")?;
            let mut batch = Vec::with_capacity(batch_size);
            while let Some(row) = rows.next().doing("scanning experiences")? {
                batch.push(from_row(row).doing("scanning experiences")??);
                if batch.len() == batch_size {
                    each_batch(&batch)?;
                    batch.clear();
                }
            }
            if !batch.is_empty() {
                each_batch(&batch)?;
            }
        }
        tx.finish().doing("ending a read")?;
        Ok(current)
    }

    /// Forgets tombstones that every derived structure has applied.
    pub fn prune_tombstones(&mut self, applied_seq: u64) -> Result<usize> {
        self.conn.execute("DELETE FROM tombstones WHERE seq <= ?1", [applied_seq as i64]).doing("pruning tombstones")
    }

    /// Adds to the recall counters of experiences that search returned.
    pub fn add_recalls(&mut self, recalls: &[(String, u64)]) -> Result<()> {
        let tx = self.conn.transaction().doing("starting a counter update")?;
        {
            let mut update = tx
                .prepare_cached("UPDATE experiences SET recall_count = recall_count + ?2 WHERE id = ?1")
                .doing("preparing the counter update")?;
            for (id, n) in recalls {
                update.execute(params![id, *n as i64]).doing("updating counters")?;
            }
        }
        tx.commit().doing("committing counters")
    }

    /// Copies the database to `destination` with SQLite's online backup, consistent even
    /// while writes go on.
    pub fn backup_to(&self, destination: &Path) -> Result<()> {
        self.conn.execute("VACUUM INTO ?1", [destination.to_string_lossy()]).doing("writing a backup").map(|_| ())
    }
}

const INDEX_ROW_SELECT: &str = "SELECT e.id, e.task, e.resource, e.result, \
    (SELECT c.content FROM contents c WHERE c.experience_id = e.id), e.score, e.status, e.agent_id \
    FROM experiences e";

fn index_row_from_row(row: &Row<'_>) -> rusqlite::Result<Result<IndexRow>> {
    let id: String = row.get(0)?;
    let status: String = row.get(6)?;
    let Some(status) = Status::parse(&status) else {
        return Ok(Err(Error::Malformed { id, reason: format!("unknown status {status:?}") }));
    };
    Ok(Ok(IndexRow {
        id,
        task: row.get(1)?,
        resource: row.get(2)?,
        result: row.get(3)?,
        content: row.get(4)?,
        score: row.get::<_, i64>(5)? as u8,
        status,
        agent_id: row.get(7)?,
    }))
}

pub(crate) fn experience_from_row(row: &Row<'_>) -> rusqlite::Result<Experience> {
    let id: String = row.get(0)?;
    let source: String = row.get(10)?;
    let status: String = row.get(11)?;
    let flags: String = row.get(13)?;
    let invalid = |column: usize, what: &str, value: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            column,
            rusqlite::types::Type::Text,
            format!("experience {id}: unknown {what} {value:?}").into(),
        )
    };
    Ok(Experience {
        task: row.get(1)?,
        resource: row.get(2)?,
        result: row.get(3)?,
        score: row.get::<_, i64>(4)? as u8,
        has_content: row.get(5)?,
        content_type: row.get(6)?,
        agent_id: row.get(7)?,
        submitted_by: row.get(8)?,
        session_key: row.get(9)?,
        source: Source::parse(&source).ok_or_else(|| invalid(10, "source", &source))?,
        status: Status::parse(&status).ok_or_else(|| invalid(11, "status", &status))?,
        confidence: row.get(12)?,
        flags: flags.split(',').filter(|flag| !flag.is_empty()).map(str::to_owned).collect(),
        created_at_ms: row.get(14)?,
        updated_at_ms: row.get(15)?,
        merge_count: row.get(16)?,
        recall_count: row.get(17)?,
        id: ExperienceId::from_stored(id),
    })
}

fn content_type_of(gated: &Gated) -> &str {
    gated.experience.content_type.as_deref().unwrap_or("text/plain")
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // FULL fsyncs the WAL on every commit: an acknowledged write survives power loss too.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

/// Writes `items` in the transaction `tx`, bumping `seq` for every change an index must see.
pub(crate) fn write_in(
    tx: &rusqlite::Transaction<'_>,
    seq: &mut u64,
    items: &[WriteItem<'_>],
    now_ms: i64,
) -> Result<Vec<WriteOutcome>> {
    let mut outcomes = Vec::with_capacity(items.len());
    const TARGET_COLUMNS: &str = "e.id, e.score, e.status, c.content, e.task, e.resource, e.result, \
            e.agent_id, e.submitted_by FROM experiences e LEFT JOIN contents c ON c.experience_id = e.id";
    let mut find_duplicate = tx
        .prepare_cached(&format!("SELECT {TARGET_COLUMNS} WHERE e.dedup_key = ?1"))
        .doing("preparing the duplicate lookup")?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO experiences (id, task, resource, result, score, agent_id, submitted_by, session_key, \
                 source, status, confidence, flags, dedup_key, created_at, updated_at, seq) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, ?15)",
        )
        .doing("preparing the insert")?;
    let mut insert_content = tx
        .prepare_cached("INSERT OR REPLACE INTO contents (experience_id, content, content_type) VALUES (?1, ?2, ?3)")
        .doing("preparing the content insert")?;
    let mut merge = tx
        .prepare_cached(
            "UPDATE experiences SET merge_count = merge_count + 1, updated_at = ?2, \
                 score = max(score, ?3), seq = CASE WHEN ?4 THEN ?5 ELSE seq END WHERE id = ?1",
        )
        .doing("preparing the merge")?;
    let mut find_similar =
        tx.prepare_cached(&format!("SELECT {TARGET_COLUMNS} WHERE e.id = ?1")).doing("preparing the similar lookup")?;
    let mut insert_vector = tx
        .prepare_cached("INSERT OR REPLACE INTO vectors (experience_id, model_id, vector) VALUES (?1, ?2, ?3)")
        .doing("preparing the vector insert")?;
    let mut insert_variant = tx
        .prepare_cached(
            "INSERT INTO variants (experience_id, task, resource, result, score, content, content_type, \
                 agent_id, submitted_by, session_key, source, similarity, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        )
        .doing("preparing the variant insert")?;
    let mut find_variant = tx
        .prepare_cached(
            "SELECT 1 FROM variants WHERE experience_id = ?1 AND task = ?2 AND resource = ?3 AND result = ?4 \
                 AND content IS ?5 AND agent_id IS ?6 AND submitted_by IS ?7",
        )
        .doing("preparing the variant lookup")?;
    let merge_target = |row: &Row<'_>| {
        Ok(MergeTarget {
            id: row.get(0)?,
            score: row.get(1)?,
            status: row.get(2)?,
            content: row.get(3)?,
            task: row.get(4)?,
            resource: row.get(5)?,
            result: row.get(6)?,
            agent_id: row.get(7)?,
            submitted_by: row.get(8)?,
        })
    };
    for item in items {
        let gated = item.gated;
        let new = &gated.experience;
        let mut similarity = None;
        let mut kept_apart = None;
        let mut duplicate =
            find_duplicate.query_row([&gated.dedup_key], merge_target).optional().doing("looking up duplicates")?;
        if let (None, Some((similar_id, score))) = (&duplicate, item.similar_to) {
            let target =
                find_similar.query_row([similar_id], merge_target).optional().doing("looking up duplicates")?;
            if let Some(target) = target {
                // Vectors say near-identical; the words decide whether they say the same.
                let stored = [target.task.as_str(), target.resource.as_str(), target.result.as_str()];
                let proposed = [new.task.as_str(), new.resource.as_str(), new.result.as_str()];
                match kb_core::sameness::material_difference(&stored, &proposed) {
                    None => {
                        similarity = Some(score);
                        duplicate = Some(target);
                    }
                    Some(difference) => {
                        kept_apart = Some(KeptApart { similar_to: target.id, reason: difference.to_string() })
                    }
                }
            }
        }
        match duplicate {
            Some(target) => {
                let adds_content = target.content.is_none() && new.content.is_some();
                let derived_change = i64::from(gated.score) > target.score || adds_content;
                if derived_change {
                    *seq += 1;
                }
                merge
                    .execute(params![target.id, now_ms, i64::from(gated.score), derived_change, *seq as i64])
                    .doing("merging a duplicate")?;
                if adds_content {
                    insert_content
                        .execute(params![target.id, new.content, content_type_of(gated)])
                        .doing("storing content")?;
                }
                // Whatever this submission holds that the stored experience does not is
                // kept beside it: other wording, other content, another submitter.
                let brings_something = new.task != target.task
                    || new.resource != target.resource
                    || new.result != target.result
                    || (!adds_content && new.content.is_some() && new.content != target.content)
                    || (new.submitted_by.is_some() && new.submitted_by != target.submitted_by)
                    || (new.agent_id.is_some() && new.agent_id != target.agent_id);
                if brings_something {
                    insert_variant
                        .execute(params![
                            target.id,
                            new.task,
                            new.resource,
                            new.result,
                            i64::from(gated.score),
                            new.content,
                            new.content.as_ref().map(|_| content_type_of(gated)),
                            new.agent_id,
                            new.submitted_by,
                            new.session_key,
                            new.source.unwrap_or(Source::Tool).as_str(),
                            similarity.map(f64::from),
                            now_ms,
                        ])
                        .doing("keeping a variant")?;
                }
                let status = Status::parse(&target.status).ok_or_else(|| Error::Malformed {
                    id: target.id.clone(),
                    reason: format!("unknown status {:?}", target.status),
                })?;
                outcomes.push(WriteOutcome {
                    id: ExperienceId::from_stored(target.id),
                    status,
                    merged: true,
                    similar: similarity.is_some(),
                    variant_kept: brings_something,
                    kept_apart: None,
                });
            }
            None => {
                *seq += 1;
                let id = item.id.cloned().unwrap_or_else(|| ExperienceId::generate(now_ms.max(0) as u64));
                insert
                    .execute(params![
                        id.as_str(),
                        new.task,
                        new.resource,
                        new.result,
                        i64::from(gated.score),
                        new.agent_id,
                        new.submitted_by,
                        new.session_key,
                        new.source.unwrap_or(Source::Tool).as_str(),
                        gated.status.as_str(),
                        new.confidence,
                        gated.flags.join(","),
                        gated.dedup_key,
                        now_ms,
                        *seq as i64,
                    ])
                    .doing("inserting an experience")?;
                if new.content.is_some() {
                    insert_content
                        .execute(params![id.as_str(), new.content, content_type_of(gated)])
                        .doing("storing content")?;
                }
                if let Some(vector) = item.vector {
                    insert_vector
                        .execute(params![id.as_str(), vector.model_id, vector.bytes])
                        .doing("storing a vector")?;
                }
                outcomes.push(WriteOutcome {
                    id,
                    status: gated.status,
                    merged: false,
                    similar: false,
                    variant_kept: false,
                    kept_apart,
                });
            }
        }
        let owner = outcomes.last().map(|outcome| outcome.id.as_str().to_owned()).unwrap_or_default();
        for variant in item.carried {
            let held = find_variant
                .exists(params![
                    owner,
                    variant.task,
                    variant.resource,
                    variant.result,
                    variant.content,
                    variant.agent_id,
                    variant.submitted_by
                ])
                .doing("looking up variants")?;
            if !held {
                insert_variant
                    .execute(params![
                        owner,
                        variant.task,
                        variant.resource,
                        variant.result,
                        i64::from(variant.score),
                        variant.content,
                        variant.content_type,
                        variant.agent_id,
                        variant.submitted_by,
                        variant.session_key,
                        variant.source,
                        variant.similarity,
                        variant.created_at,
                    ])
                    .doing("keeping a carried variant")?;
            }
        }
    }
    Ok(outcomes)
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
