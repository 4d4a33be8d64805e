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
//!
//! The pieces below this module: `kernels` holds the scanning loops (portable, and AVX2 or
//! POPCNT picked at run time), `prefilter` the sign-bit search of large int8 indexes, and
//! `top_k` the heap that keeps the best hits of a scan.

mod kernels;
mod prefilter;
#[cfg(test)]
mod tests;
mod top_k;

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

use prefilter::{PREFILTER_MIN_CANDIDATES, PREFILTER_MIN_VECTORS, PREFILTER_PER_HIT, sign_bits};
use top_k::TopK;

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
