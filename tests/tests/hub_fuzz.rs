//! A damaged hub, fuzzed: a superuser drops the schema's guards, widens columns and writes
//! 1,000 rows of dave's with random values, sizes and sequence numbers among alice's honest
//! shares. Bob's daemon must not panic, must take every readable row and every honest share,
//! and must count each row it could not take in `status`.

mod common;

use std::time::Duration;

use common::postgres::{TestPostgres, hub_status, init_hub, member_of, within};
use common::stdout;
use serde_json::json;

const TEAM: &str = "platform";
const ROWS: usize = 1_000;

/// xorshift64*: the same rows on every run, from a fixed seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One generated row: its SQL values, and the defect that must get it skipped (if any).
struct Row {
    id: String,
    values: String,
    defect: Option<&'static str>,
}

const WORDS: &[&str] = &[
    "cache",
    "worker",
    "缓存",
    "部署",
    "timeout",
    "retry",
    "kafka",
    "数据库",
    "index",
    "vacuum",
    "pool",
    "proxy",
    "证书",
    "rollout",
    "queue",
    "😀",
    "naïve",
    "Ωmega",
    "tab\tseparated",
    "line\nbreak",
];

fn text(random: &mut Random, n: usize) -> String {
    (0..3 + random.below(8)).map(|_| random.pick(WORDS)).collect::<Vec<_>>().join(" ") + &format!(" fz{n}")
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn row(random: &mut Random, n: usize) -> Row {
    let id = format!("FZ{n}");
    let mut task = literal(&text(random, n));
    let mut resource = literal(&text(random, n));
    let mut result = literal(&text(random, n));
    let mut score = (1 + random.below(5)).to_string();
    let mut content = if random.below(4) == 0 {
        literal(&text(random, n).repeat(1 + random.below(50) as usize))
    } else {
        "NULL".to_owned()
    };
    let mut created = format!("now() - interval '{} days'", random.below(3000));
    let mut merge_count = random.below(100).to_string();
    let mut deleted = "false".to_owned();
    let mut machine = literal(&format!("machine-{}", random.below(5)));
    let row_id = literal(&id);
    // About a third of the rows carry one defect each (17 kinds in 48).
    let defect = match random.below(48) {
        0 => Some(("created_at", "'infinity'")),
        1 => Some(("created_at", "'-infinity'")),
        2 => Some(("created_at", "'1900-01-01'")),
        3 => Some(("task", "NULL")),
        4 => Some(("resource", "NULL")),
        5 => Some(("result", "NULL")),
        6 => Some(("score", "0")),
        7 => Some(("score", "1000")),
        8 => Some(("score", "-3")),
        9 => Some(("merge_count", "-1")),
        10 => Some(("merge_count", "5000000000")),
        11 => Some(("deleted", "NULL")),
        12 => Some(("machine", "NULL")),
        13 => Some(("task", "repeat('t', 3000)")),
        14 if random.below(8) == 0 => Some(("content", "repeat('z', 5000000)")),
        15 => Some(("content", "repeat('c', 1500000)")),
        16 => Some(("result", "repeat('r', 40000)")),
        _ => None,
    };
    let defect = defect.map(|(column, value)| {
        let slot = match column {
            "created_at" => &mut created,
            "task" => &mut task,
            "resource" => &mut resource,
            "result" => &mut result,
            "score" => &mut score,
            "merge_count" => &mut merge_count,
            "deleted" => &mut deleted,
            "machine" => &mut machine,
            _ => &mut content,
        };
        *slot = value.to_owned();
        column
    });
    let values = format!(
        "('{TEAM}', {row_id}, 'dave', {machine}, {task}, {resource}, {result}, {score}, {content}, {created}, now(), {merge_count}, {deleted}, HUB_SEQ)"
    );
    Row { id, values, defect }
}

#[test]
fn a_thousand_random_rows_from_a_damaged_hub_never_stop_the_honest_ones() {
    let postgres = TestPostgres::start();
    init_hub(&postgres, TEAM, &["alice", "bob", "dave"]);
    let alice = member_of(&postgres, TEAM, "alice", "");
    let bob = member_of(&postgres, TEAM, "bob", "member_rows_per_day = 100000\nmember_bytes_per_day = 10000000000\n");
    postgres.sql(
        "ALTER TABLE knowhub.experiences DROP CONSTRAINT sane; \
         ALTER TABLE knowhub.experiences DROP CONSTRAINT experiences_score_check; \
         ALTER TABLE knowhub.experiences ALTER COLUMN score TYPE integer; \
         ALTER TABLE knowhub.experiences ALTER COLUMN merge_count TYPE bigint; \
         ALTER TABLE knowhub.experiences ALTER COLUMN task DROP NOT NULL, ALTER COLUMN resource DROP NOT NULL, \
            ALTER COLUMN result DROP NOT NULL, ALTER COLUMN machine DROP NOT NULL, ALTER COLUMN deleted DROP NOT NULL",
    );

    let mut random = Random(0x5eed_cafe_f00d_0001);
    let rows: Vec<Row> = (0..ROWS).map(|n| row(&mut random, n)).collect();
    // Every 40th readable row gets a sequence number no trigger handed out, above the sequence.
    let out_of_sequence: Vec<usize> =
        rows.iter().enumerate().filter(|(_, row)| row.defect.is_none()).map(|(n, _)| n).step_by(40).collect();
    let columns = "team, id, author, machine, task, resource, result, score, content, created_at, updated_at, merge_count, deleted, hub_seq";
    let mut honest = Vec::new();
    for (batch, chunk) in rows.chunks(100).enumerate() {
        let numbered: Vec<String> = chunk
            .iter()
            .enumerate()
            .filter(|(n, _)| !out_of_sequence.contains(&(batch * 100 + n)))
            .map(|(_, row)| row.values.replace("HUB_SEQ", "0"))
            .collect();
        let forged: Vec<String> = chunk
            .iter()
            .enumerate()
            .filter(|(n, _)| out_of_sequence.contains(&(batch * 100 + n)))
            .map(|(n, row)| {
                row.values.replace("HUB_SEQ", &(9_000_000_000_000_000_000_i64 + (batch * 100 + n) as i64).to_string())
            })
            .collect();
        let mut sql = format!("INSERT INTO knowhub.experiences ({columns}) VALUES {};", numbered.join(", "));
        if !forged.is_empty() {
            sql.push_str(&format!(
                " ALTER TABLE knowhub.experiences DISABLE TRIGGER stamp; \
                 INSERT INTO knowhub.experiences ({columns}) VALUES {}; \
                 ALTER TABLE knowhub.experiences ENABLE TRIGGER stamp;",
                forged.join(", ")
            ));
        }
        postgres.sql(&sql);
        let task = format!("honest share {batch}: drain the q{batch}z node before patching");
        alice.submit(&task, "kubectl drain", "no pod lost", 4);
        honest.push((format!("q{batch}z node drain"), task));
    }
    let last = "the last honest share: restart the fuzzed ingest worker";
    alice.submit(last, "systemctl restart ingest", "it drained", 4);
    honest.push(("fuzzed ingest worker".to_owned(), last.to_owned()));

    let defective = rows.iter().filter(|row| row.defect.is_some()).count();
    let expected_skipped = (defective + out_of_sequence.len()) as u64;
    let readable = ROWS - defective - out_of_sequence.len();
    eprintln!("{ROWS} rows: {defective} defective, {} out of sequence, {readable} readable", out_of_sequence.len());
    let finds = |query: &str, task: &str| {
        bob.ok("kb.search", json!({"query": query, "top_k": 10, "min_score": 1, "unreviewed": true}))["results"]
            .as_array()
            .expect("results")
            .iter()
            .any(|hit| hit["task"] == task)
    };
    let settled = within(Duration::from_secs(60), || {
        hub_status(&bob)["skipped"] == expected_skipped && honest.iter().all(|(query, task)| finds(query, task))
    });
    let status = bob.ok("status", json!({}));
    assert!(settled.is_some(), "expected {expected_skipped} skipped and every honest share: {}", status["hub"]);

    // Every readable row of dave's arrived; no service restarted; nothing panicked.
    let exported = stdout(&bob.kbctl(&["export"]));
    let arrived = rows
        .iter()
        .enumerate()
        .filter(|(n, row)| row.defect.is_none() && !out_of_sequence.contains(n))
        .filter(|(_, row)| exported.contains(&format!(" {}\"", marker(row))))
        .count();
    assert_eq!(arrived, readable, "readable rows that arrived");
    assert!(status["services"].as_array().unwrap().iter().all(|service| service["restarts"] == 0), "{status}");
    assert!(!bob.log_text().contains("panicked"), "{}", bob.log_text());
    assert_eq!(status["hub"]["state"], "connected", "{}", status["hub"]);
    let mut reasons: Vec<String> = status["hub"]["skipped_recent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skip| skip["reason"].as_str().unwrap().split(':').next().unwrap().to_owned())
        .collect();
    reasons.sort();
    reasons.dedup();
    eprintln!("skipped for: {reasons:?}");
}

/// The marker every text of a row ends with.
fn marker(row: &Row) -> String {
    format!("fz{}", &row.id[2..])
}
