"""`--rag-eval`: the gate's items, verdicts and summary, run through pytester."""
from __future__ import annotations

import pytest
from projects import GOLD, RUN, baseline_bytes, set_rankings, write_project


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    return pytester


def record(pytester: pytest.Pytester, *args: str) -> None:
    result = pytester.runpytest("--rag-update-baseline", *RUN, *args)
    assert result.ret == 0, result.stdout.str()


def test_without_the_flag_the_plugin_adds_no_items(project: pytest.Pytester) -> None:
    result = project.runpytest(*RUN)
    result.assert_outcomes()
    assert "rag::" not in result.stdout.str()


def test_one_item_per_retriever_and_metric_is_collected(project: pytest.Pytester) -> None:
    result = project.runpytest("--rag-eval", "--collect-only", "-q", *RUN)
    result.stdout.fnmatch_lines(
        [
            "rag::bm25::precision@3",
            "rag::bm25::recall@3",
            "rag::bm25::f1@3",
            "rag::bm25::ndcg@3",
            "rag::table::precision@3",
            "rag::table::recall@3",
            "rag::table::f1@3",
            "rag::table::ndcg@3",
            "8 tests collected*",
        ]
    )


def test_items_are_collected_whatever_testpaths_says(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntestpaths = nowhere\n")
    result = project.runpytest("--rag-eval", "--collect-only", "-q", *RUN)
    result.stdout.fnmatch_lines(["rag::bm25::ndcg@3", "8 tests collected*"])


MISSING = ("rag: error: no baseline at baselines/retrieval.json, so nothing was judged; record one with "
           "`pytest --rag-update-baseline`, check the values above and commit baselines/retrieval.json")


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_a_missing_baseline_is_one_line_with_the_command_and_fails_the_run(project: pytest.Pytester,
                                                                           workers: tuple[str, ...]) -> None:
    """Not one identical failure block per item: the items are skipped with one short reason (pytest
    counts them as one line under -rs), the run fails, and the summary says how to record one."""
    result = project.runpytest("--rag-eval", "-rs", *workers, *RUN)
    result.assert_outcomes(skipped=8)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert output.count(MISSING) == 1 and "FAILED" not in output and "= FAILURES =" not in output
    result.stdout.fnmatch_lines(["SKIPPED [[]8] *no baseline yet at baselines/retrieval.json; run `pytest "
                                 "--rag-update-baseline` to record one", "*8 skipped*"])
    assert result.stdout.lines[-2] == MISSING or MISSING in result.stdout.lines
    record(project)
    assert project.runpytest("--rag-eval", *RUN).ret == 0


def test_gate_fails_on_a_worse_retriever_and_passes_again_after_update(project: pytest.Pytester) -> None:
    record(project)
    project.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)
    worse = dict(GOLD, q01=["travel-002", "travel-001"], q04=["error-001"])
    set_rankings(project.path, worse)
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(
        [
            "*rag::table::ndcg@3*",
            "ndcg@3 of 'table' fell from 1.0000 to 0.7262 (-0.2738, tolerance 0.0000)",
            "questions that dropped, worst first:",
            "  q04: 1.0000 -> 0.0000 (-1.0000)",
            "  q01: 1.0000 -> 0.6309 (-0.3691)",
        ]
    )
    record(project, "--rag-allow-regression")
    project.runpytest("--rag-eval", *RUN).assert_outcomes(passed=8)


def test_tolerance_absorbs_a_small_drop(project: pytest.Pytester) -> None:
    write_project(project.path, settings="tolerance = {default = 0.0, ndcg = 0.1}")
    record(project)
    set_rankings(project.path, dict(GOLD, q01=["travel-002", "travel-001"]))
    result = project.runpytest("--rag-eval", "-k", "table", *RUN)
    result.assert_outcomes(passed=4)


def test_a_uniform_tolerance_applies_to_every_metric(project: pytest.Pytester) -> None:
    write_project(project.path, settings="tolerance = 0.3")
    record(project)
    set_rankings(project.path, dict(GOLD, q01=[]))
    project.runpytest("--rag-eval", "-k", "table", *RUN).assert_outcomes(passed=4)
    set_rankings(project.path, dict(GOLD, q01=[], q02=[]))
    project.runpytest("--rag-eval", "-k", "table", *RUN).assert_outcomes(passed=2, failed=2)


def test_an_edited_chunk_is_compared_and_named(project: pytest.Pytester) -> None:
    record(project)
    before = baseline_bytes(project.path)
    chunks = project.path / "fixtures" / "chunks.jsonl"
    chunks.write_text(chunks.read_text(encoding="utf-8").replace("600元", "650元"), encoding="utf-8")
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["compared across changes: chunks: 1 edited (travel-001), 0 added, 0 removed"])
    assert baseline_bytes(project.path) == before


def test_changed_k_is_the_yardstick_and_asks_to_re_record(project: pytest.Pytester) -> None:
    record(project)
    pyproject = project.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace("k = 3", "k = 4"), encoding="utf-8")
    result = project.runpytest("--rag-eval", "-k", "bm25", *RUN)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines([
        "the baseline is not comparable: its yardstick changed (k 3 -> 4), so its values measure something else; "
        "re-record it for all retrievers with `pytest --rag-update-baseline`",
        "not comparable: the yardstick changed: k 3 -> 4",
    ])


def test_a_retriever_missing_from_the_baseline_fails_with_the_command(project: pytest.Pytester) -> None:
    record(project, "-k", "bm25")
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(
        ["retriever 'table' is not in the baseline; record it with `pytest --rag-update-baseline -k table`"]
    )


def test_a_metric_missing_from_the_baseline_fails_with_the_command(project: pytest.Pytester) -> None:
    record(project)
    write_project(project.path, settings='metrics = ["precision", "recall", "f1", "ndcg", "mrr"]')
    result = project.runpytest("--rag-eval", "-k", "table", *RUN)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        ["mrr@3 of retriever 'table' is not in the baseline; record it with `pytest --rag-update-baseline -k table`"]
    )


def test_changed_retriever_parameters_are_judged_and_named(project: pytest.Pytester) -> None:
    record(project)
    pyproject = project.path / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8").replace('type = "bm25"', 'type = "bm25"\nk1 = 1.2')
    pyproject.write_text(text, encoding="utf-8")
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["compared across changes: bm25.k1 1.5 -> 1.2"])
    worse = text.replace("k1 = 1.2", "k1 = 1.2\nmin_score = 5.0")
    pyproject.write_text(worse, encoding="utf-8")
    result = project.runpytest("--rag-eval", "-k", "bm25 and recall", *RUN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["recall@3 of 'bm25' fell from 0.9000 to * after changes of bm25.k1; bm25.min_score"])


def test_minus_k_and_minus_m_select_items(project: pytest.Pytester) -> None:
    record(project)
    project.runpytest("--rag-eval", "-k", "ndcg", *RUN).assert_outcomes(passed=2)
    project.runpytest("--rag-eval", "-k", "bm25 and not f1", *RUN).assert_outcomes(passed=3)
    project.runpytest("--rag-eval", "-m", "rag_eval", *RUN).assert_outcomes(passed=8)
    project.runpytest("--rag-eval", "-m", "not rag_eval", *RUN).assert_outcomes()


def test_a_retriever_runs_once_however_many_items(project: pytest.Pytester) -> None:
    record(project)
    (project.path / "calls.txt").unlink()
    project.runpytest("--rag-eval", "-k", "table", *RUN).assert_outcomes(passed=4)
    calls = (project.path / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert len(calls) == 6


def test_unselected_retrievers_do_not_run(project: pytest.Pytester) -> None:
    record(project)
    (project.path / "calls.txt").unlink()
    project.runpytest("--rag-eval", "-k", "bm25", *RUN).assert_outcomes(passed=4)
    assert not (project.path / "calls.txt").exists()


def test_a_duplicate_id_in_a_ranking_is_an_error_of_that_retriever(project: pytest.Pytester) -> None:
    record(project)
    set_rankings(project.path, dict(GOLD, q03=["travel-002", "travel-002"]))
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(["retriever 'table' on question 'q03': returned chunk id 'travel-002' twice"])


def test_an_unknown_chunk_id_is_an_error_of_that_retriever(project: pytest.Pytester) -> None:
    record(project)
    set_rankings(project.path, dict(GOLD, q05=["refund-999"]))
    result = project.runpytest("--rag-eval", "-k", "table", *RUN)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["retriever 'table' on question 'q05': returned unknown chunk id 'refund-999'"])


def test_a_raising_factory_fails_its_items_and_names_the_exception(project: pytest.Pytester) -> None:
    project.makepyfile(broken="def make(ctx):\n    raise ValueError('index not built')\n")
    write_project(
        project.path,
        retrievers='[tool.ragretrieval.retrievers.broken]\ntype = "python"\nfactory = "broken:make"\n',
    )
    result = project.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(["retriever 'broken' raised ValueError: index not built (*broken.py:2)"])


def test_summary_shows_values_deltas_and_the_no_answer_line(project: pytest.Pytester) -> None:
    record(project)
    set_rankings(project.path, dict(GOLD, q01=["travel-002", "travel-001"], q06=["service-001"]))
    result = project.runpytest("--rag-eval", *RUN)
    result.stdout.fnmatch_lines(
        [
            "*= rag retrieval =*",
            "k=3, 5 answerable questions",
            "retriever  precision@3  recall@3  f1@3    ndcg@3            judged@3",
            "bm25       0.3333       0.9000    0.4800  0.9520            0.6667",
            "table      0.4000       1.0000    0.5600  0.9262 (-0.0738)  0.9000",
            "per tag, where a value moved (1 of 4 rows; --rag-tags shows every row):",
            "retriever  tag       precision@3  recall@3  f1@3    ndcg@3            judged@3",
            "table      semantic  0.4444       1.0000    0.6000  0.8770 (-0.1230)  0.8333",
            "no-answer questions that got an empty result: bm25 0/1, table 0/1",
        ]
    )
    assert "(+0.0000)" not in result.stdout.str()


def test_tables_fit_an_80_column_terminal(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell moved: the summary and per-tag tables would be 85 and 96 columns wide, so they are split."""
    record(project)
    set_rankings(project.path, dict(GOLD, q01=["travel-002"], q03=["travel-003"], q05=[]))
    monkeypatch.setenv("COLUMNS", "80")
    result = project.runpytest("--rag-eval", "--rag-tags", *RUN)
    lines = result.stdout.lines
    section = lines[lines.index("k=3, 5 answerable questions"):]
    tables = [line for line in section if line.startswith(("retriever", "table ", "bm25 ", "---"))]
    assert tables and max(len(line) for line in tables) <= 80, tables
    assert "retriever  precision@3       recall@3          f1@3" in section
    assert "retriever  ndcg@3            judged@3" in section
    assert "retriever  tag       ndcg@3            judged@3" in section
    assert "answerable questions that wrongly got an empty result: table 1/5 (q05)" in section
