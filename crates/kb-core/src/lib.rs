//! Domain types of KnowHub and the gate every write passes: validation, redaction, injection checks.
//!
//! This crate does no IO. The store, the index and the daemon build on the types here, and the
//! protocol crate converts them to and from JSON at the wire boundary.

pub mod experience;
pub mod gate;
pub mod injection;
pub mod redact;
pub mod sameness;
pub mod validate;

pub use experience::{Experience, ExperienceId, ExperienceKey, NewExperience, Source, Status};
pub use gate::{GatePolicy, Gated, PrivacyMode, gate};
pub use validate::{Limits, ValidationError};
