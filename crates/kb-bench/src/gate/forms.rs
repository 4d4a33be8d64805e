//! `kb-bench gate`'s table of catalogue secrets leaked per path and per form (plain, JSON,
//! nested JSON, `\u`-escaped, URL-encoded, tool arguments): the same code the daemon runs on each
//! path, in this process. The goal is 0 everywhere.

use std::collections::BTreeMap;

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
            match entry_idx % 4 {
                0 if encoded.chars().count() <= 2_000 => new.task = encoded.clone(),
                1 if encoded.chars().count() <= 2_000 => new.resource = encoded.clone(),
                2 if encoded.chars().count() <= 8_000 => new.result = encoded.clone(),
                _ => new.content = Some(encoded.clone()),
            }
            let gated = gate(new, policy)?;
            record("submit/import", &super::stored_text(&gated.experience));

            // Metadata holds one line of at most 256 characters: the encoded text when it fits.
            let one_line: String = encoded.replace(['\n', '\r', '\t'], " ");
            if one_line.chars().count() <= 256 {
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
