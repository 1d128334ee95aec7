"""Outputs replace only regular files: a device, a FIFO or a socket is refused before the run (found
with stat, never by opening it) and again at the write; a symbolic link is written through."""
from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ragretrieval.files.paths import NotRegularFile, output_problem, write_atomic, write_problem


def make_fifo(path: Path) -> None:
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays


def make_char_device(path: Path) -> None:
    """A /dev/null-like device (major 1, minor 3), made where only root may make one."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a character device needs root")


KINDS: list[tuple[Callable[[Path], None], str]] = [
    (make_fifo, "a FIFO (named pipe)"),
    (make_socket, "a socket"),
    (make_char_device, "a character device"),
]


@pytest.fixture
def inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_a_special_file_is_refused_before_the_run(inside: Path, make: Callable[[Path], None], kind: str) -> None:
    make(inside / "out.json")
    assert output_problem(inside / "out.json", {}) == (
        f"is {kind}, not a regular file, and writing would replace it; give a file path"
    )


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_a_link_to_a_special_file_is_refused_naming_the_link(inside: Path, make: Callable[[Path], None], kind: str) -> None:
    make(inside / "target")
    (inside / "out.json").symlink_to(inside / "target")
    assert output_problem(inside / "out.json", {}) == (
        f"is a symbolic link to target, {kind}, not a regular file, and writing would replace it; give a file path"
    )


@pytest.mark.parametrize(("make", "kind"), KINDS)
def test_the_write_itself_refuses_and_leaves_the_file_as_it_was(inside: Path, make: Callable[[Path], None], kind: str) -> None:
    """The check is repeated at the write: a long run may find a device where a file was."""
    target = inside / "out.json"
    make(target)
    before = os.lstat(target)
    with pytest.raises(NotRegularFile) as raised:
        write_atomic(target, "{}\n")
    after = os.lstat(target)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert write_problem(target, raised.value).startswith(f"is {kind}, not a regular file")
    assert sorted(os.listdir(inside)) == ["out.json"]  # no temporary file left


def test_a_fifo_with_a_reader_gets_nothing(inside: Path) -> None:
    """Had the write opened the FIFO, this reader (opened first, so opening could not block) would see bytes."""
    fifo = inside / "out.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(NotRegularFile):
            write_atomic(fifo, "{}\n")
        try:
            assert os.read(reader, 100) == b""
        except BlockingIOError as exc:
            assert exc.errno == errno.EAGAIN
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_link_to_a_regular_file_is_written_through(inside: Path) -> None:
    (inside / "runs").mkdir()
    target = inside / "runs" / "42.json"
    target.write_text("old\n")
    target.chmod(0o640)
    link = inside / "latest.json"
    link.symlink_to(Path("runs") / "42.json")
    assert output_problem(link, {}) is None
    write_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(Path("runs") / "42.json")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(inside / "runs")) == ["42.json"]


def test_a_dangling_link_creates_the_file_it_names(inside: Path) -> None:
    link = inside / "latest.json"
    link.symlink_to(inside / "new.json")
    assert output_problem(link, {}) is None
    write_atomic(link, "x\n")
    assert link.is_symlink() and (inside / "new.json").read_text() == "x\n"


def test_a_link_to_an_input_is_that_input(inside: Path) -> None:
    (inside / "retrieval.json").write_text("{}")
    (inside / "out.json").symlink_to(inside / "retrieval.json")
    assert output_problem(inside / "out.json", {"the baseline": inside / "retrieval.json"}) == (
        "is the baseline, which writing would overwrite; give another path"
    )


def test_a_link_loop_is_named(inside: Path) -> None:
    (inside / "a").symlink_to(inside / "b")
    (inside / "b").symlink_to(inside / "a")
    assert output_problem(inside / "a", {}) == "is a symbolic link loop; give another path"


def test_dev_null_itself_is_refused() -> None:
    if not Path("/dev/null").exists():
        pytest.skip("no /dev/null here")
    assert output_problem(Path("/dev/null"), {}) == (
        "is a character device, not a regular file, and writing would replace it; give a file path"
    )
