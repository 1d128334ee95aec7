"""The seeded embedded database kept under the cache folder (database/kept.py): a warm run reuses it,
and what it writes is byte for byte what a freshly seeded database gives."""
from __future__ import annotations

import fcntl
import json
import re
from pathlib import Path
from typing import Any

import pytest
from projects import RUN as PLAIN_RUN
from projects import VECTOR_AND_BM25, retriever, write_e2e_project

pytestmark = pytest.mark.usefixtures("minilm")
RUN = (*PLAIN_RUN, "--rag-no-reuse")
"""Every run here searches the database: an unchanged run would otherwise reuse its rankings (runner/reuse.py)."""

OUTPUTS = ("--rag-json", "run.json", "--rag-report", "report.md", "--rag-html", "report.html")
REUSED = "rag: reused the seeded database kept in cache/databases/*: 9 chunks (384 dimensions, *exact search)"
SEEDED = "rag: seeded 9 chunks (384 dimensions, * exact search) in *s"


def outputs(folder: Path) -> dict[str, Any]:
    """What a run wrote, but for what is measured in time: the phases, and each retriever's latency."""
    html = (folder / "report.html").read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    del document["phases"]
    for results in document["retrievers"].values():
        del results["latency_ms"]
    return {
        "report.md": re.sub(r"[ 0-9.]+ / [0-9.]+ \|$", "|", (folder / "report.md").read_text(encoding="utf-8"), flags=re.M),
        "report.html": re.sub(r'<td class="num latency">[^<]*</td>', "", html),
        "run.json": document,
    }


def kept_folders(folder: Path) -> list[Path]:
    return sorted(path for path in (folder / "cache" / "databases").iterdir() if path.is_dir())


def test_a_warm_run_reuses_the_kept_database_and_writes_the_same_bytes(pytester: pytest.Pytester) -> None:
    """Cold (seeds the kept folder), then a run that finds it held by another run (seeds a temporary
    database, as before), then a warm run (reuses it): the last two write the same files, byte for byte."""
    write_e2e_project(pytester.path, VECTOR_AND_BM25, "cache")
    cold = pytester.runpytest("--rag-update-baseline", *RUN)
    cold.assert_outcomes(passed=4)
    cold.stdout.fnmatch_lines([SEEDED])
    [kept] = kept_folders(pytester.path)
    assert json.loads((kept / "seeded.json").read_text())["key"].startswith(kept.name)
    assert not (kept / "in-use").exists()

    with (kept / "lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fresh = pytester.runpytest("--rag-eval", *OUTPUTS, *RUN)
    fresh.assert_outcomes(passed=4)
    fresh.stdout.fnmatch_lines([SEEDED])
    seeded = outputs(pytester.path)

    warm = pytester.runpytest("--rag-eval", *OUTPUTS, *RUN)
    warm.assert_outcomes(passed=4)
    warm.stdout.fnmatch_lines([REUSED])
    warm.stdout.no_fnmatch_line("rag: seeded *")
    assert "seeding" not in json.loads((pytester.path / "run.json").read_text())["phases"]
    assert outputs(pytester.path) == seeded
    assert kept_folders(pytester.path) == [kept] and not (kept / "in-use").exists()


WRITER = '''
def make(ctx):
    """Deletes a chunk from the seeded table, as a careless retriever might."""
    conn = ctx.connect()
    conn.execute(f"DELETE FROM {ctx.table} WHERE id = 'faq-001'")
    conn.commit()
    return lambda query, k: []
'''


def test_a_run_that_writes_to_the_kept_database_leaves_it_untrusted(pytester: pytest.Pytester) -> None:
    """The deleted row would be missing from every later run: the folder is wiped and seeded again."""
    pytester.makepyfile(writer=WRITER)
    write_e2e_project(pytester.path, retriever("vector", "vector") + retriever("writer", "python", factory="writer:make"), "cache")
    pytester.runpytest("--rag-update-baseline", *RUN).stdout.fnmatch_lines([SEEDED])
    [kept] = kept_folders(pytester.path)
    assert not (kept / "seeded.json").exists() and not (kept / "data").exists()
    again = pytester.runpytest("--rag-eval", "-k", "vector", *RUN)
    again.assert_outcomes(passed=2, deselected=2)
    again.stdout.fnmatch_lines([SEEDED])
    assert (kept / "seeded.json").exists()


UPDATED = ("rag: updated a copy of the seeded database kept in cache/databases/*: {written} rows written, "
           "{removed} removed; * chunks (384 dimensions, *exact search) in *s")


def test_a_changed_corpus_gets_a_folder_of_its_own_and_the_oldest_goes(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, retriever("vector", "vector"), "cache")
    chunks = pytester.path / "fixtures" / "chunks.jsonl"
    seen = []
    for edit in range(3):
        if edit:
            chunks.write_text(chunks.read_text(encoding="utf-8").replace("退款", f"退款{edit}", 1), encoding="utf-8")
        done = pytester.runpytest("--rag-update-baseline", *RUN)
        done.stdout.fnmatch_lines([UPDATED.format(written=1, removed=0) if edit else SEEDED])
        seen.append(set(kept_folders(pytester.path)))
    assert [len(folders) for folders in seen] == [1, 2, 2]
    assert seen[0] < seen[1] and not seen[0] & seen[2]
    pytester.runpytest("--rag-eval", *RUN).stdout.fnmatch_lines([REUSED])


def test_an_edited_corpus_updates_a_copy_of_the_kept_database_and_writes_what_a_fresh_seed_gives(
        pytester: pytest.Pytester) -> None:
    """A pull request that edits, removes and adds chunks: 577255f seeded its changed corpus from nothing
    (`initdb` and a COPY of every chunk); the base's kept table is copied and only the rows that differ
    are rewritten, and the run writes what a freshly seeded database gives, byte for byte."""
    write_e2e_project(pytester.path, VECTOR_AND_BM25, "cache")
    pytester.runpytest("--rag-update-baseline", *RUN).stdout.fnmatch_lines([SEEDED])
    [base] = kept_folders(pytester.path)
    assert (base / "seeded.json").exists() and not (base / "in-use").exists()
    chunks = pytester.path / "fixtures" / "chunks.jsonl"
    rows = [json.loads(line) for line in chunks.read_text(encoding="utf-8").splitlines()]
    unjudged = next(row for row in rows if row["id"] == "service-001")
    rows.remove(unjudged)
    rows[0]["text"] += "（已修订）"
    rows.append({"id": "new-001", "text": "退款会退回原支付账户", "doc": "faq.md"})
    chunks.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")

    updated = pytester.runpytest("--rag-eval", *OUTPUTS, *RUN)
    updated.stdout.fnmatch_lines([UPDATED.format(written=2, removed=1)])
    updated.stdout.no_fnmatch_line("rag: seeded *")
    copy = next(folder for folder in kept_folders(pytester.path) if folder != base)
    assert not (copy / "in-use").exists() and json.loads((copy / "seeded.json").read_text())["key"].startswith(copy.name)
    from_copy = outputs(pytester.path)

    with (copy / "lock").open("a") as held:  # held: this run seeds a temporary database from nothing
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fresh = pytester.runpytest("--rag-eval", *OUTPUTS, *RUN)
    fresh.stdout.fnmatch_lines([SEEDED])
    assert outputs(pytester.path) == from_copy
    pytester.runpytest("--rag-eval", *RUN).stdout.fnmatch_lines([REUSED])  # the updated copy is trusted


def test_keep_database_false_seeds_every_run_and_keeps_nothing(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, retriever("vector", "vector"), "cache", "keep_database = false")
    for options in (("--rag-update-baseline",), ("--rag-eval",)):
        pytester.runpytest(*options, *RUN).stdout.fnmatch_lines([SEEDED])
    assert not (pytester.path / "cache" / "databases").exists()


def test_a_kept_folder_that_will_not_start_is_replaced_by_a_temporary_database(pytester: pytest.Pytester) -> None:
    write_e2e_project(pytester.path, retriever("vector", "vector"), "cache")
    pytester.runpytest("--rag-update-baseline", *RUN).stdout.fnmatch_lines([SEEDED])
    [kept] = kept_folders(pytester.path)
    (kept / "data" / "global" / "pg_control").unlink()
    broken = pytester.runpytest("--rag-eval", *RUN)
    broken.assert_outcomes(passed=2)
    broken.stdout.fnmatch_lines([
        "rag: the embedded Postgres (pgserver) did not start: *; the kept database was removed, a temporary one seeded",
        SEEDED,
    ])
    assert not (kept / "data").exists() and not (kept / "seeded.json").exists()
