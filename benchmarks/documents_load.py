"""Documents mode's loading and labelling, cold and warm, in one call: `documents_corpus` (documents read, cut
by each of four chunkings, the eval set read and its gold spans labelled in every chunking) with an empty
cache folder (cold: it cuts, labels and writes the entry) and again with the entry there (warm: it hashes
the inputs and reads the entry back), each repeated, medians compared.

Data: CMRC 2018 dev (github.com/ymcui/cmrc2018, squad-style-data/cmrc2018_dev.json, CC BY-SA 4.0; read
from the path given, never committed): its 848 passages as documents and its 3,219 questions, each with
its first answer as a gold span with its text (at the occurrence nearest `answer_start` where that offset
does not hold it). Without it, `--generated` writes a corpus of the same shape: 848 passages of jieba's
dictionary words drawn by frequency (random.Random(7), 400 to 1,200 characters), 3,219 questions, each a
10-to-30-character span of a random passage. The four chunkings are built-in ones (a `python` chunker's cuts
are never cached): `tokens` 512/64 (the default), 256/32, `sentences` 3, and `recursive` 100,000
characters (each passage whole).

    python benchmarks/documents_load.py --cmrc /tmp/cmrc2018_dev.json [--repeat 3] [--before CHECKOUT]
    python benchmarks/documents_load.py --generated

`--before CHECKOUT`: a checkout of an earlier version of the package (e.g. `git archive 577255f`), whose
`documents_corpus` (no cache, no per-document index) is timed on the same files, once, in a subprocess.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from pytest_ragretrieval.evalset.chunkers import Chunker  # noqa: E402
from pytest_ragretrieval.evalset.corpus import documents_corpus  # noqa: E402

DEFAULT = Chunker("tokens", size=512, overlap=64)
NAMED = {"t256": Chunker("tokens", size=256, overlap=32), "s3": Chunker("sentences", size=3),
         "whole": Chunker("recursive", size=100_000)}
BEFORE = """
import sys, time
from pathlib import Path
from pytest_ragretrieval.evalset.chunkers import Chunker
from pytest_ragretrieval.evalset.corpus import documents_corpus
work = Path(sys.argv[1])
named = {"t256": Chunker("tokens", size=256, overlap=32), "s3": Chunker("sentences", size=3)}
started = time.perf_counter()
chunks, questions = documents_corpus(work / "docs.jsonl", Chunker("tokens", size=512, overlap=64), work,
                                     work / "evalset.jsonl", named)
print(time.perf_counter() - started, len(chunks), len(questions))
"""
"""The earlier version's load, on three chunkings (it has no `recursive`; the fourth chunking adds one
chunk a passage)."""


def nearest(context: str, text: str, start: int) -> int:
    places = [at for at in range(len(context)) if context.startswith(text, at)]
    return min(places, key=lambda at: abs(at - start)) if places else start


def cmrc(source: Path, work: Path) -> str:
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    documents, questions = [], []
    for article in data:
        for paragraph in article["paragraphs"]:
            doc = str(paragraph["id"]).replace("#", "_")
            documents.append({"id": doc, "text": paragraph["context"]})
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = nearest(paragraph["context"], answer["text"], int(answer["answer_start"]))
                questions.append({"id": str(qa["id"]), "query": qa["question"], "relevant_spans": [
                    {"doc": doc, "start": start, "end": start + len(answer["text"]), "text": answer["text"]}]})
    write(work, documents, questions)
    return f"CMRC 2018 dev ({source.name})"


def generated(work: Path) -> str:
    import jieba

    words, weights = [], []
    for line in (Path(jieba.__file__).parent / "dict.txt").read_text(encoding="utf-8").splitlines():
        word, count, *_ = line.split(" ")
        words.append(word)
        weights.append(int(count))
    cumulative = list(itertools.accumulate(weights))
    draw = random.Random(7)
    documents = []
    for number in range(848):
        text = ""
        target = draw.randint(400, 1200)
        while len(text) < target:
            text += "".join(draw.choices(words, cum_weights=cumulative, k=draw.randint(6, 20))) + draw.choice("。。！？")
        documents.append({"id": f"DEV_{number}", "text": text})
    questions = []
    for number in range(3219):
        document = draw.choice(documents)
        length = draw.randint(10, 30)
        start = draw.randint(0, len(document["text"]) - length)
        text = document["text"][start:start + length]
        questions.append({"id": f"Q{number}", "query": text[::2], "relevant_spans": [
            {"doc": document["id"], "start": start, "end": start + length, "text": text}]})
    write(work, documents, questions)
    return "generated (848 passages, 3,219 questions)"


def write(work: Path, documents: list[dict[str, str]], questions: list[dict[str, object]]) -> None:
    (work / "docs.jsonl").write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents),
                                     encoding="utf-8")
    (work / "evalset.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions),
                                        encoding="utf-8")


def timed(work: Path, cache: Path) -> tuple[float, float, int, int]:
    """Wall-clock and CPU seconds of one load (CPU: this process's, what a busy machine's other work does
    not add to), and its chunks and questions."""
    started, cpu = time.perf_counter(), time.process_time()
    chunks, questions = documents_corpus(work / "docs.jsonl", DEFAULT, work, work / "evalset.jsonl", NAMED,
                                         cache=cache)
    return time.perf_counter() - started, time.process_time() - cpu, len(chunks), len(questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--cmrc", type=Path, help="cmrc2018_dev.json")
    which.add_argument("--generated", action="store_true", help="a generated corpus of CMRC dev's size")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier version, timed once")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rag-load-") as folder:
        work = Path(folder)
        name = cmrc(args.cmrc, work) if args.cmrc else generated(work)
        cache = work / "cache"
        cold, warm = [], []
        for _ in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            *seconds, chunks, questions = timed(work, cache)
            cold.append(seconds)
            warm.append(timed(work, cache)[:2])
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        print(f"data: {name}: {chunks:,} chunks in four chunkings, {questions:,} questions")
        for column, clock in enumerate(("wall-clock", "CPU")):
            colds, warms = [s[column] for s in cold], [s[column] for s in warm]
            print(f"{clock}: cold (cut, label, write the entry) median {statistics.median(colds):.3f} s of "
                  f"{args.repeat} ({', '.join(f'{s:.3f}' for s in colds)}); warm (hash the inputs, read the "
                  f"entry) median {statistics.median(warms):.3f} s ({', '.join(f'{s:.3f}' for s in warms)}); "
                  f"warm / cold {statistics.median(warms) / statistics.median(colds):.1%}")
        size = sum(p.stat().st_size for p in (cache / "corpus").glob("*.msgpack"))
        print(f"entry: {size / 1e6:.1f} MB")
        if args.before:
            done = subprocess.run([sys.executable, "-c", BEFORE, str(work)], capture_output=True, text=True, cwd=work,
                                  check=True, env={**os.environ, "PYTHONPATH": str(args.before)})
            seconds, chunks, questions = done.stdout.split()
            print(f"before ({args.before}, three chunkings, no cache): {float(seconds):.3f} s, {chunks} chunks")


if __name__ == "__main__":
    main()
