"""The reports' shared wording and cell helpers: Markdown, HTML and the GitHub summary say the same thing."""
from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

from ..core.values import fmt, moved, signed
from ..record.report import QuestionView, ReportInput, RetrieverView
from ..record.types import Finding

LANGUAGES = ("both", "en")
"""`report_language`: each heading and label in Chinese then English (the default), or English alone."""
TITLE = ("RAG 检索层评估报告", "RAG retrieval evaluation report")
HEADINGS = {
    "configuration": ("评估配置", "Configuration"),
    "metrics": ("指标结果", "Metrics"),
    "significance": ("显著性", "Significance"),
    "since": ("与基线相比的变化", "Since the baseline"),
    "pairs": ("配置对比", "Comparisons"),
    "segments": ("分段", "Segments"),
    "conclusions": ("结论", "Conclusions"),
    "next": ("下一步", "Next steps"),
    "tags": ("分标签", "Per tag"),
    "diagnostics": ("诊断", "Diagnostics"),
    "changes": ("逐题升降", "Questions that changed"),
    "no-answer": ("无答案题", "No-answer questions"),
    "questions": ("逐题明细", "Per question"),
    "failures": ("失败项", "Failures"),
}
EMPTY = ("空", "empty")
NONE = ("无", "none")
NO_ANSWER_HINT = ("无答案题的正确结果是空列表", "for a no-answer question the right result is an empty list.")
DELTA_HINT = ("括号内为相对基线标准（已批准的排序，今日重新评分）的差值",
              "in brackets: the change against the bar (the approved rankings, scored today).")
LOADS = ("首题前的一次性加载，不计入延迟", "one-time loads before the first question, not in its latency")


def loads_line(views: Sequence[RetrieverView], language: str) -> str:
    """The one-time loads the retrievers did before the first question (`loads_ms`), or "" when none did."""
    found = [f"{view.name} {what} {ms:.1f} ms" for view in views if view.entry is not None
             and isinstance(view.entry.loads_ms, dict) for what, ms in view.entry.loads_ms.items()]
    return f"{say(language, LOADS)}: {', '.join(found)}" if found else ""
WARNINGS = ("注意", "Warnings")
NOTES = ("说明", "Notes")
DEFINITIONS = ("指标口径", "metrics")
RESULT = ("结果", "result")


MARKED = "marked"
"""The HTML page's "both": the Chinese of each phrase between ZH_OPEN and ZH_CLOSE, which the page turns
into a span it hides where no CJK font draws it (html.py), and ASCII punctuation, which every font has."""
ZH_OPEN, ZH_CLOSE = "\ue000", "\ue001"


def unmarked(language: str) -> str:
    """The language of text that cannot hold markup (an attribute, the page's title): MARKED is "both"."""
    return "both" if language == MARKED else language


def say(language: str, words: tuple[str, str]) -> str:
    """(Chinese, English) in the report's language: `中文 / English` in "both", the English alone in "en"."""
    zh, en = words
    if language == "en":
        return en
    if language == MARKED:
        return f"{ZH_OPEN}{zh} / {ZH_CLOSE}{en}"
    return f"{zh} / {en}"


def colon(language: str) -> str:
    """After a label: the full-width colon beside Chinese, `: ` otherwise."""
    return "：" if language == "both" else ": "


def aside(language: str, text: str) -> str:
    """`（text）` beside Chinese, ` (text)` otherwise."""
    return f"（{text}）" if language == "both" else f" ({text})"


def heading(language: str, key: str) -> str:
    return say(language, HEADINGS[key])


def empty(language: str) -> str:
    """An empty ranking: `（空 / empty）`, or `(empty)`."""
    return aside(language, say(language, EMPTY)).strip()


PAIRS_HEADERS = ("a vs b", "metric", "delta", "p", "95% CI", "wins / ties / losses")
SIGNIFICANCE_HEADERS = ("retriever", "metric", "baseline", "value", "delta", "questions", "p (adjusted)",
                        "p (unadjusted)", "95% CI", "MDE")
ADJUSTMENT_WORDS = {
    "maxt": ("max-T（一次重抽样同时作用于所有项，逐步下降）", "max-T-adjusted (one resample applied to every item "
             "together, step-down; items with no difference at all leave the family)"),
    "holm": ("Holm–Bonferroni", "Holm-adjusted (items with no difference at all leave the family)"),
}


def adjustment_words(data: ReportInput) -> tuple[str, str]:
    """(Chinese, English): how the p-values were adjusted over the family, or that they were not."""
    if data.adjustment not in ADJUSTMENT_WORDS:
        return "p 值未做多重校正", 'p not adjusted for the number of items (adjustment = "none")'
    zh, en = ADJUSTMENT_WORDS[data.adjustment]
    count = data.family
    items = f"{count} metric item{'s' if count != 1 else ''}"
    return f"p 值按 {zh} 在本次评判的 {count} 个指标项上校正", f"p {en} over the {items} judged"


def significance_hint(data: ReportInput) -> str:
    """How the p-values were adjusted and what the minimum detectable effect (MDE) is."""
    zh, en = adjustment_words(data)
    return say(data.language, (
        f"单侧配对 {data.significance} 检验，{zh}",
        f"one-sided paired {data.significance} test against the baseline over the comparable questions, {en} "
        f"(an item fails when the adjusted p < {data.alpha:g}). MDE: the smallest drop a paired two-sided 5% "
        "test detects with 80% power, (z0.975 + z0.80) · sd / √n, sd of the baseline's per-question values of "
        "that retriever and metric.",
    ))


def pairs_hint(method: str, language: str) -> str:
    return say(language, ("a 与 b 的均值差与逐题胜/平/负", "difference of means (a - b), questions a wins/ties/loses; "
                          f"paired two-sided {method} test."))


MEANINGS = {
    "ann_recall": (
        "ANN 索引前 {depth} 条与精确检索的重合率，低于 1 说明近似索引漏了结果",
        "share of the exact top {depth} that the ANN index returned",
    ),
    "ann_recall_worst": (
        "最差一题的 ANN 索引前 {depth} 条与精确检索的重合率",
        "the worst question's share of the exact top {depth} that the ANN index returned",
    ),
    "pool_recall": (
        "重排候选池（前 {depth} 条）的召回，任何重排都无法超过这个上限",
        "recall of the top-{depth} candidate pool: the ceiling no reranker can pass",
    ),
}


def width(text: str) -> int:
    """Display width: CJK characters take two terminal cells."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def ran(data: ReportInput) -> list[RetrieverView]:
    return [view for view in data.retrievers if view.status == "ran"]


def status_text(view: RetrieverView) -> str:
    return f"{view.status}: {view.reason}" if view.reason else view.status


OUTCOME_WORDS = {Finding.NON_INFERIOR: ("非劣", "non-inferior"), Finding.INCONCLUSIVE: ("无定论", "inconclusive"),
                 Finding.UNCHANGED: ("未变", "unchanged")}
"""The passes' outcomes as reports count them (docs/verdicts.md, "Three outcomes"); regressions are the failures."""


def verdict(data: ReportInput) -> str:
    """`✅ no failures; 2 non-inferior, 1 inconclusive`: the failures, then the judged items' outcomes."""
    count = len(data.failures)
    counts = outcome_counts(data)
    if count:
        return "❌ " + say(data.language, (f"{count} 项未通过", f"{count} failed")) + counts
    return "✅ " + say(data.language, ("无失败项", "no failures")) + counts


def outcome_counts(data: ReportInput, language: str | None = None) -> str:
    """`; 2 non-inferior, 1 inconclusive` (each outcome a judged pass had, in a fixed order), or nothing;
    in `language` (the report's when None)."""
    counted = [(sum(1 for item in data.outcomes if item.outcome == finding), words)
               for finding, words in OUTCOME_WORDS.items()]
    shown = [(count, words) for count, words in counted if count]
    if not shown:
        return ""
    return "; " + say(language or data.language, ("，".join(f"{count} 项{words[0]}" for count, words in shown),
                                      ", ".join(f"{count} {words[1]}" for count, words in shown)))


def inconclusive_lines(data: ReportInput) -> list[str]:
    """One line per inconclusive item: its drop not ruled out, and the questions that would decide it."""
    lines = []
    for item in data.outcomes:
        if item.outcome != Finding.INCONCLUSIVE:
            continue
        clusters = (f" (or about {item.needed_clusters} clusters like these)"
                    if isinstance(item.needed_clusters, int) else "")
        needed = f"; about {item.needed} questions{clusters} would decide it" if item.needed is not None else ""
        verdict_word = "passes" if item.passed else 'fails (inconclusive = "fail")'
        lines.append(f"inconclusive: {item.metric} of {item.retriever} {verdict_word}: a drop of its margin is "
                     f"not ruled out{needed}")
    return lines


def unavailable(data: ReportInput, name: Callable[[str], str] = str, text: Callable[[str], str] = str) -> str:
    """The retrievers that could not run here, grouped by reason, for a report's first line (a CI secret
    that is missing shows there, not only in a skipped item); "" when every retriever could run. Markdown
    passes its `code` and `esc`, so names and reasons show as written."""
    reasons: dict[str, list[str]] = {}
    for view in data.retrievers:
        if view.status == "unavailable":
            reasons.setdefault(view.reason, []).append(name(view.name))
    return "; ".join(f"unavailable: {', '.join(names)} ({text(reason)})" for reason, names in reasons.items())


def with_delta(value: float | None, delta: float | None) -> str:
    text = fmt(value)
    return f"{text} ({signed(delta)})" if moved(delta) else text


def difference(value: float | None, before: float | None) -> float | None:
    return None if value is None or before is None else value - before


def metric_cell(view: RetrieverView, label: str) -> tuple[float | None, float | None]:
    """(value, delta against the baseline) of one retriever x metric."""
    comparison = view.comparisons.get(label)
    value = view.metrics.get(label, comparison.value if comparison else None)
    return value, comparison.delta if comparison else None


def tag_cell(view: RetrieverView, tag: str, label: str) -> tuple[float | None, float | None]:
    value = view.tags.get(tag, {}).get(label)
    return value, difference(value, view.baseline_tags.get(tag, {}).get(label))


def question_cell(view: RetrieverView, question: str, label: str) -> tuple[float | None, float | None]:
    value = view.values.get(question, {}).get(label)
    return value, difference(value, view.baseline_values.get(question, {}).get(label))


def has_significance(data: ReportInput) -> bool:
    return any(c.p_value is not None for view in ran(data) for c in view.comparisons.values())


def format_ci(ci: tuple[float, float] | None) -> str:
    return "—" if ci is None else f"[{signed(ci[0])}, {signed(ci[1])}]"


def diagnostic_meaning(label: str, language: str) -> str:
    name, _, depth = label.partition("@")
    template = MEANINGS.get(name)
    return say(language, (template[0].format(depth=depth), template[1].format(depth=depth))) if template else ""


def gold(question: QuestionView) -> list[tuple[str, int]]:
    """The question's relevant chunks, best grade first, then by id."""
    return sorted(((cid, g) for cid, g in question.relevance.items() if g >= 1), key=lambda item: (-item[1], item[0]))


def baseline_text(data: ReportInput) -> str:
    language = data.language
    if data.comparable:
        return data.baseline_path + aside(language, say(language, ("可比", "comparable")))
    reason = aside(language, say(language, ("不可比或不存在，不显示差值",
                                            "missing or recorded under another configuration: no deltas")))
    return data.baseline_path + reason if data.baseline_path else say(language, NONE) + reason


def config_items(data: ReportInput) -> list[tuple[str, str, str]]:
    """(key, label, value) of the configuration, in report order; the metric definitions come apart."""
    language = data.language
    counts = data.tag_counts
    per_tag = " / ".join(f"{tag} {n}" for tag, n in counts.items())
    answerable = sum(1 for q in data.questions if q.answerable)
    questions = f"{len(data.questions)} " + say(language, ("题", "questions"))
    unavailable = aside(language, say(language, ("不可用", "unavailable")))
    rerankers = [model + (unavailable if model in data.unavailable_rerankers else "") for model in data.rerankers]
    return [
        ("evalset", say(language, ("评估集", "eval set")), questions + (aside(language, per_tag) if per_tag else "")),
        ("answerable", say(language, ("可回答", "answerable")), str(answerable)),
        ("no-answer", say(language, ("无答案", "no-answer")), str(len(data.questions) - answerable)),
        ("gold", say(language, ("金标准相关块", "gold chunks")), str(data.gold_count)),
        ("k", "k", str(data.k)),
        ("embedder", "embedding", data.embedder),
        ("rerankers", say(language, ("重排模型", "rerankers")), ", ".join(rerankers) or say(language, NONE)),
        ("chunks", say(language, ("切块数", "chunks")), str(len(data.chunks))),
        ("database", say(language, ("数据库", "database")), data.database),
        ("baseline", say(language, ("基线", "baseline")), baseline_text(data)),
    ]
