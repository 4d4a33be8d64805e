//! JSON-RPC error codes of the protocol and the data they carry.

/// Error codes the daemon answers with. The standard JSON-RPC codes keep their meaning;
/// the `-320xx` ones are KnowHub's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request was not valid JSON-RPC.
    InvalidRequest,
    /// No method of that name.
    MethodNotFound,
    /// A parameter is missing, of the wrong type or out of range; `data.field` names it.
    InvalidParams,
    /// The daemon failed; the message says what it was doing.
    Internal,
    /// The experience (or its content) does not exist.
    NotFound,
    /// The daemon cannot serve this now (shutting down); retrying later may work.
    Unavailable,
    /// The user decided against this before (a submit of an experience they rejected);
    /// `data.experience_id` names it. Only the user can override it (`confirm`).
    Refused,
}

impl ErrorCode {
    pub fn code(self) -> i32 {
        match self {
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::Internal => -32603,
            ErrorCode::NotFound => -32004,
            ErrorCode::Unavailable => -32005,
            ErrorCode::Refused => -32006,
        }
    }

    pub fn from_code(code: i32) -> Option<ErrorCode> {
        [
            ErrorCode::InvalidRequest,
            ErrorCode::MethodNotFound,
            ErrorCode::InvalidParams,
            ErrorCode::Internal,
            ErrorCode::NotFound,
            ErrorCode::Unavailable,
            ErrorCode::Refused,
        ]
        .into_iter()
        .find(|known| known.code() == code)
    }
}
