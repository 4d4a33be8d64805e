//! The in-memory vector index: every vector in one contiguous array, scanned per query with a dot
//! product written so the compiler vectorizes it, in f32 or in int8 with a scale per vector.
//! Exact (f32) or nearly so (int8), with nothing to train or rebuild.
//!
//! A scan is bound by memory bandwidth once the vectors outgrow the caches: 100k int8 vectors of
//! 384 dimensions are 38 MB, about 4 ms per query on the 2-core machine measured (~10 GB/s).
//! So a large int8 index first ranks every vector by the Hamming distance of its sign bits
//! (48 bytes a vector, [`PREFILTER_MIN_VECTORS`]) and computes int8 scores only for the nearest
//! [`PREFILTER_PER_HIT`] per hit asked (at least [`PREFILTER_MIN_CANDIDATES`]).
//!
//! Like the BM25 index, this is derived data: the daemon fills it from the vectors stored in
//! SQLite ([`to_bytes`] / [`from_bytes`]) and can always rebuild it from there.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;

use crate::{Error, Result};

/// How the index keeps its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// Exact: 4 bytes per dimension, scores are cosine similarities to float rounding.
    F32,
    /// One byte per dimension plus one scale per vector: a quarter of the memory and of the
    /// bytes each query scans; scores are within about 0.01 of the exact ones.
    Int8,
}

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

/// One result of a search: the id given to [`VectorIndex::upsert`] and the cosine similarity.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit<K = String> {
    pub id: K,
    pub score: f32,
}

/// Vectors by id, searched by cosine similarity. Vectors are normalised on the way in, so the
/// similarity is a dot product. Slots are dense: removing a vector moves the last one into its
/// place, so the arrays never have holes to skip.
///
/// Ids are any hashable value; a small `Copy` one keeps the per-vector overhead low (the
/// daemon's 16-byte experience keys: ~50 bytes a vector for the id and its map entry, where
/// string ids cost ~100 more).
#[derive(Debug, Clone)]
pub struct VectorIndex<K = String> {
    dimensions: usize,
    precision: Precision,
    ids: Vec<K>,
    slot_by_id: HashMap<K, u32>,
    /// `Precision::F32`: slot `i` is `floats[i * dimensions..(i + 1) * dimensions]`.
    floats: Vec<f32>,
    /// `Precision::Int8`: slot `i` is `codes[i * dimensions..]` times `scales[i]`, and its sign
    /// bits (bit set: component > 0) are `signs[i * sign_words..(i + 1) * sign_words]`.
    codes: Vec<i8>,
    scales: Vec<f32>,
    signs: Vec<u64>,
    sign_words: usize,
}

impl<K> VectorIndex<K> {
    /// An empty index of vectors with `dimensions` values each.
    pub fn new(dimensions: usize, precision: Precision) -> VectorIndex<K> {
        VectorIndex {
            dimensions,
            precision,
            ids: Vec::new(),
            slot_by_id: HashMap::new(),
            floats: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
            signs: Vec::new(),
            sign_words: dimensions.div_ceil(64),
        }
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The bytes the vectors themselves take (ids and the map not counted).
    pub fn vector_bytes(&self) -> usize {
        self.floats.len() * 4 + self.codes.len() + self.scales.len() * 4 + self.signs.len() * 8
    }
}

impl<K: Clone + Eq + Hash> VectorIndex<K> {
    pub fn contains<Q: Hash + Eq + ?Sized>(&self, id: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.slot_by_id.contains_key(id)
    }

    /// Adds the vector under `id`, or replaces the one stored under it. The vector is normalised
    /// first; a zero vector is stored as it is and matches nothing.
    pub fn upsert(&mut self, id: impl Into<K>, vector: &[f32]) -> Result<()> {
        self.check_dimensions(vector)?;
        let id = id.into();
        let vector = normalize(vector);
        let slot = match self.slot_by_id.get(&id) {
            Some(&slot) => slot as usize,
            None => {
                let slot = self.ids.len();
                self.ids.push(id.clone());
                self.slot_by_id.insert(id, slot as u32);
                match self.precision {
                    Precision::F32 => self.floats.resize(self.floats.len() + self.dimensions, 0.0),
                    Precision::Int8 => {
                        self.codes.resize(self.codes.len() + self.dimensions, 0);
                        self.scales.push(0.0);
                        self.signs.resize(self.signs.len() + self.sign_words, 0);
                    }
                }
                slot
            }
        };
        let range = slot * self.dimensions..(slot + 1) * self.dimensions;
        match self.precision {
            Precision::F32 => self.floats[range].copy_from_slice(&vector),
            Precision::Int8 => {
                self.scales[slot] = quantize(&vector, &mut self.codes[range]);
                let words = slot * self.sign_words..(slot + 1) * self.sign_words;
                sign_bits(&vector, &mut self.signs[words]);
            }
        }
        Ok(())
    }

    /// Removes the vector stored under `id`; false when there was none.
    pub fn remove<Q: Hash + Eq + ?Sized>(&mut self, id: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        let Some(slot) = self.slot_by_id.remove(id) else {
            return false;
        };
        let slot = slot as usize;
        let last = self.ids.len() - 1;
        let dims = self.dimensions;
        if slot != last {
            match self.precision {
                Precision::F32 => self.floats.copy_within(last * dims..(last + 1) * dims, slot * dims),
                Precision::Int8 => {
                    self.codes.copy_within(last * dims..(last + 1) * dims, slot * dims);
                    self.scales[slot] = self.scales[last];
                    let words = self.sign_words;
                    self.signs.copy_within(last * words..(last + 1) * words, slot * words);
                }
            }
            self.slot_by_id.insert(self.ids[last].clone(), slot as u32);
        }
        self.ids.swap_remove(slot);
        self.floats.truncate(self.ids.len() * dims * usize::from(self.precision == Precision::F32));
        self.codes.truncate(self.ids.len() * dims * usize::from(self.precision == Precision::Int8));
        self.scales.truncate(if self.precision == Precision::Int8 { self.ids.len() } else { 0 });
        self.signs.truncate(if self.precision == Precision::Int8 { self.ids.len() * self.sign_words } else { 0 });
        true
    }

    pub fn clear(&mut self) {
        self.ids.clear();
        self.slot_by_id.clear();
        self.floats.clear();
        self.codes.clear();
        self.scales.clear();
        self.signs.clear();
    }

    /// The stored vector (dequantized for int8), normalised.
    pub fn get<Q: Hash + Eq + ?Sized>(&self, id: &Q) -> Option<Vec<f32>>
    where
        K: Borrow<Q>,
    {
        let slot = *self.slot_by_id.get(id)? as usize;
        let range = slot * self.dimensions..(slot + 1) * self.dimensions;
        Some(match self.precision {
            Precision::F32 => self.floats[range].to_vec(),
            Precision::Int8 => self.codes[range].iter().map(|&code| f32::from(code) * self.scales[slot]).collect(),
        })
    }

    /// The `k` vectors most similar to `query`, best first (ties: earlier slot first).
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit<K>>> {
        self.search_filtered(query, k, |_| true)
    }

    /// Like [`VectorIndex::search`], keeping only ids `accept` allows. `accept` is asked only
    /// about vectors that would enter the current top `k`, so it may cost a lookup.
    pub fn search_filtered(&self, query: &[f32], k: usize, mut accept: impl FnMut(&K) -> bool) -> Result<Vec<Hit<K>>> {
        self.check_dimensions(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let query = normalize(query);
        let n_candidates = k.saturating_mul(PREFILTER_PER_HIT).max(PREFILTER_MIN_CANDIDATES);
        if self.precision == Precision::Int8 && self.len() >= PREFILTER_MIN_VECTORS && n_candidates < self.len() / 4 {
            let hits = self.search_prefiltered(&query, k, n_candidates, &mut accept);
            // Filters that reject most of the nearest vectors leave too few: scan them all.
            if hits.len() == k {
                return Ok(hits);
            }
        }
        let mut scores = vec![0.0f32; self.len()];
        match self.precision {
            Precision::F32 => kernels::scores_f32(&self.floats, &query, &mut scores),
            Precision::Int8 => {
                let mut query_codes = vec![0i8; self.dimensions];
                let query_scale = quantize(&query, &mut query_codes);
                kernels::scores_i8(&self.codes, &query_codes, &mut scores);
                for (score, &scale) in scores.iter_mut().zip(&self.scales) {
                    *score *= scale * query_scale;
                }
            }
        }
        let mut best = TopK::new(k);
        for (slot, &score) in scores.iter().enumerate() {
            best.offer(slot, score, |slot| accept(&self.ids[slot]));
        }
        Ok(self.hits(best))
    }

    /// The int8 search among the `n_candidates` vectors nearest to `query` by the Hamming
    /// distance of their sign bits (all of those at the cut-off distance included).
    fn search_prefiltered(
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

    fn hits(&self, best: TopK) -> Vec<Hit<K>> {
        best.into_sorted().into_iter().map(|hit| Hit { id: self.ids[hit.slot].clone(), score: hit.score }).collect()
    }

    fn check_dimensions(&self, vector: &[f32]) -> Result<()> {
        if vector.len() != self.dimensions {
            return Err(Error::Dimensions { expected: self.dimensions, actual: vector.len() });
        }
        if !vector.iter().all(|value| value.is_finite()) {
            return Err(Error::NonFinite);
        }
        Ok(())
    }
}

/// An entry of the top-k heap, ordered so that the heap's top is the worst entry: the lowest
/// score, and among equal scores the latest slot.
#[derive(Debug)]
struct Candidate {
    score: f32,
    slot: usize,
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
struct TopK {
    heap: BinaryHeap<Candidate>,
    k: usize,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK { heap: BinaryHeap::with_capacity(k + 1), k }
    }

    /// Keeps `slot` if it is among the best so far and `accept`s it; `accept` is asked only
    /// then, so it may cost a lookup.
    fn offer(&mut self, slot: usize, score: f32, accept: impl FnOnce(usize) -> bool) {
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
    fn into_sorted(self) -> Vec<Candidate> {
        let mut hits = self.heap.into_vec();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
        hits
    }
}

/// Sets bit `i` of `words` when component `i` of `vector` is positive.
fn sign_bits(vector: &[f32], words: &mut [u64]) {
    words.fill(0);
    for (component_idx, &value) in vector.iter().enumerate() {
        if value > 0.0 {
            words[component_idx / 64] |= 1 << (component_idx % 64);
        }
    }
}

/// Writes `vector` into `codes` as `round(value / scale)` in -127..=127 and returns the scale
/// (the largest magnitude / 127; zero for a zero vector).
fn quantize(vector: &[f32], codes: &mut [i8]) -> f32 {
    let max = vector.iter().fold(0.0f32, |max, value| max.max(value.abs()));
    if max == 0.0 || !max.is_finite() {
        codes.fill(0);
        return 0.0;
    }
    let scale = max / 127.0;
    for (code, &value) in codes.iter_mut().zip(vector) {
        *code = (value / scale).round().clamp(-127.0, 127.0) as i8;
    }
    scale
}

/// The vector scaled to unit length (unchanged when it is zero).
#[must_use]
pub fn normalize(vector: &[f32]) -> Vec<f32> {
    let norm = dot(vector, vector).sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return vector.to_vec();
    }
    vector.iter().map(|value| value / norm).collect()
}

/// The dot product of two equally long vectors.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    kernels::dot_f32(a, b)
}

/// The vector as little-endian f32 bytes, for a SQLite BLOB.
pub fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|value| value.to_le_bytes()).collect()
}

/// The inverse of [`to_bytes`].
pub fn from_bytes(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::BlobLength { n_bytes: bytes.len() });
    }
    Ok(bytes.chunks_exact(4).map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])).collect())
}

/// The scanning loops. The portable ones are written in a shape LLVM vectorizes: fixed-size
/// chunks with one independent accumulator per lane (floating-point addition is not associative,
/// so a single running sum stays sequential unless the code asks for lanes). On x86-64 an AVX2
/// version is picked at run time, because the default target only guarantees SSE2: for int8 the
/// same portable loop compiled with AVX2 (LLVM turns it into `vpmaddwd`), for f32 explicit FMA
/// intrinsics, because the vectorizer's choices for the float loop and its final horizontal
/// sum changed with every small edit.
mod kernels {
    const LANES: usize = 16;
    const I8_LANES: usize = 32;

    #[inline(always)]
    fn dot_f32_portable(a: &[f32], b: &[f32]) -> f32 {
        let mut sums = [0.0f32; LANES];
        let chunks_a = a.chunks_exact(LANES);
        let chunks_b = b.chunks_exact(LANES);
        let tail: f32 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
        for (chunk_a, chunk_b) in chunks_a.zip(chunks_b) {
            for lane in 0..LANES {
                sums[lane] += chunk_a[lane] * chunk_b[lane];
            }
        }
        sums.iter().sum::<f32>() + tail
    }

    #[inline(always)]
    fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
        // i8 * i8 fits in i16 and a pair of such products fits in i32: the pattern of pmaddwd.
        let mut sums = [0i32; I8_LANES];
        let chunks_a = a.chunks_exact(I8_LANES);
        let chunks_b = b.chunks_exact(I8_LANES);
        let tail: i32 =
            chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        for (chunk_a, chunk_b) in chunks_a.zip(chunks_b) {
            for lane in 0..I8_LANES {
                sums[lane] += i32::from(i16::from(chunk_a[lane]) * i16::from(chunk_b[lane]));
            }
        }
        sums.iter().sum::<i32>() + tail
    }

    #[inline(always)]
    fn scores_f32_portable(vectors: &[f32], query: &[f32], scores: &mut [f32]) {
        for (score, vector) in scores.iter_mut().zip(vectors.chunks_exact(query.len())) {
            *score = dot_f32_portable(vector, query);
        }
    }

    #[inline(always)]
    fn scores_i8_portable(codes: &[i8], query: &[i8], scores: &mut [f32]) {
        for (score, vector) in scores.iter_mut().zip(codes.chunks_exact(query.len())) {
            *score = dot_i8_portable(vector, query) as f32;
        }
    }

    #[cfg(target_arch = "x86_64")]
    mod avx2 {
        use std::arch::x86_64::{
            __m256, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_shuffle_ps, _mm256_add_ps,
            _mm256_castps256_ps128, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
        };

        /// Four registers of eight accumulators, so four fused multiply-adds are in flight.
        #[target_feature(enable = "avx2,fma")]
        pub(super) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
            let n = a.len().min(b.len());
            let n_chunks = n / 32;
            let mut acc: [__m256; 4] = [_mm256_setzero_ps(); 4];
            for chunk_idx in 0..n_chunks {
                for (register_idx, register) in acc.iter_mut().enumerate() {
                    let offset = chunk_idx * 32 + register_idx * 8;
                    // SAFETY: offset + 8 <= n_chunks * 32 <= n, within both slices.
                    let (x, y) =
                        unsafe { (_mm256_loadu_ps(a.as_ptr().add(offset)), _mm256_loadu_ps(b.as_ptr().add(offset))) };
                    *register = _mm256_fmadd_ps(x, y, *register);
                }
            }
            let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
            let quad = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps::<1>(sum));
            let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
            let single = _mm_add_ss(pair, _mm_shuffle_ps::<1>(pair, pair));
            let tail: f32 = a[n_chunks * 32..n].iter().zip(&b[n_chunks * 32..n]).map(|(x, y)| x * y).sum();
            _mm_cvtss_f32(single) + tail
        }

        #[target_feature(enable = "avx2,fma")]
        pub(super) fn scores_f32(vectors: &[f32], query: &[f32], scores: &mut [f32]) {
            for (score, vector) in scores.iter_mut().zip(vectors.chunks_exact(query.len())) {
                *score = dot_f32(vector, query);
            }
        }

        #[target_feature(enable = "avx2")]
        pub(super) fn scores_i8(codes: &[i8], query: &[i8], scores: &mut [f32]) {
            super::scores_i8_portable(codes, query, scores)
        }

        #[target_feature(enable = "avx2")]
        pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
            super::dot_i8_portable(a, b)
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn has_avx2_fma() -> bool {
        // std caches the CPUID answer; this is a load and a test.
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }

    pub(super) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU was just checked to support AVX2 and FMA, the only requirements.
            return unsafe { avx2::dot_f32(a, b) };
        }
        dot_f32_portable(a, b)
    }

    pub(super) fn scores_f32(vectors: &[f32], query: &[f32], scores: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU was just checked to support AVX2 and FMA, the only requirements.
            return unsafe { avx2::scores_f32(vectors, query, scores) };
        }
        scores_f32_portable(vectors, query, scores)
    }

    pub(super) fn scores_i8(codes: &[i8], query: &[i8], scores: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU was just checked to support AVX2 and FMA, the only requirements.
            return unsafe { avx2::scores_i8(codes, query, scores) };
        }
        scores_i8_portable(codes, query, scores)
    }

    pub(super) fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            // SAFETY: the CPU was just checked to support AVX2 and FMA, the only requirements.
            return unsafe { avx2::dot_i8(a, b) };
        }
        dot_i8_portable(a, b)
    }

    #[inline(always)]
    fn hamming_portable(signs: &[u64], query: &[u64], distances: &mut [u16]) {
        for (distance, words) in distances.iter_mut().zip(signs.chunks_exact(query.len())) {
            *distance = words.iter().zip(query).map(|(word, query_word)| (word ^ query_word).count_ones() as u16).sum();
        }
    }

    /// The Hamming distance of each vector's sign bits (`query.len()` words each) to `query`.
    pub(super) fn hamming(signs: &[u64], query: &[u64], distances: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU was just checked to support POPCNT, the only requirement.
            return unsafe { popcnt::hamming(signs, query, distances) };
        }
        hamming_portable(signs, query, distances)
    }

    /// The baseline x86-64 target has no POPCNT instruction: `count_ones` would be a dozen
    /// shifts and masks per word.
    #[cfg(target_arch = "x86_64")]
    mod popcnt {
        #[target_feature(enable = "popcnt")]
        pub(super) fn hamming(signs: &[u64], query: &[u64], distances: &mut [u16]) {
            super::hamming_portable(signs, query, distances)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (splitmix64), so the tests need no random crate and
    /// always see the same data.
    struct Random(u64);

    impl Random {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Roughly normal (sum of uniforms), which is what embedding components look like.
        fn component(&mut self) -> f32 {
            (0..4).map(|_| (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5).sum()
        }

        fn vector(&mut self, dimensions: usize) -> Vec<f32> {
            normalize(&(0..dimensions).map(|_| self.component()).collect::<Vec<_>>())
        }
    }

    fn naive_dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn index_of(
        precision: Precision,
        n_vectors: usize,
        dimensions: usize,
        random: &mut Random,
    ) -> (VectorIndex, Vec<Vec<f32>>) {
        let mut index = VectorIndex::<String>::new(dimensions, precision);
        let vectors: Vec<Vec<f32>> = (0..n_vectors).map(|_| random.vector(dimensions)).collect();
        for (vector_idx, vector) in vectors.iter().enumerate() {
            index.upsert(format!("v{vector_idx}"), vector).unwrap();
        }
        (index, vectors)
    }

    /// The ids of the `k` best by exact dot product, best first.
    fn brute_force(vectors: &[(String, Vec<f32>)], query: &[f32], k: usize) -> Vec<String> {
        let mut scored: Vec<(f32, &String)> =
            vectors.iter().map(|(id, vector)| (naive_dot(vector, query), id)).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().take(k).map(|(_, id)| id.clone()).collect()
    }

    fn ids(hits: &[Hit]) -> Vec<String> {
        hits.iter().map(|hit| hit.id.clone()).collect()
    }

    #[test]
    fn dot_product_matches_the_naive_sum_for_every_length() {
        let mut random = Random(1);
        for length in 0..100 {
            let a: Vec<f32> = (0..length).map(|_| random.component()).collect();
            let b: Vec<f32> = (0..length).map(|_| random.component()).collect();
            assert!((dot(&a, &b) - naive_dot(&a, &b)).abs() < 1e-4, "length {length}");
        }
    }

    #[test]
    fn f32_top_k_equals_brute_force() {
        let mut random = Random(2);
        let (index, vectors) = index_of(Precision::F32, 3000, 96, &mut random);
        let named: Vec<(String, Vec<f32>)> =
            vectors.into_iter().enumerate().map(|(i, v)| (format!("v{i}"), v)).collect();
        for _ in 0..50 {
            let query = random.vector(96);
            let hits = index.search(&query, 10).unwrap();
            assert_eq!(ids(&hits), brute_force(&named, &query, 10));
            for hit in &hits {
                let stored = &named.iter().find(|(id, _)| *id == hit.id).unwrap().1;
                assert!((hit.score - naive_dot(stored, &query)).abs() < 1e-5);
            }
            assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score));
        }
    }

    #[test]
    fn filtered_search_equals_brute_force_over_the_accepted_ids() {
        let mut random = Random(3);
        let (index, vectors) = index_of(Precision::F32, 2000, 64, &mut random);
        let accepted = |id: &String| id.trim_start_matches('v').parse::<usize>().unwrap() % 3 == 0;
        let named: Vec<(String, Vec<f32>)> =
            vectors.into_iter().enumerate().map(|(i, v)| (format!("v{i}"), v)).filter(|(id, _)| accepted(id)).collect();
        for _ in 0..20 {
            let query = random.vector(64);
            let hits = index.search_filtered(&query, 7, accepted).unwrap();
            assert_eq!(ids(&hits), brute_force(&named, &query, 7));
        }
        let none = index.search_filtered(&random.vector(64), 5, |_| false).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn k_larger_than_the_index_returns_everything_and_k_zero_nothing() {
        let mut random = Random(4);
        let (index, _) = index_of(Precision::F32, 5, 16, &mut random);
        assert_eq!(index.search(&random.vector(16), 50).unwrap().len(), 5);
        assert!(index.search(&random.vector(16), 0).unwrap().is_empty());
        assert!(VectorIndex::<String>::new(16, Precision::Int8).search(&random.vector(16), 3).unwrap().is_empty());
    }

    #[test]
    fn remove_and_upsert_keep_every_other_vector_findable() {
        for precision in [Precision::F32, Precision::Int8] {
            let mut random = Random(5);
            let (mut index, vectors) = index_of(precision, 200, 32, &mut random);
            assert!(index.remove("v0"), "{precision:?}");
            assert!(index.remove("v57"));
            assert!(index.remove("v199"));
            assert!(!index.remove("v57"), "removing twice");
            assert!(!index.remove("never-added"));
            assert_eq!(index.len(), 197);
            for (vector_idx, vector) in vectors.iter().enumerate() {
                let id = format!("v{vector_idx}");
                if [0, 57, 199].contains(&vector_idx) {
                    assert!(!index.contains(&id));
                    assert!(index.get(&id).is_none());
                    continue;
                }
                // Each remaining vector is still its own best match, and stored unchanged.
                assert_eq!(index.search(vector, 1).unwrap()[0].id, id, "{precision:?}");
                let stored = index.get(&id).unwrap();
                assert!(naive_dot(&stored, vector) > 0.99, "{precision:?} {id}");
            }
            // Replacing a vector moves the id to the new place.
            let replacement = random.vector(32);
            index.upsert("v10", &replacement).unwrap();
            assert_eq!(index.len(), 197);
            assert_eq!(index.search(&replacement, 1).unwrap()[0].id, "v10");
            assert_ne!(index.search(&vectors[10], 1).unwrap()[0].id, "v10");
            // Removing everything leaves an empty, usable index.
            for vector_idx in 0..200 {
                index.remove(&format!("v{vector_idx}"));
            }
            assert!(index.is_empty());
            assert_eq!(index.vector_bytes(), 0);
            index.upsert("again", &replacement).unwrap();
            assert_eq!(ids(&index.search(&replacement, 3).unwrap()), ["again"]);
        }
    }

    #[test]
    fn int8_top_1_agrees_with_f32_on_random_data() {
        let mut random = Random(6);
        let dimensions = 384;
        let (exact, vectors) = index_of(Precision::F32, 2000, dimensions, &mut random);
        let mut quantized = VectorIndex::<String>::new(dimensions, Precision::Int8);
        for (vector_idx, vector) in vectors.iter().enumerate() {
            quantized.upsert(format!("v{vector_idx}"), vector).unwrap();
        }
        assert_eq!(quantized.vector_bytes(), 2000 * (dimensions + 4 + dimensions / 8));
        let n_queries = 120;
        let mut n_agree = 0;
        for _ in 0..n_queries {
            let query = random.vector(dimensions);
            let exact_hits = exact.search(&query, 10).unwrap();
            let quantized_hits = quantized.search(&query, 10).unwrap();
            n_agree += usize::from(exact_hits[0].id == quantized_hits[0].id);
            // Approximate scores stay close to the exact ones.
            for hit in &quantized_hits {
                let stored = &vectors[hit.id[1..].parse::<usize>().unwrap()];
                assert!(
                    (hit.score - naive_dot(stored, &query)).abs() < 0.01,
                    "{} vs {}",
                    hit.score,
                    naive_dot(stored, &query)
                );
            }
        }
        let agreement = n_agree as f32 / n_queries as f32;
        assert!(agreement >= 0.95, "int8 top-1 agreed with f32 on only {agreement:.3} of the queries");
    }

    /// `n` vectors in clusters around `n / 50` centres, as embeddings of related texts are.
    fn clustered(n: usize, dimensions: usize, random: &mut Random) -> Vec<Vec<f32>> {
        let centres: Vec<Vec<f32>> = (0..n / 50).map(|_| random.vector(dimensions)).collect();
        (0..n)
            .map(|vector_idx| {
                let centre = &centres[vector_idx % centres.len()];
                let noise = random.vector(dimensions);
                normalize(&centre.iter().zip(&noise).map(|(c, e)| c + 0.6 * e).collect::<Vec<_>>())
            })
            .collect()
    }

    #[test]
    fn a_large_int8_index_finds_nearly_the_exact_top_hits_through_the_sign_prefilter() {
        let mut random = Random(8);
        let dimensions = 128;
        let n = PREFILTER_MIN_VECTORS + 5_000;
        let vectors = clustered(n, dimensions, &mut random);
        let mut index = VectorIndex::<String>::new(dimensions, Precision::Int8);
        for (vector_idx, vector) in vectors.iter().enumerate() {
            index.upsert(format!("v{vector_idx}"), vector).unwrap();
        }
        let named: Vec<(String, Vec<f32>)> =
            vectors.iter().enumerate().map(|(i, v)| (format!("v{i}"), v.clone())).collect();
        let (n_queries, k) = (30, 10);
        let mut n_found = 0;
        for query_idx in 0..n_queries {
            // A query near a stored vector, as a paraphrase is near its experience.
            let source = &vectors[query_idx * 811 % n];
            let noise = random.vector(dimensions);
            let query = normalize(&source.iter().zip(&noise).map(|(s, e)| s + 0.3 * e).collect::<Vec<_>>());
            // The prefilter on its own, not rescued by the full scan `search` falls back to.
            let prefiltered = index.search_prefiltered(&query, k, PREFILTER_MIN_CANDIDATES, &mut |_| true);
            assert_eq!(ids(&prefiltered), ids(&index.search(&query, k).unwrap()));
            let hits = ids(&prefiltered);
            assert_eq!(hits.len(), k);
            let exact = brute_force(&named, &query, k);
            assert_eq!(hits[0], exact[0], "query {query_idx}: the best match must survive the prefilter");
            n_found += hits.iter().filter(|id| exact.contains(id)).count();
        }
        let recall = n_found as f64 / (n_queries * k) as f64;
        assert!(recall >= 0.9, "recall@{k} through the prefilter: {recall:.3}");
    }

    #[test]
    fn a_filter_that_rejects_the_nearest_vectors_still_gets_its_top_hits() {
        let mut random = Random(9);
        let dimensions = 64;
        let vectors = clustered(PREFILTER_MIN_VECTORS + 1_000, dimensions, &mut random);
        let mut index = VectorIndex::<String>::new(dimensions, Precision::Int8);
        for (vector_idx, vector) in vectors.iter().enumerate() {
            index.upsert(format!("v{vector_idx}"), vector).unwrap();
        }
        // One vector in a thousand passes: too few among the prefilter's candidates.
        let accepted = |id: &String| id.trim_start_matches('v').parse::<usize>().unwrap() % 1_000 == 0;
        let named: Vec<(String, Vec<f32>)> =
            vectors.into_iter().enumerate().map(|(i, v)| (format!("v{i}"), v)).filter(|(id, _)| accepted(id)).collect();
        let exact_score =
            |id: &str, query: &[f32]| naive_dot(&named.iter().find(|(named_id, _)| named_id == id).unwrap().1, query);
        for _ in 0..5 {
            let query = random.vector(dimensions);
            let hits = index.search_filtered(&query, 5, accepted).unwrap();
            assert_eq!(hits.len(), 5, "the prefilter's few accepted candidates must not be all");
            // The exact top 5, up to int8 rounding among near-ties.
            let exact = brute_force(&named, &query, 5);
            let fifth = exact_score(&exact[4], &query);
            for hit in &hits {
                assert!(accepted(&hit.id));
                assert!(exact_score(&hit.id, &query) >= fifth - 0.02, "{} is not among the best", hit.id);
            }
            assert_eq!(hits[0].id, exact[0]);
        }
    }

    #[test]
    fn vectors_are_normalised_on_the_way_in() {
        let mut index = VectorIndex::<String>::new(3, Precision::F32);
        index.upsert("long", &[3.0, 0.0, 4.0]).unwrap();
        index.upsert("zero", &[0.0, 0.0, 0.0]).unwrap();
        let hits = index.search(&[0.0, 0.0, 10.0], 2).unwrap();
        assert_eq!(hits[0], Hit { id: "long".into(), score: 0.8 });
        assert_eq!(hits[1], Hit { id: "zero".into(), score: 0.0 });
        assert_eq!(index.get("long").unwrap(), [0.6, 0.0, 0.8]);
    }

    #[test]
    fn vectors_of_the_wrong_length_or_not_finite_are_refused() {
        let mut index = VectorIndex::<String>::new(4, Precision::Int8);
        let error = index.upsert("a", &[1.0, 2.0]).unwrap_err();
        assert_eq!(error.to_string(), "expected a vector of 4 dimensions, got 2");
        assert!(index.search(&[1.0; 5], 1).is_err());
        assert!(matches!(index.upsert("b", &[1.0, f32::NAN, 0.0, 0.0]), Err(Error::NonFinite)));
        assert!(matches!(index.search(&[f32::INFINITY, 0.0, 0.0, 0.0], 1), Err(Error::NonFinite)));
        assert!(index.is_empty());
    }

    #[test]
    fn blobs_round_trip_as_little_endian_f32() {
        let vector = [1.0f32, -0.5, 0.0, f32::MIN_POSITIVE, 123.456];
        let bytes = to_bytes(&vector);
        assert_eq!(bytes.len(), 20);
        assert_eq!(&bytes[..8], &[0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xbf]);
        assert_eq!(from_bytes(&bytes).unwrap(), vector);
        assert!(from_bytes(&[]).unwrap().is_empty());
        let error = from_bytes(&bytes[..7]).unwrap_err();
        assert_eq!(error.to_string(), "a vector blob of 7 bytes is not a whole number of little-endian f32 values");
    }
}
