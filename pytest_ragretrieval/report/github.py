"""GitHub Actions output: the job summary's Markdown and one `::error` workflow command per failure."""
from __future__ import annotations

import os

from ..record.report import Failure, ReportInput
from .markdown import (
    changes_section,
    code,
    conclusions_section,
    esc,
    failures_section,
    metrics_section,
    tags_section,
)
from .wording import RESULT, TITLE, aside, colon, say, unavailable, verdict

SUMMARY_CHANGES = 10
"""Questions listed per retriever and direction in the job summary; the full report lists them all."""


def step_summary(data: ReportInput) -> str:
    """The Markdown to append to `$GITHUB_STEP_SUMMARY`.

    Shorter than `render_markdown`: what a reviewer needs on the run page (verdict, metrics with
    deltas and significance, per-tag tables, the questions that moved, the failures). The full
    configuration, diagnostics and no-answer listing stay in the `--rag-report` artifact, and the
    question lists are cut at SUMMARY_CHANGES so a large eval set stays well under GitHub's 1 MiB
    per-step summary limit.
    """
    language = data.language
    comparable = say(language, ("可比", "comparable") if data.comparable else
                     ("不可比或不存在", "missing or not comparable"))
    where = esc(data.baseline_path or "—")
    baseline = f"{say(language, ('基线', 'baseline'))} {where}{aside(language, comparable)}"
    absent = unavailable(data, code, esc)  # a missing CI secret shows at the top of the run's page
    result = verdict(data) + (f"; {absent}" if absent else "")
    header = [f"# {say(language, TITLE)}", "", f"{say(language, RESULT)}{colon(language)}{result}", "",
              f"k = {data.k} · {len(data.questions)} {say(language, ('题', 'questions'))} · {baseline}"]
    if data.notes or data.info:
        header += ["", *(f"- ⚠️ {esc(note)}" for note in data.notes),
                   *(f"- ℹ️ {esc(note)}" for note in data.info)]
    sections = [header, metrics_section(data), conclusions_section(data), tags_section(data),
                changes_section(data, SUMMARY_CHANGES),
                failures_section(data)]
    return "\n\n".join("\n".join(section) for section in sections) + "\n"


def escape_data(text: str) -> str:
    """A workflow command's message, per GitHub's rules: %, CR and LF are percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: the message rules plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def title(failure: Failure) -> str:
    subject = " ".join(part for part in (failure.retriever, failure.metric) if part)
    return f"rag: {subject or failure.nodeid}"


def annotation(failure: Failure, baseline_path: str) -> str:
    """One `::error` line; `file=` points at the baseline so the annotation lands on a file."""
    properties = [f"file={escape_property(baseline_path)}"] if baseline_path else []
    properties.append(f"title={escape_property(title(failure))}")
    return f"::error {','.join(properties)}::{escape_data(failure.message or failure.nodeid)}"


def error_annotations(data: ReportInput) -> list[str]:
    return [annotation(failure, data.baseline_path) for failure in data.failures]


def append_summary(data: ReportInput) -> str | None:
    """Append the step summary to `$GITHUB_STEP_SUMMARY` (when set); a warning line when that fails.

    The summary is a convenience: a missing folder or a full disk there never changes the verdict.
    """
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if not summary:
        return None
    try:
        with open(summary, "a", encoding="utf-8") as stream:
            stream.write(step_summary(data) + "\n")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return f"rag: warning: could not append the step summary to $GITHUB_STEP_SUMMARY ({summary}): {reason}"
    return None
