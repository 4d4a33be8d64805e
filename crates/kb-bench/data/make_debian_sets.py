#!/usr/bin/env python3
"""Builds the debian-en and debian-zh retrieval sets from Debian's package descriptions.

Each Debian package has a one-line synopsis and a long description written by its maintainer;
the Debian Description Translation Project translates both. Here the synopsis is the question
and the long description is the document that answers it: find the package that does X. Unlike
the other sets, nobody wrote these texts for KnowHub, and no setting was chosen on them.

usage: python3 make_debian_sets.py Translation-en Translation-zh_CN
The files come from Debian bookworm's archive (`apt-get update` with
`-o Acquire::Languages=en,zh_CN` writes them, lz4-compressed, into /var/lib/apt/lists;
`/usr/lib/apt/apt-helper cat-file FILE` decompresses). Deterministic: the same files give the
same sets.

Kept: packages whose long description is at least 20 words (English) or 40 characters
(Chinese) and at most 2,000 characters (the longest task an experience may have), whose
synopsis and whose first paragraph appear in no other package (families such as foo,
foo-data, foo-doc share theirs, which would make the answer ambiguous), and whose synopsis is
not mostly the package name. The corpus holds every kept description (English: a
seeded sample of 6,000); 1,000 of them (Chinese: all) are asked about.
"""
import json
import pathlib
import random
import re
import sys
from collections import Counter

HERE = pathlib.Path(__file__).resolve().parent


def packages(path, field):
    """(package, synopsis, long description) in file order."""
    entries = []
    name = synopsis = None
    body = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("Package: "):
            name = line[len("Package: ") :]
        elif line.startswith(field + ": "):
            synopsis = line[len(field) + 2 :].strip()
            body = []
        elif line.startswith(" ") and synopsis is not None:
            text = line[1:]
            body.append("" if text.strip() == "." else text.strip())
        elif line == "":
            if name and synopsis:
                entries.append((name, synopsis, body))
            name = synopsis = None
            body = []
    if name and synopsis:
        entries.append((name, synopsis, body))
    return entries


def paragraphs(body, joiner):
    out, current = [], []
    for line in body:
        if line == "":
            if current:
                out.append(joiner.join(current))
            current = []
        else:
            current.append(line)
    if current:
        out.append(joiner.join(current))
    return out


def build(path, field, joiner, long_enough, name, corpus_size, n_queries, seed):
    entries = packages(path, field)
    prepared = []
    for package, synopsis, body in entries:
        parts = paragraphs(body, joiner)
        if not parts:
            continue
        text = "\n".join(parts)
        prepared.append((package, synopsis, parts[0], text))
    synopsis_count = Counter(synopsis.lower() for _, synopsis, _, _ in prepared)
    first_count = Counter(first for _, _, first, _ in prepared)
    kept = []
    for package, synopsis, first, text in prepared:
        # Over 2,000 characters a text is refused as an experience's task (kb-bench imports
        # each document as one): 25 English descriptions, 0 Chinese.
        too_long = len(text) > 2000
        if synopsis_count[synopsis.lower()] > 1 or first_count[first] > 1 or not long_enough(text) or too_long:
            continue
        words = re.findall(r"\w+", synopsis.lower())
        stem = set(re.findall(r"\w+", package.lower()))
        if not words or sum(word in stem for word in words) * 2 >= len(words):
            continue
        kept.append((package, synopsis, text))
    rng = random.Random(seed)
    if len(kept) > corpus_size:
        kept = rng.sample(kept, corpus_size)
        kept.sort()
    asked = kept if len(kept) <= n_queries else sorted(rng.sample(kept, n_queries))
    out = HERE / name
    out.mkdir(exist_ok=True)
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as corpus:
        for package, _, text in kept:
            corpus.write(json.dumps({"id": package, "text": text}, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as queries:
        for package, synopsis, _ in asked:
            row = {"id": package + "?", "text": synopsis, "group": "all", "relevant": [package]}
            queries.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{name}: {len(entries)} packages, {len(kept)} kept, {len(asked)} questions")


def main():
    english, chinese = sys.argv[1], sys.argv[2]
    build(english, "Description-en", " ", lambda text: len(text.split()) >= 20, "debian-en", 6000, 1000, 2026)
    build(chinese, "Description-zh_CN", "", lambda text: len(text) >= 40, "debian-zh", 6000, 1000, 2026)


if __name__ == "__main__":
    main()
