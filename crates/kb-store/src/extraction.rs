//! The extraction queue and the review queue's proposals: jobs (a conversation waiting for an
//! LLM), the messages each session already had extracted, the tokens spent per day, counters,
//! and the metadata of extracted proposals. A job's result (its proposals, its state, its tokens)
//! is written in one transaction, so a job is done exactly once whatever kills the daemon.

use std::collections::{BTreeMap, HashMap};

use kb_core::{ExperienceId, Status};
use rusqlite::{OptionalExtension, params, params_from_iter};

use crate::error::Context;
use crate::store::{read_seq, write_seq};
use crate::write::{WriteItem, WriteOutcome, write_in};
use crate::{Result, Store};

/// A conversation to queue.
#[derive(Debug, Clone)]
pub struct NewJob<'a> {
    pub session_key: &'a str,
    pub agent_id: Option<&'a str>,
    /// The turns as JSON (redacted already in strict mode).
    pub turns_json: &'a str,
    pub turn_count: usize,
    /// The fingerprints of the messages the job covers: marked seen with it.
    pub fingerprints: &'a [String],
    /// `strict` or `relaxed`: how the proposals are gated.
    pub privacy: &'a str,
    pub require_approval: bool,
}

/// What `enqueue_extraction` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued as job `id`; `dropped` older jobs were dropped to keep the queue bounded.
    Queued { id: i64, dropped: usize },
    /// Some of the messages were queued meanwhile by another event of the session: nothing done.
    AlreadySeen,
}

/// A queued job, as the worker takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: i64,
    pub session_key: String,
    pub agent_id: Option<String>,
    pub turns_json: String,
    pub turn_count: usize,
    pub privacy: String,
    pub require_approval: bool,
    /// Attempts started before this one.
    pub attempts: u32,
}

/// What a proposal is stored with, beside its experience.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalMeta {
    pub outcome: String,
    /// The turns it cites, as JSON (`[{"turn": 3, "role": "tool", "excerpt": "…"}]`).
    pub evidence_json: String,
    /// Its duplicate key as an active experience (while held, it is stored under a key of its
    /// own, so that it neither merges nor blocks a submit of the same text).
    pub dedup_key: String,
    /// The stored experience it resembles, with their similarity (1 for the same text).
    pub similar: Option<(String, f64)>,
}

/// One job as `kbctl extraction` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSummary {
    pub id: i64,
    pub session_key: String,
    pub state: String,
    pub attempts: u32,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub tokens: u64,
    pub proposals: u64,
    pub error: Option<String>,
    pub turn_count: usize,
    /// Whether it still holds its conversation (a failed job keeps it a week).
    pub has_conversation: bool,
}

/// What a finished job spent and counted.
#[derive(Debug, Clone, Copy)]
pub struct JobResult<'a> {
    pub tokens: u64,
    /// Days since the epoch (UTC) the tokens count against.
    pub day: i64,
    /// Counters to add to, by name.
    pub counters: &'a [(&'a str, u64)],
    pub now_ms: i64,
}

/// What `kb.pending` shows of a proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposalInfo {
    pub job_id: i64,
    pub outcome: String,
    pub evidence_json: String,
    pub dedup_key: String,
    pub similar: Option<(String, f64)>,
}

/// The queue's state, for `status`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractionStats {
    pub queued: u64,
    pub done: u64,
    pub failed: u64,
    pub tokens_today: u64,
    pub calls_today: u64,
    /// Extracted proposals held for review.
    pub pending_proposals: u64,
    /// Counters by name: `skipped`, `dropped`, `low_confidence`, `rejected_before`, `invalid`, …
    pub counters: BTreeMap<String, u64>,
    /// The last failed job's error and when it failed (ms).
    pub last_error: Option<(i64, String)>,
    /// When the next queued job is due (ms), if one waits.
    pub next_due: Option<i64>,
}

const DAY_MS: i64 = 86_400_000;
/// Days a failed job keeps its (in strict mode, redacted) conversation.
const FAILED_TURNS_KEPT_DAYS: i64 = 7;
/// Days a finished job's row is kept (for `status`'s counts of done and failed jobs).
const FINISHED_JOBS_KEPT_DAYS: i64 = 90;

const JOB_COLUMNS: &str = "id, session_key, agent_id, turns, turn_count, privacy, require_approval, attempts";

impl Store {
    /// Which of `fingerprints` the session has not had queued or skipped yet.
    pub fn unseen_fingerprints(&self, session_key: &str, fingerprints: &[String]) -> Result<Vec<bool>> {
        let mut seen = self
            .conn
            .prepare_cached("SELECT 1 FROM extraction_seen WHERE session_key = ?1 AND fingerprint = ?2")
            .doing("preparing the seen lookup")?;
        fingerprints
            .iter()
            .map(|fingerprint| {
                seen.exists(params![session_key, fingerprint]).map(|seen| !seen).doing("looking up seen messages")
            })
            .collect()
    }

    /// Marks messages seen without a job (the gate skipped them) and adds to `counter`.
    pub fn skip_conversation(
        &mut self,
        session_key: &str,
        fingerprints: &[String],
        counter: &str,
        now_ms: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction().doing("starting a skip")?;
        mark_seen(&tx, session_key, fingerprints, now_ms)?;
        add_counter(&tx, counter, 1)?;
        tx.commit().doing("committing a skip")
    }

    /// Queues a job and marks its messages seen, in one transaction; the oldest queued jobs past
    /// `max_queued` are dropped (and counted). Nothing is done when any of the messages was
    /// queued meanwhile.
    pub fn enqueue_extraction(&mut self, job: &NewJob<'_>, max_queued: usize, now_ms: i64) -> Result<Enqueued> {
        let tx = self.conn.transaction().doing("starting an enqueue")?;
        {
            let mut seen = tx
                .prepare_cached("SELECT 1 FROM extraction_seen WHERE session_key = ?1 AND fingerprint = ?2")
                .doing("preparing the seen lookup")?;
            for fingerprint in job.fingerprints {
                if seen.exists(params![job.session_key, fingerprint]).doing("looking up seen messages")? {
                    return Ok(Enqueued::AlreadySeen);
                }
            }
        }
        mark_seen(&tx, job.session_key, job.fingerprints, now_ms)?;
        tx.execute(
            "INSERT INTO extraction_jobs (session_key, agent_id, turns, turn_count, privacy, require_approval, state, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)",
            params![job.session_key, job.agent_id, job.turns_json, job.turn_count as i64, job.privacy, job.require_approval, now_ms],
        )
        .doing("queueing a job")?;
        let id = tx.last_insert_rowid();
        let queued: i64 = tx
            .query_row("SELECT count(*) FROM extraction_jobs WHERE state = 'queued'", [], |row| row.get(0))
            .doing("counting queued jobs")?;
        let excess = (queued as usize).saturating_sub(max_queued.max(1));
        if excess > 0 {
            tx.execute(
                "UPDATE extraction_jobs SET state = 'dropped', turns = '[]', finished_at = ?2, \
                 error = 'dropped: the queue was full' \
                 WHERE id IN (SELECT id FROM extraction_jobs WHERE state = 'queued' ORDER BY id LIMIT ?1)",
                params![excess as i64, now_ms],
            )
            .doing("dropping the oldest jobs")?;
            add_counter(&tx, "dropped", excess as u64)?;
        }
        // Sessions' seen messages are kept for 30 days: enough for any session to end.
        tx.execute("DELETE FROM extraction_seen WHERE seen_at < ?1", [now_ms - 30 * DAY_MS])
            .doing("forgetting old sessions")?;
        // A failed job keeps its conversation for a week, to look into; finished jobs' rows go
        // after 90 days (their proposals stay).
        tx.execute(
            "UPDATE extraction_jobs SET turns = '[]' WHERE state = 'failed' AND finished_at < ?1 AND turns != '[]'",
            [now_ms - FAILED_TURNS_KEPT_DAYS * DAY_MS],
        )
        .doing("forgetting failed jobs' conversations")?;
        tx.execute(
            "DELETE FROM extraction_jobs WHERE state != 'queued' AND finished_at < ?1",
            [now_ms - FINISHED_JOBS_KEPT_DAYS * DAY_MS],
        )
        .doing("forgetting old jobs")?;
        tx.commit().doing("committing an enqueue")?;
        Ok(Enqueued::Queued { id, dropped: excess })
    }

    /// The oldest queued job that is due at `now_ms`, and when the next one is due otherwise.
    pub fn next_extraction_job(&self, now_ms: i64) -> Result<(Option<Job>, Option<i64>)> {
        let job = self
            .conn
            .query_row(
                &format!(
                    "SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE state = 'queued' AND not_before <= ?1 \
                     ORDER BY id LIMIT 1"
                ),
                [now_ms],
                job_from_row,
            )
            .optional()
            .doing("reading the next job")?;
        let next_due = match job {
            Some(_) => None,
            None => self
                .conn
                .query_row("SELECT min(not_before) FROM extraction_jobs WHERE state = 'queued'", [], |row| row.get(0))
                .doing("reading the next due time")?,
        };
        Ok((job, next_due))
    }

    /// Counts an attempt of a job before it is made: a job a crash interrupts is retried, and
    /// its attempts say so.
    pub fn start_extraction_attempt(&mut self, id: i64) -> Result<()> {
        self.conn
            .execute("UPDATE extraction_jobs SET attempts = attempts + 1 WHERE id = ?1", [id])
            .doing("counting an attempt")
            .map(|_| ())
    }

    /// A job handed out to run elsewhere (the OpenClaw plugin): not due again before `until`.
    pub fn lease_extraction(&mut self, id: i64, until: i64) -> Result<()> {
        self.conn
            .execute(
                "UPDATE extraction_jobs SET not_before = ?2 WHERE id = ?1 AND state = 'queued'",
                params![id, until],
            )
            .doing("leasing a job")
            .map(|_| ())
    }

    /// A job by id, if it is still queued.
    pub fn queued_extraction_job(&self, id: i64) -> Result<Option<Job>> {
        self.conn
            .query_row(
                &format!("SELECT {JOB_COLUMNS} FROM extraction_jobs WHERE id = ?1 AND state = 'queued'"),
                [id],
                job_from_row,
            )
            .optional()
            .doing("reading a job")
    }

    /// Jobs, newest first: all, or those in `state` (`queued`, `done`, `failed`, `dropped`).
    pub fn extraction_jobs(&self, state: Option<&str>, limit: usize) -> Result<Vec<JobSummary>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, session_key, state, attempts, created_at, finished_at, tokens, proposals, error, turn_count, \
                 turns != '[]' FROM extraction_jobs WHERE ?1 IS NULL OR state = ?1 ORDER BY id DESC LIMIT ?2",
            )
            .doing("preparing the job list")?;
        let rows = statement
            .query_map(params![state, limit as i64], |row| {
                Ok(JobSummary {
                    id: row.get(0)?,
                    session_key: row.get(1)?,
                    state: row.get(2)?,
                    attempts: row.get::<_, i64>(3)? as u32,
                    created_at: row.get(4)?,
                    finished_at: row.get(5)?,
                    tokens: row.get::<_, i64>(6)? as u64,
                    proposals: row.get::<_, i64>(7)? as u64,
                    error: row.get(8)?,
                    turn_count: row.get::<_, i64>(9)? as usize,
                    has_conversation: row.get(10)?,
                })
            })
            .doing("listing jobs")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().doing("listing jobs")
    }

    /// Queues failed jobs again (their attempts start afresh), those that still hold their
    /// conversation. Returns, per id, whether it was queued again.
    pub fn retry_failed_extractions(&mut self, ids: &[i64]) -> Result<Vec<bool>> {
        let tx = self.conn.transaction().doing("starting a retry of failed jobs")?;
        let mut retried = Vec::with_capacity(ids.len());
        {
            let mut requeue = tx
                .prepare_cached(
                    "UPDATE extraction_jobs SET state = 'queued', attempts = 0, not_before = 0, finished_at = NULL, \
                     error = NULL WHERE id = ?1 AND state = 'failed' AND turns != '[]'",
                )
                .doing("preparing the retry")?;
            for id in ids {
                retried.push(requeue.execute([id]).doing("queueing a failed job again")? == 1);
            }
        }
        let n = retried.iter().filter(|retried| **retried).count() as i64;
        // The counters say how many jobs failed for good: a retried one did not, yet.
        tx.execute("UPDATE extraction_counters SET value = max(0, value - ?1) WHERE name = 'failed'", [n])
            .doing("counting retried jobs")?;
        tx.commit().doing("committing a retry of failed jobs")?;
        Ok(retried)
    }

    /// A job to try again at `not_before`, after `error`; `tokens` were spent on the attempt.
    pub fn retry_extraction(&mut self, id: i64, not_before: i64, error: &str, tokens: u64, day: i64) -> Result<()> {
        let tx = self.conn.transaction().doing("starting a retry")?;
        tx.execute(
            "UPDATE extraction_jobs SET not_before = ?2, error = ?3, tokens = tokens + ?4 WHERE id = ?1",
            params![id, not_before, error, tokens as i64],
        )
        .doing("scheduling a retry")?;
        add_usage(&tx, day, tokens)?;
        tx.commit().doing("committing a retry")
    }

    /// A job that failed for good: nothing of it is stored. Its turns are kept, so that it can
    /// be looked into; `tokens` were spent on the attempt.
    pub fn fail_extraction(&mut self, id: i64, error: &str, tokens: u64, day: i64, now_ms: i64) -> Result<()> {
        let tx = self.conn.transaction().doing("starting a failure")?;
        tx.execute(
            "UPDATE extraction_jobs SET state = 'failed', error = ?2, tokens = tokens + ?3, finished_at = ?4 WHERE id = ?1",
            params![id, error, tokens as i64, now_ms],
        )
        .doing("failing a job")?;
        add_usage(&tx, day, tokens)?;
        add_counter(&tx, "failed", 1)?;
        tx.commit().doing("committing a failure")
    }

    /// A job's result, in one transaction: its proposals (each with its metadata when it is
    /// held for review), the job done with its conversation emptied, the tokens spent, counters.
    pub fn finish_extraction(
        &mut self,
        id: i64,
        items: &[WriteItem<'_>],
        metas: &[Option<ProposalMeta>],
        result: &JobResult<'_>,
    ) -> Result<(Vec<WriteOutcome>, u64)> {
        let JobResult { tokens, day, counters, now_ms } = *result;
        let tx = self.conn.transaction().doing("starting a job's result")?;
        let state: Option<String> = tx
            .query_row("SELECT state FROM extraction_jobs WHERE id = ?1", [id], |row| row.get(0))
            .optional()
            .doing("reading a job's state")?;
        if state.as_deref() != Some("queued") {
            // Finished already (a late second result): written once, never twice.
            return Ok((Vec::new(), read_seq(&tx)?));
        }
        let mut seq = read_seq(&tx)?;
        let outcomes = write_in(&tx, &mut seq, items, now_ms)?;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO proposals (experience_id, job_id, outcome, evidence, dedup_key, similar_id, similarity) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )
                .doing("preparing the proposal insert")?;
            for (outcome, meta) in outcomes.iter().zip(metas) {
                if let Some(meta) = meta
                    && !outcome.merged
                {
                    let (similar_id, similarity) = meta.similar.clone().unzip();
                    insert
                        .execute(params![
                            outcome.id.as_str(),
                            id,
                            meta.outcome,
                            meta.evidence_json,
                            meta.dedup_key,
                            similar_id,
                            similarity
                        ])
                        .doing("storing a proposal")?;
                }
            }
        }
        tx.execute(
            "UPDATE extraction_jobs SET state = 'done', turns = '[]', error = NULL, tokens = tokens + ?2, \
             proposals = ?3, finished_at = ?4 WHERE id = ?1",
            params![id, tokens as i64, outcomes.len() as i64, now_ms],
        )
        .doing("finishing a job")?;
        add_usage(&tx, day, tokens)?;
        add_counter(&tx, "done", 1)?;
        for (name, value) in counters {
            add_counter(&tx, name, *value)?;
        }
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a job's result")?;
        Ok((outcomes, seq))
    }

    /// Tokens spent on `day` (days since the epoch, UTC).
    pub fn extraction_tokens(&self, day: i64) -> Result<u64> {
        self.conn
            .query_row("SELECT tokens FROM extraction_usage WHERE day = ?1", [day], |row| row.get::<_, i64>(0))
            .optional()
            .doing("reading the day's tokens")
            .map(|tokens| tokens.unwrap_or(0) as u64)
    }

    /// Adds to extraction counters.
    pub fn count_extraction(&mut self, counters: &[(&str, u64)]) -> Result<()> {
        let tx = self.conn.transaction().doing("starting a count")?;
        for (name, value) in counters {
            add_counter(&tx, name, *value)?;
        }
        tx.commit().doing("committing a count")
    }

    pub fn extraction_stats(&self, day: i64) -> Result<ExtractionStats> {
        // Done and failed are counters: finished jobs' rows go after a while.
        let queued = self
            .conn
            .query_row("SELECT count(*) FROM extraction_jobs WHERE state = 'queued'", [], |row| row.get::<_, i64>(0))
            .doing("counting queued jobs")? as u64;
        let mut stats = ExtractionStats { queued, ..ExtractionStats::default() };
        let usage: Option<(i64, i64)> = self
            .conn
            .query_row("SELECT tokens, calls FROM extraction_usage WHERE day = ?1", [day], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .doing("reading the day's usage")?;
        if let Some((tokens, calls)) = usage {
            stats.tokens_today = tokens as u64;
            stats.calls_today = calls as u64;
        }
        let mut counters =
            self.conn.prepare_cached("SELECT name, value FROM extraction_counters").doing("preparing the counters")?;
        let rows = counters
            .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64)))
            .doing("reading the counters")?;
        for row in rows {
            let (name, value) = row.doing("reading the counters")?;
            stats.counters.insert(name, value);
        }
        stats.done = stats.counters.get("done").copied().unwrap_or(0);
        stats.failed = stats.counters.get("failed").copied().unwrap_or(0);
        stats.last_error = self
            .conn
            .query_row(
                "SELECT coalesce(finished_at, created_at), error FROM extraction_jobs \
                 WHERE error IS NOT NULL AND state IN ('failed', 'queued') ORDER BY coalesce(finished_at, created_at) DESC, id DESC LIMIT 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()
            .doing("reading the last error")?;
        stats.pending_proposals = self
            .conn
            .query_row(
                "SELECT count(*) FROM proposals p JOIN experiences e ON e.id = p.experience_id WHERE e.status = 'pending'",
                [],
                |row| row.get::<_, i64>(0),
            )
            .doing("counting held proposals")? as u64;
        stats.next_due = self
            .conn
            .query_row("SELECT min(not_before) FROM extraction_jobs WHERE state = 'queued'", [], |row| row.get(0))
            .doing("reading the next due time")?;
        Ok(stats)
    }

    /// The proposal metadata of those of `ids` that are extracted proposals.
    pub fn proposal_infos(&self, ids: &[&str]) -> Result<HashMap<String, ProposalInfo>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let mut statement = self
            .conn
            .prepare(&format!(
                "SELECT experience_id, job_id, outcome, evidence, dedup_key, similar_id, similarity FROM proposals \
                 WHERE experience_id IN ({placeholders})"
            ))
            .doing("preparing the proposal lookup")?;
        let rows = statement
            .query_map(params_from_iter(ids.iter()), |row| {
                let similar_id: Option<String> = row.get(5)?;
                let similarity: Option<f64> = row.get(6)?;
                Ok((
                    row.get::<_, String>(0)?,
                    ProposalInfo {
                        job_id: row.get(1)?,
                        outcome: row.get(2)?,
                        evidence_json: row.get(3)?,
                        dedup_key: row.get(4)?,
                        similar: similar_id.map(|id| (id, similarity.unwrap_or(1.0))),
                    },
                ))
            })
            .doing("reading proposals")?;
        rows.collect::<rusqlite::Result<HashMap<_, _>>>().doing("reading proposals")
    }

    /// Whether the user rejected an experience or proposal with this duplicate key before.
    pub fn rejected_before(&self, dedup_key: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM experiences WHERE dedup_key = ?1 AND status = 'rejected') \
                 OR EXISTS (SELECT 1 FROM proposals p JOIN experiences e ON e.id = p.experience_id \
                            WHERE p.dedup_key = ?1 AND e.status = 'rejected')",
                [dedup_key],
                |row| row.get(0),
            )
            .doing("looking up rejections")
    }

    /// Every experience the user rejected: its id, task, resource and result, and its vector of
    /// `model_id` when it has one (`None` for no model), for telling a proposal that rewords one.
    pub fn rejected_texts(&self, model_id: Option<&str>) -> Result<Vec<RejectedText>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT e.id, e.task, e.resource, e.result, v.vector FROM experiences e \
                 LEFT JOIN vectors v ON v.experience_id = e.id AND v.model_id = ?1 WHERE e.status = 'rejected'",
            )
            .doing("preparing the rejected lookup")?;
        let rows = statement
            .query_map([model_id.unwrap_or("")], |row| {
                Ok((row.get(0)?, [row.get(1)?, row.get(2)?, row.get(3)?], row.get(4)?))
            })
            .doing("reading rejected experiences")?;
        rows.collect::<rusqlite::Result<Vec<_>>>().doing("reading rejected experiences")
    }

    /// Whether a proposal with this duplicate key is held for review already.
    pub fn held_proposal(&self, dedup_key: &str) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM proposals p JOIN experiences e ON e.id = p.experience_id \
                 WHERE p.dedup_key = ?1 AND e.status = 'pending')",
                [dedup_key],
                |row| row.get(0),
            )
            .doing("looking up held proposals")
    }

    /// The stored experience (of any status) with this duplicate key, if any.
    pub fn with_dedup_key(&self, dedup_key: &str) -> Result<Option<(String, Status)>> {
        let found: Option<(String, String)> = self
            .conn
            .query_row("SELECT id, status FROM experiences WHERE dedup_key = ?1", [dedup_key], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .doing("looking up a duplicate key")?;
        Ok(found.and_then(|(id, status)| Status::parse(&status).map(|status| (id, status))))
    }

    /// The stored vector of an experience: its model id and bytes.
    pub fn vector_of(&self, id: &str) -> Result<Option<(String, Vec<u8>)>> {
        self.conn
            .query_row("SELECT model_id, vector FROM vectors WHERE experience_id = ?1", [id], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .doing("reading a vector")
    }

    /// Replaces a held (pending) experience by `item`, written as a new submit would be (merging
    /// into the experience it duplicates, or stored under the held one's id), in one transaction:
    /// an approved proposal or an approved edit. Returns `None` when the experience is not held
    /// (any more).
    pub fn replace_held(
        &mut self,
        id: &ExperienceId,
        item: WriteItem<'_>,
        now_ms: i64,
    ) -> Result<Option<(WriteOutcome, u64)>> {
        let tx = self.conn.transaction().doing("starting an approval")?;
        let status: Option<String> = tx
            .query_row("SELECT status FROM experiences WHERE id = ?1", [id.as_str()], |row| row.get(0))
            .optional()
            .doing("reading a status")?;
        if status.as_deref() != Some(Status::Pending.as_str()) {
            return Ok(None);
        }
        // A held experience is in no index (they hold active ones only), so no tombstone.
        tx.execute("DELETE FROM experiences WHERE id = ?1", [id.as_str()]).doing("replacing a held experience")?;
        let mut seq = read_seq(&tx)?;
        let item = WriteItem { id: Some(id), ..item };
        let mut outcomes = write_in(&tx, &mut seq, &[item], now_ms)?;
        write_seq(&tx, seq)?;
        tx.commit().doing("committing an approval")?;
        Ok(outcomes.pop().map(|outcome| (outcome, seq)))
    }
}

/// A rejected experience's id, task, resource and result, and its vector bytes (`rejected_texts`).
pub type RejectedText = (String, [String; 3], Option<Vec<u8>>);

fn job_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    Ok(Job {
        id: row.get(0)?,
        session_key: row.get(1)?,
        agent_id: row.get(2)?,
        turns_json: row.get(3)?,
        turn_count: row.get::<_, i64>(4)? as usize,
        privacy: row.get(5)?,
        require_approval: row.get(6)?,
        attempts: row.get::<_, i64>(7)? as u32,
    })
}

fn mark_seen(tx: &rusqlite::Transaction<'_>, session_key: &str, fingerprints: &[String], now_ms: i64) -> Result<()> {
    let mut insert = tx
        .prepare_cached("INSERT OR IGNORE INTO extraction_seen (session_key, fingerprint, seen_at) VALUES (?1, ?2, ?3)")
        .doing("preparing the seen insert")?;
    for fingerprint in fingerprints {
        insert.execute(params![session_key, fingerprint, now_ms]).doing("marking messages seen")?;
    }
    Ok(())
}

fn add_counter(tx: &rusqlite::Transaction<'_>, name: &str, value: u64) -> Result<()> {
    if value == 0 {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO extraction_counters (name, value) VALUES (?1, ?2) \
         ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
        params![name, value as i64],
    )
    .doing("counting")
    .map(|_| ())
}

fn add_usage(tx: &rusqlite::Transaction<'_>, day: i64, tokens: u64) -> Result<()> {
    tx.execute(
        "INSERT INTO extraction_usage (day, tokens, calls) VALUES (?1, ?2, 1) \
         ON CONFLICT (day) DO UPDATE SET tokens = tokens + excluded.tokens, calls = calls + 1",
        params![day, tokens as i64],
    )
    .doing("counting tokens")
    .map(|_| ())
}
