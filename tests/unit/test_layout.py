"""The package's shape, enforced: no import cycle (type-only imports too), small modules, pytest only in the glue."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_ragretrieval"
NAME = PACKAGE.name
MAX_LINES = 350
MAX_SESSION_LINES = 250


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every module of the package that `name` imports, anywhere in the file (TYPE_CHECKING blocks included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in known:
                    found.add(f"{target}.{alias.name}")
                elif target in known:
                    found.add(target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
    found.discard(name)
    return found


def test_no_import_cycles() -> None:
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycles.append([*trail[trail.index(name):], name])
            return
        state[name] = 1
        for target in sorted(graph[name]):
            visit(target, [*trail, name])
        state[name] = 2

    for name in sorted(graph):
        visit(name, [])
    assert cycles == []


def test_modules_stay_small() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert {name: size for name, size in sizes.items() if size > MAX_LINES} == {}
    assert sizes[f"{NAME}.session"] < MAX_SESSION_LINES


def test_only_the_pytest_glue_imports_pytest() -> None:
    users = {
        name for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] in ("pytest", "_pytest") for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("pytest", "_pytest") and not node.level)
    }
    assert users == {f"{NAME}.plugin"}
