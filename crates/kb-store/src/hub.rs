//! The store's side of the team hub: this store's machine id, the outbox of changes to share
//! (filled by triggers in the transaction of each local write, see migration 5), the hub
//! sequence number pulled up to, and applying a pulled batch in one transaction.

use std::collections::HashSet;

use kb_core::{Experience, ExperienceId, Gated};
use rusqlite::{OptionalExtension, params};

use crate::error::Context;
use crate::read::{EXPERIENCE_COLUMNS, HUB_AUTHOR, experience_from_row};
use crate::store::{read_seq, write_seq};
use crate::write::{WriteItem, write_in};
use crate::{Result, Store};

/// One outbox entry: an experience whose latest state is to be shared, or withdrawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub outbox_id: i64,
    pub experience_id: String,
    /// A write here merged into this teammate's experience (what the user wrote or approved never
    /// does, `write.rs`): this store shares its own row for it (a confirmation), so that the team
    /// counts it too, once the user reviewed it (`knowhubd::hub::push`).
    pub confirmation: bool,
    /// The experience as it is now, with its content; `None` when it was deleted.
    pub current: Option<(Experience, Option<String>)>,
}

/// A change pulled from the hub, gated by this daemon (its own redaction and quarantine).
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'a> {
    /// The experience's id at its origin.
    pub hub_id: &'a str,
    pub hub_seq: i64,
    pub author: &'a str,
    pub machine: &'a str,
    /// `None`: withdrawn at its origin (deleted, or no longer shared).
    pub gated: Option<&'a Gated>,
}

/// What applying a pulled batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    pub inserted: usize,
    pub updated: usize,
    /// Merged into an experience already held (the same experience from someone else).
    pub merged: usize,
    pub deleted: usize,
    /// Same id as an experience of this store's own: that one kept as it is, the teammate's
    /// stored apart under a new id with the conflict recorded (and counted as inserted or merged).
    pub conflicts: usize,
    /// Deleted here before: stays hidden here, whatever its origin did.
    pub hidden: usize,
}

/// A row of the hub that could not be taken, and why (shown by `status`).
#[derive(Debug, Clone, PartialEq)]
pub struct SkipRecord {
    pub author: Option<String>,
    pub hub_id: Option<String>,
    pub hub_seq: i64,
    pub reason: String,
    /// When it was skipped (Unix ms); ignored when recording.
    pub at_ms: i64,
}

/// A teammate's change held back here (over its author's daily limit, or unhidden), to be
/// fetched from the hub again.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub author: String,
    pub hub_id: String,
    pub hub_seq: i64,
    pub why: String,
}

/// A teammate's experience deleted here, hidden for good until unhidden.
#[derive(Debug, Clone, PartialEq)]
pub struct Hidden {
    pub author: String,
    pub hub_id: String,
    pub task: String,
    pub at_ms: i64,
}

/// One pulled page, applied in one transaction with what it moves the cursor to.
#[derive(Debug, Default)]
pub struct PullBatch<'a> {
    pub items: Vec<Incoming<'a>>,
    pub skipped: Vec<SkipRecord>,
    /// Held back now.
    pub held: Vec<Held>,
    /// Held before and fetched again now (applied, or skipped, in `items` and `skipped`).
    pub released: Vec<(String, String)>,
    /// Per author: rows and bytes this batch takes from today's allowance.
    pub charged: Vec<(String, u64, u64)>,
    /// The hub change number this batch reaches; the cursor never moves back.
    pub up_to: Option<i64>,
    pub now_ms: i64,
}

/// The UTC day a time falls on, as the per-member allowance counts days.
pub fn hub_day(now_ms: i64) -> i64 {
    now_ms.div_euclid(86_400_000)
}

/// How many skipped rows are kept for `status`.
const SKIPPED_KEPT: i64 = 1_000;

/// Where a teammate's experience came from, as `kbctl show` prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub hub_id: String,
    pub merged: bool,
    pub author: String,
    pub machine: String,
    pub hub_seq: i64,
    pub conflict: Option<String>,
}

/// The outbox's size: waiting to be pushed, and refused by the hub (kept until they change).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutboxDepth {
    pub waiting: u64,
    pub refused: u64,
}

impl Store {
    /// This store's id among the team's daemons, made on first use and kept with the data.
    pub fn hub_machine(&mut self) -> Result<String> {
        if let Some(machine) = self.hub_value("machine")? {
            return Ok(machine);
        }
        let machine = ExperienceId::generate(unix_ms()).to_string();
        self.conn
            .execute("INSERT OR IGNORE INTO hub_state (key, value) VALUES ('machine', ?1)", [&machine])
            .doing("recording the machine id")?;
        Ok(self.hub_value("machine")?.unwrap_or(machine))
    }

    /// Turns sharing on. The first time, every experience of this store is queued, so that
    /// what was learned before joining the team is shared too (what is not shareable is
    /// skipped when pushed). Returns how many were queued.
    pub fn start_sharing(&mut self) -> Result<usize> {
        let tx = self.conn.transaction().doing("starting to share")?;
        let on: Option<String> = tx
            .query_row("SELECT value FROM hub_state WHERE key = 'sharing'", [], |row| row.get(0))
            .optional()
            .doing("reading the sharing state")?;
        if on.as_deref() == Some("on") {
            return Ok(0);
        }
        tx.execute("INSERT OR REPLACE INTO hub_state (key, value) VALUES ('sharing', 'on')", [])
            .doing("turning sharing on")?;
        let queued = tx
            .execute(
                "INSERT OR IGNORE INTO hub_outbox (experience_id) \
                 SELECT id FROM experiences WHERE source <> 'hub' ORDER BY seq",
                [],
            )
            .doing("queueing the experiences to share")?;
        tx.commit().doing("committing the start of sharing")?;
        Ok(queued)
    }

    /// Up to `limit` outbox entries, oldest first, without the refused ones.
    pub fn hub_outbox(&self, limit: usize) -> Result<Vec<Outgoing>> {
        let tx = self.conn.unchecked_transaction().doing("starting a read")?;
        let entries: Vec<(i64, String, bool)> = {
            let mut statement = tx
                .prepare_cached(
                    "SELECT id, experience_id, confirmation FROM hub_outbox WHERE refused IS NULL ORDER BY id LIMIT ?1",
                )
                .doing("preparing the outbox read")?;
            statement
                .query_map([limit as i64], |row| Ok((row.get(0)?, row.get(1)?, row.get::<_, i64>(2)? != 0)))
                .doing("reading the outbox")?
                .collect::<rusqlite::Result<_>>()
                .doing("reading the outbox")?
        };
        let mut out = Vec::with_capacity(entries.len());
        {
            let mut lookup = tx
                .prepare_cached(&format!(
                    "SELECT {EXPERIENCE_COLUMNS}, (SELECT c.content FROM contents c WHERE c.experience_id = e.id) \
                     FROM experiences e WHERE e.id = ?1"
                ))
                .doing("preparing the outbox lookup")?;
            for (outbox_id, experience_id, confirmation) in entries {
                let current = lookup
                    .query_row([&experience_id], |row| {
                        Ok((experience_from_row(row)?, row.get::<_, Option<String>>(18)?))
                    })
                    .optional()
                    .doing("reading an experience to share")?;
                out.push(Outgoing { outbox_id, experience_id, confirmation, current });
            }
        }
        tx.finish().doing("ending a read")?;
        Ok(out)
    }

    /// Removes pushed entries. An entry queued again meanwhile has a new id and stays.
    pub fn hub_pushed(&mut self, outbox_ids: &[i64]) -> Result<()> {
        let tx = self.conn.transaction().doing("starting an outbox update")?;
        {
            let mut delete =
                tx.prepare_cached("DELETE FROM hub_outbox WHERE id = ?1").doing("preparing the outbox update")?;
            for id in outbox_ids {
                delete.execute([id]).doing("removing a pushed change")?;
            }
        }
        tx.commit().doing("committing an outbox update")
    }

    /// Parks an entry the hub refused, with the reason; it is queued again when the
    /// experience changes.
    pub fn hub_refused(&mut self, outbox_id: i64, reason: &str) -> Result<()> {
        self.conn
            .execute("UPDATE hub_outbox SET refused = ?2 WHERE id = ?1", params![outbox_id, reason])
            .doing("recording a refused change")
            .map(|_| ())
    }

    pub fn hub_outbox_depth(&self) -> Result<OutboxDepth> {
        self.conn
            .query_row(
                "SELECT count(*) FILTER (WHERE refused IS NULL), count(*) FILTER (WHERE refused IS NOT NULL) FROM hub_outbox",
                [],
                |row| Ok(OutboxDepth { waiting: row.get::<_, i64>(0)? as u64, refused: row.get::<_, i64>(1)? as u64 }),
            )
            .doing("measuring the outbox")
    }

    /// Active experiences held here that came from teammates.
    pub fn team_experiences(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT count(*) FROM experiences WHERE source = 'hub' AND status = 'active'", [], |row| {
                row.get::<_, i64>(0)
            })
            .doing("counting the team's experiences")
            .map(|n| n as u64)
    }

    /// The hub sequence number this store has applied every change up to.
    pub fn hub_pulled_seq(&self) -> Result<i64> {
        Ok(self.hub_value("pulled_seq")?.and_then(|value| value.parse().ok()).unwrap_or(0))
    }

    /// The author on the hub of a teammate's experience: the origin whose text it holds, or else
    /// the first; `None` for this store's own, or when the hub's record of it is gone.
    pub fn hub_author(&self, experience_id: &str) -> Result<Option<String>> {
        let sql = format!("SELECT {HUB_AUTHOR} FROM experiences e WHERE e.id = ?1");
        let mut statement = self.conn.prepare_cached(&sql).doing("preparing the author lookup")?;
        let author = statement.query_row([experience_id], |row| row.get(0)).optional().doing("reading an author")?;
        Ok(author.flatten())
    }

    /// Where an experience's teammates' copies came from (none for an experience of this
    /// store's own that nobody else shared).
    pub fn hub_origins(&self, experience_id: &str) -> Result<Vec<Origin>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT hub_id, merged, author, machine, hub_seq, conflict FROM hub_origins \
                 WHERE experience_id = ?1 ORDER BY hub_seq, author",
            )
            .doing("preparing the origin lookup")?;
        statement
            .query_map([experience_id], |row| {
                Ok(Origin {
                    hub_id: row.get(0)?,
                    merged: row.get::<_, i64>(1)? != 0,
                    author: row.get(2)?,
                    machine: row.get(3)?,
                    hub_seq: row.get(4)?,
                    conflict: row.get(5)?,
                })
            })
            .doing("reading origins")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading origins")
    }

    /// Applies pulled changes, in hub order, and records `up_to` as pulled, in one
    /// transaction (see [`Store::apply_pull`]).
    pub fn apply_pulled(
        &mut self,
        items: &[Incoming<'_>],
        up_to: i64,
        now_ms: i64,
    ) -> Result<(Applied, u64, HashSet<String>)> {
        let batch = PullBatch { items: items.to_vec(), up_to: Some(up_to), now_ms, ..PullBatch::default() };
        self.apply_pull(&batch)
    }

    /// Applies a pulled batch in one transaction: its changes in hub order, the rows skipped
    /// and held back, the allowance it used, and the cursor it reaches. A crash leaves either
    /// all of it or none, and the next pull starts where this one did. Nothing applied here
    /// enters the outbox. Returns what happened, the store's sequence number after, and the ids
    /// of experiences created.
    pub fn apply_pull(&mut self, batch: &PullBatch<'_>) -> Result<(Applied, u64, HashSet<String>)> {
        let tx = self.conn.transaction().doing("starting a pull")?;
        tx.execute("INSERT OR REPLACE INTO hub_state (key, value) VALUES ('applying', '1')", [])
            .doing("marking a pull")?;
        let mut seq = read_seq(&tx)?;
        let mut applied = Applied::default();
        let mut created = HashSet::new();
        for (author, hub_id) in &batch.released {
            tx.execute("DELETE FROM hub_held WHERE author = ?1 AND hub_id = ?2", params![author, hub_id])
                .doing("releasing a held change")?;
        }
        for item in &batch.items {
            apply_one(&tx, &mut seq, item, batch.now_ms, &mut applied, &mut created)?;
        }
        for skipped in &batch.skipped {
            tx.execute(
                "INSERT INTO hub_skipped (author, hub_id, hub_seq, reason, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![skipped.author, skipped.hub_id, skipped.hub_seq, skipped.reason, batch.now_ms],
            )
            .doing("recording a skipped change")?;
        }
        if !batch.skipped.is_empty() {
            tx.execute(
                "INSERT INTO hub_state (key, value) VALUES ('skipped_total', ?1) \
                 ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + ?1 AS TEXT)",
                [batch.skipped.len() as i64],
            )
            .doing("counting skipped changes")?;
            tx.execute("DELETE FROM hub_skipped WHERE id <= (SELECT max(id) FROM hub_skipped) - ?1", [SKIPPED_KEPT])
                .doing("trimming the skipped log")?;
        }
        for held in &batch.held {
            tx.execute(
                "INSERT OR REPLACE INTO hub_held (author, hub_id, hub_seq, why) VALUES (?1, ?2, ?3, ?4)",
                params![held.author, held.hub_id, held.hub_seq, held.why],
            )
            .doing("holding a change back")?;
        }
        let day = hub_day(batch.now_ms);
        for (author, rows, bytes) in &batch.charged {
            tx.execute(
                "INSERT INTO hub_quota (author, day, rows, bytes) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (author, day) DO UPDATE SET rows = rows + ?3, bytes = bytes + ?4",
                params![author, day, *rows as i64, *bytes as i64],
            )
            .doing("counting a member's allowance")?;
        }
        tx.execute("DELETE FROM hub_quota WHERE day < ?1", [day - 1]).doing("forgetting old allowances")?;
        tx.execute("DELETE FROM hub_state WHERE key = 'applying'", []).doing("ending a pull")?;
        if let Some(up_to) = batch.up_to {
            tx.execute(
                "INSERT INTO hub_state (key, value) VALUES ('pulled_seq', ?1) ON CONFLICT (key) DO UPDATE \
                 SET value = CAST(max(CAST(value AS INTEGER), CAST(?1 AS INTEGER)) AS TEXT)",
                [up_to.to_string()],
            )
            .doing("recording the pulled sequence number")?;
        }
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a pull")?;
        Ok((applied, seq, created))
    }

    /// Rows and bytes `author`'s changes took from today's allowance here.
    pub fn hub_quota_used(&self, author: &str, now_ms: i64) -> Result<(u64, u64)> {
        self.conn
            .query_row(
                "SELECT rows, bytes FROM hub_quota WHERE author = ?1 AND day = ?2",
                params![author, hub_day(now_ms)],
                |row| Ok((row.get::<_, i64>(0)?.max(0) as u64, row.get::<_, i64>(1)?.max(0) as u64)),
            )
            .optional()
            .doing("reading a member's allowance")
            .map(Option::unwrap_or_default)
    }

    /// Up to `limit` held-back changes, oldest first.
    pub fn hub_held(&self, limit: usize) -> Result<Vec<Held>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT author, hub_id, hub_seq, why FROM hub_held ORDER BY hub_seq LIMIT ?1")
            .doing("preparing the held read")?;
        statement
            .query_map([limit as i64], |row| {
                Ok(Held { author: row.get(0)?, hub_id: row.get(1)?, hub_seq: row.get(2)?, why: row.get(3)? })
            })
            .doing("reading held changes")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading held changes")
    }

    /// Held-back changes per author.
    pub fn hub_held_counts(&self) -> Result<Vec<(String, u64)>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT author, count(*) FROM hub_held GROUP BY author ORDER BY author")
            .doing("preparing the held count")?;
        statement
            .query_map([], |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as u64)))
            .doing("counting held changes")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("counting held changes")
    }

    /// Changes skipped since the store was made, and the newest `limit` of them.
    pub fn hub_skipped(&self, limit: usize) -> Result<(u64, Vec<SkipRecord>)> {
        let total = self.hub_value("skipped_total")?.and_then(|value| value.parse().ok()).unwrap_or(0);
        let mut statement = self
            .conn
            .prepare_cached("SELECT author, hub_id, hub_seq, reason, at FROM hub_skipped ORDER BY id DESC LIMIT ?1")
            .doing("preparing the skipped read")?;
        let recent = statement
            .query_map([limit as i64], |row| {
                Ok(SkipRecord {
                    author: row.get(0)?,
                    hub_id: row.get(1)?,
                    hub_seq: row.get(2)?,
                    reason: row.get(3)?,
                    at_ms: row.get(4)?,
                })
            })
            .doing("reading skipped changes")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading skipped changes")?;
        Ok((total, recent))
    }

    /// The teammates' experiences hidden here.
    pub fn hub_hidden(&self) -> Result<Vec<Hidden>> {
        let mut statement = self
            .conn
            .prepare_cached("SELECT author, hub_id, task, at FROM hub_hidden ORDER BY at, author, hub_id")
            .doing("preparing the hidden read")?;
        statement
            .query_map([], |row| {
                Ok(Hidden { author: row.get(0)?, hub_id: row.get(1)?, task: row.get(2)?, at_ms: row.get(3)? })
            })
            .doing("reading hidden experiences")?
            .collect::<rusqlite::Result<Vec<_>>>()
            .doing("reading hidden experiences")
    }

    /// Shows a hidden teammate's experience again: it is fetched from the hub at the next
    /// sync. Whether it was hidden.
    pub fn hub_unhide(&mut self, author: &str, hub_id: &str) -> Result<bool> {
        let tx = self.conn.transaction().doing("starting an unhide")?;
        let removed = tx
            .execute("DELETE FROM hub_hidden WHERE author = ?1 AND hub_id = ?2", params![author, hub_id])
            .doing("unhiding")?;
        if removed > 0 {
            tx.execute("DELETE FROM hub_origins WHERE author = ?1 AND hub_id = ?2", params![author, hub_id])
                .doing("forgetting a hidden origin")?;
            tx.execute(
                "INSERT OR REPLACE INTO hub_held (author, hub_id, hub_seq, why) VALUES (?1, ?2, 0, 'unhidden')",
                params![author, hub_id],
            )
            .doing("queueing an unhidden change")?;
        }
        tx.commit().doing("committing an unhide")?;
        Ok(removed > 0)
    }

    fn hub_value(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM hub_state WHERE key = ?1", [key], |row| row.get(0))
            .optional()
            .doing("reading the hub state")
    }
}

/// The local experience a teammate's experience lives in.
struct Known {
    experience_id: String,
    merged: bool,
}

fn apply_one(
    tx: &rusqlite::Transaction<'_>,
    seq: &mut u64,
    item: &Incoming<'_>,
    now_ms: i64,
    applied: &mut Applied,
    created: &mut HashSet<String>,
) -> Result<()> {
    let hidden = tx
        .query_row("SELECT 1 FROM hub_hidden WHERE author = ?1 AND hub_id = ?2", [item.author, item.hub_id], |_| Ok(()))
        .optional()
        .doing("looking up a hidden experience")?;
    if hidden.is_some() {
        applied.hidden += 1;
        return Ok(());
    }
    let known: Option<Known> = tx
        .query_row(
            "SELECT experience_id, merged FROM hub_origins WHERE author = ?1 AND hub_id = ?2",
            [item.author, item.hub_id],
            |row| Ok(Known { experience_id: row.get(0)?, merged: row.get::<_, i64>(1)? != 0 }),
        )
        .optional()
        .doing("looking up an origin")?;
    let local_exists = |id: &str| -> Result<bool> {
        tx.query_row("SELECT 1 FROM experiences WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .doing("looking up an experience")
            .map(|found| found.is_some())
    };
    // A teammate's change follows its origin only to a teammate's experience, never to one of
    // this store's own: an origin naming one (an id conflict recorded before conflicting rows
    // were stored apart) is treated as new here.
    let is_teammates = |id: &str| -> Result<bool> {
        tx.query_row("SELECT 1 FROM experiences WHERE id = ?1 AND source = 'hub'", [id], |_| Ok(()))
            .optional()
            .doing("looking up an experience")
            .map(|found| found.is_some())
    };
    let Some(gated) = item.gated else {
        // Withdrawn at its origin.
        let Some(known) = known else { return Ok(()) };
        tx.execute("DELETE FROM hub_origins WHERE author = ?1 AND hub_id = ?2", [item.author, item.hub_id])
            .doing("forgetting an origin")?;
        if known.merged {
            // It only counted towards another experience: that one stays, counted once less.
            tx.execute(
                "UPDATE experiences SET merge_count = max(merge_count - 1, 0) WHERE id = ?1",
                [&known.experience_id],
            )
            .doing("uncounting a merged copy")?;
            applied.deleted += 1;
            return Ok(());
        }
        if !is_teammates(&known.experience_id)? {
            // An origin that named one of this store's own (an id conflict recorded before
            // conflicting rows were stored apart): forgotten, and the user's experience stays
            // as it is, with the copies merged into it.
            applied.deleted += 1;
            return Ok(());
        }
        // The experience holds the withdrawn author's text, content and score, and whatever the
        // user gave it (a review): it goes. Another teammate's copy merged into it does not take
        // it over as it is, or the withdrawn author's words would stay under their name (and
        // reach agents if the user trusts them, with a review given to other words; N2): each
        // is fetched from the hub again (`hub_held`, at the end of this round), and comes back
        // in its own words, gated here and unreviewed, as any change of theirs would.
        let heirs: Vec<(String, String, i64)> = {
            let mut statement = tx
                .prepare_cached(
                    "SELECT author, hub_id, hub_seq FROM hub_origins WHERE experience_id = ?1 AND merged = 1",
                )
                .doing("preparing the copies lookup")?;
            statement
                .query_map([&known.experience_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .doing("looking up other copies")?
                .collect::<rusqlite::Result<_>>()
                .doing("looking up other copies")?
        };
        for (heir_author, heir, hub_seq) in &heirs {
            tx.execute("DELETE FROM hub_origins WHERE author = ?1 AND hub_id = ?2", [heir_author, heir])
                .doing("forgetting a copy")?;
            tx.execute(
                "INSERT OR REPLACE INTO hub_held (author, hub_id, hub_seq, why) VALUES (?1, ?2, ?3, ?4)",
                params![
                    heir_author,
                    heir,
                    hub_seq,
                    format!(
                        "the experience it was a copy of was withdrawn by {}: fetched again in its own words",
                        item.author
                    )
                ],
            )
            .doing("queueing a copy to fetch again")?;
        }
        rescue_users_own(tx, seq, &known.experience_id, now_ms, created)?;
        let deleted = tx
            .execute("DELETE FROM experiences WHERE id = ?1 AND source = 'hub'", [&known.experience_id])
            .doing("deleting a withdrawn experience")?;
        if deleted > 0 {
            *seq += 1;
            tx.execute(
                "INSERT OR REPLACE INTO tombstones (id, seq) VALUES (?1, ?2)",
                params![known.experience_id, *seq as i64],
            )
            .doing("writing a tombstone")?;
        }
        applied.deleted += 1;
        return Ok(());
    };
    let record_origin = |experience_id: &str, merged: bool, conflict: Option<&str>| -> Result<()> {
        tx.execute(
            "INSERT OR REPLACE INTO hub_origins (hub_id, experience_id, merged, author, machine, hub_seq, conflict) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![item.hub_id, experience_id, merged as i64, item.author, item.machine, item.hub_seq, conflict],
        )
        .doing("recording an origin")
        .map(|_| ())
    };
    match known {
        Some(known) if known.merged => {
            // Counted towards an experience already held; its wording lives there as a variant.
            record_origin(&known.experience_id, true, None)?;
            applied.merged += 1;
            return Ok(());
        }
        Some(known) if is_teammates(&known.experience_id)? => {
            let new = &gated.experience;
            *seq += 1;
            let changed = tx.execute(
                "UPDATE experiences SET task = ?2, resource = ?3, result = ?4, score = ?5, agent_id = ?6, \
                     submitted_by = ?7, status = CASE WHEN status = 'rejected' THEN status ELSE ?8 END, flags = ?9, \
                     dedup_key = ?10, updated_at = ?11, seq = ?12, same_key = ?13, wording_key = ?14, reasons = ?15 \
                 WHERE id = ?1 AND source = 'hub'",
                params![
                    known.experience_id,
                    new.task,
                    new.resource,
                    new.result,
                    i64::from(gated.score),
                    new.agent_id,
                    new.submitted_by,
                    gated.status.as_str(),
                    gated.flags.join(","),
                    gated.dedup_key,
                    now_ms,
                    *seq as i64,
                    gated.same.key,
                    gated.same.wording,
                    crate::write::reasons_text(gated),
                ],
            );
            match changed {
                Ok(_) => {
                    match &new.content {
                        Some(content) => tx.execute(
                            "INSERT OR REPLACE INTO contents (experience_id, content, content_type) VALUES (?1, ?2, ?3)",
                            params![known.experience_id, content, new.content_type.as_deref().unwrap_or("text/plain")],
                        ),
                        None => tx.execute("DELETE FROM contents WHERE experience_id = ?1", [&known.experience_id]),
                    }
                    .doing("updating content")?;
                    // The text changed: its embedding is made again.
                    tx.execute("DELETE FROM vectors WHERE experience_id = ?1", [&known.experience_id])
                        .doing("dropping a stale vector")?;
                    record_origin(&known.experience_id, false, None)?;
                    applied.updated += 1;
                    return Ok(());
                }
                Err(rusqlite::Error::SqliteFailure(error, _))
                    if error.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    // The edit made it the same as another experience held: it merges there.
                    rescue_users_own(tx, seq, &known.experience_id, now_ms, created)?;
                    tx.execute("DELETE FROM experiences WHERE id = ?1 AND source = 'hub'", [&known.experience_id])
                        .doing("replacing an edited experience")?;
                    tx.execute(
                        "INSERT OR REPLACE INTO tombstones (id, seq) VALUES (?1, ?2)",
                        params![known.experience_id, *seq as i64],
                    )
                    .doing("writing a tombstone")?;
                }
                Err(error) => return Err(error).doing("updating a pulled experience"),
            }
        }
        _ => {}
    }
    // New here. The same id held as this store's own is a conflict (the same data directory
    // copied to two machines, or a teammate using an id of the user's): the local one stays as
    // it is, the teammate's is stored apart under a new id (its later changes follow it there,
    // never to the user's), and the conflict shows in `kbctl show` of it.
    let own: Option<String> = tx
        .query_row("SELECT source FROM experiences WHERE id = ?1", [item.hub_id], |row| row.get(0))
        .optional()
        .doing("looking up an experience")?;
    let conflict = own.as_deref().is_some_and(|source| source != "hub").then(|| {
        applied.conflicts += 1;
        format!(
            "shared from machine {} by {} (hub change {}) under the id of one of this store's own experiences, \
             {}, which was kept; stored here under a new id",
            item.machine, item.author, item.hub_seq, item.hub_id
        )
    });
    // A teammate's experience keeps its id here when it is one this store can hold and no
    // experience here has it yet (two members may use one id, each in their own namespace); a
    // confirmation's id (`<id>.<machine>`), or anything malformed, gets a new one.
    let id = match ExperienceId::parse(item.hub_id).filter(|id| id.as_str() == item.hub_id) {
        Some(id) if !local_exists(id.as_str())? => Some(id),
        _ => None,
    };
    let write = WriteItem { id: id.as_ref(), ..WriteItem::plain(gated) };
    let outcome = write_in(tx, seq, &[write], now_ms)?.pop().expect("one outcome per item");
    record_origin(outcome.id.as_str(), outcome.merged, conflict.as_deref())?;
    if outcome.merged {
        applied.merged += 1;
    } else {
        created.insert(outcome.id.to_string());
        applied.inserted += 1;
    }
    Ok(())
}

/// Before round 26, the user's own submit merged into a teammate's experience the user had
/// reviewed (N12f); what it brought lives there as a variant of the user's source. A withdrawal of
/// that experience would delete it: each such variant is written again, through the gate (strict
/// by default, as a push would), as the user's own experience, kept apart from the one leaving.
fn rescue_users_own(
    tx: &rusqlite::Transaction<'_>,
    seq: &mut u64,
    experience_id: &str,
    now_ms: i64,
    created: &mut HashSet<String>,
) -> Result<()> {
    let owns: Vec<kb_core::NewExperience> = {
        let mut statement = tx
            .prepare_cached(
                "SELECT task, resource, result, score, content, content_type, agent_id, submitted_by, session_key, \
                 source FROM variants WHERE experience_id = ?1 AND source IN ('tool', 'cli', 'import') ORDER BY id",
            )
            .doing("preparing the user's variants lookup")?;
        statement
            .query_map([experience_id], |row| {
                Ok(kb_core::NewExperience {
                    task: row.get(0)?,
                    resource: row.get(1)?,
                    result: row.get(2)?,
                    score: Some(row.get(3)?),
                    content: row.get(4)?,
                    content_type: row.get(5)?,
                    agent_id: row.get(6)?,
                    submitted_by: row.get(7)?,
                    session_key: row.get(8)?,
                    source: kb_core::Source::parse(&row.get::<_, String>(9)?),
                    confidence: None,
                })
            })
            .doing("reading the user's variants")?
            .collect::<rusqlite::Result<_>>()
            .doing("reading the user's variants")?
    };
    for own in owns {
        // What the gate refuses now (a limit changed) stays a variant, and goes with the rest.
        let Ok(gated) = kb_core::gate(own, &kb_core::GatePolicy::default()) else { continue };
        let outcome = write_in(tx, seq, &[WriteItem::plain(&gated)], now_ms)?.pop().expect("one outcome per item");
        if !outcome.merged {
            created.insert(outcome.id.to_string());
        }
    }
    Ok(())
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as u64)
        .unwrap_or(0)
}
