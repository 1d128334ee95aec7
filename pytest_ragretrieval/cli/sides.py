"""Where the two sides of `ragretrieval diff` come from: two files, their configs, or a git revision.

Tolerance and the other gate settings live in the config, not in the baseline, so a check that
a pull request does not lower its bar compares the configs of both sides as well. `--against
REV` reads the config at REV with `git show`, parses it with the plugin's own reader, follows
*that* config's `baseline` path (so a moved baseline is still found), and compares both with
the work tree's. A base config this version cannot parse is a note, not an error: a pull
request that changes the config's schema must not be blocked by its own base branch.
"""
from __future__ import annotations

import os
import posixpath
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..baseline.format import Baseline, parse, read
from ..config.outputs import inputs
from ..config.settings import load_config
from ..errors import RagError
from ..paths import display
from ..review.changes import GateSettings, gate_settings


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


def settings_from(path: Path) -> GateSettings:
    """The gate's settings from a pyproject.toml ([tool.ragretrieval]) or a TOML file with them at top level."""
    if path.name == "pyproject.toml":
        return gate_settings(load_config(None, path.parent))
    return gate_settings(load_config(str(path), path.parent))


def from_files(old: str, new: str, old_config: str | None, new_config: str | None) -> Sides:
    """`diff OLD NEW`: settings compared only when both configs are given, else a note says they were not."""
    notes = () if old_config and new_config else (
        "settings (tolerance, significance, ...) not compared: give --old-config and --new-config, "
        "or use --against REV",
    )
    given = {"OLD.json": old, "NEW.json": new, "--old-config": old_config, "--new-config": new_config}
    return Sides(
        read(Path(old)), read(Path(new)),
        settings_from(Path(old_config)) if old_config else None,
        settings_from(Path(new_config)) if new_config else None,
        notes,
        {what: Path(path) for what, path in given.items() if path},
    )


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise GitError("--against needs git on PATH") from None


def _show(rev: str, repo_path: str, root: Path) -> str | None:
    """The file at `rev`, or None when `rev` has no such file."""
    if _git(["cat-file", "-e", f"{rev}:{repo_path}"], root).returncode != 0:
        return None
    shown = _git(["show", f"{rev}:{repo_path}"], root)
    if shown.returncode != 0:
        raise GitError(f"git show {rev}:{repo_path} failed: {shown.stderr.strip()}")
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


def from_revision(rev: str, config_option: str | None, cwd: Path) -> Sides:
    """`diff --against REV`: the config and the baseline it names at REV, against the work tree's."""
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
    old_settings: GateSettings | None = None
    text = _show(rev, config_path, root)
    if text is None:
        notes.append(f"{rev} has no {config_path}: settings not compared")
    else:
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch).resolve() / Path(config_path).name
            copy.write_text(text, encoding="utf-8")
            try:
                old_config = load_config(None if copy.name == "pyproject.toml" else str(copy), copy.parent)
            except RagError as exc:
                notes.append(f"the config at {rev} cannot be read by this version, settings not compared: {exc}")
            else:
                old_settings = gate_settings(old_config)
                inside = Path(os.path.relpath(old_config.baseline, copy.parent)).as_posix()
                old_baseline_path = posixpath.normpath(posixpath.join(posixpath.dirname(config_path), inside))
    if old_baseline_path.startswith("../"):
        raise GitError(f"the config at {rev} names a baseline outside the repository ({old_baseline_path})")
    old_text = _show(rev, old_baseline_path, root)
    old = None if old_text is None else parse(Path(f"{rev}:{old_baseline_path}"), old_text)
    if old is None:
        notes.append(f"{rev} has no {old_baseline_path}: every entry is new")
    return Sides(old, read(new_config.baseline), old_settings, gate_settings(new_config), tuple(notes),
                 inputs(new_config))
