//! Extraction's spending against a hostile endpoint: the daily token cap holds whatever the
//! endpoint answers, and `status` says what is spent, what failed and why.

mod common;

use std::time::Duration;

use common::extraction::*;
use common::llm::{Reply, ScriptedLlm};
use serde_json::json;

/// An answer of `bytes` characters that ignores `max_tokens`, claiming to be nearly free.
fn flood(bytes: usize) -> Reply {
    Reply::with_usage(&"A".repeat(bytes), json!({"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}))
}

/// The `max_tokens` of the `n`th request the endpoint received.
fn asked(llm: &ScriptedLlm, n: usize) -> u64 {
    llm.wait_for_requests(n, Duration::from_secs(30))[n - 1].body["max_tokens"].as_u64().expect("max_tokens")
}

/// The round-27 attack: an endpoint that ignored `max_tokens` answered 3.4 MB and was charged
/// 822k tokens against a daily cap of 200k (the cap was checked before the call, the charge
/// counted after). Now a call asks for at most what is left of the cap, and its answer is read
/// only as far as that allows: the day's charge never passes the cap, the job fails saying why,
/// and a normal answer is unaffected.
#[test]
fn an_endpoint_that_ignores_max_tokens_cannot_spend_past_the_daily_cap() {
    const CAP: u64 = 20_000;
    let llm = ScriptedLlm::start();
    let daemon = start(&llm, &format!("daily_token_cap = {CAP}\nmax_input_tokens = 1000\nmax_output_tokens = 4000"));
    let config = plugin_config(true, "strict", true);

    // A normal answer within the budget: asked for the configured 4000, stored, charged as usual.
    llm.script([Reply::proposals(json!([deploy_proposal()]), 300)]);
    agent_end(&daemon, "s1", &deploy_session(1), &config);
    let status = wait_for_jobs(&daemon, 1, Duration::from_secs(30));
    assert_eq!((status["done"].as_u64(), status["failed"].as_u64()), (Some(1), Some(0)), "{status}");
    assert_eq!(asked(&llm, 1), 4_000);
    assert_eq!(pending(&daemon).len(), 1);
    let first = status["tokens_today"].as_u64().unwrap();
    assert!((300..2_000).contains(&first), "{status}");

    // 3.4 MB (850k tokens as counted here) for the 4000 asked: read up to four times what was
    // asked, then cut off and failed; charged what was sent and read, far below what it sent.
    llm.script([flood(3_400_000)]);
    agent_end(&daemon, "s2", &deploy_session(100), &config);
    let status = wait_for_jobs(&daemon, 2, Duration::from_secs(30));
    assert_eq!(asked(&llm, 2), 4_000);
    assert_eq!(status["failed"], 1, "{status}");
    let error = status["last_error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("the endpoint answered more than the 4000 tokens asked for"), "{error}");
    let second = status["tokens_today"].as_u64().unwrap();
    assert!(second <= CAP && second - first > 16_000 && second - first < 18_000, "{status}");

    // The next call asks only for what is left, and a second flood is cut off at what is left:
    // the day is charged the cap, not more.
    llm.script([flood(3_400_000)]);
    agent_end(&daemon, "s3", &deploy_session(200), &config);
    let status = wait_for_jobs(&daemon, 3, Duration::from_secs(30));
    let third_asked = asked(&llm, 3);
    assert!((100..4_000).contains(&third_asked), "asked for {third_asked}, more than what was left");
    assert_eq!(status["failed"], 2, "{status}");
    let error = status["last_error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("more than the {third_asked} tokens asked for"))
            && error.contains("what was left of today's token cap"),
        "{error}"
    );
    let spent = status["tokens_today"].as_u64().unwrap();
    assert!(spent <= CAP && spent > CAP - 400, "charged {spent} against a cap of {CAP}: {status}");

    // Nothing is left for another call: the next job waits, and status says so.
    agent_end(&daemon, "s4", &deploy_session(300), &config);
    let status = wait_for(&daemon, "the fourth job should wait for the cap", Duration::from_secs(10), |status| {
        status["waiting"].as_str().is_some_and(|waiting| waiting.contains("daily token cap is reached"))
            && status["queued"] == 1
    });
    assert_eq!(status["tokens_today"].as_u64(), Some(spent), "{status}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(llm.requests().len(), 3, "no call past the cap");
}
