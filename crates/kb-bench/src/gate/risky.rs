//! The risky-action check on its sets, as the gate decides it (the rules confirmed by the learned
//! score, or the learned check alone: `kb_core::risky`, `kb_core::risky::learned`) and by the
//! rules alone: risky experiences held and ordinary ones flagged, per set (development, every
//! blind part, marked by whether the learned check was trained on it, the session-27 training
//! sets, the tldr pages, registry packages' READMEs, the injection and redaction checks' benign
//! sets, the search corpora of `data/`). `tests/risky_sets.rs` in kb-core asserts the stable ones.

use std::path::{Path, PathBuf};

use kb_core::gate::holds_risky_set_text;
use kb_core::risky::is_risky;
use serde::{Deserialize, Serialize};

/// The sets, read when the benchmark runs (from the source tree it was built in).
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../kb-core/tests/data")
}

#[derive(Debug, Deserialize)]
struct Labelled {
    text: String,
    #[serde(default)]
    label: String,
}

/// What the learned check's model file says it was trained on (`learned_risky.json`).
#[derive(Debug, Default, Deserialize)]
struct Trained {
    #[serde(default)]
    blinds_trained: Vec<usize>,
}

/// One set: risky texts held of those labelled risky, ordinary texts flagged of the rest, by the
/// gate and by the rules alone.
#[derive(Debug, Default, Serialize)]
pub struct SetCount {
    pub name: String,
    pub risky_held: usize,
    pub risky_total: usize,
    pub ordinary_flagged: usize,
    pub ordinary_total: usize,
    pub rules_risky_held: usize,
    pub rules_ordinary_flagged: usize,
    pub flagged_examples: Vec<String>,
}

fn lines(data: &str) -> anyhow::Result<Vec<Labelled>> {
    data.lines().filter(|line| !line.trim().is_empty()).map(|line| Ok(serde_json::from_str(line)?)).collect()
}

fn read(name: &str) -> anyhow::Result<Option<Vec<Labelled>>> {
    match std::fs::read_to_string(data_dir().join(name)) {
        Ok(data) => Ok(Some(lines(&data)?)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(anyhow::anyhow!("reading {name}: {error}")),
    }
}

fn texts(set: &[Labelled]) -> Vec<&str> {
    set.iter().map(|entry| entry.text.as_str()).collect()
}

fn count(name: &str, risky: &[&str], ordinary: &[&str]) -> SetCount {
    let mut set = SetCount { name: name.to_owned(), ..SetCount::default() };
    set.risky_total = risky.len();
    set.risky_held = risky.iter().filter(|text| holds_risky_set_text(text)).count();
    set.rules_risky_held = risky.iter().filter(|text| is_risky(text)).count();
    set.ordinary_total = ordinary.len();
    set.rules_ordinary_flagged = ordinary.iter().filter(|text| is_risky(text)).count();
    for text in ordinary {
        if holds_risky_set_text(text) {
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
    let relabelled: Vec<String> =
        read("risky_in_benign_sets.jsonl")?.unwrap_or_default().into_iter().map(|entry| entry.text).collect();
    let trained: Trained = serde_json::from_str(&std::fs::read_to_string(data_dir().join("learned_risky.json"))?)?;
    let mut parts =
        vec![("development (EN+ZH)".to_owned(), "risky_dev.jsonl".to_owned(), "ordinary_dev.jsonl".to_owned())];
    for round in 1.. {
        let suffix = if round == 1 { String::new() } else { round.to_string() };
        let (risky, ordinary) = (format!("risky_blind{suffix}.jsonl"), format!("ordinary_blind{suffix}.jsonl"));
        if !data_dir().join(&risky).exists() {
            break;
        }
        let how = if trained.blinds_trained.contains(&round) { "trained on" } else { "NOT trained on" };
        parts.push((format!("round-{round} blind, {how} (EN+ZH)"), risky, ordinary));
    }
    for part in 'a'..='z' {
        let (risky, ordinary) = (format!("risky_train27{part}.jsonl"), format!("ordinary_train27{part}.jsonl"));
        if data_dir().join(&ordinary).exists() {
            parts.push((format!("training set 27{part}"), risky, ordinary));
        }
    }
    let mut out = Vec::new();
    for (name, risky, ordinary) in parts {
        let (risky, ordinary) = (read(&risky)?.unwrap_or_default(), read(&ordinary)?.unwrap_or_default());
        out.push(count(&name, &texts(&risky), &texts(&ordinary)));
    }
    for (name, file) in [
        ("tldr pages (CC-BY-4.0)", "tldr_commands.jsonl"),
        ("registry READMEs 1 (PyPI, npm)", "registry_docs.jsonl"),
        ("registry READMEs 2 (PyPI, npm)", "registry_docs_2.jsonl"),
    ] {
        let labelled = read(file)?.unwrap_or_default();
        let (risky, ordinary): (Vec<&Labelled>, Vec<&Labelled>) =
            labelled.iter().partition(|entry| entry.label.starts_with("risky:"));
        let risky: Vec<&str> = risky.iter().map(|entry| entry.text.as_str()).collect();
        let ordinary: Vec<&str> = ordinary.iter().map(|entry| entry.text.as_str()).collect();
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

pub fn print(sets: &[SetCount]) {
    println!(
        "risky-action check (the gate: a rule confirmed by the learned score, or the learned check; in brackets the \
         rules alone): risky held / ordinary flagged, per set"
    );
    let percent = |part: usize, total: usize| if total == 0 { 0.0 } else { part as f64 * 100.0 / total as f64 };
    for set in sets {
        println!(
            "  {:<40} risky held {:>3} of {:>3} ({:>5.1}%) [{:>5.1}%]  ordinary flagged {:>3} of {:>5} ({:.2}%) [{:.2}%]",
            set.name,
            set.risky_held,
            set.risky_total,
            percent(set.risky_held, set.risky_total),
            percent(set.rules_risky_held, set.risky_total),
            set.ordinary_flagged,
            set.ordinary_total,
            percent(set.ordinary_flagged, set.ordinary_total),
            percent(set.rules_ordinary_flagged, set.ordinary_total)
        );
        for example in &set.flagged_examples {
            println!("    FLAGGED {example:?}");
        }
    }
}
