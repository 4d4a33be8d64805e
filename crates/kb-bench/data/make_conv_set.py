#!/usr/bin/env python3
"""Builds the conv-en retrieval set: memory of past chit-chat conversations.

What data
    The BYU Perception, Control & Cognition lab's "Chit-Chat Challenge" corpus: 7,168 typed,
    open-domain conversations between pairs of real people (BYU students and others, April to
    November 2018), each started from a prompt such as "Who is your modern-day hero?".
    Participants are identified by a stable random UUID, so the same person appears in several
    conversations: a many-session memory of who said what.

Where it came from, version, licence
    PyPI package `chitchat-dataset` 0.9.0 (the newest), which ships the whole corpus as
    `chitchat_dataset/dataset.json` inside its wheel:

        pip download --no-deps -d /tmp/conv chitchat-dataset==0.9.0
        # chitchat_dataset-0.9.0-py3-none-any.whl,
        # sha256 7bf89f36645e2d5ec87d53370c8e851b5a688479c7beb7079cb4c87fc5acea3e

    Licence: MIT, "Copyright (c) 2019 Perception, Control and Cognition Lab" (the LICENSE file in
    the wheel's dist-info; upstream github.com/BYU-PCCL/chitchat-dataset). CONV-README.md beside
    this file repeats the licence text.

usage
    python3 make_conv_set.py chitchat_dataset-0.9.0-py3-none-any.whl
    (the wheel or the extracted dataset.json). Writes conv-en/corpus.jsonl and
    conv-en/queries.jsonl beside this file. Python 3 standard library only; deterministic: the
    same input gives byte-identical output (seeded sampling, sorted iteration).

Corpus: one document per dialogue turn
    A turn is the run of consecutive messages one participant typed before the other answered
    (the dataset already groups them so); its messages are joined with a space and prefixed with
    the speaker: "Dashiell: lol i live in georgia where iran hot and humid and rarely snows".
    The dataset has no names, only UUIDs, so every participant gets a pseudonym from NAMES
    below (seeded; one name per person in the set; names chosen not to be ordinary English
    words). Kept are conversations between exactly two people with 12 to 60 turns and no turn
    over 1,000 characters.
    Conversations are chosen so that people have several sessions: the people with at least 3
    such conversations are shuffled (seed), and each in turn adds up to 5 of their
    conversations (seeded choice), skipping any that would take the corpus past TARGET_TURNS,
    until it is within 12 turns of it. Every turn of a chosen conversation is kept, except a
    turn whose text (speaker included, lowercased, spaces collapsed) is already in the corpus
    (the same person's "hi!" in another session), so that no two documents are identical.
    Ids are "s<session>-t<turn>", sessions numbered by start time; a dropped turn leaves a gap
    in the numbering.

Questions: a question asked in the conversation, turned into a question about the answerer
    No LLM; every step is a rule in this file. Where participant A ends a turn with a question
    to B ("Where do you live?") and B's next turn answers it, the question becomes a
    third-person question about B ("Where does Dashiell live?") and the relevant document is
    B's answer turn ("Dashiell: lol i live in georgia where iran hot and humid and rarely
    snows"): "find where Dashiell told us that".
    The rewrite: take the last clause of A's turn that ends in "?" and addresses B ("you",
    "your", "u", "ur", "you're", ...), drop leading interjections ("wow cool how did you..."),
    require it to start with a question word or an auxiliary, then map B's second person to
    B's name for the first mention and they/them/their after it ("are you" -> "is B", "do you"
    -> "does B", "your" -> "B's", "you like" -> "B likes"), and A's "I", "me", "my" to A's name.
    Skipped are questions about a group ("we", "us", "you guys"), questions with no content
    word besides the names (greetings, "what about you?"), and answers that are shorter than 4
    words, have fewer than 2 content words, or are only questions. Identical questions (the
    same thing asked of the same person in several sessions) would be merged, every answer
    turn relevant (none happen to be in this sample). At most MAX_PER_SESSION questions per
    session are kept (seeded), then MAX_QUERIES at most overall (seeded), in id order.

Check
    After writing, the script prints plain BM25's Recall@5 and MRR@10 on the set (bm25_check):
    a sanity check that the set is neither trivial nor impossible.

Known weaknesses (see CONV-README.md): the answer is whatever B typed next, which now and
    then answers an earlier message or dodges the question (in a sample of 50, about 8 in 10
    relevant turns plainly answer); the question's wording comes from A's turn, which sits in
    the corpus right before the answer (a hard distractor: it has the words, not the fact);
    the grammar of the rewrite is approximate ("B likes" for "you like", "B" for "you" as
    object or subject alike).
"""
import hashlib
import json
import pathlib
import random
import re
import sys
import zipfile
from collections import Counter, defaultdict

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "conv-en"
SEED = 20181117  # the last day of the corpus; any fixed number would do
TARGET_TURNS = 6_000
MIN_TURNS, MAX_TURNS, MAX_TURN_CHARS = 12, 60, 1_000
MIN_SESSIONS, SESSIONS_PER_PERSON = 3, 5
MAX_PER_SESSION, MAX_QUERIES = 12, 1_200
WHEEL_SHA256 = "7bf89f36645e2d5ec87d53370c8e851b5a688479c7beb7079cb4c87fc5acea3e"

# Pseudonyms: distinct given names that are not ordinary English words (no "Will", "Grace").
NAMES = """
Aaliyah Abigail Adrian Aiden Alana Alexis Alvaro Amara Anders Anika Ansel Anton Arjun Arlo
Astrid Aurelia Axel Beatrix Benedikt Bjorn Blaise Bodhi Brennan Bryony Caius Calla Callum
Camille Caspian Cassius Cedric Celeste Cillian Clementine Cordelia Corwin Cosima Dagny Dalia
Damaris Darian Delphine Demetri Desmond Dmitri Dorian Eamon Eero Elio Elodie Emeric Emrys
Enzo Esme Evander Ezra Fabian Fenna Finnian Florian Freya Gideon Gisela Greer Gunnar Hadley
Hakon Halle Hamish Henrik Hollis Idris Ignatius Ilse Imogen Ingrid Isolde Ivo Jalen Jarrah
Jasper Jorah Josefine Jovan Judith Kaia Kalani Kasimir Keira Kenji Kieran Kiri Klaus Lachlan
Leander Leif Lenora Linnea Lorcan Lucian Ludovic Lysander Mabel Magnus Maren Marisol Matteo
Maximilian Meriel Milo Mireille Mirela Nadia Niamh Nikolai Noor Odessa Oisin Olwen Orla Osric
Otto Paloma Perrin Petra Quentin Quinlan Rafferty Ragnar Ramona Renata Rhiannon Rohan Rowan
Rufus Saoirse Sebastian Selene Seraphina Signe Silas Solveig Soren Stellan Sunniva Tamsin
Tarquin Teodor Thaddeus Thea Tobias Tove Ulla Ulric Valentina Vesna Viggo Vivienne Wilhelmina
Wenzel Xanthe Yannick Yara Ysolde Zaira Zeno Zofia Agnieszka Aldous Alessia Ambrose Annika
Aoife Aram Ariadne Augustin Auberon Bastian Beatriz Briony Caoimhe Casimir Catalina Cecily
Cormac Dashiell Delia Dominika Eilidh Elspeth Emilio Estelle Evadne Fenella Filippa Fintan
Gaspard Genevieve Giulia Hartley Helga Hugo Ilaria Isadora Jonah Katarina Kaspar Lavinia
Leonie Lisette Lorelei Lucasta Malachi Marisa Mathilde Mattias Minerva Morwenna Nerys
Octavia Olivier Ottilie Priya Radomir Rosalind Sabine Sandor Severin Sigrid Sunita Svea
Tancredi Thora Tiberius Ursula Valeria Wendell Wolfram Xavier Yusuf Zenobia Zoltan
""".split()

QUESTION_START = set(
    "what where when why how who whom whose which do does did are is was were have has had "
    "can could would will should shall may might wanna".split()
)
INTERJECTIONS = set(
    "oh ohh ooh wow woah whoa cool nice nicee awesome great so and but well ok okay k haha "
    "hahaha lol lmao yeah yea yeah! yes no nope hey hi hello hmm hm really interesting sweet "
    "same true ah aw aww man dude alright sure also then anyway anyways btw gotcha right "
    "totally oops omg ha good fun neat wait hah huh".split()
)
# Words that carry no topic in a chit-chat question.
STOP = set(
    """a an the and or but if of to in on at by for with from up down out over about into
    than then so as that this these those there here it its it's is are was were be been being
    am do does did doing done have has had having can could would will should shall may might
    must what where when why how who whom whose which not no yes any some much many more most
    very really just also too ever even still all each every other such own same kind sort
    type lot lots thing things something anything stuff way like get got go going gone went
    think thinking thought feel feeling know knew want wanted say said tell told make made
    doing today tonight now day right well good okay ok mean much one ones else you your
    yourself u ur wanna gonna
    """.split()
)
AUX_YOU = {  # "<aux> you" -> "<aux'> B"
    "are": "is", "were": "was", "was": "was", "have": "has", "do": "does", "don't": "doesn't",
    "dont": "doesn't", "did": "did", "didn't": "didn't", "didnt": "didn't", "can": "can",
    "could": "could", "would": "would", "will": "will", "should": "should", "had": "had",
    "aren't": "isn't", "arent": "isn't", "haven't": "hasn't", "havent": "hasn't",
    "can't": "can't", "cant": "can't", "wouldn't": "wouldn't", "won't": "won't", "may": "may",
    "might": "might", "shall": "shall",
}
YOU_VERB = {  # "you <verb>" -> "B <verb'>" for verbs that change
    "are": "is", "am": "is", "were": "was", "have": "has", "do": "does", "don't": "doesn't",
    "dont": "doesn't", "aren't": "isn't", "haven't": "hasn't",
}
KEEP_AFTER_SUBJECT = set(  # modal, past or otherwise unchanged after a third-person subject
    """would could should will can might may must did didn't had was wasn't got went said
    thought felt knew made took came saw ate left grew became began chose drove flew found
    gave heard held kept lost met paid ran read sang sat slept spent stood taught told
    understood won wore wrote bought brought caught fought sought ever never always still
    just really also already usually even only""".split()
)
CONTRACTIONS = {
    "i'm": ["i", "am"], "im": ["i", "am"], "i've": ["i", "have"], "ive": ["i", "have"],
    "i'd": ["i", "would"], "i'll": ["i", "will"],
    "you're": ["you", "are"], "youre": ["you", "are"], "you've": ["you", "have"],
    "youve": ["you", "have"], "you'd": ["you", "would"], "you'll": ["you", "will"],
    "youll": ["you", "will"], "u": ["you"], "ya": ["you"], "ur": ["your"],
    "yours": ["your"], "yourself": ["you"], "yourselves": ["you"],
}
OBJECT_BEFORE = set(
    """to for with about at from of on in into than like unlike without make made makes let
    help helped tell told give gave get got ask asked see saw take took bring brought keep kept
    call called meet met love hate miss thank teach taught inspire inspired remind reminded
    surprise surprised""".split()
)
SUBJECT_BEFORE = set(
    """what where when why how who whom whose which that if because since before after while
    and or but so until once whether than think thought know guess mean wish hope bet say said
    do does did are is was were have has had can could would will should shall may might must
    don't doesn't didn't""".split()
)
GROUP = set("we we're we've we'll we'd us our ours ourselves let's lets guys y'all yall".split())
NOT_A_VERB = set(
    """a an the and or but if of to in on at by for with from up down out over about into than
    then so as that this these those there here it its all both too ever never always still
    just really also already usually even only not very guys""".split()
)
YOU_FORMS = set(
    "you your yours yourself yourselves u ya ur you're youre you've youve you'd you'll youll"
    .split()
)
TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[^\sa-z0-9]", re.I)


def read_input(path, wheel_sha256, member):
    """The bytes of `member` in the wheel at `path` (warning when the wheel is not the one
    expected), or of the file at `path` itself. make_lme_set.py uses it too."""
    path = pathlib.Path(path)
    if path.suffix == ".whl":
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != wheel_sha256:
            print(f"warning: {path.name} sha256 {digest}, expected {wheel_sha256}", file=sys.stderr)
        with zipfile.ZipFile(path) as wheel:
            return wheel.read(member)  # this member only
    return path.read_bytes()


def load(path):
    return json.loads(read_input(path, WHEEL_SHA256, "chitchat_dataset/dataset.json"))


def clean(text):
    return " ".join(text.replace("’", "'").split())


def turns_of(conversation):
    """[(sender, [message text, ...]), ...] with empty messages dropped."""
    out = []
    for turn in conversation.get("messages", []):
        texts = [clean(m.get("text", "")) for m in turn]
        texts = [t for t in texts if t]
        if texts:
            out.append((turn[0]["sender"], texts))
    return out


def eligible(conversation):
    turns = turns_of(conversation)
    senders = {s for s, _ in turns}
    if len(senders) != 2 or not MIN_TURNS <= len(turns) <= MAX_TURNS:
        return False
    if any(a == b for (a, _), (b, _) in zip(turns, turns[1:])):
        return False
    return all(len(" ".join(t)) <= MAX_TURN_CHARS for _, t in turns)


def choose_sessions(data, rng):
    ok = sorted(k for k, c in data.items() if eligible(c))
    by_person = defaultdict(list)
    for key in ok:
        for person in sorted({s for s, _ in turns_of(data[key])}):
            by_person[person].append(key)
    people = sorted(p for p, keys in by_person.items() if len(keys) >= MIN_SESSIONS)
    rng.shuffle(people)
    chosen, n_turns = set(), 0
    for person in people:
        keys = [k for k in by_person[person] if k not in chosen]
        rng.shuffle(keys)
        for key in keys[:SESSIONS_PER_PERSON]:
            size = len(turns_of(data[key]))
            if n_turns + size <= TARGET_TURNS:
                chosen.add(key)
                n_turns += size
        if n_turns > TARGET_TURNS - MIN_TURNS:
            break
    return sorted(chosen, key=lambda k: (data[k].get("start", ""), k))


def content_words(tokens, ignore=()):
    return [t for t in tokens if len(t) >= 3 and t.isalpha() and t not in STOP and t not in ignore]


def question_clause(messages):
    """The last question of a turn, as lowercase tokens starting with a question word."""
    for i in range(len(messages) - 1, -1, -1):
        if "?" not in messages[i]:
            continue
        text = messages[i]
        if not re.search(r"[a-z]", text.replace("?", ""), re.I) and i > 0:
            text = messages[i - 1] + " " + text  # "was it a welsh corgi" + "?"
        # the last sentence ending in "?", then its last clause that addresses "you"
        head = text[: text.rfind("?")]
        sentence = re.split(r"[.!?]+\s|\.\.+", head)[-1]
        clauses = [c for c in re.split(r"[,;:()]|\s[-–—]+\s|\.\.+", sentence) if c.strip()]
        for clause in reversed(clauses):
            tokens = [t.lower() for t in TOKEN.findall(clause)]
            tokens = [t for t in tokens if re.match(r"[a-z0-9]", t)]
            while tokens and tokens[0] in INTERJECTIONS and tokens[0] not in QUESTION_START:
                tokens = tokens[1:]
            if any(t in YOU_FORMS for t in tokens):
                return tokens if tokens and tokens[0] in QUESTION_START else None
        return None
    return None


def third_person(verb):
    if verb in YOU_VERB:
        return YOU_VERB[verb]
    if verb in KEEP_AFTER_SUBJECT or verb.endswith("ed") or not verb.isalpha():
        return verb
    if re.search(r"(s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


def rewrite(tokens, name, asker):
    """The question about `name` (the one asked) in the third person: the first mention of the
    person asked is the name, later ones are they/them/their; the asker's "I", "me", "my" become
    the asker's name. None when the question speaks of a group ("we", "you guys")."""
    expanded = []
    for t in tokens:
        expanded.extend(CONTRACTIONS.get(t, [t]))
    if any(t in GROUP for t in expanded):
        return None
    out, i, named = [], 0, False

    def person(form):  # form: "subject", "object" or "possessive"
        nonlocal named
        if not named:
            named = True
            return name + "'s" if form == "possessive" else name
        return {"subject": "they", "object": "them", "possessive": "their"}[form]

    while i < len(expanded):
        t = expanded[i]
        nxt = expanded[i + 1] if i + 1 < len(expanded) else None
        prev = out[-1] if out else None
        if t in AUX_YOU and nxt == "you":  # "do you" -> "does B", later "do they"
            who = person("subject")
            out += [AUX_YOU[t] if who == name else t, who]
            i += 2
        elif t in AUX_YOU and nxt == "i":  # "should i" -> "should A", "am i" -> "is A"
            out += [AUX_YOU[t] if t != "am" else "is", asker]
            i += 2
        elif t == "am" and nxt == "i":
            out += ["is", asker]
            i += 2
        elif t == "your":
            out.append(person("possessive"))
            i += 1
        elif t in ("my", "mine"):
            out.append(asker + "'s")
            i += 1
        elif t in ("me", "myself"):
            out.append(asker)
            i += 1
        elif t in ("you", "i"):
            subject = prev is None or prev in SUBJECT_BEFORE
            who = person("subject" if subject else "object") if t == "you" else asker
            if subject and nxt is not None and nxt.isalpha() and nxt not in NOT_A_VERB \
                    and who not in ("they", "them"):
                out += [who, third_person(nxt)]  # "you like" -> "B likes", "i am" -> "A is"
                i += 2
            else:
                out.append(who)
                i += 1
        else:
            out.append(t)
            i += 1
    text = " ".join(out)
    return text[0].upper() + text[1:] + "?"


def bm25_check(corpus, queries, k1=1.2, b=0.75):
    """Recall@5 and MRR@10 of plain BM25 (lowercased alphanumeric tokens, no stemming, no stop
    words), overall ("all") and per group: a sanity check that the set is neither trivial nor
    impossible. make_lme_set.py uses it too."""
    import math

    def toks(text):
        return re.findall(r"[a-z0-9]+", text.lower())

    docs = [toks(d["text"]) for d in corpus]
    ids = [d["id"] for d in corpus]
    avg = sum(map(len, docs)) / len(docs)
    postings = defaultdict(list)
    for i, doc in enumerate(docs):
        for t, n in sorted(Counter(doc).items()):
            postings[t].append((i, n))
    idf = {t: math.log(1 + (len(docs) - len(p) + 0.5) / (len(p) + 0.5)) for t, p in postings.items()}
    totals = defaultdict(lambda: [0.0, 0.0, 0])
    for q in queries:
        scores = defaultdict(float)
        for t in set(toks(q["text"])):
            for i, n in postings.get(t, ()):
                scores[i] += idf[t] * n * (k1 + 1) / (n + k1 * (1 - b + b * len(docs[i]) / avg))
        top = [ids[i] for i, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:10]]
        relevant = set(q["relevant"])
        recall5 = len(relevant & set(top[:5])) / len(relevant)
        mrr10 = next((1 / (r + 1) for r, d in enumerate(top) if d in relevant), 0.0)
        for group in {"all", q.get("group", "all")}:
            totals[group][0] += recall5
            totals[group][1] += mrr10
            totals[group][2] += 1
    return {g: (r / n, m / n, n) for g, (r, m, n) in totals.items()}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\nusage\n")[1].split("\n\n")[0])
    data = load(sys.argv[1])
    rng = random.Random(SEED)
    sessions = choose_sessions(data, rng)

    people = []
    for key in sessions:
        for sender, _ in turns_of(data[key]):
            if sender not in people:
                people.append(sender)
    names = list(NAMES)
    if len(set(names)) != len(names):
        sys.exit("NAMES has duplicates")
    if len(people) > len(names):
        sys.exit(f"{len(people)} people but only {len(names)} names")
    rng.shuffle(names)
    name_of = dict(zip(people, names))

    corpus, seen_text = [], set()
    turn_rows = []  # per session: [(id or None, sender, messages)]
    for s, key in enumerate(sessions, 1):
        rows = []
        for t, (sender, messages) in enumerate(turns_of(data[key]), 1):
            doc_id = f"s{s:03d}-t{t:02d}"
            text = f"{name_of[sender]}: {' '.join(messages)}"
            norm = " ".join(text.lower().split())
            if norm in seen_text:
                rows.append((None, sender, messages))
                continue
            seen_text.add(norm)
            corpus.append({"id": doc_id, "text": text})
            rows.append((doc_id, sender, messages))
        turn_rows.append(rows)

    lower_names = {n.lower() for n in names}
    by_text = {}  # question text -> {"relevant": [...], "session": s}
    per_session = []
    for s, rows in enumerate(turn_rows, 1):
        found = []
        for (q_id, asker, q_msgs), (a_id, answerer, a_msgs) in zip(rows, rows[1:]):
            if a_id is None or asker == answerer:
                continue
            clause = question_clause(q_msgs)
            if not clause:
                continue
            name = name_of[answerer]
            question = rewrite(clause, name, name_of[asker])
            if not question:
                continue
            q_tokens = [t.lower() for t in TOKEN.findall(question)]
            if not content_words(q_tokens, lower_names | {"they", "them", "their"}):
                continue
            a_tokens = [t.lower() for t in TOKEN.findall(" ".join(a_msgs)) if re.match(r"[a-z0-9]", t, re.I)]
            if len(a_tokens) < 4 or len(content_words(a_tokens)) < 2:
                continue
            if all(m.rstrip().endswith("?") for m in a_msgs):
                continue
            found.append((question, a_id))
        per_session.append(found)

    for s, found in enumerate(per_session, 1):
        found = list(found)
        rng.shuffle(found)
        for question, a_id in found[:MAX_PER_SESSION]:
            key = question.lower()
            entry = by_text.setdefault(key, {"text": question, "relevant": []})
            if a_id not in entry["relevant"]:
                entry["relevant"].append(a_id)

    entries = sorted(by_text.values(), key=lambda e: (e["relevant"][0], e["text"]))
    if len(entries) > MAX_QUERIES:
        entries = sorted(rng.sample(entries, MAX_QUERIES), key=lambda e: (e["relevant"][0], e["text"]))
    queries = []
    used = set()
    for e in entries:
        qid = e["relevant"][0] + "?"
        n = 2
        while qid in used:
            qid = f"{e['relevant'][0]}?{n}"
            n += 1
        used.add(qid)
        queries.append({"id": qid, "text": e["text"], "group": "all", "relevant": sorted(e["relevant"])})

    OUT.mkdir(exist_ok=True)
    with open(OUT / "corpus.jsonl", "w", encoding="utf-8") as f:
        for row in corpus:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(OUT / "queries.jsonl", "w", encoding="utf-8") as f:
        for row in queries:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    multi = sum(1 for q in queries if len(q["relevant"]) > 1)
    sessions_of = defaultdict(int)
    for key in sessions:
        for p in {s for s, _ in turns_of(data[key])}:
            sessions_of[p] += 1
    dropped = sum(1 for rows in turn_rows for r in rows if r[0] is None)
    print(
        f"{len(sessions)} sessions, {len(people)} people "
        f"({sum(1 for v in sessions_of.values() if v >= 2)} in 2+ sessions), "
        f"{len(corpus)} turns ({dropped} repeated turns dropped), "
        f"{len(queries)} questions ({multi} with 2+ relevant turns)"
    )
    recall5, mrr10, _ = bm25_check(corpus, queries)["all"]
    print(f"plain BM25: Recall@5 {recall5:.3f}, MRR@10 {mrr10:.3f}")


if __name__ == "__main__":
    main()
