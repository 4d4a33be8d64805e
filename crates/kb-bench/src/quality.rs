//! `kb-bench quality`: retrieval quality on labelled data (the sets in `data/`): each corpus row
//! is imported into a fresh daemon, each question is searched over the socket (BM25, vectors,
//! hybrid), and Recall@k, Hit@k and MRR@10 are computed; the same for two baselines in this
//! process, SQLite FTS5 as OpenClaw queries it and a plain Okapi BM25 over jieba's words.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use kb_proto::Client;
use kb_proto::wire::{ImportResult, SearchParams, SearchResult, StatusResult};
use serde::{Deserialize, Serialize};

use kb_embed::fusion::{self, Fusion, RRF_K, ScriptWeights};

use crate::daemon::{BenchDaemon, model_config};
use crate::fts5::Fts5Store;
use crate::okapi::OkapiIndex;
use crate::report;
use crate::stats::LatencySummary;

/// Results fetched per query: enough for Recall@10 and MRR@10.
const TOP_K: usize = 10;
const CUTOFFS: [usize; 3] = [1, 5, 10];
/// Items per `kb.import` request.
const IMPORT_BATCH: usize = 1_000;
/// Candidates per retriever the daemon's hybrid search fuses for a top 10:
/// `max(3 × top_k, fusion::MIN_CANDIDATES)`.
const HYBRID_DEPTH: usize = 30;
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

/// A corpus row: plain text (the CMRC sets), or an experience (the English set).
#[derive(Debug, Deserialize)]
struct CorpusRow {
    id: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    score: Option<u8>,
}

impl CorpusRow {
    /// The experience the row becomes: the text as the task, with a constant resource and
    /// result (see `NEUTRAL_RESOURCE`), or the experience as it is.
    fn fields(&self) -> (&str, &str, &str) {
        match &self.text {
            Some(text) => (text, NEUTRAL_RESOURCE, NEUTRAL_RESULT),
            None => (
                self.task.as_deref().unwrap_or_default(),
                self.resource.as_deref().unwrap_or_default(),
                self.result.as_deref().unwrap_or_default(),
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
struct QueryRow {
    text: String,
    relevant: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QualityReport {
    pub data_dir: String,
    /// The embedding model the daemon loaded, if any.
    pub model: Option<String>,
    pub sets: Vec<SetReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SetReport {
    pub name: String,
    pub n_documents: usize,
    pub n_queries: usize,
    /// Questions whose text is blank in the data: not sent (the daemon refuses an empty query),
    /// counted as answered with nothing, for every engine.
    pub n_blank_queries: usize,
    /// Corpus rows the daemon merged into another (identical or near-identical text) or
    /// refused, or held for review (suspected prompt injection: never returned by search).
    pub merged_documents: usize,
    pub rejected_documents: usize,
    pub held_documents: u64,
    /// BM25 alone, over the socket.
    pub knowhub: RetrievalScores,
    /// Vectors alone and the shipped hybrid, over the socket (with a model).
    pub vector: Option<RetrievalScores>,
    pub hybrid: Option<RetrievalScores>,
    /// Other fusions of the same BM25 and vector candidates, computed here.
    pub fusions: Vec<(String, RetrievalScores)>,
    pub fts5: RetrievalScores,
    /// Okapi BM25 over jieba's plain words (`okapi.rs`): the baseline KnowHub's BM25 must match.
    pub okapi: RetrievalScores,
    /// Recall@5 ≥ 0.90, the goal on `cmrc-trial-chunks`.
    pub goal_recall_at_5: Option<bool>,
    /// Hybrid at least as good as the better single retriever at Recall@5 and MRR@10.
    pub hybrid_not_worse: Option<bool>,
    /// The hybrid's margin over BM25 and over the vectors, question by question.
    pub hybrid_over_bm25: Option<Margin>,
    pub hybrid_over_vectors: Option<Margin>,
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

/// The fusions compared with the one shipped for `model` (its directory name stands for the id),
/// on the same candidates.
fn candidate_fusions(model: &str) -> Vec<(String, Fusion)> {
    let saturated = |half, han_power, han_vectors, gap_power| Fusion::Saturated {
        half,
        exponent: 3,
        han_power,
        han_vectors,
        gap_power,
    };
    let script = |non_han, mixed, han| ScriptWeights { non_han, mixed, han };
    vec![
        ("RRF k=60, equal weights".to_owned(), Fusion::Rrf { k: RRF_K, vector: ScriptWeights::uniform(1.0) }),
        ("RRF k=60, vectors 1/0.5/0.25 by script".to_owned(), Fusion::Rrf { k: RRF_K, vector: script(1.0, 0.5, 0.25) }),
        ("RRF k=10, vectors 1/0.5/0.25 by script".to_owned(), Fusion::Rrf { k: 10.0, vector: script(1.0, 0.5, 0.25) }),
        ("min-max sum, vectors 1/0.5/0.25".to_owned(), Fusion::Weighted { vector: script(1.0, 0.5, 0.25) }),
        ("min-max sum, vectors 0.5 all".to_owned(), Fusion::Weighted { vector: ScriptWeights::uniform(0.5) }),
        ("OpenClaw 0.7 cos + 0.3/(1+rank)".to_owned(), Fusion::OpenClaw),
        ("saturated BM25 + vectors + coverage, as shipped".to_owned(), fusion::shipped_for(model)),
        ("saturated, Han vectors 0.25 x (1 - gap)^4 (multilingual)".to_owned(), fusion::SHIPPED),
        ("saturated, Han queries to BM25 alone (English models)".to_owned(), fusion::SHIPPED_FOR_ENGLISH_MODELS),
        ("saturated, Han vectors 0.5 x (1 - gap)^8".to_owned(), saturated(10.0, 6, 0.5, 8)),
        ("saturated, han power 4".to_owned(), saturated(10.0, 4, 0.0, 0)),
        ("saturated, han power 1".to_owned(), saturated(10.0, 1, 0.0, 0)),
        ("saturated, vectors whatever the script".to_owned(), saturated(10.0, 0, 0.0, 0)),
        ("saturated half 5, any script".to_owned(), saturated(5.0, 0, 0.0, 0)),
        ("saturated half 20, any script".to_owned(), saturated(20.0, 0, 0.0, 0)),
    ]
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

/// A ranking: per rank, the corpus ids of the experience there (merged rows share one).
type Ranking<'a> = Vec<Vec<&'a str>>;

/// The rows the daemon imported, in an in-process index like the daemon's, for the BM25
/// candidates a hybrid search fuses (raw scores and coverage): over the socket, BM25 mode
/// answers with its own ranking's scores (`fusion::keyword`), not the raw ones a fusion starts
/// from. Only the rows the daemon stored (under the experience each became) are indexed, so
/// the candidates are the daemon's but for redaction, which none of the sets trips.
struct TwinIndex<'a> {
    index: kb_index::ExperienceIndex,
    experience_of_row: HashMap<&'a str, &'a str>,
}

impl<'a> TwinIndex<'a> {
    fn build(corpus: &'a [CorpusRow], rows_of_experience: &'a HashMap<String, Vec<&'a str>>) -> anyhow::Result<Self> {
        let experience_of_row: HashMap<&str, &str> = rows_of_experience
            .iter()
            .flat_map(|(experience, rows)| rows.iter().map(move |row| (*row, experience.as_str())))
            .collect();
        let index = kb_index::ExperienceIndex::open_in_ram().context("cannot open an in-process index")?;
        // Merged rows are one experience in the daemon: the first row stands for it.
        let docs: Vec<kb_index::IndexDoc<'_>> = corpus
            .iter()
            .filter(|row| {
                experience_of_row
                    .get(row.id.as_str())
                    .is_some_and(|experience| rows_of_experience[*experience].first() == Some(&row.id.as_str()))
            })
            .map(|row| {
                let (task, resource, result) = row.fields();
                kb_index::IndexDoc {
                    id: row.id.as_str(),
                    task,
                    resource,
                    result,
                    content: None,
                    score: row.score.unwrap_or(3),
                    status: kb_core::Status::Active,
                    agent_id: None,
                }
            })
            .collect();
        for batch in docs.chunks(IMPORT_BATCH) {
            index.add_new(batch).context("cannot index the rows in process")?;
        }
        index.commit(1).context("cannot commit the in-process index")?;
        Ok(TwinIndex { index, experience_of_row })
    }

    /// BM25's candidates for `query` by experience id, as deep as a hybrid search looks, and
    /// each one's coverage.
    fn candidates(&self, query: &str) -> anyhow::Result<(Vec<(String, f32)>, HashMap<String, f32>)> {
        let request = kb_index::SearchRequest {
            query,
            limit: HYBRID_DEPTH,
            min_score: 1,
            agent_id: None,
            status: kb_core::Status::Active,
            coverage: true,
        };
        let hits = self.index.search(&request).with_context(|| format!("in-process search for {query:?} failed"))?;
        let mut bm25 = Vec::with_capacity(hits.len());
        let mut coverage = HashMap::with_capacity(hits.len());
        for hit in hits {
            let experience = self.experience_of_row[hit.id.as_str()].to_owned();
            coverage.insert(experience.clone(), hit.coverage);
            bm25.push((experience, hit.bm25));
        }
        Ok((bm25, coverage))
    }
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
    let daemon = BenchDaemon::start_with_config(daemon_binary, &env, &model_config(quantize)).await?;
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
        for (slot, mode) in modes.iter().enumerate() {
            let params = SearchParams {
                query: query.text.clone(),
                top_k: Some(TOP_K as i64),
                min_score: Some(1),
                agent_id: None,
                mode: Some((*mode).to_owned()),
                origin: None,
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
            let first_row = |list: &[(String, f32)]| -> Vec<(String, f32)> {
                list.iter()
                    .map(|(id, score)| {
                        let row = rows_of_experience.get(id).and_then(|rows| rows.first()).copied().unwrap_or_default();
                        (row.to_owned(), *score)
                    })
                    .collect()
            };
            let bm25 = candidates.get("bm25").map_or(&[][..], Vec::as_slice);
            let coverage: Vec<f32> = bm25.iter().map(|(id, _)| coverage_of(id)).collect();
            let line = serde_json::json!({
                "query": query.text,
                "relevant": query.relevant,
                "bm25": first_row(bm25),
                "bm25_coverage": coverage,
                "vector": first_row(candidates.get("vector").map_or(&[], Vec::as_slice)),
            });
            dumped.push_str(&line.to_string());
            dumped.push('\n');
        }
        if embeddings.is_some() {
            for (offset, (_, fusion)) in candidate_fusions().into_iter().enumerate() {
                let fused = fusion::fuse(fusion, &query.text, &candidates["bm25"], &candidates["vector"]);
                let fused = match fusion {
                    Fusion::Saturated { .. } => fusion::with_coverage(fused, fusion::COVERAGE_WEIGHT, coverage_of),
                    _ => fused,
                };
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
            let question = QuestionScores::of(ranking, relevant);
            for slot in 0..CUTOFFS.len() {
                recall[slot] += question.recall[slot];
                hit[slot] += question.hit[slot];
            }
            reciprocal_rank_sum += question.reciprocal_rank;
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

/// One question's recall and hit at each of [`CUTOFFS`] and its reciprocal rank within
/// [`TOP_K`]; all 0 for a question without relevant documents.
struct QuestionScores {
    recall: [f64; CUTOFFS.len()],
    hit: [f64; CUTOFFS.len()],
    reciprocal_rank: f64,
}

impl QuestionScores {
    fn of(ranking: &[Vec<&str>], relevant: &HashSet<&str>) -> QuestionScores {
        let mut scores =
            QuestionScores { recall: [0.0; CUTOFFS.len()], hit: [0.0; CUTOFFS.len()], reciprocal_rank: 0.0 };
        if relevant.is_empty() {
            return scores;
        }
        for (slot, &cutoff) in CUTOFFS.iter().enumerate() {
            let found: HashSet<&str> =
                ranking.iter().take(cutoff).flatten().copied().filter(|id| relevant.contains(id)).collect();
            scores.recall[slot] = found.len() as f64 / relevant.len() as f64;
            scores.hit[slot] = if found.is_empty() { 0.0 } else { 1.0 };
        }
        if let Some(position) = ranking.iter().take(TOP_K).position(|ids| ids.iter().any(|id| relevant.contains(id))) {
            scores.reciprocal_rank = 1.0 / (position + 1) as f64;
        }
        scores
    }
}

/// A difference of means over the questions with its 95% interval.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Interval {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
}

/// How far the hybrid stands above one single retriever, question by question: whether a
/// difference is more than the luck of which questions a set happens to have.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Margin {
    pub recall_at_5: Interval,
    pub mrr_at_10: Interval,
}

/// Resamples of the paired bootstrap; the seed is fixed so that a report can be reproduced.
const BOOTSTRAP_RESAMPLES: usize = 2_000;
const BOOTSTRAP_SEED: u64 = 0x4b48_424f_4f54;

impl Margin {
    /// `better − other` at Recall@5 and MRR@10, each with a 95% percentile interval from a
    /// paired bootstrap over the questions (the same resampled questions for both measures).
    fn of(better: &[Ranking<'_>], other: &[Ranking<'_>], relevant: &[HashSet<&str>]) -> Margin {
        let differences: Vec<(f64, f64)> = better
            .iter()
            .zip(other)
            .zip(relevant)
            .map(|((better, other), relevant)| {
                let (better, other) = (QuestionScores::of(better, relevant), QuestionScores::of(other, relevant));
                (better.recall[1] - other.recall[1], better.reciprocal_rank - other.reciprocal_rank)
            })
            .collect();
        let n = differences.len();
        let mean = |pick: fn(&(f64, f64)) -> f64| differences.iter().map(pick).sum::<f64>() / n.max(1) as f64;
        let mut resampled: [Vec<f64>; 2] =
            [Vec::with_capacity(BOOTSTRAP_RESAMPLES), Vec::with_capacity(BOOTSTRAP_RESAMPLES)];
        if n > 0 {
            let mut rng = crate::generate::Rng::new(BOOTSTRAP_SEED);
            for _ in 0..BOOTSTRAP_RESAMPLES {
                let (mut recall, mut mrr) = (0.0, 0.0);
                for _ in 0..n {
                    let (recall_difference, mrr_difference) = differences[(rng.next_u64() % n as u64) as usize];
                    recall += recall_difference;
                    mrr += mrr_difference;
                }
                resampled[0].push(recall / n as f64);
                resampled[1].push(mrr / n as f64);
            }
        }
        let interval = |mean: f64, samples: &mut Vec<f64>| {
            if samples.is_empty() {
                return Interval { mean, low: mean, high: mean };
            }
            samples.sort_by(f64::total_cmp);
            let at = |share: f64| samples[((samples.len() - 1) as f64 * share).round() as usize];
            Interval { mean, low: at(0.025), high: at(0.975) }
        };
        let [recall_samples, mrr_samples] = &mut resampled;
        Margin {
            recall_at_5: interval(mean(|difference| difference.0), recall_samples),
            mrr_at_10: interval(mean(|difference| difference.1), mrr_samples),
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
    println!();
    println!(
        "== {}: {} documents, {} questions ==",
        set.name,
        report::thousands(set.n_documents as u64),
        report::thousands(set.n_queries as u64)
    );
    println!("  {:<44} {:>8} {:>8} {:>9} {:>8} {:>10} {:>10}", "", "R@1", "R@5", "R@10", "MRR@10", "p50", "p99");
    let line = |label: &str, scores: &RetrievalScores, timed: bool| {
        let (p50, p99) = if timed {
            (report::micros(scores.search.p50_us), report::micros(scores.search.p99_us))
        } else {
            ("".to_owned(), "".to_owned())
        };
        println!(
            "  {label:<44} {:>8.3} {:>8.3} {:>9.3} {:>8.3} {p50:>10} {p99:>10}",
            scores.recall_at_1, scores.recall_at_5, scores.recall_at_10, scores.mrr_at_10
        );
    };
    line("KnowHub BM25 (socket)", &set.knowhub, true);
    if let Some(vector) = &set.vector {
        line("KnowHub vectors (socket)", vector, true);
    }
    if let Some(hybrid) = &set.hybrid {
        line("KnowHub hybrid, as shipped (socket)", hybrid, true);
    }
    for (label, scores) in &set.fusions {
        line(&format!("  alt: {label}"), scores, false);
    }
    line("SQLite FTS5 (in-process)", &set.fts5, true);
    line("Okapi BM25, plain jieba words (in-process)", &set.okapi, true);
    println!(
        "  documents merged as duplicates: {}, rejected: {}, held for review: {}; blank questions (counted as misses): {}",
        set.merged_documents, set.rejected_documents, set.held_documents, set.n_blank_queries
    );
    if let Some(passed) = set.goal_recall_at_5 {
        println!(
            "  goal: Recall@5 >= {GOAL_RECALL_AT_5:.2} with BM25 alone: {} ({:.3})",
            report::yes_no(passed),
            set.knowhub.recall_at_5
        );
    }
    for (label, margin) in [("BM25", &set.hybrid_over_bm25), ("vectors", &set.hybrid_over_vectors)] {
        if let Some(margin) = margin {
            let points = |interval: &Interval| {
                format!("{:+.1} [{:+.1}, {:+.1}]", interval.mean * 100.0, interval.low * 100.0, interval.high * 100.0)
            };
            println!(
                "  hybrid - {label:<8} points, 95% paired bootstrap: R@5 {}, MRR@10 {}",
                points(&margin.recall_at_5),
                points(&margin.mrr_at_10)
            );
        }
    }
    if let Some(passed) = set.hybrid_not_worse {
        // A shortfall whose interval reaches above zero is one the questions cannot tell from none.
        let within_noise = [&set.hybrid_over_bm25, &set.hybrid_over_vectors]
            .into_iter()
            .flatten()
            .all(|margin| margin.recall_at_5.high > 0.0 && margin.mrr_at_10.high > 0.0);
        let verdict = match (passed, within_noise) {
            (true, _) => "yes",
            (false, true) => "no, by less than the questions can tell (every interval reaches above 0)",
            (false, false) => "NO",
        };
        println!("  goal: hybrid >= the better single retriever at Recall@5 and MRR@10: {verdict}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_margin_of_a_ranking_over_another_comes_with_its_interval() {
        let relevant: Vec<HashSet<&str>> = (0..200).map(|_| ["a"].into()).collect();
        let first: Vec<Ranking<'_>> = (0..200).map(|_| vec![vec!["a"]]).collect();
        let sixth: Vec<Ranking<'_>> =
            (0..200).map(|_| vec![vec!["x"]; 5].into_iter().chain([vec!["a"]]).collect()).collect();
        // Identical rankings: no difference, and no doubt about it.
        let same = Margin::of(&first, &first, &relevant);
        assert_eq!((same.recall_at_5.low, same.recall_at_5.mean, same.recall_at_5.high), (0.0, 0.0, 0.0));
        // Always first against always sixth: +1 at R@5 and +5/6 at MRR@10 on every question.
        let always = Margin::of(&first, &sixth, &relevant);
        assert_eq!(always.recall_at_5.low, 1.0);
        assert!((always.mrr_at_10.mean - 5.0 / 6.0).abs() < 1e-9);
        // One question in 200 better, one worse: a difference of 0 that could go either way.
        let mut mixed = first.clone();
        mixed[0] = sixth[0].clone();
        let mut other = first.clone();
        other[1] = sixth[1].clone();
        let noise = Margin::of(&mixed, &other, &relevant);
        assert_eq!(noise.recall_at_5.mean, 0.0);
        assert!(noise.recall_at_5.low < 0.0 && noise.recall_at_5.high > 0.0, "{noise:?}");
    }

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
