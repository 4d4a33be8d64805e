#!/usr/bin/env python3
"""Compares hybrid-ranking rules of different kinds on the candidates that `kb-bench quality
--dump-candidates DIR/<model>` wrote (BM25's raw scores and coverage, the vectors' cosines without
a floor, per question), against the shipped rule (kb_embed::fusion::hybrid: 0.4 x min-max(BM25
ranking) + 0.6 x min-max(cosine)) and the better single retriever, with 95% paired-bootstrap
intervals.

Rules (BM25's ranking is `fusion::keyword` throughout; an English model's vector weight is scaled
by the query's non-Han share, as shipped):
    mm-W     min-max of each list, summed at 1 - W and W (mm-0.6 is what the daemon ships)
    rrf-60   reciprocal-rank fusion, k = 60 (the textbook constant, not fitted), both at weight 1
    z-W      z-scores of each list (mean and standard deviation over its candidates; an absent
             candidate gets the list's lowest), summed at 1 - W and W
    lead     min-max, each list weighted by how far its best stands above its runner-up, in
             units of its own range (no constant)
    cov      min-max, BM25 weighted by the coverage of its best candidate (the idf-weighted share
             of the query that the store's best lexical match holds), the vectors by the rest
             (no constant): BM25 counts less when the words of the query are not in the store
    cov-drop the shipped weights, BM25's 0.4 times that coverage (BM25 only ever loses weight)

    tools/compare-fusions.py DUMPS/all-minilm-l6-v2-onnx DUMPS/multilingual-e5-small-onnx [...]

Prints, per set x model, R@5 / MRR@10 of each rule, its margin over the better single retriever
and over the shipped rule (points, [2.5%, 97.5%] of 2,000 paired resamples, fixed seed; "!" when
the whole interval is below the better single retriever); per rule, which pairs are below the
better single retriever and which below the shipped rule beyond their interval; then, leaving
each set out, the rule whose worst margin over the better single retriever on the other sets'
pairs is best.
"""

import math
import sys

from fusion_eval import (
    better_single, han_share, interval, keyword, keyword_ranking, mean, min_max, new_rng, ranked, read_dumps,
    scores, single_scores, worst_margin)


def vector_share(row, weight, english):
    return weight * (1 - han_share(row["query"])) if english else weight


def summed(parts):
    fused = {}
    for weight, normalised in parts:
        for item, score in normalised.items():
            fused[item] = fused.get(item, 0.0) + weight * score
    return fused


def with_absent(normalised, items, absent):
    return {item: normalised.get(item, absent) for item in items}


def mm(weight):
    def rule(row, english):
        w = vector_share(row, weight, english)
        if w <= 0:
            return keyword_ranking(row)
        return ranked(summed([(1 - w, min_max(keyword(row))), (w, min_max(row["vector"]))]))
    return rule


def rrf(k, weight=0.5):
    def rule(row, english):
        w = vector_share(row, weight, english)
        bm25 = keyword_ranking(row)
        vec = [i for i, _ in row["vector"]]
        fused = {}
        for share, ranking in ((1 - w, bm25), (w, vec)):
            for rank, item in enumerate(ranking):
                fused[item] = fused.get(item, 0.0) + share / (k + rank + 1)
        return ranked(fused)
    return rule


def z_scores(pairs):
    if not pairs:
        return {}, 0.0
    values = [s for _, s in pairs]
    centre = sum(values) / len(values)
    spread = math.sqrt(sum((v - centre) ** 2 for v in values) / len(values))
    if spread <= 0:
        return {item: 0.0 for item, _ in pairs}, 0.0
    normalised = {item: (s - centre) / spread for item, s in pairs}
    return normalised, min(normalised.values())


def z(weight):
    def rule(row, english):
        w = vector_share(row, weight, english)
        kw, kw_low = z_scores(keyword(row))
        vec, vec_low = z_scores(row["vector"])
        items = list(dict.fromkeys(list(kw) + list(vec)))
        return ranked(summed([(1 - w, with_absent(kw, items, kw_low)), (w, with_absent(vec, items, vec_low))]))
    return rule


def agree(row, english):
    """Min-max, vectors at 0.5, moved towards whichever list is more sure of its first hit: the
    weight of each list is proportional to how far its best stands above its runner-up, in units
    of its own spread (scale-free)."""
    def lead(pairs):
        values = sorted((s for _, s in pairs), reverse=True)
        if len(values) < 2 or values[0] == values[-1]:
            return 1.0
        return (values[0] - values[1]) / (values[0] - values[-1])
    kw = keyword(row)
    lead_kw, lead_vec = lead(kw), lead(row["vector"])
    w = lead_vec / (lead_kw + lead_vec) if lead_kw + lead_vec > 0 else 0.5
    w = vector_share(row, w, english)
    return ranked(summed([(1 - w, min_max(kw)), (w, min_max(row["vector"]))]))


def by_coverage(row, english):
    """Min-max, BM25 at the coverage of its best candidate (how much of the query's idf weight the
    store's best lexical match holds), the vectors at the rest."""
    w = 1 - max(row["bm25_coverage"] or [0.0])
    w = vector_share(row, w, english)
    return ranked(summed([(1 - w, min_max(keyword(row))), (w, min_max(row["vector"]))]))


def by_coverage_drop(row, english):
    """The shipped weights, BM25's 0.4 scaled down by the coverage of its best candidate."""
    w = 1 - 0.4 * max(row["bm25_coverage"] or [0.0])
    w = vector_share(row, w, english)
    return ranked(summed([(1 - w, min_max(keyword(row))), (w, min_max(row["vector"]))]))


RULES = {"mm-0.6": mm(0.6), "rrf-60": rrf(60.0), "lead": agree, "cov": by_coverage, "cov-drop": by_coverage_drop}
RULES.update({f"mm-{w}": mm(w) for w in (0.5, 0.7)})
RULES.update({f"z-{w}": z(w) for w in (0.5, 0.6, 0.7)})


def main():
    pairs = {}
    for name, model, english, rows in read_dumps(sys.argv[1:]):
        per_rule = {rule: [scores(RULES[rule](r, english), r["relevant"]) for r in rows] for rule in RULES}
        pairs[(name, model)] = (single_scores(rows), per_rule)

    rng = new_rng()
    below_single = {rule: [] for rule in RULES}
    below_shipped = {rule: [] for rule in RULES}
    print("set x model: R@5 / MRR@10; margin over the better single retriever, then over mm-0.6 (points, 95% paired bootstrap)")
    for (name, model), (single, per_rule) in sorted(pairs.items()):
        b, v = single["bm25"], single["vector"]
        print(f"{name} {model}: bm25 {mean([s[0] for s in b]):.3f}/{mean([s[1] for s in b]):.3f} "
              f"vec {mean([s[0] for s in v]):.3f}/{mean([s[1] for s in v]):.3f}")
        for rule, results in per_rule.items():
            parts = []
            for k, label in ((0, "R@5"), (1, "MRR")):
                best = better_single(single, k)
                m, lo, hi = interval([f[k] - s[k] for f, s in zip(results, best)], rng)
                d, dlo, dhi = interval([f[k] - s[k] for f, s in zip(results, per_rule["mm-0.6"])], rng)
                flag = " !" if hi < 0 else ""
                if hi < 0:
                    below_single[rule].append(f"{name}/{model[:6]} {label}")
                if dhi < 0:
                    below_shipped[rule].append(f"{name}/{model[:6]} {label}")
                parts.append(f"{label} {mean([s[k] for s in results]):.3f} {m:+.1f} [{lo:+.1f},{hi:+.1f}]{flag} vs-shipped {d:+.1f} [{dlo:+.1f},{dhi:+.1f}]")
            print(f"    {rule:<7} " + " | ".join(parts))

    print("\nper rule: pairs below the better single retriever / below mm-0.6, beyond the 95% interval")
    for rule in RULES:
        print(f"  {rule:<7} below single: {below_single[rule] or 'none'}; below mm-0.6: {below_shipped[rule] or 'none'}")

    def margin(pair, rule):
        single, per_rule = pairs[pair]
        return worst_margin(single, per_rule[rule])

    print("\nleaving each set out: the rule whose worst margin over the better single retriever on the rest is best")
    for held_out in sorted({name for name, _ in pairs}):
        training = [pair for pair in pairs if pair[0] != held_out]
        worst = {rule: min(margin(pair, rule) for pair in training) for rule in RULES}
        chosen = max(worst, key=worst.get)
        held = ", ".join(f"{model}: {margin((held_out, model), chosen) * 100:+.1f}" for name, model in pairs if name == held_out)
        ranking = ", ".join(f"{rule} {value * 100:+.1f}" for rule, value in sorted(worst.items(), key=lambda p: -p[1]))
        print(f"  {held_out:<20} chosen {chosen} (worst on the rest: {ranking}); held out: {held}")


if __name__ == "__main__":
    main()
