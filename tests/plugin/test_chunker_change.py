"""A pull request that changes `[chunker]` (issue 49 items 1, 2 and 6): today's rankings at today's places are
judged against the approved rankings at their recorded places, by the gold spans, with the deltas the two
chunkings side by side give; chunk-id items compare only where the approved top k kept its places."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from projects import (
    DOCUMENTS,
    OVERLAP,
    OVERLAP_TABLE,
    RUN,
    documents_config,
    one_line_error,
    write_documents_project,
)

from pytest_ragretrieval.cli import main

METRICS = ["recall", "char_recall", "char_iou", "answer_hit"]
BM25 = '[tool.ragretrieval.retrievers.bm25]\ntype = "bm25"\n'
ONE, THREE = 'type = "sentences"\nsize = 1\n', 'type = "sentences"\nsize = 3\n'


def config(chunker: str, tables: str = BM25, lines: str = "") -> str:
    """The documents project's config with `chunker` as its `[chunker]` table."""
    return documents_config(METRICS, tables, lines=lines).replace(ONE, chunker)


def results(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return found


def test_a_chunker_change_is_judged_with_the_side_by_side_deltas(pytester: pytest.Pytester,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Baseline at one sentence a chunk, the pull request at three: every span item is judged (it said "not in
    the baseline; record it"), char_iou@2 fails naming the chunker change, with the bar and today's value the
    two chunkings side by side give; recall@2 is not comparable (no approved top k kept its places) and fails
    nothing; the update is refused, then with --rag-allow-regression replaces the approved rankings, and the next
    run passes; `diff --fail-on-lower` of the two files lowers char_iou@2 by the gate's delta and nothing else,
    each file's rankings scored at its own places."""
    side_by_side = ('[tool.ragretrieval.chunkings.big]\n' + THREE + '\n' + BM25
                    + '\n[tool.ragretrieval.retrievers.bm25_big]\ntype = "bm25"\nchunking = "big"\n')
    write_documents_project(pytester.path, config(ONE, side_by_side, 'compare = [["bm25_big", "bm25"]]\n'))
    assert pytester.runpytest("--rag-update-baseline", "--rag-json=both.json", *RUN).ret == 0
    both = results(pytester.path / "both.json")
    pairs = {c["metric"]: c for c in both["comparisons"]}
    (pytester.path / "baselines" / "retrieval.json").unlink()
    pytester.path.joinpath("pyproject.toml").write_text(config(ONE), encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.path.joinpath("pyproject.toml").write_text(config(THREE), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "-v", "--rag-json=pr.json", *RUN)
    assert result.ret == 1, result.stdout.str()
    out = result.stdout.str()
    assert "is not in the baseline" not in out
    result.stdout.fnmatch_lines([
        "*::recall@2 PASSED*", "*char_recall@2 PASSED*", "*char_iou@2 FAILED*", "*answer_hit@2 PASSED*",
        "char_iou@2 of 'bm25' fell from 0.4147 to 0.2896 (-0.1251, tolerance 0.0000) after a change of chunker.size",
        "compared across changes: chunker.size 1 -> 3; chunks: *",
        "bm25 across the chunker change (chunker.size 1 -> 3): span metrics compared on 4 questions, the approved "
        "rankings at their recorded places, today's at today's; chunk-id metrics on the 0 whose approved top k kept "
        "its places, not comparable on 4 (hotel, laptop, refund, taxi)",
    ], consecutive=False)
    assert "labels to review" not in out  # the labels cut from the spans moved with the chunks
    compared = results(pytester.path / "pr.json")["retrievers"]["bm25"]["comparison"]
    small, big = (both["retrievers"][name]["metrics"] for name in ("bm25", "bm25_big"))
    for label in ("char_recall@2", "char_iou@2", "answer_hit@2"):
        assert compared[label]["questions"] == 4
        assert compared[label]["baseline"] == pytest.approx(small[label], abs=1e-6)
        assert compared[label]["value"] == pytest.approx(big[label], abs=1e-6)
        assert compared[label]["delta"] == pytest.approx(pairs[label]["delta"], abs=2e-6)
    assert compared["char_iou@2"]["delta"] < -0.1
    assert "recall@2" not in compared  # chunk-id recall is compared on no question: not comparable
    (pytester.path / "old.json").write_bytes((pytester.path / "baselines" / "retrieval.json").read_bytes())
    refused = pytester.runpytest("--rag-update-baseline", *RUN)
    assert refused.ret == 1
    refused.stdout.fnmatch_lines(["*refused to record char_iou@2 of 'bm25': 0.2896 is below the bar's 0.4147*"])
    allowed = pytester.runpytest("--rag-update-baseline", "--rag-allow-regression", *RUN)
    assert allowed.ret == 0, allowed.stdout.str()
    recorded = results(pytester.path / "baselines" / "retrieval.json")
    laptop = recorded["fingerprint"]["chunks"]["places"]["it/laptop.txt#0"]  # the three sentences: today's place
    assert laptop[1:3] == [0, len(DOCUMENTS["it/laptop.txt"])]
    assert all("approved" not in q for q in recorded["retrievers"]["bm25"]["questions"].values())
    assert pytester.runpytest("--rag-eval", *RUN).ret == 0
    capsys.readouterr()
    assert main(["diff", "old.json", "baselines/retrieval.json", "--fail-on-lower"]) == 1
    lowered = [line.strip() for line in capsys.readouterr().out.splitlines() if "lowered:" in line]
    assert lowered == ["lowered: char_iou@2 of 'bm25' 0.4147 -> 0.2896 (-0.1251) under today's exam and the base's "
                       "(today's means)"]  # each file's rankings at its own places, as the gate judged them
    assert main(["diff", "old.json", "baselines/retrieval.json"]) == 1
    rows = {line.split()[1]: line.split()[-2:] for line in capsys.readouterr().out.splitlines()
            if line.startswith("bm25 ")}
    assert rows["recall@2"] == ["not", "comparable"] and rows["char_iou@2"][-1] == "-0.1251"


def test_identical_places_under_another_chunker_pass_with_zero_deltas(pytester: pytest.Pytester) -> None:
    """A chunker change that cuts the same places (a cap no sentence reaches): every item, chunk-id ones
    included, is compared on every question with a zero delta, and the run passes naming the change."""
    write_documents_project(pytester.path, config(ONE))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.path.joinpath("pyproject.toml").write_text(config(ONE + "cap = 5000\n"), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "--rag-json=pr.json", *RUN)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*chunk-id metrics on the 4 whose approved top k kept its places, not comparable "
                                 "on 0"])
    compared = results(pytester.path / "pr.json")["retrievers"]["bm25"]["comparison"]
    assert {label: (c["delta"], c["questions"]) for label, c in compared.items()} == dict.fromkeys(("recall@2", "char_recall@2", "char_iou@2", "answer_hit@2"), (0.0, 4))


def test_a_changed_overlap_with_a_worse_retriever_fails(pytester: pytest.Pytester) -> None:
    """`overlap` 16 -> 15 of 64-character windows, and the retriever made worse (its ranking reversed): the
    span items fail on every question, naming the chunker change; recall@2 is judged on the one question whose
    approved top 2 kept its places (a document of two windows, both cut where they were), and fails there."""
    windows = 'type = "tokens"\ntokenizer = "characters"\nsize = 64\noverlap = 16\n'
    write_documents_project(pytester.path, config(windows, OVERLAP_TABLE))
    (pytester.path / "overlap_retriever.py").write_text(OVERLAP, encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    worse = config(windows.replace("16", "15"), OVERLAP_TABLE.replace("reverse = false", "reverse = true"))
    pytester.path.joinpath("pyproject.toml").write_text(worse, encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([
        "recall@2 of 'overlap' fell from 1.0000 to 0.0000 (-1.0000, tolerance 0.0000) over the 1 question both runs "
        "share after changes of overlap.options.reverse; chunker.overlap",
        "char_recall@2 of 'overlap' fell from 1.0000 to 0.0667 (-0.9333, tolerance 0.0000) after changes of "
        "overlap.options.reverse; chunker.overlap",
        "overlap across the chunker change (chunker.overlap 16 -> 15): span metrics compared on 4 questions, * "
        "chunk-id metrics on the 1 whose approved top k kept its places, not comparable on 3 (hotel, laptop, taxi)",
    ], consecutive=False)


LOSSY = '''
import re


def split(text):
    """One chunk a sentence, those about hours left out (a chunker that drops what it takes for boilerplate)."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^.]+[.]?", text)
            if m.group().strip() and "hours" not in m.group()]
'''
LOSSY_TABLE = 'type = "python"\npython = "lossy:split"\n'


def test_a_chunking_that_leaves_the_answer_out_scores_it_0(pytester: pytest.Pytester) -> None:
    """The laptop question's answer ("reported to IT within two hours") is in no chunk of the lossy chunking: its
    span metrics score 0 there, side by side and on a pull request to that chunker (it was a no-answer question
    in that chunking, left out of the means: the lossy chunking scored 1.0 like the whole one)."""
    side_by_side = (f"[tool.ragretrieval.chunkings.lossy]\n{LOSSY_TABLE}\n{BM25}\n"
                    '[tool.ragretrieval.retrievers.bm25_lossy]\ntype = "bm25"\nchunking = "lossy"\n')
    write_documents_project(pytester.path, config(ONE, side_by_side, 'compare = [["bm25_lossy", "bm25"]]\n'))
    (pytester.path / "lossy.py").write_text(LOSSY, encoding="utf-8")
    first = pytester.runpytest("--rag-update-baseline", "--rag-json=both.json", *RUN)
    assert first.ret == 0, first.stdout.str()
    both = results(pytester.path / "both.json")
    lossy = both["retrievers"]["bm25_lossy"]["questions"]["laptop"]["metrics"]
    assert lossy["char_recall@2"] == 0.0 == lossy["answer_hit@2"]
    pairs = {c["metric"]: c for c in both["comparisons"]}
    assert (pairs["char_recall@2"]["delta"], pairs["char_recall@2"]["losses"]) == (-0.25, 1)
    (pytester.path / "baselines" / "retrieval.json").unlink()
    pytester.path.joinpath("pyproject.toml").write_text(config(ONE), encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.path.joinpath("pyproject.toml").write_text(config(LOSSY_TABLE), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([
        "char_recall@2 of 'bm25' fell from 1.0000 to 0.7500 (-0.2500, tolerance 0.0000) after changes of chunker.*",
        "  laptop: 1.0000 -> 0.0000 (-1.0000)",
    ], consecutive=False)


@pytest.mark.parametrize(("index", "value", "problem"), [
    (2, 10_000, "is no slice of 'it/laptop.txt' (154 characters), the document whose digest it records"),
    (1, 1, "is not where the gold text recorded for 'it/laptop.txt#0' is in 'it/laptop.txt', the document whose "
           "digest it records"),
    (3, "0" * 12, "records a digest that is not its document's, and the documents are the ones it was recorded on"),
])
def test_a_place_its_document_contradicts_is_damage(pytester: pytest.Pytester, index: int, value: object,
                                                    problem: str) -> None:
    """A recorded place is what a chunker change is judged by: one whose slice or digest its (unchanged) document
    contradicts stops the run in one line naming the place, as any damaged value does."""
    write_documents_project(pytester.path, config(ONE))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = pytester.path / "baselines" / "retrieval.json"
    recorded = results(path)
    place = recorded["fingerprint"]["chunks"]["places"]["it/laptop.txt#0"]
    place[index] = value
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    pytester.path.joinpath("pyproject.toml").write_text(config(THREE), encoding="utf-8")
    line = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert f"baselines/retrieval.json: fingerprint.chunks.places.it/laptop.txt#0 = {json.dumps(place)} {problem}" in line


def test_a_chunker_change_is_always_judged_on_char_recall_and_answer_hit(pytester: pytest.Pytester) -> None:
    """`metrics` lists chunk-id ones only: across the chunker change the gate adds char_recall@2 and answer_hit@2
    items, judged against the approved rankings at their recorded places, and the update records what `metrics`
    lists, nothing more."""
    write_documents_project(pytester.path, documents_config(["recall", "ndcg"], BM25))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.path.joinpath("pyproject.toml").write_text(
        documents_config(["recall", "ndcg"], BM25).replace(ONE, THREE), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "-v", *RUN)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*::recall@2 PASSED*", "*::ndcg@2 PASSED*", "*::char_recall@2 PASSED*",
                                 "*::answer_hit@2 PASSED*"], consecutive=False)
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    recorded = results(pytester.path / "baselines" / "retrieval.json")
    assert set(recorded["retrievers"]["bm25"]["metrics"]) == {"recall@2", "ndcg@2"}
    again = pytester.runpytest("--rag-eval", "-v", *RUN)
    assert again.ret == 0 and "char_recall@2" not in again.stdout.str()


def test_a_format_4_bar_takes_its_places_by_re_cutting(pytester: pytest.Pytester) -> None:
    """A baseline that keeps no places (format 4) over unchanged documents cut by a built-in chunker: the chunker
    change is judged as with them, the places re-cut with the chunker it records (the same failure); by a
    `python` chunker, whose old code is gone, it is refused in one line naming the re-record with the label."""
    write_documents_project(pytester.path, config(ONE))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    path = pytester.path / "baselines" / "retrieval.json"
    recorded = results(path)
    del recorded["fingerprint"]["chunks"]["places"]
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    pytester.path.joinpath("pyproject.toml").write_text(config(THREE), encoding="utf-8")
    result = pytester.runpytest("--rag-eval", *RUN)
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["char_iou@2 of 'bm25' fell from 0.4147 to 0.2896 (-0.1251, tolerance 0.0000) after "
                                 "a change of chunker.size"])
    (pytester.path / "lossy.py").write_text(LOSSY, encoding="utf-8")
    path.unlink()
    pytester.path.joinpath("pyproject.toml").write_text(config(LOSSY_TABLE), encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    recorded = results(path)
    del recorded["fingerprint"]["chunks"]["places"]
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    pytester.path.joinpath("pyproject.toml").write_text(config(ONE), encoding="utf-8")
    line = one_line_error(pytester.runpytest("--rag-eval", *RUN))
    assert ("baselines/retrieval.json keeps no places of its chunks (format 4) and they were cut by a `python` "
            "chunker, whose old code is gone, so the chunker change cannot be judged against it; re-record it with "
            "`pytest --rag-update-baseline --rag-allow-regression` and merge with the approval label") in line


def test_shards_merge_across_a_chunker_change(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """`ragretrieval merge` judges a chunker change as the session does: the items the shards ran (char_recall@2
    and answer_hit@2 added) are its own, and char_iou@2 fails by the same delta."""
    write_documents_project(pytester.path, documents_config(["recall", "char_iou"], BM25))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    pytester.path.joinpath("pyproject.toml").write_text(
        documents_config(["recall", "char_iou"], BM25).replace(ONE, THREE), encoding="utf-8")
    for index in (1, 2):
        result = pytester.runpytest("--rag-eval", f"--rag-shard={index}/2", f"--rag-json=part{index}.json", *RUN)
        assert result.ret == 0, result.stdout.str()
    capsys.readouterr()
    assert main(["merge", "part1.json", "part2.json"]) == 1
    out = capsys.readouterr().out
    assert "PASSED rag::bm25::char_recall@2" in out and "PASSED rag::bm25::answer_hit@2" in out
    assert ("FAILED rag::bm25::char_iou@2: char_iou@2 of 'bm25' fell from 0.4147 to 0.2896 (-0.1251, tolerance "
            "0.0000) after a change of chunker.size") in out


def test_diff_against_the_base_scores_each_side_at_its_own_places(pytester: pytest.Pytester,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`diff --against main` in a checkout whose chunker changed and whose baseline was not re-recorded: both
    files are the base's, each scored at its recorded places, so nothing moved (it scored the base's 1-sentence
    rankings at the 3-sentence chunks' places, a value of neither chunking)."""
    write_documents_project(pytester.path, config(ONE))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=pytester.path,
                       check=True, capture_output=True)
    pytester.path.joinpath("pyproject.toml").write_text(config(THREE), encoding="utf-8")
    capsys.readouterr()
    assert main(["diff", "--against", "main"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line.split()[2:] for line in out.splitlines() if line.startswith("bm25 ")}
    assert rows["char_iou@2"] == ["0.4147", "0.4147", "+0.0000"], out
    assert main(["diff", "--against", "main", "--fail-on-lower"]) == 0


def test_in_ci_the_approved_places_are_the_base_revision_s(pytester: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's baseline with the places of its chunks that are no gold widened to their whole documents (valid
    slices, the documents' digests: no damage to see): in a pull request's CI the gate reads the approved places
    from the base revision's file and judges as with the truth; the work tree's run reads the head's."""
    write_documents_project(pytester.path, config(ONE))
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"],
                 ["switch", "-q", "-c", "pr"]):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=pytester.path,
                       check=True, capture_output=True)
    path = pytester.path / "baselines" / "retrieval.json"
    recorded = results(path)
    chunks = recorded["fingerprint"]["chunks"]
    for cid, place in chunks["places"].items():
        if cid not in chunks["gold"]:
            place[1:3] = [0, len(DOCUMENTS[place[0]])]
    path.write_text(json.dumps(recorded, indent=2), encoding="utf-8")
    pytester.path.joinpath("pyproject.toml").write_text(config(THREE), encoding="utf-8")
    honest = "char_iou@2 of 'bm25' fell from 0.4147 to 0.2896 (-0.1251, tolerance 0.0000) after a change of chunker.size"
    local = pytester.runpytest("--rag-eval", *RUN)
    assert honest not in local.stdout.str()
    for name, value in {"GITHUB_ACTIONS": "true", "GITHUB_BASE_REF": "main", "GITHUB_EVENT_NAME": "pull_request"
                        }.items():
        monkeypatch.setenv(name, value)
    in_ci = pytester.runpytest("--rag-eval", *RUN)
    assert in_ci.ret == 1, in_ci.stdout.str()
    in_ci.stdout.fnmatch_lines([honest])


def test_question_items_across_a_chunker_change_are_not_compared(pytester: pytest.Pytester) -> None:
    """With `fail_on = ["metric", "question"]` and a worse retriever (its ranking reversed) across the chunker
    change: the span items fail; a question item, a hit read by chunk ids, is not compared where the approved top
    2 kept no place (it failed where the old ids still matched today's labels)."""
    lines = 'fail_on = ["metric", "question"]\n'
    write_documents_project(pytester.path, config(ONE, OVERLAP_TABLE, lines))
    (pytester.path / "overlap_retriever.py").write_text(OVERLAP, encoding="utf-8")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    worse = config(THREE, OVERLAP_TABLE.replace("reverse = false", "reverse = true"), lines)
    pytester.path.joinpath("pyproject.toml").write_text(worse, encoding="utf-8")
    result = pytester.runpytest("--rag-eval", "--rag-json=pr.json", *RUN)
    assert result.ret == 1, result.stdout.str()
    failed = {f["item"] for f in results(pytester.path / "pr.json")["failures"]}
    assert failed == {"rag::overlap::char_recall@2", "rag::overlap::char_iou@2", "rag::overlap::answer_hit@2"}
