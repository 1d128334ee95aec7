"""Re-anchoring gold labels (baseline/relabel.py) and `ragretrieval relabel` on a small hand-made project."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.baseline.relabel import command, plan, rewritten
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset

HALF_A, HALF_B = "一线城市住宿每晚不超过六百元。", "二线城市每晚不超过四百五十元。"
REFUND = "退款在审核通过后三个工作日内原路退回。"
OLD_CHUNKS: list[dict[str, Any]] = [
    {"id": "hotel", "text": HALF_A + HALF_B},
    {"id": "refund", "text": REFUND},
    {"id": "error", "text": "ORDER-2024 表示订单已超时关闭。"},
]
NEW_CHUNKS: list[dict[str, Any]] = [
    {"id": "hotel-1", "text": HALF_A},
    {"id": "hotel-2", "text": HALF_B},
    {"id": "refund", "text": REFUND},
    {"id": "error", "text": "ORDER-2024 表示订单已超时关闭。"},
]
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "query": "住宿标准", "relevant": {"hotel": 2, "refund": 0}, "tags": ["t"]},
    {"id": "q2", "query": "二线城市", "relevant": ["hotel", "error"]},
    {"id": "q3", "query": "退款", "relevant": {"refund": 1}},
    {"id": "q4", "query": "二线城市住宿", "relevant": {"hotel-2": 3, "hotel": 1}},
    {"id": "q5", "query": "超时", "relevant_text": ["超时关闭"]},
]
SETTINGS = """\
chunks = "chunks.jsonl"
evalset = "evalset.jsonl"
baseline = "baseline.json"
k = 2

[retrievers.bm25]
type = "bm25"
"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_project(folder: Path, gold: dict[str, str] | None = None, chunks: list[dict[str, Any]] = NEW_CHUNKS,
                  questions: list[dict[str, Any]] = QUESTIONS) -> Path:
    (folder / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")
    (folder / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    (folder / "relabel.toml").write_text(SETTINGS, encoding="utf-8")
    corpus: dict[str, Any] = {"sha256": "0" * 64}
    if gold is not None:
        corpus["gold"] = gold
    (folder / "baseline.json").write_text(dumps(document(2, {"chunks": corpus}, {})), encoding="utf-8")
    return folder


GOLD = {"hotel": HALF_A + HALF_B, "refund": REFUND, "error": "ORDER-2024 表示订单已超时关闭。"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_project(tmp_path, GOLD)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["relabel", "--config", "relabel.toml", *argv])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_each_absent_id_moves_to_both_halves_with_its_grade(tmp_path: Path) -> None:
    write_project(tmp_path, GOLD)
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    found = plan(tmp_path / "evalset.jsonl", chunks, GOLD)
    assert [str(move) for move in found.moves] == [
        "q1: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "q2: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "q4: hotel -> hotel-1, hotel-2 (text 100% contained)",
    ]
    text = (tmp_path / "evalset.jsonl").read_text(encoding="utf-8")
    after = rewritten(text, found).splitlines()
    before = text.splitlines()
    assert json.loads(after[0])["relevant"] == {"hotel-1": 2, "hotel-2": 2, "refund": 0}
    assert list(json.loads(after[0])["relevant"]) == ["hotel-1", "hotel-2", "refund"]
    assert json.loads(after[1])["relevant"] == ["hotel-1", "hotel-2", "error"]
    assert json.loads(after[3])["relevant"] == {"hotel-2": 3, "hotel-1": 1}, "the higher grade wins, first place kept"
    assert after[2] == before[2] and after[4] == before[4], "lines without a move are kept byte for byte"
    (tmp_path / "evalset.jsonl").write_text("\n".join(after) + "\n", encoding="utf-8")
    loaded = {q.id: dict(q.relevance) for q in load_evalset(tmp_path / "evalset.jsonl", chunks)}
    assert loaded["q5"] == {"error": 1}, "a relevant_text snippet follows its text by itself"


def test_a_grade_0_judgment_of_a_chunk_that_is_gone_is_dropped(tmp_path: Path) -> None:
    questions = [{"id": "q1", "query": "x", "relevant": {"hotel-1": 1, "gone": 0}}]
    write_project(tmp_path, GOLD, questions=questions)
    found = plan(tmp_path / "evalset.jsonl", load_chunks(tmp_path / "chunks.jsonl"), GOLD)
    assert [str(m) for m in found.moves] == [
        "q1: gone -> (dropped: a grade-0 judgment of a chunk no longer in the corpus)"]
    assert json.loads(rewritten(jsonl(questions), found))["relevant"] == {"hotel-1": 1}
    assert not found.lost and not found.ambiguous


def test_only_absent_ids_move(tmp_path: Path) -> None:
    """refund's text is also inside nothing else, error is still there: neither moves."""
    write_project(tmp_path, GOLD)
    found = plan(tmp_path / "evalset.jsonl", load_chunks(tmp_path / "chunks.jsonl"), GOLD)
    assert {move.old for move in found.moves} == {"hotel"}


def test_the_command_names_the_settings_file() -> None:
    assert command(None) == "ragretrieval relabel"
    assert command("my settings.toml") == "ragretrieval relabel --config 'my settings.toml'"


def test_relabel_prints_the_proposal_and_a_unified_diff(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (project / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys)
    assert (code, err) == (0, [])
    assert out[:5] == [
        "evalset.jsonl: 3 gold labels name what the corpus no longer holds; where their text went:",
        "  q1: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "  q2: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "  q4: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "apply it with `ragretrieval relabel --config relabel.toml --apply` (see the diff with "
        "`ragretrieval relabel --config relabel.toml`)",
    ]
    assert out[5:7] == ["--- a/evalset.jsonl", "+++ b/evalset.jsonl"]
    assert '-{"id": "q2", "query": "二线城市", "relevant": ["hotel", "error"]}' in out
    assert '+{"id": "q2", "query": "二线城市", "relevant": ["hotel-1", "hotel-2", "error"]}' in out
    assert (project / "evalset.jsonl").read_bytes() == before, "without --apply nothing is written"


def test_apply_writes_atomically_keeping_the_mode_and_no_backup_unless_asked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chmod(project / "evalset.jsonl", 0o640)
    code, out, _ = run(capsys, "--apply")
    assert code == 0 and out[-1] == "ragretrieval: wrote evalset.jsonl (3 labels moved)"
    assert stat.S_IMODE((project / "evalset.jsonl").stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir()) == [
        "baseline.json", "chunks.jsonl", "evalset.jsonl", "relabel.toml"]
    chunks = load_chunks(project / "chunks.jsonl")
    assert dict(load_evalset(project / "evalset.jsonl", chunks)[0].relevance) == {
        "hotel-1": 2, "hotel-2": 2, "refund": 0}
    assert run(capsys)[1] == ["ragretrieval: nothing to relabel: every gold chunk id in evalset.jsonl is in chunks.jsonl"]


def test_backup_keeps_the_old_file_with_its_mode(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (project / "evalset.jsonl").read_bytes()
    os.chmod(project / "evalset.jsonl", 0o600)
    code, out, _ = run(capsys, "--apply", "--backup")
    assert code == 0 and "ragretrieval: kept the old eval set as evalset.jsonl.bak" in out
    assert (project / "evalset.jsonl.bak").read_bytes() == before
    assert stat.S_IMODE((project / "evalset.jsonl.bak").stat().st_mode) == 0o600


def test_an_ambiguous_proposal_is_applied_only_when_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    chunks = [*NEW_CHUNKS, {"id": "copy", "text": REFUND}]
    questions = [{"id": "q1", "query": "退款", "relevant": ["old-refund"]}]
    write_project(tmp_path, {"old-refund": REFUND}, chunks=[c for c in chunks if c["id"] != "refund"] + [
        {"id": "refund-2", "text": REFUND}], questions=questions)
    before = (tmp_path / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys, "--apply")
    assert code == 1
    assert "  q1: old-refund -> copy, refund-2 (text 100% contained; ambiguous: the old text is found in 2 places)" in out
    assert err == ["ragretrieval: evalset.jsonl not written: ambiguous: q1 (old-refund); check them in the proposal "
                   "above and pass --accept-ambiguous to apply them"]
    assert (tmp_path / "evalset.jsonl").read_bytes() == before
    assert run(capsys, "--apply", "--accept-ambiguous")[0] == 0
    assert json.loads((tmp_path / "evalset.jsonl").read_text(encoding="utf-8"))["relevant"] == ["copy", "refund-2"]


def test_a_label_found_nowhere_is_never_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, {**GOLD, "hotel": "完全不同的一段旧文字，谁也没有保留下来。"})
    before = (tmp_path / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys, "--apply")
    assert code == 1 and (tmp_path / "evalset.jsonl").read_bytes() == before
    assert "  q1: hotel -> ? (not found: no chunk holds 5% or more of its text; label it by hand at evalset.jsonl:1)" in out
    assert err == ["ragretrieval: evalset.jsonl not written: found nowhere: q1 (hotel), q2 (hotel), q4 (hotel); "
                   "label them by hand first"]


def test_a_baseline_without_gold_texts_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, None)
    code, out, err = run(capsys)
    assert (code, out) == (2, [])
    assert err == ["ragretrieval: error: evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant', and the baseline "
                   "baseline.json cannot say where it went: it records no gold texts (recorded before they were "
                   "kept); relabel it by hand"]


def test_old_chunks_give_the_old_gold(tmp_path: Path) -> None:
    """The fixture's GOLD is what the old corpus gives: the record the gate would have written."""
    from pytest_ragretrieval.baseline.gold import gold_texts

    write_project(tmp_path, GOLD, chunks=OLD_CHUNKS, questions=[q for q in QUESTIONS if q["id"] != "q4"])
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    assert gold_texts(chunks, load_evalset(tmp_path / "evalset.jsonl", chunks)) == GOLD


def test_the_gate_s_error_is_the_proposal_today_s_line_with_why_or_today_s_line_alone(tmp_path: Path) -> None:
    from pytest_ragretrieval.baseline.relabel import anchoring_error
    from pytest_ragretrieval.core.errors import FixtureError

    write_project(tmp_path, GOLD)
    problem = FixtureError("evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant'")
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    found = plan(tmp_path / "evalset.jsonl", chunks, GOLD)
    assert str(anchoring_error(problem, found, True, None, "")).splitlines()[1:2] == [
        "  q1: hotel -> hotel-1, hotel-2 (text 100% contained)"]
    assert str(anchoring_error(problem, plan(tmp_path / "evalset.jsonl", chunks, {}), False, None,
                               "there is no baseline at b.json")) == (
        "evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant'; there is no baseline at b.json, so where it went "
        "cannot be found: relabel it by hand")
    typo = plan(tmp_path / "evalset.jsonl", chunks, {"hotel": "谁也没有的文字，找不到。"})
    assert anchoring_error(problem, typo, True, None, "") is problem
