//! The gate against the sets in `tests/data` (see `tests/data/README.md`): every fake secret of
//! the catalogue redacted, in the text fields and in the metadata; benign technical texts left
//! untouched; at least 95% of the attacks held and at most 2% of benign talk about prompts
//! flagged. Every secret also in every form a text travels in (JSON, nested JSON, `\u`-escaped,
//! URL-encoded, a tool call's arguments, and round 26's base64, hex, base32, entities, escapes,
//! quoted-printable, fullwidth, invisible characters and selector smuggling, round 27's
//! reversed, rot13, spaced out, line-broken, concatenated and split across two fields:
//! `Form::ALL`) and every field. `kb-bench gate` prints the same
//! figures with the gate's cost.

use kb_core::redact::forms::{Form, survives};
use kb_core::redact::redact;
use kb_core::{GatePolicy, NewExperience, Status, gate};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct CatalogueEntry {
    format: String,
    text: String,
    secrets: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Text {
    text: String,
    #[serde(default)]
    kind: String,
}

fn lines<T: for<'de> Deserialize<'de>>(data: &str) -> Vec<T> {
    data.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

fn catalogue() -> Vec<CatalogueEntry> {
    lines(include_str!("data/redaction_catalogue.jsonl"))
}

fn submission(text: &str) -> NewExperience {
    NewExperience {
        task: "note".to_owned(),
        resource: "gate sets".to_owned(),
        result: text.to_owned(),
        ..NewExperience::default()
    }
}

#[test]
fn every_catalogued_secret_is_redacted_and_redaction_is_idempotent() {
    let catalogue = catalogue();
    assert!(catalogue.len() >= 100, "the catalogue must hold at least 100 formats");
    let mut missed = Vec::new();
    for entry in &catalogue {
        let gated = gate(submission(&entry.text), &GatePolicy::default()).unwrap();
        let stored = &gated.experience.result;
        if entry.secrets.iter().any(|secret| stored.contains(secret.as_str())) {
            missed.push(format!("{}: {stored:?}", entry.format));
        }
        assert!(!gated.redactions.is_empty(), "{}: nothing reported", entry.format);
        let (again, found_again) = redact(stored);
        assert_eq!(again, stored.as_str(), "{}: a second pass changed the text", entry.format);
        assert!(found_again.is_empty(), "{}: a second pass found {found_again:?}", entry.format);
    }
    assert!(missed.is_empty(), "{} of {} secrets survived:\n{}", missed.len(), catalogue.len(), missed.join("\n"));
}

#[test]
fn secrets_in_metadata_fields_are_redacted() {
    let mut n_checked = 0;
    for (entry_idx, entry) in catalogue().iter().enumerate() {
        // Identifiers are one line of at most 256 characters.
        let one_line: String = entry.text.replace(['\n', '\r', '\t'], " ").chars().take(256).collect();
        let secrets: Vec<&String> = entry.secrets.iter().filter(|secret| one_line.contains(secret.as_str())).collect();
        if secrets.is_empty() {
            continue;
        }
        let mut new = submission("metadata");
        match entry_idx % 4 {
            0 => new.submitted_by = Some(one_line),
            1 => new.agent_id = Some(one_line),
            2 => new.session_key = Some(one_line),
            _ => new.content_type = Some(one_line),
        }
        let gated = gate(new, &GatePolicy::default()).unwrap();
        let metadata = [&gated.experience.submitted_by, &gated.experience.agent_id, &gated.experience.session_key]
            .into_iter()
            .chain([&gated.experience.content_type])
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        for secret in secrets {
            assert!(!metadata.contains(secret.as_str()), "{}: survived in metadata {metadata:?}", entry.format);
        }
        n_checked += 1;
    }
    assert!(n_checked >= 100, "only {n_checked} catalogue entries fit an identifier");
    // An address in `submitted_by` is personal data like any other.
    let mut new = submission("metadata");
    new.submitted_by = Some("alice.smith@example.com".to_owned());
    let gated = gate(new, &GatePolicy::default()).unwrap();
    assert_eq!(gated.experience.submitted_by.as_deref(), Some("[EMAIL]"));
}

/// Issue 24: a secret in a tool call's arguments or in JSON given as content reached the
/// extraction endpoint and the store behind escapes (`\n`, `\uXXXX`) the rules did not see
/// through.
#[test]
fn every_catalogued_secret_is_redacted_in_every_form_and_every_field() {
    let mut leaked = Vec::new();
    let mut n_checked = 0;
    for entry in &catalogue() {
        for form in Form::ALL {
            let encoded = form.encode(&entry.text);
            // Split across two fields (attack round 27): the start in `resource`, the rest in
            // `result`, each part in the field where the other is not.
            if let Some((first, rest)) = form.fields(&entry.text) {
                let mut new = submission("fields");
                new.resource = first;
                new.result = rest;
                if new.resource.chars().count() > 2_000 || new.result.chars().count() > 8_000 {
                    continue;
                }
                let gated = gate(new, &GatePolicy::default()).unwrap();
                let stored = stored_text(&gated.experience);
                n_checked += 1;
                if entry.secrets.iter().any(|secret| survives(&stored, secret)) {
                    leaked.push((form, format!("{} / {}: {stored:?}", entry.format, form.name())));
                }
                let again = gate(gated.experience.clone(), &GatePolicy::default()).unwrap();
                assert_eq!(
                    stored_text(&again.experience),
                    stored,
                    "{} / {}: not idempotent",
                    entry.format,
                    form.name()
                );
                continue;
            }
            let one_line: String = encoded.replace(['\n', '\r', '\t'], " ");
            for field in 0..8 {
                let mut new = submission("fields");
                let text = match field {
                    0 => &mut new.task,
                    1 => &mut new.resource,
                    2 => &mut new.result,
                    3 => new.content.insert(String::new()),
                    4 => new.submitted_by.insert(String::new()),
                    5 => new.agent_id.insert(String::new()),
                    6 => new.session_key.insert(String::new()),
                    _ => new.content_type.insert(String::new()),
                };
                // Metadata is one line of at most 256 characters; task and resource 2,000. A
                // line-broken token on one line is a token split by spaces: another form.
                if field >= 4 && form == Form::LineBroken {
                    continue;
                }
                let value = if field >= 4 { &one_line } else { &encoded };
                let limit = [2_000, 2_000, 8_000, 1_000_000, 256, 256, 256, 256][field];
                if value.chars().count() > limit {
                    continue;
                }
                text.clone_from(value);
                let gated = gate(new, &GatePolicy::default()).unwrap();
                let stored = stored_text(&gated.experience);
                n_checked += 1;
                for secret in &entry.secrets {
                    if survives(&stored, secret) {
                        leaked.push((form, format!("{} / {} / field {field}: {stored:?}", entry.format, form.name())));
                    }
                }
                let (again, found_again) = redact(&stored);
                assert_eq!(again, stored, "{} / {}: a second pass changed the text", entry.format, form.name());
                assert!(
                    found_again.is_empty(),
                    "{} / {}: a second pass found {found_again:?}",
                    entry.format,
                    form.name()
                );
            }
        }
    }
    assert!(n_checked >= 18_000, "only {n_checked} texts checked");
    // Round 27's forms that still leak some of the catalogue's formats (a name or flag cut from
    // its value, quotes inside a concatenated word, a pgpass line or URL cut between its
    // parts): at most as many as when they were added, to be brought to 0. The GitHub, OpenAI
    // and AWS formats the attack used go in every one (`redact/readings_tests.rs`).
    let ceilings = [
        (Form::Reversed, 8),
        (Form::SpacedOut, 8),
        (Form::LineBroken, 44),
        (Form::Concatenated, 128),
        (Form::AcrossFields, 33),
    ];
    for (form, ceiling) in ceilings {
        let n_leaked = leaked.iter().filter(|(leaked_form, _)| *leaked_form == form).count();
        eprintln!("{}: {n_leaked} leaks (at most {ceiling})", form.name());
        assert!(n_leaked <= ceiling, "{}: {n_leaked} leaks, more than {ceiling}", form.name());
    }
    let leaked: Vec<&String> = leaked
        .iter()
        .filter(|(form, _)| ceilings.iter().all(|(ceiling_form, _)| ceiling_form != form))
        .map(|(_, leak)| leak)
        .collect();
    assert!(
        leaked.is_empty(),
        "{} leaks:\n{}",
        leaked.len(),
        leaked.iter().map(|leak| leak.as_str()).collect::<Vec<_>>().join("\n")
    );
}

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

/// Redaction's views must not invent secrets in ordinary text: the benign set, in every form
/// (JSON, escapes, percent-encoding), comes out as it went in.
#[test]
fn benign_technical_texts_are_left_alone_in_every_form() {
    let benign: Vec<Text> = lines(include_str!("data/redaction_benign.jsonl"));
    let mut wrongly: Vec<String> = Vec::new();
    for text in &benign {
        for form in Form::ALL {
            let encoded = form.encode(&text.text);
            let (redacted, found) = redact(&encoded);
            if redacted != encoded {
                wrongly.push(format!("{}: {encoded:?} -> {redacted:?} ({found:?})", form.name()));
            }
        }
    }
    assert!(wrongly.is_empty(), "{} redacted wrongly:\n{}", wrongly.len(), wrongly.join("\n"));
}

#[test]
fn benign_technical_texts_are_left_alone() {
    let benign: Vec<Text> = lines(include_str!("data/redaction_benign.jsonl"));
    assert!(benign.len() >= 100);
    let mut wrongly: Vec<String> = Vec::new();
    for text in &benign {
        let (redacted, found) = redact(&text.text);
        if redacted != text.text {
            wrongly.push(format!("{:?} -> {redacted:?} ({found:?})", text.text));
        }
    }
    assert!(wrongly.is_empty(), "{} of {} redacted wrongly:\n{}", wrongly.len(), benign.len(), wrongly.join("\n"));
}

/// The sets by round: the first one the patterns were tuned on, then two written later as
/// held-out checks (each measured before the detector was changed for it: see
/// `tests/data/README.md`). Each must hold on its own.
const INJECTION_ROUNDS: &[(&str, &str, &str)] = &[
    ("first", include_str!("data/injection_attacks.jsonl"), include_str!("data/injection_benign.jsonl")),
    (
        "held-out 1",
        include_str!("data/injection_heldout_attacks.jsonl"),
        include_str!("data/injection_heldout_benign.jsonl"),
    ),
    (
        "held-out 2",
        include_str!("data/injection_heldout2_attacks.jsonl"),
        include_str!("data/injection_heldout2_benign.jsonl"),
    ),
    (
        "held-out 3",
        include_str!("data/injection_heldout3_attacks.jsonl"),
        include_str!("data/injection_heldout3_benign.jsonl"),
    ),
];

/// Whether the phrasing detector flags `text` (the risky-action check, which also holds some of
/// these texts, is measured on its own sets in `risky_sets.rs`).
fn flagged_as_injection(text: &str) -> bool {
    let gated = gate(submission(text), &GatePolicy::default()).unwrap();
    gated.status == Status::Pending && gated.flags.iter().any(|flag| flag == "prompt_injection")
}

#[test]
fn injection_detection_holds_attacks_and_spares_talk_about_prompts() {
    for (round, attacks, benign) in INJECTION_ROUNDS {
        let attacks: Vec<Text> = lines(attacks);
        let benign: Vec<Text> = lines(benign);
        assert!(attacks.len() >= 25 && benign.len() >= 25, "{round}: too few texts");
        let missed: Vec<String> = attacks
            .iter()
            .filter(|attack| !flagged_as_injection(&attack.text))
            .map(|attack| format!("[{}] {:?}", attack.kind, attack.text))
            .collect();
        let flagged: Vec<&str> =
            benign.iter().filter(|text| flagged_as_injection(&text.text)).map(|text| text.text.as_str()).collect();
        let held_rate = 1.0 - missed.len() as f64 / attacks.len() as f64;
        let flagged_rate = flagged.len() as f64 / benign.len() as f64;
        eprintln!("{round}: attacks held {:.1}%, benign flagged {:.1}%", held_rate * 100.0, flagged_rate * 100.0);
        assert!(held_rate >= 0.95, "{round}: only {:.1}% held; missed:\n{}", held_rate * 100.0, missed.join("\n"));
        assert!(flagged_rate <= 0.02, "{round}: {:.1}% flagged:\n{}", flagged_rate * 100.0, flagged.join("\n"));
    }
}
