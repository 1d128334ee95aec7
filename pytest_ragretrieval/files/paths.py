"""Paths as the user sees them, inputs read with one-line reasons, files written so readers never see half of one."""
from __future__ import annotations

import errno
import functools
import hashlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def absolute(path: Path) -> Path:
    """`path` resolved; a symbolic link loop (which resolve() refuses) is only made absolute."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path))


def display(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when below it, on one line.

    A name holding a line break or another unprintable character is shown escaped, as Python writes it.
    """
    here = Path.cwd()
    shown = str(path)
    # As typed first (a symbolic link keeps its own name), then resolved (a working directory reached through a link).
    for candidate, base in ((Path(os.path.abspath(path)), here), (absolute(path), absolute(here))):
        try:
            shown = str(candidate.relative_to(base))
        except ValueError:
            continue
        break
    return shown if shown.isprintable() else repr(shown)[1:-1]


class Unreadable(Exception):
    """An input path that cannot be read as a file; the message completes `<path>: ...`."""

    def __init__(self, problem: str, *, missing: bool = False) -> None:
        super().__init__(problem)
        self.missing = missing


def file_above(path: Path) -> Path | None:
    """The nearest ancestor of `path` that exists and is not a folder, if any."""
    for parent in path.parents:
        try:
            if parent.exists() and not parent.is_dir():
                return parent
        except OSError:
            return None
    return None


def _kind_problem(path: Path, exc: OSError) -> str:
    """Why an OSError happened on `path`, in the words a user needs to fix it."""
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, IsADirectoryError):
        return "is a directory; give a file path"
    if isinstance(exc, NotADirectoryError) or exc.errno == errno.ENOTDIR:
        above = file_above(path)
        return f"{display(above)} is a file, not a folder" if above is not None else "a part of it is not a folder"
    if exc.errno == errno.ELOOP:
        return "is a symbolic link loop"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or str(exc)


def read_input(path: Path) -> bytes:
    """The bytes of a regular file, or Unreadable naming what is wrong (missing, a directory, a loop, under a file).

    The kind is checked before opening, so a FIFO or a device never blocks the run.
    """
    try:
        _check_regular(path)
        return path.read_bytes()
    except OSError as exc:
        raise Unreadable(_kind_problem(path, exc), missing=isinstance(exc, FileNotFoundError)) from None
    except ValueError:
        raise Unreadable("is not a valid path (it holds a NUL character)") from None


def input_lines(path: Path) -> Iterator[bytes]:
    """`read_input`'s lines (each with its `\\n`), read one at a time: a corpus of a million chunks
    is never held whole, nor split into a second copy, beside the records made of it."""
    try:
        _check_regular(path)
        stream = path.open("rb")
    except OSError as exc:
        raise Unreadable(_kind_problem(path, exc), missing=isinstance(exc, FileNotFoundError)) from None
    except ValueError:
        raise Unreadable("is not a valid path (it holds a NUL character)") from None
    with stream:
        try:
            yield from stream
        except OSError as exc:
            raise Unreadable(_kind_problem(path, exc)) from None


def _check_regular(path: Path) -> None:
    """Checked before opening, so a FIFO or a device never blocks the run."""
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        raise Unreadable("is a directory; give a file path")
    if not stat.S_ISREG(mode):
        raise Unreadable("is not a regular file")


_SPECIAL = (
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
)


def written_path(path: Path) -> Path:
    """Where writing `path` lands: a symbolic link is written through to the file it names (which
    keeps the link), so `--rag-json latest.json -> runs/42.json` updates runs/42.json."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def _not_regular(path: Path, mode: int) -> str | None:
    """Why a file of `mode` must not be replaced by a write (None: a regular file, which may be)."""
    if stat.S_ISDIR(mode):
        kind = "a directory"
    else:
        kind = next((name for test, name in _SPECIAL if test(mode)), "")
        if not kind:
            return None
    what = f"is a symbolic link to {display(written_path(path))}, {kind}" if os.path.islink(path) else f"is {kind}"
    if stat.S_ISDIR(mode):
        return f"{what}; give a file path"
    return f"{what}, not a regular file, and writing would replace it; give a file path"


class NotRegularFile(OSError):
    """A write refused because its target exists and is no regular file (a device, a FIFO, a socket)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(errno.EEXIST, problem, str(path))


def output_problem(path: Path, inputs: Mapping[str, Path]) -> str | None:
    """Why a file the run will write cannot be written safely (None: it can).

    `inputs` maps a description (`the baseline`, `the chunks file`) to a path the run reads; an
    output that is one of them would overwrite it. Only a regular file (or a new one) may be
    written: a device, a FIFO or a socket is refused, found with stat(), never by opening it (a
    FIFO without a reader would block).
    """
    for what, source in inputs.items():
        if _same(path, source):
            return f"is {what}, which writing would overwrite; give another path"
    target = written_path(path)
    try:
        problem = _not_regular(path, os.stat(target).st_mode)
    except FileNotFoundError:
        problem = None
    except OSError as exc:
        return f"{_kind_problem(path, exc)}; give another path"
    except ValueError:
        return "is not a valid path (it holds a NUL character)"
    if problem is not None:
        return problem
    above = file_above(target)
    if above is not None:
        return f"{display(above)} is a file, not a folder; give another path"
    folder = next((parent for parent in target.parents if parent.exists()), None)
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        return f"{display(folder)} is not writable; give another path"
    return None


def _same(one: Path, other: Path) -> bool:
    if absolute(one) == absolute(other):
        return True
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def write_problem(path: Path, exc: OSError) -> str:
    """An OSError from writing `path`, as the reason a user can act on (`No space left on device`)."""
    if isinstance(exc, FileExistsError):  # making the folders met a file where a folder belongs
        exc = NotADirectoryError(errno.ENOTDIR, "Not a directory")
    if isinstance(exc, (NotADirectoryError, IsADirectoryError)) or exc.errno == errno.ELOOP:
        return _kind_problem(path, exc)
    return exc.strerror or str(exc)


@functools.cache
def _umask() -> int:
    """The process umask, read without changing it where Linux shows it, else set and restored once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(path: Path) -> int:
    """An existing file keeps its mode; a new one gets what open() would give it (0644 under umask 022)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


@dataclass(frozen=True)
class Snapshot:
    """What a file held when it was read: the digest of its bytes, None when there was no file."""

    digest: str | None


MISSING = Snapshot(None)
"""A write with `since=MISSING` creates the file and never replaces one."""


def snapshot(path: Path) -> Snapshot:
    """The file's bytes as a digest, taken before it is read, for `write_atomic(since=...)`."""
    try:
        data = written_path(path).read_bytes()
    except FileNotFoundError:
        return MISSING
    except OSError:
        return Snapshot("unreadable")
    return Snapshot(hashlib.sha256(data).hexdigest())


class ChangedSince(OSError):
    """A write refused because its target no longer holds what the writer read (another run wrote it)."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EEXIST, "changed since it was read", str(path))


def changed_since(path: Path, again: str) -> str:
    """The one line for a ChangedSince refusal: what happened and what to do."""
    return (f"{display(path)} not written: another run wrote it after this one read it (two updates at once), "
            f"so this run's update would drop that one's; run {again} again to update it as it is now")


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on the folder itself (flock on its descriptor): nothing is left beside the file."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the read-compare alone
        yield
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def write_atomic(path: Path, data: bytes | str | Iterable[bytes], *, since: Snapshot | None = None) -> None:
    """Write beside the target, flush to disk, then rename: readers see the old file or the new.

    Used for baselines, results, reports and cache entries, so a crash or a parallel run never
    leaves a half-written file behind. Text is written as UTF-8 with `\\n` line ends. The file
    gets the mode a plain write would give it, not the temporary file's 0600. Pieces (an iterable of
    bytes) are written one after the other, so a large file is never held whole. A symbolic link is
    written through (the file it names is replaced, the link stays); a target that is no regular
    file (a device, a FIFO, a socket) raises NotRegularFile and nothing is written.

    With `since` (the `snapshot` taken before the writer read the file), the target is compared with
    it under a lock on its folder just before the rename, and ChangedSince is raised, nothing
    written, when another writer replaced it meanwhile: of two concurrent updates of one baseline
    the second refuses instead of silently dropping the first. `since=MISSING` never replaces a file.
    """
    pieces = [data.encode("utf-8")] if isinstance(data, str) else [data] if isinstance(data, bytes) else data
    path = _regular_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), _mode_for(path))
            for piece in pieces:
                stream.write(piece)
            stream.flush()
            os.fsync(stream.fileno())
        if since is None:
            os.replace(temporary, path)
        else:
            with _folder_lock(path.parent):
                if snapshot(path) != since:
                    raise ChangedSince(path)
                os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    remove_stale_temporaries(path.parent, path.name)


def _regular_target(path: Path) -> Path:
    """The file a write replaces (a link's target); NotRegularFile when that is no regular file,
    checked again here, as the run may have gone on for an hour since `output_problem` said yes."""
    target = written_path(path)
    try:
        problem = _not_regular(path, os.stat(target).st_mode)
    except FileNotFoundError:
        return target
    if problem is not None:
        raise NotRegularFile(path, problem)
    return target


STALE_AFTER_S = 600.0
"""A live writer's temporary file is seconds old; one untouched for ten minutes was left by a killed one."""
_TEMPORARY = re.compile(r"\.(?P<target>.+)\.[a-z0-9_]{8}\.tmp")  # what write_atomic's mkstemp names


def remove_stale_temporaries(folder: Path, target: str | None = None) -> int:
    """Remove the temporary files of `write_atomic` that a killed writer left in `folder`: only
    those of `target` when given, all of them in a folder that is ours (a cache namespace).

    SIGKILL skips the clean-up, and a cache pack's leftover can be as large as the pack; the next
    write reclaims it. Files younger than STALE_AFTER_S may be a concurrent writer's and stay.
    Returns how many were removed; a folder or file it cannot read or remove is left as it is.
    """
    cutoff = time.time() - STALE_AFTER_S
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = _TEMPORARY.fullmatch(entry.name)
        if match is None or (target is not None and match["target"] != target):
            continue
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed
