"""Bad input gets one line naming the place and the fix, no traceback, and nothing on disk changes."""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from projects import RUN, baseline_bytes, one_line_error, retriever, write_project


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> pytest.Pytester:
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def matches(line: str, pattern: str) -> bool:
    """Glob with `*` only: messages hold brackets that fnmatch would read as character classes."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), line) is not None


def append_line(pytester: pytest.Pytester, name: str, line: str) -> None:
    path = pytester.path / "fixtures" / name
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")


@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
@pytest.mark.parametrize(
    ("name", "line", "message"),
    [
        ("evalset.jsonl", '{"id": "q07", "query": "x", "relevant": ["nope-001"]}',
         "ERROR: fixtures/evalset.jsonl:7: unknown chunk id 'nope-001' in 'relevant'"),
        ("evalset.jsonl", '{"id": "q07", "query": "x", "relevant": [',
         "ERROR: fixtures/evalset.jsonl:7: invalid JSON (Expecting value at column 42)"),
        ("evalset.jsonl", '{"id": "q01", "query": "x", "relevant": []}',
         "ERROR: fixtures/evalset.jsonl:7: duplicate question id 'q01' (first at fixtures/evalset.jsonl:1)"),
        ("evalset.jsonl", '{"id": "q07", "query": "  ", "relevant": []}',
         "ERROR: fixtures/evalset.jsonl:7: field 'query' must be a non-empty string"),
        ("evalset.jsonl", '{"id": "q07", "query": "x"}',
         "ERROR: fixtures/evalset.jsonl:7: missing field 'relevant' (use [] for a no-answer question)"),
        ("chunks.jsonl", '{"id": "travel-001", "text": "again"}',
         "ERROR: fixtures/chunks.jsonl:9: duplicate chunk id 'travel-001' (first at fixtures/chunks.jsonl:1)"),
        ("chunks.jsonl", '{"text": "no id"}', "ERROR: fixtures/chunks.jsonl:9: missing field 'id'"),
    ],
)
def test_a_bad_fixture_line(recorded: pytest.Pytester, flag: str, name: str, line: str, message: str) -> None:
    before = baseline_bytes(recorded.path)
    append_line(recorded, name, line)
    assert one_line_error(recorded.runpytest(flag, *RUN)) == message
    assert baseline_bytes(recorded.path) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("k = 3", "k = 3\nkk = 4"), "ERROR: pyproject.toml [tool.ragretrieval]: unknown key 'kk'; did you mean 'k'? known keys: *"),
        (("k = 3", "k = 0"), "ERROR: pyproject.toml [tool.ragretrieval] key 'k': must be >= 1, got 0"),
        (('type = "bm25"', 'type = "bm52"'),
         "ERROR: pyproject.toml [tool.ragretrieval.retrievers.bm25] key 'type': must be one of *, got 'bm52'; "
         "did you mean 'bm25'?"),
        (('type = "bm25"', 'type = "bm25"\nk2 = 1'),
         "ERROR: pyproject.toml [tool.ragretrieval.retrievers.bm25]: unknown key 'k2'; known keys: *"),
        (("k = 3", 'k = 3\nmetrics = ["ndcg", "rceall@10"]'),
         "ERROR: pyproject.toml [tool.ragretrieval] key 'metrics': unknown metric 'rceall@10'; did you mean 'recall@10'? "
         "known metrics: *"),
        (("k = 3", "k = 3\ntolerance = {ndgc = 0.1}"),
         "ERROR: pyproject.toml [tool.ragretrieval] key 'tolerance.ndgc': unknown metric 'ndgc'; did you mean 'ndcg'?*"),
        (("[tool.ragretrieval]", "[tool.ragretreival]"),
         "ERROR: pyproject.toml: [tool.ragretreival] is not read: the plugin's table is [tool.ragretrieval]; rename it "
         "(and its sub-tables, [tool.ragretrieval.retrievers.NAME])"),
    ],
)
def test_a_bad_config_value(recorded: pytest.Pytester, edit: tuple[str, str], message: str) -> None:
    before = baseline_bytes(recorded.path)
    pyproject = recorded.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace(*edit, 1), encoding="utf-8")
    line = one_line_error(recorded.runpytest("--rag-update-baseline", *RUN))
    assert matches(line, message), line
    assert baseline_bytes(recorded.path) == before


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text: text[: len(text) // 2],
         "ERROR: baselines/retrieval.json: not valid JSON (*); fix it, or delete it and run "
         "`pytest --rag-update-baseline` to record a new one"),
        (lambda text: text.replace('"format_version": 5', '"format_version": 7'),
         "ERROR: baselines/retrieval.json: format_version is 7, this plugin reads format_version 1, 2, 3, 4 and 5; fix it*"),
        (lambda text: text.replace('"f1@3": 0.56', '"f1@3": "high"', 1),
         "ERROR: baselines/retrieval.json: retrievers.*.metrics must map metric names to numbers; fix it*"),
    ],
)
@pytest.mark.parametrize("flag", ["--rag-eval", "--rag-update-baseline"])
def test_a_corrupted_baseline(
    recorded: pytest.Pytester, damage: Callable[[str], str], message: str, flag: str
) -> None:
    path = recorded.path / "baselines" / "retrieval.json"
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    before = baseline_bytes(recorded.path)
    line = one_line_error(recorded.runpytest(flag, *RUN))
    assert matches(line, message), line
    assert baseline_bytes(recorded.path) == before


@pytest.mark.parametrize(("option", "message"), [
    ("--rag-db=embeded", "error: argument --rag-db: invalid choice: 'embeded'; did you mean 'embedded'? "
                         "(choose from 'auto', 'docker', 'embedded', 'url')"),
    ("--rag-cache=read-only", "error: argument --rag-cache: invalid choice: 'read-only'; did you mean "
                              "'readonly'? (choose from 'readwrite', 'readonly', 'off')"),
])
def test_a_misspelt_option_value_gets_did_you_mean(recorded: pytest.Pytester, option: str, message: str) -> None:
    result = recorded.runpytest("--rag-eval", option, *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_no_settings_at_all_says_where_to_put_them(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.other]\nx = 1\n")
    line = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert line == (
        "ERROR: pyproject.toml has no [tool.ragretrieval] table; add one (see the README) or pass --rag-config PATH"
    )


def test_a_retriever_source_that_is_not_configured(pytester: pytest.Pytester) -> None:
    write_project(
        pytester.path,
        retrievers=retriever("mix", "python", factory="m:f", sources=["bm25"]),
    )
    line = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert line == (
        "ERROR: pyproject.toml [tool.ragretrieval.retrievers.mix]: source 'bm25' is not a configured retriever; "
        "configured: mix"
    )
