//! `kb-bench quality`: retrieval quality on labelled data (the sets in `data/`): each corpus row
//! is imported into a fresh daemon, each question is searched over the socket (BM25, vectors,
//! hybrid), and Recall@k, Hit@k and MRR@10 are computed; the same for two baselines in this
//! process, SQLite FTS5 as OpenClaw queries it and a plain Okapi BM25 over jieba's words.
//!
//! The pieces below this module: `sets` reads the labelled data, `twin` indexes it in process
//! for the BM25 candidates of the fusions, `metrics` scores rankings (Recall@k, Hit@k, MRR@10),
//! `margin` bootstraps the hybrid's margin over each single retriever, and `set_report` holds
//! and prints what a set measured.

mod margin;
mod metrics;
pub mod recall_gate;
mod set_report;
mod sets;
mod twin;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchParams, SearchResult, StatusResult};

use kb_embed::fusion::{self, Fusion, RRF_K, ScriptWeights};

use crate::daemon::{BenchDaemon, model_config};
use crate::fts5::Fts5Store;
use crate::okapi::OkapiIndex;

use margin::Margin;
use metrics::{Ranking, RetrievalScores};
pub use set_report::QualityReport;
use set_report::{SetReport, print_set};
use sets::{CorpusRow, NEUTRAL_RESOURCE, NEUTRAL_RESULT, QueryRow, read_jsonl};
use twin::TwinIndex;

/// Results fetched per query: enough for Recall@10 and MRR@10.
const TOP_K: usize = 10;
/// Items per `kb.import` request.
const IMPORT_BATCH: usize = 1_000;
/// Candidates per retriever the daemon's hybrid search fuses for a top 10:
/// `max(3 × top_k, fusion::MIN_CANDIDATES)`.
const HYBRID_DEPTH: usize = 30;
/// The goal of the issue on `cmrc-trial-chunks`.
pub const GOAL_SET: &str = "cmrc-trial-chunks";
pub const GOAL_RECALL_AT_5: f64 = 0.90;

#[derive(Debug, Clone)]
pub struct QualityOptions {
    /// Where the named sets are looked for first (by default the crate's own data/).
    pub data_dir: PathBuf,
    /// Where they are looked for next (the English set in `crates/kb-bench/data`).
    pub bench_data_dir: PathBuf,
    pub sets: Vec<String>,
    pub dump_dir: Option<PathBuf>,
    /// The embedding model and ONNX Runtime the daemon gets; without both, BM25 alone.
    pub model_dir: Option<PathBuf>,
    pub onnxruntime: Option<PathBuf>,
    /// The model loaded with int8 weights (`embedding.quantize`).
    pub quantize: bool,
}

/// A ranking of the same BM25 and vector candidates, computed here beside the daemon's hybrid.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// The daemon's (`fusion::min_max_hybrid` of BM25's ranking and the vectors) at another
    /// vector weight, scaled down for Han queries as `fusion::vector_weight` does.
    MinMax(f32),
    /// `fusion::best_scaled_hybrid` at this vector weight, scaled down for Han queries likewise.
    BestScaled(f32),
    /// A fusion of the raw candidates (`fusion::fuse`), with coverage added when saturated; with
    /// `floor`, the vectors cut at the model's relevance floor first, as before issue 25.
    Fuse { fusion: Fusion, floor: bool },
}

/// The rankings compared with the shipped one for `model` (its directory name stands for the
/// id), on the same candidates.
fn candidate_fusions(model: &str) -> Vec<(String, Rule)> {
    let script = |non_han, mixed, han| ScriptWeights { non_han, mixed, han };
    let raw = |fusion| Rule::Fuse { fusion, floor: false };
    vec![
        (format!("min-max, vectors {} (shipped)", fusion::VECTOR_WEIGHT), Rule::MinMax(fusion::VECTOR_WEIGHT)),
        ("min-max, vectors 0.5".to_owned(), Rule::MinMax(0.5)),
        ("min-max, vectors 0.4".to_owned(), Rule::MinMax(0.4)),
        ("BM25 / its best, vectors min-max 0.5".to_owned(), Rule::BestScaled(0.5)),
        ("BM25 / its best, vectors min-max 0.4".to_owned(), Rule::BestScaled(0.4)),
        (
            "before issue 25: saturated + coverage, floor".to_owned(),
            Rule::Fuse { fusion: fusion::shipped_for(model), floor: true },
        ),
        ("before issue 25, without the floor".to_owned(), raw(fusion::shipped_for(model))),
        ("RRF k=60, equal weights".to_owned(), raw(Fusion::Rrf { k: RRF_K, vector: ScriptWeights::uniform(1.0) })),
        (
            "RRF k=60, vectors 1/0.5/0.25 by script".to_owned(),
            raw(Fusion::Rrf { k: RRF_K, vector: script(1.0, 0.5, 0.25) }),
        ),
        ("raw min-max sum, vectors 0.5 all".to_owned(), raw(Fusion::Weighted { vector: ScriptWeights::uniform(0.5) })),
        ("OpenClaw 0.7 cos + 0.3/(1+rank)".to_owned(), raw(Fusion::OpenClaw)),
    ]
}

/// The candidates ranked by `rule`, best first.
fn rank_by(
    rule: Rule,
    model_id: &str,
    query: &str,
    bm25: &[(String, f32)],
    vector: &[(String, f32)],
    coverage_of: &dyn Fn(&String) -> f32,
) -> Vec<(String, f32)> {
    match rule {
        Rule::MinMax(weight) => {
            let weight = weight * fusion::vector_weight(model_id, query) / fusion::VECTOR_WEIGHT;
            fusion::min_max_hybrid(weight, &fusion::keyword(bm25, coverage_of), vector)
        }
        Rule::BestScaled(weight) => {
            let weight = weight * fusion::vector_weight(model_id, query) / fusion::VECTOR_WEIGHT;
            fusion::best_scaled_hybrid(weight, &fusion::keyword(bm25, coverage_of), vector)
        }
        Rule::Fuse { fusion: chosen, floor } => {
            let kept: Vec<(String, f32)>;
            let vector = if floor {
                let floor = kb_engine::semantic::default_min_similarity(model_id);
                kept = vector.iter().filter(|(_, cosine)| *cosine >= floor).cloned().collect();
                &kept[..]
            } else {
                vector
            };
            let fused = fusion::fuse(chosen, query, bm25, vector);
            match chosen {
                Fusion::Saturated { .. } => fusion::with_coverage(fused, fusion::COVERAGE_WEIGHT, coverage_of),
                _ => fused,
            }
        }
    }
}

pub async fn run(daemon_binary: &Path, options: &QualityOptions, quiet: bool) -> anyhow::Result<QualityReport> {
    let data_dir = options
        .data_dir
        .canonicalize()
        .with_context(|| format!("cannot find the data directory {} (pass --data DIR)", options.data_dir.display()))?;
    let embeddings = match (&options.model_dir, &options.onnxruntime) {
        (Some(model), Some(library)) => Some((model.clone(), library.clone())),
        _ => None,
    };
    if !quiet {
        println!();
        match &embeddings {
            Some((model, library)) => println!(
                "quality: BM25, vectors and hybrid over the socket, top {TOP_K} per question, min_score 1\n  model {}, ONNX Runtime {}",
                model.display(),
                library.display()
            ),
            None => println!(
                "quality: BM25 alone (no model or no ONNX Runtime: pass --model and --onnxruntime), top {TOP_K}, min_score 1"
            ),
        }
        println!(
            "  a text row is imported as task = text, resource = {NEUTRAL_RESOURCE:?}, result = {NEUTRAL_RESULT:?} (the same in every row, so it cannot change the ranking); an experience row as it is"
        );
        println!("  FTS5 (unicode61) gets the same rows and questions, queried the OpenClaw way (quoted words OR-ed)");
    }
    let mut sets = Vec::with_capacity(options.sets.len());
    let mut model = None;
    for name in &options.sets {
        let dir = [data_dir.join(name), options.bench_data_dir.join(name)]
            .into_iter()
            .find(|dir| dir.is_dir())
            .with_context(|| {
                format!("no data set {name} in {} or {}", data_dir.display(), options.bench_data_dir.display())
            })?;
        let dump = options.dump_dir.as_ref().map(|dump_dir| dump_dir.join(format!("{name}.jsonl")));
        let (set, loaded_model) =
            measure_set(daemon_binary, &dir, name, embeddings.as_ref(), options.quantize, dump.as_deref())
                .await
                .with_context(|| format!("data set {name}"))?;
        model = model.or(loaded_model);
        if !quiet {
            print_set(&set);
        }
        sets.push(set);
    }
    Ok(QualityReport { data_dir: data_dir.display().to_string(), model, sets })
}

async fn measure_set(
    daemon_binary: &Path,
    dir: &Path,
    name: &str,
    embeddings: Option<&(PathBuf, PathBuf)>,
    quantize: bool,
    dump: Option<&Path>,
) -> anyhow::Result<(SetReport, Option<String>)> {
    let mut dumped = String::new();
    let corpus: Vec<CorpusRow> = read_jsonl(&dir.join("corpus.jsonl"))?;
    let queries: Vec<QueryRow> = read_jsonl(&dir.join("queries.jsonl"))?;
    if corpus.is_empty() || queries.is_empty() {
        bail!("{name} has no corpus rows or no queries");
    }
    eprintln!("[quality] {name}: {} documents, {} questions", corpus.len(), queries.len());
    // The model's directory name stands for its id in `fusion::shipped_for`.
    let model_name = embeddings
        .and_then(|(model, _)| model.file_name())
        .map_or_else(String::new, |name| name.to_string_lossy().into_owned());
    let candidate_fusions = || candidate_fusions(&model_name);
    let relevant: Vec<HashSet<&str>> =
        queries.iter().map(|query| query.relevant.iter().map(String::as_str).collect()).collect();

    // KnowHub over the socket, on a fresh home.
    let mut env: Vec<(&str, &Path)> = Vec::new();
    if let Some((model, library)) = embeddings {
        env.push(("KNOWHUB_MODEL_DIR", model));
        env.push(("ORT_DYLIB_PATH", library));
    }
    // A dump holds every BM25 candidate's cosine, asked of vector mode as deep as the store.
    let config = model_config(quantize) + if dump.is_some() { "[search]\nmax_top_k = 1000000\n" } else { "" };
    let daemon = BenchDaemon::start_with_config(daemon_binary, &env, &config).await?;
    let mut client = Client::connect(daemon.socket()).await.context("cannot connect to knowhubd")?;
    let model = match embeddings {
        Some(_) => Some(wait_for_model(&mut client).await?),
        None => None,
    };
    // Identical rows are merged into one experience, so an experience stands for a list of rows.
    let mut rows_of_experience: HashMap<String, Vec<&str>> = HashMap::new();
    let (mut merged_documents, mut rejected_documents) = (0, 0);
    for batch in corpus.chunks(IMPORT_BATCH) {
        let items: Vec<serde_json::Value> = batch
            .iter()
            .map(|row| {
                let (task, resource, result) = row.fields();
                serde_json::json!({"task": task, "resource": resource, "result": result, "score": row.score.unwrap_or(3)})
            })
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
    if embeddings.is_some() {
        wait_for_backlog(&mut client).await?;
    }
    let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
    let twin = match embeddings {
        Some(_) => Some(TwinIndex::build(&corpus, &rows_of_experience)?),
        None => None,
    };

    let to_ranking = |answer: &SearchResult| -> Ranking<'_> {
        answer.results.iter().map(|hit| rows_of_experience.get(&hit.id).cloned().unwrap_or_default()).collect()
    };
    let modes: &[&str] = if embeddings.is_some() { &["bm25", "vector", "hybrid"] } else { &["bm25"] };
    let n_fusions = candidate_fusions().len();
    let mut rankings: Vec<Vec<Ranking<'_>>> = vec![Vec::with_capacity(queries.len()); modes.len() + n_fusions];
    let mut timings: Vec<Vec<Duration>> = vec![Vec::with_capacity(queries.len()); modes.len()];
    for query in &queries {
        if query.text.trim().is_empty() {
            rankings.iter_mut().for_each(|ranking| ranking.push(Vec::new()));
            continue;
        }
        let mut candidates: HashMap<&str, Vec<(String, f32)>> = HashMap::new();
        let mut hybrid_answer: Vec<(String, f32)> = Vec::new();
        for (slot, mode) in modes.iter().enumerate() {
            let params = SearchParams {
                query: query.text.clone(),
                top_k: Some(TOP_K as i64),
                min_score: Some(1),
                agent_id: None,
                mode: Some((*mode).to_owned()),
                origin: None,
                unreviewed: None,
            };
            let started = Instant::now();
            let answer: SearchResult = client
                .call(kb_proto::method::SEARCH, &params)
                .await
                .with_context(|| format!("kb.search {:?} ({mode}) failed", query.text))?;
            timings[slot].push(started.elapsed());
            if answer.mode != *mode {
                bail!("asked for {mode}, answered by {} ({:?})", answer.mode, answer.note);
            }
            rankings[slot].push(to_ranking(&answer));
            if *mode == "hybrid" {
                hybrid_answer = answer.results.iter().map(|hit| (hit.id.clone(), hit.relevance)).collect();
            }
            if *mode == "vector" {
                // The candidates the daemon's hybrid search fuses: as deep as it looks.
                let deep = SearchParams { top_k: Some(HYBRID_DEPTH as i64), ..params };
                let answer: SearchResult = client.call(kb_proto::method::SEARCH, &deep).await?;
                candidates.insert(mode, answer.results.iter().map(|hit| (hit.id.clone(), hit.relevance)).collect());
            }
        }
        let coverage: HashMap<String, f32> = match &twin {
            Some(twin) => {
                let (bm25, coverage) = twin.candidates(&query.text)?;
                candidates.insert("bm25", bm25);
                coverage
            }
            None => HashMap::new(),
        };
        let coverage_of = |id: &String| coverage.get(id).copied().unwrap_or(0.0);
        if dump.is_some() {
            let row_of =
                |id: &str| rows_of_experience.get(id).and_then(|rows| rows.first()).copied().unwrap_or_default();
            let first_row = |list: &[(String, f32)]| -> Vec<(String, f32)> {
                list.iter().map(|(id, score)| (row_of(id).to_owned(), *score)).collect()
            };
            let bm25 = candidates.get("bm25").map_or(&[][..], Vec::as_slice);
            let coverage: Vec<f32> = bm25.iter().map(|(id, _)| coverage_of(id)).collect();
            // The query's exact terms and how many experiences can hold each (what the
            // daemon's pinning decides by), for studying the pinning offline.
            let mut exact = Vec::new();
            for term in fusion::exact_terms(&query.text) {
                let holders = match &twin {
                    Some(twin) => Some(twin.max_holders(&term.text)?),
                    None => None,
                };
                exact.push(serde_json::json!({"text": term.text, "ignore_case": term.ignore_case, "holders": holders}));
            }
            // Each candidate's score in the list it is absent from: BM25's for the vectors'
            // candidates (the twin index), the cosine of BM25's (vector mode, deeper), for
            // studying a fusion over the union of the two lists offline.
            let vector = candidates.get("vector").map_or(&[][..], Vec::as_slice);
            let in_bm25: HashSet<&str> = bm25.iter().map(|(id, _)| id.as_str()).collect();
            let in_vector: HashSet<&str> = vector.iter().map(|(id, _)| id.as_str()).collect();
            let vector_only: Vec<&str> =
                vector.iter().map(|(id, _)| id.as_str()).filter(|id| !in_bm25.contains(id)).collect();
            let bm25_extra: Vec<(String, f32, f32)> = match &twin {
                Some(twin) => twin
                    .scores(&query.text, &vector_only, &rows_of_experience)?
                    .into_iter()
                    .map(|(id, bm25, coverage)| (row_of(&id).to_owned(), bm25, coverage))
                    .collect(),
                None => Vec::new(),
            };
            let bm25_only: Vec<&str> =
                bm25.iter().map(|(id, _)| id.as_str()).filter(|id| !in_vector.contains(id)).collect();
            let mut vector_extra: Vec<(String, f32)> = Vec::new();
            if model.is_some() && !bm25_only.is_empty() {
                let deep = SearchParams {
                    query: query.text.clone(),
                    top_k: Some(rows_of_experience.len() as i64),
                    min_score: Some(1),
                    agent_id: None,
                    mode: Some("vector".to_owned()),
                    origin: None,
                    unreviewed: None,
                };
                let answer: SearchResult = client.call(kb_proto::method::SEARCH, &deep).await?;
                let cosine: HashMap<&str, f32> =
                    answer.results.iter().map(|hit| (hit.id.as_str(), hit.relevance)).collect();
                for id in &bm25_only {
                    if let Some(cosine) = cosine.get(id) {
                        vector_extra.push((id.to_string(), *cosine));
                    }
                }
                vector_extra = first_row(&vector_extra);
            }
            let line = serde_json::json!({
                "bm25_extra": bm25_extra,
                "vector_extra": vector_extra,
                "query": query.text,
                "relevant": query.relevant,
                "bm25": first_row(bm25),
                "bm25_coverage": coverage,
                "vector": first_row(candidates.get("vector").map_or(&[], Vec::as_slice)),
                "hybrid": first_row(&hybrid_answer),
                "exact": exact,
            });
            dumped.push_str(&line.to_string());
            dumped.push('\n');
        }
        if let Some(model_id) = &model {
            for (offset, (_, rule)) in candidate_fusions().into_iter().enumerate() {
                let fused =
                    rank_by(rule, model_id, &query.text, &candidates["bm25"], &candidates["vector"], &coverage_of);
                let ranking: Ranking<'_> = fused
                    .iter()
                    .take(TOP_K)
                    .map(|(id, _)| rows_of_experience.get(id).cloned().unwrap_or_default())
                    .collect();
                rankings[modes.len() + offset].push(ranking);
            }
        }
    }
    drop(client);
    daemon.stop().await?;
    if let Some(dump) = dump {
        if let Some(parent) = dump.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(dump, dumped).with_context(|| format!("cannot write {}", dump.display()))?;
    }

    // FTS5 in-process: rowid i + 1 is corpus row i.
    let mut store = Fts5Store::create()?;
    store.insert(corpus.iter().map(CorpusRow::fields), IMPORT_BATCH)?;
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

    // Okapi BM25 over jieba's plain words, in-process: index i is corpus row i, whose text is
    // the row's own (an experience's task, resource and result), without the neutral fields.
    let texts: Vec<String> = corpus
        .iter()
        .map(|row| match &row.text {
            Some(text) => text.clone(),
            None => {
                let (task, resource, result) = row.fields();
                format!("{task}\n{resource}\n{result}")
            }
        })
        .collect();
    let okapi = OkapiIndex::build(texts.iter().map(String::as_str));
    let mut okapi_rankings = Vec::with_capacity(queries.len());
    let mut okapi_timings = Vec::with_capacity(queries.len());
    for query in &queries {
        let started = Instant::now();
        let ranking: Vec<Vec<&str>> =
            okapi.search(&query.text, TOP_K).into_iter().map(|index| vec![corpus[index].id.as_str()]).collect();
        okapi_timings.push(started.elapsed());
        okapi_rankings.push(ranking);
    }

    let scores =
        |slot: usize| RetrievalScores::of(&rankings[slot], &relevant, timings.get(slot).map_or(&[], Vec::as_slice));
    let knowhub = scores(0);
    let (vector, hybrid) = if embeddings.is_some() { (Some(scores(1)), Some(scores(2))) } else { (None, None) };
    let fusions = if embeddings.is_some() {
        candidate_fusions()
            .into_iter()
            .enumerate()
            .map(|(offset, (label, _))| (label, scores(modes.len() + offset)))
            .collect()
    } else {
        Vec::new()
    };
    let hybrid_not_worse = match (&vector, &hybrid) {
        (Some(vector), Some(hybrid)) => Some(
            hybrid.recall_at_5 >= knowhub.recall_at_5.max(vector.recall_at_5)
                && hybrid.mrr_at_10 >= knowhub.mrr_at_10.max(vector.mrr_at_10),
        ),
        _ => None,
    };
    let (hybrid_over_bm25, hybrid_over_vectors) = if embeddings.is_some() {
        (
            Some(Margin::of(&rankings[2], &rankings[0], &relevant)),
            Some(Margin::of(&rankings[2], &rankings[1], &relevant)),
        )
    } else {
        (None, None)
    };
    let goal_recall_at_5 = (name == GOAL_SET).then_some(knowhub.recall_at_5 >= GOAL_RECALL_AT_5);
    let report = SetReport {
        name: name.to_owned(),
        n_documents: corpus.len(),
        n_queries: queries.len(),
        n_blank_queries: queries.iter().filter(|query| query.text.trim().is_empty()).count(),
        merged_documents,
        rejected_documents,
        held_documents: status.counts.pending,
        knowhub,
        vector,
        hybrid,
        fusions,
        fts5: RetrievalScores::of(&fts5_rankings, &relevant, &fts5_timings),
        okapi: RetrievalScores::of(&okapi_rankings, &relevant, &okapi_timings),
        goal_recall_at_5,
        hybrid_not_worse,
        hybrid_over_bm25,
        hybrid_over_vectors,
    };
    Ok((report, model))
}

/// Waits until the daemon's model is ready; its id.
async fn wait_for_model(client: &mut Client) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
        match (status.embedder.state.as_str(), status.embedder.model) {
            ("ready", Some(model)) => return Ok(model),
            ("loading", _) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            (state, _) => bail!("the embedding model is {state}: {}", status.embedder.detail.unwrap_or_default()),
        }
    }
}

/// Waits until every imported experience is embedded.
async fn wait_for_backlog(client: &mut Client) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let status: StatusResult = client.call(kb_proto::method::STATUS, &serde_json::json!({})).await?;
        if status.embedder.backlog == 0 {
            eprintln!(
                "[quality] embedded {} experiences in {:.1} s",
                status.embedder.vectors,
                started.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!("{} experiences still not embedded after 10 minutes", status.embedder.backlog);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
