//! `kb-bench recall-gate`: calibrates the word side of auto-recall's relevance gate
//! (`kb_engine::relevance`: a hit is shown unasked on its words when it holds at least
//! `MIN_WORDS` content words of the prompt, at least `MIN_SHARE` of them idf-weighted).
//!
//! Each development set's corpus goes into an in-process index like the daemon's (BM25 alone: the
//! gate's word side is all there is without a model). Its own questions are the prompts that
//! should recall: when BM25 puts the labelled answer in the top 3 (what auto-recall shows), that
//! answer should pass. Every other set's questions and `unrelated-queries.txt` are prompts that
//! should recall nothing: none of their top 3 should pass. Each set is also measured as a small
//! store (its first rows, the labelled answers of the questions kept), since a user's store is
//! often small and there every word is rare. The thresholds are chosen by leaving each set out:
//! on the others, the pair with the most answers passing while at most `MAX_FALSE_RECALL` of any
//! set's unrelated prompts recall something; then measured on the set left out.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Context as _;

use super::sets::{CorpusRow, QueryRow, read_jsonl};

/// What auto-recall shows at most (`hooks::RECALL_TOP_K`).
const SHOWN: usize = 3;
/// The most unrelated prompts of any training set that may recall something.
const MAX_FALSE_RECALL: f64 = 0.02;
/// Rows of a small store (the labelled answers of its questions come on top).
const SMALL_STORE: usize = 50;
/// The fewest words tried. One is not: a single shared word is never evidence (issue 25), a rule
/// the sets cannot check since none of their questions is one word long.
const MIN_WORDS: [u32; 2] = [2, 3];

/// A set's family: its name up to the first `-` (`cmrc`, `debian`, `conv`, `english`).
fn family(name: &str) -> &str {
    name.split('-').next().unwrap_or(name)
}

fn shares() -> Vec<f32> {
    (0..=20).map(|step| step as f32 * 0.05).collect()
}

/// One store's evidence: per question of its own set, the labelled answer's evidence when BM25
/// shows it; per other prompt, the evidence of each hit it shows.
struct StoreEvidence {
    /// The data set, and the store's name (the set's, marked when small).
    set: String,
    name: String,
    answers: Vec<kb_index::Evidence>,
    n_answerable: usize,
    unrelated: Vec<Vec<kb_index::Evidence>>,
}

impl StoreEvidence {
    fn rates(&self, min_words: u32, min_share: f32) -> (f64, f64) {
        let passes =
            |evidence: &kb_index::Evidence| kb_engine::relevance::words_are_evidence(*evidence, min_words, min_share);
        let true_recall =
            self.answers.iter().filter(|evidence| passes(evidence)).count() as f64 / self.n_answerable.max(1) as f64;
        let false_recall = self.unrelated.iter().filter(|hits| hits.iter().any(passes)).count() as f64
            / self.unrelated.len().max(1) as f64;
        (true_recall, false_recall)
    }
}

pub fn run(data_dir: &Path, names: &[String]) -> anyhow::Result<()> {
    let sets: Vec<(String, Vec<CorpusRow>, Vec<QueryRow>)> = names
        .iter()
        .map(|name| {
            let dir = data_dir.join(name);
            Ok((name.clone(), read_jsonl(&dir.join("corpus.jsonl"))?, read_jsonl(&dir.join("queries.jsonl"))?))
        })
        .collect::<anyhow::Result<_>>()?;
    let unrelated_path = data_dir.join("unrelated-queries.txt");
    let unrelated: Vec<String> = std::fs::read_to_string(&unrelated_path)
        .with_context(|| format!("cannot read {}", unrelated_path.display()))?
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    let mut stores = Vec::new();
    for small in [false, true] {
        for (set_idx, (name, corpus, queries)) in sets.iter().enumerate() {
            // Sets of one family (the CMRC paragraphs and their chunks, Debian in two languages)
            // share their questions' subjects: their questions are not unrelated to each other.
            let others: Vec<&str> = sets
                .iter()
                .enumerate()
                .filter(|(other_idx, (other, _, _))| *other_idx != set_idx && family(other) != family(name))
                .flat_map(|(_, (_, _, queries))| queries.iter().map(|query| query.text.as_str()))
                .chain(unrelated.iter().map(String::as_str))
                .collect();
            let label = if small { format!("{name} (small store)") } else { name.clone() };
            eprintln!("[recall-gate] {label}");
            let mut store = measure(&label, corpus, queries, &others, small)?;
            store.set = name.clone();
            stores.push(store);
        }
    }

    println!("recall gate, word side: answer shown = the labelled answer in BM25's top {SHOWN} passes;");
    println!("false recall = another set's question or an unrelated one gets any of its top {SHOWN} through");
    println!("\nleaving each set out (both store sizes of a set go out together):");
    println!("  {:<34} {:>9} {:>9} {:>14} {:>14}", "held-out set", "words", "share", "answer shown", "false recall");
    let mut chosen_pairs = Vec::new();
    for (name, _, _) in &sets {
        let training: Vec<&StoreEvidence> = stores.iter().filter(|store| store.set != *name).collect();
        let Some((min_words, min_share)) = choose(&training) else {
            println!("  {name:<34} no pair keeps false recall at {:.0}% on every other set", MAX_FALSE_RECALL * 100.0);
            continue;
        };
        chosen_pairs.push((min_words, min_share));
        for store in stores.iter().filter(|store| store.set == *name) {
            let (shown, false_recall) = store.rates(min_words, min_share);
            println!(
                "  {:<34} {min_words:>9} {min_share:>9.2} {:>13.1}% {:>13.1}%",
                store.name,
                shown * 100.0,
                false_recall * 100.0
            );
        }
    }
    println!("\nchosen in the folds (words, share): {chosen_pairs:?}");
    let (words, share) = (kb_engine::relevance::MIN_WORDS, kb_engine::relevance::MIN_SHARE);
    println!("\nshipped: at least {words} words, share {share:.2}; on every store:");
    for store in &stores {
        let (shown, false_recall) = store.rates(words, share);
        println!(
            "  {:<34} answers shown {:>5.1}% of {:>4}, false recall {:>5.1}% of {:>5}",
            store.name,
            shown * 100.0,
            store.n_answerable,
            false_recall * 100.0,
            store.unrelated.len()
        );
    }
    Ok(())
}

/// The pair with the most answers shown (mean over `training`) whose false recall stays within
/// [`MAX_FALSE_RECALL`] on every one of them; ties go to the fewer words, then the lower share.
fn choose(training: &[&StoreEvidence]) -> Option<(u32, f32)> {
    let mut best: Option<(f64, u32, f32)> = None;
    for min_words in MIN_WORDS {
        for min_share in shares() {
            let rates: Vec<(f64, f64)> = training.iter().map(|store| store.rates(min_words, min_share)).collect();
            if rates.iter().any(|(_, false_recall)| *false_recall > MAX_FALSE_RECALL) {
                continue;
            }
            let shown = rates.iter().map(|(shown, _)| shown).sum::<f64>() / rates.len().max(1) as f64;
            if best.is_none_or(|(best_shown, _, _)| shown > best_shown + 1e-9) {
                best = Some((shown, min_words, min_share));
            }
        }
    }
    best.map(|(_, min_words, min_share)| (min_words, min_share))
}

fn measure(
    name: &str,
    corpus: &[CorpusRow],
    queries: &[QueryRow],
    others: &[&str],
    small: bool,
) -> anyhow::Result<StoreEvidence> {
    let rows: Vec<&CorpusRow> = if small {
        let answers: HashSet<&str> =
            queries.iter().flat_map(|query| query.relevant.iter().map(String::as_str)).collect();
        // The first rows, and of the answers as many as keep the store small; the questions
        // whose answer is left out are not asked.
        let mut rows: Vec<&CorpusRow> = corpus.iter().take(SMALL_STORE).collect();
        rows.extend(corpus.iter().skip(SMALL_STORE).filter(|row| answers.contains(row.id.as_str())).take(SMALL_STORE));
        rows
    } else {
        corpus.iter().collect()
    };
    let stored: HashSet<&str> = rows.iter().map(|row| row.id.as_str()).collect();
    let index = kb_index::ExperienceIndex::open_in_ram().context("cannot open an in-process index")?;
    let docs: Vec<kb_index::IndexDoc<'_>> = rows
        .iter()
        .map(|row| {
            let (task, resource, result) = row.fields();
            kb_index::IndexDoc {
                id: row.id.as_str(),
                task,
                resource,
                result,
                content: None,
                score: 3,
                status: kb_core::Status::Active,
                agent_id: None,
            }
        })
        .collect();
    for batch in docs.chunks(1_000) {
        index.add_new(batch).context("cannot index the rows in process")?;
    }
    index.commit(1).context("cannot commit the in-process index")?;
    let search = |query: &str| -> anyhow::Result<Vec<kb_index::Hit>> {
        let request = kb_index::SearchRequest {
            query,
            limit: SHOWN,
            min_score: 1,
            agent_id: None,
            status: kb_core::Status::Active,
            coverage: true,
        };
        index.search(&request).with_context(|| format!("in-process search for {query:?} failed"))
    };
    let (mut answers, mut n_answerable) = (Vec::new(), 0);
    for query in queries {
        if query.text.trim().is_empty() || !query.relevant.iter().any(|id| stored.contains(id.as_str())) {
            continue;
        }
        if let Some(hit) = search(&query.text)?.into_iter().find(|hit| query.relevant.contains(&hit.id)) {
            n_answerable += 1;
            answers.push(hit.evidence);
        }
    }
    let mut unrelated = Vec::with_capacity(others.len());
    for query in others {
        if query.trim().is_empty() {
            continue;
        }
        unrelated.push(search(query)?.into_iter().map(|hit| hit.evidence).collect());
    }
    Ok(StoreEvidence { set: String::new(), name: name.to_owned(), answers, n_answerable, unrelated })
}
