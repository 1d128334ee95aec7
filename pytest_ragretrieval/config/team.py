"""A config without a chunks file: which retrievers may run so, and the one team table they read."""
from __future__ import annotations

from collections.abc import Callable

from ..core.errors import ConfigError
from ..database.session import TeamCorpus
from ..files.tables import Table
from ..retrievers import RetrieverSpec
from ..retrievers.table import corpus_of

TEAM_TYPES = ("table", "sql")
"""The retriever types that read the team's own database."""


def team_corpus(table: Table, specs: tuple[RetrieverSpec, ...], label: Callable[[str], str]) -> TeamCorpus:
    """Without a chunks file: every retriever must read the team's database (a `table` or `sql`
    retriever, or one fusing or reranking only those), and the tables they name must be one."""
    if not any(spec.type in TEAM_TYPES for spec in specs):
        raise ConfigError(f"{table.where}: missing key 'chunks'")
    reads: dict[str, bool] = {}

    def team(spec: RetrieverSpec) -> bool:
        if spec.name not in reads:
            reads[spec.name] = spec.type in TEAM_TYPES or (
                bool(spec.sources) and all(team(next(s for s in specs if s.name == name)) for name in spec.sources)
            )
        return reads[spec.name]

    for spec in specs:
        if not team(spec):
            raise table.error(
                "chunks", f"is needed: retriever {spec.name!r} (type {spec.type}) does not read the team's table; "
                "only table and sql retrievers (and those fusing them) run without a chunks file"
            )
    named = [(spec.name, corpus) for spec in specs if (corpus := corpus_of(spec.params)) is not None]
    if not named:
        raise table.error(
            "chunks", "is needed, or a table or sql retriever must name the team's table (table = \"NAME\")"
        )
    first_name, first = named[0]
    for name, corpus in named[1:]:
        if corpus != first:
            raise ConfigError(
                f"{label(name)} key 'table': reads {corpus.describe()} ({corpus.id_column}, {corpus.text_column}, "
                f"digest {corpus.digest}), but retriever {first_name!r} reads {first.describe()} ({first.id_column}, "
                f"{first.text_column}, digest {first.digest}); without a chunks file they must name one corpus"
            )
    return first
