#!/usr/bin/env python3
"""Chooses the vectors' weight of the hybrid ranking (kb_embed::fusion::VECTOR_WEIGHT) by leaving
each data set out, from the candidates `kb-bench quality --dump-candidates DIR/<model>` wrote
(BM25's raw scores and coverage, the vectors' cosines without a floor, per question).

For each rule (BM25's scale, weight), each set x model: R@5 and MRR@10 of `min-max(BM25 ranking) x (1 - w) +
min-max(cosine) x w` (BM25's ranking as `fusion::keyword`: `(bm25 / (bm25 + 10))^3 + 0.15 x
coverage`; an English model's weight scaled by the query's non-Han share), and its margin over
the better single retriever (BM25 ranking alone, cosine alone) on the same candidates. In each
fold the weight whose worst margin over the other sets' pairs is best is chosen; ties within
0.1 point go to 0.5 (the plain half), then to the weight nearest it.

    tools/choose-fusion-weight.py DUMPS/all-minilm-l6-v2-onnx DUMPS/multilingual-e5-small-onnx

With BOOTSTRAP=1 it also prints, per set x model, the margins of min-max 0.5 and 0.6 over the
better single retriever with 95% paired-bootstrap intervals (the README's last column).
"""

import os
import sys

from fusion_eval import (
    better_single, han_share, interval, keyword, keyword_ranking, mean, min_max, new_rng, ranked, read_dumps,
    scores, single_scores, worst_margin)

WEIGHTS = [round(0.1 * step, 1) for step in range(1, 10)]
# How BM25's ranking is put on 0..1: min-max (fusion::min_max_hybrid) or divided by its best
# (fusion::best_scaled_hybrid); the vectors are min-max normalised in both.
SCALES = {"min-max": None, "best": None}


def by_best(pairs):
    best = max([score for _, score in pairs] + [0.0])
    return {item: (max(score, 0.0) / best if best > 0 else 1.0) for item, score in pairs}


def fuse(row, weight, english, scale):
    if english:
        weight *= 1 - han_share(row["query"])
    if weight <= 0:
        return keyword_ranking(row)
    fused = {}
    for item, score in scale(keyword(row)).items():
        fused[item] = fused.get(item, 0) + (1 - weight) * score
    for item, score in min_max(row["vector"]).items():
        fused[item] = fused.get(item, 0) + weight * score
    return ranked(fused)


def bootstrap_report(paths, rules):
    """Per set x model, each rule's margin over the better single retriever with its 95% paired
    bootstrap interval (2,000 resamples of the questions, fixed seed), in points."""
    rng = new_rng()
    for name, model, english, rows in read_dumps(paths):
        singles = single_scores(rows)
        line = []
        for scale, weight in rules:
            fused = [scores(fuse(r, weight, english, min_max if scale == "min-max" else by_best), r["relevant"]) for r in rows]
            parts = []
            for k, label in ((0, "R@5"), (1, "MRR")):
                single = better_single(singles, k)
                m, lo, hi = interval([f[k] - s[k] for f, s in zip(fused, single)], rng)
                parts.append(f"{label} {m:+.1f} [{lo:+.1f}, {hi:+.1f}]")
            line.append(f"{scale} {weight}: " + ", ".join(parts))
        print(f"  {name:<20} {model:<28} " + " | ".join(line))


def main():
    pairs = {}
    for name, model, english, rows in read_dumps(sys.argv[1:]):
        fused = {(scale, w): [scores(fuse(r, w, english, min_max if scale == "min-max" else by_best), r["relevant"]) for r in rows]
                 for scale in SCALES for w in WEIGHTS}
        pairs[(name, model)] = (single_scores(rows), fused)

    def margin(pair, weight):
        singles, fused = pairs[pair]
        return worst_margin(singles, fused[weight])

    rules = [(scale, w) for scale in SCALES for w in WEIGHTS]
    print("set x model: R@5 / MRR@10 of BM25's ranking, the vectors, and each rule (scale, weight)")
    for pair, (singles, fused) in sorted(pairs.items()):
        b = singles["bm25"]
        v = singles["vector"]
        print(f"  {pair[0]:<20} {pair[1]:<28} bm25 {mean([s[0] for s in b]):.3f}/{mean([s[1] for s in b]):.3f} "
              f"vec {mean([s[0] for s in v]):.3f}/{mean([s[1] for s in v]):.3f}")
        for scale in SCALES:
            line = " ".join(f"{w}:{mean([s[0] for s in fused[(scale, w)]]):.3f}/{mean([s[1] for s in fused[(scale, w)]]):.3f}" for w in WEIGHTS)
            print(f"      {scale:<8} {line}")
    sets = sorted({name for name, _ in pairs})
    print("\nleaving each set out: the rule whose worst margin over the better single retriever on the rest is best")
    for held_out in sets:
        training = [pair for pair in pairs if pair[0] != held_out]
        worst = {rule: min(margin(pair, rule) for pair in training) for rule in rules}
        top = max(worst.values())
        near = [rule for rule in rules if worst[rule] >= top - 0.001]
        chosen = min(near, key=lambda rule: (abs(rule[1] - 0.5), rule[0] != "min-max"))
        held = ", ".join(f"{model}: {margin((held_out, model), chosen) * 100:+.1f}" for name, model in pairs if name == held_out)
        print(f"  {held_out:<20} chosen {chosen} (worst margin on the rest {worst[chosen] * 100:+.1f} points; "
              f"within 0.1 point: {near}); held out, worst margin: {held}")

    if len(sys.argv) > 1 and os.environ.get("BOOTSTRAP"):
        print("\nmargin over the better single retriever, 95% paired bootstrap (points)")
        bootstrap_report(sys.argv[1:], [("min-max", 0.5), ("min-max", 0.6)])


if __name__ == "__main__":
    main()
