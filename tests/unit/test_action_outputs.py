"""The action's own write (the comment's Markdown, by shell redirection) replaces only a regular file."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from composite import ROOT

SCRIPT = ROOT / "action" / "comment.sh"


def test_a_fifo_where_the_comment_goes_is_one_error_line_and_no_hang(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    os.mkfifo(reports / "comment.md")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(SCRIPT)], cwd=tmp_path,
                          env={"PATH": os.environ["PATH"], "RAG_REPORTS": str(reports)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"::error title=rag: comment not written::{reports}/comment.md is not a regular file (a directory, device, "
        "FIFO or socket); give the action's reports input a folder of its own"
    ]
    assert (reports / "comment.md").is_fifo()
