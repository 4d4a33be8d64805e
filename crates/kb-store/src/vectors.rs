//! The vectors table: one embedding per experience, tagged with the model that made it.
//!
//! Vectors are derived data, like the BM25 index: writing one does not bump the sequence
//! number, and a vector of another model is just a missing vector to the current one.

use kb_core::Status;
use kb_core::sameness::SameKeys;
use rusqlite::{Row, params, params_from_iter};

use crate::error::Context;
use crate::{Error, Result, Store};

/// What the in-memory vector index needs of one experience.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRow {
    pub id: String,
    pub score: u8,
    pub status: Status,
    pub agent_id: Option<String>,
    /// The stored vector, when the model asked for made it.
    pub vector: Option<Vec<u8>>,
}

/// Changes after a sequence number, as the vector index sees them.
#[derive(Debug, Default)]
pub struct VectorChanges {
    pub rows: Vec<VectorRow>,
    pub deleted_ids: Vec<String>,
    /// The store's sequence number the changes lead up to.
    pub seq: u64,
}

/// The text of an experience that is embedded.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingSource {
    pub id: String,
    pub task: String,
    pub resource: String,
    pub result: String,
}

const VECTOR_ROW_SELECT: &str = "SELECT e.id, e.score, e.status, e.agent_id, v.vector FROM experiences e \
    LEFT JOIN vectors v ON v.experience_id = e.id AND v.model_id = ?1";

impl Store {
    /// What changed after `seq`, with the vectors `model_id` made.
    pub fn vector_changes_since(&self, seq: u64, model_id: &str) -> Result<VectorChanges> {
        let (rows, deleted_ids, seq) = self.scan_changes(
            &format!("{VECTOR_ROW_SELECT} WHERE e.seq > ?2 ORDER BY e.seq"),
            params![model_id, seq as i64],
            seq,
            vector_row,
        )?;
        Ok(VectorChanges { rows, deleted_ids, seq })
    }

    /// Calls `each_batch` with every active experience and its vector from `model_id`, in
    /// batches, to fill the vector index. Returns the sequence number the rows reflect.
    pub fn for_each_vector_row<E: From<Error>>(
        &self,
        model_id: &str,
        batch_size: usize,
        each_batch: impl FnMut(&[VectorRow]) -> std::result::Result<(), E>,
    ) -> std::result::Result<u64, E> {
        self.scan_in_batches(
            &format!("{VECTOR_ROW_SELECT} WHERE e.status = 'active'"),
            [model_id],
            vector_row,
            batch_size,
            each_batch,
        )
    }

    /// The texts to embed of those `ids` that are still active, in the order asked.
    pub fn embedding_sources(&self, ids: &[&str]) -> Result<Vec<EmbeddingSource>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = embedding_sources_sql(ids.len());
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing the text lookup")?;
        let mut found = statement
            .query_map(params_from_iter(ids.iter()), embedding_source)
            .doing("reading texts to embed")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading texts to embed")?;
        let order: std::collections::HashMap<&str, usize> =
            ids.iter().enumerate().map(|(position, id)| (*id, position)).collect();
        found.sort_by_key(|source| order.get(source.id.as_str()).copied().unwrap_or(usize::MAX));
        Ok(found)
    }

    /// The texts to embed of at most `n` active experiences spread evenly over the table (by
    /// rowid: over the time they were written): a sample of what the store holds, read by
    /// `n` lookups whatever the store's size.
    pub fn sample_embedding_sources(&self, n: usize) -> Result<Vec<EmbeddingSource>> {
        let (first, last): (Option<i64>, Option<i64>) = self
            .conn
            .query_row("SELECT min(rowid), max(rowid) FROM experiences", [], |row| Ok((row.get(0)?, row.get(1)?)))
            .doing("reading the table's extent")?;
        let (Some(first), Some(last)) = (first, last) else { return Ok(Vec::new()) };
        if n == 0 {
            return Ok(Vec::new());
        }
        let span = (last - first + 1) as u64;
        let mut rowids: Vec<i64> = (0..n as u64).map(|step| first + (step * span / (n as u64).max(1)) as i64).collect();
        rowids.dedup();
        let placeholders = vec!["?"; rowids.len()].join(",");
        let sql = format!(
            "SELECT id, task, resource, result FROM experiences WHERE rowid IN ({placeholders}) AND +status = 'active'"
        );
        let mut statement = self.conn.prepare(&sql).doing("preparing the sample")?;
        let found = statement
            .query_map(params_from_iter(rowids.iter()), embedding_source)
            .doing("reading a sample of texts")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading a sample of texts")?;
        Ok(found)
    }

    /// The active experiences a new one with `keys` may be a near-duplicate of: those with no
    /// material difference from it (the same key), then those with the same wording (which it
    /// is kept apart from, and told so), at most `limit` of each (`kb_core::sameness`).
    pub fn same_key_sources(&self, keys: &SameKeys, limit: usize) -> Result<Vec<EmbeddingSource>> {
        let mut found = Vec::new();
        for (column, key) in [("same_key", &keys.key), ("wording_key", &keys.wording)] {
            let mut statement = self.conn.prepare_cached(&same_key_sql(column)).doing("preparing the key lookup")?;
            let rows = statement
                .query_map(params![key, limit as i64], embedding_source)
                .doing("looking up near-duplicates by key")?;
            for row in rows {
                let row = row.doing("looking up near-duplicates by key")?;
                if !found.iter().any(|known: &EmbeddingSource| known.id == row.id) {
                    found.push(row);
                }
            }
        }
        Ok(found)
    }

    /// Stores vectors made by `model_id`, replacing any earlier vector of those experiences.
    /// Experiences deleted since their text was read are skipped. Returns the vectors stored.
    pub fn put_vectors(&mut self, model_id: &str, vectors: &[(&str, &[u8])]) -> Result<usize> {
        let tx = self.conn.transaction().doing("starting a vector write")?;
        let mut stored = 0;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO vectors (experience_id, model_id, vector) \
                     SELECT id, ?2, ?3 FROM experiences WHERE id = ?1",
                )
                .doing("preparing the vector insert")?;
            for (id, bytes) in vectors {
                stored += insert.execute(params![id, model_id, bytes]).doing("storing a vector")?;
            }
        }
        tx.commit().doing("committing vectors")?;
        Ok(stored)
    }

    /// Stored vectors made by `model_id`, and by any model.
    pub fn vector_counts(&self, model_id: &str) -> Result<(u64, u64)> {
        self.conn
            .query_row("SELECT count(*) FILTER (WHERE model_id = ?1), count(*) FROM vectors", [model_id], |row| {
                Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
            })
            .doing("counting vectors")
    }
}

/// An [`EmbeddingSource`] from a row of `id, task, resource, result`.
fn embedding_source(row: &Row<'_>) -> rusqlite::Result<EmbeddingSource> {
    Ok(EmbeddingSource { id: row.get(0)?, task: row.get(1)?, resource: row.get(2)?, result: row.get(3)? })
}

fn vector_row(row: &Row<'_>) -> rusqlite::Result<Result<VectorRow>> {
    let id: String = row.get(0)?;
    let status: String = row.get(2)?;
    let Some(status) = Status::parse(&status) else {
        return Ok(Err(Error::Malformed { id, reason: format!("unknown status {status:?}") }));
    };
    Ok(Ok(VectorRow { id, score: row.get::<_, i64>(1)? as u8, status, agent_id: row.get(3)?, vector: row.get(4)? }))
}

/// The query behind [`Store::embedding_sources`] for `n_ids` ids. `+status` keeps SQLite from
/// answering it through the `(status, created_at)` index, which it chose over the primary key
/// without statistics: every active row was read for five ids (0.45 ms of CPU per submit with
/// a few thousand experiences under 50 writers, issue 25; linear in the store).
fn embedding_sources_sql(n_ids: usize) -> String {
    let placeholders = vec!["?"; n_ids].join(",");
    format!("SELECT id, task, resource, result FROM experiences WHERE id IN ({placeholders}) AND +status = 'active'")
}

/// The query behind [`Store::same_key_sources`] for one key `column`: answered from its
/// partial index of active experiences.
fn same_key_sql(column: &str) -> String {
    format!("SELECT id, task, resource, result FROM experiences WHERE {column} = ?1 AND status = 'active' LIMIT ?2")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A submit reads its near-duplicate candidates' texts by id: the primary key must find them,
    /// whatever else the query asks (a scan of the active rows per submit grows with the store).
    #[test]
    fn texts_to_embed_are_found_by_their_ids_not_by_scanning_the_active_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store.db")).unwrap();
        for n_ids in [1, 5] {
            let sql = format!("EXPLAIN QUERY PLAN {}", embedding_sources_sql(n_ids));
            let ids: Vec<String> = (0..n_ids).map(|n| n.to_string()).collect();
            let mut statement = store.conn.prepare(&sql).unwrap();
            let plan: Vec<String> = statement
                .query_map(params_from_iter(ids.iter()), |row| row.get(3))
                .unwrap()
                .map(|detail| detail.unwrap())
                .collect();
            let plan = plan.join("; ");
            assert!(plan.contains("sqlite_autoindex_experiences_1 (id=?)"), "{n_ids} ids: {plan}");
            assert!(!plan.contains("status"), "{n_ids} ids: {plan}");
        }
    }

    /// A submit's possible near-duplicates are looked up in the keys' partial indexes, never by
    /// scanning the experiences.
    #[test]
    fn near_duplicates_are_looked_up_in_the_key_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store.db")).unwrap();
        for (column, index) in [("same_key", "experiences_same_key"), ("wording_key", "experiences_wording_key")] {
            let sql = format!("EXPLAIN QUERY PLAN {}", same_key_sql(column));
            let plan: Vec<String> = store
                .conn
                .prepare(&sql)
                .unwrap()
                .query_map(params!["s1:00", 5], |row| row.get(3))
                .unwrap()
                .map(|detail| detail.unwrap())
                .collect();
            let plan = plan.join("; ");
            assert!(plan.contains(&format!("USING INDEX {index} ({column}=?)")), "{plan}");
        }
    }
}
