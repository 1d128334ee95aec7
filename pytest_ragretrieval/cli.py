"""`ragretrieval`: the labelling and review helpers that sit beside the pytest gate.

`find` is the tutorial's `find_ids`, `suspects` hunts for missing gold labels (pitfall 2) and
`diff` compares two results files, checking first that they are comparable (pitfalls 3-4).
Nothing here runs a retriever, so no model, database or numpy is loaded.
"""
from __future__ import annotations

import argparse
import os
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, NoReturn, Sequence

from .baseline import Baseline, Recorded, read
from .config import Config, load_config
from .errors import BaselineError, ConfigError, RagError
from .fingerprint import changed_paths, global_changes
from .loading import load_chunks, load_evalset
from .metrics import METRICS
from .paths import display
from .records import Chunk, Question
from .report_terminal import table
from .values import EPSILON, fmt, signed

PROG = "ragretrieval"
OK, FAILED, USAGE = 0, 1, 2
PREVIEW = 40
"""Characters of chunk text shown, as the tutorial's `find_ids` prints them."""

_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_ONE_LINE = str.maketrans({"\n": " ", "\r": " ", "\t": " "})

EPILOG = """\
exit status:
  0  success (find: a chunk matched; suspects: listed, even when none;
     diff: comparable and no metric dropped)
  1  find: no chunk matched; diff: a retriever's metric dropped, or the two
     fingerprints differ so the numbers are not comparable
  2  usage error, or a bad config, fixture line or results file

every command reads [tool.ragretrieval] of ./pyproject.toml, or the TOML file
given with --config (keys at top level, as with pytest --rag-config).
"""


class UsageError(Exception):
    """A bad command line: reported as one line, like every other error."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting, so errors stay one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class Result:
    """What a command prints and how it exits; printed only once complete, so errors leave no half output."""

    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    code: int = OK


def preview(text: str) -> str:
    """The first characters of a chunk on one line: tabs and line breaks become spaces."""
    return text[:PREVIEW].translate(_ONE_LINE)


def fold(text: str) -> str:
    """ASCII letters lower-cased, everything else (CJK, full-width letters) left exactly as is."""
    return text.translate(_ASCII_FOLD)


# find


def matching(chunks: Sequence[Chunk], keyword: str) -> list[Chunk]:
    """Chunks containing `keyword`, in corpus order; ASCII letters match either case."""
    wanted = fold(keyword)
    return [chunk for chunk in chunks if wanted in fold(chunk.text)]


def run_find(config: Config, keyword: str) -> Result:
    if not keyword.strip():
        raise UsageError("KEYWORD must not be empty")
    hits = matching(load_chunks(config.chunks), keyword)
    if not hits:
        return Result(err=[f"{PROG}: no chunk contains {keyword!r} in {display(config.chunks)}"], code=FAILED)
    return Result(out=[f"{chunk.id}\t{preview(chunk.text)}" for chunk in hits])


# suspects


@dataclass(frozen=True)
class Suspect:
    """A chunk some retrievers ranked in the top k for a question that does not label it."""

    question: Question
    chunk: Chunk
    retrievers: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.retrievers)


def _check_known(results: Baseline, questions: Mapping[str, Question], chunks: Mapping[str, Chunk], config: Config) -> None:
    """Results must match today's fixtures by id; otherwise they describe another eval set or corpus."""
    rerun = f"rerun `pytest --rag-eval --rag-json {display(results.path)}`"
    for name, recorded in sorted(results.retrievers.items()):
        for qid, entry in sorted(recorded.questions.items()):
            if qid not in questions:
                raise BaselineError(
                    f"{display(results.path)}: question {qid!r} is not in {display(config.evalset)}; "
                    f"the eval set changed since the results were written; {rerun}"
                )
            for cid in entry.ranking:
                if cid not in chunks:
                    raise BaselineError(
                        f"{display(results.path)}: chunk {cid!r} (retriever {name!r}, question {qid!r}) is not in "
                        f"{display(config.chunks)}; the corpus changed since the results were written; {rerun}"
                    )


def find_suspects(
    results: Baseline, questions: Mapping[str, Question], chunks: Mapping[str, Chunk], k: int
) -> tuple[list[Suspect], int]:
    """(suspects, most frequent first; how many top-k chunks were left out as judged grade 0).

    A chunk with an explicit grade 0 was looked at and judged not relevant, so it is no
    candidate for a missing label; giving it grade 0 is how a reviewer silences a suspect.
    """
    seen: dict[tuple[str, str], list[str]] = {}
    judged = 0
    for name, recorded in sorted(results.retrievers.items()):
        for qid, entry in recorded.questions.items():
            relevance = questions[qid].relevance
            for cid in entry.ranking[:k]:
                if cid not in relevance:
                    seen.setdefault((qid, cid), []).append(name)
                elif relevance[cid] < 1:
                    judged += 1
    found = [Suspect(questions[qid], chunks[cid], tuple(names)) for (qid, cid), names in seen.items()]
    found.sort(key=lambda s: (-s.count, s.question.id, s.chunk.id))
    return found, judged


def suspect_row(suspect: Suspect) -> list[str]:
    question = suspect.question
    label = question.id if question.answerable else f"{question.id} (no-answer)"
    return [
        str(suspect.count),
        ", ".join(suspect.retrievers),
        label,
        question.query.translate(_ONE_LINE),
        suspect.chunk.id,
        preview(suspect.chunk.text),
    ]


def suspect_lines(found: list[Suspect], judged: int, k: int, results: Baseline) -> list[str]:
    """A header saying what was read, then one table row per suspect."""
    place = f"the top {k} of {display(results.path)}"
    lines = []
    if judged:
        lines.append(f"{judged} ranked chunk{'s' if judged != 1 else ''} judged grade 0 left out")
    if not found:
        return lines + [f"no suspects: every chunk in {place} is labelled for its question"]
    lines.append(
        f"{len(found)} suspect{'s' if len(found) != 1 else ''} in {place}: ranked but not labelled "
        "relevant; check each and add it to 'relevant' or give it grade 0"
    )
    headers = ["count", "retrievers", "question", "query", "chunk", "text"]
    return lines + table(headers, [suspect_row(s) for s in found])


def run_suspects(config: Config, results_path: str, k: int | None) -> Result:
    chunks = load_chunks(config.chunks)
    questions = {q.id: q for q in load_evalset(config.evalset, chunks)}
    by_id = {chunk.id: chunk for chunk in chunks}
    results = read(Path(results_path))
    _check_known(results, questions, by_id, config)
    cutoff = k if k is not None else results.k
    found, judged = find_suspects(results, questions, by_id, cutoff)
    return Result(out=depth_note(results, k) + suspect_lines(found, judged, cutoff, results))


def depth_note(results: Baseline, k: int | None) -> list[str]:
    """Results keep only the ids the metrics needed, so a larger --k cannot see further."""
    depth = max((len(e.ranking) for r in results.retrievers.values() for e in r.questions.values()), default=0)
    if k is None or k <= depth:
        return []
    return [f"note: {display(results.path)} holds at most {depth} ids per ranking; --k {k} reads all of them"]


# diff


def metric_order(label: str) -> tuple[int, int, str]:
    """The plugin's metric order (precision, recall, f1, ndcg, ...), then by cutoff."""
    name, _, cutoff = label.partition("@")
    names = list(METRICS)
    position = names.index(name) if name in names else len(names)
    return position, int(cutoff) if cutoff.isdigit() else 0, label


def fingerprint_lines(old: Baseline, new: Baseline) -> list[str]:
    """The global fields, and the retrievers both files hold, whose fingerprints differ."""
    changed = global_changes(old.fingerprint, new.fingerprint)
    before = old.fingerprint.get("retrievers", {})
    after = new.fingerprint.get("retrievers", {})
    for name in sorted(set(before) & set(after)):
        changed += changed_paths(before[name], after[name], f"retrievers.{name}")
    if not changed:
        return []
    return [
        f"not comparable: the fingerprints differ in {', '.join(sorted(changed))}; "
        "the numbers below come from different set-ups (pitfalls 3-4)"
    ]


def _delta_cell(before: float | None, after: float | None) -> str:
    if before is None:
        return "added"
    if after is None:
        return "removed"
    delta = after - before
    return signed(delta if abs(delta) > EPSILON else 0.0)


def metric_rows(name: str, old: Recorded, new: Recorded) -> tuple[list[list[str]], int, int]:
    """(rows, metrics dropped, metrics improved) for one retriever present in both files."""
    rows: list[list[str]] = []
    dropped = improved = 0
    for label in sorted(set(old.metrics) | set(new.metrics), key=metric_order):
        before, after = old.metrics.get(label), new.metrics.get(label)
        if before is not None and after is not None:
            dropped += int(after < before - EPSILON)
            improved += int(after > before + EPSILON)
        rows.append([
            name,
            label,
            "-" if before is None else fmt(before),
            "-" if after is None else fmt(after),
            _delta_cell(before, after),
        ])
    return rows, dropped, improved


def retriever_line(name: str, only_in: Baseline, other: Baseline, verb: str) -> str:
    line = f"retriever {name!r}: {verb} (only in {display(only_in.path)})"
    if name in other.unavailable:
        line += f"; it could not run for {display(other.path)}: {other.unavailable[name]}"
    return line


def ranking_text(ranking: Sequence[str]) -> str:
    return ", ".join(ranking) if ranking else "(empty)"


def question_lines(name: str, label: str, old: Recorded, new: Recorded) -> list[str]:
    """Questions whose `label` value changed, worst drop first, with the rankings that scored it."""
    cutoff = metric_order(label)[1] or None
    changes = []
    for qid in sorted(set(old.questions) & set(new.questions)):
        before = old.questions[qid].metrics.get(label)
        after = new.questions[qid].metrics.get(label)
        if before is not None and after is not None and abs(after - before) > EPSILON:
            changes.append((after - before, qid, before, after))
    if not changes:
        return []
    lines = [f"{name} {label}:"]
    for delta, qid, before, after in sorted(changes):
        was = ranking_text(old.questions[qid].ranking[:cutoff])
        now = ranking_text(new.questions[qid].ranking[:cutoff])
        lines.append(f"  {qid}: {fmt(before)} -> {fmt(after)} ({signed(delta)})  [{was}] -> [{now}]")
    return lines


def question_set_lines(name: str, old: Recorded, new: Recorded) -> list[str]:
    lines = []
    for side, only in (("old", set(old.questions) - set(new.questions)), ("new", set(new.questions) - set(old.questions))):
        if only:
            lines.append(f"{name}: questions only in the {side} file: {', '.join(sorted(only))}")
    return lines


def per_question_lines(old: Baseline, new: Baseline, shared: Sequence[str]) -> list[str]:
    body: list[str] = []
    for name in shared:
        before, after = old.retrievers[name], new.retrievers[name]
        body.extend(question_set_lines(name, before, after))
        for label in sorted(set(before.metrics) & set(after.metrics), key=metric_order):
            body.extend(question_lines(name, label, before, after))
    return ["", "per-question changes, worst drop first:", *body] if body else []


def run_diff(old_path: str, new_path: str) -> Result:
    old, new = read(Path(old_path)), read(Path(new_path))
    lines = [f"old: {display(old.path)} (k={old.k})  new: {display(new.path)} (k={new.k})"]
    lines.extend(fingerprint_lines(old, new))
    comparable = len(lines) == 1
    shared = sorted(set(old.retrievers) & set(new.retrievers))
    rows: list[list[str]] = []
    dropped = improved = 0
    for name in shared:
        more, down, up = metric_rows(name, old.retrievers[name], new.retrievers[name])
        rows.extend(more)
        dropped, improved = dropped + down, improved + up
    if rows:
        lines.extend(table(["retriever", "metric", "old", "new", "delta"], rows))
    for name in sorted(set(new.retrievers) - set(old.retrievers)):
        lines.append(retriever_line(name, new, old, "added"))
    for name in sorted(set(old.retrievers) - set(new.retrievers)):
        lines.append(retriever_line(name, old, new, "removed"))
    lines.extend(per_question_lines(old, new, shared))
    verdict = f"{dropped} metric{'s' if dropped != 1 else ''} dropped, {improved} improved"
    lines.append(verdict if comparable else verdict + "; not comparable: the fingerprints differ")
    return Result(out=lines, code=OK if comparable and not dropped else FAILED)


# command line


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def build_parser() -> Parser:
    common = Parser(add_help=False)
    common.add_argument(
        "--config", metavar="PATH", default=argparse.SUPPRESS,
        help="TOML file with the settings at top level (default: [tool.ragretrieval] of ./pyproject.toml)",
    )
    parser = Parser(
        prog=PROG, description="Labelling and review helpers for pytest-ragretrieval.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", metavar="PATH", default=None, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    find = commands.add_parser(
        "find", parents=[common], help="list chunks whose text contains KEYWORD (for labelling)",
        description="Print `id<TAB>first 40 characters` of every chunk containing KEYWORD, in corpus order. "
        "ASCII letters match either case; other characters (CJK, full-width) must match exactly.",
    )
    find.add_argument("keyword", metavar="KEYWORD")
    suspects = commands.add_parser(
        "suspects", parents=[common], help="list top-k chunks no label covers: candidates for missing labels",
        description="List chunks that any retriever ranked in its top k but the eval set does not label "
        "for that question (grade 0 counts as judged), most retrievers first. RESULTS is a file written "
        "by `pytest --rag-eval --rag-json RESULTS`. Exit 0 whether or not there are suspects.",
    )
    suspects.add_argument("results", metavar="RESULTS.json")
    suspects.add_argument("--k", type=positive, default=None, metavar="N", help="cutoff (default: the results' k)")
    diff = commands.add_parser(
        "diff", parents=[common], help="compare two results files, metric by metric and question by question",
        description="Compare two results or baseline files. Exit 0 when they are comparable and no metric "
        "dropped, 1 when a metric dropped or the fingerprints differ, 2 on errors. --config is not read.",
    )
    diff.add_argument("old", metavar="OLD.json")
    diff.add_argument("new", metavar="NEW.json")
    return parser


def dispatch(args: argparse.Namespace) -> Result:
    if args.command == "diff":
        return run_diff(args.old, args.new)
    config = load_config(args.config, Path.cwd())
    if args.command == "find":
        return run_find(config, args.keyword)
    return run_suspects(config, args.results, args.k)


def emit(result: Result) -> int:
    for line in result.out:
        print(line)
    for line in result.err:
        print(line, file=sys.stderr)
    sys.stdout.flush()
    return result.code


def main(argv: list[str] | None = None) -> int:
    """Run one command; every error is one `ragretrieval: error: ...` line and exit status 2."""
    try:
        return emit(dispatch(build_parser().parse_args(argv)))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else OK
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return FAILED
    except ConfigError as exc:
        message = str(exc).replace("--rag-config PATH", "--config PATH")
    except (UsageError, RagError) as exc:
        message = str(exc)
    except OSError as exc:
        message = f"{display(Path(exc.filename))}: {exc.strerror}" if exc.filename else str(exc)
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return USAGE
