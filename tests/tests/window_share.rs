//! The store's window share in `status` (issue 25): the real daemon with the tiny fixture model
//! (a 256-token window) reports 1 while every stored text fits, and a lower share, measured
//! again, once long texts change the store by more than a tenth.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::TestDaemon;
use serde_json::{Value, json};

const TINY_MODEL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/kb-embed/tests/fixtures/tiny-model");

/// `status.embedder.window_share` once `done` accepts it, waiting for the embedding loop.
fn share(daemon: &TestDaemon, done: impl Fn(f64) -> bool) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = daemon.ok("status", json!({}));
        let embedder = &status["embedder"];
        let share = embedder["window_share"].as_f64().filter(|share| embedder["backlog"] == 0 && done(*share));
        if let Some(share) = share {
            return share;
        }
        assert!(Instant::now() < deadline, "window share: {embedder}\nlog:\n{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn items(texts: impl Iterator<Item = (String, String)>) -> Value {
    json!({"items": texts.map(|(task, result)| json!({"task": task, "resource": "notes", "result": result, "score": 3})).collect::<Vec<_>>()})
}

#[test]
fn status_shows_how_much_of_the_store_the_model_window_holds() {
    let ort = kb_embed::runtime::library_for_tests_and_benchmarks()
        .unwrap_or_else(|reason| panic!("{reason} (tests/run installs it)"));
    let home = tempfile::Builder::new().prefix("kh-win-").tempdir().expect("temp dir");
    // A config of its own (the test daemon's default turns embeddings off).
    std::fs::write(home.path().join("config.toml"), "").expect("config");
    let model = PathBuf::from(TINY_MODEL);
    let daemon = TestDaemon::start_in_with(
        home,
        &[("KNOWHUB_MODEL_DIR", model.as_os_str()), ("ORT_DYLIB_PATH", ort.as_os_str())],
    );
    let short = (0..40).map(|n| (format!("short note {n} about migrations"), format!("worked on try {n}")));
    assert_eq!(daemon.ok("kb.import", items(short))["imported"], 40);
    assert_eq!(share(&daemon, |_| true), 1.0, "every text fits the window");
    // Ten texts four times as long as the window: more than a tenth of the store.
    let long = (0..10).map(|n| (format!("long note {n}"), vec![format!("word{n}"); 1000].join(" ")));
    assert_eq!(daemon.ok("kb.import", items(long))["imported"], 10);
    let lower = share(&daemon, |share| share < 1.0);
    assert!(lower > 0.5 && lower < 0.95, "40 texts that fit and 10 the window holds a fraction of: {lower}");
}
