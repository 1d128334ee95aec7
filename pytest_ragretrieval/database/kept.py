"""Seeded embedded databases kept under the cache folder and reused while what they hold is unchanged.

An embedded run otherwise pays `initdb` and a COPY of every chunk each time. So in embedded mode
the data folder is kept in `<cache>/databases/<key>/`, where the key is the digest of all that
its table depends on: the chunks, the vectors as stored, the index settings and pgserver's
installed files (Postgres and pgvector). A later run with the same key starts Postgres on it.

A folder is trusted only when `seeded.json` names the same key and `in-use` is absent. `in-use`
is written before Postgres starts on the folder and removed only after it stopped cleanly with
no writing transaction since the seeding (the next transaction id unchanged: a retriever that
made a table, even a temporary one, used one); `seeded.json` is written once the seeding has
committed. A run killed at any point leaves `in-use`, so the next run wipes the folder and
seeds again. `lock` is held (flock) by the run using the folder: a second run at the same time
seeds a temporary database as before. The KEEP most recently used folders are kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core.optional import absent, need
from ..files.paths import write_atomic
from . import leftovers

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy

    from ..evalset.records import Chunk
    from .settings import IndexSettings

FOLDER = "databases"
KEEP = 2
FORMAT = 1
"""Bumped when what a seeded folder holds changes shape (the table, the settings written at seeding)."""
LOCK = "lock"
SEEDED = "seeded.json"
IN_USE = "in-use"
START_SECONDS = 60
POLL = 0.005
"""Seconds between two looks at postmaster.pid while Postgres starts or stops."""


@dataclass(frozen=True)
class Kept:
    """A kept folder locked by this run; `schema` is the seeded schema when it can be reused as is."""

    folder: Path
    key: str
    handle: IO[str]
    schema: str | None

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def seeded(self, schema: str) -> None:
        """The seeding committed: a later run may trust the folder once this one releases it unchanged."""
        write_atomic(self.folder / SEEDED, json.dumps({"key": self.key, "schema": schema}) + "\n")

    @property
    def sockets(self) -> Path:
        """The server's socket folder: short (a socket path has a length limit), one per kept folder
        (two repositories with the same corpus have the same key, and may run at once)."""
        return Path(tempfile.gettempdir()) / f"rag-pg-{hashlib.sha256(str(self.folder).encode()).hexdigest()[:16]}"

    def start(self) -> str:
        """Start Postgres on the folder (after an `initdb` by pgserver when it holds none) and return its URI.

        pg_ctl is run directly, and pgserver is not even imported on a warm start: its own start
        and stop wait on one lock shared by every pgserver process of the user, held through each
        one's `initdb`, seconds on a busy machine.
        """
        if not (self.data / "PG_VERSION").is_file():
            _initdb(self.data)
        (self.data / ".handle_pids.json").unlink(missing_ok=True)
        self.sockets.mkdir(exist_ok=True)
        if _system_user() is not None:
            _open_to_postgres(self.sockets)
        listen = ["-o", '-h ""', "-o", f"-k {self.sockets}"]  # the socket only, no TCP port
        _pg_ctl(self.data, ["-w", "-t", str(START_SECONDS), *listen, "-l", str(self.data / "log"), "start"], "ready")
        return f"postgresql://postgres:@/postgres?host={self.sockets}"

    def stop(self) -> None:
        """Fast shutdown (open sessions are ended), waiting until Postgres is gone."""
        _pg_ctl(self.data, ["-W", "-m", "fast", "stop"], None)
        with suppress(OSError):
            self.sockets.rmdir()

    def release(self, unchanged: bool) -> None:
        """Postgres has stopped: keep the folder when nothing wrote to it, else wipe it; then unlock."""
        try:
            if unchanged and (self.folder / SEEDED).exists():
                (self.folder / IN_USE).unlink(missing_ok=True)
            else:
                _wipe(self.folder)
        finally:
            self.handle.close()


def _system_user() -> str | None:
    """pgserver runs Postgres as `pgserver` when we are root (Postgres refuses to run as root)."""
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def _open_to_postgres(sockets: Path) -> None:
    """As root, Postgres runs as `pgserver`: it must reach and write the socket folder (pgserver opens
    the folders above its own the same way)."""
    sockets.chmod(0o777)
    _traversable(sockets)


def _traversable(path: Path) -> None:
    """Every folder above `path` readable and searchable by others, as pgserver's `initdb` leaves
    those above a data folder (Postgres runs as `pgserver` when we are root)."""
    for folder in path.parents:
        mode = folder.stat().st_mode
        if mode & 0o055 != 0o055:
            folder.chmod(mode | 0o055)


_LOOKING: list[subprocess.Popen[bytes]] = []
"""pg_ctl processes still looking at a server that was ready sooner: reaped by the next call."""


def _status(data: Path) -> str | None:
    """The server's state from postmaster.pid (`starting`, `ready`, `stopping`); None without one."""
    try:
        lines = (data / "postmaster.pid").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return lines[7].strip() if len(lines) > 7 else ""


def _pg_ctl(data: Path, args: list[str], until: str | None) -> None:
    """pgserver's pg_ctl, run as pgserver would run it, done once postmaster.pid's state is `until`.

    pg_ctl looks every 100 ms; postmaster.pid is read here every POLL seconds, and pg_ctl's own
    failure (its exit status and last line) still counts. Its output goes to a file, not a pipe,
    which the server it starts would hold open.
    """
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise absent("pgserver", "--rag-db=embedded")
    pg_ctl = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin" / "pg_ctl"
    _LOOKING[:] = [looking for looking in _LOOKING if looking.poll() is None]
    deadline = time.monotonic() + START_SECONDS + 5
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as output:
        process = subprocess.Popen(
            [str(pg_ctl), "-D", str(data), *args], stdout=output, stderr=subprocess.STDOUT, user=_system_user(),
        )
        while True:
            code = process.poll()
            if code is None and until is not None and _status(data) == until:
                _LOOKING.append(process)  # ready before pg_ctl looked again: it exits by itself
                break
            if code is not None and (code or _status(data) == until):
                break
            if time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"pg_ctl {args[-1]} did not finish within {START_SECONDS + 5} s")
            time.sleep(POLL)
        if code:
            output.seek(0)
            said = [line.strip() for line in output.read().splitlines() if line.strip()]
            raise RuntimeError(f"pg_ctl {args[-1]} failed: {said[-1] if said else f'exit status {code}'}")


def _initdb(data: Path) -> None:
    """pgserver's `initdb`, as its server would run it (as root: making the `pgserver` user, who owns the folder)."""
    import warnings
    from types import SimpleNamespace

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
        postgres_server = need("pgserver.postgres_server", "--rag-db=embedded")
    data.mkdir(parents=True, exist_ok=True)
    server: Any = SimpleNamespace(pgdata=data, system_user=_system_user(), postgres_user="postgres")
    postgres_server.PostgresServer.ensure_pgdata_inited(server)


def binaries() -> str:
    """pgserver's installed files (its Postgres and pgvector): the digest of its RECORD, else its version."""
    from importlib import metadata

    try:
        distribution = metadata.distribution("pgserver")
    except metadata.PackageNotFoundError:
        return "pgserver not installed"
    record = distribution.read_text("RECORD")
    return hashlib.sha256(record.encode("utf-8")).hexdigest() if record else f"pgserver {distribution.version}"


def key(chunks: Sequence[Chunk], stored: numpy.ndarray, index: IndexSettings) -> str:
    """The digest of everything the seeded table depends on (search-time settings such as ef_search excluded)."""
    import numpy

    built = [index.kind, index.m, index.ef_construction] if index.kind != "exact" else [index.kind]
    vectors = numpy.ascontiguousarray(stored, dtype="<f4")
    digest = hashlib.sha256()
    head = {"format": FORMAT, "binaries": binaries(), "index": built, "shape": list(vectors.shape)}
    digest.update(json.dumps(head, sort_keys=True).encode("utf-8") + b"\n")
    rows = (
        json.dumps([chunk.id, chunk.doc, chunk.text, dict(chunk.metadata)], ensure_ascii=False, sort_keys=True)
        for chunk in chunks
    )
    digest.update("\n".join(rows).encode("utf-8") + b"\n")
    digest.update(vectors.data.cast("B"))
    return digest.hexdigest()


def claim(cache_dir: Path, digest: str) -> Kept | None:
    """The folder of `digest`, locked by this run, wiped unless trusted; None when another run holds
    it, the cache folder cannot be written, or locks do not exist here (Windows)."""
    try:
        import fcntl
    except ImportError:
        return None
    root = cache_dir / FOLDER
    folder = root / digest[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not (root / ".gitignore").exists():
            write_atomic(root / ".gitignore", "# seeded databases of this machine, never committed\n*\n")
        handle = (folder / LOCK).open("a+", encoding="utf-8")
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(handle.fileno()).st_ino != (folder / LOCK).stat().st_ino:
            raise OSError("the folder was reclaimed meanwhile")
        schema = _trusted(folder, digest)
        if schema is None:
            _wipe(folder)
        write_atomic(folder / IN_USE, f"{os.getpid()}\n")
        os.utime(folder / LOCK)
    except OSError:
        handle.close()
        return None
    _prune(root, folder)
    return Kept(folder, digest, handle, schema)


def _trusted(folder: Path, digest: str) -> str | None:
    """The seeded schema when the folder holds what `digest` names and its last user released it unchanged."""
    if (folder / IN_USE).exists() or not (folder / "data" / "PG_VERSION").is_file():
        return None
    try:
        seeded: Any = json.loads((folder / SEEDED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(seeded, dict) or seeded.get("key") != digest or not isinstance(seeded.get("schema"), str):
        return None
    return str(seeded["schema"])


def _wipe(folder: Path) -> None:
    """Make the folder untrusted first, then stop a killed run's Postgres on it and remove its data."""
    (folder / SEEDED).unlink(missing_ok=True)
    data = folder / "data"
    if (data / "postmaster.pid").exists():
        with suppress(ImportError):
            leftovers.stop_postmaster(data)
    shutil.rmtree(data, ignore_errors=True)


def _prune(root: Path, mine: Path) -> None:
    """Remove the least recently used folders beyond KEEP that no run holds."""
    import fcntl

    def used(folder: Path) -> float:
        try:
            return (folder / LOCK).stat().st_mtime
        except OSError:
            return 0.0

    others = sorted((path for path in root.iterdir() if path.is_dir() and path != mine), key=used, reverse=True)
    for folder in others[KEEP - 1:]:
        try:
            handle = (folder / LOCK).open("a+", encoding="utf-8")
        except OSError:
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            _wipe(folder)
            shutil.rmtree(folder, ignore_errors=True)
