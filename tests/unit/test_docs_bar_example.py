"""The worked example of the bar's two exams on the Verdicts page (docs/verdicts.md, "The bar"): label work
alone passes under both exams and re-records without --rag-allow-regression; a worse retune hidden behind
new gold fails under the base's exam. The settings, labels and rankings are read from the page; every value,
mean and verdict is recomputed by the judge and must be what the page prints."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from stages import baseline, fingerprint

from pytest_ragretrieval.baseline.exams import BASE, TODAY
from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.values import fmt
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import approved_of
from pytest_ragretrieval.scoring.evaluate import Run, score

PAGE = Path(__file__).resolve().parents[2] / "docs" / "verdicts.md"
START, END = "<!-- bar-example:start -->", "<!-- bar-example:end -->"
NAME = "bm25"
EXAMS = {"the base's": BASE, "today's": TODAY}
"""How the values table names each exam."""
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
NUMBER = re.compile(r"(?<![\w.])-?\d\.\d{4}(?![\d])")


def region() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, f"{PAGE.name} holds the worked example once, marked"
    return text[text.index(START) + len(START):text.index(END)]


def cases() -> dict[str, str]:
    """The example's cases, `(i)` and `(ii)`, each the text from its bold lead to the next."""
    parts = re.split(r"^\*\*\((i+)\)", region(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables in `text`, each as rows of stripped cells, the rule under the header left out."""
    found: list[list[list[str]]] = []
    inside = False
    for line in text.splitlines():
        if not line.startswith("|"):
            inside = False
            continue
        if not re.fullmatch(r"\|( *:?-+:? *\|)+", line):
            row = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if inside:
                found[-1].append(row)
            else:
                found.append([row])
        inside = True
    return found


def fenced(text: str, lang: str) -> list[str]:
    return [body for found, body in FENCE.findall(text) if found == lang]


def prose(text: str) -> str:
    """`text` without its tables and fenced blocks: the sentences around them."""
    return "\n".join(line for line in FENCE.sub("", text).splitlines() if not line.startswith("|"))


def graded(cell: str) -> dict[str, int]:
    """`a:2, d:0` -> {"a": 2, "d": 0}."""
    return {chunk: int(grade) for chunk, grade in (item.split(":") for item in cell.split(", "))}


def ranked(cell: str) -> list[str]:
    return cell.split(", ")


@dataclass(frozen=True)
class Case:
    """One case as its first table gives it: per question, the base's labels and today's, the approved
    ranking and today's."""

    base: dict[str, dict[str, int]]
    labels: dict[str, dict[str, int]]
    approved: dict[str, list[str]]
    today: dict[str, list[str]]

    @classmethod
    def read(cls, table: list[list[str]]) -> Case:
        header, *rows = table
        assert header == ["question", "the base's labels", "today's labels", "approved ranking", "today's ranking"]
        return cls({r[0]: graded(r[1]) for r in rows}, {r[0]: graded(r[2]) for r in rows},
                   {r[0]: ranked(r[3]) for r in rows}, {r[0]: ranked(r[4]) for r in rows})


def config(tmp_path: Path) -> Config:
    """The example's settings, as the page's TOML block gives them, with one bm25 retriever."""
    (shown,) = fenced(region(), "toml")
    table = tomllib.loads(shown)["tool"]["ragretrieval"]
    assert set(table) == {"k", "metrics", "tolerance", "significance", "retrievers"}
    assert table["retrievers"] == {NAME: {"type": "bm25"}}
    text = shown.replace("[tool.ragretrieval]\n", '[tool.ragretrieval]\nchunks = "c.jsonl"\nevalset = "e.jsonl"\n')
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return load_config(None, tmp_path)


def questions(labels: dict[str, dict[str, int]]) -> tuple[Question, ...]:
    """The eval set: each question's query stays the same, so every question stays comparable."""
    return tuple(Question(qid, f"query {qid}", graded) for qid, graded in labels.items())


def judge(cfg: Config, case: Case, update: bool = False) -> Judge:
    """Today's run judged against a baseline recorded under the base's labels with the approved rankings."""
    base, today = questions(case.base), questions(case.labels)
    old = baseline(cfg, {NAME: Run(result=score(NAME, base, case.approved, cfg.metrics))}, fingerprint(cfg, base))
    runs = {NAME: Run(result=score(NAME, today, case.today, cfg.metrics))}
    return Judge(cfg, today, old, fingerprint(cfg, today), runs, update=update, selected=keys(cfg))


def keys(cfg: Config) -> list[ItemKey]:
    return [ItemKey(NAME, "metric", spec.label) for spec in cfg.metrics]


def values_table(cfg: Config, found: Judge) -> list[list[str]]:
    """Per exam, each question's value of the approved ranking and today's, then the means the verdict
    compares, as the page's second table of each case shows them."""
    labels = [spec.label for spec in cfg.metrics]
    rows = [["exam", "question", *(f"{label} {side}" for label in labels for side in ("approved", "today"))]]
    for shown, exam in EXAMS.items():
        side = found.side(NAME, exam)
        assert side is not None, f"no side under {exam}"
        for qid, bar in side.bar.questions.items():
            today = side.today.question(qid)
            assert today is not None
            rows.append([shown, qid, *(fmt(value) for label in labels
                                       for value in (bar.metrics[label], today.values[label]))])
        means = [found.comparison(NAME, label, exam) for label in labels]
        rows.append([shown, "mean", *(fmt(value) for c in means if c is not None for value in (c.baseline, c.value))])
    return rows


def verdict_lines(found: Judge) -> list[str]:
    """Each item's verdict and the line that gives the other exam's (the questions that dropped left out)."""
    lines = []
    for key in keys(found.config):
        outcome = found.outcome(key)
        lines += [outcome.summary, *(f"  {line}" for line in outcome.details if line.startswith("under "))]
    return lines


@pytest.mark.parametrize("name", ["i", "ii"])
def test_the_pages_values_and_verdicts_are_the_judges(name: str, tmp_path: Path) -> None:
    text = cases()[name]
    labels, values = tables(text)[:2]
    case = Case.read(labels)
    cfg = config(tmp_path)
    found = judge(cfg, case)
    assert values == values_table(cfg, found)
    (shown,) = fenced(text, "text")
    assert shown.splitlines() == verdict_lines(found)
    printed = {n for row in values[1:] for n in row[2:]}
    assert set(NUMBER.findall(prose(text))) <= printed, "a number in the sentences that no table holds"


def test_both_cases_start_from_one_baseline() -> None:
    first, second = (Case.read(tables(cases()[name])[0]) for name in ("i", "ii"))
    assert (first.base, first.approved) == (second.base, second.approved)


def test_label_work_alone_passes_under_both_exams_and_re_records_without_the_flag(tmp_path: Path) -> None:
    """(i): the system unchanged, the labels changed on every question: both exams are judged, every item
    passes, the update is refused nothing and keeps today's rankings, the approved ones, as the bar."""
    cfg = config(tmp_path)
    case = Case.read(tables(cases()["i"])[0])
    assert case.today == case.approved and all(case.labels[q] != case.base[q] for q in case.base)
    found = judge(cfg, case)
    assert [side.exam for side in found.sides(NAME)] == [TODAY, BASE]
    assert all(found.outcome(key).passed for key in keys(cfg))
    recording = judge(cfg, case, update=True)
    assert [recording.refused(key) for key in keys(cfg)] == [None] * len(cfg.metrics)
    assert approved_of(recording, NAME) == ({}, {})


def test_a_retune_behind_new_gold_passes_today_and_fails_under_the_base_exam(tmp_path: Path) -> None:
    """(ii): the new gold is on exactly the chunks new to the retuned top k; today's exam sees a gain, the
    base's a drop, so every item fails under the base's exam and the update is refused without the flag."""
    cfg = config(tmp_path)
    case = Case.read(tables(cases()["ii"])[0])
    for qid, ranking in case.today.items():
        new = set(ranking) - set(case.approved[qid])
        assert case.labels[qid] == {**case.base[qid], **dict.fromkeys(new, 2)}
    found = judge(cfg, case)
    for key in keys(cfg):
        outcome = found.outcome(key)
        assert not outcome.passed and outcome.summary.endswith("under the base's exam (the labels the baseline "
                                                               "was recorded under)")
        today = found.comparison(NAME, key.name)
        assert today is not None and today.delta is not None and today.delta > 0
        refused = judge(cfg, case, update=True).refused(key)
        assert refused is not None and "under the base's exam" in refused


def test_the_rules_quoted_verdicts_are_the_examples(tmp_path: Path) -> None:
    """The rule quotes a verdict under the base's exam: it is one the example prints."""
    text = PAGE.read_text(encoding="utf-8")
    rule = " ".join(text[text.index("## The bar"):text.index(START)].split())
    quoted = [q for q in re.findall(r"`([^`]*)`", rule) if "under the base's exam" in q]
    printed = verdict_lines(judge(config(tmp_path), Case.read(tables(cases()["ii"])[0])))
    assert quoted and set(quoted) <= set(printed)
