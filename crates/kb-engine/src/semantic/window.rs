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
use kb_store::EmbeddingSource;

use super::{Semantic, embedding_text};

/// Experiences in the sample: the mean of shares in 0..=1 from 256 of them is within about
/// ±0.03 of the store's (two standard errors at the widest spread).
const SAMPLE: usize = 256;
/// The share is measured again once the store holds this much more (or less) than when it
/// was last measured, as a fraction of that.
const REMEASURE_AFTER: f64 = 0.1;

/// The last measurement and when it was last tried.
#[derive(Debug, Default)]
pub(super) struct WindowShare {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone, Copy)]
struct State {
    /// The last share measured.
    share: Option<f32>,
    /// How many vectors the store had at the last attempt, whether it succeeded or not: a
    /// measurement that fails (a tokenizer's error) is tried again only once the store changed
    /// by a tenth since, not on every turn of the embedding loop.
    tried_at: Option<u64>,
}

impl WindowShare {
    pub(super) fn clear(&self) {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = State::default();
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
        self.window.state.lock().unwrap_or_else(PoisonError::into_inner).share
    }

    /// Measures the window share from a sample of the store (`sample(n)` reads at most `n`
    /// texts spread over it) when the store has changed by a tenth since the last attempt (or
    /// none was made): background work, on the embedder's thread, never on a search's path.
    /// The sample is read before the texts are tokenized, so that `sample` can hold a reader
    /// connection only while it reads. An error keeps the last measurement and waits for the
    /// next tenth of change.
    pub fn measure_window_share(
        &self,
        sample: impl FnOnce(usize) -> anyhow::Result<Vec<EmbeddingSource>>,
        embedder: &dyn Embedder,
    ) -> anyhow::Result<()> {
        let (vectors, _) = self.coverage();
        {
            let mut state = self.window.state.lock().unwrap_or_else(PoisonError::into_inner);
            let due = match state.tried_at {
                None => vectors > 0,
                Some(at) => (vectors as f64 - at as f64).abs() > REMEASURE_AFTER * at.max(1) as f64,
            };
            if !due {
                return Ok(());
            }
            state.tried_at = Some(vectors);
        }
        let texts: Vec<String> = sample(SAMPLE)?
            .iter()
            .map(|source| embedding_text(&source.task, &source.resource, &source.result))
            .collect();
        if texts.is_empty() {
            return Ok(());
        }
        let shares = embedder.window_shares(&texts.iter().map(String::as_str).collect::<Vec<_>>())?;
        let share = shares.iter().map(|share| share.clamp(0.0, 1.0)).sum::<f32>() / shares.len().max(1) as f32;
        tracing::debug!(share, sample = shares.len(), vectors, "measured how much of the store's texts the model sees");
        self.window.state.lock().unwrap_or_else(PoisonError::into_inner).share = Some(share);
        Ok(())
    }
}
