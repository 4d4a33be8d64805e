//! Reading single experiences and pages, the review queue (pending, approve with an edit,
//! reject), the extraction queue's bookkeeping, and backups.

use std::collections::HashSet;
use std::path::Path;

use kb_core::{Experience, ExperienceId, NewExperience, Status};
use kb_store::{ExportRow, ListFilter, StoredContent, VectorRef, WriteItem};

use crate::semantic::{self};

use super::{Engine, EngineError, EngineResult, created_ids, now_ms};

/// A held experience as the review queue shows it.
#[derive(Debug, Clone)]
pub struct Held {
    pub experience: Experience,
    /// Set for an extracted proposal.
    pub proposal: Option<kb_store::ProposalInfo>,
    /// The stored experience it resembles, with their similarity.
    pub similar: Option<(Experience, f64)>,
    /// Why the gate held it, in words, as the gate said when it was written (empty for an
    /// experience written before the store kept them).
    pub reasons: Vec<String>,
}

/// Fields the user changed before approving.
#[derive(Debug, Clone, Default)]
pub struct Edit {
    pub task: Option<String>,
    pub resource: Option<String>,
    pub result: Option<String>,
    pub score: Option<i64>,
    pub content: Option<String>,
}

/// What a review did.
#[derive(Debug, Clone, Default)]
pub struct Reviewed {
    /// Per id, the status it had; `None` for an unknown id.
    pub before: Vec<Option<Status>>,
    /// Approved ids that merged into the experience they duplicate: (approved, into).
    pub merged: Vec<(String, String)>,
    /// Approved ids that were active already and are now marked reviewed (a teammate's or an
    /// extracted experience that reaches agents from now on).
    pub newly_reviewed: Vec<String>,
}

pub(super) enum Rewritten {
    NotHeld,
    Done { merged_into: Option<String> },
}

impl Engine {
    pub fn content(&self, id: &str) -> EngineResult<(String, String)> {
        match self.reader().content(id)? {
            StoredContent::NoSuchExperience => Err(EngineError::NotFound(format!("no experience with id {id}"))),
            StoredContent::NoContent => Err(EngineError::NotFound(format!("experience {id} has no detailed content"))),
            StoredContent::Content { content, content_type } => Ok((content, content_type)),
        }
    }

    /// What merged duplicates of `id` brought that it does not hold: the newest, at most
    /// `limit` and about `max_bytes` of text, and how many there are in all.
    pub fn variants(&self, id: &str, limit: usize, max_bytes: usize) -> EngineResult<(Vec<kb_store::Variant>, usize)> {
        Ok(self.reader().newest_variants(id, limit, max_bytes)?)
    }

    /// Per teammate, how many of their copies of `id` were not kept as variants, most first.
    pub fn variants_not_kept(&self, id: &str) -> EngineResult<Vec<(String, u64)>> {
        Ok(self.reader().variants_not_kept(id)?)
    }

    /// Where teammates' copies of an experience came from (the team hub).
    pub fn origins(&self, id: &str) -> EngineResult<Vec<kb_store::Origin>> {
        Ok(self.reader().hub_origins(id)?)
    }

    /// The author on the hub of a teammate's experience (`None` for this user's own, or when the
    /// hub's record of it is gone); a search brings it with each hit ([`Found::author`](super::Found::author)).
    pub fn hub_author(&self, id: &str) -> EngineResult<Option<String>> {
        Ok(self.reader().hub_author(id)?)
    }

    pub fn get(&self, id: &str) -> EngineResult<Experience> {
        self.reader().get(id)?.ok_or_else(|| EngineError::NotFound(format!("no experience with id {id}")))
    }

    /// Experiences held for review (suspected prompt injections, extracted proposals), newest
    /// first, with the flags that say why, each with what it was extracted from and the stored
    /// experience it resembles.
    pub fn pending(&self, limit: usize) -> EngineResult<Vec<Held>> {
        let filter = ListFilter { status: Some(Status::Pending), agent_id: None, before_id: None, limit };
        let reader = self.reader();
        let held = reader.list(&filter)?;
        let ids: Vec<&str> = held.iter().map(|experience| experience.id.as_str()).collect();
        let mut proposals = reader.proposal_infos(&ids)?;
        let mut reasons = reader.held_reasons(&ids)?;
        let mut out = Vec::with_capacity(held.len());
        for experience in held {
            let proposal = proposals.remove(experience.id.as_str());
            let similar = match proposal.as_ref().and_then(|proposal| proposal.similar.clone()) {
                Some((id, similarity)) => reader.get(&id)?.map(|similar| (similar, similarity)),
                None => None,
            };
            let reasons = reasons.remove(experience.id.as_str()).unwrap_or_default();
            out.push(Held { experience, proposal, similar, reasons });
        }
        Ok(out)
    }

    /// Active experiences from teammates or extraction that the user has not reviewed, newest
    /// first (see `kb_store::Reader::unreviewed`).
    pub fn unreviewed(&self, limit: usize) -> EngineResult<Vec<Experience>> {
        Ok(self.reader().unreviewed(limit)?)
    }

    /// The review queue's decision on experiences: `Active` approves (the user's call overrides
    /// a suspicion: the flags stay, and auto-recall still leaves flagged experiences out),
    /// `Rejected` rejects (kept, so the same text submitted or proposed again stays rejected).
    /// An approved proposal, or an approval with `edit`, is written as a submit would be: it
    /// passes the gate again and merges into the experience it duplicates, if any. Returns, per
    /// id, the status it had (`None`: unknown id), and the approved ids that merged.
    ///
    /// `versions`, when given, are the [`version_of`] each experience had when it was shown, one
    /// per id: a decision on a text that changed since (a teammate's edit pulled in while the user
    /// read it) is refused and changes nothing, so an approval never applies to words the user
    /// did not see. An edit applies to a held experience only; on any other it is refused.
    pub fn review(
        &self,
        ids: &[String],
        status: Status,
        edit: Option<&Edit>,
        versions: Option<&[String]>,
    ) -> EngineResult<Reviewed> {
        if let Some(versions) = versions
            && versions.len() != ids.len()
        {
            return Err(EngineError::invalid(
                "versions",
                format!("gives {} versions for {} ids; give one per id, as shown", versions.len(), ids.len()),
            ));
        }
        let expected = |position: usize| versions.map(|versions| versions[position].as_str());
        let mut reviewed = Reviewed { before: vec![None; ids.len()], merged: Vec::new(), newly_reviewed: Vec::new() };
        let mut plain: Vec<usize> = Vec::new();
        if status == Status::Active {
            let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            let proposals = self.reader().proposal_infos(&id_refs)?;
            for (position, id) in ids.iter().enumerate() {
                let proposal = proposals.get(id.as_str());
                if proposal.is_none() && edit.is_none() {
                    plain.push(position);
                    continue;
                }
                match self.approve_rewritten(id, proposal, edit, expected(position))? {
                    Rewritten::NotHeld if edit.is_some() => {
                        let status = self.reader().get(id)?.map(|experience| experience.status);
                        return Err(match status {
                            None => EngineError::NotFound(format!("no experience with id {id}")),
                            Some(status) => EngineError::invalid(
                                "edit",
                                format!(
                                    "{id} is {}, not held for review: an edit applies only to a held experience; \
                                     approve it as it is, or submit your own version (kbctl submit)",
                                    status.as_str()
                                ),
                            ),
                        });
                    }
                    Rewritten::NotHeld => plain.push(position),
                    Rewritten::Done { merged_into } => {
                        reviewed.before[position] = Some(Status::Pending);
                        if let Some(into) = merged_into {
                            reviewed.merged.push((id.clone(), into));
                        }
                    }
                }
            }
        } else {
            plain = (0..ids.len()).collect();
        }
        if !plain.is_empty() {
            let plain_ids: Vec<&str> = plain.iter().map(|position| ids[*position].as_str()).collect();
            let mut store = self.lock_writer();
            // Under the writer's lock nothing changes between this check and the decision.
            for position in &plain {
                self.check_version(&ids[*position], expected(*position))?;
            }
            let (before, _) = store.set_status(&plain_ids, status, now_ms())?;
            if status == Status::Active {
                // Approving is reviewing: a teammate's or an extracted experience, active or
                // held, reaches agents from now on (see `kb_core::experience::REVIEWED_FLAG`).
                reviewed.newly_reviewed = store.mark_reviewed(&plain_ids, now_ms())?;
            }
            self.after_write(&mut store, &HashSet::new());
            for (position, before) in plain.into_iter().zip(before) {
                reviewed.before[position] = before;
            }
        }
        Ok(reviewed)
    }

    /// Approves a held experience by writing it again (edited, when `edit` says so) through the
    /// gate, under its own id, merging into what it duplicates.
    pub(super) fn approve_rewritten(
        &self,
        id: &str,
        proposal: Option<&kb_store::ProposalInfo>,
        edit: Option<&Edit>,
        expected: Option<&str>,
    ) -> EngineResult<Rewritten> {
        let (experience, content, stored_vector) = {
            let reader = self.reader();
            let Some(experience) = reader.get(id)? else { return Ok(Rewritten::NotHeld) };
            if experience.status != Status::Pending {
                return Ok(Rewritten::NotHeld);
            }
            let content = match reader.content(id)? {
                kb_store::StoredContent::Content { content, content_type } => Some((content, content_type)),
                _ => None,
            };
            (experience, content, reader.vector_of(id)?)
        };
        let (content, content_type) = content.unzip();
        let mut new = NewExperience {
            task: experience.task,
            resource: experience.resource,
            result: experience.result,
            score: Some(i64::from(experience.score)),
            content,
            content_type,
            agent_id: experience.agent_id,
            submitted_by: experience.submitted_by,
            session_key: experience.session_key,
            source: Some(experience.source),
            confidence: experience.confidence,
        };
        let words_before = (new.task.clone(), new.resource.clone(), new.result.clone());
        if let Some(edit) = edit {
            for (field, value) in
                [(&mut new.task, &edit.task), (&mut new.resource, &edit.resource), (&mut new.result, &edit.result)]
            {
                if let Some(value) = value {
                    *field = value.clone();
                }
            }
            if let Some(score) = edit.score {
                new.score = Some(score);
            }
            if let Some(content) = &edit.content {
                new.content = Some(content.clone());
                new.content_type.get_or_insert_with(|| "text/markdown".to_owned());
            }
        }
        let edited_words = words_before != (new.task.clone(), new.resource.clone(), new.result.clone());
        let edited_text = edited_words || edit.is_some_and(|edit| edit.content.is_some());
        let mut gated = kb_core::gate(new, &self.policy)?;
        // An edit passes the gate like any write: text the user typed (or pasted) in that looks
        // like a prompt injection is not approved with it; the experience stays held, unchanged.
        if edited_text && gated.status == Status::Pending {
            return Err(EngineError::invalid(
                "edit",
                format!(
                    "the edited text is held as {}; {id} stays held as it was: \
                     approve it without this edit, or edit it again",
                    held_because(&gated)
                ),
            ));
        }
        // The user approves: held or not by the gate before, it becomes active; the flags stay,
        // and it is marked reviewed.
        gated.status = Status::Active;
        for flag in experience.flags.into_iter().chain([kb_core::experience::REVIEWED_FLAG.to_owned()]) {
            if !gated.flags.contains(&flag) {
                gated.flags.push(flag);
            }
        }
        let vector = match stored_vector {
            Some((model_id, bytes)) if !edited_words => Some((model_id, bytes)),
            _ => {
                let text = semantic::embedding_text(
                    &gated.experience.task,
                    &gated.experience.resource,
                    &gated.experience.result,
                );
                self.semantic.embed_now(&text).map(|(model_id, vector)| (model_id, kb_embed::to_bytes(&vector)))
            }
        };
        let similar = match (&vector, edited_words) {
            (Some((model_id, bytes)), true) => kb_embed::from_bytes(bytes)
                .ok()
                .and_then(|vector| self.semantic.near_duplicate(model_id, &vector))
                .map(|hit| (hit.id, hit.score)),
            _ => proposal.and_then(|proposal| proposal.similar.clone()).map(|(id, similarity)| (id, similarity as f32)),
        };
        let experience_id = ExperienceId::from_stored(id.to_owned());
        let item = WriteItem {
            vector: vector.as_ref().map(|(model_id, bytes)| VectorRef { model_id, bytes }),
            similar_to: similar.as_ref().filter(|(_, score)| *score < 1.0).map(|(id, score)| (id.as_str(), *score)),
            ..WriteItem::plain(&gated)
        };
        let mut store = self.lock_writer();
        self.check_version(id, expected)?;
        let Some((outcome, _)) = store.replace_held(&experience_id, item, now_ms())? else {
            return Ok(Rewritten::NotHeld);
        };
        self.after_write(&mut store, &created_ids(std::slice::from_ref(&outcome)));
        Ok(Rewritten::Done { merged_into: outcome.merged.then(|| outcome.id.to_string()) })
    }

    /// The [`version_of`] experience `id` as stored now (`None`: no such experience).
    pub fn version(&self, id: &str) -> EngineResult<Option<String>> {
        let reader = self.reader();
        let Some((experience, author)) = reader.get_many_with_authors(&[id])?.pop() else { return Ok(None) };
        let content = match reader.content(id)? {
            kb_store::StoredContent::Content { content, .. } => Some(content),
            _ => None,
        };
        Ok(Some(version_of(&experience, content.as_deref(), author.as_deref())))
    }

    /// Refuses a decision on `id` when it no longer holds the version the user was shown. Called
    /// with the writer's lock held.
    fn check_version(&self, id: &str, expected: Option<&str>) -> EngineResult<()> {
        let Some(expected) = expected else { return Ok(()) };
        match self.version(id)? {
            Some(now) if now != expected => Err(EngineError::invalid(
                "versions",
                format!(
                    "{id} changed since it was shown (version {expected}, now {now}: an edit pulled from the hub, \
                     a merge or another review); nothing was decided: read it again and decide on what it says now"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The extraction queue's state and counters; tokens are those of `day`.
    pub fn extraction_stats(&self, day: i64) -> EngineResult<kb_store::ExtractionStats> {
        Ok(self.reader().extraction_stats(day)?)
    }

    /// Extraction jobs, newest first.
    pub fn extraction_jobs(&self, state: Option<&str>, limit: usize) -> EngineResult<Vec<kb_store::JobSummary>> {
        Ok(self.reader().extraction_jobs(state, limit)?)
    }

    /// Queues failed extraction jobs again and wakes the worker.
    pub fn retry_extractions(&self, ids: &[i64]) -> EngineResult<Vec<bool>> {
        Ok(self.lock_writer().retry_failed_extractions(ids)?)
    }

    pub fn list(&self, filter: &ListFilter) -> EngineResult<Vec<Experience>> {
        Ok(self.reader().list(filter)?)
    }

    pub fn export_page(&self, after_id: Option<&str>, limit: usize) -> EngineResult<Vec<ExportRow>> {
        Ok(self.reader().export_page(after_id, limit)?)
    }

    /// Writes a consistent copy of the database to `destination`.
    pub fn backup(&self, destination: &Path) -> EngineResult<u64> {
        if destination.exists() {
            return Err(EngineError::invalid("path", format!("{} already exists", destination.display())));
        }
        self.reader().backup_to(destination)?;
        Ok(std::fs::metadata(destination).map(|meta| meta.len()).unwrap_or(0))
    }
}

/// What the user judges when they review an experience, as a short fingerprint: its words,
/// score, content, source, submitter and (a teammate's) author. Shown with the experience
/// (`version`) and sent back with a decision, which is refused when it changed.
pub fn version_of(experience: &Experience, content: Option<&str>, author: Option<&str>) -> String {
    // FNV-1a 64 over the fields, each ended by a byte no text holds.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let score = experience.score.to_string();
    let fields = [
        experience.task.as_str(),
        experience.resource.as_str(),
        experience.result.as_str(),
        score.as_str(),
        content.unwrap_or("\u{0}none"),
        experience.source.as_str(),
        experience.submitted_by.as_deref().unwrap_or(""),
        author.unwrap_or(""),
    ];
    for field in fields {
        for byte in field.bytes().chain([0xff]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// Why the gate held an edit, in words: "a suspected prompt injection (prompt_injection)", or the
/// risky action with the words that matched.
fn held_because(gated: &kb_core::Gated) -> String {
    let mut parts = Vec::new();
    if gated.flags.iter().any(|flag| flag == "prompt_injection") {
        parts.push("a suspected prompt injection (prompt_injection)".to_owned());
    }
    if gated.flags.iter().any(|flag| flag == "risky_action") {
        parts.push("telling an agent to take a risky action (risky_action)".to_owned());
    }
    let mut because = parts.join(" and ");
    if !gated.reasons.is_empty() {
        because = format!("{because}: {}", gated.reasons.join("; "));
    }
    because
}
