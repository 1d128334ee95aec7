"""Re-anchoring gold labels (labels/relabel.py) and `ragretrieval relabel` on a small hand-made project."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from stages import document

from pytest_ragretrieval.baseline.format import dumps
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.evalset.jsonl import load_chunks, load_evalset
from pytest_ragretrieval.labels.relabel import command, plan, rewritten

HALF_A, HALF_B = "一线城市住宿每晚不超过六百元。", "二线城市每晚不超过四百五十元。"
REFUND = "退款在审核通过后三个工作日内原路退回。"
OLD_CHUNKS: list[dict[str, Any]] = [
    {"id": "hotel", "text": HALF_A + HALF_B},
    {"id": "refund", "text": REFUND},
    {"id": "error", "text": "ORDER-2024 表示订单已超时关闭。"},
]
NEW_CHUNKS: list[dict[str, Any]] = [
    {"id": "hotel-1", "text": HALF_A},
    {"id": "hotel-2", "text": HALF_B},
    {"id": "refund", "text": REFUND},
    {"id": "error", "text": "ORDER-2024 表示订单已超时关闭。"},
]
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "query": "住宿标准", "relevant": {"hotel": 2, "refund": 0}, "tags": ["t"]},
    {"id": "q2", "query": "二线城市", "relevant": ["hotel", "error"]},
    {"id": "q3", "query": "退款", "relevant": {"refund": 1}},
    {"id": "q4", "query": "二线城市住宿", "relevant": {"hotel-2": 3, "hotel": 1}},
    {"id": "q5", "query": "超时", "relevant_text": ["超时关闭"]},
]
SETTINGS = """\
chunks = "chunks.jsonl"
evalset = "evalset.jsonl"
baseline = "baseline.json"
k = 2

[retrievers.bm25]
type = "bm25"
"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_project(folder: Path, gold: dict[str, str] | None = None, chunks: list[dict[str, Any]] = NEW_CHUNKS,
                  questions: list[dict[str, Any]] = QUESTIONS, digests: dict[str, str] | None = None) -> Path:
    (folder / "chunks.jsonl").write_text(jsonl(chunks), encoding="utf-8")
    (folder / "evalset.jsonl").write_text(jsonl(questions), encoding="utf-8")
    (folder / "relabel.toml").write_text(SETTINGS, encoding="utf-8")
    corpus: dict[str, Any] = {"sha256": "0" * 64}
    if gold is not None:
        corpus["gold"] = gold
    if digests is not None:
        corpus["digests"] = digests
    (folder / "baseline.json").write_text(dumps(document(2, {"chunks": corpus}, {})), encoding="utf-8")
    return folder


GOLD = {"hotel": HALF_A + HALF_B, "refund": REFUND, "error": "ORDER-2024 表示订单已超时关闭。"}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_project(tmp_path, GOLD)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["relabel", "--config", "relabel.toml", *argv])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def test_each_absent_id_moves_to_both_halves_with_its_grade(tmp_path: Path) -> None:
    write_project(tmp_path, GOLD)
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    found = plan(tmp_path / "evalset.jsonl", chunks, GOLD)
    assert [str(move) for move in found.moves] == [
        "q1: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "q2: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "q4: hotel -> hotel-1, hotel-2 (text 100% contained)",
    ]
    text = (tmp_path / "evalset.jsonl").read_text(encoding="utf-8")
    after = rewritten(text, found).splitlines()
    before = text.splitlines()
    assert json.loads(after[0])["relevant"] == {"hotel-1": 2, "hotel-2": 2, "refund": 0}
    assert list(json.loads(after[0])["relevant"]) == ["hotel-1", "hotel-2", "refund"]
    assert json.loads(after[1])["relevant"] == ["hotel-1", "hotel-2", "error"]
    assert json.loads(after[3])["relevant"] == {"hotel-2": 3, "hotel-1": 1}, "the higher grade wins, first place kept"
    assert after[2] == before[2] and after[4] == before[4], "lines without a move are kept byte for byte"
    (tmp_path / "evalset.jsonl").write_text("\n".join(after) + "\n", encoding="utf-8")
    loaded = {q.id: dict(q.relevance) for q in load_evalset(tmp_path / "evalset.jsonl", chunks)}
    assert loaded["q5"] == {"error": 1}, "a relevant_text snippet follows its text by itself"


def test_a_grade_0_judgment_of_a_chunk_that_is_gone_is_dropped(tmp_path: Path) -> None:
    questions = [{"id": "q1", "query": "x", "relevant": {"hotel-1": 1, "gone": 0}}]
    write_project(tmp_path, GOLD, questions=questions)
    found = plan(tmp_path / "evalset.jsonl", load_chunks(tmp_path / "chunks.jsonl"), GOLD)
    assert [str(m) for m in found.moves] == [
        "q1: gone -> (dropped: a grade-0 judgment of a chunk no longer in the corpus)"]
    assert json.loads(rewritten(jsonl(questions), found))["relevant"] == {"hotel-1": 1}
    assert not found.lost and not found.ambiguous


def test_only_absent_ids_move(tmp_path: Path) -> None:
    """refund's text is also inside nothing else, error is still there: neither moves."""
    write_project(tmp_path, GOLD)
    found = plan(tmp_path / "evalset.jsonl", load_chunks(tmp_path / "chunks.jsonl"), GOLD)
    assert {move.old for move in found.moves} == {"hotel"}


def test_the_command_names_the_settings_file() -> None:
    assert command(None) == "ragretrieval relabel"
    assert command("my settings.toml") == "ragretrieval relabel --config 'my settings.toml'"


def test_relabel_prints_the_proposal_and_a_unified_diff(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (project / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys)
    assert (code, err) == (0, [])
    assert out[:5] == [
        "evalset.jsonl: 3 gold labels name what the corpus no longer holds; where their text went:",
        "  q1: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "  q2: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "  q4: hotel -> hotel-1, hotel-2 (text 100% contained)",
        "apply it with `ragretrieval relabel --config relabel.toml --apply` (see the diff with "
        "`ragretrieval relabel --config relabel.toml`)",
    ]
    assert out[5:7] == ["--- a/evalset.jsonl", "+++ b/evalset.jsonl"]
    assert '-{"id": "q2", "query": "二线城市", "relevant": ["hotel", "error"]}' in out
    assert '+{"id": "q2", "query": "二线城市", "relevant": ["hotel-1", "hotel-2", "error"]}' in out
    assert (project / "evalset.jsonl").read_bytes() == before, "without --apply nothing is written"


def test_apply_writes_atomically_keeping_the_mode_and_no_backup_unless_asked(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chmod(project / "evalset.jsonl", 0o640)
    code, out, _ = run(capsys, "--apply")
    assert code == 0 and out[-1] == "ragretrieval: wrote evalset.jsonl (3 labels moved)"
    assert stat.S_IMODE((project / "evalset.jsonl").stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir()) == [
        "baseline.json", "chunks.jsonl", "evalset.jsonl", "relabel.toml"]
    chunks = load_chunks(project / "chunks.jsonl")
    assert dict(load_evalset(project / "evalset.jsonl", chunks)[0].relevance) == {
        "hotel-1": 2, "hotel-2": 2, "refund": 0}
    assert run(capsys)[1] == ["ragretrieval: nothing to relabel: every gold chunk id in evalset.jsonl is in chunks.jsonl"]


def test_backup_keeps_the_old_file_with_its_mode(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (project / "evalset.jsonl").read_bytes()
    os.chmod(project / "evalset.jsonl", 0o600)
    code, out, _ = run(capsys, "--apply", "--backup")
    assert code == 0 and "ragretrieval: kept the old eval set as evalset.jsonl.bak" in out
    assert (project / "evalset.jsonl.bak").read_bytes() == before
    assert stat.S_IMODE((project / "evalset.jsonl.bak").stat().st_mode) == 0o600


def test_an_ambiguous_proposal_is_applied_only_when_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    chunks = [*NEW_CHUNKS, {"id": "copy", "text": REFUND}]
    questions = [{"id": "q1", "query": "退款", "relevant": ["old-refund"]}]
    write_project(tmp_path, {"old-refund": REFUND}, chunks=[c for c in chunks if c["id"] != "refund"] + [
        {"id": "refund-2", "text": REFUND}], questions=questions)
    before = (tmp_path / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys, "--apply")
    assert code == 1
    assert "  q1: old-refund -> copy, refund-2 (text 100% contained; ambiguous: the old text is found in 2 places)" in out
    assert err == ["ragretrieval: evalset.jsonl not written: ambiguous: q1 (old-refund); check them in the proposal "
                   "above and pass --accept-ambiguous to apply them"]
    assert (tmp_path / "evalset.jsonl").read_bytes() == before
    assert run(capsys, "--apply", "--accept-ambiguous")[0] == 0
    assert json.loads((tmp_path / "evalset.jsonl").read_text(encoding="utf-8"))["relevant"] == ["copy", "refund-2"]


def test_a_label_found_nowhere_is_never_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, {**GOLD, "hotel": "完全不同的一段旧文字，谁也没有保留下来。"})
    before = (tmp_path / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys, "--apply")
    assert code == 1 and (tmp_path / "evalset.jsonl").read_bytes() == before
    assert "  q1: hotel -> ? (not found: no chunk holds 5% or more of its text; label it by hand at evalset.jsonl:1)" in out
    assert err == ["ragretrieval: evalset.jsonl not written: found nowhere: q1 (hotel), q2 (hotel), q4 (hotel); "
                   "label them by hand first"]


def test_a_baseline_without_gold_texts_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, None)
    code, out, err = run(capsys)
    assert (code, out) == (2, [])
    assert err == ["ragretrieval: error: evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant', and the baseline "
                   "baseline.json cannot say where it went: it records no gold texts (recorded before they were "
                   "kept); relabel it by hand"]


def test_old_chunks_give_the_old_gold(tmp_path: Path) -> None:
    """The fixture's GOLD is what the old corpus gives: the record the gate would have written."""
    from pytest_ragretrieval.baseline.fingerprint import gold_texts

    write_project(tmp_path, GOLD, chunks=OLD_CHUNKS, questions=[q for q in QUESTIONS if q["id"] != "q4"])
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    assert gold_texts(chunks, load_evalset(tmp_path / "evalset.jsonl", chunks)) == GOLD


def test_the_gate_s_error_is_the_proposal_today_s_line_with_why_or_today_s_line_alone(tmp_path: Path) -> None:
    from pytest_ragretrieval.core.errors import FixtureError
    from pytest_ragretrieval.labels.relabel import anchoring_error

    write_project(tmp_path, GOLD)
    problem = FixtureError("evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant'")
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    found = plan(tmp_path / "evalset.jsonl", chunks, GOLD)
    assert str(anchoring_error(problem, found, True, None, "")).splitlines()[1:2] == [
        "  q1: hotel -> hotel-1, hotel-2 (text 100% contained)"]
    assert str(anchoring_error(problem, plan(tmp_path / "evalset.jsonl", chunks, {}), False, None,
                               "there is no baseline at b.json")) == (
        "evalset.jsonl:1: unknown chunk id 'hotel' in 'relevant'; there is no baseline at b.json, so where it went "
        "cannot be found: relabel it by hand")
    typo = plan(tmp_path / "evalset.jsonl", chunks, {"hotel": "谁也没有的文字，找不到。"})
    assert anchoring_error(problem, typo, True, None, "") is problem


def test_not_relevant_ids_of_removed_chunks_are_dropped_so_the_next_run_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Old code planned `relevant` only: 'nothing to relabel', and the next run stopped with `unknown chunk
    id 'hotel' in 'not_relevant'`. The gate now offers the proposal (the id is unanchored, not a plain error);
    a machine label of the dropped judgment goes with it."""
    from pytest_ragretrieval.evalset.jsonl import Unanchored

    monkeypatch.chdir(tmp_path)
    provenance = {"model": "m", "prompt_sha256": "p", "date": "d"}
    questions: list[dict[str, Any]] = [
        {"id": "q1", "query": "退款", "relevant": ["refund"], "not_relevant": ["hotel", "error"],
         "machine_labels": {"hotel": provenance, "error": provenance}},
        {"id": "q2", "query": "超时", "relevant": ["error"], "not_relevant": ["hotel"]}]
    write_project(tmp_path, GOLD, questions=questions)
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    with pytest.raises(Unanchored, match="unknown chunk id 'hotel' in 'not_relevant'"):
        load_evalset(tmp_path / "evalset.jsonl", chunks)
    code, out, _ = run(capsys, "--apply")
    assert code == 0
    assert "  q1: hotel (in not_relevant) -> (dropped: a grade-0 judgment of a chunk no longer in the corpus)" in out
    lines = [json.loads(line) for line in (tmp_path / "evalset.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {"id": "q1", "query": "退款", "relevant": ["refund"], "not_relevant": ["error"],
                        "machine_labels": {"error": provenance}}
    assert "not_relevant" not in lines[1], "a list left empty is removed"
    assert [q.relevance for q in load_evalset(tmp_path / "evalset.jsonl", chunks)] == [
        {"refund": 1, "error": 0}, {"error": 1}]


RENUMBERED: list[dict[str, Any]] = [
    {"id": "faq-013", "text": "新增的一段：会员积分每年十二月底清零。"},
    {"id": "faq-014", "text": REFUND},
    {"id": "faq-015", "text": HALF_A + "（已更新）"},
]


def test_a_gold_id_whose_recorded_text_moved_to_another_chunk_is_re_anchored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chunker numbering per document: a chunk inserted before faq-013 gave its id to other text and its text
    the id faq-014. Old code said 'nothing to relabel' while the label pointed at the wrong text. A gold id
    whose text was edited in place (faq-015: found there, fuzzily) keeps its label."""
    monkeypatch.chdir(tmp_path)
    questions: list[dict[str, Any]] = [{"id": "q1", "query": "退款", "relevant": {"faq-013": 2, "faq-014": 0}},
                 {"id": "q2", "query": "住宿", "relevant": ["faq-015"]}]
    write_project(tmp_path, {"faq-013": REFUND, "faq-015": HALF_A}, chunks=RENUMBERED, questions=questions)
    code, out, _ = run(capsys, "--apply")
    assert code == 0
    assert out[:2] == [
        "evalset.jsonl: 1 gold label names what the corpus no longer holds; where its text went:",
        "  q1: faq-013 (its recorded text is no longer in it) -> faq-014 (text 100% contained)"]
    chunks = load_chunks(tmp_path / "chunks.jsonl")
    assert [dict(q.relevance) for q in load_evalset(tmp_path / "evalset.jsonl", chunks)] == [
        {"faq-014": 2}, {"faq-015": 1}], "the higher grade wins over the grade-0 judgment already there"


def test_the_diff_is_one_git_apply_takes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Old code split at '\\n' with lineterm='' and printed a last '' line that is no diff line: `git apply`
    refused the patch. A file without a final line end gets git's marker."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    for text in (None, (project / "evalset.jsonl").read_text(encoding="utf-8").rstrip("\n")):
        if text is not None:
            (project / "evalset.jsonl").write_text(text, encoding="utf-8")
        code, out, _ = run(capsys)
        assert code == 0
        (project / "change.patch").write_text("\n".join(out[out.index("--- a/evalset.jsonl"):]) + "\n",
                                              encoding="utf-8")
        checked = subprocess.run([git, "apply", "--check", "change.patch"], cwd=project, capture_output=True,
                                 text=True, timeout=60, check=False)
        assert checked.returncode == 0, checked.stderr
    assert out[-1] == "\\ No newline at end of file"


@pytest.mark.parametrize(("target", "what"), [("relabel.toml", "the config file"),
                                             ("words.txt", "retriever 'bm25''s user_dict")])
def test_backup_never_replaces_a_file_the_config_given_reads(
    project: Path, capsys: pytest.CaptureFixture[str], target: str, what: str
) -> None:
    """`--config relabel.toml --backup` with evalset.jsonl.bak a link to relabel.toml (or to the user dictionary):
    old code checked the backup against ./pyproject.toml and overwrote the file with the eval set."""
    (project / "words.txt").write_text("退款到账 5\n", encoding="utf-8")
    (project / "relabel.toml").write_text(SETTINGS + 'tokenizer = "jieba"\nuser_dict = "words.txt"\n', encoding="utf-8")
    kept = (project / target).read_bytes()
    before = (project / "evalset.jsonl").read_bytes()
    (project / "evalset.jsonl.bak").symlink_to(target)
    code, out, err = run(capsys, "--apply", "--backup")
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"ragretrieval: error: --backup evalset.jsonl.bak: is {what}, which writing "
                             "would overwrite")
    assert (project / target).read_bytes() == kept and (project / "evalset.jsonl").read_bytes() == before


def test_apply_writes_only_over_the_bytes_it_planned(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The eval set edited between the plan and the write (a line added on top): old code re-read it and applied
    the plan's line numbers to other lines (`internal error: JSONDecodeError`, or a label moved on the wrong
    question). Now nothing is written, in one line."""
    from pytest_ragretrieval.cli import relabel
    from pytest_ragretrieval.labels.relabel import plan as planned

    def edited_meanwhile(*args: Any, **kwargs: Any) -> Any:
        found = planned(*args, **kwargs)
        path = project / "evalset.jsonl"
        path.write_text("\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
        return found

    monkeypatch.setattr(relabel, "plan", edited_meanwhile)
    edited = "\n" + (project / "evalset.jsonl").read_text(encoding="utf-8")
    code, _, err = run(capsys, "--apply", "--backup")
    assert code == 1
    assert err == ["ragretrieval: evalset.jsonl not written: it changed since relabel read it; run "
                   "`ragretrieval relabel --config relabel.toml` again to see the changes to the file as it is now"]
    assert (project / "evalset.jsonl").read_text(encoding="utf-8") == edited
    assert not (project / "evalset.jsonl.bak").exists()


def test_a_forged_gold_text_is_not_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The campaign's forgery: the baseline's gold text of 'hotel' set to refund's text, 'hotel' removed from the
    corpus. Old code proposed 'q1: hotel -> refund (text 100% contained)' and --apply moved the grade-2 label.
    The baseline's per-chunk digest of 'hotel' (text, document, metadata) does not match the forged text."""
    from pytest_ragretrieval.baseline.fingerprint import chunk_record
    from pytest_ragretrieval.evalset.jsonl import load_chunks as chunks_of

    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, chunks=OLD_CHUNKS)
    digests = {chunk.id: chunk_record(chunk) for chunk in chunks_of(tmp_path / "chunks.jsonl")}
    questions = [{"id": "q1", "query": "住宿", "relevant": {"hotel": 2}}]
    chunks = [c for c in NEW_CHUNKS if not c["id"].startswith("hotel")]
    write_project(tmp_path, {"hotel": REFUND}, chunks=chunks, questions=questions, digests=digests)
    before = (tmp_path / "evalset.jsonl").read_bytes()
    code, out, err = run(capsys, "--apply")
    assert code == 1 and (tmp_path / "evalset.jsonl").read_bytes() == before
    assert out[1] == ("  q1: hotel -> refund (text 100% contained; ambiguous: the baseline's text of hotel is not the "
                      "one its digest fingerprint.chunks.digests.hotel was recorded from with the document and "
                      "metadata of any chunk it went to (the baseline was edited, or so were those))")
    assert err == ["ragretrieval: evalset.jsonl not written: ambiguous: q1 (hotel); check them in the proposal above "
                   "and pass --accept-ambiguous to apply them"]
    write_project(tmp_path, GOLD, questions=questions, digests=digests)  # the true text: verified, applied
    assert run(capsys, "--apply")[0] == 0


def test_backup_never_overwrites_an_earlier_backup(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Old code replaced an existing evalset.jsonl.bak without a word (the campaign's one-of-three old defect):
    now the run refuses in one line naming it, and nothing on disk changes."""
    (project / "evalset.jsonl.bak").write_bytes(b"the only copy of last week's labels\n")
    before = (project / "evalset.jsonl").read_bytes()
    code, _, err = run(capsys, "--apply", "--backup")
    assert code == 1
    assert err == ["ragretrieval: evalset.jsonl not written: the backup evalset.jsonl.bak exists, and --backup "
                   "never overwrites one; move it away (or drop --backup) and run again"]
    assert (project / "evalset.jsonl.bak").read_bytes() == b"the only copy of last week's labels\n"
    assert (project / "evalset.jsonl").read_bytes() == before
    assert sorted(p.name for p in project.iterdir()) == [
        "baseline.json", "chunks.jsonl", "evalset.jsonl", "evalset.jsonl.bak", "relabel.toml"]


def test_a_backup_made_meanwhile_is_not_overwritten(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A backup that appears between the check and the write (another relabel) is kept: the copy is
    written only where no file is, under the folder's lock."""
    from pytest_ragretrieval.cli import relabel

    read = relabel._bytes
    calls = []

    def then_made(path: Path) -> bytes:
        calls.append(path)
        if len(calls) == 2:  # the check before the write: the backup was looked for just before
            (project / "evalset.jsonl.bak").write_text("another run's backup\n", encoding="utf-8")
        return read(path)

    monkeypatch.setattr(relabel, "_bytes", then_made)
    before = (project / "evalset.jsonl").read_bytes()
    code, _, err = run(capsys, "--apply", "--backup")
    assert code == 1 and len(err) == 1 and "the backup evalset.jsonl.bak exists" in err[0]
    assert (project / "evalset.jsonl.bak").read_text(encoding="utf-8") == "another run's backup\n"
    assert (project / "evalset.jsonl").read_bytes() == before


def test_a_thousand_labels_found_nowhere_are_named_in_short_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """1,000 gold ids whose recorded texts no chunk holds: old code named every one on the refusal line
    and on the "label ... by hand first" line (tens of KB each); now the first 20 and a count."""
    monkeypatch.chdir(tmp_path)
    gold = {f"gone-{n:04d}": f"已删除的第{n}段：报销流程里不再存在的规定。" for n in range(1000)}
    questions = [{"id": f"q{n:04d}", "query": "报销", "relevant": [f"gone-{n:04d}"]} for n in range(1000)]
    write_project(tmp_path, gold, questions=questions)
    code, out, err = run(capsys, "--apply")
    assert code == 1 and len(err) == 1
    assert err[0].startswith("ragretrieval: evalset.jsonl not written: found nowhere: q0000 (gone-0000), ")
    assert err[0].endswith(", q0019 (gone-0019), ... and 980 more; label them by hand first") and len(err[0]) < 600
    by_hand = next(line for line in out if line.startswith("label q0000, "))
    assert ", q0019, ... and 980 more by hand first" in by_hand and len(by_hand) < 400


def test_the_gate_s_proposal_for_1000_moved_labels_names_the_first_20(tmp_path: Path) -> None:
    """1,000 gold ids gone after a re-chunking, each text found again: old code failed the gate with all 1,000
    proposal lines; now the first 20, then how many more and the command that lists them all."""
    from pytest_ragretrieval.core.errors import FixtureError
    from pytest_ragretrieval.labels.relabel import anchoring_error

    gold = {f"old-{n:04d}": REFUND for n in range(1000)}
    questions = [{"id": f"q{n:04d}", "query": "退款", "relevant": [f"old-{n:04d}"]} for n in range(1000)]
    write_project(tmp_path, gold, questions=questions)
    found = plan(tmp_path / "evalset.jsonl", load_chunks(tmp_path / "chunks.jsonl"), gold)
    lines = str(anchoring_error(FixtureError("x"), found, True, "relabel.toml", "")).splitlines()
    assert len(lines) == 23 and lines[1].startswith("  q0000: old-0000 -> refund")
    assert lines[21] == "  ... and 980 more: `ragretrieval relabel --config relabel.toml` lists them all"
    assert len(found.lines("ragretrieval relabel")) == 1002, "the command itself prints every move"
