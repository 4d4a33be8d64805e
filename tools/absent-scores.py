#!/usr/bin/env python3
"""Whether a hybrid search should score each candidate with its real score in the list it is
absent from (issue 25): on the candidates `kb-bench quality --dump-candidates DIR/<model>` wrote,
which now also hold, for each of the vectors' 30 candidates that BM25's 30 lack, its BM25 score
and coverage (`bm25_extra`, from `ExperienceIndex::score` on the twin index; one holding no word
of the query is not listed and scores 0), and for each of BM25's candidates that the vectors' 30
lack, its cosine (`vector_extra`, from vector mode as deep as the store).

The daemon's fusion (`fusion::hybrid`, min-max of BM25's ranking `fusion::keyword` and of the
cosines, 0.4 / 0.6, an English model's weight scaled by the query's non-Han share) is computed
    lists      over each retriever's own candidates, an absent one contributing 0 (shipped)
    union      over the union of both: every candidate with both its scores, each list min-max
               normalised over the union (a candidate without a vector contributes 0 from it)
    union-bm25 only BM25's side completed (the vectors' candidates get their BM25 scores)
    union-vec  only the vectors' side completed (BM25's candidates get their cosines)
    extend     each list's own min-max map (as shipped) applied to every candidate's real score,
               unclipped: below a list's cut a candidate gets less than 0, the further the less
each at the shipped weight 0.6 and, for union, 0.5 and 0.7; then exact terms are pinned as the
daemon pins them (`tools/pinning-analysis.py`'s shipped rule, from the corpus texts).

Prints per set x model R@5 / MRR@10 of each rule, its margin over the better single retriever and
over `lists` (points, 95% paired bootstrap, fixed seed; "!" when the whole interval is below the
better single retriever), whether `lists` reproduces the socket's answers, and per rule which
pairs fall below the better single retriever or below `lists` beyond their interval.

    tools/absent-scores.py DATA_DIR DUMPS/all-minilm-l6-v2-onnx DUMPS/multilingual-e5-small-onnx
"""

import importlib.util
import os
import sys

from fusion_eval import (
    better_single, han_share, keyword, keyword_ranking, margins, mean, min_max, new_rng, ranked, read_dumps, scores,
    single_scores)

_spec = importlib.util.spec_from_file_location(
    "pinning_analysis", os.path.join(os.path.dirname(os.path.abspath(__file__)), "pinning-analysis.py"))
pinning = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pinning)


def completed(row, bm25_side=True, vector_side=True):
    """The row with each list extended to the union of both, by the candidates' real scores."""
    bm25, coverage = list(row["bm25"]), list(row["bm25_coverage"])
    vector = list(row["vector"])
    if bm25_side:
        held = {item for item, _ in bm25}
        extra = {item: (score, cov) for item, score, cov in row["bm25_extra"]}
        for item, _ in row["vector"]:
            if item not in held:
                score, cov = extra.get(item, (0.0, 0.0))
                bm25.append([item, score])
                coverage.append(cov)
                held.add(item)
    if vector_side:
        held = {item for item, _ in vector}
        vector += [[item, cosine] for item, cosine in row["vector_extra"] if item not in held]
    return {**row, "bm25": bm25, "bm25_coverage": coverage, "vector": vector}


def fused(row, weight, english):
    w = weight * (1 - han_share(row["query"])) if english else weight
    if w <= 0:
        return keyword_ranking(row)
    out = {}
    for share, normalised in ((1 - w, min_max(keyword(row))), (w, min_max(row["vector"]))):
        for item, score in normalised.items():
            out[item] = out.get(item, 0.0) + share * score
    return ranked(out)


def extended(row, weight, english):
    """Each list's min-max map (from its own candidates, as shipped) applied to the union's real
    scores, unclipped: a candidate just below a list's cut gets a little under 0 from it, one far
    below much less, where `lists` gives both 0."""
    w = weight * (1 - han_share(row["query"])) if english else weight
    if w <= 0:
        return keyword_ranking(row)
    union = completed(row)
    out = {}
    for share, own, scored in ((1 - w, keyword(row), keyword(union)), (w, row["vector"], union["vector"])):
        values = [score for _, score in own]
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        for item, score in scored:
            out[item] = out.get(item, 0.0) + share * ((score - low) / (high - low) if high > low else 1.0)
    return ranked(out)


RULES = {
    "lists": lambda row, english: fused(row, 0.6, english),
    "union": lambda row, english: fused(completed(row), 0.6, english),
    "union-0.5": lambda row, english: fused(completed(row), 0.5, english),
    "union-0.7": lambda row, english: fused(completed(row), 0.7, english),
    "union-bm25": lambda row, english: fused(completed(row, vector_side=False), 0.6, english),
    "union-vec": lambda row, english: fused(completed(row, bm25_side=False), 0.6, english),
    "extend": lambda row, english: extended(row, 0.6, english),
}


def main():
    data_dir, dump_dirs = sys.argv[1], sys.argv[2:]
    rng = new_rng()
    below, worse = {rule: [] for rule in RULES}, {rule: [] for rule in RULES}
    for name, model, english, rows in read_dumps(dump_dirs):
        texts = pinning.corpus_texts(data_dir, name)
        single = single_scores(rows)
        results = {rule: [] for rule in RULES}
        socket_matches = 0
        for row in rows:
            if not row["query"].strip():
                for rule in RULES:
                    results[rule].append((0.0, 0.0))
                continue
            for rule, f in RULES.items():
                order = pinning.pin_shipped(f(row, english), row, texts)
                results[rule].append(scores(order, row["relevant"]))
                if rule == "lists":
                    socket_matches += order[:10] == [item for item, _ in row["hybrid"]][:10]
        n_extra_bm25 = mean([len(row["bm25_extra"]) for row in rows])
        n_extra_vector = mean([len(row["vector_extra"]) for row in rows])
        print(f"{name} {model}: {len(rows)} questions; `lists` gives the socket's top 10 for {socket_matches}; "
              f"per question {n_extra_bm25:.1f} vector candidates with a BM25 score, {n_extra_vector:.1f} BM25 "
              f"candidates with a cosine outside the vectors' 30")
        for k in (0, 1):
            best = better_single(single, k)
            which = "bm25" if best is single["bm25"] else "vectors"
            label = "R@5" if k == 0 else "MRR@10"
            print(f"  {label} (better single: {which} {mean([b[k] for b in best]):.3f})")
            for rule in RULES:
                (m, lo, hi), (d, dlo, dhi) = margins(results[rule], best, results["lists"], k, rng)
                if hi < 0:
                    below[rule].append(f"{name}/{model[:6]} {label}")
                if dhi < 0:
                    worse[rule].append(f"{name}/{model[:6]} {label}")
                print(f"    {rule:<11} {mean([r[k] for r in results[rule]]):.3f}  vs single {m:+.1f} [{lo:+.1f}, {hi:+.1f}]"
                      f"{' !' if hi < 0 else '  '}  vs lists {d:+.1f} [{dlo:+.1f}, {dhi:+.1f}]")
        print()
    print("pairs below the better single retriever / below `lists`, beyond the 95% interval")
    for rule in RULES:
        print(f"  {rule:<11} below single: {below[rule] or 'none'}; below lists: {worse[rule] or 'none'}")


if __name__ == "__main__":
    main()
