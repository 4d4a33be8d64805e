//! What the daemon does to learn experiences from a finished conversation, as pure functions:
//! OpenClaw's messages become a transcript (`transcript`), the gate before any spend decides
//! whether it is worth an LLM call (`worth`), the transcript is cut to a token budget and
//! rendered (`render`), the request is built (`prompt`) and the LLM's answer is parsed into
//! checked proposals (`proposal`).
//!
//! Architecture Invariant: no IO. The daemon's worker (`knowhubd::extraction`) owns the queue,
//! the HTTP calls and the storage; everything it decides is decided here, from its inputs.

pub mod prompt;
pub mod proposal;
pub mod render;
pub mod transcript;
pub mod worth;

pub use proposal::{Outcome, Parsed, Proposal, parse_answer};
pub use render::{Rendered, TokenTally, estimate_tokens, render};
pub use transcript::{Role, ToolCall, Turn, fingerprint, parse_messages, redact_turns};
pub use worth::{Assessment, assess};
