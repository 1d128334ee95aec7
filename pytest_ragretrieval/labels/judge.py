"""`ragretrieval pool --judge openai:MODEL`: an LLM proposes a grade for each pooled chunk.

The prompt asks for UMBRELA's 0-3 scale (Upadhyay et al. 2024, after Thomas et al.'s Bing
prompt), written here in our words and shown verbatim on the docs' Labels page; the answer's last
`##final score: N` is the score. The eval-set grade proposed is the score minus one, floored at
0 (0 and 1, "related but no answer", become grade 0; 2 becomes 1; 3 becomes 2), so that only a
passage that holds an answer counts as relevant, as TREC RAG reads UMBRELA's scale.

The server is any OpenAI-compatible chat server: `--base-url`, else OPENAI_BASE_URL, else
api.openai.com; the key is OPENAI_API_KEY (a placeholder for a server at a base URL that needs
none), masked by value in every message. Each request has the config's `embedding_timeout` over its
whole answer (slow reads included: `core/deadline.py`); a timeout, lost connection, 429 or 5xx is
tried `embedding_retries` more times; all requests and waits together stay within `--judge-budget`
seconds. A base URL is checked first (`core/urls.py`): credentials in it are refused. Scores are
cached by content (model, prompt digest, query, passage) under the config's cache folder, so a
second run asks nothing; a run stopped by the budget keeps what it graded.
The date of the provenance is UTC today, or SOURCE_DATE_EPOCH's day when that is set.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ..cache.store import Cache, sha256
from ..config.settings import Config
from ..core.deadline import Late, within
from ..core.errors import RagError
from ..core.optional import need
from ..core.redact import safe_line
from ..core.urls import url_problem

PROMPT = """\
You judge how relevant a passage is to a search query, on an integer scale from 0 to 3:
0 = the passage has nothing to do with the query;
1 = the passage is related to the query's topic but does not answer it;
2 = the passage holds some answer to the query, but the answer is unclear or buried among other information;
3 = the passage is dedicated to the query and holds the exact answer.

Consider what the person searching most likely wants, how well the passage matches that intent,
and how trustworthy the passage is; then decide on one final score.
Answer with one line only, in this form: ##final score: N

Query: {query}
Passage: {passage}"""
"""The judge's prompt, `{query}` and `{passage}` filled in; its sha256 is part of every proposal."""

PROMPT_SHA256 = sha256(PROMPT)
SCORE = re.compile(r"##\s*final score\s*:\s*([0-3])\b", re.IGNORECASE)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_KEY = "unused"


def grade(score: int) -> int:
    """UMBRELA's score as an eval-set grade: only a passage that holds an answer (2, 3) is relevant."""
    return max(score - 1, 0)


def today() -> str:
    """UTC today as YYYY-MM-DD, or the day of SOURCE_DATE_EPOCH (reproducible runs and tests)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC) if epoch and epoch.isdigit() \
        else datetime.datetime.now(datetime.UTC)
    return moment.date().isoformat()


class ChatJudge:
    """One chat request per (query, passage), temperature 0; answers cached by content."""

    def __init__(self, config: Config, model: str, base_url: str | None, budget: float,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/") or None
        problem = url_problem(self.base_url, "the key goes in OPENAI_API_KEY") if self.base_url else None
        if problem is not None:
            raise RagError(f"judge openai:{model}: {'--base-url' if base_url else 'OPENAI_BASE_URL'} {problem}")
        key = os.environ.get("OPENAI_API_KEY") or (PLACEHOLDER_KEY if self.base_url else "")
        if not key:
            raise RagError(f"judge openai:{model} needs an API key: set OPENAI_API_KEY, or pass --base-url "
                           "(or set OPENAI_BASE_URL) for an OpenAI-compatible server")
        self._secrets = [key] if key != PLACEHOLDER_KEY else []
        self._key = key
        self.timeout = config.embedding_timeout
        self.retries = config.embedding_retries
        self.deadline = clock() + budget
        self.budget = budget
        self.clock = clock
        self.sleep = sleep
        self.space = Cache(config.cache_dir).namespace("judgments", f"openai:{model}")
        self._client: Any = None
        self.fresh: dict[str, int] = {}

    def cache_key(self, query: str, passage: str) -> str:
        """The model (its namespace too), the prompt's digest, the query and the passage."""
        return json.dumps([f"openai:{self.model}", PROMPT_SHA256, query, passage], ensure_ascii=False)

    def score(self, query: str, passage: str) -> tuple[int, bool]:
        """(UMBRELA score, whether it came from the cache); new scores are written by `save`."""
        key = self.cache_key(query, passage)
        held = self.space.get(key)
        if held is not None:
            return held[0], True
        if key not in self.fresh:
            self.fresh[key] = self._ask(PROMPT.format(query=query, passage=passage))
        return self.fresh[key], False

    def save(self) -> None:
        """The scores this run asked for, as one cache pack."""
        import numpy as np

        self.space.write({key: np.array([found], dtype=np.uint8) for key, found in self.fresh.items()})

    def _ask(self, prompt: str) -> int:
        """One answer: a timeout, a lost connection, 429 or 5xx is tried `retries` more times (waits of
        0.5, 1, 2 ... s), every attempt and wait within what is left of the budget."""
        openai = need("openai", f"judge openai:{self.model}")
        if self._client is None:
            self._client = openai.OpenAI(base_url=self.base_url or DEFAULT_BASE_URL, api_key=self._key,
                                         max_retries=0, timeout=self.timeout)
        attempt = 0
        while True:
            left = self.deadline - self.clock()
            if left <= 0:
                raise self._spent()
            try:
                wait = min(self.timeout, left)
                answer = within(partial(self._client.chat.completions.create, model=self.model, temperature=0,
                                        messages=[{"role": "user", "content": prompt}], timeout=wait),
                                wait, "rag-judge-request")
                text = answer.choices[0].message.content or ""
                break
            except (Late, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
                attempt += 1
                failure = f"no whole answer within {wait:g} s" if isinstance(exc, Late) \
                    else f"{type(exc).__name__}: {exc}"
                if self.clock() >= self.deadline:
                    raise self._spent() from None
                if attempt > self.retries:
                    raise self._error(f"{failure} (after {attempt} attempts)") from None
                self.sleep(min(0.5 * 2 ** (attempt - 1), max(self.deadline - self.clock(), 0.0)))
            except openai.OpenAIError as exc:
                raise self._error(f"{type(exc).__name__}: {exc}") from None
            except (AttributeError, IndexError, TypeError):
                raise self._error("the server's answer is no chat completion (choices[0].message.content)") from None
        scores = SCORE.findall(text)
        if not scores:
            raise self._error(f"the answer holds no '##final score: N' (0-3): {text!r}")
        return int(scores[-1])

    def _spent(self) -> RagError:
        return RagError(f"judge openai:{self.model}: the --judge-budget of {self.budget:g} s is spent; "
                        "the scores so far are cached: run the same command again to go on")

    def _error(self, detail: str) -> RagError:
        return RagError(safe_line(f"judge openai:{self.model}: {detail}", self._secrets))


def judge_entries(config: Config, model: str, base_url: str | None, records: Sequence[Mapping[str, Any]],
                  budget: float) -> list[tuple[str, bool]]:
    """Each pool line (its `query` and `text` judged) with the proposed grade and its provenance, and
    whether the score was cached."""
    judge = ChatJudge(config, model, base_url, budget)
    provenance = {"model": f"openai:{model}", "prompt_sha256": PROMPT_SHA256, "date": today()}
    lines = []
    try:
        for record in records:
            found, cached = judge.score(record["query"], record["text"])
            graded = {**record, "grade": grade(found), "judge": {**provenance, "umbrela": found}}
            lines.append((json.dumps(graded, ensure_ascii=False), cached))
    finally:
        judge.save()
    return lines
