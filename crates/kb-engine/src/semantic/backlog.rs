//! The backlog: the experiences still to embed, submits committed without their vector ahead of
//! imports and reindexes, and the runs it is embedded in.

use std::collections::{HashSet, VecDeque};
use std::sync::PoisonError;
use std::time::Duration;

use super::Semantic;

/// Most experiences embedded per model run when working off the backlog.
pub const BACKLOG_BATCH: usize = 16;
/// Most (estimated) tokens per model run when working off the backlog while no search asks for
/// the model: a run costs about its tokens (~0.4 ms each for all-MiniLM-L6-v2 on one core
/// here). Measured with `kb-bench hybrid`: runs of 16 long Chinese experiences took up to
/// 0.7 s, and hybrid searches during an import waited 420 ms at the median.
pub const BACKLOG_RUN_TOKENS: usize = 256;
/// Most tokens per backlog run while searches are being made (a query asked for the model in
/// the last seconds, `ModelTurns::queries_recent`): a query waits for the run in progress, so
/// runs are cut to about a query's own cost. Issue 25: hybrid p99 alone must hold under 50
/// writers; see `kb-bench hostile --model` for what it costs the backlog.
pub const BACKLOG_RUN_TOKENS_WHILE_SEARCHED: usize = 64;
/// Experiences taken from the backlog at once and sorted by length into runs (see
/// [`BACKLOG_RUN_TOKENS`]): a run costs as much as its longest text times its size, and imports
/// mix short English experiences with long Chinese ones (a token per Han character). Measured
/// on `kb-bench hybrid` (300 generated experiences, all-MiniLM-L6-v2): runs of 16 in import
/// order took 45% more CPU than the model's own length-sorted batches.
pub const BACKLOG_WINDOW: usize = 128;
/// Most submits waiting in the backlog for their vector: past it, a submit waits for room
/// before it commits (`Semantic::wait_for_room`), so 50 writers cannot grow the backlog (and
/// the daemon's memory: about 200 bytes an id, 20 MB at the limit) without bound while the
/// model falls behind; they go at its pace. Measured with `kb-bench hostile --model`: at 512,
/// 50 writers met the limit within seconds (e5 embeds about 50 a second under that load) and
/// waited for room, submit p99 2.2 s. At 10,000, once a submit's near-duplicates were looked up
/// by key (1,600 submits a second instead of 700), the benchmark's 10,000 submits met it and
/// waited for room (submit p99 2.05 s while searches ran); 100,000 holds a minute of the
/// fastest flood 50 writers make here, which drains in about half an hour (e5 embeds about
/// 65 a second on this machine), BM25 finding those submits meanwhile.
pub const FRESH_LIMIT: usize = 100_000;

/// Ids of active experiences to embed: those without a vector of the current model, and those a
/// reindex asked to embed again (`refresh`). Submits committed without their vector (`fresh`)
/// come first, then the rest, oldest first.
#[derive(Default)]
pub(super) struct Backlog {
    pub(super) queue: VecDeque<String>,
    /// Submits, taken before `queue`; an id here is in `queue` too (whichever is taken first
    /// leaves the other to be skipped).
    pub(super) fresh: VecDeque<String>,
    pub(super) members: HashSet<String>,
    /// Taken by the worker and not yet stored: still backlog to anyone asking.
    pub(super) in_flight: Vec<String>,
    /// Queued or in flight although they have a vector of the current model (a reindex): search
    /// still finds them by meaning meanwhile, so they are not counted as missing.
    pub(super) refresh: HashSet<String>,
}

impl Backlog {
    pub(super) fn push(&mut self, id: &str) -> bool {
        if self.members.insert(id.to_owned()) {
            self.queue.push_back(id.to_owned());
            return true;
        }
        false
    }

    /// Moves a waiting experience ahead of imports and reindexes: a submit committed without
    /// its vector.
    pub(super) fn push_fresh(&mut self, id: &str) {
        if self.members.contains(id) {
            self.fresh.push_back(id.to_owned());
        }
    }

    /// Submits waiting ahead of the rest (an id deleted meanwhile counts until it is skipped).
    pub(super) fn fresh_len(&self) -> usize {
        self.fresh.len()
    }

    /// Queues an experience that has a vector, to be embedded again.
    pub(super) fn push_refresh(&mut self, id: &str) -> bool {
        let queued = self.push(id);
        if queued {
            self.refresh.insert(id.to_owned());
        }
        queued
    }

    pub(super) fn remove(&mut self, id: &str) {
        // The queues keep the id; `take` skips ids that are no longer members.
        self.members.remove(id);
        self.refresh.remove(id);
    }

    /// Experiences waiting, in the queue or in flight.
    pub(super) fn len(&self) -> usize {
        self.members.len() + self.in_flight.len()
    }

    /// Experiences waiting that have no vector of the current model.
    pub(super) fn missing(&self) -> usize {
        self.len().saturating_sub(self.refresh.len())
    }

    /// Up to `n` ids, fresh submits first.
    pub(super) fn take(&mut self, n: usize) -> Vec<String> {
        let mut taken = Vec::with_capacity(n);
        while taken.len() < n {
            let Some(id) = self.fresh.pop_front().or_else(|| self.queue.pop_front()) else { break };
            if self.members.remove(&id) {
                taken.push(id);
            }
        }
        taken
    }
}

impl Semantic {
    /// Moves submits committed without their vector ahead of imports and reindexes in the
    /// backlog.
    pub fn embed_soon(&self, ids: &[String]) {
        let mut backlog = self.lock_backlog();
        for id in ids {
            backlog.push_fresh(id);
        }
    }

    /// Submits waiting in the backlog for their vector.
    pub fn fresh_waiting(&self) -> usize {
        self.lock_backlog().fresh_len()
    }

    /// Waits, at most `timeout`, until fewer than [`FRESH_LIMIT`] submits wait in the backlog
    /// for their vector: the backpressure that keeps 50 writers from growing it without bound.
    /// False when it timed out (the model is failing or far behind; the write goes on).
    pub fn wait_for_room(&self, timeout: Duration) -> bool {
        let backlog = self.lock_backlog();
        let (backlog, waited) = self
            .backlog_room
            .wait_timeout_while(backlog, timeout, |backlog| backlog.fresh_len() >= FRESH_LIMIT)
            .unwrap_or_else(PoisonError::into_inner);
        drop(backlog);
        !waited.timed_out()
    }
}

/// `items` cut into consecutive runs of at most [`BACKLOG_BATCH`] items and `budget` tokens (a
/// longer item makes a run of its own).
pub fn runs<T>(items: &[T], budget: usize, tokens: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut runs = Vec::new();
    let (mut start, mut run_tokens) = (0, 0);
    for (item_idx, item) in items.iter().enumerate() {
        let item_tokens = tokens(item);
        let full = item_idx - start == BACKLOG_BATCH || run_tokens + item_tokens > budget;
        if item_idx > start && full {
            runs.push(&items[start..item_idx]);
            (start, run_tokens) = (item_idx, 0);
        }
        run_tokens += item_tokens;
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_runs_are_bounded_by_count_and_tokens() {
        let lengths = |runs: Vec<&[usize]>| runs.iter().map(|run| run.len()).collect::<Vec<_>>();
        // Short texts: BACKLOG_BATCH at a time.
        assert_eq!(lengths(runs(&[10; 40], BACKLOG_RUN_TOKENS, |&tokens| tokens)), [16, 16, 8]);
        // Long texts: as many as the token budget holds; one over it alone.
        assert_eq!(lengths(runs(&[100, 100, 100, 300, 50], BACKLOG_RUN_TOKENS, |&tokens| tokens)), [2, 1, 1, 1]);
        // While searched, shorter runs.
        assert_eq!(lengths(runs(&[30; 5], BACKLOG_RUN_TOKENS_WHILE_SEARCHED, |&tokens| tokens)), [2, 2, 1]);
        assert!(runs(&[] as &[usize], BACKLOG_RUN_TOKENS, |&tokens| tokens).is_empty());
    }

    #[test]
    fn experiences_queued_again_by_a_reindex_are_backlog_but_not_missing() {
        let mut backlog = Backlog::default();
        backlog.push("a");
        for id in ["b", "c", "d"] {
            assert!(backlog.push_refresh(id));
        }
        assert!(!backlog.push_refresh("a"), "already waiting without a vector");
        assert_eq!((backlog.len(), backlog.missing()), (4, 1));

        // In flight, the refreshed ones still have their vectors.
        let taken = backlog.take(3);
        assert_eq!(taken, ["a", "b", "c"]);
        backlog.in_flight.clone_from(&taken);
        assert_eq!((backlog.len(), backlog.missing()), (4, 1));

        // A deleted one leaves both counts.
        backlog.remove("d");
        assert_eq!((backlog.len(), backlog.missing()), (3, 1));
    }

    #[test]
    fn submits_committed_without_their_vector_are_embedded_before_an_import() {
        let mut backlog = Backlog::default();
        for id in ["import 1", "import 2", "import 3", "submit"] {
            backlog.push(id);
        }
        backlog.push_fresh("submit");
        backlog.push_fresh("never queued");
        assert_eq!(backlog.fresh_len(), 1);
        assert_eq!(backlog.take(2), ["submit", "import 1"]);
        // The submit's place in the import's queue is skipped.
        assert_eq!(backlog.take(16), ["import 2", "import 3"]);
        assert_eq!((backlog.len(), backlog.fresh_len()), (0, 0));
    }
}
