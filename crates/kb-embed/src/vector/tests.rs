//! Unit tests of the vector index: searches against brute force, in f32 and int8, with and
//! without the sign-bit prefilter, and the blob format.

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
    let mut scored: Vec<(f32, &String)> = vectors.iter().map(|(id, vector)| (naive_dot(vector, query), id)).collect();
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
    let named: Vec<(String, Vec<f32>)> = vectors.into_iter().enumerate().map(|(i, v)| (format!("v{i}"), v)).collect();
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
