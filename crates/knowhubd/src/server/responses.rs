//! The HTTP answers the server gives before a request reaches a method: each carries a
//! JSON-RPC error body whose message names the limit or the problem and the setting to change.

use hyper::StatusCode;
use jsonrpsee::server::{HttpBody, HttpResponse};
use kb_proto::ErrorCode;
use serde_json::json;

/// jsonrpsee's code for a request over the size limit, kept for clients that know it.
const OVERSIZED_REQUEST_CODE: i32 = -32007;

/// An answer with a JSON-RPC error body. `id` is the request's id as sent (raw JSON) when it
/// is known, else null. `close` ends the connection after the answer: the rest of the request
/// was not read, so the connection cannot carry another one.
fn error_response(
    status: StatusCode,
    code: i32,
    message: &str,
    data: serde_json::Value,
    id: Option<&str>,
    close: bool,
) -> HttpResponse {
    let error = json!({"code": code, "message": message, "data": data});
    let id = id.unwrap_or("null");
    // The id is spliced in as raw JSON so that a client gets back exactly what it sent.
    let body = format!(r#"{{"jsonrpc":"2.0","error":{error},"id":{id}}}"#);
    let mut builder = HttpResponse::builder().status(status).header("content-type", "application/json; charset=utf-8");
    if close {
        builder = builder.header("connection", "close");
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        builder = builder.header("retry-after", "1");
    }
    builder.body(HttpBody::from(body)).expect("a status, fixed headers and a string body make a response")
}

/// 413: the body is, or says it is, larger than `server.max_request_bytes`.
pub fn too_large(limit: u64, declared: Option<u64>) -> HttpResponse {
    let size = match declared {
        Some(declared) => format!("Content-Length {declared} is"),
        None => "the body is".to_owned(),
    };
    let message = format!(
        "request too large: {size} over the limit of {limit} bytes (server.max_request_bytes); \
         send fewer items per kb.import"
    );
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        OVERSIZED_REQUEST_CODE,
        &message,
        json!({"limit": limit, "setting": "server.max_request_bytes"}),
        None,
        true,
    )
}

/// 503: receiving this body would take the bodies held in memory over `server.body_budget_bytes`.
pub fn over_budget(budget: u64) -> HttpResponse {
    let message = format!(
        "the daemon is busy: request bodies being received already fill its memory budget of {budget} bytes \
         (server.body_budget_bytes); try again shortly"
    );
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable.code(),
        &message,
        json!({"limit": budget, "setting": "server.body_budget_bytes"}),
        None,
        true,
    )
}

/// 503: every connection the daemon serves is in the middle of a request.
pub fn too_many_connections(limit: usize) -> HttpResponse {
    let message = format!(
        "the daemon is busy: all {limit} connections it serves (server.max_connections) are in the middle \
         of a request being run; try again shortly"
    );
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable.code(),
        &message,
        json!({"limit": limit, "setting": "server.max_connections"}),
        None,
        true,
    )
}

/// 503: at the connection cap, this request's body had been arriving the longest, and its
/// connection was closed to make room for a new one.
pub fn evicted(limit: usize) -> HttpResponse {
    let message = format!(
        "the daemon is busy: all {limit} connections it serves (server.max_connections) are in use, and this \
         request's body had been arriving the longest, so it was refused to make room; try again"
    );
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Unavailable.code(),
        &message,
        json!({"limit": limit, "setting": "server.max_connections"}),
        None,
        true,
    )
}

/// 408: the body did not arrive within `server.body_timeout_seconds`.
pub fn body_timeout(seconds: u64, received: u64) -> HttpResponse {
    let message = format!(
        "the request body was not received within {seconds} s (server.body_timeout_seconds); \
         {received} bytes arrived"
    );
    error_response(
        StatusCode::REQUEST_TIMEOUT,
        ErrorCode::InvalidRequest.code(),
        &message,
        json!({"limit": seconds, "setting": "server.body_timeout_seconds"}),
        None,
        true,
    )
}

/// 400: the body could not be read (the client broke off or sent malformed chunks).
pub fn unreadable_body(reason: &str) -> HttpResponse {
    let message = format!("cannot read the request body: {reason}");
    error_response(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest.code(), &message, json!(null), None, true)
}

/// 400: a request's id is one the daemon cannot answer to; `id` is echoed back as sent.
pub fn bad_id(problem: &super::ids::IdProblem) -> HttpResponse {
    error_response(
        StatusCode::BAD_REQUEST,
        ErrorCode::InvalidRequest.code(),
        &problem.to_string(),
        json!({"field": problem.field()}),
        problem.echo_id(),
        false,
    )
}
