//! The scanning loops. The portable ones are written in a shape LLVM vectorizes: fixed-size
//! chunks with one independent accumulator per lane (floating-point addition is not associative,
//! so a single running sum stays sequential unless the code asks for lanes). On x86-64 an AVX2
//! version is picked at run time, because the default target only guarantees SSE2: for int8 the
//! same portable loop compiled with AVX2 (LLVM turns it into `vpmaddwd`), for f32 explicit FMA
//! intrinsics, because the vectorizer's choices for the float loop and its final horizontal
//! sum changed with every small edit.

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
