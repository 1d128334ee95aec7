"""The `ragretrieval` command line: find, suspects and diff on a small hand-made project."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import find as cli_find
from pytest_ragretrieval.cli import main

LONG = "差旅费用须在出差结束后十五个工作日内提交报销单并附发票原件逾期不予受理特殊情况需部门负责人签字"

CHUNKS: list[dict[str, Any]] = [
    {"id": "c1", "text": "ORDER-2024 表示订单已超时关闭"},
    {"id": "c2", "text": "order-2024 的处理办法：重新下单"},
    {"id": "c3", "text": "住宿标准每晚600元\n二线城市450元"},
    {"id": "c4", "text": "退款3个工作日内原路退回"},
    {"id": "c5", "text": LONG},
]

QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "query": "ORDER-2024 是什么错误", "relevant": ["c1"]},
    {"id": "q2", "query": "住宿标准", "relevant": {"c3": 2, "c4": 0}},
    {"id": "q3", "query": "年会在哪", "relevant": []},
]

SETTINGS = """\
chunks = "fixtures/chunks.jsonl"
evalset = "fixtures/evalset.jsonl"
k = 2

[retrievers.bm25]
type = "bm25"
"""

FINGERPRINT: dict[str, Any] = {"k": 2, "tokenizer": "jieba 0.42.1", "retrievers": {"bm25": {"k1": 1.5}}}


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_fixtures(folder: Path) -> None:
    (folder / "fixtures").mkdir(parents=True, exist_ok=True)
    (folder / "fixtures" / "chunks.jsonl").write_text(jsonl(CHUNKS), encoding="utf-8")
    (folder / "fixtures" / "evalset.jsonl").write_text(jsonl(QUESTIONS), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose pyproject.toml holds the settings under [tool.ragretrieval]."""
    write_fixtures(tmp_path)
    tool = SETTINGS.replace("[retrievers.", "[tool.ragretrieval.retrievers.")
    (tmp_path / "pyproject.toml").write_text("[tool.ragretrieval]\n" + tool, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def entry(questions: Mapping[str, tuple[list[str], Mapping[str, float]]], metrics: Mapping[str, float]) -> dict[str, Any]:
    return {
        "metrics": dict(metrics),
        "questions": {qid: {"ranking": ranking, "metrics": dict(values)} for qid, (ranking, values) in questions.items()},
    }


def write_results(path: Path, retrievers: Mapping[str, Any], fingerprint: Mapping[str, Any] = FINGERPRINT, k: int = 2) -> str:
    """A results file; a retriever the fingerprint does not name gets one (a file holds each entry's)."""
    named = {**{name: {"type": name} for name in retrievers}, **fingerprint.get("retrievers", {})}
    path.write_text(dumps(document(k, {**fingerprint, "retrievers": named}, retrievers)), encoding="utf-8")
    return path.name


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


# find


def test_find_ignores_ascii_case_and_keeps_corpus_order(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "find", "Order-2024")
    assert (code, err) == (0, [])
    assert out == ["c1\tORDER-2024 表示订单已超时关闭", "c2\torder-2024 的处理办法：重新下单"]


def test_find_shows_each_match_in_context_on_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, find printed a chunk's first 40 characters: for a chunk that opens with its heading, the
    heading, never the words around the keyword (逾期 sits 29 characters into c5)."""
    assert run(capsys, "find", "住宿")[1] == ["c3\t住宿标准每晚600元 二线城市450元"]
    code, out, _ = run(capsys, "find", "逾期")
    assert code == 0
    at = LONG.index("逾期")
    assert at > 20 and len(LONG) < at + 22
    assert out == ["c5\t..." + LONG[at - 20:]]


def test_find_joins_overlapping_matches_and_counts_the_rest() -> None:
    text = "a" * 30 + "KEY" + "b" * 5 + "key" + "c" * 60 + "key" + "d" * 60 + "key" + "e" * 60 + "key"
    shown = cli_find.in_context(text, "Key")
    first = "..." + "a" * 20 + "KEY" + "b" * 5 + "key" + "c" * 20 + "..."
    assert shown.startswith(first + " ...")
    assert shown.endswith("... (+1 more)") and shown.count("key") == 3 and shown.count("KEY") == 1


def test_find_without_hits_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "find", "年会")
    assert (code, out) == (1, [])
    assert err == ["ragretrieval: no chunk contains '年会' in fixtures/chunks.jsonl"]


# suspects


@pytest.fixture
def results(project: Path) -> str:
    """Two retrievers; c4 is ranked for q2 but judged grade 0, so it is no suspect. A metric at
    cutoff 3 is why a ranking holds 3 ids with k = 2."""
    return write_results(project / "results.json", {
        "bm25": entry({"q1": (["c1", "c2", "c5"], {}), "q2": (["c3", "c4"], {}), "q3": (["c2"], {})}, {"hit_rate@3": 1.0}),
        "vector": entry({"q1": (["c2", "c1"], {}), "q2": (["c5", "c3"], {}), "q3": ([], {})}, {"hit_rate@3": 1.0}),
    })


HEADER = "  retrievers        chunk  text"
RULE = "  ----------------  -----  " + "-" * 80
Q1 = "q1: ORDER-2024 是什么错误"
Q1_C2 = "  2/2 bm25, vector  c2     order-2024 的处理办法：重新下单"
Q1_C5 = "  1/2 bm25          c5     " + LONG[:40]
Q2 = "q2: 住宿标准"
Q2_C5 = "  1/2 vector        c5     " + LONG[:40]
Q3 = "q3 (no-answer): 年会在哪"
Q3_C2 = "  1/2 bm25          c2     order-2024 的处理办法：重新下单"
ADVICE = ": ranked but not labelled relevant; check each and add it to 'relevant' or give it grade 0"


def test_suspects_grouped_per_question_the_strongest_first(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "suspects", results) == (0, [
        "1 ranked chunk judged grade 0 left out",
        "3 suspects for 3 questions in the top 2 of results.json" + ADVICE,
        HEADER, RULE, Q1, Q1_C2, Q2, Q2_C5, Q3, Q3_C2,
    ], [])


def test_suspects_k_option_widens_the_cutoff(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    expected = ["4 suspects for 3 questions in the top 3 of results.json" + ADVICE,
                HEADER, RULE, Q1, Q1_C2, Q1_C5, Q2, Q2_C5, Q3, Q3_C2]
    assert run(capsys, "suspects", results, "--k", "3") == (0, ["1 ranked chunk judged grade 0 left out", *expected], [])
    code, out, _ = run(capsys, "suspects", results, "--k", "4")
    assert out[0] == "note: results.json holds at most 3 ids per ranking; --k 4 reads all of them"
    assert out[2:] == [expected[0].replace("top 3", "top 4"), *expected[1:]]


def test_suspects_are_limited_per_question_and_in_questions(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "suspects", results, "--k", "3", "--per-question", "1", "--questions", "2")
    assert (code, out[1:]) == (0, [
        "4 suspects for 3 questions in the top 3 of results.json" + ADVICE,
        HEADER, RULE, Q1, Q1_C2, "  ... 1 more for q1", Q2, Q2_C5,
        "2 suspects not shown (1 question not listed); --per-question 0 --questions 0 lists every one",
    ])
    code, out, _ = run(capsys, "suspects", results, "--k", "3", "--per-question", "0", "--questions", "0")
    assert out[-1] == Q3_C2 and len(out) == 11


def test_suspects_limits_are_whole_numbers(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "suspects", results, "--questions", "-1") == (2, [], [
        "ragretrieval: error: argument --questions: expected a whole number >= 0 (0: no limit), got '-1'"])


def test_suspects_none_when_everything_is_labelled(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = write_results(project / "r.json", {"bm25": entry({"q1": (["c1"], {}), "q3": ([], {})}, {})})
    assert run(capsys, "suspects", name) == (
        0, ["no suspects: every chunk in the top 2 of r.json is labelled for its question"], [],
    )


# diff


def bm25(q1: list[str], q2: list[str], p1: float, p2: float, n1: float, n2: float) -> dict[str, Any]:
    """Per-question precision@2 and ndcg@2 as the plugin scores them; the means over q1 and q2."""
    values = {"q1": (q1, {"precision@2": p1, "ndcg@2": n1}), "q2": (q2, {"precision@2": p2, "ndcg@2": n2})}
    return entry(values, {"ndcg@2": round((n1 + n2) / 2, 6), "precision@2": (p1 + p2) / 2})


# q1 labels c1, q2 labels c3 (grade 2): [c2, c1] scores ndcg@2 = (1/log2 3) / 1 = 0.630930.
OLD = {"bm25": bm25(["c1", "c2"], ["c3", "c4"], 0.5, 0.5, 1.0, 1.0), "hybrid": bm25(["c2", "c5"], ["c3"], 0.0, 0.5, 0.0, 1.0)}
NEW = {"bm25": bm25(["c2", "c1"], ["c4", "c5"], 0.5, 0.0, 0.630930, 0.0), "hybrid": bm25(["c1", "c2"], ["c3"], 0.5, 0.5, 1.0, 1.0)}


def test_diff_table_per_question_changes_and_added_retriever(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", OLD)
    new = write_results(project / "new.json", {**NEW, "vector": NEW["hybrid"]})
    code, out, err = run(capsys, "diff", old, new)
    assert (code, err) == (1, [])
    assert out == [
        "old: old.json (k=2)  new: new.json (k=2)",
        "values as each file stores them (its last update's, not its approved bar)",  # these keep no labels
        "retriever  metric       old     new     delta",
        "---------  -----------  ------  ------  -------",
        "bm25       precision@2  0.5000  0.2500  -0.2500",
        "bm25       ndcg@2       1.0000  0.3155  -0.6845",
        "hybrid     precision@2  0.2500  0.5000  +0.2500",
        "hybrid     ndcg@2       0.5000  1.0000  +0.5000",
        "retriever 'vector': added (only in new.json)",
        "",
        "per-question changes, worst drop first:",
        "bm25 precision@2:",
        "  q2: 0.5000 -> 0.0000 (-0.5000)  [c3, c4] -> [c4, c5]",
        "bm25 ndcg@2:",
        "  q2: 1.0000 -> 0.0000 (-1.0000)  [c3, c4] -> [c4, c5]",
        "  q1: 1.0000 -> 0.6309 (-0.3691)  [c1, c2] -> [c2, c1]",
        "hybrid precision@2:",
        "  q1: 0.0000 -> 0.5000 (+0.5000)  [c2, c5] -> [c1, c2]",
        "hybrid ndcg@2:",
        "  q1: 0.0000 -> 1.0000 (+1.0000)  [c2, c5] -> [c1, c2]",
        "2 metrics dropped, 2 improved",
    ]


def test_diff_improvement_only_exits_0_and_lists_removed(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", OLD)
    new = write_results(project / "new.json", {"hybrid": NEW["hybrid"]})
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert "retriever 'bm25': removed (only in old.json)" in out
    assert out[-1] == "0 metrics dropped, 2 improved"


def test_diff_added_and_removed_metric(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", {"bm25": entry({}, {"recall@2": 0.5, "mrr@2": 1.0})})
    new = write_results(project / "new.json", {"bm25": entry({}, {"recall@2": 0.5, "ndcg@2": 0.75})})
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert out[4:] == [
        "bm25       recall@2  0.5000  0.5000  +0.0000",
        "bm25       ndcg@2    -       0.7500  added",
        "bm25       mrr@2     1.0000  -       removed",
        "0 metrics dropped, 0 improved",
    ]


def test_diff_names_system_changes_and_compares_across_them(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", {"hybrid": OLD["hybrid"]})
    changed = {"k": 2, "tokenizer": "char", "retrievers": {"bm25": {"k1": 1.2}}}
    new = write_results(project / "new.json", {"hybrid": NEW["hybrid"]}, fingerprint=changed)
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert out[1] == 'compared across changes: tokenizer "jieba 0.42.1" -> "char"'
    assert "hybrid     ndcg@2       0.5000  1.0000  +0.5000" in out
    assert out[-1] == "0 metrics dropped, 2 improved"


def test_diff_of_another_yardstick_names_it_and_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", {"hybrid": OLD["hybrid"]},
                        fingerprint={**FINGERPRINT, "yardstick": {"k": 2, "metrics_version": 1}})
    new = write_results(project / "new.json", {"hybrid": NEW["hybrid"]},
                        fingerprint={**FINGERPRINT, "yardstick": {"k": 2, "metrics_version": 2}})
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 1
    assert out[1] == ("not comparable: the yardstick differs in metrics_version 1 -> 2; "
                      "the numbers below measure different things (pitfalls 3-4)")
    assert out[-1] == "0 metrics dropped, 2 improved; not comparable: the yardstick differs"


def test_diff_names_questions_in_one_file_only(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", {"bm25": entry({"q1": (["c1"], {}), "q2": (["c3"], {})}, {})})
    new = write_results(project / "new.json", {"bm25": entry({"q1": (["c1"], {}), "q3": ([], {})}, {})})
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert out[-4:] == [
        "per-question changes, worst drop first:",
        "bm25: questions only in the old file: q2",
        "bm25: questions only in the new file: q3",
        "0 metrics dropped, 0 improved",
    ]


def test_diff_of_a_file_with_itself_is_clean(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = write_results(project / "old.json", OLD)
    code, out, _ = run(capsys, "diff", old, old)
    assert code == 0
    assert "per-question changes, worst drop first:" not in out
    assert out[-1] == "0 metrics dropped, 0 improved"


def test_diff_ignores_fingerprints_of_retrievers_only_one_file_holds(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline leaves out a retriever that could not run; results name every configured one."""
    old = write_results(project / "old.json", OLD)
    wider = {**FINGERPRINT, "retrievers": {**FINGERPRINT["retrievers"], "rerank": {"model": "m"}}}
    new = write_results(project / "new.json", OLD, fingerprint=wider)
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert not any(line.startswith("not comparable") for line in out)


# --config


@pytest.mark.parametrize("before_command", [False, True])
def test_config_option_reads_a_toml_file_with_keys_at_top_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], before_command: bool
) -> None:
    write_fixtures(tmp_path / "gate")
    (tmp_path / "gate" / "rag.toml").write_text(SETTINGS, encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    option = ["--config", "../gate/rag.toml"]
    argv = [*option, "find", "退款"] if before_command else ["find", "退款", *option]
    assert run(capsys, *argv) == (0, ["c4\t退款3个工作日内原路退回"], [])


# errors: one line, exit 2, nothing on stdout


def broken_chunks(folder: Path) -> None:
    (folder / "fixtures" / "chunks.jsonl").write_text(jsonl(CHUNKS[:1]) + "{oops\n", encoding="utf-8")


def stale_results(folder: Path) -> None:
    write_results(folder / "results.json", {"bm25": entry({"q9": (["c1"], {})}, {})})


def stale_chunk(folder: Path) -> None:
    write_results(folder / "results.json", {"bm25": entry({"q1": (["c9"], {})}, {})})


def stale_baseline(folder: Path) -> None:
    (folder / "baselines").mkdir(exist_ok=True)
    write_results(folder / "baselines" / "retrieval.json", {"bm25": entry({"q9": (["c1"], {})}, {})})


def stale_baseline_chunk(folder: Path) -> None:
    (folder / "baselines").mkdir(exist_ok=True)
    write_results(folder / "baselines" / "retrieval.json", {"bm25": entry({"q1": (["c9"], {})}, {})})


def broken_results(folder: Path) -> None:
    (folder / "results.json").write_text('{"format_version": 1,', encoding="utf-8")


def no_project(folder: Path) -> None:
    (folder / "pyproject.toml").unlink()


def nothing(folder: Path) -> None:
    """The command line alone is wrong."""


ERRORS = [
    (no_project, ["find", "x"], "no pyproject.toml in .; add a [tool.ragretrieval] table there or pass --config PATH"),
    (nothing, ["find", "x", "--config", "missing.toml"], "missing.toml: config file not found"),
    (broken_chunks, ["find", "x"], "fixtures/chunks.jsonl:2: invalid JSON (Expecting property name enclosed in double quotes at column 2)"),
    (nothing, ["suspects", "missing.json"], "missing.json: file not found"),
    (broken_results, ["diff", "results.json", "results.json"], "results.json: not valid JSON (Expecting property name enclosed in double quotes at line 1 column 22); fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"),
    (stale_results, ["suspects", "results.json"], "results.json: question 'q9' is not in fixtures/evalset.jsonl; the eval set changed since the results were written; rerun `pytest --rag-eval --rag-json results.json`"),
    (stale_chunk, ["suspects", "results.json"], "results.json: chunk 'c9' (retriever 'bm25', question 'q1') is not in fixtures/chunks.jsonl; the corpus changed since the results were written; rerun `pytest --rag-eval --rag-json results.json`"),
    # issue 40, item 11: the advice named the baseline, an input, as --rag-json's output
    (stale_baseline, ["suspects", "baselines/retrieval.json"], "baselines/retrieval.json: question 'q9' is not in "
     "fixtures/evalset.jsonl; the eval set changed since the results were written; record the baseline again with "
     "`pytest --rag-update-baseline`, or write fresh results elsewhere (`pytest --rag-eval --rag-json "
     "rag-results.json`) and pass those"),
    # issue 52: a question removed from the eval set is skipped by pool (tests/unit/test_cli_pool.py); a chunk
    # gone from the corpus is still refused
    (stale_baseline_chunk, ["pool"], "baselines/retrieval.json: chunk 'c9' (retriever 'bm25', question 'q1') is "
     "not in fixtures/chunks.jsonl; the corpus changed since the results were written; record the baseline again "
     "with `pytest --rag-update-baseline`, or write fresh results elsewhere (`pytest --rag-eval --rag-json "
     "rag-results.json`) and pass those"),
    (nothing, ["suspects", "fixtures"], "fixtures: is a directory; give a file path"),
    (stale_results, ["suspects", "results.json", "--k", "0"], "argument --k: expected a whole number >= 1, got '0'"),
    (nothing, ["find", ""], "KEYWORD must not be empty"),
    (nothing, ["find"], "the following arguments are required: KEYWORD"),
    (nothing, [], "the following arguments are required: COMMAND"),
]


@pytest.mark.parametrize(("setup", "argv", "message"), ERRORS, ids=[" ".join(e[1]) + f" [{e[0].__name__}]" for e in ERRORS])
def test_errors_are_one_line_and_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str], setup: Any, argv: list[str], message: str
) -> None:
    setup(project)
    assert run(capsys, *argv) == (2, [], [f"ragretrieval: error: {message}"])


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "suspects", "--help")
    assert (code, err) == (0, [])
    assert out[0] == "usage: ragretrieval suspects [-h] [--config PATH] [--k N] [--per-question N]"


def test_console_script_help() -> None:
    script = Path(sys.executable).parent / "ragretrieval"
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ragretrieval [-h] COMMAND ...")
    for text in ("find", "suspects", "diff", "exit status:", "2  usage error"):
        assert text in done.stdout


def results_text(project: Path, replace: str, by: str) -> None:
    text = (project / "results.json").read_text(encoding="utf-8")
    assert replace in text
    (project / "results.json").write_text(text.replace(replace, by, 1), encoding="utf-8")


@pytest.mark.parametrize(
    ("replace", "by", "problem"),
    [
        ('"k": 2', '"k": ' + "[" * 5000 + "]" * 5000, "not valid JSON (nested deeper than 100 levels)"),
        ('"k": 2', '"k": ' + "7" * 5000, "not valid JSON (an integer literal has more than 4300 digits)"),
        ('"precision@2": 0.5', '"precision@2": 1' + "0" * 400,
         "retrievers.bm25.metrics.precision@2 = 10000000000000000000... (401 digits) is not a finite number in [0, 1]"),
        ('"precision@2": 0.5', '"precision@2": NaN', "retrievers.bm25.metrics.precision@2 = NaN is not a finite number in [0, 1]"),
        ('"retrievers": {\n      "bm25"', '"retrievers": [\n      "bm25"', "not valid JSON*"),
        # issue 32: metric keys have one form, `name@digits`, its digits ASCII and bounded
        ('"precision@2": 0.5', '"precision@\u00b2": 0.5', "retrievers.bm25.metrics key 'precision@²' is not a metric key*"),
        ('"precision@2": 0.5', '"precision@' + "1" * 5001 + '": 0.5',
         "retrievers.bm25.metrics key 'precision@11111111111111111111... (5011 characters)' is not a metric key*"),
    ],
)
@pytest.mark.parametrize("command", ["diff", "suspects", "comment"])
def test_results_python_cannot_decode_exit_2_not_1(
    project: Path, capsys: pytest.CaptureFixture[str], replace: str, by: str, problem: str, command: str
) -> None:
    write_results(project / "results.json", {"bm25": entry({"q1": (["c1"], {"precision@2": 0.5})}, {"precision@2": 0.5})})
    results_text(project, replace, by)
    argv = {"diff": ["diff", "results.json", "results.json"], "suspects": ["suspects", "results.json"],
            "comment": ["comment", "results.json"]}[command]
    code, out, err = run(capsys, *argv)
    assert (code, out, len(err)) == (2, [], 1), err
    expected = f"ragretrieval: error: results.json: {problem}; fix it, or delete it and run `pytest --rag-update-baseline` to record a new one"
    assert re.fullmatch(".*".join(map(re.escape, expected.split("*"))), err[0]), err[0]


def test_an_unexpected_error_is_one_line_and_exit_3(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object) -> object:
        raise RuntimeError("bug\nhere")

    monkeypatch.setattr(cli_find, "run", broken)
    code, out, err = run(capsys, "find", "x")
    assert (code, out, len(err)) == (3, [], 1)
    assert err[0].startswith("ragretrieval: internal error: RuntimeError: bug here (") and err[0].endswith("; please report it")


# issue 32: a baseline that disagrees with itself is damage for every command that reads it


def _k(doc: dict[str, Any]) -> None:
    doc["fingerprint"]["yardstick"] = {"k": 7}


def _key(cutoff: str) -> Callable[[dict[str, Any]], None]:
    def damage(doc: dict[str, Any]) -> None:
        doc["retrievers"]["bm25"]["metrics"][f"ndcg@{cutoff}"] = 0.5
    return damage


def _unfingerprinted(doc: dict[str, Any]) -> None:
    del doc["fingerprint"]["retrievers"]["bm25"]


@pytest.mark.parametrize(("damage", "problem"), [
    (_k, "k = 2 disagrees with fingerprint.yardstick.k = 7; one run writes both"),
    (_key("²"), "retrievers.bm25.metrics key 'ndcg@²' is not a metric key"),
    (_key("9" * 5001), "retrievers.bm25.metrics key 'ndcg@9999999999999999999999999... (5006 characters)' is not a metric key"),
    (_unfingerprinted, "retrievers.bm25 has no fingerprint.retrievers.bm25"),
])
@pytest.mark.parametrize("command", [("diff", "good.json", "bad.json"), ("diff", "bad.json", "good.json"),
                                     ("suspects", "bad.json"), ("comment", "bad.json")])
def test_a_self_contradicting_file_is_one_line_for_every_command(
        project: Path, capsys: pytest.CaptureFixture[str], damage: Callable[[dict[str, Any]], None], problem: str,
        command: tuple[str, ...]) -> None:
    write_results(project / "good.json", OLD)
    write_results(project / "bad.json", OLD)
    doc = json.loads((project / "bad.json").read_text(encoding="utf-8"))
    damage(doc)
    (project / "bad.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    code, _, err = run(capsys, *command)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"ragretrieval: error: bad.json: {problem}"), err[0]
