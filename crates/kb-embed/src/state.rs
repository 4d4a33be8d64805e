//! What the daemon reports about its embedder: loading, ready with a model, or unavailable and why.

use crate::{Embedder, Error};

/// The state of the embedder as shown by `status` and in search answers. While it is anything
/// but `Ready`, search runs on BM25 alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedderState {
    /// A model is being loaded (or downloaded) in the background.
    Loading,
    /// Vectors can be computed; `model_id` names the model they belong to.
    Ready { model_id: String, dimensions: usize },
    /// No model can be used; `reason` says why in words meant for the user (the whole error
    /// chain), for example that ONNX Runtime is missing or the model directory does not exist.
    Unavailable { reason: String },
}

impl EmbedderState {
    /// The state of an embedder that loaded.
    pub fn ready(embedder: &dyn Embedder) -> EmbedderState {
        EmbedderState::Ready { model_id: embedder.model_id().to_owned(), dimensions: embedder.dimensions() }
    }

    /// The state after loading failed with `error`.
    pub fn unavailable(error: &Error) -> EmbedderState {
        EmbedderState::Unavailable { reason: error_chain(error) }
    }

    /// A short lowercase name for the state: `loading`, `ready` or `unavailable`.
    pub fn name(&self) -> &'static str {
        match self {
            EmbedderState::Loading => "loading",
            EmbedderState::Ready { .. } => "ready",
            EmbedderState::Unavailable { .. } => "unavailable",
        }
    }

    /// Whether vectors can be computed now.
    pub fn is_ready(&self) -> bool {
        matches!(self, EmbedderState::Ready { .. })
    }
}

/// An error and all its sources, joined by `": "`, for places that can show only one string.
/// A source whose text the message already ends with (some errors repeat their source in their
/// own message) is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.ends_with(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn unavailable_state_carries_the_whole_error_chain() {
        let error = Error::ModelFile {
            path: PathBuf::from("/models/x/model.onnx"),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
        };
        let state = EmbedderState::unavailable(&error);
        assert_eq!(
            state,
            EmbedderState::Unavailable {
                reason: "cannot read /models/x/model.onnx of the local model: no such file".to_owned()
            }
        );
        assert_eq!(state.name(), "unavailable");
        assert!(!state.is_ready());
        assert_eq!(EmbedderState::Loading.name(), "loading");
    }

    #[test]
    fn a_source_repeated_in_its_errors_message_is_shown_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("request error: {0}")]
        struct Wrapper(#[source] std::io::Error);
        let error = Wrapper(std::io::Error::other("connection refused"));
        assert_eq!(error_chain(&error), "request error: connection refused");
    }
}
