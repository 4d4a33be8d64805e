//! Writes that need the model before they commit, embedded together: whoever gets the writes'
//! turn embeds the texts of every write waiting (as the group commit writes every submit
//! waiting), up to a run's worth of tokens, so that many writers cost a few runs, not one each.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::Semantic;
use crate::turns::Priority;

/// What one write's texts came to: the model's id and a vector per text, or nothing (no model,
/// or it failed).
pub(super) type Embedded = Option<(String, Vec<Vec<f32>>)>;

/// One write's texts, and their vectors once a run made them.
pub(super) struct WriteRequest {
    pub(super) texts: Vec<String>,
    outcome: Mutex<Option<Embedded>>,
}

impl WriteRequest {
    pub(super) fn new(texts: &[&str]) -> WriteRequest {
        WriteRequest { texts: texts.iter().map(|text| (*text).to_owned()).collect(), outcome: Mutex::new(None) }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Embedded>> {
        self.outcome.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn is_served(&self) -> bool {
        self.lock().is_some()
    }

    pub(super) fn serve(&self, embedded: Embedded) {
        *self.lock() = Some(embedded);
    }

    /// The vectors, once served (`None` before, or when the model gave none).
    pub(super) fn take(&self) -> Embedded {
        self.lock().take().flatten()
    }
}

/// The writes waiting for the model.
#[derive(Default)]
pub(super) struct WriteGroup {
    waiting: Mutex<Vec<Arc<WriteRequest>>>,
}

impl WriteGroup {
    pub(super) fn join(&self, request: Arc<WriteRequest>) {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).push(request);
    }

    /// The waiting writes, oldest first, as many as `budget` tokens hold (at least one), with
    /// `own` among them if it still waits.
    pub(super) fn take(&self, own: &Arc<WriteRequest>, budget: usize) -> Vec<Arc<WriteRequest>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let tokens = |request: &WriteRequest| -> usize {
            request.texts.iter().map(|text| kb_embed::estimated_tokens(text)).sum()
        };
        let mut taken: Vec<Arc<WriteRequest>> = Vec::new();
        let mut used = 0usize;
        if let Some(position) = waiting.iter().position(|request| Arc::ptr_eq(request, own)) {
            used += tokens(own);
            taken.push(waiting.remove(position));
        }
        while let Some(next) = waiting.first() {
            let next_tokens = tokens(next);
            if !taken.is_empty() && used + next_tokens > budget {
                break;
            }
            used += next_tokens;
            taken.push(waiting.remove(0));
        }
        taken
    }
}

impl Semantic {
    /// [`Semantic::embed_now`] of several texts in one run. Writes waiting together are
    /// embedded together: whoever gets the writes' turn runs the model on the texts of every
    /// write waiting, up to [`super::BACKLOG_RUN_TOKENS_WHILE_SEARCHED`] tokens when searches are being
    /// made (a query waits for the run in progress), else [`super::BACKLOG_RUN_TOKENS`].
    pub fn embed_texts_now(&self, texts: &[&str]) -> Option<(String, Vec<Vec<f32>>)> {
        if self.embedder().is_none() || !self.state().is_ready() {
            return None;
        }
        let request = Arc::new(WriteRequest::new(texts));
        self.writes.join(request.clone());
        let served = || request.is_served();
        if let Some(turn) = self.turns.take_unless(Priority::Write, &served) {
            if !request.is_served() {
                let group = self.writes.take(&request, self.run_token_budget());
                let all: Vec<&str> = group.iter().flat_map(|member| member.texts.iter().map(String::as_str)).collect();
                let embedded = self.embed_with_turn(|embedder| embedder.embed(&all));
                let mut vectors = embedded.as_ref().map(|(_, vectors)| vectors.iter());
                for member in &group {
                    let own = vectors.as_mut().and_then(|vectors| {
                        let own: Vec<Vec<f32>> = vectors.by_ref().take(member.texts.len()).cloned().collect();
                        (own.len() == member.texts.len()).then_some(own)
                    });
                    let model_id = embedded.as_ref().map(|(model_id, _)| model_id.clone());
                    member.serve(model_id.zip(own));
                }
            }
            drop(turn);
        }
        request.take()
    }
}
