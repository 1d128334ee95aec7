"""Where the gate reads the base's exam: the trust root (the Labels page, "Where the base's exam comes from").

A pull request can edit its own baseline, the labels it keeps included, so in a pull request's CI the
gate reads the base's exam from the base revision (`git cat-file blob BASE:path`), never from the work
tree; if it cannot (no base ref, the base revision not fetched: a shallow clone), it fails closed in one
line naming the checkout depth to set. Outside CI it uses the work tree's and the header says so.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..baseline.exams import KeptExam
from ..baseline.format import Baseline, parse
from ..config.settings import Config, load_config
from ..core.env import truthy
from ..core.errors import BaselineError, RagError
from ..files.paths import display
from ..review.settings import gate_settings, loosened_settings

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
DEPTH = ("set `fetch-depth: 0` on actions/checkout (or fetch the base branch before the gate: "
         "`git fetch origin +refs/heads/{ref}:refs/remotes/origin/{ref}`)")


def in_pull_request_ci(environ: Mapping[str, str]) -> bool:
    """A CI run of a pull request: GitHub Actions (or any CI setting CI=true) with a base ref or a
    pull-request event."""
    ci = environ.get("GITHUB_ACTIONS") == "true" or truthy(environ.get("CI"))
    return ci and bool(environ.get("GITHUB_BASE_REF") or environ.get("GITHUB_EVENT_NAME") in PULL_REQUEST_EVENTS)


def kept_exam(path: Path, baseline: Baseline | None, environ: Mapping[str, str] = os.environ) -> KeptExam | None:
    """The base's exam's source for this run: None (the work tree's baseline, outside a pull request's CI)
    or the base revision's baseline's fingerprint. Raises BaselineError, one line, where CI cannot read it."""
    if baseline is None or not in_pull_request_ci(environ):
        return None
    ref = environ.get("GITHUB_BASE_REF", "")
    if not ref:
        raise BaselineError(f"{display(path)}: this pull request's CI names no base ref (GITHUB_BASE_REF is empty), "
                            "so the base's exam cannot be read from the base revision; run the gate on the "
                            "pull_request event")
    root = _git(["rev-parse", "--show-toplevel"], path.parent)
    revision = next((rev for rev in (f"origin/{ref}", ref)
                     if root is not None and _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                                                  Path(root)) is not None), None)
    if root is None or revision is None:
        raise BaselineError(f"{display(path)}: the base revision origin/{ref} is not in this checkout (a shallow "
                            f"clone?), so the base's exam cannot be read from it; {DEPTH.format(ref=ref)}")
    relative = path.resolve().relative_to(Path(root).resolve()).as_posix()
    text = _git(["cat-file", "blob", f"{revision}:{relative}"], Path(root))
    if text is None:
        return KeptExam(None, f"the base revision {revision} has no {relative}: judged under today's exam only",
                        revision)
    base = parse(Path(f"{revision}:{relative}"), text)
    return KeptExam(base.fingerprint, f"the base's exam read from the base revision, {revision}:{relative}", revision)


def loosened_line(config: Config, kept: KeptExam | None) -> str | None:
    """In a pull request's CI, the one line saying that the pull-request check will need the approval label
    for a loosened setting (a tolerance raised, a test turned off, ...) against the base revision's config,
    which the gate's own verdicts cannot see. None where nothing is loosened, or where the base's config
    cannot be read on its own (a file it names, such as a user dictionary, is not beside it): the check
    compares the settings with every file in place."""
    if kept is None or not kept.revision:
        return None
    root = _git(["rev-parse", "--show-toplevel"], config.source.parent)
    text = None if root is None else _git(
        ["cat-file", "blob", f"{kept.revision}:{config.source.resolve().relative_to(Path(root).resolve()).as_posix()}"],
        Path(root))
    if text is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / config.source.name
        copy.write_text(text, encoding="utf-8")
        try:
            base = load_config(None if copy.name == "pyproject.toml" else str(copy), Path(scratch))
        except RagError:
            return None
    loosened = [f"{change.setting}{f' of {change.subject}' if change.subject else ''} {change.old} -> {change.new}"
                for change in loosened_settings(gate_settings(base), gate_settings(config))]
    if not loosened:
        return None
    return (f"rag: the pull-request check will need the approval label: settings loosened against {kept.revision} "
            f"({'; '.join(loosened)}), which the verdicts above do not judge")


def _git(args: list[str], cwd: Path) -> str | None:
    """git's output, or None where git is missing or the command fails."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and args[0] != "cat-file" else (
        done.stdout if done.returncode == 0 else None)
