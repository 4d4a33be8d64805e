//! Extraction's costs: for a realistic 50-message coding session and a 5-message chat, the
//! tokens sent to the LLM against the raw history and whether the gate before spend skipped it
//! (in process, with the daemon's own `kb_extract`), and `agent_end`'s hook latency through a
//! real daemon with extraction on, next to the same events with it off (the baseline).

use std::path::Path;
use std::time::{Duration, Instant};

use kb_proto::Client;
use serde::Serialize;
use serde_json::{Value, json};

use crate::daemon::BenchDaemon;
use crate::stats::LatencySummary;

/// The daemon's default `extraction.max_input_tokens`.
const BUDGET: usize = 6_000;

#[derive(Debug, Serialize)]
pub struct Conversation {
    pub name: &'static str,
    pub messages: usize,
    /// Characters of the history as OpenClaw's `agent_end` carries it (JSON).
    pub history_chars: usize,
    /// Estimated tokens of the whole transcript, and of what is sent after the budget's cuts.
    pub tokens_raw: usize,
    pub tokens_sent: usize,
    pub skipped: Option<&'static str>,
    /// In-process cost of reading, assessing, redacting and rendering it.
    pub prepare_us: f64,
}

#[derive(Debug, Serialize)]
pub struct ExtractionReport {
    pub conversations: Vec<Conversation>,
    /// `hook.event` agent_end with the 50-message history: extraction off, then on.
    pub hook_off: LatencySummary,
    pub hook_on: LatencySummary,
}

pub async fn run(binary: &Path, events: usize, json_output: bool) -> anyhow::Result<ExtractionReport> {
    let mut conversations = Vec::new();
    // The gate's patterns are compiled once per process (the daemon does it at start): not timed.
    kb_core::warm_up();
    for (name, messages) in [("50-message coding session", coding_session()), ("5-message chat", chat())] {
        let history_chars = serde_json::to_string(&messages)?.len();
        let started = Instant::now();
        let turns = kb_extract::parse_messages(&messages);
        let assessment = kb_extract::assess(&turns);
        let mut redacted = turns.clone();
        kb_extract::redact_turns(&mut redacted);
        let rendered = kb_extract::render(&redacted, BUDGET);
        let prepare_us = started.elapsed().as_secs_f64() * 1e6;
        conversations.push(Conversation {
            name,
            messages: messages.len(),
            history_chars,
            tokens_raw: rendered.tokens_raw,
            tokens_sent: if assessment.worth_extracting() { rendered.tokens_sent } else { 0 },
            skipped: assessment.skip,
            prepare_us,
        });
    }

    // Nothing listens at the endpoint: the jobs queue and wait; only the hook's path is timed.
    let config = "[embedding]\nenabled = false\n\n[extraction]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"none\"\nmax_queued = 100000\n";
    let home = tempfile::Builder::new().prefix("kb-bench-extract-").tempdir()?;
    std::fs::write(home.path().join("config.toml"), config)?;
    let daemon = BenchDaemon::start_in(binary, home, &[]).await?;
    let mut client = Client::connect(daemon.socket()).await?;
    let session = coding_session();
    let mut measure = async |extraction: bool| -> anyhow::Result<LatencySummary> {
        let mut samples = Vec::with_capacity(events);
        for index in 0..events + events / 10 {
            let params = json!({
                "hook": "agent_end",
                "event": {"messages": session, "success": true},
                "ctx": {"sessionKey": format!("bench-{extraction}-{index}"), "agentId": "main"},
                "config": {"enableServerExtraction": extraction, "privacyMode": "strict", "reminderMode": "off", "autoRecall": false},
            });
            let started = Instant::now();
            client.call_value(kb_proto::method::HOOK_EVENT, params).await?;
            if index >= events / 10 {
                samples.push(started.elapsed());
            }
            // Leaves the daemon's background queueing its share of the two cores between events.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(LatencySummary::of(&samples))
    };
    let hook_off = measure(false).await?;
    let hook_on = measure(true).await?;
    let queued = client.call_value(kb_proto::method::STATUS, json!({})).await?["extraction"]["queued"].clone();
    drop(client);
    daemon.stop().await?;

    let report = ExtractionReport { conversations, hook_off, hook_on };
    if json_output {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("\n== extraction: what is sent (budget {BUDGET} tokens, strict redaction) ==");
        for conversation in &report.conversations {
            let verdict = match conversation.skipped {
                Some(reason) => format!("skipped ({reason}): 0 tokens sent"),
                None => format!(
                    "sent {} of {} tokens ({:.0}%)",
                    conversation.tokens_sent,
                    conversation.tokens_raw,
                    100.0 * conversation.tokens_sent as f64 / conversation.tokens_raw.max(1) as f64
                ),
            };
            println!(
                "  {:<28} {:>3} messages, {:>7} chars of history: {verdict}; prepared in {:.1} ms",
                conversation.name,
                conversation.messages,
                conversation.history_chars,
                conversation.prepare_us / 1e3
            );
        }
        println!("\n== agent_end hook latency, 50-message history ({events} events each, a new session each) ==");
        for (label, summary) in [("extraction off (baseline)", &report.hook_off), ("extraction on", &report.hook_on)] {
            println!(
                "  {label:<28} p50 {:>6.2} ms   p99 {:>6.2} ms   max {:>6.2} ms",
                summary.p50_us / 1e3,
                summary.p99_us / 1e3,
                summary.max_us / 1e3
            );
        }
        println!("  jobs queued by the daemon meanwhile: {queued}");
    }
    Ok(report)
}

/// A realistic coding session in OpenClaw's message format: the user reports failing tests; the
/// agent reads files, runs the tests (long logs), edits, fails once more, fixes it, commits.
pub fn coding_session() -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "timestamp": 1, "content":
        "The integration tests of the payments service fail since this morning's dependency bump. Find out why and fix it."})];
    let log = |failing: bool, round: usize| {
        let mut text = String::new();
        for test in 0..60 {
            text.push_str(&format!("test payments::integration::case_{round}_{test} ... ok\n"));
        }
        if failing {
            text.push_str("test payments::integration::refund_roundtrip ... FAILED\n\nfailures:\n\n---- refund_roundtrip stdout ----\n");
            text.push_str("thread 'refund_roundtrip' panicked at tests/refund.rs:88:9:\nassertion `left == right` failed: amount in cents\n  left: 1999\n right: 19.99\n");
            text.push_str("note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n");
        }
        text.push_str(&format!(
            "\ntest result: {}. 60 passed; {} failed\n",
            if failing { "FAILED" } else { "ok" },
            usize::from(failing)
        ));
        text
    };
    let file = |name: &str| {
        let mut text = format!("// {name}\n");
        for line in 0..120 {
            text.push_str(&format!(
                "    let value_{line} = money::Amount::from_minor({line} * 100); // keep cents as integers\n"
            ));
        }
        text
    };
    let steps: Vec<(&str, Value, String, bool)> = vec![
        (
            "exec",
            json!({"command": "git log --oneline -5"}),
            "a1b2c3d bump money to 3.0\n9f8e7d6 refund endpoint\n".to_owned(),
            false,
        ),
        ("exec", json!({"command": "cargo test -p payments --test integration"}), log(true, 1), true),
        ("read", json!({"path": "tests/refund.rs"}), file("tests/refund.rs"), false),
        ("read", json!({"path": "Cargo.lock"}), "name = \"money\"\nversion = \"3.0.0\"\n".repeat(20), false),
        (
            "web_fetch",
            json!({"url": "https://docs.rs/money/3.0.0/money/struct.Amount.html"}),
            "Amount::new now takes major units as f64; use Amount::from_minor for cents.\n".repeat(30),
            false,
        ),
        ("read", json!({"path": "src/refund.rs"}), file("src/refund.rs"), false),
        (
            "edit",
            json!({"path": "src/refund.rs", "old": "Amount::new(cents)", "new": "Amount::from_minor(cents)"}),
            "1 replacement".to_owned(),
            false,
        ),
        ("exec", json!({"command": "cargo test -p payments --test integration"}), log(true, 2), true),
        ("read", json!({"path": "src/ledger.rs"}), file("src/ledger.rs"), false),
        (
            "edit",
            json!({"path": "src/ledger.rs", "old": "Amount::new(total)", "new": "Amount::from_minor(total)"}),
            "1 replacement".to_owned(),
            false,
        ),
        ("exec", json!({"command": "cargo test -p payments --test integration"}), log(false, 3), false),
        (
            "exec",
            json!({"command": "cargo clippy -p payments -- -D warnings"}),
            "Finished `dev` profile".to_owned(),
            false,
        ),
        (
            "exec",
            json!({"command": "git commit -am 'payments: money 3.0 takes major units; use from_minor for cents'"}),
            "[main 4d5e6f7] payments: money 3.0".to_owned(),
            false,
        ),
    ];
    let mut timestamp = 2;
    let mut call = 0;
    for (tool, arguments, output, error) in steps {
        call += 1;
        let id = format!("call_{call}");
        messages.push(json!({"role": "assistant", "timestamp": timestamp, "stopReason": "toolUse", "content": [
            {"type": "text", "text": format!("Next I run {tool}.")},
            {"type": "toolCall", "id": id, "name": tool, "arguments": arguments}]}));
        messages.push(json!({"role": "toolResult", "toolCallId": id, "toolName": tool, "isError": error, "timestamp": timestamp + 1,
            "content": [{"type": "text", "text": output}]}));
        timestamp += 2;
    }
    // The user weighs in midway, as users do, and the session goes on to the end.
    messages.insert(9, json!({"role": "user", "timestamp": 9, "content": "No, don't pin money back to 2.x, we need 3.0 for the new currencies."}));
    while messages.len() < 48 {
        messages.push(json!({"role": "user", "timestamp": timestamp, "content": "Also check the invoices module uses from_minor."}));
        messages.push(json!({"role": "assistant", "timestamp": timestamp + 1, "content": [{"type": "text", "text": "invoices.rs already uses Amount::from_minor everywhere."}]}));
        timestamp += 2;
    }
    messages.push(json!({"role": "user", "timestamp": timestamp, "content": "Great, that's all."}));
    timestamp += 1;
    messages.push(json!({"role": "assistant", "timestamp": timestamp, "stopReason": "stop", "content": [{"type": "text", "text":
        "Fixed: money 3.0's Amount::new takes major units (f64); refunds and the ledger passed cents. Both use Amount::from_minor now; the integration tests pass."}]}));
    messages
}

/// A 5-message chat with no tool use.
pub fn chat() -> Vec<Value> {
    vec![
        json!({"role": "user", "timestamp": 1, "content": "Morning! What's a good name for a cat?"}),
        json!({"role": "assistant", "timestamp": 2, "content": [{"type": "text", "text": "Miso, Pixel or Biscuit."}]}),
        json!({"role": "user", "timestamp": 3, "content": "Biscuit it is."}),
        json!({"role": "assistant", "timestamp": 4, "content": [{"type": "text", "text": "Great choice!"}]}),
        json!({"role": "user", "timestamp": 5, "content": "Thanks"}),
    ]
}
