//! Where the write gate's time goes, stage by stage, and every decision it makes, for checking a
//! change to it: `time` prints each stage's mean cost over the texts `kb-bench gate` times (and
//! its typical 1.5 KB submit); `threads N` gates them on N threads at once after a warm-up on a
//! thread of its own, as the daemon's write lane does; `dump FILE` writes every gate result (stored text, redactions,
//! flags, reasons, keys) and every injection verdict for every text of `tests/data` and the
//! search corpora of `kb-bench/data`, in every form a text travels in, so that two builds can be
//! diffed. Run with `--release`: `cargo run --release -p kb-core --example gate_stages -- time`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kb_core::redact::forms::Form;
use kb_core::{GatePolicy, NewExperience, gate, injection, redact, risky, sameness};

fn texts_of(path: &Path) -> Vec<String> {
    let data = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut texts = Vec::new();
    for line in data.lines().filter(|line| !line.trim().is_empty()) {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        for key in ["text", "task", "resource", "result"] {
            if let Some(text) = value.get(key).and_then(|text| text.as_str()) {
                texts.push(text.to_owned());
            }
        }
    }
    texts
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The texts `kb-bench gate` times: the redaction catalogue and benign set, and the injection
/// attacks and benign texts of every round.
fn bench_texts() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("injection_") || name.starts_with("redaction_"))
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    names.sort();
    names.iter().flat_map(|name| texts_of(&data_dir().join(name))).collect()
}

use kb_core::gate::set_text_submission as submission;

/// The text fields and metadata of an experience, as the gate redacts them one by one.
fn fields(new: &NewExperience) -> Vec<&str> {
    let mut all = vec![new.task.as_str(), new.resource.as_str(), new.result.as_str()];
    for value in
        [&new.content, &new.content_type, &new.agent_id, &new.submitted_by, &new.session_key].into_iter().flatten()
    {
        all.push(value);
    }
    all
}

/// A stage of the gate, named, to time.
type Stage<'a> = (&'static str, Box<dyn FnMut(&NewExperience) + 'a>);

/// Mean microseconds of `stage` over `experiences`, `rounds` times.
fn mean_us(experiences: &[NewExperience], rounds: usize, stage: &mut dyn FnMut(&NewExperience)) -> f64 {
    let started = Instant::now();
    for _ in 0..rounds {
        for new in experiences {
            stage(new);
        }
    }
    started.elapsed().as_secs_f64() * 1e6 / (rounds * experiences.len()) as f64
}

fn time(rounds: usize) {
    kb_core::warm_up();
    let policy = GatePolicy::default();
    let sets: Vec<NewExperience> = bench_texts().iter().map(|text| submission(text)).collect();
    let typical = vec![kb_core::gate::typical_submission()];
    println!("stage                          sets' texts ({} × {rounds})   typical 1.5 KB", sets.len());
    let stages: Vec<Stage<'_>> = vec![
        (
            "gate (all)",
            Box::new(|new: &NewExperience| {
                std::hint::black_box(gate(new.clone(), &policy).ok());
            }),
        ),
        (
            "redact (every field)",
            Box::new(|new: &NewExperience| {
                for field in fields(new) {
                    std::hint::black_box(redact::redact(field));
                }
            }),
        ),
        (
            "redact across fields (pairs)",
            Box::new(|new: &NewExperience| {
                let mut new = new.clone();
                let mut text_fields = vec![&mut new.task, &mut new.resource, &mut new.result];
                text_fields.extend(new.content.as_mut());
                std::hint::black_box(redact::redact_across_fields(&mut text_fields));
            }),
        ),
        (
            "injection (4 text fields)",
            Box::new(|new: &NewExperience| {
                for field in fields(new).into_iter().take(4) {
                    std::hint::black_box(injection::looks_like_injection(field));
                }
            }),
        ),
        (
            "risky (once)",
            Box::new(|new: &NewExperience| {
                std::hint::black_box(risky::risky_actions(&kb_core::gate::gated_text(new)));
            }),
        ),
        (
            "learned risky (4 text fields)",
            Box::new(|new: &NewExperience| {
                std::hint::black_box(risky::learned::check(&fields(new).into_iter().take(4).collect::<Vec<_>>()));
            }),
        ),
        (
            "dedup key + same keys",
            Box::new(|new: &NewExperience| {
                std::hint::black_box(kb_core::gate::dedup_key(&new.task, &new.resource, &new.result));
                std::hint::black_box(sameness::keys_of(&[&new.task, &new.resource, &new.result]));
            }),
        ),
    ];
    for (name, mut stage) in stages {
        let on_sets = mean_us(&sets, rounds, &mut *stage);
        let on_typical = mean_us(&typical, rounds * 20, &mut *stage);
        println!("{name:<30} {on_sets:>10.1} µs {on_typical:>22.1} µs");
    }
    println!("peak memory: {}", peak_memory());
}

/// The process's peak resident memory (`VmHWM`), where `/proc` tells it.
fn peak_memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|line| line.strip_prefix("VmHWM:")).map_or("unknown".to_owned(), |kb| kb.trim().to_owned())
}

/// Every decision of the gate on every text, in every form, one line each.
fn dump(path: &Path) {
    let mut all: Vec<(String, String)> = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    let corpora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kb-bench/data");
    for corpus in ["english-experiences", "debian-en", "debian-zh", "cmrc-trial-chunks", "conv-en", "lme-oracle"] {
        names.push(corpora.join(corpus).join("corpus.jsonl"));
    }
    names.sort();
    for name in &names {
        let label = name.file_name().map(|file| file.to_string_lossy().into_owned()).unwrap_or_default();
        let label =
            format!("{}/{label}", name.parent().and_then(Path::file_name).unwrap_or_default().to_string_lossy());
        all.extend(texts_of(name).into_iter().map(|text| (label.clone(), text)));
    }
    let policy = GatePolicy::default();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("the dump file"));
    for (idx, (label, text)) in all.iter().enumerate() {
        writeln!(out, "# {idx} {label} detect={:?}", injection::detect(text)).unwrap();
        for form in Form::ALL {
            let encoded = form.encode(text);
            let gated = gate(submission(&encoded), &policy);
            let line = match gated {
                Ok(gated) => format!(
                    "{:?} {:?} {:?} {:?} {:?} {} {:?}",
                    gated.experience.result,
                    gated.redactions,
                    gated.flags,
                    gated.reasons,
                    gated.status,
                    gated.dedup_key,
                    gated.same
                ),
                Err(error) => format!("error {error}"),
            };
            writeln!(out, "{} {line}", form.name()).unwrap();
            // The metadata path: one line, as identifiers are.
            let one_line: String = encoded.replace(['\n', '\r', '\t'], " ").chars().take(256).collect();
            let (redacted, found) = redact::redact(&one_line);
            writeln!(out, "{} meta {redacted:?} {found:?}", form.name()).unwrap();
        }
    }
    out.flush().unwrap();
    eprintln!("{} texts dumped to {}", all.len(), path.display());
}

/// The daemon's case: the patterns warmed on a thread of their own (`kb_core::warm_up` at start),
/// then `threads` lane threads gating the sets' texts at once. Prints the mean wall time per submit.
fn threads(n_threads: usize, rounds: usize) {
    std::thread::spawn(kb_core::warm_up).join().expect("warm-up");
    let sets: Vec<NewExperience> = bench_texts().iter().map(|text| submission(text)).collect();
    let sets = std::sync::Arc::new(sets);
    let started = Instant::now();
    let workers: Vec<_> = (0..n_threads)
        .map(|_| {
            let sets = std::sync::Arc::clone(&sets);
            std::thread::spawn(move || {
                let policy = GatePolicy::default();
                for _ in 0..rounds {
                    for new in sets.iter() {
                        std::hint::black_box(gate(new.clone(), &policy).ok());
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker");
    }
    let per_submit = started.elapsed().as_secs_f64() * 1e6 / (n_threads * rounds * sets.len()) as f64;
    println!("{n_threads} threads after a warm-up thread: {per_submit:.1} µs of wall time per submit");
    println!("peak memory: {}", peak_memory());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("dump") => dump(Path::new(args.get(1).expect("dump FILE"))),
        Some("threads") => threads(
            args.get(1).and_then(|n| n.parse().ok()).unwrap_or(2),
            args.get(2).and_then(|rounds| rounds.parse().ok()).unwrap_or(3),
        ),
        Some("time") | None => time(args.get(1).and_then(|rounds| rounds.parse().ok()).unwrap_or(5)),
        Some(other) => panic!("unknown command {other}: time [ROUNDS] | threads [N [ROUNDS]] | dump FILE"),
    }
}
