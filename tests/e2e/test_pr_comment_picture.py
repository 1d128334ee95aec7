"""docs/pr_comment_picture.py, which makes the manual's picture of the comment (docs/ci.md), still runs.

The picture must come from a real run, so the script that makes it is kept working: it runs the
action's steps on the bundled sample and photographs the comment in a headless browser. Rendered
pixels differ between browser versions, so this checks the run's verdicts and the file, not bytes.
"""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from browser import MISSING, browser

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_comment_picture_is_made_from_a_run_that_lowers_the_bar_without_the_label(tmp_path: Path) -> None:
    if browser() is None:
        pytest.skip(MISSING)
    out = tmp_path / "comment.png"
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "pr_comment_picture.py"), str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    gate, baseline = done.stdout.splitlines()[1:3]
    assert "no failures" in gate
    assert "without the label `rag-baseline-approved`" in baseline
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 1060
    assert height > 1000  # the whole comment, tables included, not a blank or clipped page
