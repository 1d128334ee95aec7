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
PROBE = (
    '<script>document.body.setAttribute("data-gold-count", '
    'String(document.querySelectorAll("li.chunk.gold").length));</script>'
)
"""Injected by the tests, never shipped: the dumped DOM proves a browser really loaded the page."""


def browser() -> str | None:
    return next((found for name in NAMES if (found := shutil.which(name))), None)


def dump_dom(executable: str, page: Path) -> subprocess.CompletedProcess[str]:
    """The DOM the browser built from a copy of `page` carrying PROBE, after the probe ran, in a fresh profile."""
    with tempfile.TemporaryDirectory() as profile:
        probed = Path(profile) / f"probed-{page.name}"
        probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
        return subprocess.run(
            [executable, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", probed.as_uri()],
            capture_output=True, text=True, timeout=60, check=False,
        )
