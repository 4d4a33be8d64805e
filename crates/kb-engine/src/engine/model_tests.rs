//! The engine with a model of the tests' own (issue 25): which submits wait for the model before
//! they commit, what search finds meanwhile, near-duplicates still merged, and who the model
//! serves first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use kb_core::NewExperience;
use kb_proto::Paths;

use super::{Engine, ImportEntry, Origin, SearchMode, SearchQuery};
use crate::config::EngineConfig;

/// A bag of words: each lowercased word counted in one of 64 dimensions, normalised, so texts
/// with the same words in any order get cosine 1. Counts its runs.
#[derive(Default)]
struct Words {
    runs: AtomicUsize,
}

fn bag_of_words(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0f32; 64];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|word| !word.is_empty()) {
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3));
        vector[(hash % 64) as usize] += 1.0;
    }
    kb_embed::normalize(&vector)
}

impl kb_embed::Embedder for Words {
    fn model_id(&self) -> &str {
        "words"
    }

    fn dimensions(&self) -> usize {
        64
    }

    fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(texts.iter().map(|text| bag_of_words(text)).collect())
    }
}

/// A model whose run of the text "held" does not end until the test says so; it logs the
/// first text of every run, in the order the runs were made.
struct Held {
    log: Mutex<Vec<String>>,
    release: Mutex<mpsc::Receiver<()>>,
}

impl kb_embed::Embedder for Held {
    fn model_id(&self) -> &str {
        "held"
    }

    fn dimensions(&self) -> usize {
        64
    }

    fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
        self.log.lock().unwrap().push(texts[0].to_owned());
        if texts[0] == "held" {
            self.release.lock().unwrap().recv().unwrap();
        }
        Ok(texts.iter().map(|text| bag_of_words(text)).collect())
    }
}

fn engine_with_model(model: Arc<dyn kb_embed::Embedder>) -> (tempfile::TempDir, Arc<Engine>) {
    let home = tempfile::tempdir().unwrap();
    let engine = Engine::open(Paths::resolve(Some(home.path().to_path_buf()), None), EngineConfig::default()).unwrap();
    engine.prepare_index();
    engine.semantic.attach_model(&engine.lock_writer(), model).unwrap();
    (home, engine)
}

fn experience(task: &str, resource: &str, result: &str) -> NewExperience {
    NewExperience { task: task.into(), resource: resource.into(), result: result.into(), ..NewExperience::default() }
}

fn by_words(query: &str) -> SearchQuery<'_> {
    SearchQuery {
        query,
        top_k: None,
        min_score: None,
        agent_id: None,
        mode: SearchMode::Bm25,
        origin: Origin::All,
        visible: None,
    }
}

#[tokio::test]
async fn a_submit_like_no_stored_one_commits_before_its_vector_is_found_by_its_words_and_embedded_first() {
    let model = Arc::new(Words::default());
    let (_home, engine) = engine_with_model(model.clone());
    let imported = engine
        .import(
            ["cache docker layers", "pin the node version", "rotate the api keys"]
                .into_iter()
                .map(|task| Ok(ImportEntry { new: experience(task, "tool", "done"), held: None, variants: Vec::new() }))
                .collect(),
        )
        .unwrap();
    assert_eq!(imported.imported, 3);

    let submitted =
        engine.submit(experience("deploy the chart with helm upgrade", "helm", "the release rolled out")).unwrap();
    assert_eq!(model.runs.load(Ordering::SeqCst), 0, "the submit did not wait for the model");
    // Read-your-write: the same client's next search finds it by its words.
    let (found, _) = engine.search(by_words("helm upgrade")).await.unwrap();
    assert_eq!(found.first().map(|found| found.experience.id.to_string()), Some(submitted.id.clone()));
    assert!(!engine.semantic.has_vector(&submitted.id));
    assert_eq!(engine.semantic.status().backlog, 4, "status counts it in the backlog");

    // Its vector follows, ahead of the import queued before it.
    let taken = engine.semantic.take_backlog(1, Duration::ZERO);
    assert_eq!(taken, std::slice::from_ref(&submitted.id));
    let mut stored = std::collections::HashSet::new();
    engine.embed_batch(model.as_ref(), "words", &taken, &mut stored).unwrap();
    engine.semantic.batch_done();
    assert!(engine.semantic.has_vector(&submitted.id));
    assert_eq!(engine.semantic.status().backlog, 3);
}

#[test]
fn a_near_duplicate_of_a_submit_still_waiting_for_its_vector_is_merged_into_it() {
    let model = Arc::new(Words::default());
    let (_home, engine) = engine_with_model(model.clone());
    let first =
        engine.submit(experience("Run the tests once", "vitest --run", "no watch mode, exits when done")).unwrap();
    assert!(!engine.semantic.has_vector(&first.id), "committed before its vector");

    // The same words in another order: no exact duplicate, a near-identical one.
    let second =
        engine.submit(experience("once run the tests", "vitest --run", "exits when done, no watch mode")).unwrap();
    assert!(second.merged, "{second:?}");
    assert_eq!(second.id, first.id);
    assert!(second.similarity.is_some_and(|similarity| similarity >= 0.97), "{second:?}");
    assert_eq!(model.runs.load(Ordering::SeqCst), 1, "both texts embedded in one run");

    // A near-identical one that says something else is kept apart and told so, as before,
    // without waiting for the model: its words alone rule a merge out.
    let third = engine.submit(experience("Run the tests once", "vitest --run", "watch mode, exits when done")).unwrap();
    assert!(!third.merged);
    assert!(third.note().is_some_and(|note| note.contains(&first.id)), "{:?}", third.note());
    assert_eq!(model.runs.load(Ordering::SeqCst), 1, "the third did not wait for the model");
}

/// Issue 25: under 50 writers, one submit in eighteen found a stored experience holding most of
/// its words and waited for the model before its commit (submit p99 4.5 s with e5), though
/// their words already differed in a value. Such a submit commits at once, is told which one
/// it was kept apart from, and its vector follows through the backlog; one with other content
/// words is kept apart silently.
#[test]
fn a_submit_whose_words_differ_from_every_stored_twin_commits_without_waiting_for_the_model() {
    let model = Arc::new(Words::default());
    let (_home, engine) = engine_with_model(model.clone());
    let first = engine
        .submit(experience("bump the retry limit of the sync job (round 5)", "jobs.toml", "the sync job recovers"))
        .unwrap();
    let again = engine
        .submit(experience("bump the retry limit of the sync job (round 205)", "jobs.toml", "the sync job recovers"))
        .unwrap();
    assert!(!again.merged, "{again:?}");
    assert_ne!(again.id, first.id);
    let apart = again.kept_apart.as_ref().expect("told what it was kept apart from");
    assert_eq!(apart.similar_to, first.id);
    assert!(apart.reason.contains("205"), "{apart:?}");
    let other = engine
        .submit(experience("bump the retry limit of the mail job (round 5)", "jobs.toml", "the mail job recovers"))
        .unwrap();
    assert!(!other.merged && other.kept_apart.is_none(), "{other:?}");
    assert_eq!(model.runs.load(Ordering::SeqCst), 0, "none of them waited for the model");
    assert_eq!(engine.semantic.status().backlog, 3, "their vectors follow through the backlog");
    assert_eq!(engine.semantic.status().submits_embedded_first, 0);
}

/// A submit's twin is found by its key however many stored experiences use the same words with
/// other values: a BM25 search of the submit's text looked at its five best matches only, and
/// texts repeating the same words (a teammate's flood of them) outranked the twin.
#[test]
fn a_flood_in_the_same_words_cannot_hide_a_submits_twin() {
    let model = Arc::new(Words::default());
    let (_home, engine) = engine_with_model(model.clone());
    let twin = engine
        .submit(experience("bump the retry limit of the sync job (round 7)", "jobs.toml", "the sync job recovers"))
        .unwrap();
    for n in 1..=12 {
        let flood = engine
            .submit(experience(
                &format!("sync job: bump the retry limit of the sync job, retry limit of the sync job (round 7.{n})"),
                "jobs.toml, jobs.toml",
                "the sync job recovers, the sync job recovers",
            ))
            .unwrap();
        assert!(!flood.merged, "{flood:?}");
    }
    let again = engine
        .submit(experience("round 7: the retry limit of the sync job, bump it", "jobs.toml", "The sync job recovers."))
        .unwrap();
    assert!(again.merged, "{again:?}");
    assert_eq!(again.id, twin.id);
}

#[test]
fn a_query_asked_while_writes_and_the_backlog_wait_for_the_model_is_embedded_first() {
    let (release, released) = mpsc::channel();
    let model = Arc::new(Held { log: Mutex::new(Vec::new()), release: Mutex::new(released) });
    let (_home, engine) = engine_with_model(model.clone());
    let semantic = &engine.semantic;
    let until = |what: &dyn Fn() -> bool| {
        while !what() {
            std::thread::yield_now();
        }
    };
    std::thread::scope(|scope| {
        // A write's run holds the model.
        let running = scope.spawn(|| semantic.embed_now("held"));
        until(&|| model.log.lock().unwrap().len() == 1);
        let mut waiting = Vec::new();
        for n in 0..3 {
            waiting.push(scope.spawn(move || semantic.embed_now(&format!("write {n}"))));
            until(&|| semantic.turns.waiting() == [0, n + 1, 0]);
        }
        let backlog = scope.spawn(|| {
            let _turn = semantic.backlog_turn();
            model.log.lock().unwrap().push("backlog".to_owned());
        });
        until(&|| semantic.turns.waiting() == [0, 3, 1]);
        let query = scope.spawn(|| semantic.embed_query_now("query"));
        until(&|| semantic.turns.waiting() == [1, 3, 1]);
        release.send(()).unwrap();
        assert!(running.join().unwrap().is_some());
        assert!(query.join().unwrap().is_some());
        for write in waiting {
            assert!(write.join().unwrap().is_some());
        }
        backlog.join().unwrap();
    });
    // The three writes waiting together took one run.
    let log = model.log.lock().unwrap().clone();
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(log[..2], ["held", "query"], "{log:?}");
    assert!(log[2].starts_with("write"), "{log:?}");
    assert_eq!(log[3], "backlog", "{log:?}");
}

#[test]
fn writes_waiting_for_the_model_together_are_embedded_in_one_run() {
    let (release, released) = mpsc::channel();
    let model = Arc::new(Held { log: Mutex::new(Vec::new()), release: Mutex::new(released) });
    let (_home, engine) = engine_with_model(model.clone());
    let semantic = &engine.semantic;
    std::thread::scope(|scope| {
        let running = scope.spawn(|| semantic.embed_now("held"));
        while model.log.lock().unwrap().len() != 1 {
            std::thread::yield_now();
        }
        let waiting: Vec<_> = (0..3)
            .map(|n| {
                let write = scope.spawn(move || semantic.embed_texts_now(&[&format!("write {n}"), "its twin"]));
                while semantic.turns.waiting() != [0, n + 1, 0] {
                    std::thread::yield_now();
                }
                write
            })
            .collect();
        release.send(()).unwrap();
        assert!(running.join().unwrap().is_some());
        for (n, write) in waiting.into_iter().enumerate() {
            let (model_id, vectors) = write.join().unwrap().expect("each write gets its vectors");
            assert_eq!(model_id, "held");
            assert_eq!(vectors, [bag_of_words(&format!("write {n}")), bag_of_words("its twin")], "its own");
        }
    });
    // One run for the write that held the model, one for the three that waited.
    let log = model.log.lock().unwrap().clone();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[1].starts_with("write "), "{log:?}");
    assert_eq!(semantic.turns.served(), [0, 2, 0]);
}

/// A model that sees the first 40 bytes of a passage: its window share is 40 / length.
#[derive(Default)]
struct FortyBytes {
    /// Whether counting tokens fails (a tokenizer's error), and how often it was asked.
    failing: std::sync::atomic::AtomicBool,
    counted: AtomicUsize,
}

impl kb_embed::Embedder for FortyBytes {
    fn model_id(&self) -> &str {
        "forty-bytes"
    }

    fn dimensions(&self) -> usize {
        64
    }

    fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| bag_of_words(&text[..text.len().min(40)])).collect())
    }

    fn window_shares(&self, passages: &[&str]) -> kb_embed::Result<Vec<f32>> {
        self.counted.fetch_add(1, Ordering::SeqCst);
        if self.failing.load(Ordering::SeqCst) {
            return Err(kb_embed::Error::Embed {
                model_id: "forty-bytes".into(),
                n_texts: passages.len(),
                reason: "the tokenizer failed".into(),
            });
        }
        Ok(passages.iter().map(|text| (40.0 / text.len().max(1) as f32).min(1.0)).collect())
    }
}

/// Imports `texts` as tasks and embeds them all, as the embedder's loop would.
fn import_and_embed(engine: &Engine, model: &FortyBytes, texts: Vec<String>) {
    let entries = texts
        .into_iter()
        .map(|task| Ok(ImportEntry { new: experience(&task, "r", "x"), held: None, variants: Vec::new() }));
    assert!(engine.import(entries.collect()).unwrap().imported > 0);
    loop {
        let taken = engine.semantic.take_backlog(64, Duration::ZERO);
        if taken.is_empty() {
            break;
        }
        engine.embed_batch(model, "forty-bytes", &taken, &mut Default::default()).unwrap();
        engine.semantic.batch_done();
    }
}

fn measure_window_share(engine: &Engine, model: &FortyBytes) -> anyhow::Result<()> {
    engine.semantic.measure_window_share(|n| Ok(engine.reader().sample_embedding_sources(n)?), model)
}

#[test]
fn the_store_s_window_share_is_measured_from_its_texts_and_again_once_it_changed_by_a_tenth() {
    let model = Arc::new(FortyBytes::default());
    let (_home, engine) = engine_with_model(model.clone());
    assert_eq!(engine.semantic.window_share(), 1.0, "an empty store counts as seen whole");
    // Ten texts of 80 bytes as embedded (a task of 76, "\nr\nx"): the model sees half of each.
    let long = (0..10).map(|n| format!("note{n:02} {}", format!("word{n} ").repeat(20))[..76].to_owned());
    import_and_embed(&engine, &model, long.collect());
    measure_window_share(&engine, &model).unwrap();
    assert!((engine.semantic.window_share() - 0.5).abs() < 1e-6, "{}", engine.semantic.window_share());
    // Ten short ones: the store changed by far more than a tenth, and the mean is measured again.
    import_and_embed(&engine, &model, (0..10).map(|n| format!("short {n}")).collect());
    measure_window_share(&engine, &model).unwrap();
    assert!((engine.semantic.window_share() - 0.75).abs() < 1e-6, "{}", engine.semantic.window_share());
    // One more long one is less than a tenth: the last measurement stands.
    import_and_embed(&engine, &model, vec![format!("late {}", "w".repeat(200))]);
    measure_window_share(&engine, &model).unwrap();
    assert!((engine.semantic.window_share() - 0.75).abs() < 1e-6, "{}", engine.semantic.window_share());
}

#[test]
fn a_window_share_that_cannot_be_measured_keeps_the_last_and_is_tried_again_only_after_a_tenth_of_change() {
    let model = Arc::new(FortyBytes::default());
    let (_home, engine) = engine_with_model(model.clone());
    // Texts of 80 bytes as embedded (tasks of 76): the model sees half of each.
    let long =
        |tag: &str| (0..10).map(|n| format!("{tag}{n:02} {}", "w".repeat(80))[..76].to_owned()).collect::<Vec<_>>();
    import_and_embed(&engine, &model, long("first"));
    model.failing.store(true, Ordering::SeqCst);
    let error = measure_window_share(&engine, &model).unwrap_err();
    assert!(format!("{error:#}").contains("the tokenizer failed"), "{error:#}");
    assert_eq!(engine.semantic.measured_window_share(), None, "nothing measured yet");
    assert_eq!(engine.semantic.window_share(), 1.0, "counts as seen whole until measured");
    // The embedding loop asks on every turn: the failed attempt is not repeated while the
    // store has not changed by a tenth.
    for _ in 0..5 {
        measure_window_share(&engine, &model).unwrap();
    }
    assert_eq!(model.counted.load(Ordering::SeqCst), 1, "tried once");
    // Healed, and the store changed by a tenth: measured again.
    model.failing.store(false, Ordering::SeqCst);
    import_and_embed(&engine, &model, long("second"));
    measure_window_share(&engine, &model).unwrap();
    assert_eq!(model.counted.load(Ordering::SeqCst), 2);
    assert!((engine.semantic.window_share() - 0.5).abs() < 1e-6, "{}", engine.semantic.window_share());
    // Failing again keeps the last measurement.
    model.failing.store(true, Ordering::SeqCst);
    import_and_embed(&engine, &model, long("third"));
    assert!(measure_window_share(&engine, &model).is_err());
    assert!((engine.semantic.window_share() - 0.5).abs() < 1e-6, "{}", engine.semantic.window_share());
}
