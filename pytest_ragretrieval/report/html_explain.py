"""The HTML page's explanation of a miss, under a retriever's ranking of a question: the gold chunks' ranks
in every ranking it reads, a hybrid's fused scores against the k-th's, and each bm25 retriever's tokens
with the terms the query shares marked (`labels/explain.py` builds it). Escaped once, as the page is."""
from __future__ import annotations

from collections.abc import Sequence

from ..record.explain import Explanation, Fusion, Tokens, ordinal
from ..record.report import ReportInput
from .markup import e, el
from .wording import say

EXPLAIN_STYLE = """
details.explanation { margin: 0.5rem 0; } mark.shared { background: #fff1a8; }
.explain-tokens ul { padding-left: 1rem; } .explain-tokens li { margin: 0.2rem 0; }"""
"""Added to the page's style only when it explains a miss, so a page without one is as it was."""


def explanation(data: ReportInput, question: str, retriever: str) -> str:
    """The `<details>` block explaining `retriever`'s miss on `question`; "" when there is none."""
    found = data.explanations.get(question, {}).get(retriever)
    if found is None:
        return ""
    summary = el("summary", e(say(data.language, ("为何未命中：分词与排名", "why it missed: tokens and ranks"))))
    body = [_ranks(found)]
    if found.fusion is not None:
        body.append(_fusion(found, found.fusion))
    body += [_tokens(tokens) for tokens in found.tokens]
    body += [el("p", e(f"note: {note}"), cls="explain-note") for note in found.notes]
    return el("details", summary + "".join(body), cls="explanation", data_question=question,
              data_retriever=retriever)


def _ranks(found: Explanation) -> str:
    chunks = [cid for cid, _ in found.gold]
    head = "".join(el("th", e(h)) for h in ("ranking", "type", *chunks, "known"))
    rows = []
    for ranks in found.ranks:
        cells = el("td", e(ranks.retriever)) + el("td", e(ranks.type))
        cells += "".join(el("td", e(ranks.shown(cid)), cls="num", data_chunk=cid) for cid in chunks)
        cells += el("td", e(ranks.known))
        rows.append(el("tr", cells, data_source=ranks.retriever))
    lines = [f"<table class=\"explain-ranks\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"]
    for ranks in found.ranks:
        if ranks.scores or ranks.kth:
            scores = ", ".join(f"{cid} {ranks.scores[cid]:.4f}" for cid in chunks if cid in ranks.scores) or "none"
            kth = f"; {ordinal(found.k)} {ranks.kth[0]} {ranks.kth[1]:.4f}" if ranks.kth else ""
            lines.append(el("p", e(f"{ranks.retriever} scores: {scores}{kth}"), cls="explain-scores"))
    return "".join(lines)


def _fusion(found: Explanation, fusion: Fusion) -> str:
    scores = ", ".join(f"{cid} {score:.6f}" for cid, score in fusion.scores.items())
    kth = f"; {ordinal(found.k)} {fusion.kth[0]} {fusion.kth[1]:.6f}" if fusion.kth else ""
    text = f"fused scores ({fusion.rule}): {scores}{kth}"
    if fusion.lower_bounds:
        text += f" (lower bounds: {', '.join(fusion.lower_bounds)} known to fewer than {fusion.depth} ranks)"
    return el("p", e(text), cls="explain-fusion")


def _cut(tokens: Sequence[str], shared: Sequence[str]) -> str:
    """Tokens in order, `/` between them, those the query shares marked."""
    marked = set(shared)
    return "/".join(el("mark", e(token), cls="shared") if token in marked else e(token)
                    for token in tokens) or e("(none)")


def _tokens(tokens: Tokens) -> str:
    """The query's and each gold chunk's tokens, shared terms marked; then the same without the user dictionary."""
    rows = [el("li", el("strong", e("query")) + " " + _cut(tokens.query, [t for g in tokens.gold for t in g.shared]),
               cls="query-tokens")]
    for gold in tokens.gold:
        shared = " ".join(gold.shared) or "none"
        rows.append(el("li", el("strong", e(gold.chunk)) + " " + _cut(gold.tokens, gold.shared)
                       + el("p", e(f"shared: {shared}"), cls="shared-terms"), cls="gold-tokens", data_chunk=gold.chunk))
    if tokens.plain_query is not None:
        plain = [el("strong", e("without the user dictionary")) + " query "
                 + _cut(tokens.plain_query, [t for g in tokens.gold for t in g.plain_shared or ()])]
        plain += [e(f"{g.chunk} shared: {' '.join(g.plain_shared or ()) or 'none'}") for g in tokens.gold]
        if tokens.plain_ranks is not None:
            plain.append(e("ranks without it: " + ", ".join(
                f"{cid} {'-' if rank is None else rank}" for cid, rank in tokens.plain_ranks.items())))
        rows.append(el("li", "<br>".join(plain), cls="plain-tokens"))
    title = el("h5", e(f"{tokens.retriever} tokens ({tokens.tokenizer})"))
    return el("div", title + el("ul", "".join(rows)), cls="explain-tokens", data_retriever=tokens.retriever)
