"""The sticky pull-request comment: what a reviewer needs, in the conversation, under GitHub's size limit.

The same content as the job summary, rendered with the Markdown report's own sections: the
verdicts, the metrics table with deltas (and significance), the failures with their worst
questions; then the baseline's changes against the base branch, the comparisons between
configurations when the results hold them, the approval (what the label approved, and what it
does not cover), and links to the reports. The first line is the hidden marker the workflow
finds its earlier comment by, so one comment is edited on every push; the second, where the
label approved a set, is the hidden record of that approval (`approved.py`), which later runs read.
GitHub refuses a body over 65,536 characters: `render` cuts the question lists first, then the
change lists, each with a note saying how many lines the report artifact holds.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..bar.units import UNIT_ONLY
from ..core.values import fmt, p_value, signed
from ..record.report import Failure, ReportInput
from ..report.markdown import code, esc, failures_section, metrics_section, table
from ..report.wording import TITLE, colon, format_ci, heading, say, unavailable, verdict
from .approval import Decision, what_lowered
from .approved import record_line, reopened
from .changes import Changes, Entry, SettingChange, ValueChange
from .sweep import Sweep, sweep_line
from .today import NAMED, SIDE

MARKER = "<!-- pytest-ragretrieval -->"
LIMIT = 65_536
"""GitHub's limit on a comment body. Counted here in UTF-8 bytes, never fewer than characters
however GitHub counts them, so a CJK-heavy comment is cut a little early, never refused."""
OWN_BASELINE = ("基线为本 PR 中的基线", "the baseline is the one in this pull request; its changes against the "
                "base branch are listed under Baseline changes.")
STEPS = (None, 10, 5, 3, 1, 0)
"""Cuts tried in turn: every line, then at most this many per list."""
HEADING = re.compile(r"^#{1,5} ")


@dataclass(frozen=True)
class CommentInput:
    report: ReportInput | None  # None: the gate wrote no results
    failures_recorded: bool  # False: a results file written before the plugin recorded its failures
    gate_outcome: str = ""  # the gate step's outcome as the workflow saw it: success, failure or ""
    changes: Changes | None = None
    decision: Decision | None = None
    artifact_url: str = ""
    run_url: str = ""
    sweep: Sweep | None = None
    """The record of the sweep behind the settings (`ragretrieval tune --record`): named, never judged."""

    @property
    def language(self) -> str:
        """The results' `report_language`; when the gate wrote none, the one `diff` read from the config."""
        if self.report is not None:
            return self.report.language
        return self.changes.language if self.changes is not None else "both"


def _demote(lines: Sequence[str]) -> list[str]:
    """The report's `##` sections one level down, under the comment's `##` title."""
    return ["#" + line if HEADING.match(line) else line for line in lines]


def _cut(lines: Sequence[str], limit: int | None, unit: tuple[str, str], language: str) -> list[str]:
    """At most `limit` lines, then one saying how many the report artifact still holds."""
    if limit is None or len(lines) <= limit:
        return list(lines)
    rest = len(lines) - limit
    more = say(language, (f"另有 {rest} {unit[0]}", f"{rest} more {unit[1]} in the report artifact"))
    return [*lines[:limit], "…" + more]


def _more(total: int, shown: int, language: str) -> list[str]:
    rest = total - shown
    return ["", "…" + say(language, (f"另有 {rest} 项", f"{rest} more in the report artifact"))] if rest else []


def gate_line(data: CommentInput) -> str:
    if data.report is not None and data.failures_recorded:
        return verdict(data.report)
    if data.gate_outcome == "success":
        return "✅ " + say(data.language, ("通过", "passed"))
    if data.gate_outcome == "failure":
        return "❌ " + say(data.language, ("未通过", "failed (see the job log)"))
    return "— " + say(data.language, ("未知", "unknown"))


def baseline_line(changes: Changes | None, decision: Decision | None, language: str = "both") -> str:
    if changes is None or (decision is not None and decision.check == "skipped"):
        return "— " + say(language, ("未与目标分支比较", "not compared with a base branch"))
    better = len(changes.raised) + len(changes.added) + len(changes.tightened)
    if not changes.lowers_the_bar:
        return "✅ " + say(language, ("未降低", "not lowered")) + (f" ({better} improvements)" if better else "")
    lowered = f"lowered ({what_lowered(changes)})"
    if decision is None:
        return "❌ " + say(language, ("降低", f"{lowered}: the pull-request check needs the approval label"))
    label = f"{code(decision.label)}"
    at = f" at {code(decision.approval.at)}" if decision.approval is not None else ""
    if decision.check == "approved":
        return "⚠️ " + say(language, ("已批准降低", f"{lowered}, approved with the label {label}{at}"))
    given_for = reopened(decision.approval, changes) if decision.approval is not None else ""
    if decision.failed and given_for:
        return "❌ " + say(language, ("批准失效", f"{lowered}: the approval{at} was given for {esc(given_for)}: a "
                                     f"maintainer who approves the lower bar applies the label {label} again"))
    if decision.review.unapproved:
        beyond = f"beyond what was approved{at}" if at else "and no recorded approval covers it"
        return "❌ " + say(language, ("超出批准", f"lowered {beyond} ({len(decision.review.unapproved)} not approved): "
                                     f"a maintainer who approves them applies the label {label} again"))
    return "❌ " + say(language, ("降低且无标签", f"{lowered} without the label {label}: "
                                 "a maintainer who approves the lower bar adds it"))


def header(data: CommentInput) -> list[str]:
    record = [] if data.decision is None or data.decision.approval is None else [record_line(data.decision.approval)]
    language = data.language
    absent = unavailable(data.report, code, esc) if data.report is not None else ""
    gate = gate_line(data) + (f"; {absent}" if absent else "")
    return [MARKER, *record, f"## {say(language, TITLE)}", "",
            f"- **{say(language, ('门禁', 'gate'))}**{colon(language)}{gate}",
            f"- **{say(language, ('基线', 'baseline'))}**{colon(language)}"
            f"{baseline_line(data.changes, data.decision, language)}"]


def results_sections(data: CommentInput, limit: int | None) -> list[list[str]]:
    """The Markdown report's metrics and failures sections, the failures' detail lines cut to `limit`."""
    language = data.language
    if data.report is None:
        return [[f"### {heading(language, 'metrics')}", "", say(language, (
            "门禁没有写出结果", "the gate wrote no results (it stopped before any retriever ran): see the job log"))]]
    metrics = _demote(metrics_section(replace(data.report, pairs=())))  # the pairs: `comparisons_section`, cut to fit
    if data.changes is not None and any(view.comparisons for view in data.report.retrievers):
        metrics += ["", say(language, OWN_BASELINE)]
    if not data.report.failures:
        return [metrics]
    cut = tuple(replace(failure, message=_cut_message(failure, limit, language)) for failure in data.report.failures)
    return [metrics, _demote(failures_section(replace(data.report, failures=cut)))]


def _cut_message(failure: Failure, limit: int | None, language: str) -> str:
    summary, *details = failure.message.split("\n")
    return "\n".join([summary, *_cut([line for line in details if line.strip()], limit, ("行", "lines"), language)])


def _values_table(changes: Sequence[ValueChange], limit: int | None, language: str) -> list[str]:
    shown = list(changes) if limit is None else list(changes)[:limit]
    rows = [[esc(c.retriever), esc(c.tag), esc(c.metric) + (f", {esc(c.scope.partition(':')[0])}" if c.scope else "")
             + (f", {say(language, ('分段', 'segment'))} {esc(c.segment)}" if c.segment else "")
             + (f", {NAMED}" if c.side == SIDE else ""),
             fmt(c.old), fmt(c.new), signed(c.delta)] for c in shown]
    headers = ["retriever", "tag", "metric", "base", "this PR", "delta"]
    if not any(c.tag for c in changes):
        headers, rows = [headers[0], *headers[2:]], [[row[0], *row[2:]] for row in rows]
    return table(headers, rows, numeric=3) + _more(len(changes), len(shown), language)


def _entry(entry: Entry) -> str:
    if entry.retriever and entry.metric:
        what = f"{esc(entry.metric)} of {code(entry.retriever)}"
    else:
        what = f"retriever {code(entry.retriever)}" if entry.retriever else f"{esc(entry.metric)} (every retriever)"
    return f"- {what}: {esc(entry.reason)}"


def _setting(change: SettingChange) -> str:
    of = f" of {esc(change.subject)}" if change.subject else ""
    return f"- {code(change.setting)}{of}: {esc(change.old)} → {esc(change.new)}"


def _block(title: str, count: int, body: list[str]) -> list[str]:
    return ["", f"**{title} ({count})**", "", *body]


def _lowering(changes: Changes, limit: int | None, language: str) -> list[str]:
    lines: list[str] = []
    if changes.unreadable:
        lines += _block("⛔ " + say(language, ("无法读取", "the base cannot be read")), len(changes.unreadable),
                        [f"- {esc(why)}" for why in changes.unreadable])
    real = [change for change in changes.lowered if change.unit != UNIT_ONLY]
    unit = [change for change in changes.lowered if change.unit == UNIT_ONLY]
    if real:
        title = ("降低（真实下降）", "lowered: real drops") if changes.unit_counts else ("降低", "lowered")
        lines += _block("⬇️ " + say(language, title), len(real), _values_table(real, limit, language))
    if unit:
        title = ("降低（仅因切块单位变化）", "lowered only by the changed unit (unit-only: split gold chunks, "
                 "reproduced through the relabel's mapping)")
        lines += _block("✂️ " + say(language, title), len(unit), _values_table(unit, limit, language))
    if changes.removed:
        lines += _block("🗑️ " + say(language, ("移除", "removed")), len(changes.removed),
                        _cut([_entry(e) for e in changes.removed], limit, ("项", "entries"), language))
    if changes.loosened:
        lines += _block("🔓 " + say(language, ("放宽", "loosened")), len(changes.loosened),
                        [_setting(s) for s in changes.loosened])
    if changes.lost_hits:
        hits = [f"- {esc(h.question)} of {code(h.retriever)}" for h in changes.lost_hits]
        lines += _block("❓ " + say(language, ("不再命中", 'no longer a hit within k (`fail_on = ["question"]`)')),
                        len(hits), _cut(hits, limit, ("题", "questions"), language))
    return lines


def _improvements(changes: Changes, limit: int | None, language: str) -> list[str]:
    body: list[str] = []
    if changes.raised:
        body += _block("⬆️ " + say(language, ("提高", "raised")), len(changes.raised),
                       _values_table(changes.raised, limit, language))
    if changes.added:
        body += _block("🆕 " + say(language, ("新增", "added")), len(changes.added),
                       _cut([_entry(e) for e in changes.added], limit, ("项", "entries"), language))
    if changes.tightened:
        body += _block("🔒 " + say(language, ("收紧", "tightened")), len(changes.tightened),
                       [_setting(s) for s in changes.tightened])
    if not body:
        return []
    better = len(changes.raised) + len(changes.added) + len(changes.tightened)
    summary = say(language, ("改进", f"improvements ({better})"))
    return ["", f"<details><summary>{summary}</summary>", *body, "", "</details>"]


def changes_section(changes: Changes | None, limit: int | None, language: str = "both") -> list[str]:
    """The baseline's changes against the base branch: what lowers the bar in full, the rest folded."""
    if changes is None:
        return []
    against = f"{code(changes.old_path)}" if changes.old_path else "the base branch (no baseline there yet)"
    lines = ["### " + say(language, ("基线变化", f"Baseline changes against {against}"))]
    info = [f"- ℹ️ {esc(note)}" for note in changes.notes]
    if changes.yardstick:
        paths = "; ".join(f"{code(p)}" for p in changes.yardstick)
        info.append(f"- ⚠️ yardstick changed ({paths}): the values measure something else and are compared as recorded")
    if changes.fingerprint:
        paths = "; ".join(f"{code(p)}" for p in changes.fingerprint)
        info.append(f"- ℹ️ compared across changes: {paths}")
    info += [f"- ℹ️ {esc(line)}" for line in changes.questions]
    if changes.unchanged:
        info.append("- " + say(language, ("无变化", "the baseline and the gate's settings are unchanged")))
    if info:
        lines += ["", *info]
    lines += _lowering(changes, limit, language) + _improvements(changes, limit, language)
    tags = [*changes.tags_lowered, *changes.tags_raised]
    if tags:
        summary = say(language, ("分标签", f"per-tag values, not gated ({len(changes.tags_lowered)} lower, "
                                          f"{len(changes.tags_raised)} higher)"))
        lines += ["", f"<details><summary>{summary}</summary>", "", *_values_table(tags, limit, language), "",
                  "</details>"]
    return lines


def sweep_section(sweep: Sweep | None, language: str = "both") -> list[str]:
    """The sweep's optimism where it left a record: informational, no verdict reads it."""
    if sweep is None:
        return []
    return ["### " + say(language, ("调参记录", "The sweep behind these settings")), "",
            f"- ℹ️ {esc(sweep_line(sweep))}",
            "- ℹ️ " + say(language, ("仅供参考，不影响任何判定", "informational, no verdict reads it: the gate "
                                     "judges the tuned settings on its own questions, so expect the gate's gain, not "
                                     "the tune gain"))]


def comparisons_section(data: CommentInput, limit: int | None) -> list[str]:
    """The record's comparisons between configurations, as many as fit (`limit`), the rest counted."""
    comparisons = data.report.pairs if data.report is not None else ()
    if not comparisons:
        return []
    lines = ["### " + say(data.language, ("配置对比", "Comparisons between configurations")), ""]
    shown = comparisons if limit is None else comparisons[:limit]
    rows = []
    for c in shown:
        rows.append([f"{esc(c.a)} vs {esc(c.b)}", esc(c.metric), signed(c.delta), p_value(c.p_value),
                     format_ci(c.ci95), f"{c.wins}/{c.ties}/{c.losses}"])
    lines += table(["pair", "metric", "delta", "p", "95% CI", "win/tie/loss"], rows, numeric=4)
    return lines + _more(len(comparisons), len(shown), data.language)


def approval_section(decision: Decision | None, limit: int | None, language: str = "both") -> list[str]:
    """What the label approved (commit, digest) and the lowerings it covers and does not, listed apart."""
    if decision is None or (decision.approval is None and not decision.review.unapproved and not decision.note):
        return []
    lines = ["### " + say(language, ("批准", "Approval")), ""]
    if decision.approval is not None:
        approval = decision.approval
        label = say(language, ("标签", "label"))
        digest = code(approval.digest[:19])
        lines.append(f"- {label} {code(approval.label)} applied at {code(approval.at)} approved "
                     f"{approval.count} lowering{'' if approval.count == 1 else 's'} (digest {digest})")
    if decision.note:
        lines.append(f"- ℹ️ {esc(decision.note)}")
    if decision.unlabel:
        lines.append("- 🏷️ the action takes the label off: it does not cover what the pull request lowers now")
    for title, items in (("✅ " + say(language, ("已批准", "approved")), decision.review.approved),
                         ("❌ " + say(language, ("未批准", "not approved")), decision.review.unapproved)):
        if items:
            lines += _block(title, len(items),
                            _cut([f"- {esc(item)}" for item in items], limit, ("项", "entries"), language))
    return lines


def baseline_summary(changes: Changes | None, decision: Decision, language: str = "both") -> str:
    """The job summary's part for the baseline check: where the results go when no comment can. It
    carries the approval's hidden record too, so a run on a fork shows what its label approved."""
    record = [] if decision.approval is None else [record_line(decision.approval)]
    sections = [[*record, "## " + say(language, ("基线检查", "Baseline check")), "",
                 baseline_line(changes, decision, language)],
                changes_section(changes, 10, language), approval_section(decision, 10, language)]
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


def footer(data: CommentInput) -> list[str]:
    links = []
    if data.artifact_url:
        links.append(f"📦 [{say(data.language, ('完整报告', 'full report (Markdown + HTML)'))}]({data.artifact_url})")
    if data.run_url:
        links.append(f"[{say(data.language, ('运行记录', 'run'))}]({data.run_url})")
    return ["---", " · ".join(links)] if links else []


def _assemble(data: CommentInput, questions: int | None, entries: int | None) -> str:
    sections = [header(data), *results_sections(data, questions), sweep_section(data.sweep, data.language),
                changes_section(data.changes, entries, data.language),
                approval_section(data.decision, entries, data.language), comparisons_section(data, entries),
                footer(data)]
    return "\n\n".join("\n".join(section) for section in sections if section) + "\n"


def size(body: str) -> int:
    return len(body.encode("utf-8"))


def render(data: CommentInput, limit: int = LIMIT) -> str:
    """The comment's Markdown, marker first, at most `limit` bytes; the same input gives the same bytes.

    Question lists are cut first (every line, then 10, 5, 3, 1, none), then the lists of
    baseline changes; each cut says how many lines the report artifact still holds. A
    comment still too long after that (thousands of retrievers) is cut at a line with a note.
    """
    body = ""
    for questions, entries in [*((q, None) for q in STEPS), *((0, e) for e in STEPS[1:])]:
        body = _assemble(data, questions, entries)
        if size(body) <= limit:
            return body
    note = "\n\n…" + say(data.language, ("评论过长已截断",
                                     "comment cut at GitHub's size limit: the report artifact has everything")) + "\n"
    kept: list[str] = []
    used = size(note)
    for line in body.split("\n"):
        used += size(line) + 1
        if used > limit:
            break
        kept.append(line)
    return "\n".join(kept) + note
