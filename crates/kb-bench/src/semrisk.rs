//! `kb-bench semrisk`: would a linear classifier on the daemon's own embeddings hold risky
//! experiences that the rules (`kb_core::risky`) miss? Embeds every labelled set of the
//! risky-action check as the daemon embeds an experience (`semantic::embedding_text`, the model's
//! passage prefix), then leaves one set out at a time: a logistic regression is trained on the
//! others, its threshold chosen on their out-of-fold scores for at most 1% ordinary flagged, and
//! the left-out set is scored by the rules alone, the classifier alone, and rules OR classifier.

mod logistic;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use kb_core::risky::is_risky;
use kb_embed::{Embedder as _, FastEmbedder, LoadOptions, ModelSpec};
use serde::Deserialize;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../kb-core/tests/data");
/// Folds of the out-of-fold scores the threshold is chosen on.
const FOLDS: usize = 5;
/// Ordinary texts flagged at most, on the training sets' out-of-fold scores.
const FLAG_SHARE: f64 = 0.01;

pub struct Options {
    pub model_dir: PathBuf,
    pub onnxruntime: PathBuf,
    pub quantize: bool,
    /// Where the vectors are kept between runs (keyed by model id and text).
    pub cache: PathBuf,
    /// Write the weights trained on every set here.
    pub write_weights: Option<PathBuf>,
    pub l2: f64,
    pub balance_sets: bool,
}

#[derive(Debug, Deserialize)]
struct Line {
    text: String,
    #[serde(default)]
    label: String,
}

/// One labelled set: texts with risky = true.
struct Set {
    name: &'static str,
    items: Vec<(String, bool)>,
}

fn read(file: &str) -> anyhow::Result<Vec<Line>> {
    let path = Path::new(DATA).join(file);
    let data = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    data.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).with_context(|| format!("{file}: {line}")))
        .collect()
}

/// The sets, as `risky_sets.rs` and `kb-bench gate` read them.
fn sets() -> anyhow::Result<Vec<Set>> {
    let mut out = Vec::new();
    for (name, risky, ordinary) in [
        ("development", "risky_dev.jsonl", "ordinary_dev.jsonl"),
        ("blind 1", "risky_blind.jsonl", "ordinary_blind.jsonl"),
        ("blind 2", "risky_blind2.jsonl", "ordinary_blind2.jsonl"),
        ("blind 3", "risky_blind3.jsonl", "ordinary_blind3.jsonl"),
        ("blind 4", "risky_blind4.jsonl", "ordinary_blind4.jsonl"),
        ("blind 5", "risky_blind5.jsonl", "ordinary_blind5.jsonl"),
        ("blind 6", "risky_blind6.jsonl", "ordinary_blind6.jsonl"),
        ("blind 7", "risky_blind7.jsonl", "ordinary_blind7.jsonl"),
        ("blind 8", "risky_blind8.jsonl", "ordinary_blind8.jsonl"),
        ("blind 9", "risky_blind9.jsonl", "ordinary_blind9.jsonl"),
        ("blind 10", "risky_blind10.jsonl", "ordinary_blind10.jsonl"),
    ] {
        let mut items: Vec<(String, bool)> = read(risky)?.into_iter().map(|line| (line.text, true)).collect();
        items.extend(read(ordinary)?.into_iter().map(|line| (line.text, false)));
        out.push(Set { name, items });
    }
    for (name, files) in [
        ("tldr pages", &["tldr_commands.jsonl"][..]),
        ("registry READMEs", &["registry_docs.jsonl", "registry_docs_2.jsonl"][..]),
    ] {
        let mut items = Vec::new();
        for file in files {
            items.extend(read(file)?.into_iter().map(|line| {
                let risky = line.label.starts_with("risky:");
                (line.text, risky)
            }));
        }
        out.push(Set { name, items });
    }
    let relabelled: Vec<String> = read("risky_in_benign_sets.jsonl")?.into_iter().map(|line| line.text).collect();
    let mut items = Vec::new();
    for file in [
        "injection_benign.jsonl",
        "injection_heldout_benign.jsonl",
        "injection_heldout2_benign.jsonl",
        "injection_heldout3_benign.jsonl",
        "injection_heldout4_benign.jsonl",
        "injection_heldout5_benign.jsonl",
        "injection_thirdparty_benign.jsonl",
        "redaction_benign.jsonl",
    ] {
        items.extend(read(file)?.into_iter().map(|line| {
            let risky = relabelled.contains(&line.text);
            (line.text, risky)
        }));
    }
    out.push(Set { name: "other checks' benign sets", items });
    Ok(out)
}

/// What the daemon embeds for an experience whose result is `text` (the sets are results; task
/// and resource are left empty so that no made-up words enter every vector).
fn experience_text(text: &str) -> String {
    kb_engine::semantic::embedding_text("", "", text)
}

/// FNV-1a, stable across runs and Rust versions (the cache's key).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

/// Every text's vector, from the cache where it is there and from the model otherwise.
fn embed_all(options: &Options, texts: &[String]) -> anyhow::Result<(String, HashMap<u64, Vec<f32>>)> {
    let load_options = LoadOptions { quantize: options.quantize, ..LoadOptions::default() };
    let started = Instant::now();
    let model = FastEmbedder::load_with(
        &ModelSpec::LocalDir(options.model_dir.clone()),
        Some(&options.onnxruntime),
        &load_options,
    )
    .with_context(|| format!("cannot load {}", options.model_dir.display()))?;
    let model_id = model.model_id().to_owned();
    eprintln!("[semrisk] {model_id} loaded in {:.1}s", started.elapsed().as_secs_f64());
    let mut vectors: HashMap<u64, Vec<f32>> = HashMap::new();
    if let Ok(data) = std::fs::read_to_string(&options.cache) {
        for line in data.lines() {
            let Ok((id, key, vector)) = serde_json::from_str::<(String, u64, Vec<f32>)>(line) else { continue };
            if id == model_id {
                vectors.insert(key, vector);
            }
        }
    }
    let missing: Vec<&String> = {
        let mut seen = std::collections::HashSet::new();
        texts.iter().filter(|text| !vectors.contains_key(&fnv(text)) && seen.insert(fnv(text))).collect()
    };
    eprintln!("[semrisk] {} texts, {} cached, embedding {}", texts.len(), texts.len() - missing.len(), missing.len());
    let mut cache = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&options.cache)
        .with_context(|| format!("cannot write {}", options.cache.display()))?;
    let started = Instant::now();
    for (done, chunk) in missing.chunks(64).enumerate() {
        let inputs: Vec<String> = chunk.iter().map(|text| experience_text(text)).collect();
        let refs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let embedded = model.embed(&refs).context("cannot embed")?;
        for (text, vector) in chunk.iter().zip(embedded) {
            writeln!(cache, "{}", serde_json::to_string(&(&model_id, fnv(text), &vector))?)?;
            vectors.insert(fnv(text), vector);
        }
        if done % 10 == 0 {
            eprintln!("[semrisk] {} of {} in {:.0}s", (done + 1) * 64, missing.len(), started.elapsed().as_secs_f64());
        }
    }
    Ok((model_id, vectors))
}

/// Held of risky and flagged of ordinary.
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    held: usize,
    risky: usize,
    flagged: usize,
    ordinary: usize,
}

impl Count {
    fn add(&mut self, risky: bool, caught: bool) {
        if risky {
            self.risky += 1;
            self.held += usize::from(caught);
        } else {
            self.ordinary += 1;
            self.flagged += usize::from(caught);
        }
    }

    fn cell(&self) -> String {
        let percent =
            |part: usize, total: usize| if total == 0 { f64::NAN } else { part as f64 * 100.0 / total as f64 };
        format!("{:>5.1}% / {:>5.2}%", percent(self.held, self.risky), percent(self.flagged, self.ordinary))
    }
}

/// A classifier trained on `vectors` with its threshold.
fn fit(vectors: &[&[f32]], labels: &[bool], groups: &[usize], settings: logistic::Settings) -> (logistic::Linear, f32) {
    let scores = logistic::out_of_fold(vectors, labels, groups, FOLDS, settings);
    let ordinary: Vec<f32> = scores.iter().zip(labels).filter(|&(_, &l)| !l).map(|(&s, _)| s).collect();
    let threshold = logistic::threshold_for(&ordinary, FLAG_SHARE);
    (logistic::train(vectors, labels, groups, settings), threshold)
}

pub fn run(options: &Options) -> anyhow::Result<()> {
    let sets = sets()?;
    let texts: Vec<String> = sets.iter().flat_map(|set| set.items.iter().map(|(text, _)| text.clone())).collect();
    let (model_id, vectors) = embed_all(options, &texts)?;
    let vector_of = |text: &str| vectors.get(&fnv(text)).map(Vec::as_slice).context("a text was not embedded");
    let settings = logistic::Settings { l2: options.l2, balance_sets: options.balance_sets, ..Default::default() };
    let rules: HashMap<u64, bool> = texts.iter().map(|text| (fnv(text), is_risky(text))).collect();
    println!("semantic risky-action check, leave one set out ({model_id}; threshold: at most 1% of the");
    println!(
        "training sets' ordinary texts flagged, on {FOLDS}-fold out-of-fold scores; l2 {}, {})",
        options.l2,
        if options.balance_sets { "each set weighs the same" } else { "each text weighs the same" }
    );
    println!(
        "  {:<28} {:>5} {:>6} {:>9} {:>5}  {:<18} {:<18} {:<18}",
        "left out", "risky", "ordin.", "threshold", "AUC", "rules held/flag", "classifier", "rules OR classif."
    );
    let mut totals = [Count::default(); 3];
    for (left_out, set) in sets.iter().enumerate() {
        if !set.items.iter().any(|(_, risky)| *risky) {
            bail!("{} has no risky text", set.name);
        }
        let (mut train_v, mut train_l, mut train_g) = (Vec::new(), Vec::new(), Vec::new());
        for (index, other) in sets.iter().enumerate() {
            if index != left_out {
                for (text, risky) in &other.items {
                    train_v.push(vector_of(text)?);
                    train_l.push(*risky);
                    train_g.push(index);
                }
            }
        }
        let started = Instant::now();
        let (model, threshold) = fit(&train_v, &train_l, &train_g, settings);
        let mut counts = [Count::default(); 3];
        let mut scores = Vec::new();
        for (text, risky) in &set.items {
            let by_rules = rules[&fnv(text)];
            let score = model.score(vector_of(text)?);
            scores.push(score);
            let by_model = score > threshold;
            for (count, caught) in counts.iter_mut().zip([by_rules, by_model, by_rules || by_model]) {
                count.add(*risky, caught);
            }
        }
        for (total, count) in totals.iter_mut().zip(&counts) {
            total.held += count.held;
            total.risky += count.risky;
            total.flagged += count.flagged;
            total.ordinary += count.ordinary;
        }
        let labels: Vec<bool> = set.items.iter().map(|(_, risky)| *risky).collect();
        println!(
            "  {:<28} {:>5} {:>6} {:>9.4} {:>5.3}  {:<18} {:<18} {:<18}  ({:.0}s)",
            set.name,
            counts[0].risky,
            counts[0].ordinary,
            threshold,
            logistic::auc(&scores, &labels),
            counts[0].cell(),
            counts[1].cell(),
            counts[2].cell(),
            started.elapsed().as_secs_f64()
        );
    }
    println!(
        "  {:<28} {:>5} {:>6} {:>9} {:>5}  {:<18} {:<18} {:<18}",
        "all, each left out",
        totals[0].risky,
        totals[0].ordinary,
        "",
        "",
        totals[0].cell(),
        totals[1].cell(),
        totals[2].cell()
    );
    if let Some(path) = &options.write_weights {
        let all_v: Vec<&[f32]> = texts.iter().map(|text| vector_of(text)).collect::<anyhow::Result<_>>()?;
        let all_l: Vec<bool> = sets.iter().flat_map(|set| set.items.iter().map(|(_, risky)| *risky)).collect();
        let all_g: Vec<usize> =
            sets.iter().enumerate().flat_map(|(index, set)| set.items.iter().map(move |_| index)).collect();
        let (model, threshold) = fit(&all_v, &all_l, &all_g, settings);
        let weights = serde_json::json!({
            "model_id": model_id,
            "threshold": threshold,
            "bias": model.bias,
            "weights": model.weights,
        });
        std::fs::write(path, serde_json::to_string(&weights)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("weights trained on every set written to {} (threshold {threshold:.4})", path.display());
    }
    Ok(())
}
