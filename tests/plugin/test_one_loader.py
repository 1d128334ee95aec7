"""One loader for a config's inputs (issue 48, item 3): the pytest run, `ragretrieval merge` and the work tree's
side of `ragretrieval diff --against` read the chunks, the eval set and the places through `glue/inputs.py`, so
the same bad input is the same one-line error in all three, and diff's side is the run's inputs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from projects import (
    CHUNKS,
    RUN,
    documents_config,
    jsonl,
    one_line_error,
    write_documents_project,
    write_project,
)

from pytest_ragretrieval.baseline.format import load
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.cli.sides import today_exam
from pytest_ragretrieval.glue.session import Options, RagSession
from pytest_ragretrieval.scoring.evaluate import chunk_spans


def commit(folder: Path) -> None:
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"]):
        subprocess.run(["git", *argv], cwd=folder, check=True, capture_output=True)


def test_a_label_whose_chunk_left_is_one_line_alike_in_the_run_merge_and_diff(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """The eval set names a chunk the corpus no longer holds and the baseline records no gold texts: the run
    says so in one line, and `merge` and `diff` say the same line (they used to print the reader's bare line)."""
    write_project(pytester.path)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = pytester.path / "baselines" / "retrieval.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    del document["fingerprint"]["chunks"]["gold"]  # recorded before the gold texts were kept
    path.write_text(json.dumps(document, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    commit(pytester.path)
    renamed = [{**chunk, "id": "travel-009"} if chunk["id"] == "travel-001" else chunk for chunk in CHUNKS]
    (pytester.path / "fixtures" / "chunks.jsonl").write_text(jsonl(renamed), encoding="utf-8")

    run = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert "travel-001" in run and "records no gold texts" in run, run
    said = {"run": run.removeprefix("ERROR: ").removeprefix("rag: error: ")}
    for command in (["merge", "part.json"], ["diff", "--against", "HEAD", "--fail-on-lower"]):
        capsys.readouterr()
        code = main(command)
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert (code, len(lines), captured.out) == (2, 1, ""), captured
        said[command[0]] = lines[0].removeprefix("ragretrieval: error: ")
    assert said["merge"] == said["run"] and said["diff"] == said["run"], said


def test_diff_s_side_is_the_run_s_inputs_in_documents_mode(pytester: pytest.Pytester) -> None:
    """What `diff --against` reads of the work tree (today's exam: the questions, the chunks' places and
    digests) is what the run loaded: the same cut, the same labels, the same places."""
    write_documents_project(pytester.path, documents_config(
        ["recall", "char_recall"], '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    (pytester.path / "kb" / "refunds.txt").write_text("Note: updated. Refunds are paid back within three working "
                                                     "days after approval.", encoding="utf-8")
    session = RagSession(Options(pytester.path))
    session.load()
    today = today_exam(session.config, load(session.config.baseline))
    assert today is not None and today.questions == session.everyone
    assert today.places == chunk_spans(session.chunks) and today.places
    assert today.digests is not None and list(today.digests) == [chunk.id for chunk in session.chunks]
