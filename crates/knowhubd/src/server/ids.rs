//! Checks the ids of JSON-RPC requests before jsonrpsee sees them.
//!
//! jsonrpsee accepts only strings, null and numbers that fit a `u64` as ids. A request with any
//! other id (-1, 1.5, 1e3, 2^64, true) fails to parse as a call and then parses as a
//! notification, which by the protocol gets no answer: the client saw `200` and an empty body,
//! and its request was silently dropped (issue 14). Such requests get an error naming the id.

use serde::Deserialize;
use serde_json::value::RawValue;

/// The largest id jsonrpsee can answer to.
const MAX_ID: u64 = u64::MAX;

/// Only the id of a request; everything else is skipped without being kept.
#[derive(Deserialize)]
struct IdOnly<'body> {
    #[serde(borrow, default)]
    id: Option<&'body RawValue>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdProblem {
    /// The position in a batch, or `None` for a single request.
    pub batch_index: Option<usize>,
    /// The id as sent (raw JSON), shortened for the message.
    pub id: String,
    /// Whether the raw id is a number, which may be echoed back in the answer.
    is_number: bool,
}

impl IdProblem {
    /// The field to name in `data.field`.
    pub fn field(&self) -> String {
        match self.batch_index {
            Some(index) => format!("[{index}].id"),
            None => "id".to_owned(),
        }
    }

    /// The id to put in the answer: a single request's numeric id as sent, so that the client
    /// can match the answer; null for a batch or an id that is not even a number.
    pub fn echo_id(&self) -> Option<&str> {
        (self.batch_index.is_none() && self.is_number).then_some(self.id.as_str())
    }
}

impl std::fmt::Display for IdProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(index) = self.batch_index {
            write!(formatter, "batch item {index}: ")?;
        }
        let shown: String = self.id.chars().take(40).collect();
        let ellipsis = if shown.len() < self.id.len() { "…" } else { "" };
        write!(
            formatter,
            "invalid request id {shown}{ellipsis}: an id must be a string, a whole number from 0 to {MAX_ID}, \
             or null (the request was not run)"
        )
    }
}

/// Whether every request in `body` has an id the daemon can answer to. A body that is not
/// JSON, or not requests, passes: jsonrpsee answers those with a parse or request error.
pub fn check(body: &[u8]) -> Result<(), IdProblem> {
    let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
    match first {
        Some(b'{') => check_one(body, None),
        Some(b'[') => {
            let Ok(items) = serde_json::from_slice::<Vec<&RawValue>>(body) else { return Ok(()) };
            items.iter().enumerate().try_for_each(|(index, item)| check_one(item.get().as_bytes(), Some(index)))
        }
        _ => Ok(()),
    }
}

fn check_one(request: &[u8], batch_index: Option<usize>) -> Result<(), IdProblem> {
    let Ok(IdOnly { id: Some(id) }) = serde_json::from_slice::<IdOnly<'_>>(request) else { return Ok(()) };
    let text = id.get();
    let acceptable = text.starts_with('"') || text == "null" || text.parse::<u64>().is_ok();
    if acceptable {
        return Ok(());
    }
    let is_number = text.starts_with(|first: char| first == '-' || first.is_ascii_digit());
    Err(IdProblem { batch_index, id: text.to_owned(), is_number })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(body: &str) -> Option<IdProblem> {
        check(body.as_bytes()).err()
    }

    #[test]
    fn ids_jsonrpsee_answers_to_pass() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":"abc","method":"status"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"status"}"#,
            r#"{"jsonrpc":"2.0","method":"status"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","id":"x","method":"status"}]"#,
            "not json at all",
            r#"{"id": -1"#,
        ] {
            assert_eq!(problem(body), None, "{body}");
        }
    }

    #[test]
    fn negative_fractional_huge_and_odd_ids_are_named() {
        for (body, id) in [
            (r#"{"jsonrpc":"2.0","id":-1,"method":"status"}"#, "-1"),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"status"}"#, "1.5"),
            (r#"{"jsonrpc":"2.0","id":1e3,"method":"status"}"#, "1e3"),
            (r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"status"}"#, "18446744073709551616"),
            (r#"{"jsonrpc":"2.0","method":"status","params":{},"id":true}"#, "true"),
        ] {
            let found = problem(body).unwrap_or_else(|| panic!("{body} passed"));
            assert_eq!(found.id, id);
            assert_eq!(found.field(), "id");
            assert!(found.to_string().contains(&format!("invalid request id {id}")), "{found}");
        }
        let huge = problem(r#"{"jsonrpc":"2.0","id":-1,"method":"status"}"#).unwrap();
        assert_eq!(huge.echo_id(), Some("-1"));
        assert_eq!(problem(r#"{"id":true}"#).unwrap().echo_id(), None);
    }

    #[test]
    fn a_bad_id_in_a_batch_names_its_item() {
        let found =
            problem(r#"[{"jsonrpc":"2.0","id":1,"method":"status"},{"jsonrpc":"2.0","id":-7,"method":"status"}]"#)
                .unwrap();
        assert_eq!(found.batch_index, Some(1));
        assert_eq!(found.field(), "[1].id");
        assert_eq!(found.echo_id(), None);
        assert!(found.to_string().starts_with("batch item 1: invalid request id -7"), "{found}");
    }
}
