//! The best `k` hits of a scan, kept in a min-heap whose top is the score to beat.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An entry of the top-k heap, ordered so that the heap's top is the worst entry: the lowest
/// score, and among equal scores the latest slot.
#[derive(Debug)]
pub(super) struct Candidate {
    pub(super) score: f32,
    pub(super) slot: usize,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then(self.slot.cmp(&other.slot))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

/// The best `k` slots offered so far: a min-heap whose top is the score to beat.
pub(super) struct TopK {
    heap: BinaryHeap<Candidate>,
    k: usize,
}

impl TopK {
    pub(super) fn new(k: usize) -> TopK {
        TopK { heap: BinaryHeap::with_capacity(k + 1), k }
    }

    /// Keeps `slot` if it is among the best so far and `accept`s it; `accept` is asked only
    /// then, so it may cost a lookup.
    pub(super) fn offer(&mut self, slot: usize, score: f32, accept: impl FnOnce(usize) -> bool) {
        if self.heap.len() == self.k && score <= self.heap.peek().map_or(f32::NEG_INFINITY, |worst| worst.score) {
            return;
        }
        if !accept(slot) {
            return;
        }
        self.heap.push(Candidate { score, slot });
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// Best first; equal scores by slot.
    pub(super) fn into_sorted(self) -> Vec<Candidate> {
        let mut hits = self.heap.into_vec();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        hits
    }
}
