"""What tools/choose-fusion-weight.py and tools/compare-fusions.py share: reading the candidates
`kb-bench quality --dump-candidates DIR/<model>` wrote, BM25's ranking as `fusion::keyword` ranks
it, min-max normalisation, R@5 / MRR@10, the margin over the better single retriever, and the
95% paired-bootstrap interval (2,000 resamples, fixed seed), so both tools measure alike.
"""

import json
import os
import random

# The bootstrap's resamples and seed: fixed, so a report can be run again and compared.
RESAMPLES = 2000
SEED = 0x4B48


def han_share(text):
    letters = [c for c in text if c.isalnum()]
    if not letters:
        return 0.0
    han = sum(1 for c in letters if 0x3400 <= ord(c) <= 0x9FFF or 0xF900 <= ord(c) <= 0xFAFF or ord(c) >= 0x20000)
    return han / len(letters)


def min_max(pairs):
    if not pairs:
        return {}
    scores = [score for _, score in pairs]
    low, high = min(scores), max(scores)
    return {item: ((score - low) / (high - low) if high > low else 1.0) for item, score in pairs}


def ranked(scores):
    # Stable on first-seen order, as the Rust fusion is.
    return [item for item, _ in sorted(scores.items(), key=lambda pair: -pair[1])]


def keyword(row):
    """BM25's ranking as `fusion::keyword`: `(bm25 / (bm25 + 10))^3 + 0.15 x coverage`."""
    return [(item, (max(score, 0) / (max(score, 0) + 10)) ** 3 + 0.15 * coverage)
            for (item, score), coverage in zip(row["bm25"], row["bm25_coverage"])]


def keyword_ranking(row):
    """The candidates in BM25's ranking alone, best first."""
    return [item for item, _ in sorted(keyword(row), key=lambda pair: -pair[1])]


def scores(ranking, relevant):
    """R@5 and MRR@10 of one ranking."""
    relevant = set(relevant)
    if not relevant:
        return 0.0, 0.0
    recall = len(relevant & set(ranking[:5])) / len(relevant)
    reciprocal = next((1 / (rank + 1) for rank, item in enumerate(ranking[:10]) if item in relevant), 0.0)
    return recall, reciprocal


def mean(values):
    return sum(values) / max(len(values), 1)


def read_dumps(model_dirs):
    """Each dump: (set name, model, whether the model is English-only, its rows), sets in name
    order within each model's directory."""
    for model_dir in model_dirs:
        model = os.path.basename(os.path.normpath(model_dir))
        english = "multilingual" not in model
        for name in sorted(os.listdir(model_dir)):
            rows = [json.loads(line) for line in open(os.path.join(model_dir, name), encoding="utf-8")]
            yield name[: -len(".jsonl")], model, english, rows


def single_scores(rows):
    """Per question, the scores of BM25's ranking alone and of the vectors alone."""
    return {
        "bm25": [scores(keyword_ranking(row), row["relevant"]) for row in rows],
        "vector": [scores([item for item, _ in row["vector"]], row["relevant"]) for row in rows],
    }


def better_single(singles, k):
    """The per-question scores of the retriever better on metric `k` (0: R@5, 1: MRR@10); BM25 on a tie."""
    bm25, vector = singles["bm25"], singles["vector"]
    return bm25 if mean([s[k] for s in bm25]) >= mean([s[k] for s in vector]) else vector


def worst_margin(singles, results):
    """How far `results` stand above the better single retriever on the worse of the two
    metrics (a fraction; negative when below)."""
    out = []
    for k in (0, 1):
        best = max(mean([s[k] for s in singles["bm25"]]), mean([s[k] for s in singles["vector"]]))
        out.append(mean([s[k] for s in results]) - best)
    return min(out)


def new_rng():
    return random.Random(SEED)


def interval(diffs, rng):
    """The mean of paired differences and its 95% bootstrap interval, in points."""
    means = sorted(mean(rng.choices(diffs, k=len(diffs))) for _ in range(RESAMPLES))
    return mean(diffs) * 100, means[50] * 100, means[RESAMPLES - 51] * 100


def margins(results, best, reference, k, rng):
    """A rule's per-query results against the better single retriever's (`best`) and against a
    reference rule's, in metric k (0: R@5, 1: MRR@10): each mean difference with its 95%
    bootstrap interval, in points."""
    return (interval([r[k] - b[k] for r, b in zip(results, best)], rng),
            interval([r[k] - s[k] for r, s in zip(results, reference)], rng))
