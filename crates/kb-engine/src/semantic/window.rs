//! How much of the store's texts the model sees: the mean share of a stored experience's
//! tokens inside the model's window (`max_length`), from a sample of the store. The hybrid
//! fusion weighs the vectors by it (issue 25): a vector of a text cut short says less about it.
//!
//! Measured offline on the 7 quality sets with both models (`kb-bench quality
//! --dump-candidates`, token counts from each model's own tokenizer on what the daemon embeds):
//! only cmrc-trial's documents are longer than the window (mean share 0.71 with e5, 0.59 with
//! MiniLM; every other set ≥ 0.994), and there e5's fusion went from below BM25 (MRR −1.2
//! [−2.0, −0.4]) to level with it (+0.2 [−0.2, +0.6]) with no other pair changed beyond its
//! bootstrap interval. It adds no constant: the window is the model's own.

use std::sync::{Mutex, PoisonError};

use kb_embed::Embedder;
use kb_store::Store;

use super::{Semantic, embedding_text};

/// Experiences in the sample: the mean of shares in 0..=1 from 256 of them is within about
/// ±0.03 of the store's (two standard errors at the widest spread).
pub const SAMPLE: usize = 256;
/// The share is measured again once the store holds this much more (or less) than when it
/// was last measured, as a fraction of that.
const REMEASURE_AFTER: f64 = 0.1;

/// The last measurement: its share and how many vectors the store had then.
#[derive(Debug, Default)]
pub(super) struct WindowShare {
    measured: Mutex<Option<(f32, u64)>>,
}

impl WindowShare {
    pub(super) fn clear(&self) {
        *self.measured.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl Semantic {
    /// The store's mean window share, last measured (1 until it is: every text counts as
    /// seen whole).
    pub fn window_share(&self) -> f32 {
        self.measured_window_share().unwrap_or(1.0)
    }

    /// The window share, once measured.
    pub fn measured_window_share(&self) -> Option<f32> {
        self.window.measured.lock().unwrap_or_else(PoisonError::into_inner).map(|(share, _)| share)
    }

    /// Measures the window share from a sample of `store` when the store has changed by a
    /// tenth since the last measurement (or it was never measured): background work, on the
    /// embedder's thread, never on a search's path. An error keeps the last measurement.
    pub fn measure_window_share(&self, store: &Store, embedder: &dyn Embedder) -> anyhow::Result<()> {
        let (vectors, _) = self.coverage();
        let due = match *self.window.measured.lock().unwrap_or_else(PoisonError::into_inner) {
            None => vectors > 0,
            Some((_, at)) => (vectors as f64 - at as f64).abs() > REMEASURE_AFTER * at.max(1) as f64,
        };
        if !due {
            return Ok(());
        }
        let texts: Vec<String> = store
            .sample_embedding_sources(SAMPLE)?
            .iter()
            .map(|source| embedding_text(&source.task, &source.resource, &source.result))
            .collect();
        if texts.is_empty() {
            return Ok(());
        }
        let shares = embedder.window_shares(&texts.iter().map(String::as_str).collect::<Vec<_>>())?;
        let share = shares.iter().map(|share| share.clamp(0.0, 1.0)).sum::<f32>() / shares.len() as f32;
        tracing::debug!(share, sample = shares.len(), vectors, "measured how much of the store's texts the model sees");
        *self.window.measured.lock().unwrap_or_else(PoisonError::into_inner) = Some((share, vectors));
        Ok(())
    }
}
