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

A corpus that changed (a pull request editing 1% of the chunks) finds no folder of its key. With
exact search, a trusted folder of another key whose table has the same shape (`Table.base`: the
format, pgserver's files, the index, the dimension) is copied and updated instead of seeded from
nothing: its rows' digests (`rows.json`, written beside `seeded.json`) say which rows to delete and
which to write (`Delta`). Exact search orders by distance, then id, so the rows' physical order
cannot change a ranking; an hnsw index depends on the order rows were inserted in, so it is always
seeded afresh.
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
FORMAT = 2
"""Bumped when what a seeded folder holds changes shape (the table, the settings written at seeding) or how
its key is computed (2: each row's line by msgspec, three times as fast at 20,000 chunks)."""
LOCK = "lock"
SEEDED = "seeded.json"
ROWS = "rows.json"
IN_USE = "in-use"
START_SECONDS = 60
POLL = 0.005
"""Seconds between two looks at postmaster.pid while Postgres starts or stops."""


@dataclass(frozen=True)
class Table:
    """What a seeded table holds: its key, its shape without the rows (`base`), each row's digest by chunk id."""

    key: str
    base: str
    rows: dict[str, str]


@dataclass(frozen=True)
class Delta:
    """How a copy of another key's table becomes this one's: the ids to delete, the ids to write (new or
    changed rows, deleted first), and the folder it was copied from."""

    removed: tuple[str, ...]
    written: frozenset[str]
    donor: Path


@dataclass(frozen=True)
class Kept:
    """A kept folder locked by this run; `schema` is the seeded schema when it can be reused as is, or,
    with `delta`, once the delta is applied to it."""

    folder: Path
    key: str
    handle: IO[str]
    schema: str | None
    table: Table | None = None
    delta: Delta | None = None

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def seeded(self, schema: str) -> None:
        """The seeding committed: a later run may trust the folder once this one releases it unchanged."""
        if self.table is not None:
            write_atomic(self.folder / ROWS, json.dumps(self.table.rows, separators=(",", ":")) + "\n")
        base = {"base": self.table.base} if self.table is not None else {}
        write_atomic(self.folder / SEEDED, json.dumps({"key": self.key, "schema": schema, **base}) + "\n")

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
        # autovacuum off from the first moment (not only once ALTER SYSTEM is reloaded): a worker that
        # analyzed the catalogs after the seeding would take a transaction id, and the folder would
        # read as written to and be wiped.
        listen += ["-o", "-c autovacuum=off"]
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


def table(chunks: Sequence[Chunk], stored: numpy.ndarray, index: IndexSettings) -> Table:
    """The digest of everything the seeded table depends on (search-time settings such as ef_search
    excluded), built from each row's digest (id, doc, text, metadata and the vector as stored)."""
    import msgspec
    import numpy

    built = [index.kind, index.m, index.ef_construction] if index.kind != "exact" else [index.kind]
    vectors = numpy.ascontiguousarray(stored, dtype="<f4")
    head = {"format": FORMAT, "binaries": binaries(), "index": built, "dimension": int(vectors.shape[1])}
    base = hashlib.sha256(json.dumps(head, sort_keys=True).encode("utf-8")).hexdigest()
    rows: dict[str, str] = {}
    digest = hashlib.sha256(base.encode("ascii") + b"\n")
    encode = msgspec.json.Encoder(order="sorted").encode
    data, width = memoryview(vectors.tobytes()), vectors.shape[1] * 4
    for number, chunk in zip(range(len(vectors)), chunks, strict=True):
        line = encode([chunk.id, chunk.doc, chunk.text, dict(chunk.metadata)])
        row = hashlib.sha256(line + b"\n" + data[number * width:(number + 1) * width]).hexdigest()[:32]
        rows[chunk.id] = row
        digest.update(row.encode("ascii"))
    return Table(digest.hexdigest(), base, rows)


def key(chunks: Sequence[Chunk], stored: numpy.ndarray, index: IndexSettings) -> str:
    """The seeded table's key (`table`)."""
    return table(chunks, stored, index).key


def claim(cache_dir: Path, digest: str, wanted: Table | None = None, exact: bool = False) -> Kept | None:
    """The folder of `digest`, locked by this run, wiped unless trusted; None when another run holds
    it, the cache folder cannot be written, or locks do not exist here (Windows). An untrusted folder
    of an `exact` table is filled with a copy of another key's table of the same base when one is
    trusted (`Delta`)."""
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
    delta = None
    if schema is None and exact and wanted is not None:
        copied = _copy_of_another(root, folder, wanted)
        if copied is not None:
            schema, delta = copied
    _prune(root, folder)
    return Kept(folder, digest, handle, schema, wanted, delta)


def _copy_of_another(root: Path, mine: Path, wanted: Table) -> tuple[str, Delta] | None:
    """The most recently used trusted folder of the same base, copied into `mine` (owners kept: `cp -a`,
    Postgres runs as pgserver's user under root), and what turns its table into `wanted`."""
    import fcntl

    others = sorted((path for path in root.iterdir() if path.is_dir() and path != mine),
                    key=lambda path: (path / LOCK).stat().st_mtime if (path / LOCK).exists() else 0.0, reverse=True)
    for other in others:
        try:
            seeded: Any = json.loads((other / SEEDED).read_text(encoding="utf-8"))
            if not isinstance(seeded, dict) or seeded.get("base") != wanted.base:
                continue
            handle = (other / LOCK).open("a+", encoding="utf-8")
        except (OSError, ValueError):
            continue
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                schema = _trusted(other, str(seeded.get("key")))
                rows: Any = json.loads((other / ROWS).read_text(encoding="utf-8")) if schema else None
                if schema is None or not isinstance(rows, dict):
                    continue
                subprocess.run(["cp", "-a", str(other / "data"), str(mine / "data")], check=True,
                               capture_output=True, timeout=START_SECONDS)
            except (OSError, ValueError, subprocess.SubprocessError):
                _wipe(mine)
                continue
        (mine / "data" / "postmaster.pid").unlink(missing_ok=True)
        if _system_user() is not None:  # as `initdb` leaves them: Postgres runs as pgserver's user
            _traversable(mine / "data")
        removed = tuple(sorted(set(rows) - set(wanted.rows)))
        written = frozenset(chunk for chunk, row in wanted.rows.items() if rows.get(chunk) != row)
        return schema, Delta(removed, written, other)
    return None


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
