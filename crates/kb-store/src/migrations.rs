//! Append-only schema migrations, tracked with `PRAGMA user_version`.
//!
//! Never edit a migration that has shipped: add a new one. A fixture database of each older
//! version (see the tests) proves the upgrade path.

use rusqlite::{Connection, OptionalExtension};

use crate::error::Context;
use crate::{Error, Result};

/// Migrations in order; `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // Version 1: experiences, their detailed contents, tombstones for deletes, the sequence.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) STRICT;
    INSERT INTO meta (key, value) VALUES ('seq', 0);

    CREATE TABLE experiences (
        id           TEXT PRIMARY KEY,
        task         TEXT NOT NULL,
        resource     TEXT NOT NULL,
        result       TEXT NOT NULL,
        score        INTEGER NOT NULL CHECK (score BETWEEN 1 AND 5),
        agent_id     TEXT,
        submitted_by TEXT,
        session_key  TEXT,
        source       TEXT NOT NULL,
        status       TEXT NOT NULL,
        confidence   REAL,
        flags        TEXT NOT NULL DEFAULT '',
        dedup_key    TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        merge_count  INTEGER NOT NULL DEFAULT 0,
        recall_count INTEGER NOT NULL DEFAULT 0,
        seq          INTEGER NOT NULL
    ) STRICT;
    CREATE UNIQUE INDEX experiences_dedup_key ON experiences (dedup_key);
    CREATE INDEX experiences_seq ON experiences (seq);
    CREATE INDEX experiences_status_created ON experiences (status, created_at);

    CREATE TABLE contents (
        experience_id TEXT PRIMARY KEY REFERENCES experiences (id) ON DELETE CASCADE,
        content       TEXT NOT NULL,
        content_type  TEXT NOT NULL
    ) STRICT;

    CREATE TABLE tombstones (
        id  TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX tombstones_seq ON tombstones (seq);
    "#,
    // Version 2: one embedding per experience, tagged with the model that made it. Vectors are
    // derived data: a vector of another model is simply replaced when the new one is computed.
    r#"
    CREATE TABLE vectors (
        experience_id TEXT PRIMARY KEY REFERENCES experiences (id) ON DELETE CASCADE,
        model_id      TEXT NOT NULL,
        vector        BLOB NOT NULL
    ) STRICT;
    "#,
    // Version 3: what a merged duplicate brought that its experience does not hold (other
    // wording, other content, another submitter), kept so that a merge loses nothing anyone
    // wrote. Deleted with their experience.
    r#"
    CREATE TABLE variants (
        id            INTEGER PRIMARY KEY,
        experience_id TEXT NOT NULL REFERENCES experiences (id) ON DELETE CASCADE,
        task          TEXT NOT NULL,
        resource      TEXT NOT NULL,
        result        TEXT NOT NULL,
        score         INTEGER NOT NULL,
        content       TEXT,
        content_type  TEXT,
        agent_id      TEXT,
        submitted_by  TEXT,
        session_key   TEXT,
        source        TEXT NOT NULL,
        similarity    REAL,
        created_at    INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX variants_experience ON variants (experience_id);
    "#,
    // Version 4: extraction. Conversations queued for an LLM to propose experiences from
    // (`turns` is redacted in strict mode before it is written; emptied once the job is done),
    // the messages of each session already queued or skipped, the tokens spent per day, the
    // queue's counters, and what each extracted proposal came with (its outcome, the turns it
    // cites, the experience it resembles, its duplicate key while it is held for review).
    r#"
    CREATE TABLE extraction_jobs (
        id               INTEGER PRIMARY KEY,
        session_key      TEXT NOT NULL,
        agent_id         TEXT,
        turns            TEXT NOT NULL,
        turn_count       INTEGER NOT NULL,
        privacy          TEXT NOT NULL,
        require_approval INTEGER NOT NULL,
        state            TEXT NOT NULL,
        attempts         INTEGER NOT NULL DEFAULT 0,
        not_before       INTEGER NOT NULL DEFAULT 0,
        created_at       INTEGER NOT NULL,
        finished_at      INTEGER,
        tokens           INTEGER NOT NULL DEFAULT 0,
        proposals        INTEGER NOT NULL DEFAULT 0,
        error            TEXT
    ) STRICT;
    CREATE INDEX extraction_jobs_due ON extraction_jobs (state, not_before, id);

    CREATE TABLE extraction_seen (
        session_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        seen_at     INTEGER NOT NULL,
        PRIMARY KEY (session_key, fingerprint)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX extraction_seen_at ON extraction_seen (seen_at);

    CREATE TABLE extraction_usage (
        day    INTEGER PRIMARY KEY,
        tokens INTEGER NOT NULL,
        calls  INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE extraction_counters (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE proposals (
        experience_id TEXT PRIMARY KEY REFERENCES experiences (id) ON DELETE CASCADE,
        job_id        INTEGER NOT NULL,
        outcome       TEXT NOT NULL,
        evidence      TEXT NOT NULL,
        dedup_key     TEXT NOT NULL,
        similar_id    TEXT,
        similarity    REAL
    ) STRICT;
    CREATE INDEX proposals_dedup_key ON proposals (dedup_key);
    "#,
    // Version 5: the team hub. `hub_state` holds this store's machine id, whether sharing is
    // on, and the hub sequence number pulled up to. The outbox is filled by triggers, in the
    // transaction of every local write, once sharing is on: one row per changed experience
    // (the newest change wins), never for what came from the hub or while a pull is applied.
    // A submit that merges into a teammate's experience queues a confirmation (`confirmation`
    // = 1): this store's own row for it, so the teammates count it too. `hub_origins` maps a
    // teammate's experience (its id at its origin) to the local experience it is, or merged into.
    r#"
    CREATE TABLE hub_state (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) STRICT;

    CREATE TABLE hub_outbox (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        experience_id TEXT NOT NULL UNIQUE,
        confirmation  INTEGER NOT NULL DEFAULT 0,
        refused       TEXT
    ) STRICT;

    CREATE TABLE hub_origins (
        hub_id        TEXT PRIMARY KEY,
        experience_id TEXT NOT NULL,
        merged        INTEGER NOT NULL,
        author        TEXT NOT NULL,
        machine       TEXT NOT NULL,
        hub_seq       INTEGER NOT NULL,
        conflict      TEXT
    ) STRICT;
    CREATE INDEX hub_origins_experience ON hub_origins (experience_id);

    CREATE TRIGGER hub_outbox_insert AFTER INSERT ON experiences
        WHEN NEW.source <> 'hub'
         AND EXISTS (SELECT 1 FROM hub_state WHERE key = 'sharing' AND value = 'on')
         AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
    BEGIN
        INSERT OR REPLACE INTO hub_outbox (experience_id) VALUES (NEW.id);
    END;

    CREATE TRIGGER hub_outbox_update AFTER UPDATE ON experiences
        WHEN NEW.source <> 'hub'
         AND (NEW.task IS NOT OLD.task OR NEW.resource IS NOT OLD.resource OR NEW.result IS NOT OLD.result
              OR NEW.score IS NOT OLD.score OR NEW.status IS NOT OLD.status OR NEW.flags IS NOT OLD.flags
              OR NEW.merge_count IS NOT OLD.merge_count OR NEW.agent_id IS NOT OLD.agent_id
              OR NEW.submitted_by IS NOT OLD.submitted_by)
         AND EXISTS (SELECT 1 FROM hub_state WHERE key = 'sharing' AND value = 'on')
         AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
    BEGIN
        INSERT OR REPLACE INTO hub_outbox (experience_id) VALUES (NEW.id);
    END;

    CREATE TRIGGER hub_outbox_confirmation AFTER UPDATE OF merge_count ON experiences
        WHEN NEW.source = 'hub' AND NEW.merge_count > OLD.merge_count
         AND EXISTS (SELECT 1 FROM hub_state WHERE key = 'sharing' AND value = 'on')
         AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
    BEGIN
        INSERT OR REPLACE INTO hub_outbox (experience_id, confirmation) VALUES (NEW.id, 1);
    END;

    CREATE TRIGGER hub_outbox_delete AFTER DELETE ON experiences
        WHEN OLD.source <> 'hub'
         AND EXISTS (SELECT 1 FROM hub_state WHERE key = 'sharing' AND value = 'on')
         AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
    BEGIN
        INSERT OR REPLACE INTO hub_outbox (experience_id) VALUES (OLD.id);
    END;

    CREATE TRIGGER hub_outbox_content AFTER INSERT ON contents
        WHEN EXISTS (SELECT 1 FROM hub_state WHERE key = 'sharing' AND value = 'on')
         AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
         AND EXISTS (SELECT 1 FROM experiences e WHERE e.id = NEW.experience_id AND e.source <> 'hub')
    BEGIN
        INSERT OR REPLACE INTO hub_outbox (experience_id) VALUES (NEW.experience_id);
    END;
    "#,
    // Version 6: a hub no teammate can steer. A teammate's experience is known by its author
    // and its id together (each member writes in a namespace of their own on the hub). What
    // could not be taken from the hub is logged (`hub_skipped`, the newest 1,000); what a member
    // shared over their daily limit is held back (`hub_held`) and fetched again when the day's
    // allowance allows (`hub_quota`); a teammate's experience deleted here is hidden here for
    // good (`hub_hidden`), whatever its origin does later, until `kbctl hub unhide`.
    r#"
    CREATE TABLE hub_origins_v6 (
        author        TEXT NOT NULL,
        hub_id        TEXT NOT NULL,
        experience_id TEXT NOT NULL,
        merged        INTEGER NOT NULL,
        machine       TEXT NOT NULL,
        hub_seq       INTEGER NOT NULL,
        conflict      TEXT,
        PRIMARY KEY (author, hub_id)
    ) STRICT;
    INSERT INTO hub_origins_v6 (author, hub_id, experience_id, merged, machine, hub_seq, conflict)
        SELECT author, hub_id, experience_id, merged, machine, hub_seq, conflict FROM hub_origins;
    DROP TABLE hub_origins;
    ALTER TABLE hub_origins_v6 RENAME TO hub_origins;
    CREATE INDEX hub_origins_experience ON hub_origins (experience_id);

    CREATE TABLE hub_skipped (
        id      INTEGER PRIMARY KEY AUTOINCREMENT,
        author  TEXT,
        hub_id  TEXT,
        hub_seq INTEGER NOT NULL,
        reason  TEXT NOT NULL,
        at      INTEGER NOT NULL
    ) STRICT;

    CREATE TABLE hub_held (
        author  TEXT NOT NULL,
        hub_id  TEXT NOT NULL,
        hub_seq INTEGER NOT NULL,
        why     TEXT NOT NULL,
        PRIMARY KEY (author, hub_id)
    ) STRICT;

    CREATE TABLE hub_quota (
        author TEXT NOT NULL,
        day    INTEGER NOT NULL,
        rows   INTEGER NOT NULL,
        bytes  INTEGER NOT NULL,
        PRIMARY KEY (author, day)
    ) STRICT;

    CREATE TABLE hub_hidden (
        author TEXT NOT NULL,
        hub_id TEXT NOT NULL,
        task   TEXT NOT NULL,
        at     INTEGER NOT NULL,
        PRIMARY KEY (author, hub_id)
    ) STRICT;

    CREATE TRIGGER hub_hide_on_delete AFTER DELETE ON experiences
        WHEN OLD.source = 'hub' AND NOT EXISTS (SELECT 1 FROM hub_state WHERE key = 'applying')
    BEGIN
        INSERT OR REPLACE INTO hub_hidden (author, hub_id, task, at)
            SELECT author, hub_id, OLD.task, CAST(strftime('%s', 'now') AS INTEGER) * 1000
            FROM hub_origins WHERE experience_id = OLD.id;
    END;
    "#,
    // Version 7: keys that find a submit's possible near-duplicates by lookup
    // (`kb_core::sameness::keys_of`), among active experiences. Filled in by
    // `fill_same_keys` when the database is opened (a key is made by Rust, not SQL).
    r#"
    ALTER TABLE experiences ADD COLUMN same_key TEXT;
    ALTER TABLE experiences ADD COLUMN wording_key TEXT;
    CREATE INDEX experiences_same_key ON experiences (same_key) WHERE status = 'active';
    CREATE INDEX experiences_wording_key ON experiences (wording_key) WHERE status = 'active';
    "#,
    // Version 8: the same keys among rejected experiences, so that an agent's submit of a
    // rejected text in other punctuation or case is refused as the text itself is
    // (`OnRejected::Refuse`).
    r#"
    CREATE INDEX experiences_rejected_same_key ON experiences (same_key) WHERE status = 'rejected';
    "#,
    // Version 9: the gate's reasons, in words, for the flags it set (a JSON array of strings;
    // empty when it set none, or for experiences written before this version), so that the
    // review queue shows why an experience was held as the gate saw it when it was written.
    r#"
    ALTER TABLE experiences ADD COLUMN reasons TEXT NOT NULL DEFAULT '';
    "#,
    // Version 10: per experience and teammate, how many of their copies were not kept as
    // variants (`variants.rs`: a teammate's are bounded), so that `kb.get` can say so; and the
    // variants a teammate's flood stored before, bounded and counted the same way.
    r#"
    CREATE TABLE variants_not_kept (
        experience_id TEXT NOT NULL REFERENCES experiences (id) ON DELETE CASCADE,
        author        TEXT NOT NULL,
        copies        INTEGER NOT NULL,
        PRIMARY KEY (experience_id, author)
    ) STRICT;
    CREATE INDEX variants_experience_source ON variants (experience_id, source, submitted_by, id);
    -- What a flood had stored before this version is bounded as later copies will be (the
    -- bounds of `variants.rs` when this was written: 20 variants, 262,144 bytes), and counted.
    CREATE TEMP TABLE variants_over_bounds AS
        SELECT id, experience_id, coalesce(submitted_by, '') AS author FROM (
            SELECT id, experience_id, submitted_by,
                row_number() OVER newest AS n,
                sum(length(CAST(task AS BLOB)) + length(CAST(resource AS BLOB)) + length(CAST(result AS BLOB))
                    + coalesce(length(CAST(content AS BLOB)), 0)) OVER newest AS running
            FROM variants WHERE source = 'hub'
            WINDOW newest AS (PARTITION BY experience_id, submitted_by ORDER BY id DESC ROWS UNBOUNDED PRECEDING)
        ) WHERE n > 1 AND (n > 20 OR running > 262144);
    INSERT INTO variants_not_kept (experience_id, author, copies)
        SELECT experience_id, author, count(*) FROM variants_over_bounds GROUP BY experience_id, author;
    DELETE FROM variants WHERE id IN (SELECT id FROM variants_over_bounds);
    DROP TABLE variants_over_bounds;
    "#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to `SCHEMA_VERSION`, one transaction per migration.
pub(crate) fn migrate(conn: &mut Connection, path: &std::path::Path) -> Result<()> {
    let found: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|source| Error::Migration { version: 0, source })?;
    if found > SCHEMA_VERSION {
        return Err(Error::SchemaTooNew { path: path.to_owned(), found, known: SCHEMA_VERSION });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let version = index as i64 + 1;
        let tx = conn.transaction().map_err(|source| Error::Migration { version, source })?;
        tx.execute_batch(sql).map_err(|source| Error::Migration { version, source })?;
        tx.pragma_update(None, "user_version", version).map_err(|source| Error::Migration { version, source })?;
        tx.commit().map_err(|source| Error::Migration { version, source })?;
        tracing::info!(version, "migrated the database schema");
    }
    Ok(())
}

/// Makes the near-duplicate keys of every experience that has none, or keys of another version
/// of the rule (`kb_core::sameness::KEY_VERSION`): after migration 7, and after an upgrade that
/// changed the rule. Once done, `meta.same_keys` holds the version, and later opens skip the
/// scan (every write of this build makes its keys; 55 ms at each open of 100,000 experiences
/// otherwise). One transaction; returns how many experiences got keys (3.6 s for 100,000 once).
pub(crate) fn fill_same_keys(conn: &mut Connection) -> Result<usize> {
    let version = i64::from(kb_core::sameness::KEY_VERSION);
    let done: Option<i64> = conn
        .query_row("SELECT value FROM meta WHERE key = 'same_keys'", [], |row| row.get(0))
        .optional()
        .doing("reading the near-duplicate keys' version")?;
    if done == Some(version) {
        return Ok(0);
    }
    let prefix = kb_core::sameness::KEY_PREFIX;
    let stale = "same_key IS NULL OR wording_key IS NULL OR substr(same_key, 1, length(?1)) IS NOT ?1 \
                 OR substr(wording_key, 1, length(?1)) IS NOT ?1";
    let tx = conn.transaction().doing("starting to fill near-duplicate keys")?;
    let rows: Vec<(String, String, String, String)> = {
        let mut select = tx
            .prepare(&format!("SELECT id, task, resource, result FROM experiences WHERE {stale}"))
            .doing("reading experiences without near-duplicate keys")?;
        select
            .query_map([prefix], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
            .doing("reading experiences without near-duplicate keys")?
            .collect::<rusqlite::Result<_>>()
            .doing("reading experiences without near-duplicate keys")?
    };
    {
        let mut update = tx
            .prepare("UPDATE experiences SET same_key = ?2, wording_key = ?3 WHERE id = ?1")
            .doing("preparing the key update")?;
        for (id, task, resource, result) in &rows {
            let keys = kb_core::sameness::keys_of(&[task.as_str(), resource.as_str(), result.as_str()]);
            update.execute(rusqlite::params![id, keys.key, keys.wording]).doing("storing near-duplicate keys")?;
        }
    }
    tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('same_keys', ?1)", [version])
        .doing("recording the near-duplicate keys' version")?;
    tx.commit().doing("committing near-duplicate keys")?;
    if !rows.is_empty() {
        tracing::info!(experiences = rows.len(), "made near-duplicate keys");
    }
    Ok(rows.len())
}
