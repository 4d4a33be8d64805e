//! The LLM's answer read into proposals, tolerantly (code fences, a reasoning block, a bare
//! array, numbers as strings) but never half-way: an answer that holds no JSON of the expected
//! shape is an error, and each proposal is checked on its own (a proposal missing a field is
//! dropped and counted, with the reason). An outcome of `success` that only the assistant's own
//! words support becomes `uncertain`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::transcript::{Role, Turn};

/// How an experience turned out, as the LLM judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Partial,
    Failure,
    Uncertain,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Partial => "partial",
            Outcome::Failure => "failure",
            Outcome::Uncertain => "uncertain",
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        let lowered = text.trim().to_lowercase();
        Some(match lowered.as_str() {
            "success" | "succeeded" | "successful" | "worked" | "ok" => Outcome::Success,
            "partial" | "partial success" | "partially" | "mixed" => Outcome::Partial,
            "failure" | "failed" | "fail" | "error" => Outcome::Failure,
            "uncertain" | "unknown" | "unclear" | "unverified" => Outcome::Uncertain,
            _ => return None,
        })
    }
}

/// One experience the LLM proposed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: i64,
    pub outcome: Outcome,
    pub confidence: f64,
    pub content: Option<String>,
    /// Turn numbers (1-based) of the transcript, only those that exist.
    pub evidence: Vec<usize>,
}

/// A parsed answer: the proposals that passed the checks, and why the others did not.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub proposals: Vec<Proposal>,
    pub invalid: Vec<String>,
}

/// Parses an LLM's answer for the transcript `turns`.
pub fn parse_answer(answer: &str, turns: &[Turn]) -> Result<Parsed, String> {
    let value = find_json(answer).ok_or_else(|| {
        let start: String = answer.trim().chars().take(120).collect();
        format!("the answer holds no JSON object or array (it starts {start:?})")
    })?;
    let items = match &value {
        Value::Array(items) => items.clone(),
        Value::Object(object) => match ["experiences", "proposals", "items"].iter().find_map(|key| object.get(*key)) {
            Some(Value::Array(items)) => items.clone(),
            Some(other) => return Err(format!("`experiences` must be an array, got {}", kind(other))),
            None if object.contains_key("task") => vec![value.clone()],
            None => {
                let keys: Vec<&str> = object.keys().map(String::as_str).take(8).collect();
                return Err(format!("the answer has no `experiences` array (its keys: {keys:?})"));
            }
        },
        other => return Err(format!("the answer is {}, not an object", kind(other))),
    };
    let mut parsed = Parsed::default();
    for (index, item) in items.iter().enumerate() {
        match proposal(item, turns) {
            Ok(proposal) => parsed.proposals.push(proposal),
            Err(reason) => parsed.invalid.push(format!("experiences[{index}]: {reason}")),
        }
    }
    Ok(parsed)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn proposal(item: &Value, turns: &[Turn]) -> Result<Proposal, String> {
    let object = item.as_object().ok_or_else(|| format!("is {}, not an object", kind(item)))?;
    let text = |key: &str| -> Result<String, String> {
        match object.get(key) {
            Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
            Some(Value::String(_)) | None | Some(Value::Null) => Err(format!("`{key}` is missing or empty")),
            Some(other) => Err(format!("`{key}` must be a string, got {}", kind(other))),
        }
    };
    let task = text("task")?;
    let resource = text("resource")?;
    let result = text("result")?;
    let score = number(object, "score")?.map(|score| score.round() as i64).unwrap_or(3);
    if !(1..=5).contains(&score) {
        return Err(format!("`score` must be 1 to 5, got {score}"));
    }
    let mut confidence = number(object, "confidence")?.ok_or("`confidence` is missing")?;
    if confidence > 1.0 && confidence <= 100.0 {
        confidence /= 100.0; // a percentage
    }
    if !(0.0..=1.0).contains(&confidence) {
        return Err(format!("`confidence` must be 0 to 1, got {confidence}"));
    }
    let outcome = match object.get("outcome") {
        Some(Value::String(text)) => Outcome::parse(text).unwrap_or(Outcome::Uncertain),
        _ => Outcome::Uncertain,
    };
    let content = match object.get("content") {
        Some(Value::String(text)) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        Some(Value::Array(lines)) => {
            let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        }
        _ => None,
    };
    let mut evidence: Vec<usize> = match object.get("evidence") {
        Some(Value::Array(items)) => items.iter().filter_map(turn_number).collect(),
        Some(single) => turn_number(single).into_iter().collect(),
        None => Vec::new(),
    };
    evidence.retain(|number| (1..=turns.len()).contains(number));
    evidence.sort_unstable();
    evidence.dedup();
    let outcome =
        if outcome == Outcome::Success && !confirmed(&evidence, turns) { Outcome::Uncertain } else { outcome };
    Ok(Proposal { task, resource, result, score, outcome, confidence, content, evidence })
}

/// Whether the evidence holds something other than the assistant's own words: a tool result
/// that did not fail, or a user turn.
fn confirmed(evidence: &[usize], turns: &[Turn]) -> bool {
    evidence.iter().any(|number| {
        let turn = &turns[number - 1];
        matches!(turn.role, Role::User) || (turn.role == Role::Tool && !turn.is_error)
    })
}

fn number(object: &Map<String, Value>, key: &str) -> Result<Option<f64>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => Ok(number.as_f64()),
        Some(Value::String(text)) => {
            let trimmed = text.trim().trim_end_matches('%');
            trimmed.parse::<f64>().map(Some).map_err(|_| format!("`{key}` must be a number, got {text:?}"))
        }
        Some(other) => Err(format!("`{key}` must be a number, got {}", kind(other))),
    }
}

fn turn_number(value: &Value) -> Option<usize> {
    match value {
        Value::Number(number) => number.as_u64().map(|number| number as usize),
        Value::String(text) => text.trim().trim_start_matches('#').parse().ok(),
        _ => None,
    }
}

/// The first JSON object or array in `answer`, after a reasoning block (`<think>…</think>`) and
/// outside code fences.
fn find_json(answer: &str) -> Option<Value> {
    let mut text = answer;
    if let Some(end) = text.find("</think>") {
        text = &text[end + "</think>".len()..];
    }
    let text = text.trim();
    if let Ok(value) = serde_json::from_str::<Value>(text)
        && (value.is_object() || value.is_array())
    {
        return Some(value);
    }
    // Each `{` or `[` in turn, parsed as the start of a JSON value that may be followed by prose.
    for (start, ch) in text.char_indices() {
        if ch != '{' && ch != '[' {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(value)) = stream.next()
            && (value.is_object() && !value.as_object().is_some_and(Map::is_empty) || value.is_array())
        {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns() -> Vec<Turn> {
        let turn = |role, text: &str, is_error| Turn {
            role,
            text: text.into(),
            tool_calls: vec![],
            tool: None,
            is_error,
            fingerprint: String::new(),
        };
        vec![
            turn(Role::User, "deploy", false),
            turn(Role::Assistant, "running", false),
            turn(Role::Tool, "EACCES", true),
            turn(Role::Assistant, "fixed it, it works now", false),
            turn(Role::Tool, "deployed", false),
        ]
    }

    const GOOD: &str = r#"{"experiences": [{"task": "Deploy the site", "resource": "npm run deploy",
        "result": "EACCES without sudo; works with the deploy user", "score": 4, "outcome": "success",
        "confidence": 0.9, "content": "sudo -u deploy npm run deploy", "evidence": [3, 5, 99]}]}"#;

    #[test]
    fn a_strict_answer_parses() {
        let parsed = parse_answer(GOOD, &turns()).unwrap();
        assert!(parsed.invalid.is_empty());
        let proposal = &parsed.proposals[0];
        assert_eq!((proposal.score, proposal.outcome, proposal.confidence), (4, Outcome::Success, 0.9));
        assert_eq!(proposal.evidence, vec![3, 5], "turn 99 does not exist");
        assert_eq!(proposal.content.as_deref(), Some("sudo -u deploy npm run deploy"));
    }

    #[test]
    fn tolerant_of_fences_reasoning_and_strings() {
        let fenced = format!("<think>let me see {{</think>\nHere you go:\n```json\n{GOOD}\n```\nDone.");
        assert_eq!(parse_answer(&fenced, &turns()).unwrap().proposals.len(), 1);
        let loose = r##"[{"task": "t", "resource": "r", "result": "x", "score": "5", "confidence": "85%", "outcome": "Failed", "evidence": ["#2"]}]"##;
        let proposal = &parse_answer(loose, &turns()).unwrap().proposals[0];
        assert_eq!((proposal.score, proposal.confidence, proposal.outcome), (5, 0.85, Outcome::Failure));
        assert_eq!(proposal.content, None);
        assert_eq!(parse_answer(r#"{"experiences": []}"#, &turns()).unwrap(), Parsed::default());
    }

    #[test]
    fn only_the_assistants_word_is_uncertain() {
        let claim = r#"{"experiences": [{"task": "t", "resource": "r", "result": "x", "score": 3, "outcome": "success", "confidence": 0.8, "content": "", "evidence": [4]}]}"#;
        assert_eq!(parse_answer(claim, &turns()).unwrap().proposals[0].outcome, Outcome::Uncertain);
        let no_evidence = claim.replace("[4]", "[]");
        assert_eq!(parse_answer(&no_evidence, &turns()).unwrap().proposals[0].outcome, Outcome::Uncertain);
    }

    #[test]
    fn answers_that_do_not_parse_are_errors_and_bad_proposals_are_counted() {
        let error = parse_answer("I could not find any experiences.", &turns()).unwrap_err();
        assert!(error.contains("no JSON"), "{error}");
        let error = parse_answer(r#"{"answer": "none"}"#, &turns()).unwrap_err();
        assert!(error.contains("no `experiences`"), "{error}");
        let error = parse_answer(r#"{"experiences": "none"}"#, &turns()).unwrap_err();
        assert!(error.contains("must be an array"), "{error}");
        let error = parse_answer(r#"{"experiences": [{"task": "t""#, &turns()).unwrap_err();
        assert!(error.contains("no JSON"), "{error}");
        let mixed = r#"{"experiences": [{"task": "t", "resource": "r", "result": "x", "score": 9, "confidence": 1},
            {"task": "t", "resource": "", "result": "x", "confidence": 1},
            {"task": "t", "resource": "r", "result": "x", "confidence": 0.5}]}"#;
        let parsed = parse_answer(mixed, &turns()).unwrap();
        assert_eq!(parsed.proposals.len(), 1);
        assert_eq!(parsed.invalid.len(), 2);
        assert!(parsed.invalid[0].contains("score"), "{:?}", parsed.invalid);
        assert!(parsed.invalid[1].contains("resource"), "{:?}", parsed.invalid);
    }
}
