"""Render docs/pr-comment.png from a real run of the action's steps on the bundled sample.

The manual's picture (docs/ci.md) must show what the comment says today, so it is made, not drawn: a
two-commit repository holds the sample (base: this repository's config and baseline; pull
request: hybrid's weights retuned from [1.0, 0.5] to [0.2, 1.0], a drop the gate fails, re-recorded with
`--rag-allow-regression`, which lowers the bar, and no label), the gate writes its results, `ragretrieval diff
--against`, `pr-check` and `comment` run as action/ runs them, and Chromium photographs the
comment rendered as GitHub renders Markdown (markdown-it-py's GFM-like preset).

Needs the project's dev environment (it runs in its venv; markdown-it-py comes with rich), Debian's
chromium (or Google Chrome) and fonts-noto-cjk; pngquant and optipng, where present, make the file smaller.
Usage: python docs/pr_comment_picture.py [OUT.png]   (default: docs/pr-comment.png)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SECTION = re.compile(r"^\[tool\.ragretrieval(?:\.[^\]]+)?\]\n(?:(?!\[).*\n?)*", re.MULTILINE)
WEIGHTS, RETUNED = "weights = [1.0, 0.5]\n", "weights = [0.2, 1.0]\n"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "GITHUB_ACTIONS": "", "GITHUB_STEP_SUMMARY": "", "GITHUB_OUTPUT": ""}

STYLE = """
body { margin: 0; padding: 16px; background: #fff;
  font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", Helvetica, Arial, sans-serif;
  color: #1f2328; }
.box { border: 1px solid #d1d9e0; border-radius: 6px; }
.head { background: #f6f8fa; border-bottom: 1px solid #d1d9e0; padding: 8px 16px; color: #59636e;
  border-radius: 6px 6px 0 0; }
.head b { color: #1f2328; } .bot { border: 1px solid #d1d9e0; border-radius: 2em; padding: 0 6px;
  font-size: 12px; }
.body { padding: 16px; }
h1, h2 { border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin: 0 0 16px; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 24px; } h3 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 0 0 16px; }
th, td { border: 1px solid #d1d9e0; padding: 6px 13px; }
tr:nth-child(2n) { background: #f6f8fa; }
code { background: #eff1f3; border-radius: 6px; padding: .2em .4em; font-size: 85%;
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
a { color: #0969da; text-decoration: none; }
hr { border: 0; height: 1px; background: #d1d9e0; margin: 24px 0; }
"""


def run(*args: str, cwd: Path, ok: tuple[int, ...] = (0,), timeout: float = 600) -> str:
    """A step's standard output; a step that fails or hangs ends the script with one line and its output's tail."""
    try:
        done = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"{' '.join(args)} did not finish in {timeout:.0f} s")
    if done.returncode not in ok:
        sys.exit(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def git(cwd: Path, *args: str) -> None:
    run("git", "-c", "user.email=docs@example.com", "-c", "user.name=docs", *args, cwd=cwd)


def repository(folder: Path) -> Path:
    """The base commit on main of a bare origin, cloned; the sample's settings, fixtures and baseline."""
    origin, work = folder / "origin.git", folder / "work"
    git(folder, "init", "-q", "--bare", "-b", "main", str(origin))
    git(folder, "clone", "-q", f"file://{origin}", str(work))
    settings = "".join(SECTION.findall((ROOT / "pyproject.toml").read_text(encoding="utf-8")))
    settings = settings.replace('cache = ".rag-cache"', f"cache = {json.dumps(str(ROOT / '.rag-cache'))}")
    (work / "pyproject.toml").write_text(settings, encoding="utf-8")
    for name in ("fixtures", "baselines"):
        shutil.copytree(ROOT / name, work / name)
    git(work, "checkout", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "base")
    git(work, "push", "-q", "origin", "main")
    return work


def pull_request(work: Path) -> Path:
    """hybrid retuned and re-recorded; the gate's results, the baseline check and the comment."""
    text = (work / "pyproject.toml").read_text(encoding="utf-8")
    assert WEIGHTS in text, "the sample's hybrid weights moved: update WEIGHTS"
    (work / "pyproject.toml").write_text(text.replace(WEIGHTS, RETUNED), encoding="utf-8")
    pytest = (str(BIN / "pytest"), "-p", "no:cacheprovider", "-m", "rag_eval", "--rag-db=embedded")
    run(*pytest, "--rag-update-baseline", "--rag-allow-regression", cwd=work)
    git(work, "commit", "-q", "-am", "hybrid retuned")
    reports = work / "reports"
    run(*pytest, "--rag-eval", "--rag-json", str(reports / "rag-eval.json"), cwd=work)
    event = work.parent / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7, "labels": [],
                                                 "head": {"repo": {"full_name": "your-org/app"}},
                                                 "base": {"repo": {"full_name": "your-org/app"}}}}))
    ragretrieval = str(BIN / "ragretrieval")
    changes, decision = reports / "baseline-changes.json", reports / "baseline-decision.json"
    run(ragretrieval, "diff", "--against", "origin/main", "--fail-on-lower", "--json", str(changes),
        cwd=work, ok=(0, 1))
    run(ragretrieval, "pr-check", str(changes), "--event", str(event), "--json", str(decision), cwd=work, ok=(0, 1))
    comment = work / "comment.md"
    comment.write_text(run(ragretrieval, "comment", str(reports / "rag-eval.json"), "--baseline-changes", str(changes),
                           "--decision", str(decision), "--gate-outcome", "success",
                           "--artifact-url", "https://github.com/your-org/app/actions/runs/1/artifacts/2",
                           "--run-url", "https://github.com/your-org/app/actions/runs/1", cwd=work, timeout=60),
                       encoding="utf-8")
    return comment


def page(markdown: str) -> str:
    body = MarkdownIt("gfm-like", {"html": True, "linkify": False}).render(markdown)
    return (f"<!doctype html><meta charset=utf-8><style>{STYLE}</style><div class=box><div class=head>"
            f"<b>github-actions</b> <span class=bot>bot</span> commented · edited on every push "
            f"(one comment per pull request)</div><div class=body>{body}</div></div>")


BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars")
WIDTH = 1060
MEASURE = "<script>document.title = String(document.body.scrollHeight)</script>"


def photograph(found: str, document: str, folder: Path, out: Path) -> None:
    """The browser's screenshot of the page at its own height: one run measures it, a second photographs."""
    source = folder / "comment.html"
    source.write_text(document + MEASURE, encoding="utf-8")
    browser = (found, *FLAGS, f"--user-data-dir={folder / 'profile'}")
    dom = run(*browser, f"--window-size={WIDTH},800", "--dump-dom", source.as_uri(), cwd=folder, timeout=120)
    measured = re.search(r"<title>(\d+)</title>", dom)
    if measured is None:
        sys.exit(f"{found} did not run the page's script: no height in its DOM")
    run(*browser, f"--window-size={WIDTH},{measured.group(1)}", f"--screenshot={out}", source.as_uri(),
        cwd=folder, timeout=120)
    if shutil.which("pngquant"):  # 256 colours are plenty for text and tables: about a third of the size
        run("pngquant", "--force", "--skip-if-larger", "--strip", "--output", str(out), "256", "--", str(out),
            cwd=folder, ok=(0, 98, 99), timeout=300)
    if shutil.which("optipng"):  # Chromium writes fast, not small
        run("optipng", "-quiet", "-o5", str(out), cwd=folder, timeout=300)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "pr-comment.png"
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        sys.exit(f"no browser: install Debian's chromium (or Google Chrome; looked for {', '.join(BROWSERS)})")
    if not out.parent.is_dir():
        sys.exit(f"{out}: its folder {out.parent} does not exist; give a path in an existing folder")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        markdown = pull_request(repository(folder)).read_text(encoding="utf-8")
        photograph(found, page(markdown), folder, out.resolve())
    verdicts = [line for line in markdown.splitlines() if line.startswith("- **")][:2]
    print(f"{out}: {out.stat().st_size:,} bytes, the comment of a run that says:", *verdicts, sep="\n")


if __name__ == "__main__":
    main()
