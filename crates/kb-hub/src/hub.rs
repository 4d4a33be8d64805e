//! One connection to the hub, for one team: push a batch of changes, pull the changes after a
//! hub sequence number, wait for a teammate's change.

use std::time::Duration;

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;

use crate::connect::ConnectOptions;
use crate::{Doing, Error, Result, schema};

/// An experience as the team sees it (already redacted by the daemon that shares it).
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    /// The experience's id at its origin.
    pub id: String,
    /// Which daemon shared it (a stable id of its data directory).
    pub machine: String,
    pub submitted_by: Option<String>,
    pub agent_id: Option<String>,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    pub content: Option<String>,
    pub content_type: Option<String>,
    pub merge_count: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// A change read from the hub.
#[derive(Debug, Clone, PartialEq)]
pub struct Pulled {
    pub hub_seq: i64,
    /// The PostgreSQL role that wrote it.
    pub author: String,
    /// A tombstone: the experience was deleted (or stopped being shared) at its origin.
    pub deleted: bool,
    /// Set when the change came from this daemon itself: only `hub_seq` and `shared.id` are
    /// filled then.
    pub own: bool,
    pub shared: Shared,
}

/// One change to push.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Upsert(Box<Shared>),
    /// The experience with this id is no longer shared (deleted, rejected, ...).
    Delete(String),
}

const UPSERT: &str = "INSERT INTO knowhub.experiences AS e (team, id, machine, submitted_by, agent_id, task, resource, \
        result, score, content, content_type, merge_count, created_at, updated_at, deleted) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
        to_timestamp($13::float8 / 1000), to_timestamp($14::float8 / 1000), false) \
     ON CONFLICT (team, id) DO UPDATE SET machine = EXCLUDED.machine, submitted_by = EXCLUDED.submitted_by, \
        agent_id = EXCLUDED.agent_id, task = EXCLUDED.task, resource = EXCLUDED.resource, result = EXCLUDED.result, \
        score = EXCLUDED.score, content = EXCLUDED.content, content_type = EXCLUDED.content_type, \
        merge_count = EXCLUDED.merge_count, updated_at = EXCLUDED.updated_at, deleted = false \
     WHERE (e.machine, e.submitted_by, e.agent_id, e.task, e.resource, e.result, e.score, e.content, e.content_type, \
            e.merge_count, e.deleted) IS DISTINCT FROM (EXCLUDED.machine, EXCLUDED.submitted_by, EXCLUDED.agent_id, \
            EXCLUDED.task, EXCLUDED.resource, EXCLUDED.result, EXCLUDED.score, EXCLUDED.content, \
            EXCLUDED.content_type, EXCLUDED.merge_count, false)";

/// A tombstone keeps the id and who wrote it, and nothing of the text.
const DELETE: &str = "UPDATE knowhub.experiences SET deleted = true, task = '', resource = '', result = '', \
        content = NULL, content_type = NULL, submitted_by = NULL, agent_id = NULL, updated_at = now() \
     WHERE team = $1 AND id = $2 AND NOT deleted";

const PULL: &str = "SELECT hub_seq, author::text, machine = $3 AS own, deleted, id, machine, \
        CASE WHEN machine = $3 THEN NULL ELSE submitted_by END, CASE WHEN machine = $3 THEN NULL ELSE agent_id END, \
        CASE WHEN machine = $3 THEN '' ELSE task END, CASE WHEN machine = $3 THEN '' ELSE resource END, \
        CASE WHEN machine = $3 THEN '' ELSE result END, score, \
        CASE WHEN machine = $3 THEN NULL ELSE content END, content_type, merge_count, \
        (extract(epoch FROM created_at) * 1000)::bigint, (extract(epoch FROM updated_at) * 1000)::bigint \
     FROM knowhub.experiences WHERE team = $1 AND hub_seq > $2 ORDER BY hub_seq LIMIT $4";

/// A connection to the hub for one team.
pub struct Hub {
    client: Client,
    team: String,
    machine: String,
    target: String,
    listening: bool,
}

impl Hub {
    /// Connects, checks the schema and that the role is a member of `team`.
    pub fn open(options: &ConnectOptions, team: &str, machine: &str) -> Result<Hub> {
        let mut client = options.connect()?;
        // A hub that stops answering must not hold the sync thread forever.
        client.batch_execute("SET statement_timeout = '60s'").doing("setting the statement timeout")?;
        schema::version(&mut client, &options.target)?;
        let member: bool = client
            .query_one("SELECT knowhub.is_member($1, current_user)", &[&team])
            .doing("checking team membership")?
            .get(0);
        if !member {
            let role: String = client.query_one("SELECT current_user::text", &[]).doing("reading the role")?.get(0);
            return Err(Error::Query {
                doing: "checking team membership",
                message: format!(
                    "role {role} is not a member of team {team:?} on {}: the team's admin adds it with `kbctl hub init --member {role}`'s SQL",
                    options.target
                ),
            });
        }
        Ok(Hub {
            client,
            team: team.to_owned(),
            machine: machine.to_owned(),
            target: options.target.clone(),
            listening: false,
        })
    }

    pub fn target(&self) -> &str {
        &self.target
    }

    /// Pushes changes in one transaction: all of them or, on error, none. When the hub
    /// refuses one change (a row of another author under the same id, a value it rejects),
    /// the others are pushed and the refused ones come back with the reason, by index.
    pub fn push(&mut self, changes: &[Change]) -> Result<Vec<(usize, String)>> {
        if changes.is_empty() {
            return Ok(Vec::new());
        }
        match self.push_all(changes, false) {
            Ok(refused) => Ok(refused),
            // A connection problem is retried by the caller; a refusal is found row by row.
            Err(error) if self.client.is_closed() => Err(error),
            Err(_) => self.push_all(changes, true),
        }
    }

    fn push_all(&mut self, changes: &[Change], one_by_one: bool) -> Result<Vec<(usize, String)>> {
        let team = self.team.clone();
        let mut tx = self.client.transaction().doing("starting a push")?;
        let upsert = tx.prepare(UPSERT).doing("preparing the push")?;
        let delete = tx.prepare(DELETE).doing("preparing the push")?;
        let mut refused = Vec::new();
        for (index, change) in changes.iter().enumerate() {
            if !one_by_one {
                execute(&mut tx, &upsert, &delete, &team, change).doing("pushing to the hub")?;
                continue;
            }
            let mut savepoint = tx.savepoint("one").doing("starting a savepoint")?;
            match execute(&mut savepoint, &upsert, &delete, &team, change) {
                Ok(_) => savepoint.commit().doing("releasing a savepoint")?,
                Err(error) => {
                    refused.push((index, crate::describe(&error)));
                    savepoint.rollback().doing("rolling back a refused change")?;
                }
            }
        }
        tx.commit().doing("committing a push")?;
        Ok(refused)
    }

    /// Up to `limit` changes of the team after `after`, in hub order.
    pub fn pull(&mut self, after: i64, limit: i64) -> Result<Vec<Pulled>> {
        let rows =
            self.client.query(PULL, &[&self.team, &after, &self.machine, &limit]).doing("pulling from the hub")?;
        Ok(rows
            .iter()
            .map(|row| Pulled {
                hub_seq: row.get(0),
                author: row.get(1),
                own: row.get(2),
                deleted: row.get(3),
                shared: Shared {
                    id: row.get(4),
                    machine: row.get(5),
                    submitted_by: row.get(6),
                    agent_id: row.get(7),
                    task: row.get(8),
                    resource: row.get(9),
                    result: row.get(10),
                    score: row.get::<_, i16>(11).clamp(1, 5) as u8,
                    content: row.get(12),
                    content_type: row.get(13),
                    merge_count: i64::from(row.get::<_, i32>(14)),
                    created_at_ms: row.get(15),
                    updated_at_ms: row.get(16),
                },
            })
            .collect())
    }

    /// How many of the team's changes after `after` come from other daemons.
    pub fn behind(&mut self, after: i64) -> Result<i64> {
        Ok(self
            .client
            .query_one(
                "SELECT count(*) FROM knowhub.experiences WHERE team = $1 AND hub_seq > $2 AND machine <> $3",
                &[&self.team, &after, &self.machine],
            )
            .doing("measuring the lag")?
            .get(0))
    }

    /// Waits up to `timeout` for a change of the team to be committed; `true` when one was.
    /// The first call subscribes (`LISTEN`).
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        if !self.listening {
            self.client.batch_execute("LISTEN knowhub").doing("subscribing to changes")?;
            self.listening = true;
        }
        let mut notified = false;
        let mut notifications = self.client.notifications();
        {
            let mut waiting = notifications.timeout_iter(timeout);
            while let Some(notification) = waiting.next().doing("waiting for changes")? {
                if notification.payload() == self.team {
                    notified = true;
                    break;
                }
            }
        }
        // Others already delivered count too, without waiting for more.
        let mut pending = notifications.iter();
        while let Some(notification) = pending.next().doing("waiting for changes")? {
            notified |= notification.payload() == self.team;
        }
        Ok(notified)
    }

    /// Whether the connection is still usable.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Runs one change in `client` (the push's transaction, or a savepoint in it).
fn execute<C: postgres::GenericClient>(
    client: &mut C,
    upsert: &postgres::Statement,
    delete: &postgres::Statement,
    team: &String,
    change: &Change,
) -> std::result::Result<u64, postgres::Error> {
    match change {
        Change::Upsert(shared) => {
            let score = i16::from(shared.score);
            let merge_count = shared.merge_count.clamp(0, i64::from(i32::MAX)) as i32;
            let (created, updated) = (shared.created_at_ms as f64, shared.updated_at_ms as f64);
            let params: [&(dyn postgres::types::ToSql + Sync); 14] = [
                team,
                &shared.id,
                &shared.machine,
                &shared.submitted_by,
                &shared.agent_id,
                &shared.task,
                &shared.resource,
                &shared.result,
                &score,
                &shared.content,
                &shared.content_type,
                &merge_count,
                &created,
                &updated,
            ];
            client.execute(upsert, &params)
        }
        Change::Delete(id) => client.execute(delete, &[team, id]),
    }
}
