"""Damage by class: one file of a gate project damaged one way, the gate and the commands run on it.

`tests/plugin/test_fuzz.py` damages files at random; here each try picks a file the run reads (the
baseline, a user dictionary, a run file, a side file of the `ragretrieval` command) and one class
of damage (truncation, wrong types, out-of-range numbers, inconsistent fingerprints, digests
emptied, keys that do not parse, ...), seeded, and checks what the issue asks of every outcome:

- no traceback and no internal error: a RagError line or a verdict;
- no input changed (the baseline only by a valid `--rag-update-baseline`);
- a **silent pass**, a run that ends well without naming the damaged file, is counted per class.

`tests/plugin/test_fuzz_classes.py` runs a few tries per class; `benchmarks/fuzz_inputs.py --tries
300` the seeded campaign and its table.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from projects import GOLD, retriever, write_project

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.core.errors import RagError
from pytest_ragretrieval.core.progress import PlainOutput
from pytest_ragretrieval.glue.session import Options, RagSession
from pytest_ragretrieval.review.approval import decide, pull_request
from pytest_ragretrieval.review.approved import record_document
from pytest_ragretrieval.review.changes import Changes, Entry, SettingChange, ValueChange, dumps_changes

BASELINE = "baselines/retrieval.json"
USER_DICT = "fixtures/user_dict.txt"
RUN_FILE = "fixtures/run.trec"
CHANGES_FILE = "changes.json"
APPROVED_FILE = "approved.json"
EVENT_FILE = "event.json"
DICTIONARY = "住宿标准 20 n\n原路退回 20 v\n支付渠道 5\n错误码\n"
SETTINGS = 'fail_on = ["metric", "question"]'
RETRIEVERS = (retriever("bm25", "bm25", tokenizer="jieba-search", user_dict=USER_DICT)
              + retriever("mine", "run", path=RUN_FILE))
CHANGES = Changes("old.json", "new.json", lowered=(ValueChange("bm25", "ndcg@3", 0.6, 0.5),),
                  removed=(Entry("bm25", "mrr@3", "no longer in the baseline"),),
                  loosened=(SettingChange("tolerance", "ndcg@3", "0", "0.1"),))
EVENT = {"action": "synchronize", "number": 7, "pull_request": {
    "number": 7, "labels": [{"name": "rag-baseline-approved"}], "head": {"sha": "a" * 40, "repo": {"full_name": "t/r"}},
    "base": {"repo": {"full_name": "t/r"}}}}
LABELED = {**EVENT, "action": "labeled", "label": {"name": "rag-baseline-approved"}}


def run_text() -> str:
    """A TREC run of the perfect rankings, scores falling by rank; the no-answer question gets one
    chunk, so that no question is missing and nothing names the file unless it is damaged."""
    lines = []
    for qid, ranking in {**GOLD, **{q: ["service-001"] for q, gold in GOLD.items() if not gold}}.items():
        lines += [f"{qid} Q0 {cid} {rank} {10 - rank}.5 mine" for rank, cid in enumerate(ranking, start=1)]
    return "\n".join(lines) + "\n"


def write_side_files(folder: Path) -> None:
    decided = decide(CHANGES, pull_request(LABELED))
    assert decided.approval is not None
    (folder / CHANGES_FILE).write_text(dumps_changes(CHANGES), encoding="utf-8")
    (folder / APPROVED_FILE).write_text(json.dumps(record_document(decided.approval), indent=1), encoding="utf-8")
    (folder / EVENT_FILE).write_text(json.dumps(EVENT), encoding="utf-8")


def make_project(folder: Path) -> dict[str, bytes]:
    """A recorded project with every kind of input, as bytes by relative path."""
    (folder / "fixtures").mkdir(parents=True, exist_ok=True)
    (folder / USER_DICT).write_text(DICTIONARY, encoding="utf-8")
    (folder / RUN_FILE).write_text(run_text(), encoding="utf-8")
    write_project(folder, retrievers=RETRIEVERS, settings=SETTINGS)
    write_side_files(folder)
    with chdir(folder):
        error, verdicts, _ = run_gate(folder, update=True)
    assert error is None and set(verdicts) == {"passed"}, (error, verdicts)
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts and ".rag-cache" not in path.parts}


@contextlib.contextmanager
def chdir(folder: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def run_gate(folder: Path, update: bool) -> tuple[str | None, list[str], str]:
    """(the one error line or None, each item's verdict, everything the run printed and said) of one
    in-process run, driven as plugin.py drives it. Any exception but a RagError propagates: a traceback."""
    printed = io.StringIO()
    said: list[str] = []
    session = RagSession(Options(rootpath=folder, update=update))
    with contextlib.redirect_stdout(printed):
        try:
            try:
                session.load()
            except RagError as exc:
                return str(exc), [], printed.getvalue()
            keys = session.item_keys()
            session.select(keys)
            session.prepare(PlainOutput())
            verdicts = []
            for key in keys:
                verdict = session.verdict(key)
                said += verdict.lines
                verdicts.append(str(verdict.status))
            try:
                session.finish()
                said += session.summary_lines()
            except RagError as exc:
                return str(exc), verdicts, printed.getvalue() + "\n".join(said)
            return None, verdicts, printed.getvalue() + "\n".join(said)
        finally:
            session.close()


def run_command(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


# The damage, by file and class. Each takes the file's text and a seeded Random, and returns new text.

Damage = Callable[[str, random.Random], str]


def _truncate(text: str, chance: random.Random) -> str:
    return text[: chance.randrange(1, max(2, len(text) - 1))]


def _json(change: Callable[[Any, random.Random], None]) -> Damage:
    def damage(text: str, chance: random.Random) -> str:
        doc = json.loads(text)
        change(doc, chance)
        return json.dumps(doc, ensure_ascii=False, indent=2).replace('"<<RAW:', "").replace(':RAW>>"', "")
    return damage


def _raw(text: str) -> str:
    """A JSON literal spliced in as written (json.dumps cannot write 1e400 or a 400-digit number as a float)."""
    return f"<<RAW:{text}:RAW>>"


def _nodes(doc: Any, want: Callable[[str, Any], bool], path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths (container keys) of the values `want(key, value)` picks, in document order."""
    found: list[tuple[Any, ...]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        if want(str(key), value):
            found.append((*path, key))
        found += _nodes(value, want, (*path, key))
    return found


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _rename(doc: Any, path: tuple[Any, ...], name: str) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[name] = doc.pop(path[-1])


def _is_number(_: str, value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


OUT_OF_RANGE = [_raw("1e400"), _raw("1" + "0" * 400), _raw("9" * 320), _raw("-" + "9" * 4299), 1.5, -0.25, 10**30]
WRONG_TYPES: list[object] = ["0.5", None, True, [], {}, [0.5]]
BAD_KEYS = ["ndcg@\u00b2", "ndcg@" + "5" * 5001, "ndcg@", "ndcg@x", "NDCG@3", "ndcg@３", "ndcg@3 "]


def _kind(value: Any) -> str:
    """A value's JSON type: a number is one, whole or not."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def _set_wrong_type(doc: Any, path: tuple[Any, ...], chance: random.Random, choices: list[Any]) -> None:
    """The value at `path` replaced by one of another JSON type, so the file is damaged, not merely edited."""
    node = doc
    for key in path[:-1]:
        node = node[key]
    _set(doc, path, chance.choice([value for value in choices if _kind(value) != _kind(node[path[-1]])]))


def _baseline_out_of_range(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: "@" in key and _is_number(key, value))
    _set(doc, chance.choice(paths), chance.choice(OUT_OF_RANGE))


def _baseline_wrong_type(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: key in ("metrics", "questions", "ranking", "k", "fingerprint", "retrievers")
                   or ("@" in key and _is_number(key, value)))
    _set_wrong_type(doc, chance.choice(paths), chance, WRONG_TYPES)


def _baseline_bad_key(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: "@" in key and _is_number(key, value))
    _rename(doc, chance.choice(paths), chance.choice(BAD_KEYS))


def _baseline_inconsistent(doc: Any, chance: random.Random) -> None:
    """The baseline's own facts made to disagree: k against the yardstick's, an entry without its fingerprint."""
    choice = chance.randrange(3)
    if choice == 0:
        doc["k"] = doc["k"] + chance.choice([1, 2, 4])
    elif choice == 1:
        yardstick = doc["fingerprint"].get("yardstick", doc["fingerprint"])
        yardstick["k"] = yardstick.get("k", 3) + chance.choice([1, 2])
    else:
        retrievers = doc["fingerprint"].get("retrievers", {})
        if retrievers:
            retrievers.pop(chance.choice(sorted(retrievers)))
        else:
            doc["k"] = doc["k"] + 1


def _emptied_digests(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: isinstance(value, str) and ("sha256" in key or "digest" in key
                                                                       or bool(re.fullmatch(r"[0-9a-f]{64}", value))))
    _set(doc, chance.choice(paths), chance.choice(["", "0", None]))


def _changes_out_of_range(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, _is_number)
    _set(doc, chance.choice(paths), chance.choice(OUT_OF_RANGE[:4]))


def _changes_wrong_type(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: key not in ("kind", "version"))
    _set_wrong_type(doc, chance.choice(paths), chance, [*WRONG_TYPES, 5])


def _changes_bad_key(doc: Any, chance: random.Random) -> None:
    paths = _nodes(doc, lambda key, value: key == "metric" and bool(value))
    _set(doc, chance.choice(paths), chance.choice(BAD_KEYS))


def _lines(change: Callable[[list[str], random.Random], None]) -> Damage:
    def damage(text: str, chance: random.Random) -> str:
        lines = text.rstrip("\n").split("\n")
        change(lines, chance)
        return "\n".join(lines) + "\n"
    return damage


def _field(lines: list[str], chance: random.Random, index: int, values: list[str]) -> None:
    at = chance.randrange(len(lines))
    fields = lines[at].split(" ")
    fields[index % len(fields)] = chance.choice(values)
    lines[at] = " ".join(fields)


DAMAGES: dict[str, dict[str, Damage]] = {
    BASELINE: {
        "truncation": _truncate,
        "wrong types": _json(_baseline_wrong_type),
        "out-of-range numbers": _json(_baseline_out_of_range),
        "inconsistent fingerprints": _json(_baseline_inconsistent),
        "digests emptied": _json(_emptied_digests),
        "keys that do not parse": _json(_baseline_bad_key),
    },
    USER_DICT: {
        "truncation": lambda text, chance: text[: chance.choice([i for i, c in enumerate(text) if c not in "\n "][1:])],
        "wrong types": _lines(lambda lines, chance: _field(lines, chance, 1, ["x", "5.5", "-3", "N", "5 5"])),
        "out-of-range numbers": _lines(lambda lines, chance: _field(lines, chance, 1, ["9" * 320, "9" * 5000])),
        "keys that do not parse": _lines(lambda lines, chance: _field(
            lines, chance, 0, ["词" * 101, "词" * 5000, "a\tb", "\u3000词"])),
    },
    RUN_FILE: {
        "truncation": lambda text, chance: text[: chance.choice([i for i, c in enumerate(text) if c not in "\n "][1:])],
        "wrong types": _lines(lambda lines, chance: _field(lines, chance, chance.choice([3, 4]), ["x", "", "1,5"])),
        "out-of-range numbers": _lines(lambda lines, chance: _field(
            lines, chance, chance.choice([3, 4]), ["1e400", "9" * 5000, "nan", "-inf", "9" * 320])),
        "keys that do not parse": _lines(lambda lines, chance: _field(
            lines, chance, chance.choice([0, 2]), ["q99", "nope-001", "", "q0\u00b2"])),
    },
    CHANGES_FILE: {
        "truncation": _truncate,
        "wrong types": _json(_changes_wrong_type),
        "out-of-range numbers": _json(_changes_out_of_range),
        "keys that do not parse": _json(_changes_bad_key),
    },
    APPROVED_FILE: {
        "truncation": _truncate,
        "wrong types": _json(_changes_wrong_type),
        "out-of-range numbers": _json(_changes_out_of_range),
        "digests emptied": _json(_emptied_digests),
        "keys that do not parse": _json(_changes_bad_key),
    },
}
"""Every class damages the file: no try may end well without naming it."""
CLASSES = [(name, kind) for name, kinds in DAMAGES.items() for kind in kinds]


@dataclass
class Tally:
    """What the tries of one (file, class) came to."""

    tries: int = 0
    refused: int = 0
    failed: int = 0
    named: int = 0
    silent: int = 0
    tracebacks: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


def mentions(line: str, name: str) -> bool:
    """Whether a line names the damaged file: its path or name, or for a user dictionary the key that names it."""
    return name in line or Path(name).name in line or (name == USER_DICT and "user_dict" in line)


Outcome = tuple[bool, bool, str]
"""(refused: an error line or exit 2, failed: an item or exit 1, everything printed)."""


def _outcomes(folder: Path, name: str, update: bool, tally: Tally, label: str) -> list[Outcome]:
    """Run what reads `name` in `folder`: the gate (and, for the baseline, `diff` and `suspects`), or
    `pr-check` and `comment` for a side file of the command."""
    outcomes: list[Outcome] = []
    with chdir(folder), _workflow_unset():
        if name in (CHANGES_FILE, APPROVED_FILE):
            for argv in (["pr-check", CHANGES_FILE, "--event", EVENT_FILE, "--approved", APPROVED_FILE],
                         ["comment", "--baseline-changes", CHANGES_FILE]):
                code, text = run_command(argv)
                _no_fault(text, tally, [label, *argv])
                outcomes.append((code == 2, code == 1, text))
            return outcomes
        error, verdicts, text = run_gate(folder, update)
        _no_fault(error or "", tally, [label, "gate"])
        outcomes.append((error is not None, "failed" in verdicts, (error or "") + "\n" + text))
        if name == BASELINE:
            for argv in (["diff", BASELINE, BASELINE], ["suspects", BASELINE]):
                code, text = run_command(argv)
                _no_fault(text, tally, [label, *argv])
                outcomes.append((code == 2, code == 1, text))
    return outcomes


def _lay_out(folder: Path, files: dict[str, bytes]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    for path, content in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(content)


_UNDAMAGED: dict[tuple[str, bool], list[Outcome]] = {}
"""What the same commands give on the undamaged project: a damaged file must change that."""


def one_try(pristine: dict[str, bytes], folder: Path, name: str, kind: str, seed: int, tally: Tally) -> None:
    """Damage `name` by `kind` (seeded), run what reads it, and count the outcome in `tally`: a silent
    pass is an outcome no worse than the undamaged project's, with no new line naming the file."""
    chance = random.Random(f"{name}|{kind}|{seed}")
    update = chance.random() < 0.3
    if (name, update) not in _UNDAMAGED:
        _lay_out(folder, pristine)
        _UNDAMAGED[(name, update)] = _outcomes(folder, name, update, Tally(), "undamaged")
    before = _UNDAMAGED[(name, update)]
    damaged = DAMAGES[name][kind](pristine[name].decode("utf-8"), chance).encode("utf-8", "surrogatepass")
    files = {**pristine, name: damaged}
    _lay_out(folder, files)
    tally.tries += 1
    try:
        outcomes = _outcomes(folder, name, update, tally, f"{kind}, seed {seed}")
    except Exception as exc:  # a traceback: what no input may cause
        tally.tracebacks.append(f"{kind}, seed {seed}: {type(exc).__name__}: {str(exc)[:200]}")
        return
    for path, content in files.items():
        now = (folder / path).read_bytes()
        if now != content and not (path == BASELINE and update and not outcomes[0][0]):
            tally.changed.append(f"{kind}, seed {seed}: {path}")
    refused = any(now[0] and not was[0] for now, was in zip(outcomes, before, strict=True))
    failed = any(now[1] and not was[1] for now, was in zip(outcomes, before, strict=True))
    known = {line for _, _, text in before for line in text.splitlines()}
    named = any(mentions(line, name) and line not in known for _, _, text in outcomes for line in text.splitlines())
    tally.refused += refused
    tally.failed += failed and not refused
    tally.named += named
    if not (refused or failed or named):
        tally.silent += 1
        if len(tally.examples) < 3:
            tally.examples.append(f"seed {seed}: {damaged[:160]!r}")


def _no_fault(text: str, tally: Tally, argv: list[str]) -> None:
    if "Traceback" in text or "internal error" in text or "INTERNALERROR" in text:
        tally.tracebacks.append(f"{' '.join(argv)}: {text.strip()[:200]}")


@contextlib.contextmanager
def _workflow_unset() -> Iterator[None]:
    names = ("GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def campaign(root: Path, tries: int, seed: int = 0) -> dict[tuple[str, str], Tally]:
    """`tries` tries spread over every (file, class), seeded: the tally of each."""
    pristine = make_project(root / "pristine")
    folder = root / "try"
    tallies = {pair: Tally() for pair in CLASSES}
    for number in range(tries):
        name, kind = CLASSES[number % len(CLASSES)]
        one_try(pristine, folder, name, kind, seed * 1_000_003 + number, tallies[(name, kind)])
    return tallies
