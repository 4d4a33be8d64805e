//! The sign-bit prefilter of a large int8 index: every vector ranked by the Hamming distance of
//! its sign bits to the query's, and int8 scores computed only for the nearest.

use std::hash::Hash;

use super::top_k::Candidate;
use super::{Hit, VectorIndex, kernels, quantize};

/// Int8 indexes at least this large are searched through the sign-bit prefilter; smaller ones
/// fit in the caches, where a full scan costs a few hundred microseconds.
pub const PREFILTER_MIN_VECTORS: usize = 20_000;
/// Vectors rescored per hit asked, and at least this many: the sign bits only approximate the
/// angle, so the true top hits are found among a generous share of the nearest by Hamming
/// distance.
pub const PREFILTER_PER_HIT: usize = 64;
pub const PREFILTER_MIN_CANDIDATES: usize = 2_000;
/// A filtered search trusts the prefilter only while at least this many accepted candidates per
/// hit are expected; otherwise it scans every vector.
pub const PREFILTER_MIN_PER_HIT: usize = 16;

impl<K: Clone + Eq + Hash> VectorIndex<K> {
    /// The int8 search among the `n_candidates` vectors nearest to `query` by the Hamming
    /// distance of their sign bits (all of those at the cut-off distance included).
    pub(super) fn search_prefiltered(
        &self,
        query: &[f32],
        k: usize,
        n_candidates: usize,
        accept: &mut impl FnMut(&K) -> bool,
    ) -> Vec<Hit<K>> {
        let mut query_signs = vec![0u64; self.sign_words];
        sign_bits(query, &mut query_signs);
        let mut distances = vec![0u16; self.len()];
        kernels::hamming(&self.signs, &query_signs, &mut distances);
        // A histogram of distances gives the cut-off in one pass, without sorting.
        let mut histogram = vec![0usize; self.sign_words * 64 + 1];
        for &distance in &distances {
            histogram[usize::from(distance)] += 1;
        }
        let mut cutoff = 0;
        let mut n_within = histogram[0];
        while n_within < n_candidates && cutoff + 1 < histogram.len() {
            cutoff += 1;
            n_within += histogram[cutoff];
        }
        let mut query_codes = vec![0i8; self.dimensions];
        let query_scale = quantize(query, &mut query_codes);
        let mut scored: Vec<Candidate> = distances
            .iter()
            .enumerate()
            .filter(|&(_, &distance)| usize::from(distance) <= cutoff)
            .map(|(slot, _)| {
                let codes = &self.codes[slot * self.dimensions..(slot + 1) * self.dimensions];
                let score = kernels::dot_i8(codes, &query_codes) as f32 * self.scales[slot] * query_scale;
                Candidate { score, slot }
            })
            .collect();
        // `Candidate`'s order is reversed (the heap's top is the worst): ascending is best first.
        scored.sort_unstable();
        // With a filter, only the candidates it accepts count: when the k-th accepted one comes
        // later than `n_candidates / PREFILTER_MIN_PER_HIT`, fewer than that many accepted
        // candidates per hit are expected, too few to trust, and the caller scans everything.
        let accept_within = n_candidates / PREFILTER_MIN_PER_HIT;
        let mut hits = Vec::with_capacity(k);
        for (position, candidate) in scored.iter().enumerate() {
            if hits.len() == k || position >= accept_within {
                break;
            }
            if accept(&self.ids[candidate.slot]) {
                hits.push(Hit { id: self.ids[candidate.slot].clone(), score: candidate.score });
            }
        }
        hits
    }
}

/// Sets bit `i` of `words` when component `i` of `vector` is positive.
pub(super) fn sign_bits(vector: &[f32], words: &mut [u64]) {
    words.fill(0);
    for (component_idx, &value) in vector.iter().enumerate() {
        if value > 0.0 {
            words[component_idx / 64] |= 1 << (component_idx % 64);
        }
    }
}
