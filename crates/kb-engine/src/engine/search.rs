//! Search: BM25 and vectors, fused, exact terms pinned, checked against the store.

use std::collections::HashMap;

use kb_core::{Experience, Status};
use kb_index::{Hit as Bm25Hit, SearchRequest};

use crate::relevance::Evidence;
use crate::semantic::{self, VectorFilter};

use super::{Engine, EngineError, EngineResult, MAX_QUERY_CHARS, on_blocking_thread, truncate_chars};

/// BM25 hits as (id, score) pairs, best first.
pub(super) fn scored(bm25_hits: Vec<Bm25Hit>) -> Vec<(String, f32)> {
    bm25_hits.into_iter().map(|hit| (hit.id, hit.bm25)).collect()
}

/// A search hit with the stored experience.
#[derive(Debug, Clone)]
pub struct Found {
    pub experience: Experience,
    pub relevance: f32,
    /// What speaks for it beyond its rank: whether it is worth showing unasked is
    /// [`Evidence::worth_showing_unasked`](crate::relevance::Evidence::worth_showing_unasked).
    pub evidence: Evidence,
    /// A teammate's experience's author on the hub, read with the experience (`None` for this
    /// user's own, or when the hub's record of it is gone): what its provenance is decided by.
    pub author: Option<String>,
}

/// The fewest candidates read from the store at a time while an answer is filled.
const MIN_READ: usize = 8;

pub struct SearchQuery<'a> {
    pub query: &'a str,
    pub top_k: Option<i64>,
    pub min_score: Option<i64>,
    pub agent_id: Option<&'a str>,
    pub mode: SearchMode,
    pub origin: Origin,
    /// Who the answer is for: when set, only the hits it admits are returned (an agent sees no
    /// unreviewed teammate's or extracted experience). Like `origin`, it is applied to every
    /// candidate before the answer is cut to `top_k`, so hits it refuses never crowd out those
    /// it admits (a teammate sharing many near-copies of a topic cannot empty an agent's answer).
    pub visible: Option<&'a (dyn Fn(&Found) -> bool + Sync)>,
}

/// Whose experiences a search returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Origin {
    #[default]
    All,
    /// This store's own (every source but the hub).
    Mine,
    /// Teammates', pulled from the hub.
    Team,
}

impl Origin {
    pub fn parse(text: &str) -> Option<Origin> {
        match text {
            "all" => Some(Origin::All),
            "mine" => Some(Origin::Mine),
            "team" => Some(Origin::Team),
            _ => None,
        }
    }

    pub(super) fn admits(self, source: kb_core::Source) -> bool {
        match self {
            Origin::All => true,
            Origin::Mine => source != kb_core::Source::Hub,
            Origin::Team => source == kb_core::Source::Hub,
        }
    }
}

/// Which retrievers a search asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SearchMode {
    /// BM25 and vectors fused; BM25 alone (with a note) while there is no model.
    #[default]
    Hybrid,
    Bm25,
    /// Vectors alone; an error while there is no model.
    Vector,
}

impl SearchMode {
    pub fn parse(text: &str) -> Option<SearchMode> {
        match text {
            "hybrid" => Some(SearchMode::Hybrid),
            "bm25" => Some(SearchMode::Bm25),
            "vector" => Some(SearchMode::Vector),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Bm25 => "bm25",
            SearchMode::Vector => "vector",
        }
    }
}

/// How a search was answered: the retrievers used and, when it matters, why not others.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub mode: SearchMode,
    pub note: Option<String>,
}

impl Engine {
    /// Searches active experiences, best first. BM25 waits for the index when it is
    /// rebuilding; vectors join in when a model is ready, and their absence is noted.
    pub async fn search(&self, query: SearchQuery<'_>) -> EngineResult<(Vec<Found>, Answered)> {
        let top_k = match query.top_k {
            None => self.config.search.default_top_k,
            Some(top_k) if top_k < 1 => {
                return Err(EngineError::invalid("top_k", format!("must be at least 1, got {top_k}")));
            }
            Some(top_k) => (top_k as usize).min(self.config.search.max_top_k),
        };
        let min_score = match query.min_score {
            None => self.config.search.default_min_score,
            Some(score @ 1..=5) => score as u8,
            Some(score) => {
                return Err(EngineError::invalid("min_score", format!("must be an integer from 1 to 5, got {score}")));
            }
        };
        if query.query.trim().is_empty() {
            return Err(EngineError::invalid("query", "must not be empty"));
        }
        let text = truncate_chars(query.query, MAX_QUERY_CHARS);
        let filter = VectorFilter { min_score, agent_id: query.agent_id };
        // Fusion looks deeper than the answer: an experience ranked low by one retriever and
        // high by the other must be in both candidate lists to be rewarded.
        let n_fused = (top_k * 3).max(kb_embed::fusion::MIN_CANDIDATES);
        // An origin or visibility filter drops candidates after retrieval, so each retriever
        // looks deeper.
        let filtered = query.origin != Origin::All || query.visible.is_some();
        let depth = if filtered { n_fused } else { top_k };
        let stale_index = if query.mode != SearchMode::Vector { self.wait_for_index().await? } else { None };
        // BM25 alone is ranked as the hybrid ranks it (`fusion::keyword`), so it looks as deep.
        let bm25 = |limit: usize, coverage: bool| -> EngineResult<Vec<Bm25Hit>> {
            let request = SearchRequest {
                query: text,
                limit,
                min_score,
                agent_id: query.agent_id,
                status: Status::Active,
                coverage,
            };
            self.read_index(|| self.index.search(&request))
        };
        // The readiness check is cheap; only embedding the query is worth a blocking thread,
        // so a daemon without a model answers at BM25's cost.
        let (vector_result, bm25_hits) = match (query.mode, self.vector_ready()) {
            (SearchMode::Bm25, _) => (None, bm25(n_fused, true)?),
            (SearchMode::Vector, Ok(())) => {
                (Some(on_blocking_thread(|| self.vector_search(text, depth, filter))), Vec::new())
            }
            (SearchMode::Vector, Err(why)) => return Err(EngineError::Unavailable(why)),
            (SearchMode::Hybrid, Ok(())) => {
                // Embedding the query takes milliseconds, BM25 well under one: BM25 runs on a
                // second thread meanwhile, so hybrid search costs about what vector search does.
                let (vectors, bm25_hits) = on_blocking_thread(|| {
                    std::thread::scope(|scope| {
                        let bm25_hits = scope.spawn(|| bm25(n_fused, true));
                        let vectors = self.vector_search(text, n_fused, filter);
                        (vectors, bm25_hits.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    })
                });
                (Some(vectors), bm25_hits?)
            }
            (SearchMode::Hybrid, Err(why)) => (Some(Err(why)), bm25(n_fused, true)?),
        };
        let (vector_hits, mut note) = match vector_result {
            None => (None, None),
            Some(Ok(found)) => (Some(found), self.backlog_note()),
            Some(Err(why)) if query.mode == SearchMode::Vector => return Err(EngineError::Unavailable(why)),
            Some(Err(why)) => (None, Some(format!("searched by BM25 alone: {why}"))),
        };
        // An identifier or a quoted string asks for the experience that holds it, whatever
        // the vectors or the other words say (a vector-only search stays what it says it is).
        let terms = if query.mode == SearchMode::Vector { Vec::new() } else { self.lookups(text, top_k) };
        let coverage: HashMap<String, f32> = bm25_hits.iter().map(|hit| (hit.id.clone(), hit.coverage)).collect();
        let coverage_of = |id: &String| coverage.get(id).copied().unwrap_or(0.0);
        // What speaks for each candidate, kept apart from its rank for auto-recall's decision.
        let mut evidence: HashMap<String, Evidence> = bm25_hits
            .iter()
            .map(|hit| (hit.id.clone(), Evidence { words: hit.evidence, ..Evidence::default() }))
            .collect();
        if let Some((model_id, vector_hits)) = &vector_hits {
            let floor = self.semantic.choice().min_similarity_for(model_id);
            for hit in vector_hits {
                let entry = evidence.entry(hit.id.clone()).or_default();
                entry.cosine = Some(hit.score);
                entry.floor = floor;
            }
        }
        let bm25_hits = scored(bm25_hits);
        let (ranked, mode): (Vec<(String, f32)>, SearchMode) = match (query.mode, vector_hits) {
            (SearchMode::Hybrid, Some((model_id, vector_hits))) => {
                let vector_hits: Vec<(String, f32)> = vector_hits.into_iter().map(|hit| (hit.id, hit.score)).collect();
                let window_share = self.semantic.window_share();
                let fused =
                    kb_embed::fusion::hybrid(&model_id, text, window_share, &bm25_hits, &vector_hits, coverage_of);
                (fused, SearchMode::Hybrid)
            }
            (SearchMode::Vector, Some((_, vector_hits))) => {
                (vector_hits.into_iter().map(|hit| (hit.id, hit.score)).collect(), SearchMode::Vector)
            }
            _ => {
                // Ranked as a hybrid search would rank them without vectors, from as many
                // candidates; then cut to the depth BM25 alone answers with, so that an exact
                // term of the query is looked for among no more candidates than before.
                let mut ranked = kb_embed::fusion::keyword(&bm25_hits, coverage_of);
                ranked.truncate(depth);
                (ranked, SearchMode::Bm25)
            }
        };
        if mode == SearchMode::Bm25 && query.mode == SearchMode::Bm25 {
            note = None;
        }
        if let Some(stale) = stale_index {
            note = Some(match note {
                Some(note) => format!("{stale}; {note}"),
                None => stale,
            });
        }
        let ranked = if terms.is_empty() {
            ranked
        } else {
            let (pinned, holders) = self.pin_exact(ranked, &terms)?;
            for id in holders {
                evidence.entry(id).or_default().exact = true;
            }
            pinned
        };

        // The stored rows decide (the store is the truth: a vector hit of an experience changed
        // since is dropped; an origin or visibility filter looks at the rows), so candidates are
        // read best first, a chunk at a time, until the answer is full: one read of `top_k` rows
        // in the usual case, more only when some are refused.
        let mut found = Vec::with_capacity(top_k);
        for chunk in ranked.chunks(top_k.max(MIN_READ)) {
            let ids: Vec<&str> = chunk.iter().map(|(id, _)| id.as_str()).collect();
            for (experience, author) in self.reader().get_many_with_authors(&ids)? {
                if found.len() == top_k {
                    break;
                }
                let relevance =
                    chunk.iter().find(|(id, _)| id == experience.id.as_str()).map(|(_, score)| *score).unwrap_or(0.0);
                if experience.status == Status::Active
                    && experience.score >= min_score
                    && query.agent_id.is_none_or(|agent| experience.agent_id.as_deref() == Some(agent))
                    && query.origin.admits(experience.source)
                {
                    let evidence = evidence.get(experience.id.as_str()).copied().unwrap_or_default();
                    let item = Found { experience, relevance, evidence, author };
                    if query.visible.is_none_or(|visible| visible(&item)) {
                        found.push(item);
                    }
                }
            }
            if found.len() == top_k {
                break;
            }
        }
        if !found.is_empty() {
            let mut recalls = self.recalls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            for item in &found {
                *recalls.entry(item.experience.id.to_string()).or_default() += 1;
            }
        }
        Ok((found, Answered { mode, note }))
    }

    /// The exact terms of `query` ([`kb_embed::fusion::exact_terms`]) that look something up:
    /// every quoted string, and the identifiers that no more experiences can hold than the
    /// answer shows. An identifier that more hold (`X11`, `Node.js` in a store
    /// of package descriptions) singles nothing out: it is a topic word, which BM25 weighs by
    /// its rarity, and putting first whatever holds it only pushed down better matches that
    /// word it otherwise (measured on the Debian sets: see the README).
    pub(super) fn lookups(&self, query: &str, top_k: usize) -> Vec<kb_embed::fusion::ExactTerm> {
        let mut terms = kb_embed::fusion::exact_terms(query);
        terms.retain(|term| {
            !term.ignore_case
                // An index that cannot say keeps the term: better a pin too many than a lookup lost.
                || self.read_index(|| self.index.max_holders(&term.text)).map_or(true, |holders| holders <= top_k as u64)
        });
        terms
    }

    /// The candidates whose task, resource or result holds the most of `terms` first
    /// ([`kb_embed::fusion::pin_exact`]), raised to the best candidate's relevance so that
    /// relevance still falls down the list; and the ids of those that hold an identifier of them.
    pub(super) fn pin_exact(
        &self,
        ranked: Vec<(String, f32)>,
        terms: &[kb_embed::fusion::ExactTerm],
    ) -> EngineResult<(Ranked, Vec<String>)> {
        let ids: Vec<&str> = ranked.iter().map(|(id, _)| id.as_str()).collect();
        let texts: HashMap<String, String> = self
            .reader()
            .get_many(&ids)?
            .into_iter()
            .map(|experience| {
                let text = semantic::embedding_text(&experience.task, &experience.resource, &experience.result);
                (experience.id.to_string(), text)
            })
            .collect();
        let holds = |id: &String| texts.get(id).is_some_and(|text| terms.iter().any(|term| term.found_in(text)));
        let best = ranked.iter().map(|(_, score)| *score).fold(f32::NEG_INFINITY, f32::max);
        let mut pinned = kb_embed::fusion::pin_exact(ranked, terms, |id| texts.get(id).cloned());
        // A quoted string (a word in backticks in a pasted log) is no lookup by itself: only an
        // identifier counts as evidence for auto-recall.
        let holds_identifier = |id: &String| {
            texts.get(id).is_some_and(|text| terms.iter().any(|term| term.ignore_case && term.found_in(text)))
        };
        let mut holders = Vec::new();
        for (id, score) in &mut pinned {
            if holds(id) {
                *score = score.max(best);
            }
            if holds_identifier(id) {
                holders.push(id.clone());
            }
        }
        Ok((pinned, holders))
    }

    /// Whether vectors can answer now; `Err` says why not.
    pub(super) fn vector_ready(&self) -> Result<(), String> {
        match self.semantic.state() {
            kb_embed::EmbedderState::Ready { .. } => Ok(()),
            kb_embed::EmbedderState::Loading => Err("the embedding model is still loading".to_owned()),
            kb_embed::EmbedderState::Unavailable { reason } => Err(format!("no embedding model ({reason})")),
        }
    }

    /// Embeds the query and searches the vectors: the id of the model that answered (the fusion
    /// depends on it) and its hits, however low their cosines: ranking uses no floor (a floor
    /// measured on some sets cut the true matches of short conversational turns on others,
    /// issue 25), and whether a hit is worth showing unasked is decided apart
    /// (`relevance::Evidence`). `Err` says why vectors cannot answer.
    pub(super) fn vector_search(
        &self,
        text: &str,
        k: usize,
        filter: VectorFilter<'_>,
    ) -> Result<(String, Vec<kb_embed::Hit>), String> {
        let (model_id, vector) =
            self.semantic.embed_query_now(text).ok_or("the query could not be embedded (see the log)")?;
        let hits = self
            .semantic
            .search(&model_id, &vector, k, filter)
            .ok_or_else(|| "the vector index is not loaded yet".to_owned())?;
        Ok((model_id, hits))
    }

    pub(super) fn backlog_note(&self) -> Option<String> {
        // Experiences a reindex queued to be embedded again keep their vectors meanwhile.
        let backlog = self.semantic.missing();
        (backlog > 0).then(|| {
            format!("{backlog} experiences are not embedded yet; until they are, only their words can find them")
        })
    }

    /// Writes accumulated recall counters to the store. Counters are statistics, so they are
    /// batched rather than written (and fsynced) on every search.
    pub fn flush_recalls(&self) -> EngineResult<()> {
        let recalls: Vec<(String, u64)> = {
            let mut recalls = self.recalls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            recalls.drain().collect()
        };
        if recalls.is_empty() {
            return Ok(());
        }
        self.lock_writer().add_recalls(&recalls)?;
        Ok(())
    }
}

/// Experience ids with their scores, best first.
type Ranked = Vec<(String, f32)>;
