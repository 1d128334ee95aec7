"""Damage by class (tests/fuzz_classes.py): every file the gate and the command read, every class of
damage, a few seeded tries each. No traceback, no internal error, no changed input, and no silent
pass: a damaged file either stops the run, fails an item, or is named. RAG_FUZZ_TRIES sets the
tries per class (the seeded campaign of 300: `python benchmarks/fuzz_inputs.py --tries 300`)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzz_classes import CLASSES, Tally, make_project, one_try

TRIES = int(os.environ.get("RAG_FUZZ_TRIES", "2"))
SEED = int(os.environ.get("RAG_FUZZ_SEED", "0"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return make_project(tmp_path_factory.mktemp("fuzz-classes") / "project")


@pytest.mark.parametrize(("name", "kind"), CLASSES, ids=[f"{name}:{kind}" for name, kind in CLASSES])
def test_each_class_of_damage_is_refused_failed_or_named(pristine: dict[str, bytes], tmp_path: Path,
                                                         name: str, kind: str) -> None:
    tally = Tally()
    for number in range(TRIES):
        one_try(pristine, tmp_path / "project", name, kind, SEED * 1_000_003 + number, tally)
    assert tally.tracebacks == [], tally.tracebacks
    assert tally.changed == [], tally.changed
    assert tally.tries == TRIES
    assert tally.silent == 0, tally.examples
