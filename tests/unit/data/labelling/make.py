"""Write the labelling fixture: an English team's first 59 questions on Syncthing-like docs (issue 42),
the eval sets of its labelling pull request and of variants (a)-(c), and the alternating updates.

    python tests/unit/data/labelling/make.py    # rewrites every file here but this one and the retriever

The KB: 20 docs (19 topics of 3 questions, faq.md of 2), 252 chunks `syncthing-001` .. in doc order.
Each question asks about its doc's subject word ("relay") and 4 words of its own; the 3 no-answer
questions (q20, q40, q59) ask about words no chunk holds. A question's own chunks hold the subject
and some of its words, so `labelling_retriever` (word overlap, ties by chunk id) ranks them above the
doc's other chunks, which hold only the subject. Its profile fixes where its gold lands in the
hybrid's top 5 (hybrid = exact + stem overlap, no boost):

    A   gold (grade 2) 1st, two unjudged chunks 2nd and 3rd           16 questions, ndcg 1
    B   an unjudged chunk holding as many words 1st (by id), gold 2nd     8, ndcg 0.6309
    C   two such chunks first, gold 3rd                                  6, ndcg 0.5
    M2  gold 2 1st, gold 1 4th                                           4, ndcg 0.9243
    M3  gold 2 1st and 2nd, gold 1 4th                                   4, ndcg 0.9816
    M4  gold 2 1st, three gold 1 2nd-4th                                 4, ndcg 1
    MISS  the gold is an faq.md chunk holding one word: never in a top 5 6, ndcg 0
    R   gold (4 of the 5 words) 1st over three chunks holding 3; three   8, ndcg 1
        more hold all 5 as plurals ("relays"): stem matches only

bm25 is `exact` alone (shorter chunks first among equals), vector `stem` alone divided by the root of
the chunk's word count (it prefers short chunks: the doc's two overview chunks, and R's plurals), so
the three top 5s differ and the pool is larger than one retriever's.

The labelling pull request (evalset-labelled.jsonl): what `ragretrieval pool` queues from the base
rankings (every unjudged chunk of any retriever's top 5), graded. On every other answerable question
(28) one queued chunk is relevant, alternately the one the hybrid ranks lowest (outside its top 5 when
only the vector or bm25 found it: the hybrid's values fall) and the one it ranks highest (they rise),
grade 2 when it holds 3 of the question's 4 words, else 1; on the first 2 M2 or M3 questions of the
28 a second one (30 labels). Every other queued chunk (305) is `not_relevant`, as `pool --apply` folds grade 0.

Variants (hybrid options in variants.json, with the measured deltas this script prints):
- (a) `drop`: weight -0.5 on a word only the gold holds, on the first 2 A questions (q01, q04: 1st ->
  2nd): ndcg@5 -0.0132, mrr@5 -0.0179, within the tolerance; then the labelling pull request on top
  (the same eval set: the top 5s hold the same chunks).
- (b) `retune`: exact 1 -> 0.2 (the plurals now beat the gold on the 8 R questions, 1st -> 4th):
  ndcg@5 -0.0813, mrr@5 -0.1071 (8 down, none up), recall@5 unchanged; evalset-retune.jsonl adds
  grade 2 to every other chunk of the retuned hybrid's top 5 on those questions, under which the
  retune looks better (ndcg@5 +0.0451, recall@5 +0.0571).
- (c) `worse`: weight -1 on the gold's 3 words, on the next 3 A questions (q08, q11, q13: 1st -> out,
  every metric 1 -> 0); evalset-removed.jsonl drops those 3 questions.
- alternating: step 1 weighs 2 the gold's own words on 2 C and 2 B questions (q03 q05 q10 q15, to
  1st: ndcg@5 +0.031039, mrr@5 +0.041667, recall unchanged), step 2 weighs -1 the word of a grade-1
  gold of 1 M3 and 2 M4 questions (q09 q12 q28, out of the top 5: recall@5 -0.014881, ndcg@5
  -0.006363), step 3 as step 1 on q18 q22 q26 q33 (+0.031038), step 4 as step 2 on q23 q39 q48; each
  step's options hold the steps before. Step 4 against the base: recall@5 -0.029762 (6 down, none up),
  ndcg@5 +0.049351.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # tests/, for labelling_project

import labelling_project as lp  # noqa: E402

from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset  # noqa: E402
from pytest_ragretrieval.evalset.records import Chunk, Question  # noqa: E402

DOCS = [
    ("getting-started.md", "install", "A R B"), ("devices.md", "device", "A C M2"),
    ("folders.md", "folder", "R A M3"), ("ignoring.md", "ignore", "B A M4"), ("versioning.md", "version", "A R C"),
    ("conflicts.md", "conflict", "M2 A B"), ("relaying.md", "relay", "A - R"), ("discovery.md", "discovery", "C M3 A"),
    ("firewall.md", "firewall", "R B A"), ("gui.md", "gui", "M4 A MISS"), ("security.md", "security", "A R C"),
    ("permissions.md", "permission", "B M2 MISS"), ("android.md", "android", "R A M4"),
    ("config.md", "config", "- C MISS"), ("logging.md", "log", "M3 R B"), ("performance.md", "performance", "A MISS M4"),
    ("upgrading.md", "upgrade", "B B M2"), ("rest-api.md", "api", "C M3 MISS"), ("encryption.md", "encryption", "A A MISS"),
    ("faq.md", "faq", "A -"),
]
"""Each doc, its subject word and its questions' profiles in order (`-`: a no-answer question)."""

VOCABULARY = """
anchor archive attribute backend bandwidth battery beacon binary block bookmark browser buffer cache certificate
channel checksum cipher client clock cluster command compression connection container cookie counter cron daemon
dashboard database deadline default delta desktop digest directory disk docker domain download draft driver editor
email endpoint environment event exit export extension feature field filter flag fork format gateway hash header
heartbeat history home host hostname identity image import index inode inotify interval ipv6 kernel key label laptop
latency launcher layer library limit link listener locale lock login loop mask memory merge message metadata metric
mirror mobile modem module monitor mount mtime namespace network node notice offset option owner packet parent
partition password patch path pattern peer phone pipe platform plugin policy pool port priority probe profile
protocol proxy pull push queue quota rate reboot receiver record recovery redirect registry release remote rename
replica request rescan reset restart restore retry root router rule runtime sandbox scanner schedule schema script
secret sender sequence server service session share shell signal snapshot socket source spinner stamp startup storage
stream subnet symlink system table tablet target task template temp thread throttle ticket timeout timer token
topology tracker transfer trash tray trigger tunnel uptime usage user vault verify viewer volume wallet watcher
webhook widget window worker wrapper zone badge bridge budget cable camera chart clipboard column cursor dialog dock
fabric fiber glyph grid handle harbor icon journal kiosk lane ledger margin marker matrix meter needle orbit panel
pixel portal quorum radar rocket saddle scope sensor shard slice sprite summit tether thumbnail tile toggle tower
valve vector voucher wedge yield zipper
""".split()
"""The questions' own words, 4 a question in order: none ends in `s`, so a plural is only ever a stem match."""

OVERVIEW = ("overview", "reference")
"""Words of each doc's two overview chunks (no question asks for them)."""

FAQ_WORDS = ("common", "answer", "quick")
"""What the faq.md chunks hold besides one word of the question they answer (so they rank below any filler)."""

QUESTION_TEMPLATES = (
    "What does the {s} page say about {a}, {b}, {c} and {d}?",
    "How do {a} and {b} affect {c} {d} in {s}?",
    "Where can I set {a} {b} {c} {d} for {s}?",
)
CHUNK_TEMPLATES = (
    "{S}: {list} work together as described here.",
    "The {s} page explains {list}.",
    "Notes on {s}: {list}, with examples.",
    "When using {s}, check {list} first.",
)

PROFILES: dict[str, list[tuple[str, tuple[int, ...], int]]] = {
    # role, the question's words it holds (0-3) beside the subject, grade (0: unjudged);
    # "D": the subject and all four words as plurals; "faq": an faq.md chunk holding that one word
    "A": [("gold", (0, 1, 2), 2), ("x", (0, 3), 0), ("x", (1,), 0)],
    "B": [("x", (0, 1, 3), 0), ("gold", (0, 1, 2), 2), ("x", (3,), 0)],
    "C": [("x", (0, 1, 3), 0), ("x", (1, 2, 3), 0), ("gold", (0, 1, 2), 2)],
    "M2": [("gold", (0, 1, 2, 3), 2), ("x", (0, 1, 2), 0), ("x", (1, 2), 0), ("gold", (3,), 1)],
    "M3": [("gold", (0, 1, 2), 2), ("gold", (0, 1), 2), ("x", (0, 2), 0), ("gold", (3,), 1)],
    "M4": [("gold", (0, 1, 2), 2), ("gold", (0, 1), 1), ("gold", (0, 2), 1), ("gold", (3,), 1)],
    "MISS": [("x", (0, 1), 0), ("x", (2,), 0), ("faq", (3,), 2)],
    "R": [("gold", (0, 1, 2), 2), ("x", (0, 1), 0), ("x", (0, 2), 0), ("x", (1, 2), 0),
          ("D", (), 0), ("D", (), 0), ("D", (), 0)],
}
"""Each profile's own chunks in id order. Word 3 is held by no gold of A, B, C (1st: the tie of B and C
goes to the unjudged chunks by id) and by nothing but the grade-1 gold of M3 and M4."""

RETRIEVERS: dict[str, dict[str, object]] = {
    "bm25": {"exact": 1.0, "stem": 0.0, "norm": "length"},
    "vector": {"exact": 0.0, "stem": 1.0, "norm": "cosine"},
    "hybrid": {"exact": 1.0, "stem": 1.0},
}


def listed(items: Sequence[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


class Builder:
    """The KB in doc order: chunks, questions, and each answerable question's profile and own words."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.profile: dict[str, str] = {}
        self.own: dict[str, list[str]] = {}
        self.faq: list[tuple[str, str, int]] = []  # (question id, word, grade)

    def chunk(self, doc: str, subject: str, content: Sequence[str]) -> str:
        cid = f"syncthing-{len(self.chunks) + 1:03d}"
        template = CHUNK_TEMPLATES[len(self.chunks) % len(CHUNK_TEMPLATES)]
        text = template.format(S=subject.capitalize(), s=subject, list=listed(list(content)))
        self.chunks.append({"doc": doc, "id": cid, "text": text})
        return cid

    def build(self) -> None:
        words = iter(VOCABULARY)
        number = 0
        for doc, subject, profiles in DOCS:
            for profile in profiles.split():
                number += 1
                qid = f"q{number:02d}"
                own = [next(words) for _ in range(4)]
                self.own[qid] = own
                query = QUESTION_TEMPLATES[number % len(QUESTION_TEMPLATES)].format(
                    s=subject, a=own[0], b=own[1], c=own[2], d=own[3])
                question: dict[str, Any] = {"id": qid, "query": query, "relevant": {}, "tags": [doc.removesuffix(".md")]}
                self.questions.append(question)
                if profile == "-":
                    question["tags"].append("no-answer")
                    continue
                self.profile[qid] = profile
                for role, held, grade in PROFILES[profile]:
                    if role == "faq":
                        self.faq.append((qid, own[held[0]], grade))
                        continue
                    content = [s + "s" for s in (subject, *own)] if role == "D" else [own[i] for i in held]
                    cid = self.chunk(doc, subject if role != "D" else subject + "s", content)
                    if grade:
                        question["relevant"][cid] = grade
            if doc != "faq.md":
                for word in OVERVIEW:
                    self.chunk(doc, subject, [word])
        for qid, word, grade in self.faq:
            cid = self.chunk("faq.md", "faq", [*FAQ_WORDS, word])
            question = next(q for q in self.questions if q["id"] == qid)
            question["relevant"][cid] = grade
        for word in OVERVIEW:
            self.chunk("faq.md", "faq", [word])


def rows_text(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def loaded(rows: Sequence[Mapping[str, Any]], corpus: Sequence[Chunk], name: str) -> tuple[Question, ...]:
    (HERE / name).write_text(rows_text(rows), encoding="utf-8")
    return load_evalset(HERE / name, corpus)


def delta(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    return {label: round(after[label] - before[label], 6) for label in lp.LABELS}


def moved(before: Mapping[str, list[str]], after: Mapping[str, list[str]]) -> list[str]:
    return sorted(qid for qid in before if before[qid] != after[qid])


def pooled(builder: Builder, corpus: Sequence[Chunk], judged: Sequence[Question]) -> list[dict[str, Any]]:
    """The labelling pull request's eval set: every chunk any retriever ranks in its top 5 and the base
    eval set does not judge, graded as the module docstring says, folded in as `pool --apply` folds."""
    tops = {name: lp.rankings(options, judged) for name, options in RETRIEVERS.items()}
    hybrid_depth = {q.id: lp.rank(corpus, q.query, RETRIEVERS["hybrid"], len(corpus)) for q in judged}
    rows = [json.loads(json.dumps(row)) for row in builder.questions]
    labelled = [q.id for q in judged if q.answerable][::2]
    second = [qid for qid in labelled if builder.profile[qid] in ("M2", "M3")][:2]
    texts = {chunk.id: chunk for chunk in corpus}
    for row, question in zip(rows, judged):
        queue = sorted({cid for found in tops.values() for cid in found[question.id]} - set(question.relevance))
        relevant: list[str] = []
        if question.id in labelled:
            order = hybrid_depth[question.id]
            relevant = sorted(queue, key=lambda cid: order.index(cid) if cid in order else len(order))
            lowest = labelled.index(question.id) % 2 == 0
            relevant = (relevant[::-1] if lowest else relevant)[:2 if question.id in second else 1]
        asked = lp.words(question.query)
        for cid in queue:
            if cid in relevant:
                row["relevant"][cid] = 2 if len(asked & lp.words(texts[cid].text)) >= 4 else 1
            else:
                row.setdefault("not_relevant", []).append(cid)
    return rows


def step_options(weights: Mapping[str, float], **changed: object) -> dict[str, object]:
    """The hybrid's options with `changed` and these word weights."""
    options: dict[str, object] = {**RETRIEVERS["hybrid"], **changed}
    if weights:
        options["weights"] = dict(weights)
    return options


def main() -> None:  # noqa: PLR0915
    builder = Builder()
    builder.build()
    assert len(set(VOCABULARY)) == len(VOCABULARY) and not any(w.endswith("s") for w in VOCABULARY)
    assert not set(VOCABULARY) & lp.STOP
    for chunk_row in builder.chunks:
        assert lp.words(chunk_row["text"]), chunk_row
    (HERE / "chunks.jsonl").write_text(rows_text(builder.chunks), encoding="utf-8")
    corpus = load_chunks(HERE / "chunks.jsonl")
    base = loaded(builder.questions, corpus, "evalset.jsonl")
    order = {q.id: q for q in base}
    by_profile: dict[str, list[str]] = {}
    for qid, profile in builder.profile.items():
        by_profile.setdefault(profile, []).append(qid)
    hybrid = lp.rankings(RETRIEVERS["hybrid"], base)
    base_means = lp.means(hybrid, base)
    report: dict[str, Any] = {"retrievers": RETRIEVERS, "variants": {}}
    print("base:", {name: {k: round(v, 4) for k, v in lp.means(lp.rankings(o, base), base).items()}
                    for name, o in RETRIEVERS.items()})

    labelled_rows = pooled(builder, corpus, base)
    labelled = loaded(labelled_rows, corpus, "evalset-labelled.jsonl")
    new_gold = {q.id: sorted(set(q.relevant_ids) - set(order[q.id].relevant_ids)) for q in labelled}
    zeros = sum(len(row.get("not_relevant", [])) for row in labelled_rows)
    report["labelled"] = {
        "questions": sorted(qid for qid, ids in new_gold.items() if ids),
        "relevant": sum(len(ids) for ids in new_gold.values()), "not_relevant": zeros,
        "hybrid_delta": delta(base_means, lp.means(hybrid, labelled)),
    }
    print("labelled:", report["labelled"])

    def weights(qid: str, chosen: Mapping[int, float]) -> dict[str, float]:
        return {builder.own[qid][index]: weight for index, weight in chosen.items()}

    drop_q = by_profile["A"][:2]
    drop = step_options({word: w for q in drop_q for word, w in weights(q, {2: -0.5}).items()})
    after = lp.rankings(drop, base)
    assert moved(hybrid, after) == drop_q
    report["variants"]["drop"] = {"options": drop, "questions": drop_q,
                                  "delta": delta(base_means, lp.means(after, base))}

    retune = step_options({}, exact=0.2)
    after = lp.rankings(retune, base)
    affected = by_profile["R"]
    assert moved(hybrid, after) == affected
    retune_rows = [json.loads(json.dumps(row)) for row in builder.questions]
    for row in retune_rows:
        if row["id"] in affected:
            for cid in after[row["id"]]:
                row["relevant"].setdefault(cid, 2)
    retuned_labels = loaded(retune_rows, corpus, "evalset-retune.jsonl")
    report["variants"]["retune"] = {
        "options": retune, "questions": affected,
        "delta": delta(base_means, lp.means(after, base)),
        "delta_under_new_labels": delta(lp.means(hybrid, retuned_labels), lp.means(after, retuned_labels)),
    }

    worse_q = by_profile["A"][2:5]
    worse = step_options({word: w for q in worse_q for word, w in weights(q, {0: -1.0, 1: -1.0, 2: -1.0}).items()})
    after = lp.rankings(worse, base)
    assert moved(hybrid, after) == worse_q
    loaded([row for row in builder.questions if row["id"] not in worse_q], corpus, "evalset-removed.jsonl")
    report["variants"]["worse"] = {"options": worse, "questions": worse_q,
                                   "delta": delta(base_means, lp.means(after, base))}

    chosen_weights: dict[str, float] = {}
    steps = []
    previous = hybrid
    ups_c, ups_b = iter(by_profile["C"][:4]), iter(by_profile["B"][:4])
    downs_3, downs_4 = iter(by_profile["M3"][:2]), iter(by_profile["M4"][:4])
    for step in range(1, 5):
        if step % 2:
            chosen = [next(ups_c), next(ups_c), next(ups_b), next(ups_b)]
            for qid in chosen:
                chosen_weights.update(weights(qid, {0: 2.0, 2: 2.0} if builder.profile[qid] == "C" else {2: 2.0}))
        else:
            chosen = [next(downs_3), next(downs_4), next(downs_4)]
            for qid in chosen:
                chosen_weights.update(weights(qid, {3: -1.0}))
        options = step_options(chosen_weights)
        after = lp.rankings(options, base)
        assert moved(previous, after) == sorted(chosen), (step, moved(previous, after))
        steps.append({"options": options, "questions": sorted(chosen),
                      "delta": delta(lp.means(previous, base), lp.means(after, base)),
                      "delta_from_base": delta(base_means, lp.means(after, base))})
        previous = after
    report["variants"]["alternating"] = {"steps": steps}
    for name, entry in report["variants"].items():
        print(name, json.dumps(entry if name != "alternating" else
                               [{k: v for k, v in s.items() if k != "options"} for s in entry["steps"]]))
    (HERE / "variants.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
