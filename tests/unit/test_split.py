"""evalset/split.py: the draw, its stability, clusters, folds, and the leak guard's rule."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragretrieval.config.settings import Config, load_config
from pytest_ragretrieval.core.errors import ConfigError
from pytest_ragretrieval.evalset.records import Question
from pytest_ragretrieval.evalset.split import Split, check_sizes, folds, leak_line, leaks, normalised, sides
from pytest_ragretrieval.retrievers.tokens import tokenizer
from pytest_ragretrieval.runner.sweep import space


def _q(qid: str, query: str = "q", side: str | None = None) -> Question:
    return Question(id=qid, query=query, relevance={"c": 1}, side=side)  # type: ignore[arg-type]


def test_adding_questions_moves_no_other() -> None:
    split = Split(fraction=0.5, seed=7)
    few = [_q(f"q{i}") for i in range(100)]
    many = [*few, *(_q(f"new{i}") for i in range(400))]
    before, after = sides(few, split), sides(many, split)
    assert all(after[qid] == side for qid, side in before.items())
    assert 0.35 < sum(side == "tune" for side in after.values()) / len(after) < 0.65
    assert sides(few, Split(fraction=0.5, seed=8)) != before


def test_a_line_s_side_wins_and_no_split_leaves_every_question_the_gate_s() -> None:
    questions = [_q("a", side="tune"), _q("b", side="gate"), _q("c")]
    assert sides(questions, None) == {"a": "tune", "b": "gate", "c": "gate"}
    assert sides(questions, Split(fraction=0.999999))["c"] == "tune"
    assert sides(questions, Split(fraction=0.999999))["b"] == "gate"


def test_a_cluster_s_questions_land_on_one_side() -> None:
    questions = [_q(f"t{topic}-{i}") for topic in range(40) for i in range(3)]
    found = sides(questions, Split(fraction=0.5, seed=1), cluster=lambda q: q.id.split("-")[0])
    for topic in range(40):
        assert len({found[f"t{topic}-{i}"] for i in range(3)}) == 1
    assert len(set(found.values())) == 2


def test_the_eval_set_s_cluster_keeps_its_questions_on_one_side_by_default() -> None:
    """`cluster` on a line is the draw's key, in the gate's split and in folds alike; a question without one is
    drawn by its id, as before."""
    questions = [Question(id=f"t{topic}-{i}", query="q", relevance={"c": 1}, cluster=f"topic {topic}")
                 for topic in range(40) for i in range(3)]
    found = sides(questions, Split(fraction=0.5, seed=1))
    assert all(len({found[f"t{topic}-{i}"] for i in range(3)}) == 1 for topic in range(40))
    assert len(set(found.values())) == 2
    for _, held in folds(questions, 4, seed=2):
        ids = {q.id for q in held}
        assert all(len({f"t{topic}-{i}" in ids for i in range(3)}) == 1 for topic in range(40))
    alone = [_q(f"t{topic}-0") for topic in range(40)]
    assert sides(alone, Split(fraction=0.5, seed=1)) == sides(alone, Split(fraction=0.5, seed=1),
                                                              cluster=lambda q: q.id)


def test_folds_hold_each_question_out_once() -> None:
    questions = [_q(f"q{i}") for i in range(50)]
    found = folds(questions, 5, seed=2)
    held = [q.id for _, out in found for q in out]
    assert sorted(held) == sorted(q.id for q in questions)
    assert all(len(tune) + len(out) == 50 for tune, out in found)


def test_sizes_are_refused_in_one_line() -> None:
    check_sizes(20, 30, 20, "pyproject.toml [tool.ragretrieval]")
    with pytest.raises(ConfigError, match=r"leaves 19 gate questions, fewer than min_questions \(20\)"):
        check_sizes(19, 30, 20, "pyproject.toml [tool.ragretrieval]")
    with pytest.raises(ConfigError, match="leaves 29 tune questions, fewer than 30.*--folds"):
        check_sizes(20, 29, 20, "pyproject.toml [tool.ragretrieval]")


def test_normalised_queries_compare_equal() -> None:
    assert normalised("  Ｒｅｆｕｎｄ\u3000POLICY\n ") == normalised("refund policy")


WHITESPACE = tokenizer("whitespace")


@pytest.mark.parametrize(("shared", "extra", "named"), [(9, 1, True), (89, 11, False), (0, 0, True)])
def test_a_gate_copy_of_a_tune_question_is_named_from_jaccard_0_9(shared: int, extra: int, named: bool) -> None:
    tune = " ".join(f"w{i}" for i in range(shared)) or "exact copy"
    gate = " ".join([tune, *(f"x{i}" for i in range(extra))]) if extra else tune.upper()
    questions = [_q("t", tune, "tune"), _q("g", gate, "gate"), _q("other", "nothing alike", "gate")]
    found = leaks(questions, sides(questions, None), WHITESPACE)
    assert [(leak.gate, leak.tune) for leak in found] == ([("g", "t")] if named else [])
    if named:
        line = leak_line(found)
        assert line is not None and "g repeats tune question t" in line and "\n" not in line


def test_the_warning_names_a_bounded_list() -> None:
    questions = [_q(f"t{i}", f"query {i}", "tune") for i in range(12)]
    questions += [_q(f"g{i}", f"QUERY {i}", "gate") for i in range(12)]
    line = leak_line(leaks(questions, sides(questions, None), WHITESPACE))
    assert line is not None and line.startswith("rag: warning: 12 gate question(s)") and "and 7 more" in line


BASE = """
chunks = "c.jsonl"
evalset = "e.jsonl"
[retrievers.bm25]
type = "bm25"
"""


def _config(tmp_path: Path, extra: str) -> Config:
    (tmp_path / "rag.toml").write_text(BASE + extra, encoding="utf-8")
    return load_config(str(tmp_path / "rag.toml"), tmp_path)


def test_the_split_and_the_search_space_are_read_and_leave_the_fingerprint(tmp_path: Path) -> None:
    config = _config(tmp_path, "[split]\nfraction = 0.3\nseed = 4\n[retrievers.bm25.tune]\nk1 = [0.9, 1.2]\n")
    assert config.split == Split(fraction=0.3, seed=4)
    spec = config.retriever("bm25")
    assert spec.tune == {"k1": (0.9, 1.2)} and "tune" not in spec.fingerprint
    assert [s.changes for s in space(spec, "rag.toml [retrievers.bm25]")] == [{"k1": 0.9}, {"k1": 1.2}]
    assert len(space(spec, "rag.toml [retrievers.bm25]", budget=1, seed=3)) == 1


@pytest.mark.parametrize(("extra", "wanted"), [
    ("[split]\nfraction = 1.0\n", "rag.toml split key 'fraction': must be between 0 and 1"),
    ("[retrievers.bm25.tune]\nk1 = 1.2\n", "rag.toml [retrievers.bm25] key 'tune.k1': must be a non-empty list"),
])
def test_a_bad_split_or_search_space_is_one_line(tmp_path: Path, extra: str, wanted: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, extra)
    assert wanted in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_value_of_the_search_space_is_named(tmp_path: Path) -> None:
    spec = _config(tmp_path, "[retrievers.bm25.tune]\nk1 = [1.2, \"high\"]\n").retriever("bm25")
    with pytest.raises(ConfigError, match=r"tune \(k1 = 'high'\).*k1"):
        space(spec, "rag.toml [retrievers.bm25]")
