//! The query session (issue 25): a second ONNX Runtime session of the loaded model that embeds
//! nothing but search queries, with turns of its own, so that a query never waits for a write's
//! or the backlog's run on the main session. It is loaded once the main session is ready (it does
//! not hold up readiness) and checked to be the same model giving the same vector; until then, or
//! when it cannot be loaded, queries take the main session's turns first, as before, and
//! `status` says why.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use kb_embed::{Embedder, FastEmbedder};

use super::Semantic;
use crate::turns::{ModelTurns, Priority};

/// The query session gives the same vectors as the main one, up to this much in any component:
/// ONNX Runtime may add in another order with another number of threads.
const SAME_VECTOR_TOLERANCE: f32 = 1e-4;
/// The text both sessions embed when the query session is loaded.
const PROBE: &str = "which command rebuilds the search index";

/// Where search queries are embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryRoute {
    /// Their own session of the model, with this many ONNX Runtime threads.
    Own { threads: usize },
    /// The main session, ahead of writes and the backlog but after the run in progress, for
    /// this reason.
    Shared { reason: String },
}

impl QueryRoute {
    /// How `status` says it.
    pub fn describe(&self) -> String {
        match self {
            QueryRoute::Own { threads } => {
                format!("own session ({threads} thread{})", if *threads == 1 { "" } else { "s" })
            }
            QueryRoute::Shared { reason } => format!("shared with writes: {reason}"),
        }
    }
}

/// The query session and its turns.
pub(super) struct QuerySession {
    embedder: RwLock<Option<Arc<dyn Embedder>>>,
    route: RwLock<QueryRoute>,
    /// One query's run at a time on the query session (several searches at once queue here,
    /// never behind a write).
    pub(super) turns: ModelTurns,
}

impl Default for QuerySession {
    fn default() -> QuerySession {
        QuerySession {
            embedder: RwLock::new(None),
            route: RwLock::new(QueryRoute::Shared { reason: "the model is not loaded yet".to_owned() }),
            turns: ModelTurns::default(),
        }
    }
}

impl QuerySession {
    fn embedder(&self) -> Option<Arc<dyn Embedder>> {
        self.embedder.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Drops the query session (a model is being loaded again): queries share the main one.
    pub(super) fn clear(&self, reason: &str) {
        *self.embedder.write().unwrap_or_else(PoisonError::into_inner) = None;
        self.set_route(QueryRoute::Shared { reason: reason.to_owned() });
    }

    fn set_route(&self, route: QueryRoute) {
        *self.route.write().unwrap_or_else(PoisonError::into_inner) = route;
    }

    pub(super) fn route(&self) -> QueryRoute {
        self.route.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Semantic {
    /// Loads the query session of `main`, the model just attached (blocking: ONNX Runtime reads
    /// the same files again). When it is turned off (`embedding.query_threads = 0`), does not
    /// load, is another model or gives other vectors, queries share `main`'s session and the
    /// reason is logged and shown by `status`; vectors never stop because of it.
    pub fn load_query_session(&self, main: &Arc<dyn Embedder>) -> QueryRoute {
        let threads = self.choice.query_threads;
        let outcome = if threads == 0 {
            Err("turned off in the config (embedding.query_threads = 0)".to_owned())
        } else {
            self.query.set_route(QueryRoute::Shared { reason: "their own session is loading".to_owned() });
            self.open_query_session(main, threads)
        };
        // The model was loaded again while this one loaded (it runs on a thread of its own): the
        // load for the new one decides.
        if !self.embedder().is_some_and(|current| Arc::ptr_eq(&current, main)) {
            return self.query.route();
        }
        let route = match outcome {
            Ok(session) => {
                *self.query.embedder.write().unwrap_or_else(PoisonError::into_inner) = Some(session);
                QueryRoute::Own { threads }
            }
            Err(reason) => {
                tracing::warn!("search queries share the embedding model's session with writes: {reason}");
                *self.query.embedder.write().unwrap_or_else(PoisonError::into_inner) = None;
                QueryRoute::Shared { reason }
            }
        };
        self.query.set_route(route.clone());
        route
    }

    fn open_query_session(&self, main: &Arc<dyn Embedder>, threads: usize) -> Result<Arc<dyn Embedder>, String> {
        let spec = self.choice.spec.as_ref().ok_or("no model is configured")?;
        // At the normal priority: queries come first.
        let options =
            kb_embed::LoadOptions { intra_threads: Some(threads), on_thread_start: None, ..self.load_options(spec) };
        let started = Instant::now();
        let session = FastEmbedder::load_with(spec, self.choice.onnxruntime.as_deref(), &options)
            .map_err(|error| format!("the second session does not load: {}", kb_embed::error_chain(&error)))?;
        if session.model_id() != main.model_id() {
            return Err(format!(
                "the second session loaded {} where the main one has {} (did the model files change?)",
                session.model_id(),
                main.model_id()
            ));
        }
        let own = session.embed_query(PROBE).map_err(|error| kb_embed::error_chain(&error))?;
        let shared = {
            let _turn = self.turns.take(Priority::Query);
            main.embed_query(PROBE).map_err(|error| kb_embed::error_chain(&error))?
        };
        let apart = largest_difference(&own, &shared);
        if apart.is_nan() || apart > SAME_VECTOR_TOLERANCE {
            return Err(format!("the two sessions embed the same text differently (by up to {apart})"));
        }
        tracing::info!(
            model_id = session.model_id(),
            threads,
            took_ms = started.elapsed().as_millis() as u64,
            "query session ready: searches no longer wait for writes' runs of the model"
        );
        Ok(Arc::new(session))
    }

    /// The query embedded by the query session, when it is loaded and of the model the vector
    /// index holds; `None` otherwise, or when it fails (logged), and the query goes to the main
    /// session.
    pub(super) fn embed_query_apart(&self, query: &str) -> Option<(String, Vec<f32>)> {
        let session = self.query.embedder()?;
        let main = self.embedder()?;
        if session.model_id() != main.model_id() || !self.state().is_ready() {
            return None;
        }
        // The backlog still keeps its runs short while searches are made: they share the CPU.
        self.turns.note_query();
        let _turn = self.query.turns.take(Priority::Query);
        match session.embed_query(query) {
            Ok(vector) if vector.len() == main.dimensions() => Some((session.model_id().to_owned(), vector)),
            Ok(vector) => {
                tracing::warn!(dimensions = vector.len(), "the query session gave a vector of the wrong size");
                None
            }
            Err(error) => {
                tracing::warn!(
                    "the query session failed, so the main one embeds the query: {}",
                    kb_embed::error_chain(&error)
                );
                None
            }
        }
    }

    /// Turns the query session gave, by priority (only queries take them).
    pub fn query_turns_served(&self) -> [u64; 3] {
        self.query.turns.served()
    }

    /// Where search queries are embedded now.
    pub fn query_route(&self) -> QueryRoute {
        self.query.route()
    }
}

/// The largest difference between two vectors' components; infinite when their sizes differ.
fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return f32::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}
