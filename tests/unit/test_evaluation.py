"""One evaluation (`gate/evaluation.py`): the pytest session and `ragretrieval merge` are shells over
it, and what it returns agrees with itself (the record's failures are the failing verdicts, the
terminal's warnings the record's notes)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from stages import GOOD, QUESTIONS, WORSE, baseline, config, fingerprint, ran

from pytest_ragretrieval.gate.evaluation import evaluate
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.record.types import Status

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ragretrieval"
SHELLS = ("glue/session.py", "cli/merge.py")
JUDGING = {"Judge", "run_record", "baseline_update", "plan_update", "baseline_record", "next_bar", "retriever_record",
           "structs", "msgspec"}
"""What builds a record, a verdict or an update plan: the judge and the record's, the update's builders."""
BUILT = {"Record", "Verdict", "Outcome", "UpdatePlan", "Failure", "Retriever"}
"""The types of what the evaluation returns: a shell never constructs one."""


def imported(tree: ast.Module) -> dict[str, str]:
    """Name -> the module it comes from, for every `from ... import` in the file."""
    return {alias.asname or alias.name: node.module or "" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) for alias in node.names}


@pytest.mark.parametrize("shell", SHELLS)
def test_the_session_and_merge_are_shells_over_the_one_evaluation(shell: str) -> None:
    tree = ast.parse((PACKAGE / shell).read_text(encoding="utf-8"))
    names = imported(tree)
    assert names.get("evaluate") == "gate.evaluation"
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "evaluate" in called
    assert not JUDGING & set(names), f"{shell} imports {sorted(JUDGING & set(names))}: it judges or builds itself"
    assert not BUILT & called, f"{shell} builds {sorted(BUILT & called)}: the evaluation returns it"
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {"gate.judge", "gate.record", "baseline.update"} & modules


def test_the_record_s_failures_are_the_failing_verdicts_and_its_notes_the_warnings(tmp_path: Path) -> None:
    cfg = config(tmp_path, "min_questions = 20")
    fp = fingerprint(cfg)
    recorded = baseline(cfg, {"one": ran(cfg, "one", GOOD), "two": ran(cfg, "two", GOOD)}, fp)
    runs = {"one": ran(cfg, "one", WORSE), "two": ran(cfg, "two", GOOD)}
    selected = [ItemKey(name, "metric", spec.label) for name in runs for spec in cfg.metrics]
    found = evaluate(cfg, QUESTIONS, recorded, fp, runs, selected, reused=["two"])
    assert list(found.verdicts) == selected
    failed = [key for key, verdict in found.verdicts.items() if verdict.status == Status.FAILED]
    assert failed and all(key.retriever == "one" for key in failed)
    assert [(f.item, f.summary, f.details) for f in found.record.failures or ()] == [
        (key.nodeid, found.verdicts[key].lines[0], found.verdicts[key].lines[1:]) for key in failed]
    assert found.record.reused == ("two",) and found.update is None and found.failed == ()
    assert found.record.notes and found.warnings == [f"warning: {note}" for note in found.record.notes]
    assert found.timed({"judge": 0.5}).phases == {"judge": 0.5} and not found.record.phases


def test_an_update_is_planned_only_when_asked_and_a_missing_baseline_fails_the_run(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    fp = fingerprint(cfg)
    runs = {"one": ran(cfg, "one", GOOD)}
    selected = [ItemKey("one", "metric", spec.label) for spec in cfg.metrics]
    gate = evaluate(cfg, QUESTIONS, None, fp, runs, selected)
    assert gate.update is None and len(gate.failed) == 1 and "no baseline at" in gate.failed[0]
    assert {verdict.status for verdict in gate.verdicts.values()} == {Status.SKIPPED}
    update = evaluate(cfg, QUESTIONS, None, fp, runs, selected, update=True)
    assert update.failed == () and update.update is not None and update.update.record is not None
    assert {verdict.status for verdict in update.verdicts.values()} == {Status.PASSED}
