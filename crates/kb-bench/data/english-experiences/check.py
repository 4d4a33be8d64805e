#!/usr/bin/env python3
"""Sanity checks for the english-experiences retrieval set (stdlib only).

Run from this directory:  python3 check.py

Checks:
  * every row has the expected fields and types, scores are 1..5, kinds are known;
  * corpus ids and query ids are unique, every relevant id exists in the corpus;
  * no two corpus rows have the same task + resource + result (after lowercasing and
    collapsing whitespace), and no two queries have the same text;
  * word overlap between each query and the task/resource/result of its relevant rows:
      - basic rule (the definition of the `no-overlap` kind): lowercase, split on
        non-alphanumerics, drop stop words and words of <= 2 letters, drop a simple plural
        `s`; a `no-overlap` query must share no such word with any relevant row;
      - strict rule (closer to what the daemon's BM25 analyzer matches): additionally split
        camelCase, and compare Porter stems, so `caching` ~ `cache`, `failed` ~ `failure`;
        reported for every kind, and `no-overlap` queries must pass it too;
      - `lexical` queries must share at least one word with a relevant row;
  * nothing that the daemon would redact (e-mail, IP address, home directory user name,
    secret assignments, phone numbers) or hold as a suspected prompt injection; this is an
    approximation of kb-core's rules, deliberately stricter.

Exits with status 1 if any check fails.
"""

import json
import re
import sys
from collections import Counter

CORPUS = "corpus.jsonl"
QUERIES = "queries.jsonl"
KINDS = ("lexical", "paraphrase", "no-overlap", "mixed")

# A conventional English stop-word list (close to NLTK's, including the parts of contractions).
STOP_WORDS = set("""
a about above after again against all am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during each
few for from further had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just ll me more most mustn my myself needn no nor not now of off on
once only or other our ours ourselves out over own re same shan she should shouldn so some such than
that the their theirs them themselves then there these they this those through to too under until up
ve very was wasn we were weren what when where which while who whom why will with won would wouldn
you your yours yourself yourselves
""".split())


# --------------------------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------------------------

def basic_terms(text):
    """The rule the README states: lowercase, split on non-alphanumerics, no stop words, no
    words of <= 2 letters, a trailing plural `s` removed (not from `ss`, `us`, `is`)."""
    terms = set()
    for word in re.split(r"[^a-z0-9]+", text.lower()):
        if len(word) <= 2 or word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
        terms.add(word)
    return terms


def strict_terms(text):
    """camelCase split, lowercase, split on non-alphanumerics, stop words and <= 2 letters
    dropped, Porter stems for alphabetic words."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    terms = set()
    for word in re.split(r"[^a-z0-9]+", text.lower()):
        if len(word) <= 2 or word in STOP_WORDS:
            continue
        terms.add(porter(word) if word.isalpha() else word)
    return terms


# --------------------------------------------------------------------------------------------
# Porter stemmer (M.F. Porter, 1980), compact implementation
# --------------------------------------------------------------------------------------------

def _cons(w, i):
    c = w[i]
    if c in "aeiou":
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _m(stem):
    n, i, L = 0, 0, len(stem)
    while i < L and _cons(stem, i):
        i += 1
    while i < L:
        while i < L and not _cons(stem, i):
            i += 1
        if i >= L:
            break
        n += 1
        while i < L and _cons(stem, i):
            i += 1
    return n


def _has_vowel(stem):
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_cons(w):
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w):
    if len(w) < 3:
        return False
    return (_cons(w, len(w) - 3) and not _cons(w, len(w) - 2) and _cons(w, len(w) - 1)
            and w[-1] not in "wxy")


def _replace(w, rules, cond):
    for suffix, rep in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + rep if cond(stem) else w
    return w


def porter(w):
    if len(w) <= 2:
        return w
    # 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # 1b
    extra = False
    if w.endswith("eed"):
        if _m(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, extra = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, extra = w[:-3], True
    if extra:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _m(w) == 1 and _cvc(w):
            w += "e"
    # 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    # 2
    w = _replace(w, [
        ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
        ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
        ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
        ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
        ("logi", "log"),
    ], lambda s: _m(s) > 0)
    # 3
    w = _replace(w, [
        ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
        ("ful", ""), ("ness", ""),
    ], lambda s: _m(s) > 0)
    # 4
    for suffix in ("ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate",
                   "iti", "ous", "ive", "ize", "ion", "al", "er", "ic", "ou"):
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if _m(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                w = stem
            break
    # 5
    if w.endswith("e"):
        stem = w[:-1]
        if _m(stem) > 1 or (_m(stem) == 1 and not _cvc(stem)):
            w = stem
    if _m(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w


# --------------------------------------------------------------------------------------------
# Privacy / injection lint: a stricter approximation of kb-core's redact.rs and injection.rs
# --------------------------------------------------------------------------------------------

WELL_KNOWN_IPS = {"0.0.0.0", "169.254.169.254", "8.8.8.8", "8.8.4.4", "1.1.1.1", "1.0.0.1", "9.9.9.9"}
SECRET_NAME = r"(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|token)"
LINT_RULES = [
    ("email", re.compile(r"\b([A-Za-z0-9._%+-]+)@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b")),
    ("ipv4", re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")),
    ("home_dir", re.compile(r"/(?:Users|home)/[^/\s]+|[A-Za-z]:\\+Users\\+[^\\\s]+", re.I)),
    ("secret_assignment", re.compile(
        r"(?i)[A-Za-z0-9_.-]*" + SECRET_NAME + r"[\"']?[ \t]*(?:=>|:=|[:=])[ \t]*([^\s\"'`,;&]+|\"[^\"]*\"|'[^']*')")),
    ("secret_flag", re.compile(r"(?i)--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|secret|api-?key|token)[ \t]+\S+")),
    ("cli_credentials", re.compile(r"(?:^|[ \t])(?:-u[ \t]*|--user[ \t=]+)[\"']?([^\s:'\"]+:[^\s'\"]+)")),
    ("bearer", re.compile(r"(?i)\bbearer[ \t]+[A-Za-z0-9._~+/-]*\d[A-Za-z0-9._~+/-]*")),
    ("key_shapes", re.compile(r"\b(?:sk-[A-Za-z0-9_-]{20,}|AKIA[A-Z0-9]{16}|gh[pousr]_[A-Za-z0-9]{20,}|xox[baprs]-|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{8,}\.)")),
    ("phone", re.compile(r"\+\d[\d ().-]{8,24}\d|(?<![\w.-])(?:\(\d{3}\) ?|\d{3}[.-])\d{3}[ .-]\d{4}(?!\w)")),
    ("private_key", re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY")),
    ("injection", re.compile(
        r"(?i)\b(?:ignore|disregard|forget|discard|abandon|neglect)\b[^.\n]{0,40}\b(?:instructions?|prompts?|rules|guidelines|directions|above|previous|prior)\b"
        r"|\bsystem (?:prompt|message)\b|\byou are now\b|\bfrom now on\b|\bjailbreak|<\s*/?\s*(?:system|assistant|developer)\b"
        r"|^\s*(?:human|assistant|system|developer)\s*:|\bact as\b|\bnew instructions\b")),
]


def lint(text):
    problems = []
    for kind, rx in LINT_RULES:
        for m in rx.finditer(text):
            value = m.group(0)
            if kind == "email" and m.group(1).lower() == "git":
                continue  # git@github.com:org/repo.git is an SSH remote
            if kind == "ipv4" and (value in WELL_KNOWN_IPS or value.startswith(("127.", "255."))
                                   or all(len(part) == 1 for part in value.split("."))):
                continue
            if kind == "secret_assignment":
                v = m.group(1).strip("\"'")
                if not v or v[0] in "[$<{%*=(." or v.lower() in ("null", "none", "true", "false", "undefined"):
                    continue  # a reference such as ${{ secrets.X }} or $VAR, not a value
            if kind == "cli_credentials":
                user, _, pw = m.group(1).partition(":")
                if (user.isdigit() and pw.isdigit()) or pw[:1] in "[$<{%*=(.":
                    continue
            problems.append((kind, value))
    return problems


# --------------------------------------------------------------------------------------------

def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    fail(f"{path} line {n}: invalid JSON ({e})")
    return rows


FAILURES = []


def fail(message):
    FAILURES.append(message)
    print("FAIL:", message)


def main():
    corpus = load(CORPUS)
    queries = load(QUERIES)
    print(f"corpus: {len(corpus)} experiences; queries: {len(queries)}")

    # ---- fields
    for row in corpus:
        for field, kind in (("id", str), ("task", str), ("resource", str), ("result", str), ("score", int), ("group", str)):
            if not isinstance(row.get(field), kind) or (kind is str and not row[field].strip()):
                fail(f"corpus row {row.get('id')}: bad or missing field {field!r}")
        if isinstance(row.get("score"), int) and not 1 <= row["score"] <= 5:
            fail(f"corpus row {row['id']}: score {row['score']} outside 1..5")
        if row.get("group") != "all":
            fail(f"corpus row {row.get('id')}: group is not 'all'")
        n_words = len(row.get("task", "").split())
        if not 5 <= n_words <= 25:
            fail(f"corpus row {row.get('id')}: task has {n_words} words (want 5..25)")
    for q in queries:
        if not isinstance(q.get("text"), str) or not q["text"].strip():
            fail(f"query {q.get('id')}: empty text")
        if q.get("kind") not in KINDS:
            fail(f"query {q.get('id')}: unknown kind {q.get('kind')!r}")
        if q.get("group") != "all":
            fail(f"query {q.get('id')}: group is not 'all'")
        if not isinstance(q.get("relevant"), list) or not q["relevant"]:
            fail(f"query {q.get('id')}: no relevant ids")

    # ---- ids
    cids = [r["id"] for r in corpus]
    qids = [q["id"] for q in queries]
    for name, ids in (("corpus", cids), ("query", qids)):
        dup = [i for i, c in Counter(ids).items() if c > 1]
        if dup:
            fail(f"duplicate {name} ids: {dup}")
    print(f"ids unique: corpus {len(set(cids))}/{len(cids)}, queries {len(set(qids))}/{len(qids)}")
    by_id = {r["id"]: r for r in corpus}
    missing = sorted({i for q in queries for i in q.get("relevant", []) if i not in by_id})
    if missing:
        fail(f"relevant ids not in corpus: {missing}")
    n_rel = sum(len(q.get("relevant", [])) for q in queries)
    print(f"relevant ids: {n_rel} references, all exist in corpus: {not missing}")

    # ---- duplicates
    norm = lambda s: " ".join(s.lower().split())
    seen = {}
    n_dup = 0
    for r in corpus:
        key = (norm(r["task"]), norm(r["resource"]), norm(r["result"]))
        if key in seen:
            fail(f"identical task+resource+result: {seen[key]} and {r['id']}")
            n_dup += 1
        seen[key] = r["id"]
    print(f"identical task+resource+result pairs: {n_dup}")
    seen_q = {}
    for q in queries:
        t = norm(q["text"])
        if t in seen_q:
            fail(f"identical query text: {seen_q[t]} and {q['id']}")
        seen_q[t] = q["id"]

    # ---- counts
    kinds = Counter(q.get("kind") for q in queries)
    print("queries per kind: " + ", ".join(f"{k} {kinds.get(k, 0)}" for k in KINDS))
    rel_sizes = Counter(len(q.get("relevant", [])) for q in queries)
    print("relevant ids per query: " + ", ".join(f"{n}: {c}" for n, c in sorted(rel_sizes.items())))
    scores = Counter(r["score"] for r in corpus)
    print("corpus scores: " + ", ".join(f"{s}: {scores.get(s, 0)}" for s in range(1, 6)))
    answered = {i for q in queries for i in q.get("relevant", [])}
    print(f"corpus rows that answer at least one query: {len(answered)}; distractor-only rows: {len(corpus) - len(answered)}")

    # ---- overlap
    print()
    print("word overlap of each query with its relevant rows (task + resource + result):")
    print(f"  {'kind':<11} {'n':>4} {'basic=0':>8} {'strict=0':>9} {'mean basic':>11} {'mean strict':>12}")
    for kind in KINDS:
        rows = [q for q in queries if q.get("kind") == kind]
        basic_counts, strict_counts = [], []
        for q in rows:
            targets = [by_id[i] for i in q["relevant"] if i in by_id]
            tb = set().union(*(basic_terms(f"{t['task']} {t['resource']} {t['result']}") for t in targets)) if targets else set()
            ts = set().union(*(strict_terms(f"{t['task']} {t['resource']} {t['result']}") for t in targets)) if targets else set()
            shared_b = basic_terms(q["text"]) & tb
            shared_s = strict_terms(q["text"]) & ts
            basic_counts.append(len(shared_b))
            strict_counts.append(len(shared_s))
            if kind == "no-overlap" and shared_b:
                fail(f"{q['id']} (no-overlap) shares words {sorted(shared_b)}: {q['text']!r}")
            elif kind == "no-overlap" and shared_s:
                fail(f"{q['id']} (no-overlap) shares stems {sorted(shared_s)}: {q['text']!r}")
            if kind == "lexical" and not shared_b:
                fail(f"{q['id']} (lexical) shares no word with its target: {q['text']!r}")
        n = len(rows) or 1
        print(f"  {kind:<11} {len(rows):>4} {basic_counts.count(0):>8} {strict_counts.count(0):>9}"
              f" {sum(basic_counts) / n:>11.2f} {sum(strict_counts) / n:>12.2f}")

    # ---- privacy / injection lint
    n_lint = 0
    for r in corpus:
        for field in ("task", "resource", "result"):
            for kind, value in lint(r[field]):
                fail(f"{r['id']}.{field}: looks like {kind}: {value!r}")
                n_lint += 1
    for q in queries:
        for kind, value in lint(q["text"]):
            fail(f"{q['id']}: looks like {kind}: {value!r}")
            n_lint += 1
    print()
    print(f"redaction / injection lint hits: {n_lint}")

    print()
    if FAILURES:
        print(f"{len(FAILURES)} check(s) FAILED")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
