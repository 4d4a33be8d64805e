//! Reads of the experiences: lookups by id, content, variants, lists, export pages and counts,
//! and the scans that catch a derived structure up (`changes_since`) or rebuild it
//! (`for_each_index_row`), each in one snapshot with the sequence number it reflects.

use std::collections::HashMap;

use kb_core::{Experience, ExperienceId, Source, Status};
use rusqlite::{OptionalExtension, Row, params, params_from_iter};

use crate::error::Context;
use crate::store::read_seq;
use crate::{Error, Result, Store};

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

/// The author on the hub of the experience `e` when it is a teammate's, as one SQL expression
/// (so a read of many experiences brings their authors along): the origin whose text it holds
/// (not merged into it), or else the first (by hub order); NULL for this store's own.
pub(crate) const HUB_AUTHOR: &str = "CASE WHEN e.source = 'hub' THEN \
    (SELECT o.author FROM hub_origins o WHERE o.experience_id = e.id ORDER BY o.merged != 0, o.hub_seq, o.author LIMIT 1) \
    END";

/// How many columns [`EXPERIENCE_COLUMNS`] holds: the index of a column read after them.
const EXPERIENCE_COLUMN_COUNT: usize = 18;

impl Store {
    /// Experiences by id, in the order asked, skipping ids that do not exist.
    pub fn get_many(&self, ids: &[&str]) -> Result<Vec<Experience>> {
        let found = self.read_in_order(ids, EXPERIENCE_COLUMNS, |row| Ok((experience_from_row(row)?, ())))?;
        Ok(found.into_iter().map(|(experience, ())| experience).collect())
    }

    /// Experiences by id as [`Store::get_many`] reads them, each with its author on the hub when
    /// it is a teammate's (see [`Store::hub_author`]), read in the same query: a search shows
    /// where each hit came from without a lookup per hit.
    pub fn get_many_with_authors(&self, ids: &[&str]) -> Result<Vec<(Experience, Option<String>)>> {
        let columns = format!("{EXPERIENCE_COLUMNS}, {HUB_AUTHOR}");
        self.read_in_order(ids, &columns, |row| Ok((experience_from_row(row)?, row.get(EXPERIENCE_COLUMN_COUNT)?)))
    }

    /// `columns` of the experiences `ids` (`e`), made into values by `from_row`, in the order
    /// asked, skipping ids that do not exist.
    fn read_in_order<T>(
        &self,
        ids: &[&str],
        columns: &str,
        from_row: impl FnMut(&Row<'_>) -> rusqlite::Result<(Experience, T)>,
    ) -> Result<Vec<(Experience, T)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let sql = format!("SELECT {columns} FROM experiences e WHERE e.id IN ({placeholders})");
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing a lookup")?;
        let mut found = statement
            .query_map(params_from_iter(ids.iter()), from_row)
            .doing("looking up experiences")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading experiences")?;
        let mut ordered = Vec::with_capacity(found.len());
        for id in ids {
            if let Some(position) = found.iter().position(|(experience, _)| experience.id.as_str() == *id) {
                ordered.push(found.swap_remove(position));
            }
        }
        Ok(ordered)
    }

    /// The gate's reasons, in words, for the flags of each of `ids` that has any stored (see
    /// migration 9; experiences written before it have none).
    pub fn held_reasons(&self, ids: &[&str]) -> Result<HashMap<String, Vec<String>>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let mut statement = self
            .conn
            .prepare(&format!("SELECT id, reasons FROM experiences WHERE id IN ({placeholders}) AND reasons != ''"))
            .doing("preparing the reasons lookup")?;
        let rows = statement
            .query_map(params_from_iter(ids.iter()), |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))
            .doing("reading the reasons")?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, reasons) = row.doing("reading the reasons")?;
            let reasons: Vec<String> = serde_json::from_str(&reasons)
                .map_err(|error| Error::Malformed { id: id.clone(), reason: format!("unreadable reasons: {error}") })?;
            out.insert(id, reasons);
        }
        Ok(out)
    }

    pub fn get(&self, id: &str) -> Result<Option<Experience>> {
        Ok(self.get_many(&[id])?.pop())
    }

    /// What merged duplicates of `id` brought that it does not hold, oldest first.
    /// The newest variants of `id`, at most `limit` of them and about `max_bytes` of text (at
    /// least one), oldest first, and how many it has in all: a teammate can merge thousands of
    /// copies into one experience, and a reader shows what fits (`kb.get`; `kb.export` has all).
    pub fn newest_variants(&self, id: &str, limit: usize, max_bytes: usize) -> Result<(Vec<Variant>, usize)> {
        let total: i64 = self
            .conn
            .query_row("SELECT count(*) FROM variants WHERE experience_id = ?1", [id], |row| row.get(0))
            .doing("counting variants")?;
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "SELECT {VARIANT_COLUMNS} FROM variants WHERE experience_id = ?1 ORDER BY id DESC LIMIT ?2"
            ))
            .doing("preparing the variants lookup")?;
        let mut rows = statement.query(params![id, limit as i64]).doing("reading variants")?;
        let (mut newest, mut bytes) = (Vec::new(), 0usize);
        while let Some(row) = rows.next().doing("reading variants")? {
            let variant = variant_from_row(row, 0).doing("reading variants")?;
            bytes += variant.task.len()
                + variant.resource.len()
                + variant.result.len()
                + variant.content.as_ref().map_or(0, String::len);
            if bytes > max_bytes && !newest.is_empty() {
                break;
            }
            newest.push(variant);
        }
        newest.reverse();
        Ok((newest, total as usize))
    }

    /// Per teammate, how many of their copies of `id` were not kept as variants (past the
    /// bounds of `variants.rs`), most first.
    pub fn variants_not_kept(&self, id: &str) -> Result<Vec<(String, u64)>> {
        crate::variants::not_kept(&self.conn, id)
    }

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

    /// Up to `limit` active experiences that did not come from this user's own agents (a
    /// teammate's, an extracted one) and that the user has not reviewed, newest first: what
    /// agents do not see until the user approves it or trusts its author.
    pub fn unreviewed(&self, limit: usize) -> Result<Vec<Experience>> {
        let sql = format!(
            "SELECT {EXPERIENCE_COLUMNS} FROM experiences e \
             WHERE e.status = 'active' AND e.source IN ('hub', 'extraction') \
               AND (',' || e.flags || ',') NOT LIKE '%,{reviewed},%' \
             ORDER BY e.id DESC LIMIT ?1",
            reviewed = kb_core::experience::REVIEWED_FLAG
        );
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing the unreviewed list")?;
        statement
            .query_map(params![limit as i64], experience_from_row)
            .doing("listing unreviewed experiences")?
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
