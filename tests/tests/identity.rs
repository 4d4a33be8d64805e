//! The daemon's proof of identity (issue 24 point 7), through the built binaries: the key it
//! writes beside its socket at each start (private, never through a symbolic link, removed at a
//! clean stop), `daemon.prove` answered from memory while the store is busy, and a key that
//! cannot be written said by `status` and `kbctl status` rather than failing silently.

mod common;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::time::{Duration, Instant};

use common::{TestDaemon, runtime, stderr, stdout};
use kb_proto::identity::{self, key_file};
use kb_proto::{Client, ClientError};
use serde_json::{Value, json};

fn home() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("kh-id-").tempdir().expect("temp dir")
}

fn prove(socket: &std::path::Path) -> Result<(), ClientError> {
    runtime().block_on(async { Client::connect(socket).await?.prove().await })
}

#[test]
fn the_daemon_proves_itself_with_a_key_only_the_user_can_read_and_a_new_one_each_start() {
    let mut daemon = TestDaemon::start();
    let key_path = key_file(&daemon.socket);
    let metadata = std::fs::symlink_metadata(&key_path).expect("the key file is there");
    assert!(metadata.file_type().is_file());
    assert_eq!(metadata.mode() & 0o777, 0o600);
    assert_eq!(metadata.uid(), kb_proto::trust::own_uid());
    let key = identity::read_key_file(&key_path).expect("a key the client accepts");
    prove(&daemon.socket).expect("the daemon proves itself");

    // The answer is HMAC-SHA256(key, domain ‖ nonce), for the nonce sent.
    let nonce = [0x5au8; identity::NONCE_BYTES];
    let answer = daemon.ok("daemon.prove", json!({"nonce": identity::to_hex(&nonce)}));
    assert_eq!(answer, json!({"proof": identity::to_hex(&identity::answer(&key, &nonce))}));
    let status = daemon.ok("status", json!({}));
    assert_eq!(status["identity"], json!({"key_file": key_path.display().to_string(), "ready": true}));

    // A nonce of the wrong size or type gets an error naming it.
    for (params, says) in [
        (json!({"nonce": "abcd"}), "must be 32 random bytes as 64 hex digits, got 4 characters"),
        (json!({"nonce": "zz".repeat(32)}), "must be 32 random bytes as 64 hex digits"),
        (json!({"nonce": 42}), "invalid type"),
        (json!({}), "missing field `nonce`"),
        (json!({"nonce": identity::to_hex(&nonce), "key": "x"}), "unknown field `key`"),
    ] {
        let error = daemon.call("daemon.prove", params.clone()).expect_err("refused");
        let ClientError::Rpc { code, message, data } = error else { panic!("{params}: {error}") };
        assert_eq!(code, -32602, "{params}: {message}");
        assert!(message.contains(says), "{params}: {message}");
        let field = data.as_ref().and_then(|data| data["field"].as_str()).unwrap_or_default().to_owned();
        assert!(field == "nonce" || field == "key", "{params}: {data:?}");
    }

    // A crash leaves the key; the next start replaces it with a new one.
    daemon.kill();
    daemon.spawn();
    let new_key = identity::read_key_file(&key_path).expect("a new key");
    assert_ne!(new_key, key);
    prove(&daemon.socket).expect("the restarted daemon proves itself with its new key");
    // A clean stop removes it: no key outlives its daemon.
    assert!(daemon.terminate().success());
    assert!(!key_path.exists(), "the key file outlived the daemon");
}

#[test]
fn a_symbolic_link_at_the_key_path_is_replaced_never_written_through() {
    let home = home();
    let elsewhere = tempfile::tempdir().unwrap();
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"the user's file").unwrap();
    std::os::unix::fs::symlink(&victim, home.path().join("knowhubd.sock.key")).unwrap();
    let daemon = TestDaemon::start_in(home);
    assert_eq!(std::fs::read(&victim).unwrap(), b"the user's file", "the daemon wrote through the link");
    let metadata = std::fs::symlink_metadata(key_file(&daemon.socket)).unwrap();
    assert!(metadata.file_type().is_file(), "the link was replaced by the key file");
    assert_eq!(metadata.mode() & 0o777, 0o600);
    prove(&daemon.socket).expect("the daemon proves itself");
}

#[test]
fn a_key_that_cannot_be_written_is_said_by_status_and_kbctl_and_proves_nothing() {
    let home = home();
    // A non-empty directory where the key file goes: no rename can replace it.
    let blocker = home.path().join("knowhubd.sock.key");
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("keep"), b"").unwrap();
    let daemon = TestDaemon::start_in(home);

    let status = daemon.ok("status", json!({}));
    assert_eq!(status["healthy"], false, "{status}");
    assert_eq!(status["identity"]["ready"], false, "{status}");
    let error = status["identity"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("cannot move") && error.contains("knowhubd.sock.key"), "{status}");
    assert!(daemon.log_text().contains("cannot write the key that proves this daemon"), "{}", daemon.log_text());

    let refused = daemon.call("daemon.prove", json!({"nonce": "00".repeat(32)})).expect_err("no proof");
    assert!(
        matches!(&refused, ClientError::Rpc { code: -32005, message, .. } if message.contains("cannot prove itself")),
        "{refused}"
    );
    let error = prove(&daemon.socket).expect_err("a client refuses it");
    assert!(matches!(error, ClientError::Untrusted { .. }), "{error}");

    let output = daemon.kbctl(&["status"]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stdout(&output).contains("problem: the OpenClaw plugin refuses this daemon: cannot move"),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    // Everything else works: only the plugin's check is affected.
    daemon.submit("Run the tests once", "vitest --run", "exits when done", 4);
}

#[test]
fn kbctl_status_says_when_the_key_file_was_changed_behind_the_daemon() {
    let daemon = TestDaemon::start();
    let key_path = key_file(&daemon.socket);
    assert!(daemon.kbctl(&["status"]).status.success());
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = daemon.kbctl(&["status"]);
    assert!(!output.status.success());
    assert!(
        stdout(&output).contains("problem: the OpenClaw plugin would refuse this daemon: refusing to talk to")
            && stdout(&output).contains("is open to other users (mode 0644, must be 0600)"),
        "{}",
        stdout(&output)
    );
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&key_path, [7u8; identity::KEY_BYTES]).unwrap();
    let output = daemon.kbctl(&["status"]);
    assert!(stdout(&output).contains("does not match the key in"), "{}", stdout(&output));
}

/// `daemon.prove` is answered from memory: it does not wait for the store's writer, so a
/// plugin's proof costs little even while a large import commits.
#[test]
fn proofs_are_answered_at_once_while_an_import_holds_the_writer() {
    let daemon = TestDaemon::start();
    let items: Vec<Value> = (0..10_000)
        .map(|n| json!({"task": format!("deploy service {n} to staging"), "resource": "kubectl", "result": format!("rollout {n} done"), "score": 3}))
        .collect();
    let socket = daemon.socket.clone();
    let importing = std::thread::spawn(move || {
        runtime().block_on(async {
            let mut client = Client::connect(&socket).await.unwrap();
            let started = Instant::now();
            let answer = client.call_value("kb.import", json!({"items": items})).await.unwrap();
            (answer, started.elapsed())
        })
    });
    let mut latencies = Vec::new();
    runtime().block_on(async {
        let mut client = Client::connect(&daemon.socket).await.unwrap();
        let mut nonce = [0u8; identity::NONCE_BYTES];
        while !importing.is_finished() || latencies.len() < 200 {
            nonce[..8].copy_from_slice(&(latencies.len() as u64).to_le_bytes());
            let started = Instant::now();
            client.call_value("daemon.prove", json!({"nonce": identity::to_hex(&nonce)})).await.unwrap();
            latencies.push(started.elapsed());
        }
    });
    let (answer, import_took) = importing.join().unwrap();
    assert_eq!(answer["imported"], 10_000, "{answer}");
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    let p99 = latencies[latencies.len() * 99 / 100];
    let worst = *latencies.last().unwrap();
    println!(
        "daemon.prove during a 10,000-item import ({import_took:?}): {} proofs, p50 {p50:?}, p99 {p99:?}, max {worst:?}",
        latencies.len()
    );
    // The import takes seconds; a proof that waited for it would take as long.
    assert!(
        worst < import_took / 4 || worst < Duration::from_millis(50),
        "max {worst:?} against an import of {import_took:?}"
    );
}
