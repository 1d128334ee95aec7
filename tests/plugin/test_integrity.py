"""A baseline that cannot lie, inputs that cannot break the gate, outputs that cannot hurt the inputs."""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from projects import (
    CHUNKS,
    GOLD,
    QUESTIONS,
    RUN,
    baseline,
    baseline_bytes,
    one_line_error,
    retriever,
    set_rankings,
    write_project,
)

BASELINE = Path("baselines") / "retrieval.json"
FIX_IT = "; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
BUDGET_FORM = ", or '@', such digits and 'c' for a budget of characters (char_recall@2000c)"
"""The rest of the metric key rule in a format-4 file, which holds budget keys."""


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def edit_baseline(folder: Path, change: Callable[[str], str]) -> None:
    path = folder / BASELINE
    text = path.read_text(encoding="utf-8")
    changed = change(text)
    assert changed != text
    path.write_text(changed, encoding="utf-8")


def set_value(path: list[str], value: object) -> Callable[[str], str]:
    """An edit of the baseline putting `value` (JSON text when a str) at `path`."""
    def change(text: str) -> str:
        doc = json.loads(text)
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = "@@"
        return json.dumps(doc, indent=2).replace('"@@"', value if isinstance(value, str) else json.dumps(value))
    return change


# issue 10, case 1: a baseline value of NaN (or out of range, or that its ranking does not give) stops the gate


@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (["retrievers", "table", "questions", "q01", "metrics", "ndcg@3"], "NaN",
         "retrievers.table.questions.q01.metrics.ndcg@3 = NaN is not a finite number in [0, 1]"),
        (["retrievers", "table", "metrics", "ndcg@3"], "Infinity", "retrievers.table.metrics.ndcg@3 = Infinity is not a finite number in [0, 1]"),
        (["retrievers", "bm25", "metrics", "recall@3"], "1.5", "retrievers.bm25.metrics.recall@3 = 1.5 is not a finite number in [0, 1]"),
        (["retrievers", "bm25", "tags", "keyword", "f1@3"], "-0.1", "retrievers.bm25.tags.keyword.f1@3 = -0.1 is not a finite number in [0, 1]"),
        (["retrievers", "bm25", "metrics", "recall@3"], "1" + "0" * 400,
         "retrievers.bm25.metrics.recall@3 = 10000000000000000000... (401 digits) is not a finite number in [0, 1]"),
        (["retrievers", "table", "metrics", "ndcg@3"], 0.5,
         "retrievers.table.metrics.ndcg@3 = 0.5 does not agree with the file: the mean of its questions is 1.0"),
        (["retrievers", "table", "questions", "q01", "ranking"], ["travel-002", "travel-001"],
         "retrievers.table.questions.q01.metrics.ndcg@3 = 1.0 does not agree with the file: its ranking ['travel-002', 'travel-001'] gives 0.63093"),
        (["retrievers", "table", "questions", "q01", "ranking"], ["travel-001", "travel-001"],
         "retrievers.table.questions.q01.ranking lists chunk id 'travel-001' twice"),
        (["retrievers", "table", "questions", "q01", "ranking"], ["nope-001"],
         "retrievers.table.questions.q01.ranking holds 'nope-001', which is no chunk id of the corpus it was recorded on"),
        (["retrievers", "table", "no_answer", "empty"], 0,
         "retrievers.table.no_answer.empty = 0 does not agree with the file's rankings, which give 1"),
        # issue 32: a metric key that does not parse as name@digits (a superscript, 5,001 digits)
        (["retrievers", "bm25", "metrics", "ndcg@\u00b2"], "0.5",
         "retrievers.bm25.metrics key 'ndcg@\u00b2' is not a metric key: a lower-case name, then optionally '@' and a "
         f"cutoff of 1 to 9 ASCII digits, the first not 0 (ndcg@5){BUDGET_FORM}"),
        (["retrievers", "bm25", "questions", "q01", "metrics", "ndcg@" + "5" * 5001], "0.5",
         "retrievers.bm25.questions.q01.metrics key 'ndcg@5555555555555555555555555... (5006 characters)' is not a "
         "metric key: a lower-case name, then optionally '@' and a cutoff of 1 to 9 ASCII digits, the first not 0 "
         f"(ndcg@5){BUDGET_FORM}"),
    ],
)
def test_a_baseline_value_that_lies_stops_the_gate(
    recorded: pytest.Pytester, flag: str, path: list[str], value: object, problem: str
) -> None:
    edit_baseline(recorded.path, set_value(path, value))
    before = baseline_bytes(recorded.path)
    assert one_line_error(recorded.runpytest(flag, *RUN)) == f"ERROR: baselines/retrieval.json: {problem}{FIX_IT}"
    assert baseline_bytes(recorded.path) == before


def test_a_regraded_question_is_judged_under_both_exams(recorded: pytest.Pytester) -> None:
    """q03's graded gold changed, its query and chunks did not: it stays compared, under today's labels and
    the base's (both sides scored from rankings, never from recorded values); a tampered ranking of another
    question is still caught."""
    evalset = recorded.path / "fixtures" / "evalset.jsonl"
    evalset.write_text(evalset.read_text(encoding="utf-8").replace('"travel-003": 1', '"travel-003": 2'), encoding="utf-8")
    result = recorded.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([
        "questions: 6 comparable (1 relabelled: q03; judged under today's exam and the base's), 0 added, "
        "0 removed, 0 edited"])
    def tamper(text: str) -> str:
        doc = json.loads(text)
        doc["retrievers"]["table"]["questions"]["q01"]["ranking"] = ["travel-002", "travel-001"]
        return json.dumps(doc, indent=2)

    edit_baseline(recorded.path, tamper)
    line = one_line_error(recorded.runpytest("--rag-eval", *RUN))
    assert "retrievers.table.questions.q01.metrics.ndcg@3 = 1.0 does not agree with the file" in line, line


# issue 10, case 2: a refused update leaves the file byte-identical, and says so


def test_a_refused_update_leaves_the_baseline_byte_identical(recorded: pytest.Pytester) -> None:
    before = baseline_bytes(recorded.path)
    set_rankings(recorded.path, dict(GOLD, q01=["travel-002", "travel-003", "travel-001"]))
    result = recorded.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=7, failed=1)
    result.stdout.fnmatch_lines([
        "rag: refused to record ndcg@3 of 'table': *",
        "rag: baseline not written: values of 'table' would lower the bar",
        "rag: baselines/retrieval.json is left as it was, byte for byte",
    ])
    assert baseline_bytes(recorded.path) == before
    assert recorded.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    after = baseline(recorded.path)["retrievers"]["table"]["questions"]["q01"]
    assert after == {"ranking": ["travel-002", "travel-003", "travel-001"],
                     "metrics": {"f1@3": 0.5, "ndcg@3": 0.5, "precision@3": 0.333333, "recall@3": 1.0}}


# issue 10, cases 4, 5 and 7: NUL characters, a byte-order mark, empty texts


def test_a_nul_character_in_a_chunk_is_a_load_error_naming_the_line(pytester: pytest.Pytester) -> None:
    chunks = [*CHUNKS[:3], {**CHUNKS[3], "text": "签收后7天内\u0000可申请"}, *CHUNKS[4:]]
    write_project(pytester.path, chunks=chunks)
    assert one_line_error(pytester.runpytest("--rag-eval", *RUN)) == (
        "ERROR: fixtures/chunks.jsonl:4: field 'text' holds a NUL character (U+0000), which Postgres cannot store; remove it"
    )


def test_a_byte_order_mark_is_accepted(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    for name in ("chunks.jsonl", "evalset.jsonl"):
        path = pytester.path / "fixtures" / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    pytester.runpytest("--rag-update-baseline", *RUN).assert_outcomes(passed=8)


def test_empty_texts_are_scored_like_any_chunk_with_a_counted_warning(pytester: pytest.Pytester) -> None:
    chunks = [*CHUNKS, {"id": "blank-001", "text": ""}, {"id": "blank-002", "text": "  "}]
    questions = [*QUESTIONS, {"id": "q07", "query": "空白", "relevant": ["blank-001"]}]
    write_project(pytester.path, chunks=chunks, questions=questions, rankings=dict(GOLD, q07=["blank-001"]))
    result = pytester.runpytest("--rag-update-baseline", *RUN)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["rag: warning: 2 chunks in fixtures/chunks.jsonl have an empty text; ranked and scored like any other"])
    assert baseline(pytester.path)["retrievers"]["table"]["questions"]["q07"]["metrics"]["recall@3"] == 1.0


# issue 10, case 6: the mode of written files


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_written_files_get_the_usual_mode_and_keep_an_existing_one(pytester: pytest.Pytester, umask_022: None) -> None:
    write_project(pytester.path)
    pytester.runpytest("--rag-update-baseline", "--rag-json", "out/results.json", "--rag-report", "out/report.md", *RUN)
    for name in (BASELINE, Path("out/results.json"), Path("out/report.md")):
        assert stat.S_IMODE((pytester.path / name).stat().st_mode) == 0o644, name
    (pytester.path / BASELINE).chmod(0o640)
    set_rankings(pytester.path, dict(GOLD, q05=[]))
    pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).assert_outcomes(passed=8)
    assert stat.S_IMODE((pytester.path / BASELINE).stat().st_mode) == 0o640


# issue 15: every input path checked for kind


def make_directory(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def make_loop(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(path.name)


@pytest.mark.parametrize(
    ("key", "make", "message"),
    [
        ("chunks", make_directory, "ERROR: fixtures/chunks.jsonl: is a directory; give a file path"),
        ("evalset", make_loop, "ERROR: fixtures/evalset.jsonl: is a symbolic link loop"),
        ("baseline", make_directory, "ERROR: baselines/retrieval.json: is a directory; give a file path"),
        ("baseline", make_loop, "ERROR: baselines/retrieval.json: is a symbolic link loop"),
    ],
)
def test_an_input_path_that_is_no_file_is_one_line(
    recorded: pytest.Pytester, key: str, make: Callable[[Path], None], message: str
) -> None:
    path = recorded.path / {"chunks": "fixtures/chunks.jsonl", "evalset": "fixtures/evalset.jsonl", "baseline": str(BASELINE)}[key]
    make(path)
    assert one_line_error(recorded.runpytest("--rag-eval", *RUN)) == message


def test_an_input_under_a_file_is_one_line(recorded: pytest.Pytester) -> None:
    pyproject = recorded.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace('"fixtures/evalset.jsonl"', '"fixtures/chunks.jsonl/evalset.jsonl"'))
    assert one_line_error(recorded.runpytest("--rag-eval", *RUN)) == (
        "ERROR: fixtures/chunks.jsonl/evalset.jsonl: fixtures/chunks.jsonl is a file, not a folder"
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "ERROR: cfg: is a directory; give a file path"),
        (lambda p: p.symlink_to("cfg"), "ERROR: cfg: is a symbolic link loop"),
    ],
)
def test_a_config_path_that_is_no_file_is_one_line(recorded: pytest.Pytester, make: Callable[[Path], None], message: str) -> None:
    make(recorded.path / "cfg")
    assert one_line_error(recorded.runpytest("--rag-eval", "--rag-config", "cfg", *RUN)) == message
    assert one_line_error(recorded.runpytest("--rag-eval", "--rag-config", "pyproject.toml/x", *RUN)) == (
        "ERROR: pyproject.toml/x: pyproject.toml is a file, not a folder"
    )


# issue 15: JSON that Python's decoder rejects without a JSONDecodeError


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda text: text.replace('"k": 3', '"k": ' + "[" * 5000 + "]" * 5000, 1), "not valid JSON (nested deeper than 100 levels)"),
        (lambda text: text.replace('"k": 3', '"k": ' + "9" * 5000, 1), "not valid JSON (an integer literal has more than 4300 digits)"),
        (set_value(["fingerprint", "retrievers"], ["bm25"]), "fingerprint.retrievers must be an object, got an array"),
        (set_value(["fingerprint", "retrievers", "bm25"], '"bm25"'), "fingerprint.retrievers.bm25 must be an object, got a string"),
        (set_value(["retrievers", "table", "questions", "q01", "ranking"], ["travel-001\nFAILED rag::x"]),
         "retrievers.table.questions.q01.ranking[0] holds a control character (U+000A)"),
    ],
)
def test_a_baseline_python_cannot_decode_or_of_the_wrong_shape_is_one_line(
    recorded: pytest.Pytester, change: Callable[[str], str], problem: str
) -> None:
    edit_baseline(recorded.path, change)
    assert one_line_error(recorded.runpytest("--rag-eval", *RUN)) == f"ERROR: baselines/retrieval.json: {problem}{FIX_IT}"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "q07", "query": "x", "relevant": {"travel-001": ' + "1" + "0" * 400 + "}}",
         "ERROR: fixtures/evalset.jsonl:7: grade of 'travel-001' must be an integer from 0 to 100, got 1000000000000000000000000000000000000..."),
        ('{"id": "q07", "query": "x", "relevant": [' + "[" * 5000 + "]" * 5000 + "]}",
         "ERROR: fixtures/evalset.jsonl:7: invalid JSON (nested deeper than 100 levels)"),
        ('{"id": "q07\\n", "query": "x", "relevant": []}',
         "ERROR: fixtures/evalset.jsonl:7: question id 'q07\\n' holds a control character (U+000A); remove it"),
    ],
)
def test_an_eval_set_line_python_cannot_take_is_one_line(recorded: pytest.Pytester, line: str, message: str) -> None:
    path = recorded.path / "fixtures" / "evalset.jsonl"
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    assert one_line_error(recorded.runpytest("--rag-eval", *RUN)) == message


def test_a_retriever_name_with_a_line_break_is_one_line(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers='[tool.ragretrieval.retrievers."bm25\\n"]\ntype = "bm25"\n')
    assert one_line_error(pytester.runpytest("--rag-eval", *RUN)) == (
        "ERROR: pyproject.toml [tool.ragretrieval.retrievers.bm25\\n]: retriever names may hold letters, digits, "
        "'_', '-' and '.' only"
    )


def test_question_ids_with_dots_and_slashes_are_selected_with_minus_k(pytester: pytest.Pytester) -> None:
    questions = [{**q, "id": {"q01": "doc/1.2", "q02": "问题[2]"}.get(q["id"], q["id"])} for q in QUESTIONS]
    gold = {{"q01": "doc/1.2", "q02": "问题[2]"}.get(qid, qid): ranking for qid, ranking in GOLD.items()}
    write_project(pytester.path, questions=questions, rankings=gold, settings='fail_on = ["metric", "question"]')
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    result = pytester.runpytest("--rag-eval", "-k", "question::doc/1.2 or question::问题[2]", "-v", *RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["rag::bm25::question::doc/1.2 PASSED*"])


# issue 15, then 32: a retriever entry without its fingerprint is damage (a refused update dropped it)


def test_a_retriever_without_its_fingerprint_is_damage(recorded: pytest.Pytester) -> None:
    def drop(text: str) -> str:
        doc = json.loads(text)
        del doc["fingerprint"]["retrievers"]["bm25"]
        return json.dumps(doc, indent=2)

    edit_baseline(recorded.path, drop)
    line = one_line_error(recorded.runpytest("--rag-eval", *RUN))
    assert line.startswith("ERROR: baselines/retrieval.json: retrievers.bm25 has no fingerprint.retrievers.bm25"), line


# issue 40, item 11: question digests emptied compare nothing, so they are damage


@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
def test_emptied_question_digests_are_damage(recorded: pytest.Pytester, flag: str) -> None:
    """Each `fingerprint.questions.digests` entry set to {} and `questions.sha256` zeroed: the gate passed a
    worse run with a warning that 0 questions are comparable (and `diff --fail-on-lower` exited 0)."""
    def empty(text: str) -> str:
        doc = json.loads(text)
        questions = doc["fingerprint"]["questions"]
        questions["digests"] = {qid: {} for qid in questions["digests"]}
        questions["sha256"] = "0" * 64
        return json.dumps(doc, indent=2)

    edit_baseline(recorded.path, empty)
    before = baseline_bytes(recorded.path)
    assert one_line_error(recorded.runpytest(flag, *RUN)) == (
        "ERROR: baselines/retrieval.json: fingerprint.questions.digests.q01.query is missing: a run writes the short "
        f"digests of every question's query and gold, without which no question is comparable{FIX_IT}")
    assert baseline_bytes(recorded.path) == before


# issue 15: outputs that cannot hurt inputs


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rag-json", "baselines/retrieval.json"],
         "ERROR: --rag-json baselines/retrieval.json: is the baseline, which writing would overwrite; give another path"),
        (["--rag-report", "fixtures/chunks.jsonl"],
         "ERROR: --rag-report fixtures/chunks.jsonl: is the chunks file, which writing would overwrite; give another path"),
        (["--rag-html", "pyproject.toml"], "ERROR: --rag-html pyproject.toml: is the config file, which writing would overwrite; give another path"),
        (["--rag-json", "fixtures/evalset.jsonl/results.json"],
         "ERROR: --rag-json fixtures/evalset.jsonl/results.json: fixtures/evalset.jsonl is a file, not a folder; give another path"),
        (["--rag-json", "out.json", "--rag-report", "out.json"], "ERROR: --rag-report out.json: is also given to --rag-json; give each file its own path"),
    ],
)
@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
def test_an_output_that_would_hurt_an_input_stops_the_run(recorded: pytest.Pytester, argv: list[str], message: str, flag: str) -> None:
    before = {path: path.read_bytes() for path in recorded.path.rglob("*") if path.is_file()}
    assert one_line_error(recorded.runpytest(flag, *argv, *RUN)) == message
    assert {path: path.read_bytes() for path in recorded.path.rglob("*") if path.is_file()} == before



# issue 32: every file the configuration makes the run read is an input


def _with_declared_inputs(folder: Path) -> None:
    (folder / "fixtures").mkdir()
    (folder / "fixtures" / "user_dict.txt").write_text("猫眼屏 5 n\n", encoding="utf-8")
    (folder / "fixtures" / "run.trec").write_text("q1 Q0 doc/1 1 2.0 mine\n", encoding="utf-8")
    write_project(folder, retrievers=retriever("bm25", "bm25", tokenizer="jieba", user_dict="fixtures/user_dict.txt")
                  + retriever("mine", "run", path="fixtures/run.trec"))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rag-html", "fixtures/user_dict.txt"], "ERROR: --rag-html fixtures/user_dict.txt: is retriever 'bm25''s "
         "user_dict, which writing would overwrite; give another path"),
        (["--rag-json", "fixtures/run.trec"], "ERROR: --rag-json fixtures/run.trec: is retriever 'mine''s path, "
         "which writing would overwrite; give another path"),
        (["--rag-report", "linked.txt"], "ERROR: --rag-report linked.txt: is retriever 'bm25''s user_dict, "
         "which writing would overwrite; give another path"),
    ],
)
@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
def test_no_output_names_a_user_dictionary_or_a_run_file(pytester: pytest.Pytester, argv: list[str], message: str,
                                                          flag: str) -> None:
    _with_declared_inputs(pytester.path)
    (pytester.path / "linked.txt").symlink_to(pytester.path / "fixtures" / "user_dict.txt")
    before = {path: path.read_bytes() for path in pytester.path.rglob("*") if path.is_file()}
    assert one_line_error(pytester.runpytest(flag, *argv, *RUN)) == message
    assert {path: path.read_bytes() for path in pytester.path.rglob("*") if path.is_file()} == before


SABOTAGE = '''
from pathlib import Path


def make(ctx):
    """Puts a file where the report's folder should be, once the run has started."""
    Path("out").write_text("in the way")
    return lambda query, k: []
'''


def test_a_report_that_cannot_be_written_after_the_run_is_one_line_after_the_table(pytester: pytest.Pytester) -> None:
    write_project(pytester.path, retrievers=retriever("bm25", "bm25") + retriever("saboteur", "python", factory="saboteur:make"))
    pytester.makepyfile(saboteur=SABOTAGE)
    pytester.runpytest("--rag-update-baseline", *RUN)
    (pytester.path / "out").unlink()
    result = pytester.runpytest("--rag-eval", "--rag-report", "out/report.md", "--rag-json", "results.json", *RUN)
    result.assert_outcomes(passed=8)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = result.stdout.lines
    table = next(i for i, line in enumerate(lines) if line.startswith("retriever "))
    error = lines.index("rag: error: could not write out/report.md: out is a file, not a folder")
    assert error > table and "rag: wrote results.json" in lines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("summary", ["missing/summary.md", "/dev/full"])
def test_a_step_summary_that_cannot_be_written_is_a_warning_only(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, summary: str
) -> None:
    if summary == "/dev/full" and not Path(summary).exists():
        pytest.skip("no /dev/full here")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", summary)
    result = recorded.runpytest("--rag-eval", *RUN)
    assert result.ret == pytest.ExitCode.OK
    reason = "No such file or directory" if summary.startswith("missing") else "No space left on device"
    result.stdout.fnmatch_lines([f"rag: warning: could not append the step summary to $GITHUB_STEP_SUMMARY ({summary}): {reason}"])


def test_update_into_a_baseline_folder_that_is_a_file_stops_before_the_run(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    (pytester.path / "baselines").write_text("not a folder")
    assert one_line_error(pytester.runpytest("--rag-update-baseline", *RUN)) == (
        "ERROR: pyproject.toml [tool.ragretrieval] key 'baseline': baselines/retrieval.json: baselines is a file, "
        "not a folder; give another path"
    )
