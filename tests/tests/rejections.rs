//! Rejections that stick through a real daemon and a scripted extraction endpoint: a proposal
//! that says again in other words what the user rejected is not proposed again, with a model
//! (as similar as a merge) or without one (the same claims and most of the words), while a
//! proposal with another outcome, value or tool still reaches the review queue.

mod common;

use std::time::{Duration, Instant};

use common::TestDaemon;
use common::extraction::*;
use common::llm::{Reply, ScriptedLlm};
use serde_json::json;

#[test]
fn a_reworded_repeat_of_a_rejected_proposal_is_not_proposed_again() {
    let llm = ScriptedLlm::start();
    let home = tempfile::Builder::new().prefix("kh-ex-").tempdir().expect("temp dir");
    let config = format!(
        "[embedding]\nsimilar_threshold = 0.9\n\n[extraction]\nbase_url = \"{}\"\nmodel = \"scripted\"\nretry_seconds = 1\n",
        llm.base_url
    );
    std::fs::write(home.path().join("config.toml"), config).expect("config");
    let tiny = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/kb-embed/tests/fixtures/tiny-model");
    let ort = kb_embed::runtime::library_for_tests_and_benchmarks().unwrap_or_else(|reason| panic!("{reason}"));
    let daemon =
        TestDaemon::start_in_with(home, &[("KNOWHUB_MODEL_DIR", tiny.as_ref()), ("ORT_DYLIB_PATH", ort.as_os_str())]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while daemon.ok("status", json!({}))["embedder"]["state"] != "ready" {
        assert!(Instant::now() < deadline, "the tiny model should load");
        std::thread::sleep(Duration::from_millis(50));
    }
    let proposal = |task: &str| {
        json!({"task": task, "resource": "vitest --run", "result": "watch mode is the default", "score": 4,
               "outcome": "success", "confidence": 0.9, "content": "", "evidence": [5]})
    };
    llm.script([Reply::proposals(json!([proposal("make vitest exit after one run in CI")]), 500)]);
    let config = plugin_config(true, "strict", true);
    agent_end(&daemon, "s1", &deploy_session(1), &config);
    wait_for_jobs(&daemon, 1, Duration::from_secs(30));
    let held = pending(&daemon);
    assert_eq!(held.len(), 1);
    daemon.ok("kb.reject", json!({"ids": [held[0]["id"]]}));

    // The LLM proposes it again in other words, beside something new.
    let other = json!({"task": "pin the node version in CI", "resource": ".nvmrc", "result": "setup-node reads it",
        "score": 4, "outcome": "success", "confidence": 0.9, "content": "", "evidence": [5]});
    llm.script([Reply::proposals(json!([proposal("Make vitest exit after just one run in CI."), other]), 500)]);
    agent_end(&daemon, "s2", &deploy_session(100), &config);
    let status = wait_for_jobs(&daemon, 2, Duration::from_secs(30));
    assert_eq!(status["rejected_before"], 1, "{status}");
    let held = pending(&daemon);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["task"], "pin the node version in CI");
}

/// Without any model: the attack round's rewordings of a rejected proposal (a synonym, a
/// paraphrase, the fields in another order) are refused as it is, counted and logged with the
/// id they reword; a proposal with another outcome, another path or another tool is a different
/// experience and still reaches the review queue.
#[test]
fn without_a_model_a_rewording_of_a_rejected_proposal_is_refused_and_a_different_one_is_not() {
    let llm = ScriptedLlm::start();
    let daemon = start(&llm, "");
    let rejected = json!({"task": "Deploy the docs site to /var/www/docs", "resource": "npm run deploy",
        "result": "Run it as root with sudo npm run deploy; the EACCES goes away", "score": 4,
        "outcome": "success", "confidence": 0.9, "content": "", "evidence": [5]});
    let config = plugin_config(true, "strict", true);
    llm.script([Reply::proposals(json!([rejected.clone()]), 500)]);
    agent_end(&daemon, "s1", &deploy_session(1), &config);
    wait_for_jobs(&daemon, 1, Duration::from_secs(30));
    let held = pending(&daemon);
    assert_eq!(held.len(), 1, "{held:?}");
    let rejected_id = held[0]["id"].as_str().unwrap().to_owned();
    daemon.ok("kb.reject", json!({"ids": [rejected_id]}));

    let with = |task: &str, resource: &str, result: &str| {
        let mut proposal = rejected.clone();
        proposal["task"] = json!(task);
        proposal["resource"] = json!(resource);
        proposal["result"] = json!(result);
        proposal
    };
    let rewordings = [
        with(
            "Deploy the documentation site to /var/www/docs",
            "npm run deploy",
            "Run it as root with sudo npm run deploy; the EACCES goes away",
        ),
        with(
            "Publish the docs site into /var/www/docs",
            "npm run deploy",
            "Running sudo npm run deploy as root makes the EACCES go away",
        ),
        with(
            "Run it as root with sudo npm run deploy; the EACCES goes away",
            "npm run deploy",
            "Deploy the docs site to /var/www/docs",
        ),
    ];
    let different = [
        // Another outcome.
        with(
            "Deploy the docs site to /var/www/docs",
            "npm run deploy",
            "Running it as root with sudo npm run deploy fails; the EACCES stays",
        ),
        // Another path (a value).
        with(
            "Deploy the docs site to /var/www/blog",
            "npm run deploy",
            "Run it as root with sudo npm run deploy; the EACCES goes away",
        ),
        // Another tool.
        with(
            "Deploy the docs site to /var/www/docs",
            "rsync to the web host",
            "Copy the build as the www-data user instead; the EACCES goes away",
        ),
    ];
    // Two answers, each within the per-job limit of five.
    llm.script([Reply::proposals(json!(rewordings), 500), Reply::proposals(json!(different), 500)]);
    agent_end(&daemon, "s2", &deploy_session(100), &config);
    wait_for_jobs(&daemon, 2, Duration::from_secs(30));
    agent_end(&daemon, "s3", &deploy_session(200), &config);
    let status = wait_for_jobs(&daemon, 3, Duration::from_secs(30));
    assert_eq!(status["rejected_before"], 3, "{status}");
    let held: Vec<String> = pending(&daemon).iter().map(|held| held["result"].as_str().unwrap().to_owned()).collect();
    assert_eq!(held.len(), 3, "{held:?} {status}");
    for proposal in &different {
        assert!(held.contains(&proposal["result"].as_str().unwrap().to_owned()), "{proposal} was refused: {held:?}");
    }
    let log = daemon.log_text();
    assert!(log.contains("says in other words what the user rejected") && log.contains(&rejected_id), "{log}");
}
