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
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..bar.places import Edit, edits
from ..baseline.exams import KeptExam
from ..baseline.fingerprint import recorded_places
from ..baseline.format import Baseline, parse
from ..config.settings import Config, load_config
from ..core.digest import SHORT, digest
from ..core.env import truthy
from ..core.errors import BaselineError, RagError
from ..evalset.documents import load_documents
from ..files.paths import display
from ..gate.report import chunker_changed
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


def edited(config: Config, baseline: Baseline | None, kept: KeptExam | None) -> dict[str, Edit]:
    """Across a chunker change, the edits of the documents changed since the bar's places were recorded (the
    base revision's file in a pull request's CI, else the baseline's), read from that revision, else HEAD."""
    if baseline is None or config.documents is None or not chunker_changed(config, baseline):
        return {}
    source = kept.fingerprint if kept is not None and kept.fingerprint is not None else baseline.fingerprint
    return base_edits(config, source, kept.revision if kept is not None and kept.revision else "HEAD")


def base_edits(config: Config, fingerprint: Mapping[str, Any] | None, revision: str) -> dict[str, Edit]:
    """The edit of each document changed since `fingerprint` recorded its chunks' places (the Verdicts page, "A
    chunker change"): its old text read from `revision` (the pull request's base in CI, `diff --against`'s REV,
    else HEAD), taken only where its digest is the recorded one; none where git, the revision or the text is
    not there (its places are then lost, as before the edit could be read)."""
    if config.documents is None or fingerprint is None:
        return {}
    recorded = {span.doc: short for span, short in recorded_places(fingerprint).values()}
    today = {document.id: document.text for document in load_documents(config.documents)}
    changed = {doc for doc, short in recorded.items() if doc in today and digest(today[doc], SHORT) != short}
    if not changed:
        return {}
    before = _documents_at(config.documents, revision)
    return edits({doc: text for doc, text in before.items()
                  if doc in changed and digest(text, SHORT) == recorded[doc]}, today)



OLD_TEXTS_BUDGET = 120.0
"""Seconds, in all, for reading the old texts of the documents at the base revision (one git call each)."""

def _documents_at(path: Path, revision: str) -> dict[str, str]:
    """The documents `path` (a file or a folder) holds at `revision`, read as the gate reads them; none where
    git cannot give them, or not within `OLD_TEXTS_BUDGET` seconds in all (their places are then lost, as
    without git)."""
    root = _git(["rev-parse", "--show-toplevel"], path.parent)
    if root is None:
        return {}
    try:
        relative = path.resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return {}
    listing = _git(["ls-tree", "-r", "-z", "--name-only", revision, "--", relative], Path(root))
    if not listing:
        return {}
    end = time.monotonic() + OLD_TEXTS_BUDGET
    with tempfile.TemporaryDirectory() as folder:
        for name in filter(None, listing.split("\0")):
            if (left := end - time.monotonic()) <= 0:
                return {}
            try:
                done = subprocess.run(["git", "cat-file", "blob", f"{revision}:{name}"], cwd=root,
                                      capture_output=True, timeout=left)
            except (OSError, subprocess.SubprocessError):
                return {}
            if done.returncode != 0:
                return {}
            target = Path(folder) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(done.stdout)
        try:
            return {document.id: document.text for document in load_documents(Path(folder) / relative)}
        except RagError:
            return {}
