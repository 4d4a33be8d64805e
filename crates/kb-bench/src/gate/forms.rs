//! `kb-bench gate`'s table of catalogue secrets leaked per path and per form (plain, JSON,
//! nested JSON, `\u`-escaped, URL-encoded, tool arguments, and round 26's base64, hex, base32,
//! entities, escapes, quoted-printable, fullwidth, invisible characters, selector smuggling, and
//! round 27's reversed, rot13, spaced out, line-broken, concatenated, split across `resource` and
//! `result`: `Form::ALL`): the same code the daemon runs on each path, in this process. The goal is 0
//! everywhere. And the other side: how many ordinary texts of the project's benign sets and
//! search corpora redaction changes, in each form.

use std::collections::BTreeMap;
use std::path::Path;

use kb_core::redact::forms::{Form, survives};
use kb_core::{GatePolicy, NewExperience, gate};
use serde::Serialize;
use serde_json::{Value, json};

use super::CatalogueEntry;

/// The paths a text takes out of the user's hands, as the daemon runs them.
pub const PATHS: [&str; 3] = ["submit/import", "metadata", "extraction"];

#[derive(Debug, Default, Serialize)]
pub struct Cell {
    pub leaked: usize,
    pub total: usize,
    /// The formats that leaked (`format: stored text`), for the report.
    pub leaks: Vec<String>,
}

/// Leaks by path, then by form.
pub type Table = BTreeMap<&'static str, BTreeMap<&'static str, Cell>>;

pub fn run(catalogue: &[CatalogueEntry], policy: &GatePolicy) -> anyhow::Result<Table> {
    let mut table = Table::new();
    for (entry_idx, entry) in catalogue.iter().enumerate() {
        for form in Form::ALL {
            let encoded = form.encode(&entry.text);
            let mut record = |path: &'static str, stored: &str| {
                let cell = table.entry(path).or_default().entry(form.name()).or_default();
                cell.total += 1;
                if entry.secrets.iter().any(|secret| survives(stored, secret)) {
                    cell.leaked += 1;
                    let excerpt: String = stored.chars().take(300).collect();
                    cell.leaks.push(format!("{}: {excerpt:?}", entry.format));
                }
            };
            // `kb.submit` and `kb.import` gate every text field alike; each entry goes in one of
            // them in turn (content when it is too long for the others).
            let mut new = NewExperience {
                task: "note from a session".to_owned(),
                resource: "kb-bench gate".to_owned(),
                result: "see content".to_owned(),
                ..NewExperience::default()
            };
            if let Some((first, rest)) = form.fields(&entry.text) {
                // Split across two fields: the start in `resource`, the rest in `result`.
                new.resource = first;
                new.result = rest;
            } else {
                match entry_idx % 4 {
                    0 if encoded.chars().count() <= 2_000 => new.task = encoded.clone(),
                    1 if encoded.chars().count() <= 2_000 => new.resource = encoded.clone(),
                    2 if encoded.chars().count() <= 8_000 => new.result = encoded.clone(),
                    _ => new.content = Some(encoded.clone()),
                }
            }
            let gated = gate(new, policy)?;
            record("submit/import", &super::stored_text(&gated.experience));

            // Metadata holds one line of at most 256 characters: the encoded text when it fits
            // (not split across fields: each identifier is read on its own).
            let one_line: String = encoded.replace(['\n', '\r', '\t'], " ");
            if one_line.chars().count() <= 256 && form.fields(&entry.text).is_none() {
                let mut new = NewExperience {
                    task: "metadata check".to_owned(),
                    resource: "kb-bench gate".to_owned(),
                    result: "metadata check".to_owned(),
                    ..NewExperience::default()
                };
                match entry_idx % 4 {
                    0 => new.submitted_by = Some(one_line),
                    1 => new.agent_id = Some(one_line),
                    2 => new.session_key = Some(one_line),
                    _ => new.content_type = Some(one_line),
                }
                let gated = gate(new, policy)?;
                record("metadata", &super::stored_text(&gated.experience));
            }

            record("extraction", &extraction_transcript(form, &entry.text, &encoded));
        }
    }
    Ok(table)
}

/// A session that carries the text in a user message, a tool call's arguments and a tool's
/// output, read, redacted and rendered as the daemon does before it sends it to the LLM.
pub fn session_with(form: Form, plain: &str, encoded: &str) -> Vec<Value> {
    // A tool call's arguments are a JSON object: the text goes in as a value, and in the tool
    // arguments form as the command of a structured call.
    let arguments = match form {
        Form::ToolArguments => json!({"command": plain, "cwd": "/srv/app", "env": {"NOTE": plain}}),
        _ => json!({"command": encoded}),
    };
    vec![
        json!({"role": "user", "content": encoded, "timestamp": 1}),
        json!({"role": "assistant", "timestamp": 2, "content": [
            {"type": "toolCall", "id": "c1", "name": "exec", "arguments": arguments}]}),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "exec", "isError": true, "timestamp": 3,
               "content": [{"type": "text", "text": encoded}]}),
    ]
}

fn extraction_transcript(form: Form, plain: &str, encoded: &str) -> String {
    let mut turns = kb_extract::parse_messages(&session_with(form, plain, encoded));
    kb_extract::redact_turns(&mut turns);
    kb_extract::render(&turns, usize::MAX).text
}

pub fn print(table: &Table) {
    println!("secrets leaked per path and form (of the catalogue's formats; goal 0):");
    print!("  {:<16}", "form");
    for path in PATHS {
        print!(" {path:>16}");
    }
    println!();
    for form in Form::ALL {
        print!("  {:<16}", form.name());
        for path in PATHS {
            match table.get(path).and_then(|forms| forms.get(form.name())) {
                Some(cell) => print!(" {:>16}", format!("{} of {}", cell.leaked, cell.total)),
                None => print!(" {:>16}", "-"),
            }
        }
        println!();
    }
    println!(
        "  (hub push runs the submit gate in strict mode on what is shared: the submit/import column; \
         through the daemon, tests/tests/gate.rs and extraction.rs)"
    );
    for (path, forms) in table {
        for (form, cell) in forms {
            for leak in &cell.leaks {
                println!("  LEAKED {path} / {form}: {leak}");
            }
        }
    }
}

/// Ordinary texts changed by redaction, by set, then by form (`changed`, `total`), and the first
/// few changed in plain form (`set: text -> redacted`), to be read.
#[derive(Debug, Default, Serialize)]
pub struct Benign {
    pub by_set: BTreeMap<String, BTreeMap<&'static str, (usize, usize)>>,
    pub examples: Vec<String>,
}

/// The project's sets of ordinary text: the benign sets of the gate (`sets`, name and texts) and
/// the search corpora of `data/` (every string field of each row but its id).
pub fn benign(sets: &[(&str, Vec<String>)], corpora_dir: &Path) -> anyhow::Result<Benign> {
    let mut all: Vec<(String, Vec<String>)> =
        sets.iter().map(|(name, texts)| ((*name).to_owned(), texts.clone())).collect();
    all.extend(corpora(corpora_dir)?);
    let mut benign = Benign::default();
    for (name, texts) in all {
        let by_form = benign.by_set.entry(name.clone()).or_default();
        let mut n_examples = 0;
        for text in &texts {
            for form in Form::ALL {
                let encoded = form.encode(text);
                let (redacted, _) = kb_core::redact::redact(&encoded);
                let count = by_form.entry(form.name()).or_default();
                count.1 += 1;
                if redacted != encoded {
                    count.0 += 1;
                    if form == Form::Plain && n_examples < 5 {
                        n_examples += 1;
                        let excerpt = |text: &str| text.chars().take(160).collect::<String>();
                        benign.examples.push(format!("{name}: {:?} -> {:?}", excerpt(text), excerpt(&redacted)));
                    }
                }
            }
        }
    }
    Ok(benign)
}

pub fn print_benign(benign: &Benign) {
    println!("ordinary texts changed by redaction, per set and form:");
    print!("  {:<30}", "set");
    for form in Form::ALL {
        print!(" {:>15}", form.name());
    }
    println!();
    for (name, by_form) in &benign.by_set {
        print!("  {name:<30}");
        for form in Form::ALL {
            let (changed, total) = by_form.get(form.name()).copied().unwrap_or_default();
            print!(" {:>15}", format!("{changed} of {total}"));
        }
        println!();
    }
    for example in &benign.examples {
        println!("  CHANGED {example}");
    }
}

/// The search corpora of `data/`, each as a named set of texts (every string field of a row
/// but its id).
pub fn corpora(corpora_dir: &Path) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut all = Vec::new();
    for corpus in ["english-experiences", "debian-en", "debian-zh", "cmrc-trial-chunks", "conv-en", "lme-oracle"] {
        let path = corpora_dir.join(corpus).join("corpus.jsonl");
        let Ok(data) = std::fs::read_to_string(&path) else { continue };
        let mut texts = Vec::new();
        for line in data.lines().filter(|line| !line.trim().is_empty()) {
            let row: Value = serde_json::from_str(line)?;
            let fields: Vec<&str> = row
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(name, _)| name.as_str() != "id")
                .filter_map(|(_, value)| value.as_str())
                .collect();
            texts.push(fields.join("\n"));
        }
        all.push((format!("corpus {corpus}"), texts));
    }
    Ok(all)
}
