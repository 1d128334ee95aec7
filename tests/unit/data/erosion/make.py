"""Write the erosion fixture: a team's small KB, 20 topics of 2 questions each (40), whose retriever
(`erosion_retriever.py`, word overlap, ties by chunk id) ranks each topic's gold chunk 1st (topics
t01-t09), 3rd (t10-t19: two distractors share more words with the questions) or 4th (t20).

    python tests/unit/data/erosion/make.py      # rewrites chunks.jsonl and evalset.jsonl here

Each week the test adds a duplicate of one more 1st-ranked gold chunk (`copy-t01`, ...): equal text,
an id that sorts first, so the gold chunk falls to 2nd on its 2 questions (ndcg@5 1 -> 0.6309, mrr@5
1 -> 0.5). Against the approved bar, week w has 2w questions down and none up: the exact one-sided
sign-flip p is 2^-2w (0.25, 0.0625, 0.0156, ...), while each week's own change alone stays at 0.25.
The ranks are chosen so that the mean of the stored 6-digit mrr@5 values (0.629166) is below the
mean of the unrounded ones (0.629167): the week-1 shape of issue 40, item 2.
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
RANKS = [1] * 9 + [3] * 10 + [4]
"""The gold chunk's rank per topic at week 0."""


def write() -> None:
    chunks: list[dict[str, str]] = []
    questions: list[dict[str, object]] = []
    for number, rank in enumerate(RANKS, start=1):
        topic = f"t{number:02d}"
        chunks.append({"doc": f"{topic}.md", "id": f"kb-{topic}", "text": f"{topic}a {topic}gold"})
        chunks += [{"doc": f"{topic}.md", "id": f"kb-{topic}-d{d}", "text": f"{topic}a {topic}q1 {topic}q2 {topic}d{d}"}
                   for d in range(1, rank)]
        questions += [{"id": f"{topic}-q{j}", "query": f"{topic}a {topic}q{j}", "relevant": {f"kb-{topic}": 1},
                       "tags": ["faq"]} for j in (1, 2)]
    for name, rows in (("chunks.jsonl", chunks), ("evalset.jsonl", questions)):
        (HERE / name).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


if __name__ == "__main__":
    write()
