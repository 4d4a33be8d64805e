//! `kb-bench quality`: retrieval quality of BM25 on labelled data (CMRC 2018 trial): each
//! corpus row is imported into a fresh daemon, each question is searched over the socket, and
//! Recall@k, Hit@k and MRR@10 are computed; the same for FTS5 as the baseline.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchParams, SearchResult, StatusResult};
use serde::{Deserialize, Serialize};

use crate::daemon::BenchDaemon;
use crate::fts5::Fts5Store;
use crate::report::{self, row};
use crate::stats::LatencySummary;

/// Results fetched per query: enough for Recall@10 and MRR@10.
const TOP_K: usize = 10;
const CUTOFFS: [usize; 3] = [1, 5, 10];
/// Items per `kb.import` request.
const IMPORT_BATCH: usize = 1_000;
/// The goal of the issue on `cmrc-trial-chunks`.
pub const GOAL_SET: &str = "cmrc-trial-chunks";
pub const GOAL_RECALL_AT_5: f64 = 0.90;

/// Every corpus row becomes an experience whose task is the text. The daemon requires a
/// resource and a result too; both get the same constant word in every experience, so they
/// add the same amount to every document's score and never change the ranking (unlike the
/// corpus id, whose digits would match numbers in the questions).
const NEUTRAL_RESOURCE: &str = "doc";
const NEUTRAL_RESULT: &str = "doc";

#[derive(Debug, Clone)]
pub struct QualityOptions {
    pub data_dir: PathBuf,
    pub sets: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct CorpusRow {
    id: String,
    text: String,
}

#[derive(Debug, Deserialize)]
struct QueryRow {
    text: String,
    relevant: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QualityReport {
    pub data_dir: String,
    pub sets: Vec<SetReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetReport {
    pub name: String,
    pub n_documents: usize,
    pub n_queries: usize,
    /// Questions whose text is blank in the data: not sent (the daemon refuses an empty query),
    /// counted as answered with nothing, for both engines.
    pub n_blank_queries: usize,
    /// Corpus rows the daemon merged into another (identical text) or refused, or held for
    /// review (suspected prompt injection: never returned by search).
    pub merged_documents: usize,
    pub rejected_documents: usize,
    pub held_documents: u64,
    pub knowhub: RetrievalScores,
    pub fts5: RetrievalScores,
    /// Recall@5 ≥ 0.90, the goal on `cmrc-trial-chunks`.
    pub goal_recall_at_5: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RetrievalScores {
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub hit_at_1: f64,
    pub hit_at_5: f64,
    pub hit_at_10: f64,
    pub mrr_at_10: f64,
    pub search: LatencySummary,
}

pub async fn run(daemon_binary: &Path, options: &QualityOptions, quiet: bool) -> anyhow::Result<QualityReport> {
    let data_dir = options
        .data_dir
        .canonicalize()
        .with_context(|| format!("cannot find the data directory {} (pass --data DIR)", options.data_dir.display()))?;
    if !quiet {
        println!();
        println!(
            "quality: BM25 alone (no embeddings), top {TOP_K} per question, min_score 1; data from {}",
            data_dir.display()
        );
        println!(
            "  each corpus row is imported as task = text, resource = {NEUTRAL_RESOURCE:?}, result = {NEUTRAL_RESULT:?} (the same in every row, so it cannot change the ranking)"
        );
        println!("  FTS5 (unicode61) gets the same rows and questions, queried the OpenClaw way (quoted words OR-ed)");
    }
    let mut sets = Vec::with_capacity(options.sets.len());
    for name in &options.sets {
        let set = measure_set(daemon_binary, &data_dir, name).await.with_context(|| format!("data set {name}"))?;
        if !quiet {
            print_set(&set);
        }
        sets.push(set);
    }
    Ok(QualityReport { data_dir: data_dir.display().to_string(), sets })
}

async fn measure_set(daemon_binary: &Path, data_dir: &Path, name: &str) -> anyhow::Result<SetReport> {
    let corpus: Vec<CorpusRow> = read_jsonl(&data_dir.join(name).join("corpus.jsonl"))?;
    let queries: Vec<QueryRow> = read_jsonl(&data_dir.join(name).join("queries.jsonl"))?;
    if corpus.is_empty() || queries.is_empty() {
        bail!("{name} has no corpus rows or no queries");
    }
    eprintln!("[quality] {name}: {} documents, {} questions", corpus.len(), queries.len());
    let relevant: Vec<HashSet<&str>> =
        queries.iter().map(|query| query.relevant.iter().map(String::as_str).collect()).collect();

    // KnowHub over the socket, on a fresh home.
    let daemon = BenchDaemon::start(daemon_binary).await?;
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;
    // Identical rows are merged into one experience, so an experience stands for a list of rows.
    let mut rows_of_experience: HashMap<String, Vec<&str>> = HashMap::new();
    let (mut merged_documents, mut rejected_documents) = (0, 0);
    for batch in corpus.chunks(IMPORT_BATCH) {
        let items: Vec<serde_json::Value> = batch
            .iter()
            .map(|row| serde_json::json!({"task": row.text, "resource": NEUTRAL_RESOURCE, "result": NEUTRAL_RESULT}))
            .collect();
        let answer: ImportResult = client
            .call(kb_proto::method::IMPORT, &serde_json::json!({ "items": items }))
            .await
            .context("kb.import failed")?;
        merged_documents += answer.duplicates;
        rejected_documents += answer.rejected.len();
        for (row, id) in batch.iter().zip(answer.ids) {
            if let Some(id) = id {
                rows_of_experience.entry(id).or_default().push(row.id.as_str());
            }
        }
    }
    let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
    let mut knowhub_rankings = Vec::with_capacity(queries.len());
    let mut knowhub_timings = Vec::with_capacity(queries.len());
    for query in &queries {
        if query.text.trim().is_empty() {
            knowhub_rankings.push(Vec::new());
            continue;
        }
        let params =
            SearchParams { query: query.text.clone(), top_k: Some(TOP_K as i64), min_score: Some(1), agent_id: None };
        let started = Instant::now();
        let answer: SearchResult = client
            .call(kb_proto::method::SEARCH, &params)
            .await
            .with_context(|| format!("kb.search {:?} failed", query.text))?;
        knowhub_timings.push(started.elapsed());
        let ranking: Vec<Vec<&str>> =
            answer.results.iter().map(|hit| rows_of_experience.get(&hit.id).cloned().unwrap_or_default()).collect();
        knowhub_rankings.push(ranking);
    }
    drop(client);
    daemon.stop().await?;

    // FTS5 in-process: rowid i + 1 is corpus row i.
    let mut store = Fts5Store::create()?;
    store.insert(corpus.iter().map(|row| (row.text.as_str(), NEUTRAL_RESOURCE, NEUTRAL_RESULT)), IMPORT_BATCH)?;
    let mut fts5_rankings = Vec::with_capacity(queries.len());
    let mut fts5_timings = Vec::with_capacity(queries.len());
    for query in &queries {
        if query.text.trim().is_empty() {
            fts5_rankings.push(Vec::new());
            continue;
        }
        let started = Instant::now();
        let hits = store.search(&query.text, TOP_K)?;
        fts5_timings.push(started.elapsed());
        let ranking: Vec<Vec<&str>> = hits
            .iter()
            .map(|hit| {
                let row = usize::try_from(hit.rowid - 1).ok().and_then(|index| corpus.get(index));
                row.map(|row| vec![row.id.as_str()]).unwrap_or_default()
            })
            .collect();
        fts5_rankings.push(ranking);
    }

    let knowhub = RetrievalScores::of(&knowhub_rankings, &relevant, &knowhub_timings);
    let goal_recall_at_5 = (name == GOAL_SET).then_some(knowhub.recall_at_5 >= GOAL_RECALL_AT_5);
    Ok(SetReport {
        name: name.to_owned(),
        n_documents: corpus.len(),
        n_queries: queries.len(),
        n_blank_queries: queries.iter().filter(|query| query.text.trim().is_empty()).count(),
        merged_documents,
        rejected_documents,
        held_documents: status.counts.pending,
        knowhub,
        fts5: RetrievalScores::of(&fts5_rankings, &relevant, &fts5_timings),
        goal_recall_at_5,
    })
}

impl RetrievalScores {
    /// Scores of `rankings` (per query, per rank, the corpus ids at that rank) against the
    /// relevant ids of each query. Recall@k is the share of a query's relevant ids found in
    /// its top k, averaged over queries; Hit@k the share of queries with any; MRR@10 the mean
    /// of 1 / the rank of the first relevant result (0 when none is in the top 10).
    fn of(rankings: &[Vec<Vec<&str>>], relevant: &[HashSet<&str>], timings: &[Duration]) -> RetrievalScores {
        let n_queries = rankings.len().max(1) as f64;
        let mut recall = [0.0; CUTOFFS.len()];
        let mut hit = [0.0; CUTOFFS.len()];
        let mut reciprocal_rank_sum = 0.0;
        for (ranking, relevant) in rankings.iter().zip(relevant) {
            if relevant.is_empty() {
                continue;
            }
            for (slot, &cutoff) in CUTOFFS.iter().enumerate() {
                let found: HashSet<&str> =
                    ranking.iter().take(cutoff).flatten().copied().filter(|id| relevant.contains(id)).collect();
                recall[slot] += found.len() as f64 / relevant.len() as f64;
                hit[slot] += if found.is_empty() { 0.0 } else { 1.0 };
            }
            if let Some(position) =
                ranking.iter().take(TOP_K).position(|ids| ids.iter().any(|id| relevant.contains(id)))
            {
                reciprocal_rank_sum += 1.0 / (position + 1) as f64;
            }
        }
        RetrievalScores {
            recall_at_1: recall[0] / n_queries,
            recall_at_5: recall[1] / n_queries,
            recall_at_10: recall[2] / n_queries,
            hit_at_1: hit[0] / n_queries,
            hit_at_5: hit[1] / n_queries,
            hit_at_10: hit[2] / n_queries,
            mrr_at_10: reciprocal_rank_sum / n_queries,
            search: LatencySummary::of(timings),
        }
    }
}

fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{} line {}: not a valid row", path.display(), index + 1))
        })
        .collect()
}

fn print_set(set: &SetReport) {
    let (knowhub, fts5) = (&set.knowhub, &set.fts5);
    println!();
    println!(
        "== {}: {} documents, {} questions ==",
        set.name,
        report::thousands(set.n_documents as u64),
        report::thousands(set.n_queries as u64)
    );
    row("", "KnowHub BM25 (socket)", "SQLite FTS5 (in-process)");
    let score = |value: f64| format!("{value:.3}");
    row("Recall@1", &score(knowhub.recall_at_1), &score(fts5.recall_at_1));
    row("Recall@5", &score(knowhub.recall_at_5), &score(fts5.recall_at_5));
    row("Recall@10", &score(knowhub.recall_at_10), &score(fts5.recall_at_10));
    row("Hit@1", &score(knowhub.hit_at_1), &score(fts5.hit_at_1));
    row("Hit@5", &score(knowhub.hit_at_5), &score(fts5.hit_at_5));
    row("Hit@10", &score(knowhub.hit_at_10), &score(fts5.hit_at_10));
    row("MRR@10", &score(knowhub.mrr_at_10), &score(fts5.mrr_at_10));
    row("search p50 (top 10)", &report::micros(knowhub.search.p50_us), &report::micros(fts5.search.p50_us));
    row("search p99 (top 10)", &report::micros(knowhub.search.p99_us), &report::micros(fts5.search.p99_us));
    println!(
        "  documents merged as duplicates: {}, rejected: {}, held for review: {}; blank questions (counted as misses): {}",
        set.merged_documents, set.rejected_documents, set.held_documents, set.n_blank_queries
    );
    if let Some(passed) = set.goal_recall_at_5 {
        println!(
            "  goal: Recall@5 >= {GOAL_RECALL_AT_5:.2} with BM25 alone: {} ({:.3})",
            report::yes_no(passed),
            knowhub.recall_at_5
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_hit_and_mrr() {
        let relevant: Vec<HashSet<&str>> = vec![["a"].into(), ["b", "c"].into(), ["z"].into()];
        let rankings = vec![
            // "a" at rank 2.
            vec![vec!["x"], vec!["a"]],
            // "c" at rank 1 (merged with "y"), "b" at rank 7.
            vec![vec!["y", "c"], vec![], vec![], vec![], vec![], vec![], vec!["b"]],
            // Nothing relevant.
            vec![vec!["q"]],
        ];
        let scores = RetrievalScores::of(&rankings, &relevant, &[]);
        assert!((scores.recall_at_1 - (0.0 + 0.5 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.recall_at_5 - (1.0 + 0.5 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.recall_at_10 - (1.0 + 1.0 + 0.0) / 3.0).abs() < 1e-9);
        assert!((scores.hit_at_1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((scores.hit_at_5 - 2.0 / 3.0).abs() < 1e-9);
        assert!((scores.mrr_at_10 - (0.5 + 1.0 + 0.0) / 3.0).abs() < 1e-9);
    }
}
