//! The extraction endpoint: one Chat Completions call, its answer read within bounds, and its
//! failures sorted into worth retrying (and when) or not.

use std::time::Duration;

use serde_json::Value;

use super::budget::{Allowance, over_allowance_reason, tally_utf8};
use super::{ERROR_BODY_CHARS, MAX_ANSWER_BYTES};
use crate::config::ExtractionConfig;

/// What an endpoint answered.
pub(super) struct Answer {
    pub(super) text: String,
    /// Tokens it counted (`usage`), when it said.
    pub(super) tokens: Option<u64>,
}

pub(super) enum CallError {
    /// Worth another attempt (a timeout, a refused connection, 408, 429, 5xx), after `after`
    /// when the endpoint said (`Retry-After`).
    Retry { reason: String, after: Option<Duration> },
    /// The endpoint does not take `response_format`.
    NoSchema(String),
    /// Not worth another attempt (another 4xx, an answer with no message).
    Fatal(String),
    /// The answer was longer than the call's allowance: cut off after `read` tokens.
    OverAllowance { reason: String, read: u64 },
}

/// An endpoint's URL as it may be shown (status, errors): a user and password before the host
/// and a query after the path are left out (`https://…@api.example/v1?…`), as they may hold a key.
pub(crate) fn shown_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, query) = match rest.find(['?', '#']) {
        Some(at) => (&rest[..at], true),
        None => (rest, false),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("…@{host}"),
        None => authority.to_owned(),
    };
    let shown = if scheme.is_empty() { format!("{host}{path}") } else { format!("{scheme}://{host}{path}") };
    let shown = if query { format!("{shown}?…") } else { shown };
    kb_core::redact::redact(&shown).0.into_owned()
}

/// The answer's body as text, at most `MAX_ANSWER_BYTES` once decoded: ureq's own limit counts
/// the bytes on the wire, before a `Content-Encoding: gzip` is undone, so a 600 KB answer could
/// decode to 600 MiB in memory (the attack round's bomb; a peak of 1,993 MiB). Its tokens are
/// counted as it arrives, and reading stops once they pass `allowance.read_limit`: an endpoint
/// that ignores `max_tokens` (a 3.4 MB answer was charged 822k tokens against a cap of 200k)
/// spends no more than the call was allowed.
fn read_answer(body: &mut ureq::Body, allowance: &Allowance) -> Result<String, CallError> {
    use std::io::Read as _;
    let failed = |error: std::io::Error| CallError::Retry {
        reason: format!("reading the endpoint's answer failed: {error}"),
        after: None,
    };
    let mut reader = body.with_config().limit(MAX_ANSWER_BYTES).reader().take(MAX_ANSWER_BYTES + 1);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let mut tally = kb_extract::TokenTally::default();
    let mut counted = 0;
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(failed(error)),
        };
        bytes.extend_from_slice(&chunk[..n]);
        counted = tally_utf8(&mut tally, &bytes, counted);
        if tally.tokens() > allowance.read_limit {
            return Err(CallError::OverAllowance {
                reason: over_allowance_reason(allowance),
                read: allowance.read_limit,
            });
        }
    }
    if bytes.len() as u64 > MAX_ANSWER_BYTES {
        return Err(CallError::Retry {
            reason: format!("the endpoint's answer is larger than {} MiB once decoded", MAX_ANSWER_BYTES >> 20),
            after: None,
        });
    }
    String::from_utf8(bytes).map_err(|error| CallError::Retry {
        reason: format!("the endpoint's answer is not UTF-8 text: {error}"),
        after: None,
    })
}

/// One Chat Completions call.
pub(super) fn call(
    config: &ExtractionConfig,
    base_url: &str,
    body: &Value,
    allowance: &Allowance,
) -> Result<Answer, CallError> {
    let key = api_key(config).map_err(CallError::Fatal)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(config.timeout_seconds)))
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("{}/chat/completions", base_url.trim_end_matches('/'));
    let mut request = agent.post(&url).header("Content-Type", "application/json");
    if let Some(key) = &key {
        request = request.header("Authorization", &format!("Bearer {key}"));
    }
    let mut response = request.send_json(body).map_err(|error| CallError::Retry {
        reason: format!("cannot reach the extraction endpoint {}: {error}", shown_url(&url)),
        after: None,
    })?;
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|value| value.to_str().ok()).and_then(retry_after);
    let text = read_answer(response.body_mut(), allowance)?;
    let excerpt = || {
        let (redacted, _) = kb_core::redact::redact(&text);
        let cut: String = redacted.chars().take(ERROR_BODY_CHARS).collect();
        cut.replace('\n', " ")
    };
    match status {
        200..=299 => {}
        408 | 429 | 500..=599 => {
            return Err(CallError::Retry {
                reason: format!("the endpoint answered {status}: {}", excerpt()),
                after: retry_after,
            });
        }
        400 | 422 if body.get("response_format").is_some() && mentions_response_format(&text) => {
            return Err(CallError::NoSchema(format!("the endpoint answered {status}: {}", excerpt())));
        }
        _ => return Err(CallError::Fatal(format!("the endpoint answered {status}: {}", excerpt()))),
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|error| CallError::Fatal(format!("the endpoint's answer is not JSON ({error}): {}", excerpt())))?;
    let message = value.pointer("/choices/0/message/content").and_then(Value::as_str);
    let Some(message) = message else {
        return Err(CallError::Fatal(format!(
            "the endpoint's answer has no choices[0].message.content: {}",
            excerpt()
        )));
    };
    let usage = value.get("usage");
    let tokens = usage.and_then(|usage| usage.get("total_tokens")).and_then(Value::as_u64).or_else(|| {
        let part = |key: &str| usage.and_then(|usage| usage.get(key)).and_then(Value::as_u64);
        Some(part("prompt_tokens")? + part("completion_tokens")?)
    });
    Ok(Answer { text: message.to_owned(), tokens })
}

fn mentions_response_format(text: &str) -> bool {
    let lowered = text.to_lowercase();
    ["response_format", "json_schema", "response format"].iter().any(|word| lowered.contains(word))
}

/// `Retry-After` in seconds (an HTTP date is not parsed: the backoff applies then), at most an hour.
fn retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(|seconds| Duration::from_secs(seconds.min(3_600)))
}

/// The API key: from the environment variable or file the config names; none when it names none.
fn api_key(config: &ExtractionConfig) -> Result<Option<String>, String> {
    if let Some(name) = &config.api_key_env {
        return match std::env::var(name) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_owned())),
            _ => Err(format!("extraction.api_key_env names {name}, which is not set")),
        };
    }
    if let Some(path) = &config.api_key_file {
        return match std::fs::read_to_string(path) {
            Ok(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_owned())),
            Ok(_) => Err(format!("the API key file {} is empty", path.display())),
            Err(error) => Err(format!("cannot read the API key file {}: {error}", path.display())),
        };
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn an_endpoints_url_is_shown_without_its_user_password_or_query() {
        assert_eq!(shown_url("http://127.0.0.1:11434/v1"), "http://127.0.0.1:11434/v1");
        assert_eq!(shown_url("https://user:sk-live-key@api.example/v1"), "https://…@api.example/v1");
        assert_eq!(shown_url("https://api.example/v1?api_key=sk-live-key"), "https://api.example/v1?…");
        assert_eq!(shown_url("https://api.example/v1#sk-live-key"), "https://api.example/v1?…");
        assert_eq!(shown_url("https://a@b@api.example"), "https://…@api.example");
        for url in ["https://user:sk-live-key@api.example/v1?key=x", "https://api.example/v1?k=sk-live-key"] {
            assert!(!shown_url(url).contains("sk-live-key"), "{url}");
        }
    }
}
