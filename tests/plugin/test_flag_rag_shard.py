"""`--rag-shard 1/3`, `2/3`, `3/3`, then `ragretrieval merge`: the same verdicts, the same results and
the same baseline as one unsharded run, on the bundled sample; a missing shard is one line."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from projects import RUN, one_line_error, retriever, without_timings, write_project

from pytest_ragretrieval.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures"
SETTINGS = 'metrics = ["recall", "ndcg"]\nsignificance = "randomization"\nfail_on = ["metric", "question"]'
RETRIEVERS = retriever("bm25", "bm25") + retriever("bm25_search", "bm25", tokenizer="jieba-search")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The sample with a baseline recorded, then bm25 made worse: some items fail, some pass."""
    write_project(pytester.path, retrievers=RETRIEVERS, settings=SETTINGS)
    for name in ("chunks.jsonl", "evalset.jsonl"):
        shutil.copy(SAMPLE / name, pytester.path / "fixtures" / name)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    worse = RETRIEVERS.replace('type = "bm25"\n', 'type = "bm25"\nmin_score = 6.0\n', 1)
    text = (pytester.path / "pyproject.toml").read_text(encoding="utf-8").replace(RETRIEVERS, worse)
    (pytester.path / "pyproject.toml").write_text(text, encoding="utf-8")
    return pytester


def report(path: Path) -> str:
    """A Markdown report without its latencies (`0.2 / 0.5`) and timings."""
    text = re.sub(r"[0-9.]+ / [0-9.]+", "p50 / p95", path.read_text(encoding="utf-8"))
    return "\n".join(line for line in text.splitlines() if "time" not in line.lower())


def explanations(path: Path) -> list[str]:
    """The HTML report's why-it-missed blocks."""
    return re.findall(r'<details class="explanation".*?</details>', path.read_text(encoding="utf-8"), re.S)


def merge(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    capsys.readouterr()  # what the runs before printed
    code = main(["merge", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_three_shards_merged_are_one_run(project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    whole = project.runpytest("--rag-eval", "--rag-no-reuse", "--rag-json=whole.json", "--rag-report=whole.md", "-rA",
                              "--rag-html=whole.html", *RUN)  # measured, as the shards are
    assert whole.ret == 1
    path = project.path / "baselines" / "retrieval.json"
    before = path.read_bytes()
    parts = []
    for index in (1, 2, 3):
        result = project.runpytest("--rag-eval", f"--rag-shard={index}/3", f"--rag-json=part{index}.json", *RUN)
        assert result.ret == 0, result.stdout.str()
        assert result.parseoutcomes()["skipped"] > 0  # the question items of other shards' questions
        result.stdout.fnmatch_lines([f"rag: shard {index}/3: * of 60 questions, judged by `ragretrieval merge`*"])
        parts.append(f"part{index}.json")
    assert path.read_bytes() == before

    code, out, err = merge(capsys, *parts, "--json", "merged.json", "--report", "markdown=merged.md", "--tags",
                           "--report", "html=merged.html")
    assert (code, err) == (1, []) and "per tag:" in out  # --tags: every row, under its own header
    assert without_timings(project.path / "merged.json") == without_timings(project.path / "whole.json")
    assert report(project.path / "merged.md") == report(project.path / "whole.md")
    explained = [explanations(project.path / name) for name in ("whole.html", "merged.html")]
    assert explained[0] == explained[1] and len(explained[0]) > 5  # the misses of bm25 with min_score 6
    verdicts = {line.split(" ", 2)[1]: line.split(" ", 1)[0] for line in whole.outlines
                if line.startswith(("PASSED rag::", "FAILED rag::"))}
    merged = {line.split(" ", 2)[1].rstrip(":"): line.split(" ", 1)[0] for line in out
              if line.startswith(("PASSED rag::", "FAILED rag::"))}
    assert merged == verdicts and "FAILED" in merged.values() and "PASSED" in merged.values()
    results = json.loads((project.path / "merged.json").read_text(encoding="utf-8"))
    assert results["significance"]["family"] == 2  # the metric items that moved, adjusted together as in one run

    assert merge(capsys, parts[0], parts[2]) == (
        2, [], ["ragretrieval: error: shard 2/3 missing: got 1/3, 3/3; pass all 3 partial records of the run"])

    # the update through the merge records what the unsharded update records, by the same rule (the bar):
    # the metric items pass against the bar (only question items failed), so both write the same file
    code, _, _ = merge(capsys, *parts, "--update-baseline")
    through_merge = path.read_bytes()
    path.write_bytes(before)
    plain = project.runpytest("--rag-update-baseline", *RUN)
    assert (code, plain.ret) == (0, 0) and path.read_bytes() == through_merge != before
    path.write_bytes(before)
    assert project.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN).ret == 0
    unsharded = path.read_bytes()
    path.write_bytes(before)
    assert merge(capsys, *parts, "--update-baseline", "--allow-regression")[0] == 0
    assert path.read_bytes() == unsharded != before


@pytest.mark.parametrize(("args", "message"), [
    (("--rag-shard=1/3",), "ERROR: --rag-shard needs --rag-json PATH: the shard's partial record is written there for "
                          "`ragretrieval merge`; add --rag-json shard-I.json"),
    (("--rag-shard=1/3", "--rag-update-baseline", "--rag-json=p.json"),
     "ERROR: --rag-shard records a partial run and judges nothing, so it records no baseline; run the shards with "
     "--rag-eval, then `ragretrieval merge PART... --update-baseline`"),
])
def test_shard_options_that_cannot_run_are_one_line(pytester: pytest.Pytester, args: tuple[str, ...],
                                                    message: str) -> None:
    write_project(pytester.path)
    result = pytester.runpytest("--rag-eval", *args, *RUN)
    assert one_line_error(result) == message


def test_a_merge_of_partials_that_all_call_a_measured_retriever_unavailable_fails(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 40, item 11: every partial edited to claim `unavailable.bm25` (the configuration's digest does not
    cover it) made `ragretrieval merge` skip bm25 and exit 0, though the baseline measured it."""
    write_project(pytester.path, retrievers=retriever("bm25", "bm25"))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    assert pytester.runpytest("--rag-eval", "--rag-shard=1/1", "--rag-json=part.json", *RUN).ret == 0
    path = pytester.path / "part.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["retrievers"]["bm25"]
    doc["unavailable"] = {"bm25": "claimed"}
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = merge(capsys, "part.json")
    assert code == 1 and not any(line.startswith("SKIPPED") for line in out)
    assert any(line.startswith("FAILED rag::bm25::") and "could not run on any of the 1 shards (claimed), but the "
               "baseline holds its values" in line for line in out), out
