//! Unit tests of the fusion: keyword scores, the hybrid ranking and its weights, exact-term pinning.

use super::*;

fn ids<T: Clone>(fused: &[(T, f32)]) -> Vec<T> {
    fused.iter().map(|(id, _)| id.clone()).collect()
}

#[test]
fn rrf_rewards_agreement_between_rankings() {
    let bm25 = ["a", "b", "c"];
    let vectors = ["c", "d", "a"];
    let fused = reciprocal_rank_fusion(RRF_K, &[(1.0, &bm25[..]), (1.0, &vectors[..])]);
    // a: 1/61 + 1/63, c: 1/63 + 1/61 (equal, a seen first), then b: 1/62, d: 1/62.
    assert_eq!(ids(&fused), ["a", "c", "b", "d"]);
    assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-7);
    assert_eq!(fused[0].1, fused[1].1);
}

#[test]
fn rrf_weights_scale_a_rankings_say() {
    let bm25 = ["a", "b"];
    let vectors = ["b", "a"];
    let vectors_count_more = reciprocal_rank_fusion(RRF_K, &[(1.0, &bm25[..]), (2.0, &vectors[..])]);
    assert_eq!(ids(&vectors_count_more), ["b", "a"]);
    let vectors_ignored = reciprocal_rank_fusion(RRF_K, &[(1.0, &bm25[..]), (0.0, &vectors[..])]);
    assert_eq!(ids(&vectors_ignored), ["a", "b"]);
}

#[test]
fn rrf_of_nothing_is_empty() {
    let empty: [&str; 0] = [];
    assert!(reciprocal_rank_fusion(RRF_K, &[(1.0, &empty[..])]).is_empty());
    assert!(reciprocal_rank_fusion::<&str>(RRF_K, &[]).is_empty());
}

#[test]
fn min_max_maps_best_to_one_and_worst_to_zero() {
    assert_eq!(min_max_normalize(&[("a", 12.0), ("b", 7.0), ("c", 2.0)]), [("a", 1.0), ("b", 0.5), ("c", 0.0)]);
    assert_eq!(min_max_normalize(&[("a", 3.0), ("b", 3.0)]), [("a", 1.0), ("b", 1.0)]);
    assert_eq!(min_max_normalize(&[("only", -0.2)]), [("only", 1.0)]);
    assert!(min_max_normalize::<&str>(&[]).is_empty());
}

#[test]
fn weighted_sum_combines_normalised_scores() {
    let bm25 = [("a", 10.0), ("b", 5.0), ("c", 0.0)];
    let vectors = [("c", 0.9), ("a", 0.5), ("d", 0.1)];
    let fused = weighted_score_fusion(&[(0.5, &bm25[..]), (0.5, &vectors[..])]);
    // a: 0.5*1 + 0.5*0.5 = 0.75; c: 0 + 0.5 = 0.5; b: 0.25; d: 0.
    assert_eq!(ids(&fused), ["a", "c", "b", "d"]);
    let scores: Vec<f32> = fused.iter().map(|(_, score)| *score).collect();
    assert_eq!(scores, [0.75, 0.5, 0.25, 0.0]);
}

#[test]
fn weighted_sum_with_one_list_keeps_its_order() {
    let bm25 = [("x", 3.0), ("y", 2.0), ("z", 1.0)];
    assert_eq!(ids(&weighted_score_fusion(&[(1.0, &bm25[..])])), ["x", "y", "z"]);
}

#[test]
fn han_characters_are_recognised() {
    for c in ['中', '文', '㐀', '龥', '𠀀', '﨎'] {
        assert!(is_han(c), "{c}");
    }
    for c in ['a', 'Z', '1', 'あ', 'カ', '한', '，', '。', ' '] {
        assert!(!is_han(c), "{c}");
    }
}

#[test]
fn han_share_counts_letters_and_digits_only() {
    let cases: [(&str, f32); 7] = [
        ("", 0.0),
        ("  ,.!  ", 0.0),
        ("make the tests stop watching", 0.0),
        ("如何停止监视模式", 1.0),
        ("如何停止监视模式？", 1.0),
        ("vitest 停止监视", 4.0 / 10.0),
        ("tsconfig.json 配置", 2.0 / 14.0),
    ];
    for (query, expected) in cases {
        assert!((han_share(query) - expected).abs() < 1e-6, "{query:?}: {} != {expected}", han_share(query));
    }
}

#[test]
fn queries_are_classified_by_their_han_share() {
    let cases = [
        ("vitest --run avoids watch mode", QueryScript::NonHan),
        ("", QueryScript::NonHan),
        ("tsconfig.json 配置", QueryScript::NonHan),
        ("vitest 停止监视", QueryScript::Mixed),
        ("怎么让 vitest 停止监视模式", QueryScript::Mixed),
        ("测试一直在监视模式下不退出", QueryScript::Han),
    ];
    for (query, expected) in cases {
        assert_eq!(QueryScript::detect(query), expected, "{query:?} (share {})", han_share(query));
    }
}

#[test]
fn identifiers_and_quoted_strings_are_exact_terms() {
    let texts = |query: &str| exact_terms(query).into_iter().map(|term| term.text).collect::<Vec<_>>();
    assert_eq!(texts("what fixed ERR_4242 in the build"), ["ERR_4242"]);
    assert_eq!(texts("tsconfig.json paths with vitest v2.3.1"), ["tsconfig.json", "v2.3.1"]);
    assert_eq!(texts("error \"cache: false\" after deploy"), ["cache: false"]);
    assert_eq!(texts("why does useEffect run twice"), ["useEffect"]);
    assert_eq!(texts("make the tests stop watching"), Vec::<String>::new());
    assert_eq!(texts("don't use the cache"), Vec::<String>::new());
    assert_eq!(texts("部署“灰度发布”失败"), ["灰度发布"]);
    assert_eq!(texts("部署失败"), Vec::<String>::new());
    // Words joined as prose joins them name nothing; with a digit, an underscore, a dot, a
    // camel hump or a third part they are code.
    assert_eq!(texts("a command-line tool for non-interactive import/export"), Vec::<String>::new());
    assert_eq!(texts("Tcl/Tk on user-space Single-cell RNA-seq"), Vec::<String>::new());
    assert_eq!(
        texts("KH-1042 x86-64 ssh.config usr/local/bin my-fooBar a-b_c"),
        ["KH-1042", "x86-64", "ssh.config", "usr/local/bin", "my-fooBar", "a-b_c"]
    );
    assert!(exact_terms("KH-ID-0042").iter().all(|term| term.ignore_case));
}

#[test]
fn a_chinese_query_hears_a_multilingual_models_vectors_only_where_bm25_is_undecided() {
    let query = "测试一直在监视模式下不退出";
    let vectors = [("v", 0.95), ("b", 0.90), ("a", 0.86)];
    // BM25 undecided (its best two nearly tie): the vectors' favourite comes up.
    let close = [("a", 12.0), ("b", 11.5), ("v", 11.0)];
    assert_eq!(ids(&fuse(SHIPPED, query, &close, &vectors)), ["v", "b", "a"]);
    assert_eq!(ids(&fuse(SHIPPED_FOR_ENGLISH_MODELS, query, &close, &vectors)), ["a", "b", "v"]);
    // BM25 decided (one document far ahead): it stays first, as with an English model.
    let decided = [("a", 30.0), ("b", 6.0), ("v", 5.0)];
    assert_eq!(ids(&fuse(SHIPPED, query, &decided, &vectors))[0], "a");
    assert_eq!(bm25_gap(&decided), 0.8);
    assert_eq!(bm25_gap(&[("a", 3.0)]), 1.0);
    assert_eq!(bm25_gap::<&str>(&[]), 0.0);
}

#[test]
fn holding_the_whole_query_breaks_near_ties_but_does_not_overturn_a_clear_lead() {
    let coverage = |id: &&str| match *id {
        "all" => 1.0,
        "half" => 0.5,
        _ => 0.0,
    };
    // Close scores: the candidate with every word of the query comes up.
    let close = vec![("half", 1.00), ("all", 0.95), ("none", 0.90)];
    assert_eq!(ids(&with_coverage(close, COVERAGE_WEIGHT, coverage)), ["all", "half", "none"]);
    // A clear lead stays: coverage is a tie-breaker, not a second ranking.
    let clear = vec![("none", 1.60), ("all", 0.95)];
    assert_eq!(ids(&with_coverage(clear, COVERAGE_WEIGHT, coverage)), ["none", "all"]);
    // Equal coverage keeps the fused order; scores only ever rise, by at most the weight.
    let tied = vec![("b", 0.5), ("a", 0.5)];
    let kept = with_coverage(tied, COVERAGE_WEIGHT, |_: &&str| 3.0);
    assert_eq!(ids(&kept), ["b", "a"]);
    assert!(kept.iter().all(|(_, score)| (*score - (0.5 + COVERAGE_WEIGHT)).abs() < 1e-6));
    // The shipped hybrid applies it.
    let bm25 = [("half", 20.0), ("all", 18.0)];
    let vectors = [("half", 0.80), ("all", 0.79), ("other", 0.50)];
    let fused = hybrid("all-minilm-l6-v2-onnx@1", "stop vitest watch mode", 1.0, &bm25, &vectors, coverage);
    assert_eq!(ids(&fused), ["all", "half", "other"]);
    let without = fuse(SHIPPED_FOR_ENGLISH_MODELS, "stop vitest watch mode", &bm25, &vectors);
    assert_eq!(ids(&without), ["half", "all", "other"]);
}

#[test]
fn the_vectors_weigh_less_in_a_store_the_model_sees_only_part_of() {
    // BM25 prefers "words" a little, the vectors "meaning" by far.
    let bm25 = [("words", 10.0), ("meaning", 8.0), ("neither", 1.0)];
    let vectors = [("meaning", 0.9), ("words", 0.5), ("neither", 0.4)];
    let no_coverage = |_: &&str| 0.0;
    let (model, query) = ("multilingual-e5-small-onnx@1+int8", "roll back the release");
    let fused = |share: f32| ids(&hybrid(model, query, share, &bm25, &vectors, no_coverage));
    assert_eq!(fused(1.0), ["meaning", "words", "neither"]);
    // The model sees a quarter of the store's texts: BM25 leads; nothing (or less): BM25 alone.
    assert_eq!(fused(0.25), ["words", "meaning", "neither"]);
    assert!([0.0, -1.0].iter().all(|&share| fused(share) == ids(&keyword(&bm25, no_coverage))));
    // More than all, or not a number, counts as all.
    assert!([7.0, f32::NAN].iter().all(|&share| fused(share) == fused(1.0)));
}

#[test]
fn the_hybrid_ranking_does_not_depend_on_the_models_cosine_scale_and_cuts_nothing() {
    let bm25 = [("words", 14.0), ("both", 9.0), ("weak", 1.0)];
    let no_coverage = |_: &&str| 0.0;
    // The same neighbours as one model (cosines near 0.3) and as another, or the same model
    // in int8 (near 0.85, squeezed): the same ranking, and no candidate dropped however low.
    let low = [("meaning", 0.41), ("both", 0.35), ("weak", 0.12)];
    let high: Vec<(&str, f32)> = low.iter().map(|(id, cosine)| (*id, 0.8 + cosine * 0.2)).collect();
    let model = "multilingual-e5-small-onnx@1+int8";
    let query = "stop the watcher";
    let ranked_low = hybrid(model, query, 1.0, &bm25, &low, no_coverage);
    let ranked_high = hybrid(model, query, 1.0, &bm25, &high, no_coverage);
    assert_eq!(ids(&ranked_low), ids(&ranked_high));
    assert_eq!(ids(&ranked_low), ["both", "meaning", "words", "weak"]);
    // BM25's ranking and the vectors, each min-max normalised, weighted.
    let both = (1.0 - VECTOR_WEIGHT) * (keyword(&bm25, no_coverage)[1].1 - keyword(&bm25, no_coverage)[2].1)
        / (keyword(&bm25, no_coverage)[0].1 - keyword(&bm25, no_coverage)[2].1)
        + VECTOR_WEIGHT * (0.35 - 0.12) / (0.41 - 0.12);
    assert!((ranked_low[0].1 - both).abs() < 1e-5, "{ranked_low:?}");
    // An English model's vectors count less as the query gets more Han, none when all Han.
    assert_eq!(vector_weight("all-minilm-l6-v2-onnx@1", "测试一直在监视模式下不退出"), 0.0);
    assert_eq!(vector_weight("all-minilm-l6-v2-onnx@1", query), VECTOR_WEIGHT);
    assert_eq!(vector_weight(model, "测试一直在监视模式下不退出"), VECTOR_WEIGHT);
}

#[test]
fn bm25_alone_ranks_as_the_hybrid_does_without_vectors() {
    let bm25 = [("repeats", 12.0), ("all", 11.0), ("none", 2.0)];
    let coverage = |id: &&str| match *id {
        "all" => 1.0,
        "repeats" => 0.4,
        _ => 0.1,
    };
    let ranked = keyword(&bm25, coverage);
    assert_eq!(ids(&ranked), ["all", "repeats", "none"]);
    let (twelve, eleven) = ((12.0f32 / 22.0).powi(3), (11.0f32 / 21.0).powi(3));
    assert!((ranked[0].1 - (eleven + COVERAGE_WEIGHT)).abs() < 1e-6);
    assert!((ranked[1].1 - (twelve + 0.4 * COVERAGE_WEIGHT)).abs() < 1e-6);
    // A Chinese query with an English model leaves the vectors out: the hybrid is this.
    let vectors = [("none", 0.9), ("repeats", 0.2)];
    let query = "测试一直在监视模式下不退出";
    assert_eq!(hybrid("all-minilm-l6-v2-onnx@1", query, 1.0, &bm25, &vectors, coverage), ranked);
}

#[test]
fn multilingual_models_read_chinese_and_english_ones_do_not() {
    for id in [
        "multilingual-e5-small-onnx@5737e5c6166f1c20+int8",
        "intfloat/multilingual-e5-small@abc",
        "BAAI/bge-m3",
        "bge-small-zh-v1.5",
    ] {
        assert!(reads_chinese(id), "{id}");
        assert_eq!(shipped_for(id), SHIPPED);
    }
    for id in ["all-minilm-l6-v2-onnx@0123", "BAAI/bge-small-en-v1.5", "tiny-model@42", ""] {
        assert!(!reads_chinese(id), "{id}");
        assert_eq!(shipped_for(id), SHIPPED_FOR_ENGLISH_MODELS);
    }
}

#[test]
fn candidates_holding_the_exact_terms_come_first_in_their_order() {
    let terms = exact_terms("ERR_4242 retry");
    let texts = |id: &&str| {
        Some(
            match *id {
                "a" => "retry on ERR_4243",
                "b" => "fixed err_4242 by a retry",
                "c" => "ERR_4242",
                _ => "",
            }
            .to_owned(),
        )
    };
    let ranked = vec![("a", 0.9), ("b", 0.5), ("c", 0.4), ("d", 0.3)];
    assert_eq!(ids(&pin_exact(ranked.clone(), &terms, texts)), ["b", "c", "a", "d"]);
    assert_eq!(ids(&pin_exact(ranked.clone(), &[], texts)), ["a", "b", "c", "d"]);
}
