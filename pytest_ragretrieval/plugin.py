"""pytest glue: options, collection of the gate's items and the hooks that hand off to RagSession.

Nothing heavy is imported unless `--rag-eval` or `--rag-update-baseline` is given.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .core.errors import one_of
from .glue.rootdir import add_shard_option, option_problem
from .report import formats

if TYPE_CHECKING:
    from .core.signals import Watch
    from .gate.items import ItemKey
    from .glue.session import RagSession
    from .record.types import Verdict

SESSION: pytest.StashKey[RagSession] = pytest.StashKey()
WATCH: pytest.StashKey[Watch] = pytest.StashKey()
INTERRUPTED: pytest.StashKey[bool] = pytest.StashKey()
"""The run was interrupted before its results: the rag section says only that."""
SAID: pytest.StashKey[bool] = pytest.StashKey()
"""The rag section holds the line that says the run was interrupted."""
FINISHING: pytest.StashKey[pytest.Session] = pytest.StashKey()
"""The session once the gate writes its results: a signal from then on is held (core/signals.py)."""
STOPPED = "rag: interrupted: no results, reports or baseline written"
WORKER_VERDICTS: pytest.StashKey[dict[str, Verdict]] = pytest.StashKey()
VERDICTS_INPUT, ITEMS_INPUT, SOURCE_INPUT = "rag_eval_verdicts", "rag_eval_items", "rag_eval_source"
"""What a pytest-xdist worker gets from its controller (workerinput): where the verdicts will be, the items."""


@dataclass(frozen=True)
class Gate:
    """What collecting the gate's items needs: their keys, and the config file they are reported against."""

    keys: tuple[ItemKey, ...]
    source: Path


GATE: pytest.StashKey[Gate] = pytest.StashKey()
GATE_ONLY: pytest.StashKey[bool] = pytest.StashKey()
MARKER = "rag_eval"
DECISIONS = 4096
"""How many ways of a mark expression's names being true or false `gate_only` tries before it gives up
and lets pytest collect (no hand-written `-m` comes near: it grows with the names the expression holds)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragretrieval", "retrieval evaluation gate (pytest-ragretrieval)")
    group.addoption("--rag-eval", action="store_true", dest="rag_eval", default=False,
                    help="run the retrieval gate: one item per retriever x metric, failing below the baseline")
    group.addoption("--rag-update-baseline", action="store_true", dest="rag_update_baseline", default=False,
                    help="run the selected retrievers and record their values as the new baseline")
    group.addoption("--rag-config", action="store", dest="rag_config", default=None, metavar="PATH",
                    help="TOML file with the [tool.ragretrieval] keys at top level (default: pyproject.toml)")
    group.addoption("--rag-json", action="store", dest="rag_json", default=None, metavar="PATH",
                    help="write this run's results, in the baseline's format, to PATH")
    for fmt in formats.FORMATS.usable().values():  # a broken extension fails the gate, not every run
        group.addoption(fmt.flag, action="store", dest=fmt.dest, default=None, metavar="PATH", help=fmt.help)
    group.addoption("--rag-db", action="store", dest="rag_db", default=None,
                    type=one_of("auto", "docker", "embedded", "url"),
                    help="database for vector retrievers: auto, docker, embedded or url "
                    "(default: the config's db, else auto)")
    group.addoption("--rag-db-url", action="store", dest="rag_db_url", default=None, metavar="DSN",
                    help="server for --rag-db=url (default: $RAG_EVAL_DATABASE_URL)")
    group.addoption("--rag-cache", action="store", dest="rag_cache", default="readwrite",
                    type=one_of("readwrite", "readonly", "off"),
                    help="embedding and rerank cache: readwrite, readonly (a miss is an error: CI without keys) or off")
    group.addoption("--rag-no-reuse", action="store_true", dest="rag_no_reuse", default=False,
                    help="run every retriever, even one whose inputs are all unchanged since its cached run "
                    "(measures latency every time)")
    group.addoption("--rag-allow-regression", action="store_true", dest="rag_allow_regression", default=False,
                    help="with --rag-update-baseline, record values lower than the baseline's")
    add_shard_option(group)
    group.addoption("--rag-tags", action="store_true", dest="rag_tags", default=False,
                    help="print every row of the per-tag table (default: only the tags whose values moved)")


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """`--rag-json /abs/x.json` moved pytest's rootdir (glue/rootdir.py): one line before anything runs."""
    from _pytest.config.findpaths import determine_setup

    from .glue.rootdir import rootdir_problem

    problem = rootdir_problem(args, functools.partial(parser.parse_known_args, args), determine_setup,
                              early_config.invocation_params.dir, early_config.rootpath)
    if problem is not None:
        raise pytest.UsageError(problem)


def _path(value: str | None) -> Path | None:
    """An output path made absolute now, so a later chdir cannot move it (a symbolic link stays one:
    it is written through); checked by the session."""
    return None if value is None else Path(os.path.abspath(value))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: an item of the retrieval gate (pytest-ragretrieval)")
    option = config.option
    if (problem := option_problem(option)) is not None:
        raise pytest.UsageError(problem)
    if not (option.rag_eval or option.rag_update_baseline):
        return
    workerinput = getattr(config, "workerinput", {})
    config.stash[GATE_ONLY] = gate_only(option.markexpr)
    if VERDICTS_INPUT in workerinput:  # a pytest-xdist worker: it loads nothing, the controller judges
        from .gate.items import ItemKey

        keys = tuple(ItemKey(*key) for key in workerinput[ITEMS_INPUT])
        config.stash[GATE] = Gate(keys, Path(workerinput[SOURCE_INPUT]))
        return
    from .core.errors import RagError
    from .core.signals import Watch

    watch = Watch(pytest.Session.Interrupted)  # pytest shows it as one line, without a source location
    watch.start()  # before the config is read: a `python` chunker runs then
    config.stash[WATCH] = watch
    try:
        known = list(formats.FORMATS.values())
    except RagError as exc:
        raise pytest.UsageError(str(exc)) from None
    reports = {fmt.name: path for fmt in known if (path := _path(getattr(option, fmt.dest))) is not None}
    json_path = _path(option.rag_json)
    outputs = {"--rag-json": json_path} if json_path is not None else {}
    outputs.update((fmt.flag, reports[fmt.name]) for fmt in known if fmt.name in reports)
    from .glue.session import Options, RagSession

    options = Options(
        rootpath=config.rootpath, config_path=option.rag_config, update=option.rag_update_baseline,
        json_path=json_path, reports=reports, outputs=outputs, db=option.rag_db, db_url=option.rag_db_url,
        cache_mode=option.rag_cache, reuse=not option.rag_no_reuse, allow_regression=option.rag_allow_regression,
        every_tag=option.rag_tags,
        shard=option.rag_shard)
    session = RagSession(options)
    try:
        session.load()
    except RagError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SESSION] = session
    config.stash[GATE] = Gate(tuple(session.item_keys()), session.config.source)
    if config.pluginmanager.hasplugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Controller(config.stash[GATE]), "ragretrieval-controller")


class Marks:
    """An item without the gate's mark, as an expression's matcher sees it: the marks `fixed` true or
    false, any other false, and each such other name read, in order."""

    def __init__(self, fixed: dict[tuple[object, ...], bool]) -> None:
        self.fixed = fixed
        self.read: list[tuple[object, ...]] = []

    def __call__(self, name: str, /, **kwargs: str | int | bool | None) -> bool:
        if name == MARKER:  # with or without arguments: an item that lacks the mark matches neither
            return False
        key = (name, *sorted(kwargs.items()))
        if key not in self.fixed:
            self.read.append(key)
        return self.fixed.get(key, False)

    def branches(self) -> list[dict[tuple[object, ...], bool]]:
        """Every other way the names read could have gone: the first i as read, the next one true."""
        return [{**self.fixed, **dict.fromkeys(self.read[:i], False), key: True} for i, key in enumerate(self.read)]


def gate_only(markexpr: str) -> bool:
    """Whether `-m`'s expression selects no item that lacks the gate's mark, whatever other marks that
    item carries (docs/getting-started.md, "Only the gate's items"): then collecting the test files would
    only deselect every test in them. Each way the expression's names can be true or false is tried, the
    gate's mark false, as a decision tree: a name is branched on only where the evaluation reads it."""
    from _pytest.mark.expression import Expression

    if not markexpr.strip():
        return False
    try:
        expression = Expression.compile(markexpr)
    except SyntaxError:  # pytest names the fault when it selects
        return False
    pending: list[dict[tuple[object, ...], bool]] = [{}]
    for _ in range(DECISIONS):
        if not pending:
            return True
        marks = Marks(pending.pop())
        if expression.evaluate(marks):
            return False
        pending.extend(marks.branches())
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A gate-only run collects no file: the gate's items are built, not found in files (`gate_only`)."""
    return True if config.stash.get(GATE_ONLY, False) else None


def pytest_report_header(config: pytest.Config) -> list[str]:
    session = config.stash.get(SESSION, None)
    return session.header_lines() if session is not None else []


class Controller:
    """pytest-xdist's controller runs and judges the gate while the workers start; they only report
    the verdicts it hands them in a file, so `-n N` costs the gate nothing and no worker starts a
    database. Registered only where pytest-xdist is installed: its hooks exist only there."""

    def __init__(self, gate: Gate) -> None:
        from .glue.xdist_folder import VerdictsFolder

        self.gate = gate
        self.folder = VerdictsFolder()

    @property
    def path(self) -> Path:
        return self.folder.file()

    def pytest_configure_node(self, node: Any) -> None:
        """The items' keys and source travel with the worker's start, so it reads no file of the gate's."""
        node.workerinput[VERDICTS_INPUT] = str(self.path)
        node.workerinput[ITEMS_INPUT] = [[key.retriever, key.kind, key.name] for key in self.gate.keys]
        node.workerinput[SOURCE_INPUT] = str(self.gate.source)

    def pytest_unconfigure(self) -> None:
        self.folder.remove()


class RagFailure(Exception):
    """The gate's verdict: reported as its own lines, never as a traceback."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        super().__init__(lines[0])
        self.lines = lines


class RagItem(pytest.Item):
    def __init__(self, *, key: ItemKey, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.key = key
        self.add_marker(MARKER)

    def runtest(self) -> None:
        from .record.types import Status

        verdict = _verdict(self.config, self.key)
        self.user_properties.extend(verdict.properties)
        if verdict.status == Status.SKIPPED:
            pytest.skip(verdict.lines[0])
        if verdict.status == Status.FAILED:
            raise RagFailure(verdict.lines)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, RagFailure):
            return "\n".join(excinfo.value.lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        """The node id as the domain, plus a space: pytest shows a domain that ends the node id with its
        '.' turned into '::' (for Python's dotted names), which would print `q1.2` as `q1::2`."""
        return self.config.stash[GATE].source, None, self.nodeid + " "


class RetrieverNode(pytest.Collector):
    def __init__(self, *, keys: list[ItemKey], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.keys = keys

    def collect(self) -> Iterator[RagItem]:
        for key in self.keys:
            yield RagItem.from_parent(self, name=key.nodeid_name, key=key)


class RagNode(pytest.Collector):
    def collect(self) -> Iterator[RetrieverNode]:
        keys = self.config.stash[GATE].keys
        for name in dict.fromkeys(key.retriever for key in keys):
            yield RetrieverNode.from_parent(self, name=name, keys=[k for k in keys if k.retriever == name])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the gate's items first, so that -k and -m (which run after) select among them."""
    if GATE not in config.stash:
        return
    root = RagNode.from_parent(session, name="rag", nodeid="rag")
    items[:0] = list(session.genitems(root))


def pytest_collection_finish(session: pytest.Session) -> None:
    rag = session.config.stash.get(SESSION, None)
    if rag is not None:
        rag.select([item.key for item in session.items if isinstance(item, RagItem)])


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    """Run the selected retrievers before the first item, outside output capture, with progress."""
    rag = session.config.stash.get(SESSION, None)
    worker = hasattr(session.config, "workerinput")  # a worker reports the controller's verdicts
    if rag is not None and not session.config.option.collectonly and not worker:
        controller = session.config.pluginmanager.get_plugin("ragretrieval-controller")
        if controller is not None and session.config.pluginmanager.has_plugin("dsession"):
            _judge_for_workers(session, rag, controller.path)
        else:
            rag.prepare(_output(session.config))
    return (yield)


def _judge_for_workers(session: pytest.Session, rag: RagSession, path: Path) -> None:
    """The controller collects no files: it builds the gate's items itself, lets every other plugin
    select among them (-k, -m, --deselect) as a worker's collection would, runs and judges them,
    and writes the verdicts before the first item is sent to a worker."""
    from .record.codec import write_verdicts

    root = RagNode.from_parent(session, name="rag", nodeid="rag")
    items: list[pytest.Item] = [item for node in root.collect() for item in node.collect()]
    others = session.config.pluginmanager.subset_hook_caller(
        "pytest_collection_modifyitems", remove_plugins=[sys.modules[__name__]]
    )
    others(session=session, config=session.config, items=items)
    keys = [item.key for item in items if isinstance(item, RagItem)]
    rag.select(keys)
    rag.prepare(_output(session.config))
    write_verdicts(path, {key.nodeid: rag.verdict(key) for key in keys})


def _verdict(config: pytest.Config, key: ItemKey) -> Verdict:
    """This process's own verdict, or on a pytest-xdist worker the one its controller wrote."""
    workerinput = getattr(config, "workerinput", {})
    if VERDICTS_INPUT not in workerinput:
        return config.stash[SESSION].verdict(key)
    from .record.codec import read_verdicts
    from .record.types import Status, Verdict

    if WORKER_VERDICTS not in config.stash:
        config.stash[WORKER_VERDICTS] = read_verdicts(Path(workerinput[VERDICTS_INPUT]))
    found = config.stash[WORKER_VERDICTS].get(key.nodeid)
    if found is None:
        return Verdict(Status.FAILED, (
            f"{key.nodeid} was selected on this worker but not by pytest-xdist's controller, which judged the "
            "gate; a plugin selects items differently there: run the gate without -n",
        ))
    return found


def _output(config: pytest.Config) -> Any:
    from .core.progress import CallbackOutput, PlainOutput

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return PlainOutput()
    reporter.ensure_newline()
    return CallbackOutput(
        write=reporter.write_line,
        redraw=lambda text: reporter.rewrite(text, erase=True),
        isatty=reporter.isatty,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The results written; from here on a signal is held (core/signals.py), so they are written whole,
    and the run still ends as interrupted, with its line."""
    rag = session.config.stash.get(SESSION, None)
    if rag is None:
        return
    watch = session.config.stash[WATCH]
    watch.hold()
    session.config.stash[FINISHING] = session
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        session.config.stash[INTERRUPTED] = session.config.stash[SAID] = True
        rag.update_lines.append(STOPPED)
        return
    from .core.errors import RagError

    try:
        rag.finish()
    except RagError as exc:
        rag.update_lines.append(f"rag: error: {exc}")
    if watch.received is not None:
        rag.update_lines.append(_held_line(watch.received, "while"))
        session.config.stash[SAID] = True
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    elif (rag.write_failed or rag.failed_lines) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    watch.end(functools.partial(_end_now, session.config))


def _end_now(config: pytest.Config, received: str) -> None:
    """A signal after the results were written (another plugin's hook, the summary): the cleanup and the
    plugin's line (`pytest_unconfigure`), then the process ends at once, interrupted; unwinding through
    pytest from here would print a traceback."""
    pytest_unconfigure(config)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(pytest.ExitCode.INTERRUPTED)


def _held_line(received: str, when: str) -> str:
    return (f"rag: interrupted ({received}) {when} the results were written: what was written is whole; "
            "the run ends as interrupted")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    rag = terminalreporter.config.stash.get(SESSION, None)
    if rag is None or not rag.runs and not rag.update_lines:
        return
    from .core.errors import RagError

    _count_inconclusive(terminalreporter)
    terminalreporter.section("rag retrieval")
    if terminalreporter.config.stash.get(INTERRUPTED, False):
        for line in rag.update_lines:
            terminalreporter.write_line(line)
        return
    try:
        lines = rag.summary_lines(terminalreporter.config.get_terminal_writer().fullwidth)
    except RagError as exc:
        lines = [f"rag: error: {exc}"]
    for line in lines:
        terminalreporter.write_line(line)
    for line in rag.annotations:
        terminalreporter.write_line(line)


def _count_inconclusive(terminalreporter: Any) -> None:
    """pytest's last line counts the inconclusive items beside the passed (or, under `inconclusive = "fail"`,
    failed) ones they stay among: `5 passed, 2 inconclusive`. Each is a passed test with a property
    (`rag_outcome`), never a skip or an xfail."""
    found = [report for status in ("passed", "failed") for report in terminalreporter.stats.get(status, ())
             if getattr(report, "when", "") == "call" and ("rag_outcome", "inconclusive") in report.user_properties]
    if found:
        terminalreporter.stats["inconclusive"] = found


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the server, drop the schema, remove the container: a second Ctrl-C or SIGTERM cannot cut this
    short. A signal the summary could not report (it came before the session started, or after the
    summary) is the plugin's one line here, and the run's exit status says interrupted."""
    watch = config.stash.get(WATCH, None)
    if watch is None:
        return
    watch.hold()
    rag = config.stash.get(SESSION, None)
    from .core.errors import RagError

    try:
        if rag is not None:
            rag.close()
    except RagError as exc:  # a url server gone mid-run: one line after the summary, never a traceback
        print(f"rag: error: {exc}", file=sys.stderr)
    session = config.stash.get(FINISHING, None)
    if watch.received is not None and not config.stash.get(SAID, False):
        config.stash[SAID] = True
        print(STOPPED if session is None else _held_line(watch.received, "after"), file=sys.stderr)
        if session is not None:
            session.exitstatus = pytest.ExitCode.INTERRUPTED
    watch.stop()
