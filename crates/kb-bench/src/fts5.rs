//! The baseline: SQLite FTS5 with the `unicode61` tokenizer, what OpenClaw's built-in memory
//! uses, queried the way OpenClaw builds its FTS queries. Runs in this process.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use rusqlite::Connection;

use crate::daemon::directory_bytes;

/// An FTS5 table of experiences in a SQLite file of its own (WAL, `synchronous=FULL`, the same
/// durability as KnowHub's store), removed on drop.
pub struct Fts5Store {
    connection: Connection,
    dir: tempfile::TempDir,
}

/// One FTS5 match: the rowid (the position the item was inserted at, from 1) and its texts.
///
/// The texts are fetched although only the load benchmark's hit count uses the hits: KnowHub
/// answers with the texts too, so FTS5 pays for reading them, as OpenClaw does.
#[derive(Debug, Clone)]
#[expect(dead_code, reason = "the texts are read to match what KnowHub returns, not used")]
pub struct Fts5Hit {
    pub rowid: i64,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub rank: f64,
}

impl Fts5Store {
    pub fn create() -> anyhow::Result<Fts5Store> {
        let dir = tempfile::Builder::new().prefix("kb-bench-fts5-").tempdir().context("cannot create a temp dir")?;
        let path: PathBuf = dir.path().join("fts5.db");
        let connection = Connection::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        connection
            .pragma_update(None, "journal_mode", "WAL")
            .and_then(|()| connection.pragma_update(None, "synchronous", "FULL"))
            .context("cannot set up the FTS5 database")?;
        connection
            .execute_batch("CREATE VIRTUAL TABLE t USING fts5(task, resource, result, tokenize='unicode61');")
            .context("cannot create the FTS5 table (is FTS5 compiled in?)")?;
        Ok(Fts5Store { connection, dir })
    }

    /// Inserts `items` (task, resource, result) in transactions of `batch_size`, in order, so
    /// item i gets rowid i + 1. Returns the wall time.
    pub fn insert<'a>(
        &mut self,
        items: impl ExactSizeIterator<Item = (&'a str, &'a str, &'a str)>,
        batch_size: usize,
    ) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let mut items = items.peekable();
        while items.peek().is_some() {
            let transaction = self.connection.transaction().context("cannot start an FTS5 transaction")?;
            {
                let mut insert = transaction
                    .prepare_cached("INSERT INTO t (task, resource, result) VALUES (?1, ?2, ?3)")
                    .context("cannot prepare the FTS5 insert")?;
                for (task, resource, result) in items.by_ref().take(batch_size) {
                    insert.execute((task, resource, result)).context("cannot insert into FTS5")?;
                }
            }
            transaction.commit().context("cannot commit to FTS5")?;
        }
        Ok(started.elapsed())
    }

    /// The best `limit` matches of free text `raw`, best first, as OpenClaw searches: the text
    /// becomes quoted words OR-ed together, ranked by `bm25()`. No words, no hits.
    pub fn search(&self, raw: &str, limit: usize) -> anyhow::Result<Vec<Fts5Hit>> {
        let Some(fts_query) = build_fts_query(raw) else { return Ok(Vec::new()) };
        let mut statement = self
            .connection
            .prepare_cached(
                "SELECT rowid, task, resource, result, bm25(t) AS rank FROM t WHERE t MATCH ?1 ORDER BY rank LIMIT ?2",
            )
            .context("cannot prepare the FTS5 search")?;
        let hits = statement
            .query_map((fts_query.as_str(), limit as i64), |row| {
                Ok(Fts5Hit {
                    rowid: row.get(0)?,
                    task: row.get(1)?,
                    resource: row.get(2)?,
                    result: row.get(3)?,
                    rank: row.get(4)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .with_context(|| format!("FTS5 search for {fts_query:?} failed"))?;
        Ok(hits)
    }

    /// Bytes on disk: the database and its WAL.
    pub fn disk_bytes(&self) -> u64 {
        directory_bytes(self.dir.path())
    }
}

/// Turns free text into a safe FTS5 query the way OpenClaw's memory does (`buildFtsQuery` in
/// its memory core): every run of letters, digits and `_` becomes a double-quoted term, and the
/// terms are OR-ed so BM25 ranks by the rare ones. Quoting makes operators and punctuation
/// plain text; `unicode61` then splits each quoted term as it split the documents.
pub fn build_fts_query(raw: &str) -> Option<String> {
    let terms: Vec<&str> = raw
        .split(|c: char| !(c.is_alphabetic() || c.is_numeric() || c == '_'))
        .filter(|term| !term.is_empty())
        .collect();
    if terms.is_empty() {
        return None;
    }
    // The terms hold no quotes (they are letters, digits and `_` only), so quoting is safe.
    Some(terms.iter().map(|term| format!("\"{term}\"")).collect::<Vec<_>>().join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_quoted_words_or_ed() {
        assert_eq!(build_fts_query("vitest --run").as_deref(), Some(r#""vitest" OR "run""#));
        assert_eq!(build_fts_query("tsconfig.json paths").as_deref(), Some(r#""tsconfig" OR "json" OR "paths""#));
        assert_eq!(build_fts_query("配置 数据库连接池").as_deref(), Some(r#""配置" OR "数据库连接池""#));
        assert_eq!(build_fts_query(r#"a" OR NEAR(b) *"#).as_deref(), Some(r#""a" OR "OR" OR "NEAR" OR "b""#));
        assert_eq!(build_fts_query("snake_case"), Some(r#""snake_case""#.to_owned()));
        assert_eq!(build_fts_query(" -- !? "), None);
    }

    #[test]
    fn hostile_queries_do_not_break_fts5() {
        let mut store = Fts5Store::create().unwrap();
        let items = [("Run tests once", "vitest --run", "no watch mode"), ("配置 数据库", "psql", "连接池 调大")];
        store.insert(items.iter().copied(), 10).unwrap();
        assert_eq!(store.search("vitest --run", 5).unwrap()[0].rowid, 1);
        assert_eq!(store.search("配置", 5).unwrap()[0].rowid, 2);
        for hostile in [r#"""#, "NEAR(", "a AND", "*", "col:x", "(", "-x"] {
            store.search(hostile, 5).unwrap();
        }
    }
}
