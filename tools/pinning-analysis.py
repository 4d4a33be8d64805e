#!/usr/bin/env python3
"""Where the daemon's hybrid ranking gains or loses against the better single retriever, per
question, on the candidates `kb-bench quality --dump-candidates DIR/<model>` wrote (BM25's raw
scores and coverage, the vectors' cosines, the socket's hybrid answer, and the query's exact
terms with how many experiences can hold each).

The socket's MRR@10 (and R@5) minus the better single retriever's is split, per question, into
steps that add up:
    fusion     min-max of BM25's saturated score (no coverage) and the cosines at 0.4 / 0.6,
               against the better single retriever
    coverage   what `fusion::COVERAGE_WEIGHT` x coverage adds to BM25's side
    pinning    what putting first the candidates that hold an exact term changes (the daemon's
               `pin_exact`, redone here from the dumped terms and the corpus texts)
    residual   the socket's answer against that reconstruction (the twin index's candidates are
               the daemon's, so this should be 0)
There is no cosine floor in the ranking (issue 25), so no step for it; the Han term only scales
an English model's vector weight for Han queries (it is inside `fusion`).

Then the same for other pinning rules (what the daemon could do instead), with 95% paired
bootstrap intervals against the better single retriever and against the shipped pinning:
    shipped       quoted strings, and identifiers at most top_k (10) experiences can hold
    none          no pinning
    unique        only terms exactly one candidate holds
    store-unique  identifiers only when at most one experience can hold them
    ids-only      identifiers as shipped, quoted strings left to the ranking
    ids-unique    identifiers only, and only those exactly one candidate holds
    no-compounds  as shipped, but a compound word (letters joined by hyphens, or two words by a
                  slash: `command-line`, `import/export`) is no identifier (`fusion::is_compound_word`)
    no-comp+uniq  no compounds, and only terms exactly one candidate holds
"shipped" is what the dumped daemon did (the socket's answers check it: `residual`). Dumps from a
daemon with another rule make "shipped" that rule's terms only where `exact` says so: the terms
are recomputed by kb-bench (`fusion::exact_terms`), so they follow the daemon it was built with.

    tools/pinning-analysis.py DATA_DIR DUMPS/all-minilm-l6-v2-onnx DUMPS/multilingual-e5-small-onnx
"""

import json
import os
import sys

from fusion_eval import (
    better_single, han_share, interval, keyword, margins, mean, min_max, new_rng, ranked, read_dumps, scores, single_scores)

TOP_K = 10
VECTOR_WEIGHT = 0.6


def corpus_texts(data_dir, name):
    """Each corpus row's text as the daemon's pinning reads it (`semantic::embedding_text`)."""
    texts = {}
    for line in open(os.path.join(data_dir, name, "corpus.jsonl"), encoding="utf-8"):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("text") is not None:
            texts[row["id"]] = f"{row['text']}\ndoc\ndoc"
        else:
            texts[row["id"]] = f"{row.get('task') or ''}\n{row.get('resource') or ''}\n{row.get('result') or ''}"
    return texts


def vector_share(row, english):
    return VECTOR_WEIGHT * (1 - han_share(row["query"])) if english else VECTOR_WEIGHT


def fused(row, english, coverage=True):
    """The daemon's `fusion::hybrid` (coverage off: BM25's saturated score alone)."""
    kw = keyword(row) if coverage else [(i, s - 0.15 * c) for (i, s), c in zip(keyword(row), row["bm25_coverage"])]
    w = vector_share(row, english)
    if w <= 0:
        return [item for item, _ in sorted(kw, key=lambda pair: -pair[1])]
    out = {}
    for weight, normalised in ((1 - w, min_max(kw)), (w, min_max(row["vector"]))):
        for item, score in normalised.items():
            out[item] = out.get(item, 0.0) + weight * score
    return ranked(out)


def found_in(term, text):
    return term["text"].lower() in text.lower() if term["ignore_case"] else term["text"] in text


def lookups(row):
    """The shipped `Engine::lookups`: quoted strings, and identifiers at most top_k can hold."""
    return [t for t in row.get("exact", []) if not t["ignore_case"] or t["holders"] is None or t["holders"] <= TOP_K]


def pin(order, terms, texts):
    """`fusion::pin_exact`: candidates holding more of `terms` first, stable."""
    if not terms:
        return order
    count = {item: sum(found_in(t, texts.get(item, "")) for t in terms) for item in order}
    return sorted(order, key=lambda item: -count[item])


RULES = {}


def rule(name):
    def register(f):
        RULES[name] = f
        return f
    return register


@rule("shipped")
def pin_shipped(order, row, texts):
    return pin(order, lookups(row), texts)


@rule("none")
def pin_none(order, row, texts):
    return order


@rule("unique")
def pin_unique(order, row, texts):
    """Only the terms exactly one candidate holds: a lookup that singles out one experience."""
    terms = [t for t in lookups(row) if sum(found_in(t, texts.get(i, "")) for i in order) == 1]
    return pin(order, terms, texts)


@rule("store-unique")
def pin_store_unique(order, row, texts):
    """Quoted strings as shipped; identifiers only when at most one experience can hold them."""
    terms = [t for t in row.get("exact", []) if not t["ignore_case"] or t["holders"] is None or t["holders"] <= 1]
    return pin(order, terms, texts)


@rule("ids-only")
def pin_identifiers_only(order, row, texts):
    """Identifiers as shipped, quoted strings left to the ranking."""
    return pin(order, [t for t in lookups(row) if t["ignore_case"]], texts)


@rule("ids-unique")
def pin_identifiers_unique(order, row, texts):
    """Identifiers only, and only those exactly one candidate holds."""
    terms = [t for t in lookups(row) if t["ignore_case"] and sum(found_in(t, texts.get(i, "")) for i in order) == 1]
    return pin(order, terms, texts)


def compound_word(text):
    """`fusion::is_compound_word`: letters joined by hyphens (`command-line`), or two words by
    one slash (`import/export`, `Tcl/Tk`): how prose joins words, not how code names things."""
    parts = text.replace("/", "-").split("-")
    camel = any(a.islower() and b.isupper() for a, b in zip(text, text[1:]))
    return not camel and text.count("/") <= 1 and len(parts) > 1 and all(part.isalpha() for part in parts)


@rule("no-compounds")
def pin_no_compounds(order, row, texts):
    """As shipped, but a compound word (letters joined by `-` or `/`) is no identifier."""
    return pin(order, [t for t in lookups(row) if not (t["ignore_case"] and compound_word(t["text"]))], texts)


@rule("no-comp+uniq")
def pin_no_compounds_unique(order, row, texts):
    """No compounds, and only terms exactly one candidate holds."""
    terms = [t for t in lookups(row) if not (t["ignore_case"] and compound_word(t["text"]))]
    terms = [t for t in terms if sum(found_in(t, texts.get(i, "")) for i in order) == 1]
    return pin(order, terms, texts)


def score_of(order, row):
    return scores(order, row["relevant"])


def main():
    data_dir, dump_dirs = sys.argv[1], sys.argv[2:]
    rng = new_rng()
    below = {name: [] for name in RULES}
    worse = {name: [] for name in RULES}
    table = []
    for name, model, english, rows in read_dumps(dump_dirs):
        texts = corpus_texts(data_dir, name)
        single = single_scores(rows)
        steps = {"fusion": [], "coverage": [], "pinning": [], "residual": []}
        per_rule = {r: [] for r in RULES}
        socket = []
        causes = {}
        for index, row in enumerate(rows):
            if not row["query"].strip():
                for r in RULES:
                    per_rule[r].append((0.0, 0.0))
                socket.append((0.0, 0.0))
                for k in steps:
                    steps[k].append((0.0, 0.0))
                continue
            no_cov = fused(row, english, coverage=False)
            with_cov = fused(row, english)
            s_nocov, s_cov = score_of(no_cov, row), score_of(with_cov, row)
            s_pinned = score_of(pin_shipped(with_cov, row, texts), row)
            s_socket = score_of([i for i, _ in row["hybrid"]], row)
            socket.append(s_socket)
            for r, f in RULES.items():
                per_rule[r].append(score_of(f(with_cov, row, texts), row))
            steps["coverage"].append(tuple(a - b for a, b in zip(s_cov, s_nocov)))
            steps["pinning"].append(tuple(a - b for a, b in zip(s_pinned, s_cov)))
            steps["residual"].append(tuple(a - b for a, b in zip(s_socket, s_pinned)))
            steps["fusion"].append(s_nocov)
        for k in (0, 1):
            best = better_single(single, k)
            label = "R@5" if k == 0 else "MRR@10"
            which = "bm25" if best is single["bm25"] else "vectors"
            total = [s[k] - b[k] for s, b in zip(socket, best)]
            m, lo, hi = interval(total, rng)
            print(f"{name} {model} {label}: socket {mean([s[k] for s in socket]):.3f}, better single ({which}) "
                  f"{mean([b[k] for b in best]):.3f}: {m:+.1f} [{lo:+.1f}, {hi:+.1f}]")
            parts = {
                "fusion": [f[k] - b[k] for f, b in zip(steps["fusion"], best)],
                "coverage": [d[k] for d in steps["coverage"]],
                "pinning": [d[k] for d in steps["pinning"]],
                "residual": [d[k] for d in steps["residual"]],
            }
            for part, diffs in parts.items():
                won = sum(1 for d in diffs if d > 1e-9)
                lost = sum(1 for d in diffs if d < -1e-9)
                print(f"    {part:<9} {sum(diffs) / len(diffs) * 100:+5.1f} points; questions up {won:>3}, down {lost:>3}")
            # Questions the socket ranks below the better single retriever, by the first step
            # (in the order above) that moved them below it and stayed there.
            lost_by, won_by = {}, {}
            for q, (s, b) in enumerate(zip(socket, best)):
                d = s[k] - b[k]
                if abs(d) < 1e-9:
                    continue
                cumulative = [parts["fusion"][q]]
                for part in ("coverage", "pinning", "residual"):
                    cumulative.append(cumulative[-1] + parts[part][q])
                names = ["fusion", "coverage", "pinning", "residual"]
                # The last step at which the sign became what it ends as.
                cause = names[0]
                for i in range(1, 4):
                    if (cumulative[i] < -1e-9) != (cumulative[i - 1] < -1e-9) or (cumulative[i] > 1e-9) != (cumulative[i - 1] > 1e-9):
                        cause = names[i]
                (lost_by if d < 0 else won_by).setdefault(cause, 0)
                (lost_by if d < 0 else won_by)[cause] += 1
            print(f"    questions below the better single: {sum(lost_by.values())} {lost_by}; above: {sum(won_by.values())} {won_by}")
        for r in RULES:
            parts = []
            for k in (0, 1):
                best = better_single(single, k)
                (m, lo, hi), (d, dlo, dhi) = margins(per_rule[r], best, per_rule["shipped"], k, rng)
                if hi < 0:
                    below[r].append(f"{name}/{model[:6]} {'R@5' if k == 0 else 'MRR'}")
                if dhi < 0:
                    worse[r].append(f"{name}/{model[:6]} {'R@5' if k == 0 else 'MRR'}")
                parts.append(f"{mean([s[k] for s in per_rule[r]]):.3f} {m:+.1f} [{lo:+.1f},{hi:+.1f}]{' !' if hi < 0 else ''} "
                             f"vs shipped {d:+.1f} [{dlo:+.1f},{dhi:+.1f}]")
            print(f"  pin {r:<12} R@5 {parts[0]} | MRR {parts[1]}")
            table.append((name, model, r, per_rule[r]))
        print()
    print("per pinning rule: pairs below the better single retriever / below the shipped pinning, beyond the 95% interval")
    for r in RULES:
        print(f"  {r:<12} below single: {below[r] or 'none'}; below shipped: {worse[r] or 'none'}")


if __name__ == "__main__":
    main()
