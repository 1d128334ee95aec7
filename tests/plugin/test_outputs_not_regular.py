"""`--rag-json`, `--rag-report`, `--rag-html` and the baseline replace only regular files: a FIFO,
a socket or a device is one line before the run, and nothing is touched (issue 21, item 1)."""
from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from projects import write_project

RUN = ("-p", "no:cacheprovider")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def unix_socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()


def device(path: Path) -> None:
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a character device needs root")


@pytest.mark.parametrize(
    ("make", "kind", "flag"),
    [(fifo, "a FIFO (named pipe)", "--rag-json"), (unix_socket, "a socket", "--rag-report"),
     (device, "a character device", "--rag-html")],
)  # every kind for every option: tests/unit/test_output_kinds.py; here each option once, through pytest
def test_a_special_file_stops_the_run_before_it_starts(
    pytester: pytest.Pytester, make: Callable[[Path], None], kind: str, flag: str
) -> None:
    write_project(pytester.path)
    make(pytester.path / "out")
    before = os.lstat(pytester.path / "out")
    result = pytester.runpytest_subprocess("--rag-eval", f"{flag}=out", *RUN, timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert lines == [f"ERROR: {flag} out: is {kind}, not a regular file, and writing would replace it; give a file path"]
    after = os.lstat(pytester.path / "out")
    assert (after.st_ino, stat.S_IFMT(after.st_mode)) == (before.st_ino, stat.S_IFMT(before.st_mode))
    assert not (pytester.path / "baselines").exists()


def test_a_link_to_a_fifo_is_refused_and_a_link_to_a_file_is_written_through(pytester: pytest.Pytester) -> None:
    write_project(pytester.path)
    os.mkfifo(pytester.path / "pipe")
    (pytester.path / "out.json").symlink_to("pipe")
    result = pytester.runpytest_subprocess("--rag-eval", "--rag-json=out.json", *RUN, timeout=120)
    assert [line for line in result.stderr.lines if line.strip()] == [
        "ERROR: --rag-json out.json: is a symbolic link to pipe, a FIFO (named pipe), not a regular file, "
        "and writing would replace it; give a file path"
    ]
    (pytester.path / "out.json").unlink()
    (pytester.path / "runs").mkdir()
    (pytester.path / "runs" / "1.json").write_text("")
    (pytester.path / "out.json").symlink_to(Path("runs") / "1.json")
    pytester.runpytest("--rag-eval", "--rag-json=out.json", *RUN)
    assert (pytester.path / "out.json").is_symlink()
    assert (pytester.path / "runs" / "1.json").read_text().startswith("{")
