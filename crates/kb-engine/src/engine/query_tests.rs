//! The query session with real models on real ONNX Runtime (issue 25): a query is embedded while
//! a run of the main session holds its turn, with the vector the main session gives; turned off
//! or failing to load, queries share the main session and still get their vectors.

use std::path::PathBuf;
use std::sync::{Arc, mpsc};
use std::time::Duration;

use kb_embed::{Embedder, test_models};
use kb_proto::Paths;

use super::Engine;
use crate::config::{EmbeddingConfig, EngineConfig};
use crate::semantic::QueryRoute;
use crate::turns::Priority;

/// Longer than any query takes, even on a loaded machine: only a query stuck behind the held
/// turn reaches it. No time is asserted otherwise.
const STUCK: Duration = Duration::from_secs(120);

fn ort_library() -> PathBuf {
    kb_embed::runtime::library_for_tests_and_benchmarks().unwrap_or_else(|reason| panic!("{reason}"))
}

fn model(name: &str) -> PathBuf {
    test_models::model_dir(name).unwrap_or_else(|reason| panic!("{reason}"))
}

/// An engine with `model_dir` loaded, the vector index attached and the query session loaded
/// as the embedder service does; the main session and where queries go.
fn engine_with(
    model_dir: PathBuf,
    query_threads: usize,
) -> (tempfile::TempDir, Arc<Engine>, Arc<dyn Embedder>, QueryRoute) {
    let home = tempfile::tempdir().unwrap();
    let embedding = EmbeddingConfig {
        model_dir: Some(model_dir),
        onnxruntime: Some(ort_library()),
        query_threads,
        ..EmbeddingConfig::default()
    };
    let config = EngineConfig { embedding, ..EngineConfig::default() };
    let engine = Engine::open(Paths::resolve(Some(home.path().to_path_buf()), None), config).unwrap();
    engine.prepare_index();
    let main = engine.semantic.load_model().expect("the model loads");
    engine.semantic.attach(&engine.lock_writer(), main.as_ref()).unwrap();
    let route = engine.semantic.load_query_session(&main);
    (home, engine, main, route)
}

/// `query` embedded by the main session itself, taking its turn as every run must.
fn by_the_main_session(engine: &Engine, main: &dyn Embedder, query: &str) -> Vec<f32> {
    let _turn = engine.semantic.turns.take(Priority::Query);
    main.embed_query(query).unwrap()
}

fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn with_e5_a_query_is_embedded_while_a_backlog_run_holds_the_model() {
    let (_home, engine, main, route) = engine_with(model(test_models::MULTILINGUAL_E5), 1);
    assert_eq!(route, QueryRoute::Own { threads: 1 });
    assert_eq!(engine.semantic.query_route().describe(), "own session (1 thread)");
    let semantic = &engine.semantic;
    let queries = ["how do I rebuild the search index", "部署失败后如何回滚"];
    let apart = std::thread::scope(|scope| {
        // A backlog run in progress: the main session is busy until this turn ends.
        let mut run = Some(semantic.backlog_turn());
        let served_before = semantic.turns.served();
        let (sent, embedded) = mpsc::channel();
        for query in queries {
            let sent = sent.clone();
            scope.spawn(move || sent.send((query, semantic.embed_query_now(query))));
        }
        let mut apart = Vec::new();
        for _ in queries {
            match embedded.recv_timeout(STUCK) {
                Ok(done) => apart.push(done),
                Err(_) => {
                    // Let the stuck query go before failing, or the scope would wait for it.
                    run.take();
                    panic!("a query waited for the main session's run");
                }
            }
        }
        assert_eq!(semantic.turns.served(), served_before, "no query took the main session's turn");
        drop(run);
        apart
    });
    for (query, embedded) in apart {
        let (model_id, vector) = embedded.expect("the query has a vector");
        assert_eq!(model_id, main.model_id());
        let shared = by_the_main_session(&engine, main.as_ref(), query);
        // int8 weights: the one-thread session adds in the same order as the two-thread one.
        assert_eq!(vector, shared, "{query}: the sessions differ by up to {}", largest_difference(&vector, &shared));
    }
    assert_eq!(semantic.query_turns_served(), [2, 0, 0]);
}

#[test]
fn turned_off_queries_take_the_main_sessions_turn_first_and_get_the_same_vector() {
    let (_home, engine, main, route) = engine_with(model(test_models::MINILM), 0);
    let QueryRoute::Shared { reason } = &route else { panic!("{route:?}") };
    assert!(reason.contains("embedding.query_threads = 0"), "{reason}");
    assert!(engine.semantic.query_route().describe().starts_with("shared with writes: turned off"));
    let semantic = &engine.semantic;
    let query = "how do I rebuild the search index";
    let embedded = std::thread::scope(|scope| {
        let run = semantic.backlog_turn();
        let query = scope.spawn(|| semantic.embed_query_now(query));
        // It waits for the run in progress, first in line: no time is asserted.
        while semantic.turns.waiting() != [1, 0, 0] {
            std::thread::yield_now();
        }
        drop(run);
        query.join().unwrap()
    });
    let (model_id, vector) = embedded.expect("the query has a vector");
    assert_eq!(model_id, main.model_id());
    assert_eq!(vector, by_the_main_session(&engine, main.as_ref(), query));
    assert_eq!(semantic.query_turns_served(), [0, 0, 0]);
}

/// A model of the test's own: every text the same unit vector.
struct Flat;

impl Embedder for Flat {
    fn model_id(&self) -> &str {
        "flat"
    }

    fn dimensions(&self) -> usize {
        2
    }

    fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }
}

#[test]
fn a_query_session_that_does_not_load_leaves_queries_on_the_main_session_with_the_reason() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("no-such-model");
    let embedding = EmbeddingConfig { model_dir: Some(missing.clone()), ..EmbeddingConfig::default() };
    let config = EngineConfig { embedding, ..EngineConfig::default() };
    let engine = Engine::open(Paths::resolve(Some(home.path().to_path_buf()), None), config).unwrap();
    engine.prepare_index();
    let main: Arc<dyn Embedder> = Arc::new(Flat);
    engine.semantic.attach_model(&engine.lock_writer(), main.clone()).unwrap();
    let QueryRoute::Shared { reason } = engine.semantic.load_query_session(&main) else { panic!("it cannot load") };
    assert!(reason.contains("does not load"), "{reason}");
    assert_eq!(
        engine.semantic.embed_query_now("anything"),
        Some(("flat".to_owned(), vec![1.0, 0.0])),
        "queries still get vectors"
    );
    assert_eq!(engine.semantic.turns.served(), [1, 0, 0], "from the main session");
}
