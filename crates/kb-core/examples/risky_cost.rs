//! What the risky-action check costs per submit: `cargo run --release -p kb-core --example
//! risky_cost` times `risky::risky_actions` on a typical 1.5 KB experience (the one `kb-bench
//! gate` times the whole gate on) and the whole gate in strict mode, in µs per call.

use std::hint::black_box;
use std::time::Instant;

use kb_core::{GatePolicy, NewExperience, gate, gate::gated_text, risky};

fn typical() -> NewExperience {
    NewExperience {
        task: "Fix the flaky integration test in the payments service after the tokio upgrade".to_owned(),
        resource: "cargo test -p payments --test integration; tokio 1.41; /srv/payments/Cargo.toml".to_owned(),
        result: "The test raced the server start. Waiting for the readiness signal instead of sleeping 100 ms \
                 fixed it; 200 runs passed. 修复后连续运行 200 次全部通过，耗时 3 分钟。"
            .to_owned(),
        content: Some(
            "2026-11-20T10:01:02Z INFO payments: listening on 0.0.0.0:8080\n\
             2026-11-20T10:01:02Z WARN retry 1/5 after 250ms (connection refused)\n\
             thread 'checkout_flow' panicked at tests/integration.rs:88:5: assertion failed: status == 200\n\
             note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\
             fn wait_ready(rx: oneshot::Receiver<()>) -> Result<(), Elapsed> { timeout(Duration::from_secs(5), rx) }\n"
                .repeat(3),
        ),
        ..NewExperience::default()
    }
}

fn main() {
    let new = typical();
    let text = gated_text(&new);
    let policy = GatePolicy::default();
    let _ = risky::risky_actions(&text);
    let iterations = 2000;
    let started = Instant::now();
    for _ in 0..iterations {
        black_box(risky::risky_actions(black_box(&text)));
    }
    let check_us = started.elapsed().as_secs_f64() * 1e6 / iterations as f64;
    let started = Instant::now();
    for _ in 0..iterations {
        black_box(gate(new.clone(), &policy).unwrap());
    }
    let gate_us = started.elapsed().as_secs_f64() * 1e6 / iterations as f64;
    println!("typical submit ({} bytes): risky check {check_us:.1} µs, whole gate {gate_us:.1} µs", text.len());
}
