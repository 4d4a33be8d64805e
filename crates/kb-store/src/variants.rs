//! How many of a teammate's copies of one experience are kept as its variants: identical ones
//! once, and per author at most [`TEAMMATE_VARIANTS_PER_AUTHOR`] and about
//! [`TEAMMATE_VARIANT_BYTES_PER_AUTHOR`] of text, the newest; the copies not kept are counted per
//! author (`variants_not_kept`), so `kb.get` and `kbctl show` can say so.
//!
//! Architecture Invariant: only a teammate's copies (source `hub`) are bounded: a teammate
//! pushed 2,000 copies of one of the user's experiences, each with 40 KB of other content, and
//! each became a variant (80 MB). What the user wrote (their agents, `kbctl`, imports) and what
//! extraction proposed stays, every variant of it: the user's own writing is never dropped.

use rusqlite::{OptionalExtension as _, Transaction, params};

use crate::Result;
use crate::error::Context as _;

pub use kb_core::experience::{TEAMMATE_VARIANT_BYTES_PER_AUTHOR, TEAMMATE_VARIANTS_PER_AUTHOR};

/// A variant about to be kept: the text and who it is from.
pub(crate) struct NewVariant<'a> {
    pub(crate) experience_id: &'a str,
    pub(crate) task: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) result: &'a str,
    pub(crate) score: i64,
    pub(crate) content: Option<&'a str>,
    pub(crate) agent_id: Option<&'a str>,
    pub(crate) submitted_by: Option<&'a str>,
}

/// Whether a teammate's variant word for word the same as `variant` (text, content, score,
/// agent and author) is kept already: it is then counted by the merge, and not stored again.
pub(crate) fn teammate_holds_identical(tx: &Transaction<'_>, variant: &NewVariant<'_>) -> Result<bool> {
    tx.prepare_cached(
        "SELECT 1 FROM variants WHERE experience_id = ?1 AND source = 'hub' AND task = ?2 AND resource = ?3 \
         AND result = ?4 AND score = ?5 AND content IS ?6 AND agent_id IS ?7 AND submitted_by IS ?8 LIMIT 1",
    )
    .doing("preparing the identical variant lookup")?
    .query_row(
        params![
            variant.experience_id,
            variant.task,
            variant.resource,
            variant.result,
            variant.score,
            variant.content,
            variant.agent_id,
            variant.submitted_by
        ],
        |_| Ok(()),
    )
    .optional()
    .doing("looking up identical variants")
    .map(|found| found.is_some())
}

/// Drops the oldest of `author`'s variants of `experience_id` beyond the bounds, and counts
/// them; returns how many were dropped.
pub(crate) fn bound_teammate_variants(tx: &Transaction<'_>, experience_id: &str, author: Option<&str>) -> Result<u64> {
    let newest_first: Vec<(i64, u64)> = tx
        .prepare_cached(
            "SELECT id, length(CAST(task AS BLOB)) + length(CAST(resource AS BLOB)) + length(CAST(result AS BLOB)) \
             + coalesce(length(CAST(content AS BLOB)), 0) FROM variants \
             WHERE experience_id = ?1 AND source = 'hub' AND submitted_by IS ?2 ORDER BY id DESC",
        )
        .doing("preparing the teammate's variants lookup")?
        .query_map(params![experience_id, author], |row| Ok((row.get(0)?, row.get::<_, i64>(1)?.max(0) as u64)))
        .doing("reading the teammate's variants")?
        .collect::<rusqlite::Result<_>>()
        .doing("reading the teammate's variants")?;
    let mut bytes = 0u64;
    let mut dropped = 0u64;
    let mut delete = tx.prepare_cached("DELETE FROM variants WHERE id = ?1").doing("preparing a variant's removal")?;
    for (kept, (id, size)) in newest_first.into_iter().enumerate() {
        bytes = bytes.saturating_add(size);
        if kept == 0 || (kept < TEAMMATE_VARIANTS_PER_AUTHOR && bytes <= TEAMMATE_VARIANT_BYTES_PER_AUTHOR) {
            continue;
        }
        delete.execute([id]).doing("dropping a teammate's variant")?;
        dropped += 1;
    }
    if dropped > 0 {
        tx.prepare_cached(
            "INSERT INTO variants_not_kept (experience_id, author, copies) VALUES (?1, ?2, ?3) \
             ON CONFLICT (experience_id, author) DO UPDATE SET copies = copies + excluded.copies",
        )
        .doing("preparing the count of variants not kept")?
        .execute(params![experience_id, author.unwrap_or(""), dropped as i64])
        .doing("counting variants not kept")?;
    }
    Ok(dropped)
}

/// Per author, how many of a teammate's copies of `experience_id` were not kept as variants,
/// most first.
pub(crate) fn not_kept(conn: &rusqlite::Connection, experience_id: &str) -> Result<Vec<(String, u64)>> {
    conn.prepare_cached(
        "SELECT author, copies FROM variants_not_kept WHERE experience_id = ?1 ORDER BY copies DESC, author",
    )
    .doing("preparing the lookup of variants not kept")?
    .query_map([experience_id], |row| Ok((row.get(0)?, row.get::<_, i64>(1)?.max(0) as u64)))
    .doing("reading variants not kept")?
    .collect::<rusqlite::Result<_>>()
    .doing("reading variants not kept")
}
