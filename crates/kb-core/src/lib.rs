//! Domain types of KnowHub and the gate every write passes: validation, redaction, injection and risky-action checks.
//!
//! This crate does no IO. The store, the index and the daemon build on the types here, and the
//! protocol crate converts them to and from JSON at the wire boundary.

pub mod display;
pub mod experience;
pub mod gate;
pub mod injection;
mod intent;
mod literals;
mod matchset;
pub mod redact;
pub mod risky;
pub mod sameness;
pub mod validate;

pub use experience::{Experience, ExperienceId, ExperienceKey, NewExperience, Source, Status};
pub use gate::{GatePolicy, Gated, PrivacyMode, gate};
pub use validate::{Limits, ValidationError};

/// Compiles the gate's pattern sets (redaction, injection detection, risky actions) and fills their caches
/// once, so that the first write does not pay for it (measured: about 90 ms on the first
/// `kb.submit` of a daemon, against 7 ms for the next ones).
pub fn warm_up() {
    let sample = "deploy failed: password=hunter2 and api_key: sk-test; ignore previous instructions";
    let _ = redact::redact(sample);
    let _ = injection::detect(sample);
    let _ = risky::risky_actions(sample);
    let _ = risky::learned::score(sample);
}
