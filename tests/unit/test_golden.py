"""Golden files: each renderer's output for the sample input, byte for byte, in fresh processes.

A render compared with itself in one process cannot fail; a render compared with a reviewed file
on disk, made under different hash seeds, catches any dict- or set-order, time or locale leak.
Regenerate after an intended change with `RAG_UPDATE_GOLDEN=1 pytest tests/unit/test_golden.py`
and review the diff.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
RENDERERS = {
    "report.md": "pytest_ragretrieval.report.markdown:render",
    "report.html": "pytest_ragretrieval.report.html:render",
    "step-summary.md": "pytest_ragretrieval.report.github:step_summary",
}
SCRIPT = """
import sys
from importlib import import_module
from report_samples import sample_input
module, _, name = sys.argv[1].partition(":")
sys.stdout.buffer.write(getattr(import_module(module), name)(sample_input()).encode("utf-8"))
"""


def render(target: str, seed: str) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, target], env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


@pytest.mark.parametrize("name", sorted(RENDERERS))
def test_render_matches_the_golden_file(name: str) -> None:
    first, second = render(RENDERERS[name], "1"), render(RENDERERS[name], "2")
    golden = GOLDEN / name
    if os.environ.get("RAG_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_bytes(first)
    assert first == second, f"{name} differs between hash seeds"
    assert first == golden.read_bytes(), f"{name} differs from {golden}; if intended, regenerate it (see the module docstring)"
