#!/usr/bin/env python3
"""Text nobody wrote for the risky-action check: the READMEs of real packages from the package
registries (PyPI and npm), cut into experience-sized units (a paragraph, or a paragraph and the
code block after it), labelled by reading in `risky_registry_labels.tsv` (written before the check
ran on them). `python3 make_registry_docs.py DOWNLOADS [OUTPUT]` with DOWNLOADS holding `pip/`
(files of `pip download --no-deps NAME`) and `npm/` (files of `npm pack NAME`); writes OUTPUT
(`registry_docs.jsonl` by default; the second batch is `registry_docs_2.jsonl`), one unit a line:
source package@version, licence, id, label, text. Deterministic: at most 24
units a package, sampled with seed 24, plus every other unit of the package that names a candidate
word of `CANDIDATE` (written before the check ran on them), so that the few risky lines of a long
README are not left out by the sample."""

import email
import hashlib
import json
import os
import random
import re
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PER_PACKAGE = 24
MAX_CHARS = 700
# Words that may mark a risky unit (the tldr set's list, widened for READMEs): pipes into a shell
# or an interpreter, TLS switches, removals, credential paths, sends.
CANDIDATE = re.compile(
    r"\|\s*(sudo\s+)?(ba|z)?sh\b|\|\s*(iex|python3?|node|perl)\b|<\(curl|\$\(curl|--insecure|\bcurl\b.*\s-k\b|"
    r"--no-check-certificate|verify\s*=\s*(false|no)|--verify=no|rejectunauthorized|insecure|\brm\s+-\w*[rf]|"
    r"--no-preserve-root|preserveroot|\bmkfs|\bdd\b.*of=/dev/|\.ssh/|\.aws/|\.netrc|\.npmrc|/etc/shadow|"
    r"drop database|push.*--force|/dev/tcp|\bnc\b.*-e\b|strict-ssl|sslverify|\bprintenv\b|\benv\s*\|", re.I)


def pypi_readme(path):
    if path.endswith(".whl"):
        archive = zipfile.ZipFile(path)
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        raw = archive.read(name).decode()
    else:
        archive = tarfile.open(path)
        member = next(m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("PKG-INFO"))
        raw = archive.extractfile(member).read().decode()
    meta = email.message_from_string(raw)
    licence = meta.get("License-Expression") or meta.get("License") or ""
    if not licence or licence == "UNKNOWN" or len(licence) > 40:
        classifiers = [c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
        licence = classifiers[0] if classifiers else licence[:40]
    body = meta.get_payload() or meta.get("Description") or ""
    return f"pypi:{meta['Name']}@{meta['Version']}", licence, body


def npm_readme(path):
    archive = tarfile.open(path)
    manifest = json.load(archive.extractfile("package/package.json"))
    readme = [m for m in archive.getmembers() if re.fullmatch(r"package/readme(\.md)?", m.name, re.I)]
    body = archive.extractfile(readme[0]).read().decode() if readme else ""
    licence = manifest.get("license") or ""
    return f"npm:{manifest['name']}@{manifest['version']}", licence if isinstance(licence, str) else "", body


def is_noise(block):
    """Headings alone, badges, HTML, link lists, tables: nothing an experience would say."""
    text = block.strip()
    if not text:
        return True
    if re.fullmatch(r"(#+ .*|[=\-~^*]{3,}|.*\n[=\-~^]{3,})", text):
        return True
    if text.startswith("<") or text.startswith("[![") or text.startswith("|") or text.startswith(".. "):
        return True
    words = re.findall(r"[A-Za-z\u4e00-\u9fff]+", re.sub(r"\(https?://[^)]*\)|https?://\S+", "", text))
    return len(words) < 3


def units(body):
    """Paragraphs, each fenced or indented code block joined to the paragraph before it."""
    blocks, current, fence = [], [], None
    for line in body.splitlines():
        if fence is not None:
            current.append(line)
            if line.strip().startswith(fence):
                blocks.append(("code", "\n".join(current)))
                current, fence = [], None
            continue
        match = re.match(r"\s*(```+|~~~+)", line)
        if match:
            if current:
                blocks.append(("prose", "\n".join(current)))
            current, fence = [line], match.group(1)
            continue
        if not line.strip():
            if current:
                kind = "code" if all(l.startswith(("    ", "\t")) for l in current) else "prose"
                blocks.append((kind, "\n".join(current)))
            current = []
            continue
        current.append(line)
    if current:
        blocks.append(("prose", "\n".join(current)))
    out, previous = [], None
    for kind, text in blocks:
        if kind == "code":
            code = "\n".join(l for l in text.splitlines() if not re.match(r"\s*(```|~~~)", l)).strip("\n")
            if not code.strip():
                continue
            out.append(((previous + "\n") if previous else "") + code)
            previous = None
        else:
            if previous:
                out.append(previous)
            previous = None if is_noise(text) else " ".join(text.split())
    if previous:
        out.append(previous)
    return [unit[:MAX_CHARS] for unit in out]


def main():
    root = sys.argv[1]
    output = sys.argv[2] if len(sys.argv) > 2 else "registry_docs.jsonl"
    rng = random.Random(24)
    labels = load_labels()
    rows = []
    for kind, reader in [("pip", pypi_readme), ("npm", npm_readme)]:
        for name in sorted(os.listdir(os.path.join(root, kind))):
            source, licence, body = reader(os.path.join(root, kind, name))
            found = units(body)
            if len(found) > PER_PACKAGE:
                keep = set(rng.sample(range(len(found)), PER_PACKAGE))
                found = [text for i, text in enumerate(found) if i in keep or CANDIDATE.search(text)]
            for text in found:
                unit_id = hashlib.sha1(f"{source}\n{text}".encode()).hexdigest()[:10]
                rows.append({"source": source, "licence": licence, "id": unit_id,
                             "label": labels.get(unit_id, "unlabelled"), "text": text})
    with open(os.path.join(HERE, output), "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_labels():
    """`risky_registry_labels.tsv`: `id<TAB>label` (`risky:CLASS` or `ordinary`), then a comment."""
    labels = {}
    path = os.path.join(HERE, "risky_registry_labels.tsv")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    unit_id, label = line.rstrip("\n").split("\t")[:2]
                    labels[unit_id] = label
    return labels


if __name__ == "__main__":
    main()
