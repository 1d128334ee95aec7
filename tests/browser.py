"""Finding a headless Chromium for the HTML report tests: Debian's `chromium` here, the Google
Chrome that GitHub's Ubuntu runners ship there."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)
MISSING = "install Debian's chromium (or Google Chrome) to run it"


def browser() -> str | None:
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def dump_dom(executable: str, page: Path) -> subprocess.CompletedProcess[str]:
    """The DOM the browser built from `page`, after its scripts ran, in a fresh profile."""
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [executable, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=60, check=False,
        )
