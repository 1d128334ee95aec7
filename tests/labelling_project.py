"""The labelling fixture as a gate project (tests/unit/data/labelling; its make.py says how the ranks were
chosen and what each variant moves): 252 English chunks of Syncthing-like docs, 59 questions (56
answerable, 3 no-answer), three `python` retrievers over word overlap (bm25-like, vector-like, hybrid),
k = 5, ndcg, mrr and recall, the randomization test, tolerance 0.02.

`write_project` writes it into a folder; the other writers apply a variant to a written project: swap
its eval set (`use_evalset`) or set the hybrid's options (`set_hybrid`). What each variant is, which
questions it moves and by how much is in `variants.json`, which make.py writes beside the data."""
from __future__ import annotations

import importlib.util
import json
import shutil
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.evalset.records import Chunk, Question
from pytest_ragretrieval.scoring.evaluate import score
from pytest_ragretrieval.scoring.metrics import MetricSpec

DATA = Path(__file__).parent / "unit" / "data" / "labelling"
K = 5
LABELS = ("ndcg@5", "mrr@5", "recall@5")
SPECS = tuple(MetricSpec.parse(label, K) for label in LABELS)
TOLERANCE = 0.02
EVALSETS = {
    "base": "evalset.jsonl",
    "labelled": "evalset-labelled.jsonl",
    "retune": "evalset-retune.jsonl",
    "removed": "evalset-removed.jsonl",
}
"""The eval sets by name: the team's, the labelling pull request's, variant (b)'s, variant (c)'s."""
RUN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
"""Options of every pytester run on the project: nothing cached, no hypothesis summary."""


def _retriever_module() -> Any:
    spec = importlib.util.spec_from_file_location("labelling_fixture_retriever", DATA / "labelling_retriever.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_MODULE = _retriever_module()
_RANK: Callable[[Sequence[tuple[str, str]], str, Mapping[str, object], int], list[str]] = _MODULE.rank
STOP: frozenset[str] = _MODULE.STOP
"""The retriever's glue words."""


def words(text: str) -> frozenset[str]:
    """The content words the retriever reads in `text`."""
    return frozenset(_MODULE.words(text))


def rank(chunks: Sequence[Chunk], query: str, options: Mapping[str, object], k: int = K) -> list[str]:
    """What the project's retriever with these options returns for `query` (labelling_retriever.rank)."""
    return _RANK([(chunk.id, chunk.text) for chunk in chunks], query, options, k)


def variants() -> dict[str, Any]:
    """variants.json: each retriever's options, each variant's options and questions, the measured deltas."""
    found: dict[str, Any] = json.loads((DATA / "variants.json").read_text(encoding="utf-8"))
    return found


def chunks() -> tuple[Chunk, ...]:
    return load_chunks(DATA / "chunks.jsonl")


def questions(name: str = "base") -> tuple[Question, ...]:
    """An eval set by name (EVALSETS), through the package's loader."""
    return load_evalset(DATA / EVALSETS[name], chunks())


def rankings(options: Mapping[str, object], asked: Sequence[Question] | None = None) -> dict[str, list[str]]:
    """Question id -> the top 5 a retriever with these options gives (every base question by default)."""
    corpus = chunks()
    return {q.id: rank(corpus, q.query, options) for q in (questions() if asked is None else asked)}


def per_question(found: Mapping[str, Sequence[str]], judged: Sequence[Question]) -> dict[str, dict[str, float]]:
    """Metric label -> question id -> value (6 decimals, as recorded), answerable questions only."""
    result = score("labelling", judged, found, SPECS)
    return {label: {q.id: q.values[label] for q in result.questions if label in q.values} for label in LABELS}


def means(found: Mapping[str, Sequence[str]], judged: Sequence[Question]) -> dict[str, float]:
    """Metric label -> mean over the answerable questions, as the package scores it (unrounded)."""
    return dict(score("labelling", judged, found, SPECS).metrics)


def toml(value: object) -> str:
    """A TOML value for the options' numbers, strings and tables (inline)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(key))} = {toml(item)}" for key, item in value.items()) + "}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value)
    return repr(value)


def config(hybrid: Mapping[str, object] | None = None, evalset: str = "base") -> str:
    """pyproject.toml of the project: the three retrievers, hybrid with `hybrid` as its options."""
    options = variants()["retrievers"]
    tables = ""
    for name in ("bm25", "vector", "hybrid"):
        chosen = hybrid if name == "hybrid" and hybrid is not None else options[name]
        tables += (f"\n[tool.ragretrieval.retrievers.{name}]\ntype = \"python\"\n"
                   f"factory = \"labelling_retriever:make\"\noptions = {toml(chosen)}\n")
    return ("[tool.ragretrieval]\nchunks = \"chunks.jsonl\"\n"
            f"evalset = {json.dumps(EVALSETS[evalset])}\nbaseline = \"baselines/retrieval.json\"\n"
            "k = 5\nmetrics = [\"ndcg\", \"mrr\", \"recall\"]\nsignificance = \"randomization\"\ntolerance = 0.02\n"
            "tokenizer = \"english\"\nreport_language = \"en\"\n" + tables)


def write_project(target: Any, variant: str = "base") -> Path:
    """The project in `target` (a folder, or a pytester): the chunks, every eval set, the retriever, and a
    pyproject.toml reading the eval set `variant` names (EVALSETS) with the base retrievers."""
    folder = Path(getattr(target, "path", target))
    for name in ("chunks.jsonl", "labelling_retriever.py", *EVALSETS.values()):
        shutil.copyfile(DATA / name, folder / name)
    (folder / "pyproject.toml").write_text(config(evalset=variant), encoding="utf-8")
    return folder


def _rewrite(folder: Path, *, hybrid: Mapping[str, object] | None, evalset: str | None) -> None:
    current = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ragretrieval"]
    kept = next(name for name, file in EVALSETS.items() if file == current["evalset"])
    options = current["retrievers"]["hybrid"]["options"] if hybrid is None else hybrid
    (folder / "pyproject.toml").write_text(config(options, evalset or kept), encoding="utf-8")


def use_evalset(target: Any, name: str) -> None:
    """Point the project at eval set `name` (EVALSETS), its hybrid options kept."""
    _rewrite(Path(getattr(target, "path", target)), hybrid=None, evalset=name)


def set_hybrid(target: Any, options: Mapping[str, object]) -> None:
    """Give the project's hybrid these options (a retune, a boost), its eval set kept."""
    _rewrite(Path(getattr(target, "path", target)), hybrid=options, evalset=None)


def apply_variant(target: Any, name: str) -> None:
    """A variant's change on top of the base project: `drop` (variant a's earlier accepted drop: hybrid
    only), `labelled` (the labelling pull request: eval set only), `retune` (variant b: hybrid and eval
    set), `worse` (variant c's system change: hybrid only), `removed` (variant c: hybrid and eval set),
    `alternating-1` .. `alternating-4` (hybrid only, each step's options holding the steps before it)."""
    chosen = variants()["variants"]
    if name == "labelled":
        use_evalset(target, "labelled")
        return
    if name.startswith("alternating-"):
        set_hybrid(target, chosen["alternating"]["steps"][int(name.rpartition("-")[2]) - 1]["options"])
        return
    entry = chosen[{"removed": "worse"}.get(name, name)]
    set_hybrid(target, entry["options"])
    if name in ("retune", "removed"):
        use_evalset(target, name)
