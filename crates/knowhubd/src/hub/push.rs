//! Pushing: the outbox's changes, redacted as in strict mode and gated again, to the hub.

use std::sync::atomic::Ordering;

use kb_core::{GatePolicy, NewExperience, PrivacyMode, Source, Status};
use kb_hub::{Change, Shared};
use kb_store::Outgoing;

use super::Round;
use crate::config::HubConfig;

pub(super) fn push(round: &mut Round<'_>) -> anyhow::Result<()> {
    let Round { engine, hub_sync, reader, settings, machine, stop, .. } = *round;
    // Shared text is redacted as in strict mode, whatever this store's privacy mode.
    let strict = GatePolicy { privacy: PrivacyMode::Strict, limits: engine.policy().limits.clone() };
    while !stop.load(Ordering::Relaxed) {
        let batch = reader.hub_outbox(settings.config.batch)?;
        if batch.is_empty() {
            break;
        }
        let changes: Vec<Change> =
            batch.iter().map(|entry| to_change(entry, &settings.config, &strict, machine)).collect();
        let refused = round.hub.push(&changes)?;
        let mut store = engine.lock_writer();
        for (index, reason) in &refused {
            tracing::warn!(id = %batch[*index].experience_id, %reason, "hub: the hub refused a change");
            store.hub_refused(batch[*index].outbox_id, reason)?;
        }
        let pushed: Vec<i64> = batch
            .iter()
            .enumerate()
            .filter(|(index, _)| !refused.iter().any(|(refused, _)| refused == index))
            .map(|(_, entry)| entry.outbox_id)
            .collect();
        store.hub_pushed(&pushed)?;
        drop(store);
        hub_sync.pushed.fetch_add(pushed.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// What the team gets of an outbox entry: its current state, redacted, or a withdrawal when it
/// is gone or not to be shared (any more).
fn to_change(entry: &Outgoing, config: &HubConfig, strict: &GatePolicy, machine: &str) -> Change {
    // A confirmation is this store's own row for a teammate's experience, under an id of its own.
    let id =
        if entry.confirmation { format!("{}.{machine}", entry.experience_id) } else { entry.experience_id.clone() };
    let withdraw = || Change::Delete(id.clone());
    let Some((experience, content)) = &entry.current else { return withdraw() };
    // Extracted and then approved by the user is shared like a submit ("extracted" says where
    // it came from, "reviewed" that the user approved it, not that it is held); any other flag
    // keeps it home.
    let shareable = experience.status == Status::Active
        && experience.flags.iter().all(|flag| flag == "extracted" || flag == kb_core::experience::REVIEWED_FLAG)
        && if entry.confirmation {
            // This store vouches for a teammate's text, as the user, to everyone who trusts them:
            // only for what the user reviewed (N7: an approval merged into a teammate's row the
            // user never reviewed once pushed that row, its content included, under the user's
            // login).
            experience.source == Source::Hub
                && experience.flags.iter().any(|flag| flag == kb_core::experience::REVIEWED_FLAG)
        } else {
            experience.source != Source::Hub
                && config.share_sources.iter().any(|source| source == experience.source.as_str())
        };
    if !shareable {
        return withdraw();
    }
    let new = NewExperience {
        task: experience.task.clone(),
        resource: experience.resource.clone(),
        result: experience.result.clone(),
        score: Some(i64::from(experience.score)),
        content: content.clone(),
        content_type: experience.content_type.clone(),
        agent_id: experience.agent_id.clone(),
        submitted_by: experience.submitted_by.clone(),
        session_key: None,
        source: Some(experience.source),
        confidence: None,
    };
    match kb_core::gate(new, strict) {
        // Redaction can only remove; a text that now reads as an injection stays home.
        Ok(gated) if gated.status == Status::Active => Change::Upsert(Box::new(Shared {
            id: id.clone(),
            machine: machine.to_owned(),
            // A confirmation vouches for the teammate's text; who vouches is its author on the hub.
            submitted_by: if entry.confirmation { None } else { gated.experience.submitted_by },
            agent_id: gated.experience.agent_id,
            task: gated.experience.task,
            resource: gated.experience.resource,
            result: gated.experience.result,
            score: gated.score,
            content: gated.experience.content,
            content_type: gated.experience.content_type,
            merge_count: if entry.confirmation { 0 } else { experience.merge_count },
            created_at_ms: experience.created_at_ms,
            updated_at_ms: experience.updated_at_ms,
        })),
        _ => withdraw(),
    }
}

#[cfg(test)]
mod tests {
    use kb_core::{Experience, ExperienceId, GatePolicy, PrivacyMode, Source, Status};
    use kb_hub::Change;
    use kb_store::Outgoing;

    use super::to_change;
    use crate::config::HubConfig;

    fn outgoing(source: Source, status: Status, flags: &[&str]) -> Outgoing {
        let experience = Experience {
            id: ExperienceId::generate(1),
            task: "pin the terraform provider versions".to_owned(),
            resource: "required_providers".to_owned(),
            result: "plans stopped drifting".to_owned(),
            score: 4,
            has_content: false,
            content_type: None,
            agent_id: None,
            submitted_by: None,
            session_key: None,
            source,
            status,
            confidence: None,
            flags: flags.iter().map(|flag| (*flag).to_owned()).collect(),
            created_at_ms: 1,
            updated_at_ms: 1,
            merge_count: 0,
            recall_count: 0,
        };
        Outgoing {
            outbox_id: 1,
            experience_id: experience.id.to_string(),
            confirmation: false,
            current: Some((experience, None)),
        }
    }

    #[test]
    fn an_extracted_experience_is_shared_once_approved_and_only_then() {
        let strict = GatePolicy { privacy: PrivacyMode::Strict, ..GatePolicy::default() };
        let config = HubConfig::default();
        let shared = |entry: &Outgoing| matches!(to_change(entry, &config, &strict, "m"), Change::Upsert(_));
        assert!(shared(&outgoing(Source::Extraction, Status::Active, &["extracted"])), "approved: shared");
        assert!(!shared(&outgoing(Source::Extraction, Status::Pending, &["extracted"])), "held for review: not shared");
        assert!(!shared(&outgoing(Source::Extraction, Status::Active, &["extracted", "prompt_injection"])));
        assert!(!shared(&outgoing(Source::Tool, Status::Active, &["prompt_injection"])));
        let without = HubConfig { share_sources: vec!["tool".to_owned()], ..HubConfig::default() };
        let entry = outgoing(Source::Extraction, Status::Active, &["extracted"]);
        assert!(matches!(to_change(&entry, &without, &strict, "m"), Change::Delete(_)), "share_sources says no");
    }

    /// N7: a confirmation pushes a teammate's row under the user's login; it is withdrawn
    /// (never shared) unless the user reviewed that row.
    #[test]
    fn a_confirmation_is_shared_only_for_a_teammates_experience_the_user_reviewed() {
        let strict = GatePolicy { privacy: PrivacyMode::Strict, ..GatePolicy::default() };
        let config = HubConfig::default();
        let confirmation =
            |flags: &[&str]| Outgoing { confirmation: true, ..outgoing(Source::Hub, Status::Active, flags) };
        let shared = |entry: &Outgoing| match to_change(entry, &config, &strict, "m") {
            Change::Upsert(shared) => {
                assert!(shared.id.ends_with(".m"), "{}", shared.id);
                true
            }
            Change::Delete(id) => {
                assert!(id.ends_with(".m"), "{id}");
                false
            }
        };
        assert!(!shared(&confirmation(&[])), "not reviewed: withdrawn");
        assert!(!shared(&confirmation(&["extracted"])), "not reviewed: withdrawn");
        assert!(shared(&confirmation(&["reviewed"])), "reviewed: shared");
        let pending = Outgoing { confirmation: true, ..outgoing(Source::Hub, Status::Pending, &["reviewed"]) };
        assert!(!shared(&pending));
    }
}
