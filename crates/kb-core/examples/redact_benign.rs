//! What redaction changes in ordinary text, and what it costs: counts the texts of the benign
//! sets of `tests/data` (and the search corpora of `kb-bench/data`, when present) and of a set
//! of ordinary prose and code written to tempt the obfuscation readings (spaced letters, reversed
//! words, rot13 in puzzles, string concatenation, lines broken inside long words) that redaction
//! changes, prints the first few, and times redaction of the redaction benign set. Uses only the
//! public `redact`, so it runs on any build: `cargo run --release -p kb-core --example
//! redact_benign`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use kb_core::redact::redact;

fn texts_of(path: &Path) -> Vec<String> {
    let Ok(data) = std::fs::read_to_string(path) else { return Vec::new() };
    let mut texts = Vec::new();
    for line in data.lines().filter(|line| !line.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let Some(object) = value.as_object() else { continue };
        let fields: Vec<&str> =
            object.iter().filter(|(name, _)| name.as_str() != "id").filter_map(|(_, value)| value.as_str()).collect();
        if let Some(text) = object.get("text").and_then(|text| text.as_str()) {
            texts.push(text.to_owned());
        } else if !fields.is_empty() {
            texts.push(fields.join("\n"));
        }
    }
    texts
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Ordinary text that looks like the obfuscations the readings undo.
const TEMPTING: &[&str] = &[
    "The banner read W E L C O M E   T O   T H E   S H O W in big letters.",
    "S P A C E D  O U T headings like N O T I C E are common in old READMEs.",
    "Type the letters s-l-o-w-l-y and spell your name: J-O-H-N-S-M-I-T-H-2-0-2-4.",
    "the keycap sequence is 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 then enter",
    "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p is the alphabet with dots",
    "Reversed words: olleh dlrow, and 'racecar' is a palindrome; gnirts esrever",
    "rot13 of hello is uryyb and of password is cnffjbeq, a toy cipher",
    "The CI printed tuc_ and fx- as rot13 noise: Uryyb Jbeyq 12345678901234",
    "const greeting = \"Hello, \" + \"world\" + \"!\";",
    "local msg = \"con\" .. \"cat\" .. \"enated\" -- Lua",
    "$sql = 'SELECT * FROM users ' . 'WHERE id = ' . $id;",
    "SELECT 'abc' || 'def' || 'ghi1234567890' FROM dual;",
    "s = \"part one of a long message\"; s += \"part two of the message\"",
    "msg = (\"This is a long string that \"\n       \"continues on the next line\")",
    "url = \"https://example.com/api/v1/\" + \"users/\" + user_id + \"/settings\"",
    "key = \"config\" + \"_\" + \"value\" + \"_\" + \"2024\"",
    "the hash is 3f2a1b9c8d7e6f5a4b3c\n2d1e0f9a8b7c6d5e4f3a split over lines",
    "  --set image.repository=registry.example.com/team/app \\\n  --set image.tag=v1.2.3",
    "const longIdentifierName = someObject.property\n    .anotherProperty.method();",
    "uuid 550e8400-e29b-41d4-\na716-446655440000 wrapped by the terminal",
    "base64 of the fixture: SGVsbG8gV29ybGQhIFRoaXMgaXMgYSB0ZXN0\nIGZpeHR1cmUgZmlsZS4=",
    "export PATH=/usr/local/bin:\n/usr/bin:/bin",
    "echo \"ABCDEFGHIJKLMNOPQRSTUVWXYZ\" | rev prints ZYXWVUTSRQPONMLKJIHGFEDCBA",
    "tr 'A-Za-z' 'N-ZA-Mn-za-m' is rot13; try it on 'Gur dhvpx oebja sbk'",
    "Run: p y t h o n   - m   p i p   i n s t a l l   r e q u e s t s",
    "字 间 有 空 格 的 中 文 标 题 也 很 常 见",
    "printf(\"%s\" \"%d\\n\", name, count);",
    "id = \"user_\" + \"1234567890\" + \"_\" + \"abcdefghij\"",
    "token_count = prompt_tokens + completion_tokens\npassword_hash = bcrypt(password)",
    "resource: npm registry\nresult: reinstalled 1432 packages in 12s",
];

fn main() {
    let mut sets: Vec<(String, Vec<String>)> = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .filter(|name| name.contains("benign") || name.starts_with("ordinary_") || name == "tldr_commands.jsonl")
        .filter(|name| name != "risky_in_benign_sets.jsonl")
        .collect();
    names.sort();
    for name in names {
        let texts = texts_of(&data_dir().join(&name));
        sets.push((name, texts));
    }
    let corpora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kb-bench/data");
    for corpus in ["english-experiences", "debian-en", "debian-zh", "cmrc-trial-chunks", "conv-en", "lme-oracle"] {
        let texts = texts_of(&corpora.join(corpus).join("corpus.jsonl"));
        if !texts.is_empty() {
            sets.push((format!("corpus {corpus}"), texts));
        }
    }
    sets.push(("tempting prose and code".to_owned(), TEMPTING.iter().map(|text| (*text).to_owned()).collect()));
    let _ = redact("warm up");
    let (mut all_changed, mut all_total) = (0, 0);
    for (name, texts) in &sets {
        let mut changed = Vec::new();
        for text in texts {
            let (redacted, _) = redact(text);
            if redacted != text.as_str() {
                changed.push((text, redacted.into_owned()));
            }
        }
        println!("{name:<40} {:>5} of {:>6} changed", changed.len(), texts.len());
        // `REDACT_BENIGN_SHOW=name` prints every text of the sets whose name holds `name`.
        let show_all = std::env::var("REDACT_BENIGN_SHOW").is_ok_and(|show| name.contains(&show));
        let n_shown = if show_all || name.starts_with("tempting") { usize::MAX } else { 3 };
        for (text, redacted) in changed.iter().take(n_shown) {
            let excerpt = |text: &str| text.chars().take(140).collect::<String>();
            println!("    {:?}\n -> {:?}", excerpt(text), excerpt(redacted));
        }
        all_changed += changed.len();
        all_total += texts.len();
    }
    println!("all sets: {all_changed} of {all_total} changed");
    let benign = texts_of(&data_dir().join("redaction_benign.jsonl"));
    let everything: Vec<&String> = sets.iter().flat_map(|(_, texts)| texts).collect();
    for (label, texts, rounds) in
        [("redaction_benign.jsonl", benign.iter().collect::<Vec<_>>(), 200), ("every set above", everything.clone(), 3)]
    {
        let mut best = f64::MAX;
        for _ in 0..rounds.min(5) {
            let started = Instant::now();
            for _ in 0..rounds {
                for text in &texts {
                    std::hint::black_box(redact(text));
                }
            }
            best = best.min(started.elapsed().as_secs_f64() / rounds as f64);
        }
        let n_bytes: usize = texts.iter().map(|text| text.len()).sum();
        println!(
            "redact {label}: {} texts, {} bytes: {:.2} ms a pass, {:.2} µs a text, {:.1} MB/s",
            texts.len(),
            n_bytes,
            best * 1e3,
            best * 1e6 / texts.len() as f64,
            n_bytes as f64 / best / 1e6
        );
    }
}
