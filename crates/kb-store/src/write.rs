//! Writes to the experiences: storing gated experiences (an exact or near-identical duplicate
//! merges into the stored one, keeping what it brings as a variant), review, delete, recall
//! counters and tombstone pruning. Each write is one transaction that bumps the sequence
//! number for every change a derived structure must see.

use kb_core::{ExperienceId, Gated, Source, Status};
use rusqlite::{OptionalExtension, Row, params};

use crate::error::Context;
use crate::read::Variant;
use crate::store::{read_seq, write_seq};
use crate::variants::{self, NewVariant};
use crate::{Error, Result, Store};

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
    /// Set when it is a duplicate of an experience the user rejected and the item said
    /// [`OnRejected::Refuse`]: nothing was written, `id` names the rejected experience.
    pub refused: bool,
}

/// What a write does when its duplicate is an experience the user rejected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnRejected {
    /// Merge into it as into any duplicate: it stays rejected (imports, approvals, the hub).
    #[default]
    Merge,
    /// Write nothing and report it (`WriteOutcome::refused`): a submit the user did not confirm.
    Refuse,
    /// Merge into it and give it the item's status again: the user confirmed the submit.
    Revive,
}

/// A near-identical experience that a new one did not merge into, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptApart {
    pub similar_to: String,
    pub reason: String,
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
    source: String,
    flags: String,
}

impl MergeTarget {
    /// A teammate's or an extracted experience the user has not reviewed: agents do not see it
    /// (`knowhubd::trust`), so the user's own writing must not disappear into it.
    fn is_foreign_unreviewed(&self) -> bool {
        matches!(self.source.as_str(), "hub" | "extraction")
            && !self.flags.split(',').any(|flag| flag == kb_core::experience::REVIEWED_FLAG)
    }

    /// Written by the user's own agents or the user (not a teammate's, not extracted).
    fn is_own(&self) -> bool {
        matches!(self.source.as_str(), "tool" | "cli" | "import")
    }

    /// What the user wrote or approved must stay apart from this one: a teammate's experience,
    /// reviewed or not (it leaves when its author withdraws it, and would take the user's words
    /// with it, N12f), or an extracted one the user has not reviewed (agents do not see it).
    fn keeps_the_users_apart(&self) -> bool {
        self.source == "hub" || self.is_foreign_unreviewed()
    }

    /// Why the user's own or approved write was kept apart from this one
    /// ([`MergeTarget::keeps_the_users_apart`]).
    fn kept_apart_from_foreign(self) -> KeptApart {
        let reason = if !self.is_foreign_unreviewed() {
            "it is a teammate's experience, which leaves when they withdraw it; yours is kept as your own"
        } else if self.source == "hub" {
            "it is a teammate's experience you have not reviewed, which your agents do not see; yours is kept as your own"
        } else {
            "it is an extracted experience you have not reviewed, which your agents do not see; yours is kept as your own"
        };
        KeptApart { reason: reason.to_owned(), similar_to: self.id }
    }
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
    /// What to do when the duplicate it would merge into was rejected by the user.
    pub on_rejected: OnRejected,
}

impl<'a> WriteItem<'a> {
    pub fn plain(gated: &'a Gated) -> WriteItem<'a> {
        WriteItem { gated, vector: None, similar_to: None, carried: &[], id: None, on_rejected: OnRejected::Merge }
    }
}

/// An embedding as stored: the model that made it and its bytes (`kb_embed::to_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct VectorRef<'a> {
    pub model_id: &'a str,
    pub bytes: &'a [u8],
}

impl Store {
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

    /// Marks active experiences as reviewed by the user (the `reviewed` flag), so that a
    /// teammate's or an extracted one reaches agents. A later change pulled from the hub
    /// replaces the flags, so a teammate's edit needs a new review.
    /// Returns the ids it marked (active and not marked before).
    pub fn mark_reviewed(&mut self, ids: &[&str], now_ms: i64) -> Result<Vec<String>> {
        let tx = self.conn.transaction().doing("starting a review mark")?;
        let mut seq = read_seq(&tx)?;
        let mut marked = Vec::new();
        {
            let mut update = tx
                .prepare_cached(&format!(
                    "UPDATE experiences SET flags = CASE WHEN flags = '' THEN '{reviewed}' ELSE flags || ',{reviewed}' END, \
                     updated_at = ?2, seq = ?3 \
                     WHERE id = ?1 AND status = 'active' AND (',' || flags || ',') NOT LIKE '%,{reviewed},%'",
                    reviewed = kb_core::experience::REVIEWED_FLAG
                ))
                .doing("preparing the review mark")?;
            for id in ids {
                if update.execute(params![id, now_ms, (seq + 1) as i64]).doing("marking reviewed")? > 0 {
                    seq += 1;
                    marked.push((*id).to_owned());
                }
            }
        }
        write_seq(&tx, seq)?;
        tx.commit().doing("committing a review mark")?;
        Ok(marked)
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
}

/// The gate's reasons as stored (`experiences.reasons`): a JSON array, or empty for none.
pub(crate) fn reasons_text(gated: &Gated) -> String {
    if gated.reasons.is_empty() { String::new() } else { serde_json::to_string(&gated.reasons).unwrap_or_default() }
}

fn content_type_of(gated: &Gated) -> &str {
    gated.experience.content_type.as_deref().unwrap_or("text/plain")
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
            e.agent_id, e.submitted_by, e.source, e.flags FROM experiences e \
            LEFT JOIN contents c ON c.experience_id = e.id";
    let mut find_duplicate = tx
        .prepare_cached(&format!("SELECT {TARGET_COLUMNS} WHERE e.dedup_key = ?1"))
        .doing("preparing the duplicate lookup")?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO experiences (id, task, resource, result, score, agent_id, submitted_by, session_key, \
                 source, status, confidence, flags, dedup_key, created_at, updated_at, seq, same_key, wording_key, \
                 reasons) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, ?15, ?16, ?17, ?18)",
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
    // A rejected proposal is stored under a key of its own (`proposal:…`); the key its text
    // would have is in `proposals`.
    let mut find_rejected_proposal = tx
        .prepare_cached(&format!(
            "SELECT {TARGET_COLUMNS} JOIN proposals p ON p.experience_id = e.id \
             WHERE p.dedup_key = ?1 AND e.status = 'rejected' LIMIT 1"
        ))
        .doing("preparing the rejected proposal lookup")?;
    // The rejected experiences with no material difference from an item (the same key),
    // whatever their punctuation: an unconfirmed submit of one is refused too.
    let mut find_rejected_same = tx
        .prepare_cached(&format!("SELECT {TARGET_COLUMNS} WHERE e.same_key = ?1 AND e.status = 'rejected' LIMIT 5"))
        .doing("preparing the rejected same-key lookup")?;
    let mut set_status = tx
        .prepare_cached(&format!(
            "UPDATE experiences SET status = ?2, dedup_key = ?3, reasons = ?5, \
                 flags = CASE WHEN NOT ?4 OR (',' || flags || ',') LIKE '%,{reviewed},%' THEN flags \
                              WHEN flags = '' THEN '{reviewed}' ELSE flags || ',{reviewed}' END \
             WHERE id = ?1",
            reviewed = kb_core::experience::REVIEWED_FLAG
        ))
        .doing("preparing the status update")?;
    let mut find_similar =
        tx.prepare_cached(&format!("SELECT {TARGET_COLUMNS} WHERE e.id = ?1")).doing("preparing the similar lookup")?;
    let mut give_up_key = tx
        .prepare_cached("UPDATE experiences SET dedup_key = 'unreviewed:' || id WHERE id = ?1")
        .doing("preparing the key hand-over")?;
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
            source: row.get(9)?,
            flags: row.get(10)?,
        })
    };
    for item in items {
        let gated = item.gated;
        let new = &gated.experience;
        let mut similarity = None;
        let mut kept_apart = None;
        let mut duplicate =
            find_duplicate.query_row([&gated.dedup_key], merge_target).optional().doing("looking up duplicates")?;
        if duplicate.is_none() && item.on_rejected != OnRejected::Merge {
            duplicate = find_rejected_proposal
                .query_row([&gated.dedup_key], merge_target)
                .optional()
                .doing("looking up rejected proposals")?;
        }
        if duplicate.is_none() && item.on_rejected == OnRejected::Refuse {
            let proposed = [new.task.as_str(), new.resource.as_str(), new.result.as_str()];
            duplicate = find_rejected_same
                .query_map([&gated.same.key], merge_target)
                .doing("looking up rejected experiences")?
                .collect::<rusqlite::Result<Vec<_>>>()
                .doing("looking up rejected experiences")?
                .into_iter()
                .find(|target| {
                    let stored = [target.task.as_str(), target.resource.as_str(), target.result.as_str()];
                    kb_core::sameness::material_difference(&stored, &proposed).is_none()
                });
        }
        let own = matches!(new.source, None | Some(Source::Tool | Source::Cli | Source::Import));
        let approved = gated.flags.iter().any(|flag| flag == kb_core::experience::REVIEWED_FLAG);
        // What the user wrote or approved, in exactly the words of a teammate's experience or of
        // an extracted one they have not reviewed: merged, their agents might not find it (an
        // unreviewed one reaches none), and a teammate withdrawing theirs would take it away
        // (N12f); merged into a teammate's, an approval would also be pushed as the user's
        // confirmation of the teammate's row (N7). Theirs gives up the text's key and stays as it
        // was; this one is stored as the user's own.
        let users = own || approved;
        if users
            && let Some(target) =
                duplicate.take_if(|target| target.keeps_the_users_apart() && target.status != Status::Rejected.as_str())
        {
            give_up_key.execute([&target.id]).doing("handing over a text's key")?;
            kept_apart = Some(target.kept_apart_from_foreign());
        }
        if let (None, Some((similar_id, score))) = (&duplicate, item.similar_to) {
            let target =
                find_similar.query_row([similar_id], merge_target).optional().doing("looking up duplicates")?;
            match target {
                Some(target) if users && target.keeps_the_users_apart() => {
                    // Merged, the user's own agents might no longer find what they wrote, or a
                    // teammate's withdrawal would take it away.
                    kept_apart = Some(target.kept_apart_from_foreign());
                }
                Some(target) => {
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
                None => {}
            }
        }
        if let Some(target) = duplicate.as_ref().filter(|target| target.status == Status::Rejected.as_str())
            && item.on_rejected == OnRejected::Refuse
        {
            outcomes.push(WriteOutcome {
                id: ExperienceId::from_stored(target.id.clone()),
                status: Status::Rejected,
                merged: false,
                similar: similarity.is_some(),
                variant_kept: false,
                kept_apart: None,
                refused: true,
            });
            continue;
        }
        match duplicate {
            Some(target) => {
                let revive = item.on_rejected == OnRejected::Revive && target.status == Status::Rejected.as_str();
                // Only the user's own writing, or what the user approved (review shows the
                // content), adds to the user's own experience: an unreviewed teammate's or
                // extracted copy (even one the gate held) brings its content and score as a
                // variant only, or they would reach agents as the user's; and nothing foreign
                // adds to a teammate's experience the user reviewed, or it would reach agents
                // under that teammate's name (issue 24).
                let adopts = target.is_own() && (own || approved);
                let adds_content = adopts && target.content.is_none() && new.content.is_some();
                let score = if adopts { i64::from(gated.score) } else { target.score };
                let derived_change = score > target.score || adds_content || revive;
                if derived_change {
                    *seq += 1;
                }
                merge
                    .execute(params![target.id, now_ms, score, derived_change, *seq as i64])
                    .doing("merging a duplicate")?;
                if revive {
                    // A revived proposal takes the key its text has, as a submit would; the user
                    // confirmed it, so when it is active it counts as reviewed (a teammate's or
                    // an extracted one then reaches agents, `knowhubd::trust`).
                    set_status
                        .execute(params![
                            target.id,
                            gated.status.as_str(),
                            gated.dedup_key,
                            gated.status == Status::Active,
                            reasons_text(gated)
                        ])
                        .doing("making a rejected experience active again")?;
                }
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
                // A teammate's copies are bounded (`variants`): one already kept word for word
                // is not kept again, and past the author's bounds their oldest are dropped and
                // counted. Everything else is kept.
                let teammates = new.source == Some(Source::Hub);
                let variant = NewVariant {
                    experience_id: &target.id,
                    task: &new.task,
                    resource: &new.resource,
                    result: &new.result,
                    score: i64::from(gated.score),
                    content: new.content.as_deref(),
                    agent_id: new.agent_id.as_deref(),
                    submitted_by: new.submitted_by.as_deref(),
                };
                let variant_kept =
                    brings_something && !(teammates && variants::teammate_holds_identical(tx, &variant)?);
                if variant_kept {
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
                    if teammates {
                        variants::bound_teammate_variants(tx, &target.id, new.submitted_by.as_deref())?;
                    }
                }
                let status = if revive {
                    gated.status
                } else {
                    Status::parse(&target.status).ok_or_else(|| Error::Malformed {
                        id: target.id.clone(),
                        reason: format!("unknown status {:?}", target.status),
                    })?
                };
                outcomes.push(WriteOutcome {
                    id: ExperienceId::from_stored(target.id),
                    status,
                    merged: true,
                    similar: similarity.is_some(),
                    variant_kept,
                    kept_apart: None,
                    refused: false,
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
                        gated.same.key,
                        gated.same.wording,
                        reasons_text(gated),
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
                    refused: false,
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
