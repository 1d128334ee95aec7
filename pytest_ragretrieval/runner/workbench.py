"""Building configured retrievers, once each, and the `ctx` their factories see."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cache.store import Namespace
from ..config.settings import Config
from ..core.errors import RagError, RetrieverError
from ..database.settings import IndexKind
from ..evalset.records import Chunk, Question
from ..record.run import RetrieverRun
from ..retrievers import TYPES, Closing, Retriever
from ..retrievers.protocol import Connection, Narrowing, Query, asked
from ..retrievers.tokens import tokenizer
from .resources import Resources
from .store import Entry, Memo, Rankings, Reused

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..embedding.prompts import Side
    from ..retrievers.candidates import Earlier
    from ..retrievers.corpus_tokens import Ahead


class RetrieverContext:
    """The `Context` a retriever type's `build` and a user's factory get."""

    def __init__(self, bench: Workbench, name: str, options: Mapping[str, object]) -> None:
        self._bench = bench
        self.name = name
        self.options: Mapping[str, object] = dict(options)

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self._bench.chunks

    @property
    def questions(self) -> tuple[Query, ...]:
        return tuple(asked(question) for question in self._bench.questions)

    @property
    def k(self) -> int:
        return self._bench.config.k

    @property
    def root(self) -> Path:
        return self._bench.config.root

    @property
    def tokenizer(self) -> str:
        return self._bench.config.tokenizer

    @property
    def tokenize(self) -> Callable[[str], list[str]]:
        return tokenizer(self._bench.config.tokenizer)

    def corpus_vectors(self) -> tuple[list[str], NDArray[np.float32]]:
        return self._bench.resources.corpus_vectors()

    def corpus_tokens(self, tokenizer: str | None = None) -> tuple[list[str], list[NDArray[np.int32]]]:
        return self._bench.corpus_tokens(tokenizer or self.tokenizer)

    def tokens(
        self, texts: Sequence[str], tokenizer: str | None = None
    ) -> tuple[list[str], list[NDArray[np.int32]]]:
        return self._bench.tokens(texts, tokenizer or self.tokenizer)

    def load_tokenizer(self, texts: Sequence[str] | None, tokenizer: str | None = None) -> Mapping[str, float]:
        return self._bench.load_tokenizer(texts, tokenizer or self.tokenizer)

    def load_embedder(self, texts: Sequence[str]) -> Mapping[str, float]:
        return self._bench.resources.embedder.load(list(texts), "query")

    @property
    def workers(self) -> int:
        return self._bench.config.workers

    @property
    def retrievers(self) -> Mapping[str, Retriever]:
        return {name: self.retriever(name) for name in self._bench.config.retriever(self.name).sources}

    def retriever(self, name: str) -> Retriever:
        declared = self._bench.config.retriever(self.name).sources
        if name not in declared:
            raise RetrieverError(
                f"retriever {self.name!r} asked for retriever {name!r}, which it does not list; "
                f"add sources = [{name!r}] to its table"
            )
        source = self._bench.get(name)
        self._bench.read_by(self.name, source)
        return source

    def connect(self) -> Connection:
        return self._bench.resources.connect()

    def team_connection(self) -> Connection:
        return self._bench.resources.team_connection(self.name)

    @property
    def index_kind(self) -> IndexKind:
        return self._bench.config.index.kind

    @property
    def ann_tie_epsilon(self) -> float:
        return self._bench.config.ann_tie_epsilon

    @property
    def table(self) -> str:
        return self._bench.resources.table

    def score_cache(self, kind: str, model_id: str) -> Namespace:
        return self._bench.resources.score_cache(kind, model_id)

    def embed(self, texts: Sequence[str], side: Side = "query") -> NDArray[np.float32]:
        # a user's factory may pass any value, typed or not: checked here, where it enters
        if side not in ("query", "passage"):
            raise RetrieverError(
                f"retriever {self.name!r} called ctx.embed with side={side!r}; use 'query' or 'passage'"
            )
        return self._bench.resources.embedder.embed(list(texts), None, side)


class Workbench:
    """Builds each retriever on first use, behind a `Memo` over the session's one store of
    rankings; a build error is kept and re-raised for every user. It knows which memos each
    retriever reads (`read_by`), so that filling a memo's store fills its sources' first."""

    def __init__(
        self, config: Config, chunks: tuple[Chunk, ...], resources: Resources, questions: tuple[Question, ...] = ()
    ) -> None:
        self.config = config
        self.chunks = chunks
        self.questions = questions
        self.resources = resources
        self.rankings = Rankings(resources.phases)
        self._built: dict[str, Retriever] = {}
        self._memos: dict[str, Memo] = {}
        self._failed: dict[str, RagError] = {}
        self._building: list[str] = []
        self._sources: dict[str, list[Memo]] = {}
        self._tokens: dict[str, tuple[list[str], list[NDArray[np.int32]]]] = {}
        self._ahead: dict[str, Ahead] = {}
        self.planned: tuple[str, ...] = ()
        """The retrievers this session will run (`Runner.plan`), whose corpus tokens may be made ahead."""
        self.cached: Callable[[str], RetrieverRun | None] = lambda name: None
        """A source's rankings from its cached run, when they may stand in for running it (`Runner`)."""
        self.earlier: Callable[[str], Earlier | None] = lambda name: None
        """An exact search's cached rankings with its vectors' digests, after a corpus edit (`Runner`)."""

    def depth(self, name: str) -> int:
        """The deepest any configured consumer reads `name`: the session's depth, a hybrid's, a rerank's."""
        asked = [spec.source_depth or 0 for spec in self.config.retrievers if name in spec.sources]
        return max([self.config.depth, *asked])

    def corpus_tokens(self, key: str) -> tuple[list[str], list[NDArray[np.int32]]]:
        """(vocabulary, token ids per chunk, chunks by id) by tokenizer `key`, once per session, through the cache."""
        if key not in self._tokens:
            self._tokens[key] = self.tokens(self._corpus_texts(), key)
            self._keep_index(key)
        return self._tokens[key]

    def _keep_index(self, key: str) -> None:
        """jieba's dictionary, when this process loaded it, kept as an index in the token cache (not while a
        question is timed): a later run cuts a few new texts from it (`retrievers/jieba_index.py`)."""
        from ..retrievers.tokens import keep_index

        space = self._token_namespace(key)
        keep_index(key, space.folder if space.writable else None)

    def _corpus_texts(self) -> list[str]:
        return [chunk.text for chunk in sorted(self.chunks, key=lambda c: c.id)]

    def tokens(self, texts: Sequence[str], key: str) -> tuple[list[str], list[NDArray[np.int32]]]:
        """(vocabulary, token ids per text) by tokenizer `key`, through the cache: its namespace is the
        tokenizer's (and its user dictionary's digest), so two tokenizers never share an entry."""
        from ..retrievers.corpus_tokens import cached_tokens

        with self.resources.phases.phase("tokenizing"):
            return cached_tokens(texts, key, self._token_namespace(key), self.config.workers, self._ahead.get(key))

    def load_tokenizer(self, texts: Sequence[str] | None, key: str) -> Mapping[str, float]:
        """The tokenizer of `key` loaded before the first question when `tokens(texts)` would load it (a text
        the cache lacks, no process tokenizing ahead holds, and too many or no index for `few`), or
        outright (`texts` None). By `tokenizer NAME`, in milliseconds."""
        from ..retrievers.tokens import describe, few, load

        if texts is not None:
            unique = list(dict.fromkeys(texts))
            space = self._token_namespace(key)
            misses = [unique[i] for i in space.absent(unique)]
            ahead = self._ahead.get(key)
            if not misses or (ahead is not None and ahead.texts.issuperset(misses)) or few(key, misses, space.folder):
                return {}  # cached, tokenized ahead, or cut from the dictionary's index: nothing to load
        took = load(key)
        self._keep_index(key)
        return {} if took is None else {f"tokenizer {describe(key)}": took}

    def _token_namespace(self, key: str) -> Namespace:
        from ..retrievers.corpus_tokens import tokenizer_id

        return self.resources.cache.namespace("tokens", tokenizer_id(key), dtype="<i4")

    def tokenize_ahead(self) -> None:
        """Start tokenizing the corpus and the questions for the planned retrievers that read corpus
        tokens, on a forked process, before the corpus is embedded (`Resources.before_embedding`):
        a cold run then does both at once. Nothing starts when their tokens are cached."""
        from ..retrievers.corpus_tokens import tokenize_ahead

        for key in self._corpus_tokenizers():
            if key in self._ahead or key in self._tokens:
                continue
            texts = [*self._corpus_texts(), *(asked(question).query for question in self.questions)]
            with self.resources.phases.phase("tokenizing"):
                started = tokenize_ahead(texts, key, self._token_namespace(key), self.config.workers)
            if started is not None:
                self._ahead[key] = started

    def _corpus_tokenizers(self) -> list[str]:
        """The tokenizer keys whose corpus tokens the planned retrievers (and their sources) read."""
        specs = {spec.name: spec for spec in self.config.retrievers}
        wanted, seen, keys = list(self.planned), set[str](), list[str]()
        while wanted:
            name = wanted.pop(0)
            if name in seen or name not in specs:
                continue
            seen.add(name)
            spec = specs[name]
            wanted.extend(spec.sources)
            declared = getattr(spec.module, "corpus_tokenizers", None)
            try:
                found = declared(spec.params, self.config.tokenizer, self.config.root) if declared else []
            except RagError:
                continue  # the build names what is wrong
            keys.extend(key for key in found if key not in keys)
        return keys

    def read_by(self, consumer: str, source: Memo) -> None:
        """Remember that `consumer` reads `source`, so that prefetching it fills the source first."""
        known = self._sources.setdefault(consumer, [])
        if source not in known:
            known.append(source)

    def get(self, name: str) -> Memo:
        """`name`'s memo; over its cached rankings (`cached`) when a consumer reads it and they hold every
        question as deep as it is read, else over the built retriever, its store holding the cached rankings
        of the questions unchanged when only some are (reuse question by question)."""
        if name in self._memos:
            return self._memos[name]

        def sources() -> tuple[Memo, ...]:
            return tuple(self._sources.get(name, ()))

        cached = self.cached(name)
        if cached is None:
            built = self._build(name)
            if isinstance(built, Narrowing) and (earlier := self.earlier(name)) is not None:
                built.narrow(earlier)
            memo = Memo(name, built, self.rankings, self.depth(name), sources=sources)
        else:
            # every question's ranking cached: built only if asked anything else; some: built for the rest
            every = all(question.id in cached.rankings for question in self.questions)
            built = Reused(lambda: self._build(name)) if every else self._build(name)
            memo = Memo(name, built, self.rankings, self.depth(name), sources=sources)
            for question in self.questions:
                if question.id in cached.rankings:
                    memo.entries[memo.key(asked(question))] = Entry(
                        cached.rankings[question.id], cached.depth, cached.latency_ms.get(question.id, 0.0))
        self._memos[name] = memo
        return memo

    def narrowed(self, name: str) -> int:
        """The questions `name`'s earlier rankings decided after a corpus edit (`Narrowing`); 0 if none."""
        built = self._built.get(name)
        return built.narrowed if isinstance(built, Narrowing) else 0

    def stored(self, name: str) -> dict[str, tuple[Any, ...]] | None:
        """`name`'s rankings of every question as the session's store holds them, cut to the deepest any
        consumer reads it (`depth`): what its cached entry keeps; None when a question's is not there."""
        memo, depth = self._memos.get(name), self.depth(name)
        if memo is None:
            return None
        found = {}
        for question in self.questions:
            entry = memo.entries.get(memo.key(asked(question)))
            if entry is None or not entry.serves(depth):
                return None
            found[question.id] = entry.ranking[:depth]
        return found

    def _build(self, name: str) -> Retriever:
        """The built retriever `name`, built once; a build error is kept and re-raised for every user."""
        if name in self._built:
            return self._built[name]
        if name in self._failed:
            raise self._failed[name]
        if name in self._building:
            raise RetrieverError(f"retriever {name!r} reads from itself through {' -> '.join(self._building)}")
        spec = self.config.retriever(name)
        self._building.append(name)
        try:
            ctx = RetrieverContext(self, name, spec.params.get("options", {}))
            with self.resources.phases.phase(f"build {name}"):
                built = TYPES[spec.type].build(dict(spec.params), ctx)
        except RagError as exc:
            self._failed[name] = exc
            raise
        finally:
            self._building.pop()
        self._built[name] = built
        return built

    def close(self) -> None:
        for ahead in self._ahead.values():
            ahead.stop()
        self._ahead.clear()
        for retriever in self._built.values():
            if isinstance(retriever, Closing):
                retriever.close()
        self._built.clear()
        self._memos.clear()
