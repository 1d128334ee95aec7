"""The tune/gate split at the gate: tune questions are asked and scored apart, never judged nor recorded."""
from __future__ import annotations

import json

import pytest
from projects import RUN, baseline, jsonl, merged_shards, one_line_error, synthetic, write_project


def _project(pytester: pytest.Pytester, tune: int, total: int = 60, settings: str = "") -> list[dict[str, object]]:
    chunks, questions, gold = synthetic(total)
    for question in questions[:tune]:
        question["side"] = "tune"
    write_project(pytester.path, chunks=chunks, questions=questions, rankings=gold, settings=settings)
    return questions


def test_tune_questions_never_reach_the_baseline(pytester: pytest.Pytester) -> None:
    questions = _project(pytester, tune=30)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    result.stdout.fnmatch_lines(["rag: tune split: 30 questions scored apart, never judged nor recorded *"])
    tune = {str(q["id"]) for q in questions[:30]}
    text = json.dumps(baseline(pytester.path), ensure_ascii=False)
    assert not [qid for qid in tune if f'"{qid}"' in text]
    recorded = baseline(pytester.path)["retrievers"]["table"]["questions"]
    assert set(recorded) == {str(q["id"]) for q in questions[30:]}
    results = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    assert set(results["tune"]["questions"]) == tune
    assert results["tune"]["values"]["table"]["ndcg@3"] == 1.0
    assert not [qid for qid in tune if qid in results["retrievers"]["table"]["questions"]]


def test_a_tune_question_that_worsens_fails_nothing(pytester: pytest.Pytester) -> None:
    questions = _project(pytester, tune=30)
    pytester.runpytest("--rag-update-baseline", *RUN)
    queries = {q["id"]: q["query"] for q in questions}
    by_query = json.loads((pytester.path / "rankings.json").read_text(encoding="utf-8"))
    by_query[queries["q01"]] = []  # a tune question: never in the bar
    (pytester.path / "rankings.json").write_text(json.dumps(by_query, ensure_ascii=False), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 0, result.stdout.str()
    by_query[queries["q40"]] = []  # a gate question
    (pytester.path / "rankings.json").write_text(json.dumps(by_query, ensure_ascii=False), encoding="utf-8")
    assert pytester.runpytest("--rag-eval", *RUN).ret != 0


@pytest.mark.parametrize(("tune", "total", "wanted"), [
    (10, 60, "leaves 10 tune questions, fewer than 30"),
    (30, 45, "leaves 15 gate questions, fewer than min_questions (20)"),
])
def test_a_split_too_small_is_refused_in_one_line(pytester: pytest.Pytester, tune: int, total: int, wanted: str) -> None:
    _project(pytester, tune=tune, total=total)
    line = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert "key 'split'" in line and wanted in line


def test_the_config_s_split_draws_the_sides(pytester: pytest.Pytester) -> None:
    _project(pytester, tune=0, total=80, settings="[tool.ragretrieval.split]\nfraction = 0.5\nseed = 3")
    pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", *RUN)
    results = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    tune = set(results["tune"]["questions"])
    assert len(tune) >= 30 and tune.isdisjoint(baseline(pytester.path)["retrievers"]["table"]["questions"])


def test_a_gate_question_repeating_a_tune_one_is_named_at_load(pytester: pytest.Pytester) -> None:
    chunks, questions, gold = synthetic(60)
    for question in questions[:30]:
        question["side"] = "tune"
    questions[40]["query"] = "  " + str(questions[3]["query"]).upper() + " "
    gold[str(questions[40]["id"])] = gold[str(questions[3]["id"])]
    write_project(pytester.path, chunks=chunks, questions=questions, rankings=gold)
    (pytester.path / "fixtures" / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    result.stdout.fnmatch_lines(["rag: warning: 1 gate question(s) repeat a tune question*"
                                 "q41 repeats tune question q04 (the same query)*"])


@pytest.mark.parametrize(("shared", "extra", "named"), [(9, 1, True), (89, 11, False), (0, 0, True)])
def test_a_gate_near_copy_of_a_tune_question_is_named_from_jaccard_0_9(
        pytester: pytest.Pytester, shared: int, extra: int, named: bool) -> None:
    """The leak guard at load, under the config's own tokenizer: a gate question whose tokens share 9 of 10 with
    a tune question's (Jaccard 0.9) is named, 89 of 100 (0.89) is not, an exact copy (case aside) is."""
    chunks, questions, gold = synthetic(60)
    for question in questions[:30]:
        question["side"] = "tune"
    tune = " ".join(f"w{i}" for i in range(shared)) or "an exact copy"
    questions[3]["query"] = tune
    questions[40]["query"] = " ".join([tune, *(f"x{i}" for i in range(extra))]) if extra else tune.upper()
    write_project(pytester.path, chunks=chunks, questions=questions, rankings=gold, settings='tokenizer = "whitespace"')
    result = pytester.runpytest("--rag-eval", *RUN)
    out = result.stdout.str()
    assert ("rag: warning: 1 gate question(s) repeat a tune question" in out) is named, out
    if named:
        why = "the same query" if not extra else "Jaccard 0.90"
        assert f"q41 repeats tune question q04 ({why})" in out, out


def test_a_sharded_run_s_merge_judges_only_gate_questions(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
) -> None:
    questions = _project(pytester, tune=30)
    merged = merged_shards(pytester, capsys)
    assert set(merged["retrievers"]["table"]["questions"]) == {str(q["id"]) for q in questions[30:]}
