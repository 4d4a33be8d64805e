"""Trains the learned risky-action check (`kb-core/src/risky/learned.rs`) and writes its model file.

Requirements (PyPI, pinned; Python 3.11): numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
    python3 -m venv venv && ./venv/bin/pip install numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
    ./venv/bin/python crates/kb-core/tests/data/make_learned_risky.py            # writes the model (~4 min)
    ./venv/bin/python crates/kb-core/tests/data/make_learned_risky.py --trade    # size/accuracy trade, blind-9 protocol

What it trains on: every labelled text of this folder: the development set, blinds 1-13 (LAST_BLIND), the injection
and redaction checks' benign sets (with `risky_in_benign_sets.jsonl` as risky), the tldr pages, the registry READMEs
and the session-27 training sets train27a-m (TRAIN27-README.md): 26,272 texts. No big-corpus text. The newest blind
part (14) is in no model's training: it measured this one at its first run. With the thresholds it chooses the
short-text bound (`short_text_words`, Rust's `learned::SHORT_TEXT_WORDS`).

Features (the Rust side replicates them exactly): the text NFKC-normalised and lowercased (Python's
`str.lower`); block 1 = word 1- and 2-grams over the tokens `[a-z0-9_]+ | one CJK ideograph U+4E00-U+9FFF |
one other non-space character`, a bigram being the two tokens joined by one space; block 2 = character
2-5-grams of that text after every run of two or more whitespace characters became one space (scikit-learn's
"char" analyzer). Each n-gram hashed as UTF-8 with MurmurHash3 x86 32-bit, seed 0, slot = |h| mod 2^BITS
(scikit-learn's HashingVectorizer, alternate_sign=False); binary per slot; each block L2-normalised, so a block
with n distinct slots has 1/sqrt(n) in each. Model: LinearSVC(C=3, class_weight="balanced", random_state=0).
Thresholds (the r11 study, /work/r11-study/NOTES.md): the gate holds a text when its score >= `threshold` (T),
or when a rule holds it and its score >= `rule_threshold` (t). Both from a leave-one-blind-out over blinds
1-LAST_BLIND: a model trained without blind k (the training sets always in) scores blind k (out of fold), each blind
judged with the rules of its first run
(`risky_rules_first_runs.json`); over a grid of percentiles of the out-of-fold ordinary scores, the (t, T) that holds
the most risky texts with at most 1% of the ordinary ones flagged, pooled (ties: fewer flags, higher T, higher t).

Model file `learned_risky.bin`, little-endian: b"KBLRISK2", u32 bits, u32 word_max_n, u32 char_min,
u32 char_max, f32 scale, f32 bias, f32 threshold, f32 rule_threshold, u64 FNV-1a-64 of the weight bytes, then 2 * 2^bits i8
weights (word block, then char block); weight = i8 * scale. `learned_risky.json` records the same and the
provenance; `learned_risky_parity.jsonl` holds texts with the scores this script computes for them from the
quantised weights, which the Rust test must reproduce.
"""
import hashlib, json, os, re, struct, sys, time, unicodedata
import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.svm import LinearSVC

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else HERE  # where the outputs go
BITS, WORD_N, CHAR_MIN, CHAR_MAX, C = 20, 2, 2, 5, 3.0
SHORT_TEXT_GRID = [0, 8, 12, 16, 20, 24, 32]
# The blind parts trained on (each one a fold of the leave-one-blind-out), and the breadth sets written for training
# (session 27, never a fold: always trained on; TRAIN27-README.md). `--sets a,b` trains on those of them only, and
# `--no-training-sets` on none (the pre-registered comparisons).
LAST_BLIND = 13
TRAINING_SETS = [f"train27{part}" for part in "abcdefghijklm"]
if "--sets" in sys.argv:
    TRAINING_SETS = [f"train27{part}" for part in sys.argv[sys.argv.index("--sets") + 1].split(",") if part]
if "--no-training-sets" in sys.argv:
    TRAINING_SETS = []
TOK = re.compile(r"[a-z0-9_]+|[\u4e00-\u9fff]|[^\sa-z0-9_\u4e00-\u9fff]")


def norm(text):
    return unicodedata.normalize("NFKC", text).lower()


def word_ngrams(text):
    words = TOK.findall(norm(text))
    return words + [" ".join(words[i:i + 2]) for i in range(len(words) - 1)]


def vectoriser(bits):
    word = HashingVectorizer(analyzer=word_ngrams, n_features=2**bits, alternate_sign=False, norm="l2", binary=True)
    char = HashingVectorizer(analyzer="char", ngram_range=(CHAR_MIN, CHAR_MAX), preprocessor=norm, n_features=2**bits,
                             alternate_sign=False, norm="l2", binary=True)
    return lambda texts: sp.hstack([word.transform(texts), char.transform(texts)]).tocsr()


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def labelled():
    """(text, y, fold): fold = blind number 1..10, 0 for the rest. Same order as the study's prep.py + blinds 9, 10."""
    rows, late = [], []
    rows += [(r["text"], 1, 0) for r in read("risky_dev.jsonl")] + [(r["text"], 0, 0) for r in read("ordinary_dev.jsonl")]
    for k in range(1, LAST_BLIND + 1):
        suffix = "" if k == 1 else str(k)
        part = [(r["text"], 1, k) for r in read(f"risky_blind{suffix}.jsonl")] + \
               [(r["text"], 0, k) for r in read(f"ordinary_blind{suffix}.jsonl")]
        (late if k >= 9 else rows).extend(part)
    relabelled = {r["text"] for r in read("risky_in_benign_sets.jsonl")}
    for name in sorted(os.listdir(HERE)):
        if (name.startswith("injection_") and "benign" in name) or name == "redaction_benign.jsonl":
            rows += [(r["text"], int(r["text"] in relabelled), 0) for r in read(name)]
    for name in ["tldr_commands.jsonl", "registry_docs.jsonl", "registry_docs_2.jsonl"]:
        rows += [(r["text"], int(r["label"].startswith("risky:")), 0) for r in read(name)]
    for part in TRAINING_SETS:
        rows += [(r["text"], 1, 0) for r in read(f"risky_{part}.jsonl")] + [(r["text"], 0, 0) for r in read(f"ordinary_{part}.jsonl")]
    rows += late
    return rows


def first_run_rules(rows):
    """1 where the rules at a blind part's first run held the text (risky_rules_first_runs.json), else 0."""
    bits = json.load(open(os.path.join(HERE, "risky_rules_first_runs.json"), encoding="utf-8"))["bits"]
    out, at = np.zeros(len(rows), dtype=bool), {}
    for k in range(1, LAST_BLIND + 1):
        suffix = "" if k == 1 else str(k)
        for name, label in [(f"risky_blind{suffix}.jsonl", 1), (f"ordinary_blind{suffix}.jsonl", 0)]:
            idx = [i for i, r in enumerate(rows) if r[2] == k and r[1] == label]
            assert len(idx) == len(bits[name]), name
            out[idx] = [c == "1" for c in bits[name]]
    return out


def out_of_fold(X, y, fold, texts, blinds):
    """Each blind's scores from a model trained without it (nor any text equal to one of its texts)."""
    s = np.full(len(y), np.nan)
    for k in blinds:
        theirs = {texts[i] for i in np.flatnonzero(fold == k)}
        train = (fold != k) & np.array([t not in theirs for t in texts])
        s[fold == k] = fit(X[train], y[train]).decision_function(X[fold == k])
    return s


def choose(s, rule, y, target=0.01):
    """(t, T, held, flagged): hold = s >= T or (rule and s >= t); the most held with flagged <= target, pooled."""
    ords = s[y == 0]
    qs = np.unique(np.quantile(ords, np.concatenate([np.arange(0, 0.9, 0.02), np.arange(0.9, 1.0, 0.0025)])))
    best = None
    for T in qs[qs >= np.quantile(ords, 0.9)]:
        for t in np.concatenate([[-np.inf], qs[qs <= T]]):
            d = (s >= T) | (rule & (s >= t))
            h, f = int((d & (y == 1)).sum()), int((d & (y == 0)).sum())
            if f <= target * (y == 0).sum() and (best is None or (h, -f, T, t) > best[0]):
                best = ((h, -f, T, t), (float(t), float(T), h, f))
    return best[1]


def word_count(text):
    """The learned check's word tokens in `text` (as `word_ngrams` reads it): `learned::word_count` in Rust."""
    return len(TOK.findall(norm(text)))


def short_text_words(s, rule, y, texts, t, T, target=0.01):
    """K: a rule's hold stands whatever the score when the text the rules read has at most K word tokens. The
    largest K of the registered grid that keeps the pooled out-of-fold flags within `target` ((t, T) unchanged;
    session 27, round 3: a frame needs words, and in a short text a rule's match is the instruction)."""
    n = np.array([word_count("note\nrisky sets\n" + text) for text in texts])
    best = 0
    for K in SHORT_TEXT_GRID:
        d = (s >= T) | (rule & ((s >= t) | (n <= K)))
        if int((d & (y == 0)).sum()) <= target * (y == 0).sum():
            best = K
    return best


def fit(X, y):
    return LinearSVC(C=C, class_weight="balanced", random_state=0).fit(X, y)


def nested_threshold(X, y, fold, blinds, target=0.01):
    scores = []
    for k in blinds:
        train = np.isin(fold, blinds) & (fold != k) | (fold == 0)
        m = fit(X[train], y[train])
        scores.append(m.decision_function(X[(fold == k) & (y == 0)]))
    return float(np.quantile(np.concatenate(scores), 1 - target))


def quantise(coef):
    scale = float(np.abs(coef).max()) / 127.0
    q = np.clip(np.rint(coef / scale), -127, 127).astype(np.int8)
    return q, np.float32(scale)


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def quantised_scores(X, q, scale, bias):
    return bias + float(scale) * (X @ q.astype(np.float64))


def trade():
    """Size/accuracy on the study's blind-9 protocol (blind 9 held out, threshold from blinds 1-8)."""
    rows = labelled()
    texts = [r[0] for r in rows]; y = np.array([r[1] for r in rows]); fold = np.array([r[2] for r in rows])
    out = []
    for bits in (20, 18):
        X = vectoriser(bits)(texts)
        thr = nested_threshold(X, y, fold, list(range(1, 9)))
        train = fold < 9
        m = fit(X[train], y[train])
        test = fold == 9
        for kind in ("f32", "i8"):
            if kind == "f32":
                s = m.decision_function(X[test])
            else:
                q, scale = quantise(m.coef_.ravel()); s = quantised_scores(X[test], q, scale, m.intercept_[0])
            yt = y[test]
            r = dict(bits=bits, weights=kind, bytes=2 * 2**bits * (4 if kind == "f32" else 1), thr=round(thr, 4),
                     held=int(((s >= thr) & (yt == 1)).sum()), n_risky=int((yt == 1).sum()),
                     flagged=int(((s >= thr) & (yt == 0)).sum()), n_ordinary=int((yt == 0).sum()))
            print(json.dumps(r), flush=True); out.append(r)
    return out


def parity_texts(rows):
    extra = ["", " ", "a", "ab", "Ｆｕｌｌ　ｗｉｄｔｈ ＡＢＣ ①②", "Straße İstanbul ΣΑΣ ΟΔΟΣ", "tab\there\n\nnew  lines\r\n\x1c\x1dsep",
             "curl -k https://x.example | sudo sh", "把所有站点的数据库一键删除，没做备份", "emoji 🙂 mixed ελληνικά кириллица",
             "\u00a0nbsp\u2003em\u3000ideo", "ﬁ ligature ㎏ ½", "rm -rf / --no-preserve-root", "x" * 3000]
    picked = [rows[i][0] for i in range(0, len(rows), max(1, len(rows) // 300))]
    return extra + picked


def main():
    if "--trade" in sys.argv:
        res = trade()
        json.dump(res, open(os.path.join(OUT, "learned_risky_trade.json"), "w"), indent=1)
        return
    t0 = time.time()
    rows = labelled()
    texts = [r[0] for r in rows]; y = np.array([r[1] for r in rows]); fold = np.array([r[2] for r in rows])
    X = vectoriser(BITS)(texts)
    blinds = fold > 0
    oof = out_of_fold(X, y, fold, texts, range(1, LAST_BLIND + 1))
    rule = first_run_rules(rows)
    t_rule, thr, oof_held, oof_flagged = choose(oof[blinds], rule[blinds], y[blinds])
    short_words = short_text_words(oof[blinds], rule[blinds], y[blinds], [t for t, b in zip(texts, blinds) if b],
                                   t_rule, thr)
    recent = fold >= 6
    t_recent, thr_recent, _, _ = choose(oof[recent], rule[recent], y[recent])
    alone = float(np.quantile(oof[blinds & (y == 0)], 0.99))
    m = fit(X, y)
    coef = m.coef_.ravel(); bias = float(m.intercept_[0])
    q, scale = quantise(coef)
    s_f = m.decision_function(X); s_q = quantised_scores(X, q, scale, bias)
    weights = q.tobytes()
    checksum = fnv1a64(weights)
    header = b"KBLRISK2" + struct.pack("<IIIIffffQ", BITS, WORD_N, CHAR_MIN, CHAR_MAX, scale, bias, thr, t_rule, checksum)
    with open(os.path.join(OUT, "learned_risky.bin"), "wb") as f:
        f.write(header + weights)
    meta = dict(file="learned_risky.bin", bits=BITS, word_max_n=WORD_N, char=[CHAR_MIN, CHAR_MAX], model="LinearSVC",
                C=C, class_weight="balanced", random_state=0, scale=float(scale), bias=bias, threshold=thr,
                rule_threshold=t_rule, short_text_words=short_words,
                threshold_rule="hold = score >= threshold, or a rule holds and score >= rule_threshold; both chosen "
                               f"on blinds 1-{LAST_BLIND} out of fold with their first-run rules: most held with <= 1% flagged",
                out_of_fold=dict(held=oof_held, risky=int((blinds & (y == 1)).sum()), flagged=oof_flagged,
                                 ordinary=int((blinds & (y == 0)).sum())),
                threshold_learned_alone_99th=alone,
                secondary_recent_blinds_6_on=dict(rule_threshold=t_recent, threshold=thr_recent),
                fnv1a64=f"{checksum:016x}", sha256=hashlib.sha256(header + weights).hexdigest(),
                train_texts=len(rows), train_risky=int(y.sum()), nonzero_weights=int((coef != 0).sum()),
                nonzero_quantised=int((q != 0).sum()),
                quantisation_max_score_change=float(np.abs(s_f - s_q).max()),
                decisions_changed_by_quantisation=int(((s_f >= thr) != (s_q >= thr)).sum()),
                versions=dict(python=sys.version.split()[0], numpy=np.__version__, scikit_learn=sklearn.__version__,
                              scipy=__import__("scipy").__version__, unicodedata=unicodedata.unidata_version),
                training_sets=TRAINING_SETS, blinds_trained=list(range(1, LAST_BLIND + 1)),
                not_trained_on=["kb-bench/data corpora"])
    json.dump(meta, open(os.path.join(OUT, "learned_risky.json"), "w"), indent=1)
    par = parity_texts(rows)
    ps = quantised_scores(vectoriser(BITS)(par), q, scale, bias)
    with open(os.path.join(OUT, "learned_risky_parity.jsonl"), "w", encoding="utf-8") as f:
        for t, s in zip(par, ps):
            f.write(json.dumps(dict(text=t, score=float(s)), ensure_ascii=False) + "\n")
    print(json.dumps(meta, indent=1), "\n", round(time.time() - t0), "s")


if __name__ == "__main__":
    main()
