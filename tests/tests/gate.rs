//! End-to-end tests of the write gate through the daemon: what a submitter's metadata looks
//! like once stored and searched (hostile-conditions issue, item 5).

mod common;

use common::TestDaemon;
use serde_json::json;

/// Regression: `submitted_by`, `agent_id` and `session_key` were stored verbatim and
/// `agent_id` came back in every search hit, whatever secret or address they held.
#[test]
fn secrets_in_metadata_are_redacted_before_they_are_stored_or_shown() {
    let daemon = TestDaemon::start();
    let token = "ghp_4fJq9ZtP2wXcV7bN1mK8sD3hL6gR0yA5uE2i";
    let answer = daemon.ok(
        "kb.submit",
        json!({
            "task": "rotate the deploy key",
            "resource": "gh secret set",
            "result": "old key revoked",
            "submitted_by": "alice.smith@example.com",
            "agent_id": format!("deployer {token}"),
            "session_key": format!("session-{token}"),
        }),
    );
    let id = answer["id"].as_str().unwrap();
    let stored = daemon.ok("kb.get", json!({"experience_id": id}));
    let stored_text = stored.to_string();
    assert!(!stored_text.contains("alice.smith@example.com"), "{stored}");
    assert!(!stored_text.contains(token), "{stored}");
    assert!(stored["submitted_by"].as_str().unwrap().contains("[EMAIL]"), "{stored}");

    let found = daemon.ok("kb.search", json!({"query": "rotate the deploy key"}));
    let found_text = found.to_string();
    assert_eq!(found["results"][0]["id"], id, "{found}");
    assert!(!found_text.contains(token) && !found_text.contains("alice.smith"), "{found}");
}
