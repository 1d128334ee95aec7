"""Where the two sides of `ragretrieval diff` come from: two files, their configs, or a git revision.

Tolerance and the other gate settings live in the config, not in the baseline, so a check that
a pull request does not lower its bar compares the configs of both sides as well. `--against
REV` reads the config at REV with `git show`, parses it with the plugin's own reader, follows
*that* config's `baseline` path (so a moved baseline is still found), and compares both with
the work tree's. REV is read as a whole: the config with every file it names (a user dictionary
relative to the config), materialised from REV in a temporary folder whose path no message keeps.
A base config or baseline that exists but cannot be read (by this version, or at all) fails the
check closed, naming why; the approval label is the way through, as for a lowering: otherwise a
pull request that made the base unreadable would compare nothing and pass. Where the base's file
keeps labels, the work tree's eval set is read as the gate reads it: today's exam, which both sides'
approved rankings are scored under (`review/rescore.py`), so no label of the head's file is needed.
"""
from __future__ import annotations

import os
import posixpath
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from msgspec import UnsetType

from ..bar.exam import Exam
from ..baseline.fingerprint import chunk_record
from ..baseline.format import Baseline, parse, read
from ..config.files import find_settings
from ..config.outputs import inputs
from ..config.settings import Config, load_config
from ..core.digest import SHORT, digest
from ..core.errors import RagError
from ..evalset.documents import load_documents
from ..files.jsontext import strings
from ..files.paths import display
from ..glue.inputs import load_inputs
from ..glue.trust import base_edits
from ..labels.relabel import units
from ..record.codec import read as read_record
from ..review.rescore import Today
from ..review.settings import GateSettings, gate_settings
from .common import PROG


class GitError(RagError):
    """git could not give what `--against` needs: one line saying which command failed and how to fix it."""


@dataclass(frozen=True)
class Sides:
    """The old side (None: the base has no baseline yet), the new side, their settings when known, and notes."""

    old: Baseline | None
    new: Baseline
    old_settings: GateSettings | None
    new_settings: GateSettings | None
    notes: tuple[str, ...] = ()
    inputs: Mapping[str, Path] = field(default_factory=dict, hash=False)
    """What was read from the work tree, by the name messages give it: `--json` must not overwrite it."""
    unreadable: tuple[str, ...] = ()
    """Why the base's config or baseline, which it holds, cannot be read: the check fails closed."""
    today: Today | None = None
    """The work tree's eval set (`--against`, where the base's file keeps labels): today's exam."""
    language: str = "both"
    """The new side's `report_language`, when its config was read."""


def config_from(path: Path) -> Config:
    """The config in a pyproject.toml ([tool.ragretrieval]) or a TOML file with the settings at top level."""
    if path.name == "pyproject.toml":
        return load_config(None, path.parent)
    return load_config(str(path), path.parent)


def from_files(old: str, new: str, old_config: str | None, new_config: str | None) -> Sides:
    """`diff OLD NEW`: settings compared only when both configs are given, else a note says they were not."""
    notes = () if old_config and new_config else (
        "settings (tolerance, significance, ...) not compared: give --old-config and --new-config, "
        "or use --against REV",
    )
    given = {"OLD.json": old, "NEW.json": new, "--old-config": old_config, "--new-config": new_config}
    head = config_from(Path(new_config)) if new_config else None
    return Sides(
        read(Path(old)), read(Path(new)),
        gate_settings(config_from(Path(old_config))) if old_config else None,
        gate_settings(head) if head is not None else None,
        notes,
        {what: Path(path) for what, path in given.items() if path},
        language=head.report_language if head is not None else "both",
    )


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise GitError("--against needs git on PATH") from None


def _blob(rev: str, repo_path: str, root: Path) -> bytes | None:
    """The file at `rev` as it is stored, or None when `rev` has no such file."""
    if _git(["cat-file", "-e", f"{rev}:{repo_path}"], root).returncode != 0:
        return None
    try:
        shown = subprocess.run(["git", "cat-file", "blob", f"{rev}:{repo_path}"], cwd=root, capture_output=True,
                               timeout=60)
    except FileNotFoundError:
        raise GitError("--against needs git on PATH") from None
    if shown.returncode != 0:
        raise GitError(f"git cat-file blob {rev}:{repo_path} failed: {shown.stderr.decode(errors='replace').strip()}")
    return shown.stdout


def _repository(rev: str, cwd: Path) -> Path:
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise GitError(f"--against needs a git work tree: {top.stderr.strip()}")
    root = Path(top.stdout.strip()).resolve()
    if _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root).returncode != 0:
        raise GitError(
            f"unknown revision {rev!r}; fetch the base branch first, e.g. "
            "`git fetch --depth=1 origin +refs/heads/main:refs/remotes/origin/main`"
        )
    return root


def _listing(rev: str, root: Path) -> set[str]:
    """Every file at `rev`, by its path in the repository."""
    listed = _git(["ls-tree", "-r", "-z", "--name-only", rev], root)
    if listed.returncode != 0:
        raise GitError(f"git ls-tree {rev} failed: {listed.stderr.strip()}")
    return set(listed.stdout.split("\0")) - {""}


def _copy_blob(rev: str, repo_path: str, root: Path, target: Path) -> None:
    """The file at `rev` written to `target`, streamed (a run file may be large), bytes as they are."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        try:
            done = subprocess.run(["git", "cat-file", "blob", f"{rev}:{repo_path}"], cwd=root, stdout=out,
                                  stderr=subprocess.PIPE, timeout=300)
        except FileNotFoundError:
            raise GitError("--against needs git on PATH") from None
    if done.returncode != 0:
        raise GitError(f"git cat-file blob {rev}:{repo_path} failed: {done.stderr.decode(errors='replace').strip()}")


def _materialise(rev: str, config_path: str, root: Path, scratch: Path) -> None:
    """REV's config at its place under `scratch`, with every file at REV that one of its strings names
    relative to the config's folder (a user dictionary, a run file, whatever a retriever type reads),
    so the config reads at REV as it did there. The chunks and the eval set are left out: the diff
    reads neither, and they may be large."""
    listing = _listing(rev, root)
    _copy_blob(rev, config_path, root, scratch / config_path)
    copy = scratch / config_path
    try:
        _, _, table = find_settings(None if copy.name == "pyproject.toml" else str(copy), copy.parent)
    except RagError:
        return  # load_config says why, in the caller
    skipped = {table.get(key) for key in ("chunks", "evalset")}
    folder = posixpath.dirname(config_path)
    for text in strings(table):
        if text in skipped or not 0 < len(text) <= 4096 or "\0" in text or posixpath.isabs(text):
            continue
        named = posixpath.normpath(posixpath.join(folder, text))
        if named in listing and named != config_path:
            _copy_blob(rev, named, root, scratch / named)


def _without(scratch: Path, rev: str, text: str) -> str:
    """A message about the copy, naming REV's files as `REV:path`: no temporary path reaches a comment."""
    for prefix in sorted({str(scratch), os.path.realpath(scratch), os.path.relpath(scratch)}, key=len, reverse=True):
        text = text.replace(prefix + os.sep, f"{rev}:").replace(prefix, rev)
    return text


def from_revision(rev: str, config_option: str | None, cwd: Path) -> Sides:
    """`diff --against REV`: the config and the baseline it names at REV, against the work tree's.

    REV is read as a whole: its config with every file the config names, so relative paths resolve
    as they did at REV. A config or baseline that REV holds but that cannot be read (by this version,
    or at all) is `unreadable`: the check fails closed, and the approval label is the way through, as
    for a lowering. REV without a baseline (the first one) is no lowering: there is no bar to lower.
    """
    new_config = load_config(config_option, cwd)
    root = _repository(rev, cwd)
    try:
        config_path = new_config.source.resolve().relative_to(root).as_posix()
        old_baseline_path = new_config.baseline.resolve().relative_to(root).as_posix()
    except ValueError:
        raise GitError(
            f"--against compares files inside the repository at {root}; "
            f"{display(new_config.source)} or its baseline is outside it"
        ) from None
    notes: list[str] = []
    unreadable: list[str] = []
    old_settings: GateSettings | None = None
    if _blob(rev, config_path, root) is None:
        notes.append(f"{rev} has no {config_path}: settings not compared")
    else:
        with tempfile.TemporaryDirectory() as folder:
            scratch = Path(folder).resolve()
            _materialise(rev, config_path, root, scratch)
            copy = scratch / config_path
            try:
                old_config = load_config(None if copy.name == "pyproject.toml" else str(copy), copy.parent)
            except RagError as exc:
                unreadable.append(f"the config at {rev} ({config_path}) cannot be read by this version: "
                                  f"{_without(scratch, rev, str(exc))}")
            else:
                old_settings = gate_settings(old_config)
                inside = Path(os.path.relpath(old_config.baseline, copy.parent)).as_posix()
                old_baseline_path = posixpath.normpath(posixpath.join(posixpath.dirname(config_path), inside))
    if old_baseline_path.startswith("../"):
        raise GitError(f"the config at {rev} names a baseline outside the repository ({old_baseline_path})")
    old: Baseline | None = None
    old_bytes = _blob(rev, old_baseline_path, root)
    if old_bytes is None:
        notes.append(f"{rev} has no {old_baseline_path}: every entry is new")
    else:
        where = f"{rev}:{old_baseline_path}"
        try:
            old = parse(Path(where), old_bytes.decode("utf-8"))
        except UnicodeDecodeError as exc:
            unreadable.append(f"the baseline at {rev} ({old_baseline_path}) cannot be read: {where}: not UTF-8 "
                              f"({exc.reason} at byte {exc.start})")
        except RagError as exc:
            unreadable.append(f"the baseline at {rev} ({old_baseline_path}) cannot be read by this version: {exc}")
    today = _today(old, new_config, notes)
    if today is not None and old is not None:  # a document edited since: the base's places carried through it
        today = replace(today, edits=base_edits(new_config, old.fingerprint, rev))
    return Sides(old, read(new_config.baseline), old_settings, gate_settings(new_config), tuple(notes),
                 inputs(new_config), tuple(unreadable), today, new_config.report_language)


def _today(old: Baseline | None, config: Config, notes: list[str]) -> Today | None:
    """Today's exam from the work tree, for a base to compare with; a base that keeps no labels (format 3) is
    compared on its stored values where the work tree's eval set cannot be read (a note says why)."""
    if old is None:
        return None
    if Exam.of_baseline(old.fingerprint, "the base's exam") is None:
        try:
            return today_exam(config, old)
        except RagError as exc:
            notes.append(f"today's eval set could not be read ({exc}): the base's stored values were compared")
            return None
    today = today_exam(config, old)
    if today is None:
        notes.append("the corpus is the team's table, which diff does not read: today's exam is the labels "
                     f"{display(config.baseline)} was recorded under")
    return today


def with_rankings(sides: Sides, path: Path) -> Sides:
    """`sides` with today's rankings read from the gate's results file (`--rag-json`), never the head's baseline."""
    results = read(path)
    rankings = {name: {qid: q.ranking for qid, q in entry.questions.items()}
                for name, entry in results.retrievers.items()}
    if sides.today is None:
        return sides
    verdicts = read_record(path).record.failures  # the gate's own: what it failed
    failed = None if isinstance(verdicts, UnsetType) else frozenset(
        (failure.retriever, failure.metric) for failure in verdicts)
    return replace(sides, today=replace(sides.today, rankings=rankings, failed=failed),
                   inputs={**sides.inputs, display(path): path})


def today_exam(config: Config, base: Baseline | None = None) -> Today | None:
    """The work tree's eval set as the gate reads it (documents mode: cut and labelled, its documents
    unedited where the base recorded their digest; with the chunks' places), or None when the corpus is
    the team's table, which needs a database."""
    if config.documents is None and config.chunks is None:
        return None
    loaded = load_inputs(config, base, f"{PROG} diff")
    chunkings = {spec.name: spec.chunking for spec in config.retrievers} if config.chunkings else None
    digests = {chunk.id: chunk_record(chunk) for chunk in loaded.chunks}
    return Today(loaded.questions, f"the eval set {display(config.evalset)}", loaded.places, chunkings,
                 digests=digests, units=units(config, base, loaded.chunks), **_documents(config))


def _documents(config: Config) -> dict[str, Any]:
    """Documents mode: how the work tree cuts its documents and each document's short digest (`Today`)."""
    if config.documents is None or config.chunker is None:
        return {}
    named = {name: chunker.described() for name, chunker in config.chunkings.items()}
    texts = {document.id: digest(document.text, SHORT) for document in load_documents(config.documents)}
    return {"chunking": {"chunker": config.chunker.described(), **({"chunkings": named} if named else {})},
            "documents": texts}
