"""rerank.in_hub_cache reads the Hugging Face cache's layout itself: it must agree with huggingface_hub."""
from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragretrieval.retrievers.rerank import in_hub_cache

MODEL = "BAAI/bge-reranker-base"


@pytest.mark.parametrize("layout", ["complete", "no ref", "ref to a missing snapshot", "no config", "other model"])
def test_in_hub_cache_agrees_with_huggingface_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    hub = pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    folder = tmp_path / ("models--" + ("BAAI--other" if layout == "other model" else MODEL.replace("/", "--")))
    snapshot = folder / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    if layout != "no ref":
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text("4567ef01" if layout == "ref to a missing snapshot" else "0123abcd")
    if layout != "no config":
        (snapshot / "config.json").write_text("{}")
    expected = isinstance(hub.try_to_load_from_cache(MODEL, "config.json", cache_dir=tmp_path), str)
    assert in_hub_cache(MODEL) is expected
    assert expected is (layout == "complete")
