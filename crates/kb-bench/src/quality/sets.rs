//! The labelled data sets: corpus rows (plain text or experiences) and questions with the ids
//! of their relevant rows, read from JSON lines.

use std::path::Path;

use anyhow::Context as _;
use serde::Deserialize;

/// Every corpus row becomes an experience whose task is the text. The daemon requires a
/// resource and a result too; both get the same constant word in every experience, so they
/// add the same amount to every document's score and never change the ranking (unlike the
/// corpus id, whose digits would match numbers in the questions).
pub(super) const NEUTRAL_RESOURCE: &str = "doc";
pub(super) const NEUTRAL_RESULT: &str = "doc";

/// A corpus row: plain text (the CMRC sets), or an experience (the English set).
#[derive(Debug, Deserialize)]
pub(super) struct CorpusRow {
    pub(super) id: String,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) task: Option<String>,
    #[serde(default)]
    pub(super) resource: Option<String>,
    #[serde(default)]
    pub(super) result: Option<String>,
    #[serde(default)]
    pub(super) score: Option<u8>,
}

impl CorpusRow {
    /// The experience the row becomes: the text as the task, with a constant resource and
    /// result (see `NEUTRAL_RESOURCE`), or the experience as it is.
    pub(super) fn fields(&self) -> (&str, &str, &str) {
        match &self.text {
            Some(text) => (text, NEUTRAL_RESOURCE, NEUTRAL_RESULT),
            None => (
                self.task.as_deref().unwrap_or_default(),
                self.resource.as_deref().unwrap_or_default(),
                self.result.as_deref().unwrap_or_default(),
            ),
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct QueryRow {
    pub(super) text: String,
    pub(super) relevant: Vec<String>,
}

pub(super) fn read_jsonl<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line)
                .with_context(|| format!("{} line {}: not a valid row", path.display(), index + 1))
        })
        .collect()
}
