//! Pulling: the team's changes, each row decoded on its own, within a byte budget and each
//! member's daily allowance, gated by this daemon, applied with the cursor in one transaction.
//!
//! Who shared a change is the login the hub authenticated (`author`); what a row says of its
//! submitter, agent and machine is kept as that author's claim (`submitted_by` is the author,
//! the agent is `<author>/<claimed agent>`), so no member can speak as another here.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use kb_core::{Gated, NewExperience, Source};
use kb_hub::{Page, PullLimits, Pulled};
use kb_store::{Held, Incoming, PullBatch, SkipRecord};

use super::{Round, Settings};
use kb_engine::engine::now_ms;

/// Held-back changes fetched again per round, at most.
const RELEASE_BATCH: usize = 500;

/// The longest agent id a member's claim is kept to (the gate's limit for identifiers).
const MAX_AGENT_CHARS: usize = 256;

pub(super) fn limits(settings: &Settings) -> PullLimits {
    PullLimits { rows: settings.config.batch as i64, ..PullLimits::default() }
}

/// Every change of the team after the cursor, then what was held back and may come now.
pub(super) fn pull(round: &mut Round<'_>) -> anyhow::Result<()> {
    let Round { reader, settings, stop, .. } = *round;
    while !stop.load(Ordering::Relaxed) {
        let after = reader.hub_pulled_seq()?;
        let page = round.hub.pull(after, limits(settings))?;
        let Some(up_to) = page.up_to else { break };
        apply(round, page, Some(up_to), Vec::new())?;
    }
    release_held(round)
}

/// Fetches held-back changes of the members whose allowance today is not used up.
fn release_held(round: &mut Round<'_>) -> anyhow::Result<()> {
    let Round { reader, settings, .. } = *round;
    let now = now_ms();
    let mut allowed: HashMap<String, bool> = HashMap::new();
    let mut keys = Vec::new();
    for held in reader.hub_held(RELEASE_BATCH * 4)? {
        let open = match allowed.get(&held.author) {
            Some(open) => *open,
            None => {
                let (rows, bytes) = reader.hub_quota_used(&held.author, now)?;
                let open = rows < settings.config.member_rows_per_day && bytes < settings.config.member_bytes_per_day;
                allowed.insert(held.author.clone(), open);
                open
            }
        };
        if open && keys.len() < RELEASE_BATCH {
            keys.push((held.author, held.hub_id));
        }
    }
    if keys.is_empty() {
        return Ok(());
    }
    let page = round.hub.fetch(&keys, limits(settings))?;
    apply(round, page, None, keys)
}

/// A row as this daemon would write it: the author's identity, the row's claims as theirs.
/// Takes the row's text (a page holds one copy of it).
fn proposed(row: &mut Pulled) -> NewExperience {
    let shared = &mut row.shared;
    let agent_id = shared.agent_id.take().map(|claimed| {
        let mut agent = format!("{}/", row.author);
        for c in claimed.chars() {
            if agent.chars().count() >= MAX_AGENT_CHARS {
                break;
            }
            agent.push(c);
        }
        agent
    });
    NewExperience {
        task: std::mem::take(&mut shared.task),
        resource: std::mem::take(&mut shared.resource),
        result: std::mem::take(&mut shared.result),
        score: Some(i64::from(shared.score)),
        content: shared.content.take(),
        content_type: shared.content_type.take(),
        agent_id,
        submitted_by: Some(row.author.clone()),
        session_key: None,
        source: Some(Source::Hub),
        confidence: None,
    }
}

/// Applies one page: skipped rows logged, rows over their author's allowance held back, the
/// rest gated by this daemon (its redaction, limits and quarantine; a refusal is a skip with
/// its reason) and written, with the cursor, in one transaction.
fn apply(round: &Round<'_>, page: Page, up_to: Option<i64>, released: Vec<(String, String)>) -> anyhow::Result<()> {
    let Round { engine, hub_sync, reader, settings, .. } = *round;
    let now = now_ms();
    let config = &settings.config;
    let mut skipped: Vec<SkipRecord> = page
        .skipped
        .into_iter()
        .map(|skipped| SkipRecord {
            author: skipped.author,
            hub_id: skipped.id,
            hub_seq: skipped.hub_seq,
            reason: skipped.reason,
            at_ms: now,
        })
        .collect();
    let mut held = Vec::new();
    let mut used: HashMap<String, (u64, u64)> = HashMap::new();
    let mut charged: HashMap<String, (u64, u64)> = HashMap::new();
    let mut rows = page.rows;
    let mut gated: Vec<Option<Gated>> = Vec::with_capacity(rows.len());
    let mut take = Vec::with_capacity(rows.len());
    for row in &mut rows {
        if row.own || row.deleted {
            gated.push(None);
            take.push(!row.own);
            continue;
        }
        let bytes = row.bytes;
        let used = match used.get_mut(&row.author) {
            Some(used) => used,
            None => used.entry(row.author.clone()).or_insert(reader.hub_quota_used(&row.author, now)?),
        };
        if used.0 + 1 > config.member_rows_per_day || used.1 + bytes > config.member_bytes_per_day {
            held.push(Held {
                author: row.author.clone(),
                hub_id: row.shared.id.clone(),
                hub_seq: row.hub_seq,
                why: format!(
                    "over {}'s allowance here of {} changes or {} bytes a day",
                    row.author, config.member_rows_per_day, config.member_bytes_per_day
                ),
            });
            gated.push(None);
            take.push(false);
            continue;
        }
        used.0 += 1;
        used.1 += bytes;
        let charge = charged.entry(row.author.clone()).or_default();
        charge.0 += 1;
        charge.1 += bytes;
        match kb_core::gate(proposed(row), engine.policy()) {
            Ok(ok) => {
                gated.push(Some(ok));
                take.push(true);
            }
            Err(error) => {
                tracing::warn!(id = %row.shared.id, author = %row.author, "hub: a teammate's experience was refused by the gate: {error}");
                skipped.push(SkipRecord {
                    author: Some(row.author.clone()),
                    hub_id: Some(row.shared.id.clone()),
                    hub_seq: row.hub_seq,
                    reason: format!("refused by this daemon's gate: {error}"),
                    at_ms: now,
                });
                gated.push(None);
                take.push(false);
            }
        }
    }
    for skip in &skipped {
        tracing::warn!(hub_seq = skip.hub_seq, author = ?skip.author, id = ?skip.hub_id, "hub: skipped a row: {}", skip.reason);
    }
    if !held.is_empty() {
        tracing::warn!(held = held.len(), "hub: changes over a member's daily allowance were held back");
    }
    let items: Vec<Incoming<'_>> = rows
        .iter()
        .zip(&gated)
        .zip(&take)
        .filter(|(_, take)| **take)
        .map(|((row, gated), _)| Incoming {
            hub_id: &row.shared.id,
            hub_seq: row.hub_seq,
            author: &row.author,
            machine: &row.shared.machine,
            gated: gated.as_ref(),
        })
        .collect();
    let batch = PullBatch {
        items,
        skipped,
        held,
        released,
        charged: charged.into_iter().map(|(author, (rows, bytes))| (author, rows, bytes)).collect(),
        up_to,
        now_ms: now,
    };
    let mut store = engine.lock_writer();
    let (applied, _, created) = store.apply_pull(&batch)?;
    engine.after_write(&mut store, &created);
    drop(store);
    let n = applied.inserted + applied.updated + applied.merged + applied.deleted;
    hub_sync.count_pulled(n as u64);
    if n > 0 || applied.conflicts > 0 || applied.hidden > 0 {
        tracing::info!(?applied, ?up_to, "hub: pulled the team's changes");
    }
    Ok(())
}
