//! One connection to the hub, for one team: push a batch of changes, pull the changes after a
//! hub sequence number, wait for a teammate's change.

use std::time::Duration;

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;

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
    /// The PostgreSQL role that wrote it: who shared it, as the hub authenticated them.
    pub author: String,
    /// A tombstone: the experience was deleted (or stopped being shared) at its origin.
    pub deleted: bool,
    /// Set when the change came from this daemon itself: only `hub_seq` and `shared.id` are
    /// filled then.
    pub own: bool,
    /// What the row says; `machine`, `submitted_by` and `agent_id` are the author's claims.
    pub shared: Shared,
    /// Bytes of text the row brought, as the hub measured them (`octet_length`); 0 for a
    /// tombstone or an own change, which bring none.
    pub bytes: u64,
}

/// A row of the team that could not be read as an experience: a value out of range, NULL
/// where a value belongs, a column of another type, or bigger than the daemon takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub hub_seq: i64,
    pub author: Option<String>,
    pub id: Option<String>,
    pub reason: String,
}

/// One page of a pull, in hub order.
#[derive(Debug, Default)]
pub struct Page {
    pub rows: Vec<Pulled>,
    pub skipped: Vec<Skipped>,
    /// The hub sequence number the page reaches: the next pull starts after it.
    pub up_to: Option<i64>,
}

/// Bounds on what one pull brings into memory.
#[derive(Debug, Clone, Copy)]
pub struct PullLimits {
    /// At most this many rows.
    pub rows: i64,
    /// A row whose text is bigger comes without it, as a [`Skipped`] row.
    pub row_bytes: i64,
    /// The rows' text together, after the first row: the page ends before it is exceeded.
    pub page_bytes: i64,
}

impl Default for PullLimits {
    fn default() -> PullLimits {
        PullLimits { rows: 500, row_bytes: 4_200_000, page_bytes: 8_000_000 }
    }
}

/// One change to push.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Upsert(Box<Shared>),
    /// The experience with this id is no longer shared (deleted, rejected, ...).
    Delete(String),
}

const UPSERT: &str = "SELECT knowhub.share($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

const DELETE: &str = "SELECT knowhub.withdraw($1, $2)";

/// The team's changes after `$2` that pass the filter, at most `$4` rows, the text of rows over `$5` bytes left
/// out, and no more rows than fit `$6` bytes after the first. Every value is read as text (or a
/// number computed here) so that no value or column type the server holds can fail the
/// statement; the daemon decodes each row on its own. Rows above `knowhub.last_seq()` were not
/// numbered by the trigger: they are left out here and counted by [`IMPOSSIBLE`].
macro_rules! pull_sql {
    ($filter:literal) => {
        concat!("WITH page AS ( \
        SELECT floor(e.hub_seq::numeric)::bigint AS cursor, e.*, \
            coalesce(octet_length(e.task::text), 0)::bigint + coalesce(octet_length(e.resource::text), 0)::bigint \
            + coalesce(octet_length(e.result::text), 0)::bigint + coalesce(octet_length(e.content::text), 0)::bigint \
            + coalesce(octet_length(e.submitted_by::text), 0)::bigint + coalesce(octet_length(e.agent_id::text), 0)::bigint \
            + coalesce(octet_length(e.machine::text), 0)::bigint + coalesce(octet_length(e.id::text), 0)::bigint \
            + coalesce(octet_length(e.content_type::text), 0)::bigint AS size \
        FROM knowhub.experiences e \
        WHERE e.team = $1 AND e.hub_seq > $2::bigint AND e.hub_seq <= knowhub.last_seq() AND ", $filter, " \
        ORDER BY e.hub_seq LIMIT $4::bigint \
     ), sized AS ( \
        SELECT page.*, (size <= $5::bigint) AS fits, \
            (author::text = current_user::text AND machine::text = $3::text) AS mine, \
            sum(CASE WHEN size <= $5::bigint THEN size ELSE 0 END) \
                OVER (ORDER BY cursor ROWS UNBOUNDED PRECEDING) AS running \
        FROM page \
     ) \
     SELECT cursor, size, fits, coalesce(mine, false), author::text, id::text, machine::text, deleted::text, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN submitted_by::text END, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN agent_id::text END, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN task::text END, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN resource::text END, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN result::text END, \
        score::text, \
        CASE WHEN fits AND NOT coalesce(mine, false) THEN content::text END, \
        CASE WHEN fits THEN content_type::text END, merge_count::text, \
        (extract(epoch FROM created_at::timestamptz) * 1000)::text, \
        (extract(epoch FROM updated_at::timestamptz) * 1000)::text, hub_seq::text \
     FROM sized \
     WHERE running - CASE WHEN fits THEN size ELSE 0 END < $6::bigint \
     ORDER BY cursor")
    };
}

/// The next changes of the team, in hub order.
const PULL: &str = pull_sql!("true");

/// Given rows of the team, by author and id (`$7`, `$8`), changes held back earlier.
const FETCH: &str = pull_sql!("(e.author::text, e.id::text) IN (SELECT * FROM unnest($7::text[], $8::text[]))");

/// Rows of the team numbered above anything the trigger handed out: the smallest few.
const IMPOSSIBLE: &str = "SELECT hub_seq::text, author::text, id::text FROM knowhub.experiences \
     WHERE team = $1 AND hub_seq > knowhub.last_seq() ORDER BY hub_seq LIMIT 20";

/// A connection to the hub for one team.
pub struct Hub {
    client: Client,
    team: String,
    machine: String,
    target: String,
    /// The login, as the hub knows it.
    role: String,
    /// The team's notification channel, once subscribed.
    listening: Option<String>,
}

impl Hub {
    /// Connects, checks the schema and that the role is a member of `team`.
    pub fn open(options: &ConnectOptions, team: &str, machine: &str) -> Result<Hub> {
        let mut client = options.connect()?;
        // A hub that stops answering must not hold the sync thread forever.
        client.batch_execute("SET statement_timeout = '60s'").doing("setting the statement timeout")?;
        schema::version(&mut client, &options.target)?;
        let role: String = client.query_one("SELECT session_user::text", &[]).doing("reading the role")?.get(0);
        let mut hub = Hub {
            client,
            team: team.to_owned(),
            machine: machine.to_owned(),
            target: options.target.clone(),
            role,
            listening: None,
        };
        hub.check_member()?;
        Ok(hub)
    }

    pub fn target(&self) -> &str {
        &self.target
    }

    /// The login this connection writes as.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// An error naming the role and the team when the role is not (or no longer) a member.
    pub fn check_member(&mut self) -> Result<()> {
        let member: bool = self
            .client
            .query_one("SELECT knowhub.is_member($1, session_user)", &[&self.team])
            .doing("checking team membership")?
            .get(0);
        if member {
            return Ok(());
        }
        Err(Error::NotMember { role: self.role.clone(), team: self.team.clone(), target: self.target.clone() })
    }

    /// Pushes changes in one transaction: all of them or, on error, none. When the hub
    /// refuses one change (a value it rejects), the others are pushed and the refused ones
    /// come back with the reason, by index.
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

    /// The team's changes after `after`, in hub order, within `limits`. A row that cannot be
    /// read comes back as [`Skipped`] with the reason; the rows after it come all the same.
    pub fn pull(&mut self, after: i64, limits: PullLimits) -> Result<Page> {
        let params: [&(dyn ToSql + Sync); 6] =
            [&self.team, &after, &self.machine, &limits.rows, &limits.row_bytes, &limits.page_bytes];
        let rows = self.client.query_raw(PULL, params.iter().copied()).doing("pulling from the hub")?;
        page(rows, limits).doing("pulling from the hub")
    }

    /// The current state of given rows (`(author, id)`), within `limits`: for changes held
    /// back earlier. A row no longer on the hub (or not readable) does not come back.
    pub fn fetch(&mut self, keys: &[(String, String)], limits: PullLimits) -> Result<Page> {
        let authors: Vec<&str> = keys.iter().map(|(author, _)| author.as_str()).collect();
        let ids: Vec<&str> = keys.iter().map(|(_, id)| id.as_str()).collect();
        let params: [&(dyn ToSql + Sync); 8] =
            [&self.team, &i64::MIN, &self.machine, &limits.rows, &limits.row_bytes, &limits.page_bytes, &authors, &ids];
        let rows = self.client.query_raw(FETCH, params.iter().copied()).doing("fetching held changes from the hub")?;
        page(rows, limits).doing("fetching held changes from the hub")
    }


    /// Rows of the team numbered above anything the hub's trigger handed out (a damaged or
    /// tampered hub): they can never be pulled in order, so they are counted and the first
    /// few named instead.
    pub fn impossible(&mut self) -> Result<(u64, Vec<Skipped>)> {
        let count: i64 = self
            .client
            .query_one(
                "SELECT count(*) FROM knowhub.experiences WHERE team = $1 AND hub_seq > knowhub.last_seq()",
                &[&self.team],
            )
            .doing("counting rows out of sequence")?
            .get(0);
        if count == 0 {
            return Ok((0, Vec::new()));
        }
        let rows = self.client.query(IMPOSSIBLE, &[&self.team]).doing("looking for rows out of sequence")?;
        let named = rows
            .iter()
            .map(|row| {
                let seq: Option<String> = row.try_get(0).ok().flatten();
                Skipped {
                    hub_seq: seq.as_deref().and_then(|seq| seq.parse().ok()).unwrap_or(i64::MAX),
                    author: row.try_get(1).ok().flatten(),
                    id: row.try_get(2).ok().flatten(),
                    reason: format!(
                        "its hub_seq {} was not handed out by the hub (above the sequence's last value)",
                        seq.as_deref().unwrap_or("?")
                    ),
                }
            })
            .collect();
        Ok((count as u64, named))
    }

    /// How many of the team's changes after `after` come from others.
    pub fn behind(&mut self, after: i64) -> Result<i64> {
        Ok(self
            .client
            .query_one(
                "SELECT count(*) FROM knowhub.experiences WHERE team = $1 AND hub_seq > $2::bigint \
                 AND hub_seq <= knowhub.last_seq() AND NOT (machine::text = $3 AND author::text = session_user::text)",
                &[&self.team, &after, &self.machine],
            )
            .doing("measuring the lag")?
            .get(0))
    }

    /// Waits up to `timeout` for a change of the team to be committed; `true` when one was.
    /// The first call subscribes to the team's channel.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        if self.listening.is_none() {
            let channel: Option<String> = self
                .client
                .query_one("SELECT knowhub.channel($1)", &[&self.team])
                .doing("finding the team's channel")?
                .get(0);
            let Some(channel) = channel.filter(|channel| is_channel_name(channel)) else {
                return self.check_member().map(|()| false);
            };
            self.client.batch_execute(&format!("LISTEN {channel}")).doing("subscribing to changes")?;
            self.listening = Some(channel);
        }
        let channel = self.listening.clone().unwrap_or_default();
        let mut notified = false;
        let mut notifications = self.client.notifications();
        {
            let mut waiting = notifications.timeout_iter(timeout);
            while let Some(notification) = waiting.next().doing("waiting for changes")? {
                if notification.channel() == channel {
                    notified = true;
                    break;
                }
            }
        }
        // Others already delivered count too, without waiting for more.
        let mut pending = notifications.iter();
        while let Some(notification) = pending.next().doing("waiting for changes")? {
            notified |= notification.channel() == channel;
        }
        Ok(notified)
    }

    /// Whether the connection is still usable.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Decodes the rows of [`PULL`] or [`FETCH`] as they stream in, each on its own: a page holds
/// one copy of its text.
fn page(mut rows: postgres::RowIter<'_>, limits: PullLimits) -> std::result::Result<Page, postgres::Error> {
    let mut page = Page::default();
    while let Some(row) = rows.next()? {
        let Ok(cursor) = row.try_get::<_, i64>(0) else { continue };
        page.up_to = Some(page.up_to.map_or(cursor, |up_to: i64| up_to.max(cursor)));
        match decode(&row, cursor, limits.row_bytes) {
            Ok(pulled) => page.rows.push(pulled),
            Err(skipped) => page.skipped.push(skipped),
        }
    }
    Ok(page)
}

/// A channel name the schema makes: `knowhub_` and hex digits (it is spliced into `LISTEN`).
fn is_channel_name(channel: &str) -> bool {
    channel.len() <= 63
        && channel.strip_prefix("knowhub_").is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One row of [`PULL`] as a change, or why it cannot be one.
fn decode(row: &postgres::Row, cursor: i64, row_bytes: i64) -> std::result::Result<Pulled, Skipped> {
    let text = |index: usize| -> Option<String> { row.try_get::<_, Option<String>>(index).ok().flatten() };
    let author = text(4);
    let id = text(5);
    let skip = |reason: String| Skipped { hub_seq: cursor, author: author.clone(), id: id.clone(), reason };
    let size: i64 = row.try_get(1).unwrap_or(i64::MAX);
    if !row.try_get::<_, bool>(2).unwrap_or(false) {
        return Err(skip(format!("{size} bytes of text, over the {row_bytes} a row may bring")));
    }
    let own = row.try_get::<_, bool>(3).unwrap_or(false);
    let exact = text(19);
    if exact.as_deref() != Some(cursor.to_string().as_str()) {
        return Err(skip(format!("hub_seq {} is not a whole number", exact.as_deref().unwrap_or("NULL"))));
    }
    let required = |index: usize, name: &str| text(index).ok_or_else(|| skip(format!("{name} is NULL")));
    let author_text = required(4, "author")?;
    let id_text = required(5, "id")?;
    if id_text.is_empty() {
        return Err(skip("the id is empty".to_owned()));
    }
    let machine = required(6, "machine")?;
    let deleted = match required(7, "deleted")?.as_str() {
        "true" => true,
        "false" => false,
        other => return Err(skip(format!("deleted is {other:?}, not a boolean"))),
    };
    let number = |index: usize, name: &str| -> std::result::Result<f64, Skipped> {
        let value = required(index, name)?;
        value.parse::<f64>().ok().filter(|n| n.is_finite()).ok_or_else(|| skip(format!("{name} is {value:?}, not a finite number")))
    };
    let score = number(13, "score")?;
    if deleted || own {
        let shared = Shared {
            id: id_text,
            machine,
            submitted_by: None,
            agent_id: None,
            task: String::new(),
            resource: String::new(),
            result: String::new(),
            score: score.clamp(1.0, 5.0) as u8,
            content: None,
            content_type: None,
            merge_count: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        return Ok(Pulled { hub_seq: cursor, author: author_text, deleted, own, shared, bytes: 0 });
    }
    if score.fract() != 0.0 || !(1.0..=5.0).contains(&score) {
        return Err(skip(format!("score {score} is not one of 1 to 5")));
    }
    // Dates the daemon can hold: from 1970 to the year 9999, in milliseconds.
    let time = |index: usize, name: &str| -> std::result::Result<i64, Skipped> {
        let ms = number(index, name)?;
        if !(0.0..=253_402_300_799_000.0).contains(&ms) {
            return Err(skip(format!("{name} is out of range")));
        }
        Ok(ms as i64)
    };
    let created_at_ms = time(17, "created_at")?;
    let updated_at_ms = time(18, "updated_at")?;
    let merge_count = number(16, "merge_count")?;
    if merge_count.fract() != 0.0 || !(0.0..=1_000_000.0).contains(&merge_count) {
        return Err(skip(format!("merge_count {merge_count} is out of range")));
    }
    let shared = Shared {
        id: id_text,
        machine,
        submitted_by: text(8),
        agent_id: text(9),
        task: required(10, "task")?,
        resource: required(11, "resource")?,
        result: required(12, "result")?,
        score: score as u8,
        content: text(14),
        content_type: text(15),
        merge_count: merge_count as i64,
        created_at_ms,
        updated_at_ms,
    };
    Ok(Pulled { hub_seq: cursor, author: author_text, deleted, own, shared, bytes: size.max(0) as u64 })
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
            let merge_count = shared.merge_count.clamp(0, 1_000_000) as i32;
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

#[cfg(test)]
mod tests {
    use super::is_channel_name;

    #[test]
    fn only_schema_made_channel_names_are_listened_to() {
        assert!(is_channel_name("knowhub_0123abcdef"));
        for bad in ["knowhub_", "knowhub_x; DROP TABLE t", "other_abc", "knowhub_ab\"cd", &format!("knowhub_{}", "a".repeat(60))] {
            assert!(!is_channel_name(bad), "{bad}");
        }
    }
}
