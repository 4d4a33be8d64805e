//! The risky-action check (`kb_core::risky`) on its sets: risky experiences held and ordinary
//! command-line experiences flagged, per set (development, the six rounds' blind parts, the tldr
//! pages, registry packages' READMEs, the injection and redaction checks' benign sets, the search
//! corpora of `data/`). `tests/risky_sets.rs` in kb-core asserts the stable ones.

use std::path::Path;

use kb_core::risky::is_risky;
use serde::{Deserialize, Serialize};

const RISKY_DEV: &str = include_str!("../../../kb-core/tests/data/risky_dev.jsonl");
const RISKY_BLIND: &str = include_str!("../../../kb-core/tests/data/risky_blind.jsonl");
const ORDINARY_DEV: &str = include_str!("../../../kb-core/tests/data/ordinary_dev.jsonl");
const ORDINARY_BLIND: &str = include_str!("../../../kb-core/tests/data/ordinary_blind.jsonl");
const RISKY_BLIND_3: &str = include_str!("../../../kb-core/tests/data/risky_blind3.jsonl");
const ORDINARY_BLIND_3: &str = include_str!("../../../kb-core/tests/data/ordinary_blind3.jsonl");
const RISKY_BLIND_4: &str = include_str!("../../../kb-core/tests/data/risky_blind4.jsonl");
const ORDINARY_BLIND_4: &str = include_str!("../../../kb-core/tests/data/ordinary_blind4.jsonl");
const RISKY_BLIND_5: &str = include_str!("../../../kb-core/tests/data/risky_blind5.jsonl");
const ORDINARY_BLIND_5: &str = include_str!("../../../kb-core/tests/data/ordinary_blind5.jsonl");
const RISKY_BLIND_6: &str = include_str!("../../../kb-core/tests/data/risky_blind6.jsonl");
const ORDINARY_BLIND_6: &str = include_str!("../../../kb-core/tests/data/ordinary_blind6.jsonl");
const RISKY_BLIND_7: &str = include_str!("../../../kb-core/tests/data/risky_blind7.jsonl");
const ORDINARY_BLIND_7: &str = include_str!("../../../kb-core/tests/data/ordinary_blind7.jsonl");
const RISKY_BLIND_8: &str = include_str!("../../../kb-core/tests/data/risky_blind8.jsonl");
const ORDINARY_BLIND_8: &str = include_str!("../../../kb-core/tests/data/ordinary_blind8.jsonl");
const RISKY_BLIND_9: &str = include_str!("../../../kb-core/tests/data/risky_blind9.jsonl");
const ORDINARY_BLIND_9: &str = include_str!("../../../kb-core/tests/data/ordinary_blind9.jsonl");
const RISKY_BLIND_10: &str = include_str!("../../../kb-core/tests/data/risky_blind10.jsonl");
const ORDINARY_BLIND_10: &str = include_str!("../../../kb-core/tests/data/ordinary_blind10.jsonl");
const RISKY_BLIND_2: &str = include_str!("../../../kb-core/tests/data/risky_blind2.jsonl");
const ORDINARY_BLIND_2: &str = include_str!("../../../kb-core/tests/data/ordinary_blind2.jsonl");
const TLDR: &str = include_str!("../../../kb-core/tests/data/tldr_commands.jsonl");
const REGISTRY: &str = include_str!("../../../kb-core/tests/data/registry_docs.jsonl");
const REGISTRY_2: &str = include_str!("../../../kb-core/tests/data/registry_docs_2.jsonl");
const RELABELLED: &str = include_str!("../../../kb-core/tests/data/risky_in_benign_sets.jsonl");

#[derive(Debug, Deserialize)]
struct Labelled {
    text: String,
    #[serde(default)]
    label: String,
}

/// One set: risky texts held of those labelled risky, ordinary texts flagged of the rest.
#[derive(Debug, Default, Serialize)]
pub struct SetCount {
    pub name: String,
    pub risky_held: usize,
    pub risky_total: usize,
    pub ordinary_flagged: usize,
    pub ordinary_total: usize,
    pub flagged_examples: Vec<String>,
}

fn lines(data: &str) -> anyhow::Result<Vec<Labelled>> {
    data.lines().filter(|line| !line.trim().is_empty()).map(|line| Ok(serde_json::from_str(line)?)).collect()
}

fn count(name: &str, risky: &[&str], ordinary: &[&str]) -> SetCount {
    let mut set = SetCount { name: name.to_owned(), ..SetCount::default() };
    set.risky_total = risky.len();
    set.risky_held = risky.iter().filter(|text| is_risky(text)).count();
    set.ordinary_total = ordinary.len();
    for text in ordinary {
        if is_risky(text) {
            set.ordinary_flagged += 1;
            if set.flagged_examples.len() < 5 {
                set.flagged_examples.push(text.chars().take(140).collect());
            }
        }
    }
    set
}

/// Every set; `benign` are the other checks' benign sets, `corpora_dir` the search corpora.
pub fn run(benign: &[(&str, Vec<String>)], corpora_dir: &Path) -> anyhow::Result<Vec<SetCount>> {
    let relabelled: Vec<String> = lines(RELABELLED)?.into_iter().map(|entry| entry.text).collect();
    let texts = |set: &[Labelled]| set.iter().map(|entry| entry.text.clone()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for (name, risky, ordinary) in [
        ("development (EN+ZH)", RISKY_DEV, ORDINARY_DEV),
        ("round-1 blind, spent (EN+ZH)", RISKY_BLIND, ORDINARY_BLIND),
        ("round-2 blind, spent (EN+ZH)", RISKY_BLIND_2, ORDINARY_BLIND_2),
        ("round-3 blind, spent (EN+ZH)", RISKY_BLIND_3, ORDINARY_BLIND_3),
        ("round-4 blind, spent (EN+ZH)", RISKY_BLIND_4, ORDINARY_BLIND_4),
        ("round-5 blind, spent (EN+ZH)", RISKY_BLIND_5, ORDINARY_BLIND_5),
        ("round-6 blind, spent (EN+ZH)", RISKY_BLIND_6, ORDINARY_BLIND_6),
        ("round-7 blind, spent (EN+ZH)", RISKY_BLIND_7, ORDINARY_BLIND_7),
        ("round-8 blind, spent (EN+ZH)", RISKY_BLIND_8, ORDINARY_BLIND_8),
        ("round-9 blind, spent (EN+ZH)", RISKY_BLIND_9, ORDINARY_BLIND_9),
        ("round-10 blind (EN+ZH)", RISKY_BLIND_10, ORDINARY_BLIND_10),
    ] {
        let (risky, ordinary) = (texts(&lines(risky)?), texts(&lines(ordinary)?));
        out.push(count(name, &refs(&risky), &refs(&ordinary)));
    }
    for (name, data) in [
        ("tldr pages (CC-BY-4.0)", TLDR),
        ("registry READMEs 1 (PyPI, npm)", REGISTRY),
        ("registry READMEs 2 (PyPI, npm)", REGISTRY_2),
    ] {
        let labelled = lines(data)?;
        let risky: Vec<&str> = labelled
            .iter()
            .filter(|entry| entry.label.starts_with("risky:"))
            .map(|entry| entry.text.as_str())
            .collect();
        let ordinary: Vec<&str> = labelled
            .iter()
            .filter(|entry| !entry.label.starts_with("risky:"))
            .map(|entry| entry.text.as_str())
            .collect();
        out.push(count(name, &risky, &ordinary));
    }
    let mut sets: Vec<(String, Vec<String>)> =
        benign.iter().map(|(name, texts)| ((*name).to_owned(), texts.clone())).collect();
    sets.extend(super::forms::corpora(corpora_dir)?);
    for (name, texts) in sets {
        let (risky, ordinary): (Vec<&str>, Vec<&str>) =
            texts.iter().map(String::as_str).partition(|text| relabelled.iter().any(|risky| risky == text));
        out.push(count(&name, &risky, &ordinary));
    }
    Ok(out)
}

fn refs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

pub fn print(sets: &[SetCount]) {
    println!("risky-action check (kb_core::risky): risky held / ordinary flagged, per set");
    let percent = |part: usize, total: usize| if total == 0 { 0.0 } else { part as f64 * 100.0 / total as f64 };
    for set in sets {
        println!(
            "  {:<36} risky held {:>3} of {:>3} ({:>5.1}%)  ordinary flagged {:>3} of {:>5} ({:.2}%)",
            set.name,
            set.risky_held,
            set.risky_total,
            percent(set.risky_held, set.risky_total),
            set.ordinary_flagged,
            set.ordinary_total,
            percent(set.ordinary_flagged, set.ordinary_total)
        );
        for example in &set.flagged_examples {
            println!("    FLAGGED {example:?}");
        }
    }
}
