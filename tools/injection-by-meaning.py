#!/usr/bin/env python3
"""Measures whether prompt injection can be told by meaning: a logistic regression on
multilingual-e5-small embeddings of each text as the daemon embeds a submit, trained on all but
one round of crates/kb-core/tests/data and tested on that one (leave one round out), with half of
the search-quality corpora as more benign texts and the other half as a false-positive check.
An experiment for issue 14, not used by the daemon: on held-out round 4, written by someone who
had seen neither the detector nor the other rounds, it held 40% of attacks and flagged 8.3% of
benign notes (threshold 0.5), no better than the structural detector (34% / 8.3%).

usage: tools/injection-by-meaning.py [MODEL_DIR]   (default .cache/models/multilingual-e5-small-onnx)
needs: python3 -m pip install tokenizers numpy onnxruntime==1.31.1 (from PyPI)
"""
import json
import pathlib
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODEL = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / ".cache/models/multilingual-e5-small-onnx"
DATA = ROOT / "crates/kb-core/tests/data"
ROUNDS = {
    "first": ("injection_attacks", "injection_benign"),
    "held-out 1": ("injection_heldout_attacks", "injection_heldout_benign"),
    "held-out 2": ("injection_heldout2_attacks", "injection_heldout2_benign"),
    "held-out 3": ("injection_heldout3_attacks", "injection_heldout3_benign"),
    "held-out 4": ("injection_heldout4_attacks", "injection_heldout4_benign"),
}
# As the daemon embeds a submitted experience: its passage prefix, then task, resource and result
# (the sets' texts go in the result, as in crates/kb-core/tests/gate_sets.rs).
PREFIX = "passage: note\ngate sets\n"
CORPORA = [
    ROOT / "crates/kb-bench/data/english-experiences/corpus.jsonl",
    ROOT / "crates/kb-bench/data/cmrc-trial-chunks/corpus.jsonl",
    DATA / "redaction_benign.jsonl",
]


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    keys = ["task", "resource", "result", "text", "content"]
    return ["\n".join(row[key] for key in keys if isinstance(row.get(key), str)) for row in rows]


def embedder():
    tokenizer = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(MODEL / "model.onnx"), options)
    inputs = [item.name for item in session.get_inputs()]

    def embed(texts):
        out = []
        for start in range(0, len(texts), 16):
            encoded = tokenizer.encode_batch([PREFIX + text for text in texts[start : start + 16]])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            vectors = (hidden * weights).sum(1) / weights.sum(1)
            out.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
        return np.concatenate(out)

    return embed


def train(x, y, l2=1e-3, epochs=3000, rate=0.5):
    w, b = np.zeros(x.shape[1]), 0.0
    for _ in range(epochs):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        w -= rate * (x.T @ (p - y) / len(y) + l2 * w)
        b -= rate * (p - y).mean()
    return w, b


def main():
    embed = embedder()
    sets = {name: (embed(load(DATA / f"{a}.jsonl")), embed(load(DATA / f"{b}.jsonl"))) for name, (a, b) in ROUNDS.items()}
    corpus = embed([text for path in CORPORA for text in load(path)])
    order = np.random.default_rng(0).permutation(len(corpus))
    corpus_train, corpus_test = corpus[order[: len(corpus) // 2]], corpus[order[len(corpus) // 2 :]]
    scale = 20.0
    for threshold in (0.5, 0.7, 0.85):
        cells = []
        for test in ROUNDS:
            attacks = np.concatenate([sets[name][0] for name in ROUNDS if name != test])
            benign = np.concatenate([sets[name][1] for name in ROUNDS if name != test] + [corpus_train])
            x = np.concatenate([attacks, benign]) * scale
            y = np.concatenate([np.ones(len(attacks)), np.zeros(len(benign))])
            w, b = train(x, y)
            prob = lambda v: 1 / (1 + np.exp(-(v * scale @ w + b)))
            cells.append(
                f"{test}: held {np.mean(prob(sets[test][0]) > threshold):.1%}, "
                f"flagged {np.mean(prob(sets[test][1]) > threshold):.1%}, corpus {np.mean(prob(corpus_test) > threshold):.1%}"
            )
        print(f"threshold {threshold}: " + " | ".join(cells))


if __name__ == "__main__":
    main()
