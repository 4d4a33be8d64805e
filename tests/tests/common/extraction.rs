//! Extraction through a real daemon, shared by the extraction tests: a coding session with a
//! secret in its tool output, the proposal an LLM makes of it, the plugin's hook event, and waits
//! on the extraction status.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::TestDaemon;
use super::llm::{Reply, ScriptedLlm};

pub const GITHUB_TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
pub const EMAIL: &str = "jane.doe@example.com";

/// A coding session: a deploy fails on permissions, works as another user. Its tool output
/// holds a token and an address; message timestamps start at `t`.
pub fn deploy_session(t: i64) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": format!("The docs deploy fails, fix it. Mail {EMAIL} when done."), "timestamp": t}),
        json!({"role": "assistant", "timestamp": t + 1, "content": [
            {"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"command": "npm run deploy"}}]}),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "exec", "isError": true, "timestamp": t + 2,
               "content": [{"type": "text", "text": format!("Error: EACCES: permission denied, open '/var/www/docs/index.html'\nGITHUB_TOKEN={GITHUB_TOKEN}")}]}),
        json!({"role": "assistant", "timestamp": t + 3, "content": [
            {"type": "toolCall", "id": "c2", "name": "exec", "arguments": {"command": "sudo -u www-data npm run deploy"}}]}),
        json!({"role": "toolResult", "toolCallId": "c2", "toolName": "exec", "isError": false, "timestamp": t + 4,
               "content": [{"type": "text", "text": "deployed 42 files to /var/www/docs"}]}),
        json!({"role": "assistant", "timestamp": t + 5, "content": [{"type": "text", "text": "Fixed: the deploy runs as www-data now."}]}),
    ]
}

pub fn deploy_proposal() -> Value {
    json!({
        "task": "Deploy the docs site to /var/www/docs",
        "resource": "npm run deploy",
        "result": "Fails with EACCES as the login user; works when run as www-data (sudo -u www-data npm run deploy)",
        "score": 4, "outcome": "success", "confidence": 0.9,
        "content": "sudo -u www-data npm run deploy", "evidence": [3, 5]
    })
}

pub fn plugin_config(extraction: bool, privacy: &str, require_approval: bool) -> Value {
    json!({"enableServerExtraction": extraction, "privacyMode": privacy, "requireApproval": require_approval,
           "extractionTrigger": "agent_end", "reminderMode": "off", "autoRecall": false})
}

pub fn agent_end(daemon: &TestDaemon, session: &str, messages: &[Value], config: &Value) {
    daemon.ok(
        "hook.event",
        json!({"hook": "agent_end", "event": {"messages": messages, "success": true},
               "ctx": {"sessionKey": session, "agentId": "main"}, "config": config}),
    );
}

pub fn start(llm: &ScriptedLlm, extra: &str) -> TestDaemon {
    let home = tempfile::Builder::new().prefix("kh-ex-").tempdir().expect("temp dir");
    std::fs::write(home.path().join("config.toml"), llm.config(extra)).expect("config");
    TestDaemon::start_in_with(home, &[("KH_TEST_EXTRACTION_KEY", "sk-test-extraction-key-0123456789abcdef".as_ref())])
}

pub fn extraction_status(daemon: &TestDaemon) -> Value {
    daemon.ok("status", json!({}))["extraction"].clone()
}

/// Waits until `done + failed` jobs reach `count`; returns the extraction status.
pub fn wait_for_jobs(daemon: &TestDaemon, count: u64, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let status = extraction_status(daemon);
        let finished = status["done"].as_u64().unwrap_or(0) + status["failed"].as_u64().unwrap_or(0);
        if finished >= count {
            return status;
        }
        assert!(Instant::now() < deadline, "{count} jobs should have finished: {status}\n{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn wait_for(daemon: &TestDaemon, what: &str, within: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let status = extraction_status(daemon);
        if done(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{what}: {status}\n{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The id of the deploy proposal, extracted from a session and held for review.
pub fn held_deploy_proposal(llm: &ScriptedLlm, daemon: &TestDaemon) -> String {
    llm.script([Reply::proposals(json!([deploy_proposal()]), 700)]);
    agent_end(daemon, "s1", &deploy_session(1), &plugin_config(true, "strict", true));
    wait_for_jobs(daemon, 1, Duration::from_secs(30));
    let held = pending(daemon);
    assert_eq!(held.len(), 1, "{held:?}");
    held[0]["id"].as_str().unwrap().to_owned()
}

pub fn pending(daemon: &TestDaemon) -> Vec<Value> {
    daemon.ok("kb.pending", json!({}))["experiences"].as_array().expect("experiences").clone()
}
