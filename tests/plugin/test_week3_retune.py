"""The user's week 3 through pytest (the data: tests/unit/data/week3): three retrievers answering from
rankings (the `python` type), a baseline recorded before the hybrid retune, a run after it. Under the
default adjustment the four hybrid metrics that fell together fail; under Holm all 18 items pass."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from projects import retriever

WEEK3 = Path(__file__).parents[1] / "unit" / "data" / "week3"
RUN = ("-p", "no:cacheprovider")
ANSWERS = '''
import json
from pathlib import Path

HERE = Path(__file__).parent


def answers(name):
    by_query = json.loads((HERE / "rankings.json").read_text(encoding="utf-8"))[name]
    return lambda query, k: by_query.get(query, [])[:k]


def bm25(ctx):
    return answers("bm25")


def vector(ctx):
    return answers("vector")


def hybrid(ctx):
    return answers("hybrid")
'''


def write(folder: Path, when: str, settings: str, options: str) -> None:
    """The project at `when` ("before" or "after" the retune): rankings by query, the hybrid's options."""
    rankings = json.loads((WEEK3 / "rankings.json").read_text(encoding="utf-8"))[when]
    queries = {json.loads(line)["id"]: json.loads(line)["query"]
               for line in (folder / "evalset.jsonl").read_text(encoding="utf-8").splitlines()}
    by_query = {name: {queries[qid]: ranking for qid, ranking in found.items()} for name, found in rankings.items()}
    (folder / "rankings.json").write_text(json.dumps(by_query, ensure_ascii=False), encoding="utf-8")
    tables = "".join(retriever(name, "python", factory=f"week3_answers:{name}") for name in ("bm25", "vector"))
    tables += retriever("hybrid", "python", factory="week3_answers:hybrid") + f"options = {options}\n"
    (folder / "pyproject.toml").write_text(
        '[tool.ragretrieval]\nchunks = "chunks.jsonl"\nevalset = "evalset.jsonl"\nk = 5\n'
        'metrics = ["precision", "recall", "f1", "ndcg", "hit_rate", "mrr"]\nsignificance = "randomization"\n'
        f"{settings}\n{tables}", encoding="utf-8")


@pytest.fixture
def week3(pytester: pytest.Pytester) -> pytest.Pytester:
    for name in ("chunks.jsonl", "evalset.jsonl"):
        shutil.copyfile(WEEK3 / name, pytester.path / name)
    (pytester.path / "week3_answers.py").write_text(ANSWERS, encoding="utf-8")
    write(pytester.path, "before", "", "{rrf_k = 60}")
    assert pytester.runpytest("--rag-update-baseline", *RUN).ret == 0
    return pytester


def test_the_retune_fails_under_maxt_and_passes_under_holm(week3: pytest.Pytester) -> None:
    write(week3.path, "after", "", "{rrf_k = 5, weights = [0.3, 1.0]}")
    result = week3.runpytest("--rag-eval", *RUN)
    result.assert_outcomes(passed=14, failed=4)
    result.stdout.fnmatch_lines([
        "*recall@5 of 'hybrid' fell from 0.7741 to 0.7000 (-0.0741, tolerance 0.0000) after changes of "
        "hybrid.options.rrf_k; hybrid.options.weights; randomization test p = 0.0343 < alpha 0.05 (max-T-adjusted "
        "over 6 items; unadjusted 0.0156), 95% CI of the mean difference *",
        "compared across changes: hybrid.options.rrf_k 60 -> 5; hybrid.options.weights (none) -> [0.3, 1.0]",
        "warning: hybrid recall@5: 45 questions detect drops of 0.1377 or more reliably (80% power), smaller ones "
        "only sometimes; about 342 would detect 0.05 reliably",
    ])
    write(week3.path, "after", 'adjustment = "holm"', "{rrf_k = 5, weights = [0.3, 1.0]}")
    held = week3.runpytest("--rag-eval", "--rag-json", "results.json", *RUN)  # -k would narrow the family
    held.assert_outcomes(passed=18)
    held.stdout.fnmatch_lines(["p-values Holm-adjusted over the 6 metric items judged with a randomization test *"])
    results = json.loads((week3.path / "results.json").read_text(encoding="utf-8"))
    recall = results["retrievers"]["hybrid"]["comparison"]["recall@5"]
    assert (recall["p_value"], recall["p_unadjusted"], recall["family"], recall["adjustment"]) == (
        0.09375, 0.015625, 6, "holm")
    assert results["significance"] == {"method": "randomization", "alpha": 0.05, "adjustment": "holm", "family": 6}
