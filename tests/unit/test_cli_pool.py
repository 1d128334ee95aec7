"""`ragretrieval pool`: the queue's order and content, and `--apply` folding labels into the eval set."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from test_cli import CHUNKS, entry, project, run, write_results  # noqa: F401  (the fixture)

EVALSET = Path("fixtures/evalset.jsonl")


@pytest.fixture
def pooled(project: Path) -> Path:  # noqa: F811
    """A baseline where bm25 ranks c2 and c5 for q1 (judged: c1), c3 then c4 for q2 (both judged);
    a results file where a retuned bm25 ranks c5 first for q2 and c2 for q3, and vector ranks c2 for q1."""
    (project / "baselines").mkdir()
    write_results(project / "baselines" / "retrieval.json", {
        "bm25": entry({"q1": (["c2", "c1", "c5"], {}), "q2": (["c3", "c4"], {}), "q3": ([], {})}, {"hit_rate@3": 1.0}),
    })
    write_results(project / "results.json", {
        "bm25": entry({"q1": (["c1", "c5"], {}), "q2": (["c5", "c3"], {}), "q3": (["c2"], {})}, {"hit_rate@2": 1.0}),
        "vector": entry({"q1": (["c2"], {}), "q2": (["c3"], {}), "q3": ([], {})}, {"hit_rate@2": 1.0}),
    })
    return project


def lines(out: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out]


def test_the_pool_lists_each_unjudged_top_k_chunk_once_with_every_run_that_ranked_it(
    pooled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "pool", "--results", "results.json")
    assert code == 0 and err == ["4 unjudged chunks for 3 questions in the top 2"]
    found = lines(out)
    # questions in eval-set order; within q1 c2 (best rank 1) before c5 (best rank 2); c5 of the
    # baseline's q1 sits at rank 3, below the pool's depth of 2
    assert [(row["question"], row["chunk"]) for row in found] == [("q1", "c2"), ("q1", "c5"), ("q2", "c5"), ("q3", "c2")]
    assert found[0] == {
        "question": "q1", "query": "ORDER-2024 是什么错误", "chunk": "c2", "text": CHUNKS[1]["text"],
        "runs": [{"file": "baselines/retrieval.json", "retriever": "bm25", "rank": 1},
                 {"file": "results.json", "retriever": "vector", "rank": 1}],
        "grade": None,
    }
    assert found[1]["runs"] == [{"file": "results.json", "retriever": "bm25", "rank": 2}]


def test_the_pool_is_deeper_with_k_and_written_byte_identical_to_a_file(pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pool", "--k", "3")
    assert code == 0 and [(row["question"], row["chunk"]) for row in lines(out)] == [("q1", "c2"), ("q1", "c5")]
    assert run(capsys, "pool", "--results", "results.json", "--out", "queue.jsonl")[1] == [
        "4 unjudged chunks for 3 questions in the top 2: wrote queue.jsonl"]
    first = (pooled / "queue.jsonl").read_bytes()
    run(capsys, "pool", "--results", "results.json", "--out", "queue.jsonl")
    assert (pooled / "queue.jsonl").read_bytes() == first
    assert first.decode("utf-8") == "".join(line + "\n" for line in run(capsys, "pool", "--results", "results.json")[1])


def test_the_pool_refuses_to_write_over_an_input(pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "pool", "--results", "results.json", "--out", "results.json")
    assert code == 2 and out == [] and len(err) == 1 and err[0].startswith("ragretrieval: error: --out results.json: ")


def test_nothing_to_pool_without_a_baseline_or_results(project: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    code, _, err = run(capsys, "pool")
    assert code == 2 and err == ["ragretrieval: error: nothing to pool: no baseline at baselines/retrieval.json and no "
                                 "--results FILE; run `pytest --rag-eval --rag-json FILE` and pass --results FILE"]


def test_the_pool_queues_the_unjudged_chunks_of_the_approved_rankings_too(
    project: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    """The bar is the approved rankings, scored under the same labels: where q1's differs from the recorded
    one, the unjudged chunks of both are queued, each once; a placing the recorded ranking already gives
    is not repeated, and a chunk gone from the corpus (an approved ranking older than it) is left out."""
    (project / "baselines").mkdir()
    recorded = entry({"q1": (["c2", "c1"], {}), "q2": (["c3", "c4"], {}), "q3": ([], {})}, {"hit_rate@2": 1.0})
    write_results(project / "baselines" / "retrieval.json",
                  {"bm25": {**recorded, "approved": {"q1": ["c2", "c5"], "q3": ["gone", "c4"]}}})
    code, out, err = run(capsys, "pool")
    assert code == 0 and err == ["3 unjudged chunks for 2 questions in the top 2"]
    baseline = "baselines/retrieval.json"
    assert [(row["question"], row["chunk"], row["runs"]) for row in lines(out)] == [
        ("q1", "c2", [{"file": baseline, "retriever": "bm25", "rank": 1}]),
        ("q1", "c5", [{"file": baseline, "retriever": "bm25", "rank": 2, "approved": True}]),
        ("q3", "c4", [{"file": baseline, "retriever": "bm25", "rank": 2, "approved": True}]),
    ]


def labelled(pooled: Path, capsys: pytest.CaptureFixture[str], grades: dict[tuple[str, str], Any]) -> Path:
    rows = lines(run(capsys, "pool", "--results", "results.json")[1])
    for row in rows:
        row["grade"] = grades.get((row["question"], row["chunk"]))
    path = pooled / "labelled.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def test_apply_folds_grades_into_the_eval_set_and_keeps_every_other_line(pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evalset = pooled / EVALSET
    before = evalset.read_bytes().splitlines(keepends=True)
    os.chmod(evalset, 0o640)
    labelled(pooled, capsys, {("q1", "c2"): 1, ("q1", "c5"): 0, ("q2", "c5"): 3})
    code, out, err = run(capsys, "pool", "--apply", "labelled.jsonl")
    assert (code, err) == (0, [])
    assert out == ["1 line still without a grade skipped",
                   "applied 3 labels (2 relevant, 1 not relevant) to 2 questions of fixtures/evalset.jsonl; "
                   "their gold changed, and the baseline does not itemize its questions (a format-1 file), so "
                   "the next run compares them by id"]
    after = evalset.read_bytes().splitlines(keepends=True)
    assert after[2] == before[2]  # q3, untouched, byte for byte
    assert json.loads(after[0]) == {"id": "q1", "query": "ORDER-2024 是什么错误", "relevant": ["c1", "c2"],
                                    "not_relevant": ["c5"]}
    assert json.loads(after[1]) == {"id": "q2", "query": "住宿标准", "relevant": {"c3": 2, "c4": 0, "c5": 3}}
    assert stat.S_IMODE(evalset.stat().st_mode) == 0o640
    # the pool now holds only q3's chunk, and applying again changes nothing
    assert [(row["question"], row["chunk"]) for row in lines(run(capsys, "pool", "--results", "results.json")[1])] == [
        ("q3", "c2")]
    assert run(capsys, "pool", "--apply", "labelled.jsonl")[1][-1] == \
        "no labels to apply: fixtures/evalset.jsonl left as it was"
    assert evalset.read_bytes().splitlines(keepends=True) == after


def test_grade_0_labels_alone_keep_their_questions_compared(pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labelled(pooled, capsys, {("q1", "c5"): 0, ("q2", "c5"): 0})
    code, out, _ = run(capsys, "pool", "--apply", "labelled.jsonl")
    assert code == 0 and out[-1] == ("applied 2 labels (0 relevant, 2 not relevant) to 2 questions of "
                                     "fixtures/evalset.jsonl; they gained only grade-0 judgments, so the next run "
                                     "still compares them (judged@k rises)")


def removed(folder: Path, qid: str) -> None:
    """`qid` deleted from the eval set, its line and nothing else."""
    evalset = folder / EVALSET
    rows = evalset.read_text(encoding="utf-8").splitlines(keepends=True)
    evalset.write_text("".join(row for row in rows if json.loads(row)["id"] != qid), encoding="utf-8")


def test_a_question_removed_from_the_eval_set_is_skipped_by_the_pool_in_one_line(
    pooled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline and the results rank q3, since removed from the eval set: old code refused the whole pool
    (`baselines/retrieval.json: question 'q3' is not in fixtures/evalset.jsonl ...`), though the gate only
    compares the questions both sides share. Now q3 is skipped, said once per source, and nothing is queued
    for it."""
    removed(pooled, "q3")
    code, out, err = run(capsys, "pool", "--results", "results.json")
    assert code == 0
    assert [(row["question"], row["chunk"]) for row in lines(out)] == [("q1", "c2"), ("q1", "c5"), ("q2", "c5")]
    assert err == ["3 unjudged chunks for 2 questions in the top 2",
                   "skipped 1 question of baselines/retrieval.json no longer in fixtures/evalset.jsonl: q3",
                   "skipped 1 question of results.json no longer in fixtures/evalset.jsonl: q3"]


def test_apply_skips_the_labels_of_a_removed_question_in_one_line(
    pooled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A labelled pool whose q3 was removed from the eval set before `--apply`: old code refused every label
    (`labelled.jsonl:4: question 'q3' is not in fixtures/evalset.jsonl`); now the others are applied and q3's
    skipped in one line, no line written for it."""
    labelled(pooled, capsys, {("q1", "c2"): 1, ("q3", "c2"): 2})
    removed(pooled, "q3")
    code, out, err = run(capsys, "pool", "--apply", "labelled.jsonl")
    assert (code, err) == (0, [])
    assert out == ["2 lines still without a grade skipped",
                   "skipped the labels of 1 question no longer in fixtures/evalset.jsonl: q3",
                   "applied 1 label (1 relevant, 0 not relevant) to 1 question of fixtures/evalset.jsonl; "
                   "their gold changed, and the baseline does not itemize its questions (a format-1 file), "
                   "so the next run compares them by id"]
    ids = [json.loads(row)["id"] for row in (pooled / EVALSET).read_text(encoding="utf-8").splitlines()]
    assert ids == ["q1", "q2"]


def test_many_removed_questions_are_one_short_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """1,000 questions recorded in the baseline and gone from the eval set: the first 20, then a count."""
    (project / "baselines").mkdir()
    gone: dict[str, tuple[list[str], dict[str, float]]] = {f"old-{n:04d}": (["c2"], {}) for n in range(1000)}
    write_results(project / "baselines" / "retrieval.json", {"bm25": entry({"q1": (["c2"], {}), **gone}, {})})
    code, _, err = run(capsys, "pool")
    assert code == 0
    assert err[1] == ("skipped 1000 questions of baselines/retrieval.json no longer in fixtures/evalset.jsonl: "
                      + ", ".join(f"old-{n:04d}" for n in range(20)) + ", ... and 980 more")
    assert len(err[1]) < 400


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "labelled.jsonl:5: invalid JSON"),
        ('{"question": "q1", "chunk": "c2"}', "labelled.jsonl:5: expected a pool line with 'question', 'chunk' and 'grade'"),
        ('{"question": "q1", "chunk": "c2", "grade": 1}', "labelled.jsonl:5: question 'q1', chunk 'c2' is labelled twice "
                                                         "(first at labelled.jsonl:1)"),
        ('{"question": "q1", "chunk": "c9", "grade": 1}', "labelled.jsonl:5: chunk 'c9' is not in fixtures/chunks.jsonl"),
        ('{"question": "q1", "chunk": "c1", "grade": 0}', "labelled.jsonl:5: chunk 'c1' is already judged for 'q1' "
                                                         "(grade 1 in fixtures/evalset.jsonl)"),
        ('{"question": "q2", "chunk": "c1", "grade": 1.5}', "labelled.jsonl:5: 'grade' must be null or an integer from 0 to 100"),
    ],
)
def test_a_bad_labelled_line_is_one_line_and_changes_nothing(
    pooled: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    path = labelled(pooled, capsys, {("q1", "c2"): 1})
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    before = (pooled / EVALSET).read_bytes()
    code, out, err = run(capsys, "pool", "--apply", "labelled.jsonl")
    assert code == 2 and out == [] and len(err) == 1 and err[0].startswith(f"ragretrieval: error: {message}"), err
    assert (pooled / EVALSET).read_bytes() == before


def test_machine_labels_are_applied_only_when_accepted_and_keep_their_provenance(
    pooled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = labelled(pooled, capsys, {("q1", "c2"): 1})
    rows = lines(path.read_text(encoding="utf-8").splitlines())
    judge = {"model": "openai:m", "prompt_sha256": "ab" * 32, "date": "2026-12-06", "umbrela": 1}
    rows[2] = {**rows[2], "grade": 0, "judge": judge}
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert run(capsys, "pool", "--apply", "labelled.jsonl")[1][:2] == [
        "2 lines still without a grade skipped",
        "1 machine label skipped (graded by an LLM judge); pass --accept-machine-labels to apply them"]
    assert "machine_labels" not in (pooled / EVALSET).read_text(encoding="utf-8")
    code, out, _ = run(capsys, "pool", "--apply", "labelled.jsonl", "--accept-machine-labels")
    assert code == 0 and out[-1].startswith("applied 1 label (0 relevant, 1 not relevant) to 1 question")
    q2 = json.loads((pooled / EVALSET).read_text(encoding="utf-8").splitlines()[1])
    assert q2["not_relevant"] == ["c5"]
    assert q2["machine_labels"] == {"c5": {"model": "openai:m", "prompt_sha256": "ab" * 32, "date": "2026-12-06"}}


# --judge, against the fake OpenAI-compatible server

@pytest.fixture
def judged(pooled: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from openai_server import FakeOpenAI

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1796515200")  # 2026-12-06
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-key-0123456789abcdef")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAI() as server:
        # UMBRELA 3 for the long reimbursement passage, 1 for anything else
        server.chat = lambda prompt: "##final score: 3" if "逾期" in prompt.split("Passage:")[-1] else "M: 1\n##final score: 1"
        yield server


def test_the_judge_proposes_grades_with_provenance_and_caches_them(
    judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragretrieval.labels.judge import PROMPT, PROMPT_SHA256

    argv = ("pool", "--results", "results.json", "--judge", "openai:judge-model", "--base-url", judged.url,
            "--out", "proposals.jsonl")
    code, out, err = run(capsys, *argv)
    assert (code, err) == (0, [])
    assert out == ["4 unjudged chunks for 3 questions in the top 2: wrote proposals.jsonl",
                   "judged 4 chunks with openai:judge-model (0 from the cache); apply with "
                   "`ragretrieval pool --apply FILE --accept-machine-labels` after review"]
    rows = lines((pooled / "proposals.jsonl").read_text(encoding="utf-8").splitlines())
    provenance = {"model": "openai:judge-model", "prompt_sha256": PROMPT_SHA256, "date": "2026-12-06"}
    assert [(row["chunk"], row["grade"], row["judge"]) for row in rows] == [
        ("c2", 0, {**provenance, "umbrela": 1}), ("c5", 2, {**provenance, "umbrela": 3}),
        ("c5", 2, {**provenance, "umbrela": 3}), ("c2", 0, {**provenance, "umbrela": 1})]
    asked = [request.body for request in judged.requests]
    assert len(asked) == 4 and asked[0]["model"] == "judge-model" and asked[0]["temperature"] == 0
    assert asked[0]["messages"] == [{"role": "user", "content": PROMPT.format(query=rows[0]["query"], passage=rows[0]["text"])}]
    # the same queue again: every score from the cache, nothing asked, the same bytes
    first = (pooled / "proposals.jsonl").read_bytes()
    assert run(capsys, *argv)[1][1].startswith("judged 4 chunks with openai:judge-model (4 from the cache)")
    assert len(judged.requests) == 4 and (pooled / "proposals.jsonl").read_bytes() == first
    # machine labels enter the eval set only when accepted, with their provenance
    before = (pooled / EVALSET).read_bytes()
    assert run(capsys, "pool", "--apply", "proposals.jsonl")[1] == [
        "4 machine labels skipped (graded by an LLM judge); pass --accept-machine-labels to apply them",
        "no labels to apply: fixtures/evalset.jsonl left as it was"]
    assert (pooled / EVALSET).read_bytes() == before
    assert run(capsys, "pool", "--apply", "proposals.jsonl", "--accept-machine-labels")[0] == 0
    q1 = json.loads((pooled / EVALSET).read_text(encoding="utf-8").splitlines()[0])
    assert q1["machine_labels"] == {"c2": provenance, "c5": provenance}
    assert q1["relevant"] == {"c1": 1, "c5": 2} and q1["not_relevant"] == ["c2"]


def test_a_judge_failure_is_one_line_without_the_key(judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from openai_server import Reply

    judged.default = Reply(status=401, message="invalid key {key}")
    code, out, err = run(capsys, "pool", "--judge", "openai:m", "--base-url", judged.url, "--out", "p.jsonl")
    assert code == 2 and out == [] and len(err) == 1
    assert err[0].startswith("ragretrieval: error: judge openai:m: AuthenticationError: ")
    assert "sk-test-secret" not in err[0] and not (pooled / "p.jsonl").exists()


def test_a_judge_answer_without_a_score_is_named(judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged.chat = lambda prompt: "I think it is relevant."
    code, _, err = run(capsys, "pool", "--judge", "openai:m", "--base-url", judged.url)
    assert code == 2 and err == ["ragretrieval: error: judge openai:m: the answer holds no '##final score: N' (0-3): "
                                 "'I think it is relevant.'"]


def test_the_docs_show_the_judge_s_prompt_verbatim() -> None:
    from pytest_ragretrieval.labels.judge import PROMPT

    page = (Path(__file__).parents[2] / "docs" / "labels.md").read_text(encoding="utf-8")
    assert f"```text\n{PROMPT}\n```" in page


def test_diff_shows_judged_but_never_counts_it_as_a_drop(project: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    old = write_results(project / "old.json", {"bm25": entry({}, {"recall@2": 0.5, "judged@2": 1.0})})
    new = write_results(project / "new.json", {"bm25": entry({}, {"recall@2": 0.5, "judged@2": 0.5})})
    code, out, _ = run(capsys, "diff", old, new)
    assert code == 0
    assert out[-2:] == ["bm25       judged@2  1.0000  0.5000  -0.5000", "0 metrics dropped, 0 improved"]


def test_a_server_error_is_tried_again(judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged.script(503)
    code, out, err = run(capsys, "pool", "--judge", "openai:m", "--base-url", judged.url)
    assert (code, len(out)) == (0, 1) and len(judged.requests) == 2  # the 503, then the answer for q1 c2


def test_the_judge_stops_when_its_budget_is_spent(judged: Any, tmp_path: Path) -> None:
    """The clock reads 0 at the start and at the first question, 100 at the second: a budget of 10 s is spent."""
    from stages import config

    from pytest_ragretrieval.core.errors import RagError
    from pytest_ragretrieval.labels.judge import ChatJudge

    times = iter([0.0, 0.0, 100.0])
    judge = ChatJudge(config(tmp_path), "m", judged.url, 10, clock=lambda: next(times))
    assert judge.score("query", "passage") == (1, False)
    with pytest.raises(RagError, match=r"^judge openai:m: the --judge-budget of 10 s is spent; the scores so far"):
        judge.score("query", "another passage")
    assert len(judged.requests) == 1


def test_a_judge_server_that_trickles_bytes_is_held_to_the_budget(judged: Any, tmp_path: Path) -> None:
    """issue 40, item 11: a judge server sending one byte at a time ran far past `--judge-budget` (killed at
    200 s with a budget of 20): the client's timeouts bound each read, not the answer. Here the answer would
    take about a minute (a byte every 0.2 s); the budget of 1 s ends it."""
    from openai_server import Reply
    from stages import config

    from pytest_ragretrieval.core.errors import RagError
    from pytest_ragretrieval.labels.judge import ChatJudge

    judged.default = Reply(fault="trickle")
    judge = ChatJudge(config(tmp_path), "m", judged.url, 1)
    with pytest.raises(RagError, match=r"^judge openai:m: the --judge-budget of 1 s is spent; the scores so far"):
        judge.score("query", "passage")
    assert len(judged.requests) == 1


@pytest.mark.parametrize(("url", "problem"), [
    ("http://127.0.0.1:1:2/v1", "'http://127.0.0.1:1:2/v1' is not a URL (Port could not be cast to integer value as "
     "'1:2'); write it as http://host:port/path"),
    ("http://[127.0.0.1/v1", "'http://[127.0.0.1/v1' is not a URL (Invalid IPv6 URL); write it as http://host:port/path"),
    ("http://127.0.0.1/v1\nx", "holds a control character (U+000A); write the URL alone"),
])
def test_a_bad_judge_base_url_is_one_line(judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str], url: str,
                                          problem: str) -> None:
    """issue 40, item 11: these gave `internal error: InvalidURL`."""
    code, out, err = run(capsys, "pool", "--judge", "openai:m", "--base-url", url)
    assert (code, out, err) == (2, [], [f"ragretrieval: error: judge openai:m: --base-url {problem}"])


def test_credentials_in_the_judge_s_base_url_are_refused_and_never_sent(
        judged: Any, pooled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """issue 40, item 11: `user:password@` in --base-url went out as HTTP Basic auth in place of the API key,
    and a server echoing the header showed its base64, which masking by value does not catch."""
    url = judged.url.replace("http://", "http://user:hunter22@")
    code, out, err = run(capsys, "pool", "--judge", "openai:m", "--base-url", url)
    assert (code, out) == (2, []) and err == [
        "ragretrieval: error: judge openai:m: --base-url holds a user name or password (user:password@), which an "
        "HTTP client sends as Basic auth and a server may echo; remove them (the key goes in OPENAI_API_KEY)"]
    assert judged.requests == [] and "hunter22" not in err[0]
