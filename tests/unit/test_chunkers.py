"""The chunkers on hand-made documents: spans cover the document, overlap as configured, a chunk's text is
doc[start:end], ids stay when another document changes; documents read from a file and a folder."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from pytest_ragretrieval.core.errors import ConfigError, FixtureError
from pytest_ragretrieval.evalset import team_chunker
from pytest_ragretrieval.evalset.chunkers import Chunker, chunk_documents, sentence_bounds, token_bounds
from pytest_ragretrieval.evalset.documents import Document, documents_digest, load_documents
from pytest_ragretrieval.evalset.records import Chunk

ENGLISH = Document("en", "The lamp is red. It was made in 1998!  Is it still lit?\n\nYes: it is. Done")
CHINESE = Document("zh", "笔记本电脑丢失后，须在2小时内报告。云桌面登录失败时，请重启客户端！下班前清理桌面？好的")
MARKDOWN = Document("guide.md", "Intro line.\n\n# Travel\n\nHotels cost 600.\n\n## Refunds\n\nFirst paragraph "
                    "here.\n\nSecond paragraph here.\n\nThird one.\n\n```\n# not a heading\n```\n\n# Desk\nClean it.\n")
DOCUMENTS = (ENGLISH, CHINESE, MARKDOWN)
CHUNKERS = (Chunker("tokens", size=5, overlap=2), Chunker("tokens", size=7, overlap=0, tokenizer="chars"),
            Chunker("sentences", size=2, overlap=1), Chunker("sentences", size=1), Chunker("markdown", size=40))


def by_doc(chunks: tuple[Chunk, ...], doc: str) -> list[Chunk]:
    return [chunk for chunk in chunks if chunk.doc == doc]


@pytest.mark.parametrize("chunker", CHUNKERS, ids=lambda c: f"{c.type}-{c.size}-{c.overlap}-{c.tokenizer}")
def test_spans_tile_the_document_and_texts_are_slices(chunker: Chunker) -> None:
    chunks = chunk_documents(DOCUMENTS, chunker, Path("."))
    for document in DOCUMENTS:
        mine = by_doc(chunks, document.id)
        assert [c.id for c in mine] == [f"{document.id}#{n}" for n in range(len(mine))]
        assert mine[0].start == 0 and mine[-1].end == len(document.text)
        for before, after in zip(mine, mine[1:], strict=False):
            assert before.start is not None and after.start is not None and before.end is not None
            assert before.start < after.start <= before.end  # no gap: the spans cover the document
        for chunk in mine:
            assert chunk.start is not None and chunk.end is not None
            assert chunk.text == document.text[chunk.start:chunk.end] and chunk.text.strip()


def test_token_windows_overlap_by_the_configured_tokens() -> None:
    chunks = by_doc(chunk_documents([ENGLISH], Chunker("tokens", size=5, overlap=2), Path(".")), "en")
    assert [c.text for c in chunks[:3]] == ["The lamp is red. ", "red. It was made ", "was made in 1998!  "]
    bounds = token_bounds(ENGLISH.text, "unicode")
    for number, chunk in enumerate(chunks):
        assert chunk.start == bounds[3 * number]  # each window starts size - overlap = 3 tokens on


def test_cjk_characters_are_tokens_and_sentence_ends() -> None:
    assert [CHINESE.text[a:b] for a, b in zip(token_bounds(CHINESE.text, "unicode")[:4],
                                               token_bounds(CHINESE.text, "unicode")[1:5], strict=True)] == \
        ["笔", "记", "本", "电"]
    bounds = sentence_bounds(CHINESE.text)
    assert [CHINESE.text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] == [
        "笔记本电脑丢失后，须在2小时内报告。", "云桌面登录失败时，请重启客户端！", "下班前清理桌面？", "好的"]
    bounds = sentence_bounds(ENGLISH.text)
    assert [ENGLISH.text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)] == [
        "The lamp is red. ", "It was made in 1998!  ", "Is it still lit?\n\n", "Yes: it is. ", "Done"]


def test_sentence_windows_overlap_by_one_sentence() -> None:
    chunks = by_doc(chunk_documents([ENGLISH], Chunker("sentences", size=2, overlap=1), Path(".")), "en")
    assert [c.text for c in chunks] == ["The lamp is red. It was made in 1998!  ",
                                        "It was made in 1998!  Is it still lit?\n\n",
                                        "Is it still lit?\n\nYes: it is. ", "Yes: it is. Done"]


def test_markdown_sections_keep_their_heading_path_and_split_long_ones_at_paragraphs() -> None:
    chunks = by_doc(chunk_documents([MARKDOWN], Chunker("markdown", size=40), Path(".")), "guide.md")
    assert [(c.text, c.metadata["headings"]) for c in chunks] == [
        ("Intro line.\n\n", []),
        ("# Travel\n\nHotels cost 600.\n\n", ["Travel"]),
        ("## Refunds\n\nFirst paragraph here.\n\n", ["Travel", "Refunds"]),
        ("Second paragraph here.\n\nThird one.\n\n", ["Travel", "Refunds"]),
        ("```\n# not a heading\n```\n\n", ["Travel", "Refunds"]),
        ("# Desk\nClean it.\n", ["Desk"]),
    ]


def test_ids_of_an_unchanged_document_stay_when_another_changes() -> None:
    chunker = Chunker("tokens", size=4, overlap=1)
    before = chunk_documents(DOCUMENTS, chunker, Path("."))
    edited = Document("en", "A brand new first sentence, much longer than before. " + ENGLISH.text)
    after = chunk_documents((edited, CHINESE, MARKDOWN), chunker, Path("."))
    for doc in ("zh", "guide.md"):
        assert by_doc(before, doc) == by_doc(after, doc)
    assert by_doc(before, "en") != by_doc(after, "en")


def test_empty_documents_give_no_chunks() -> None:
    chunks = chunk_documents([Document("blank", " \n "), ENGLISH], Chunker("sentences", size=2), Path("."))
    assert {c.doc for c in chunks} == {"en"}
    with pytest.raises(FixtureError, match="cut no chunk"):
        chunk_documents([Document("blank", "")], Chunker("markdown", size=10), Path("."))


def test_a_teams_chunker_returns_spans(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "def split(text):\n    half = len(text) // 2\n    return [(0, half), (half, len(text), {'part': 2})]\n"
        "def bad(text):\n    return [(0, len(text) + 1)]\n", encoding="utf-8")
    chunks = chunk_documents([ENGLISH], Chunker("python", python="mine:split"), tmp_path)
    assert [c.text for c in chunks] == [ENGLISH.text[:36], ENGLISH.text[36:]]
    assert chunks[1].metadata == {"part": 2}
    with pytest.raises(FixtureError, match=r"chunker 'mine:bad' returned \(0, 74\) for document 'en'"):
        chunk_documents([ENGLISH], Chunker("python", python="mine:bad"), tmp_path)
    with pytest.raises(ConfigError, match="no attribute"):
        chunk_documents([ENGLISH], Chunker("python", python="mine:none"), tmp_path)


def test_documents_from_a_file_and_from_a_folder(tmp_path: Path) -> None:
    lines = [{"id": "a", "text": "x y", "metadata": {"lang": "en"}}, {"id": "b", "text": "z"}]
    (tmp_path / "docs.jsonl").write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    found = load_documents(tmp_path / "docs.jsonl")
    assert [(d.id, d.text, d.metadata) for d in found] == [("a", "x y", {"lang": "en"}), ("b", "z", {})]
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "b.md").write_text("# B\n", encoding="utf-8")
    (folder / "a.txt").write_text("a text", encoding="utf-8")
    (folder / "image.png").write_bytes(b"\x89PNG")
    assert [(d.id, d.text) for d in load_documents(folder)] == [("a.txt", "a text"), ("sub/b.md", "# B\n")]
    assert documents_digest(found) != documents_digest(load_documents(folder))
    (tmp_path / "bad.jsonl").write_text('{"id": "a#1", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(FixtureError, match=r"bad.jsonl:1: field 'id' must be .* without '#'"):
        load_documents(tmp_path / "bad.jsonl")


TEAM = '''
import os
import sys
import time


def ok(text):
    return [(0, len(text), {"n": len(text)})]


def hang(text):
    time.sleep(60)


def raising(text):
    raise ValueError("boom\\nsecond line")


def exiting(text):
    sys.exit(3)


def recursing(text):
    return recursing(text)


def ending(text):
    os._exit(0)


def vanishing(text):
    os.kill(os.getpid(), 9)


def closing(text):
    if not sys.stdout.closed:
        sys.stdout.close()
        os.close(1)
    return [(0, len(text))]


def not_json(text):
    return [(0, len(text), {"tags": {"a", "b"}})]


def unordered(text):
    return [(5, len(text)), (0, 5)]


def twice(text):
    return [(0, 5), (0, 5), (5, len(text))]
'''


@pytest.fixture
def team(tmp_path: Path) -> Path:
    (tmp_path / "team.py").write_text(TEAM, encoding="utf-8")
    return tmp_path


def cut(root: Path, function: str, timeout: float = 60.0) -> tuple[Chunk, ...]:
    return chunk_documents([CHINESE, ENGLISH], Chunker("python", python=f"team:{function}", timeout=timeout), root)


@pytest.mark.usefixtures("threads_of_this_test")
@pytest.mark.parametrize(("function", "message"), [
    ("raising", r"chunker 'team:raising' raised ValueError: boom on document 'zh'; fix the chunker"),
    ("exiting", r"chunker 'team:exiting' raised SystemExit: 3 on document 'zh'; fix the chunker"),
    ("recursing", r"chunker 'team:recursing' raised RecursionError: maximum recursion depth exceeded on document 'zh'"),
    ("ending", r"chunker 'team:ending' on document 'zh': its process failed \(it ended with exit status 0 before "
               r"its answer\); a chunker returns its pairs, it must not exit or end its process"),
    ("vanishing", r"chunker 'team:vanishing' on document 'zh': its process failed \(it ended with signal 9 before "
                  r"its answer\)"),
    ("not_json", r"chunker 'team:not_json' returned metadata that is not JSON for document 'zh' \(Object of type "
                 r"set is not JSON serializable\)"),
    ("unordered", r"chunker 'team:unordered' returned \(0, 5\) after \(5, 44\) for document 'zh'; return the pairs "
                  r"in order, by start then end, each once"),
    ("twice", r"chunker 'team:twice' returned \(0, 5\) twice for document 'zh'"),
])
def test_a_teams_chunker_that_fails_is_one_line_naming_it_and_the_document(
        team: Path, function: str, message: str) -> None:
    import psutil

    with pytest.raises(FixtureError, match=message) as caught:
        cut(team, function)
    assert "\n" not in str(caught.value)
    assert psutil.Process().children() == []  # the chunker's process is gone


@pytest.mark.usefixtures("threads_of_this_test")
def test_a_chunker_that_never_returns_is_stopped_at_its_deadline(team: Path) -> None:
    import psutil

    started = time.monotonic()
    with pytest.raises(FixtureError, match=r"chunker 'team:hang' did not return within 0.5 s on document 'zh' "
                                           r"\(its process was stopped\); make it faster, or raise its table's timeout"):
        cut(team, "hang", timeout=0.5)
    assert time.monotonic() - started < 30  # a guard: the deadline, not the 60 s sleep
    assert psutil.Process().children() == []


@pytest.mark.usefixtures("threads_of_this_test")
def test_a_chunker_runs_in_a_process_of_its_own(team: Path) -> None:
    """Closing stdout there leaves this process's open; its metadata comes back as JSON."""
    assert [c.text for c in cut(team, "closing")] == [CHINESE.text, ENGLISH.text]
    assert os.fstat(1) is not None and not sys.stdout.closed
    assert [c.metadata for c in cut(team, "ok")] == [{"n": len(CHINESE.text)}, {"n": len(ENGLISH.text)}]
    assert "team" not in sys.modules  # imported by the chunker's process only


def test_where_forking_is_unsafe_the_same_checks_run_here(team: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(team_chunker, "forkable", lambda: False)
    assert [c.metadata for c in cut(team, "ok")] == [{"n": len(CHINESE.text)}, {"n": len(ENGLISH.text)}]
    with pytest.raises(FixtureError, match=r"chunker 'team:raising' raised ValueError: boom on document 'zh'"):
        cut(team, "raising")
    with pytest.raises(FixtureError, match=r"chunker 'team:twice' returned \(0, 5\) twice for document 'zh'"):
        cut(team, "twice")
