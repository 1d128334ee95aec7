"""`ragretrieval tune`: a sweep picks on the tune questions only, measures the pick on the gate's, and writes
a config snippet, never the baseline."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from projects import jsonl, retriever, synthetic, write_project

from pytest_ragretrieval.cli import main

KNOB = '''
def make(ctx):
    """Answers perfectly the questions whose id starts with options["good"]; nothing for the rest."""
    good = ctx.options["good"]
    ids = {q.query: q.id for q in ctx.questions}

    def retrieve(query, k):
        number = int(query.removeprefix("问题"))
        return [f"c{number:03d}a", f"c{number:03d}b"][:k] if ids[query].startswith(good) else []

    return retrieve
'''


def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sides: bool = True) -> None:
    chunks, questions, gold = synthetic(60)
    for index, question in enumerate(questions):
        question["id"] = ("t" if index < 30 else "g") + str(question["id"])
        if sides:
            question["side"] = "tune" if index < 30 else "gate"
    knob = retriever("knob", "python", factory="knob_retriever:make") + """
[tool.ragretrieval.retrievers.knob.options]
good = "x"
[tool.ragretrieval.retrievers.knob.tune]
options = [{ good = "g" }, { good = "tq0" }, { good = "t" }, { good = "tq1" }]
"""
    write_project(tmp_path, chunks=chunks, questions=questions, rankings={}, retrievers=knob)
    (tmp_path / "fixtures" / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    (tmp_path / "knob_retriever.py").write_text(KNOB, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_the_sweep_picks_on_tune_questions_and_measures_the_gate_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _project(tmp_path, monkeypatch)
    assert main(["tune", "knob", "--draws", "999"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ragretrieval tune: knob (") and "4 settings on 30 tune questions, ranked by ndcg@3" in out[0]
    rows = [line.split()[0] for line in out[3:8]]
    assert rows[0] == "knob~3" and rows[-1] in {"knob", "knob~1"}  # good on the gate's questions only: nothing here
    best = next(line for line in out if line.startswith("best: "))
    assert best.startswith('best: knob~3 (options = {"good": "t"}): ndcg@3 gain on the tune questions +1.0000')
    assert "selection-aware p = 0.0010" in best
    assert "gain on the gate's questions +0.0000; optimism +1.0000" in best
    assert out[-2:] == ["[tool.ragretrieval.retrievers.knob]", 'options = { "good" = "t" }  # was { "good" = "x" }']
    assert not (tmp_path / "baselines").exists()


def test_a_sweep_never_runs_on_the_gate_s_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _project(tmp_path, monkeypatch, sides=False)
    assert main(["tune", "knob"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no tune questions" in err[0] and "never tunes on the gate's questions" in err[0]


def test_the_snippet_goes_where_asked_and_never_over_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _project(tmp_path, monkeypatch)
    assert main(["tune", "knob", "--draws", "99", "--out", "baselines/retrieval.json"]) == 2
    assert "the baseline" in capsys.readouterr().err
    assert main(["tune", "knob", "--draws", "99", "--out", "best.toml", "--budget", "2", "--seed", "1"]) == 0
    assert (tmp_path / "best.toml").read_text(encoding="utf-8").startswith("[tool.ragretrieval.retrievers.knob]\n")
    assert "2 settings on 30 tune questions" in capsys.readouterr().out


def test_folds_hold_out_tune_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    _project(tmp_path, monkeypatch)
    assert main(["tune", "knob", "--draws", "99", "--folds", "3"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("3 folds"))
    assert line.startswith("3 folds of the tune questions: mean gain where picked +1.0000, on the fold held out +1.0000")


def test_the_comment_names_the_sweep_s_optimism_from_its_record_and_judges_nothing_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 51 item 5: `tune --record` leaves the sweep's record; `comment --sweep` names its optimism under a
    heading of its own, and the comment's verdict lines are the same without it."""
    _project(tmp_path, monkeypatch)
    assert main(["tune", "knob", "--draws", "999", "--record", "sweep.json"]) == 0
    assert "wrote sweep.json" in capsys.readouterr().out
    record = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    assert (record["kind"], record["best"], record["tune_gain"], record["gate_gain"], record["optimism"]) == (
        "ragretrieval-sweep", "knob~3", 1.0, 0.0, 1.0)
    assert main(["comment", "--gate-outcome", "success"]) == 0
    without = capsys.readouterr().out.splitlines()
    assert main(["comment", "--gate-outcome", "success", "--sweep", "sweep.json"]) == 0
    body = capsys.readouterr().out.splitlines()
    assert [line for line in body if line not in without] == [
        "### 调参记录 / The sweep behind these settings",
        '- ℹ️ ragretrieval tune knob: 4 settings on 30 tune questions, ranked by ndcg@3; best knob\\~3 (options = '
        '{"good": "t"}): ndcg@3 gain on the tune questions +1.0000 (selection-aware p = 0.0010; as if it were '
        "the only setting tried: p = 0.0010), on the gate's 30 questions, which picked nothing, +0.0000; optimism "
        "+1.0000 (tune gain - gate gain)",
        "- ℹ️ 仅供参考，不影响任何判定 / informational, no verdict reads it: the gate judges the tuned settings on its "
        "own questions, so expect the gate's gain, not the tune gain"]
    assert body[:8] == without[:8]  # the gate and baseline lines: no verdict reads the record


@pytest.mark.parametrize(("edit", "wanted"), [
    ({"optimism": 0.5}, "optimism disagrees with tune_gain - gate_gain"),
    ({"p": 1.5}, "p must be a p-value from 0 to 1, got 1.5"),
    ({"kind": "other"}, "kind must be 'ragretrieval-sweep'"),
])
def test_a_damaged_sweep_record_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], edit: dict[str, object],
    wanted: str,
) -> None:
    _project(tmp_path, monkeypatch)
    assert main(["tune", "knob", "--draws", "99", "--record", "sweep.json"]) == 0
    record = json.loads((tmp_path / "sweep.json").read_text(encoding="utf-8"))
    (tmp_path / "sweep.json").write_text(json.dumps({**record, **edit}), encoding="utf-8")
    capsys.readouterr()
    assert main(["comment", "--sweep", "sweep.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ragretrieval: error: sweep.json: not a record written by") \
        and wanted in err[0], err
