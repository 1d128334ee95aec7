"""Which chunk size? The gate run once per chunking on the same questions, scored on the span metrics.

`--sample`: the documents version of the bundled sample (fixtures/documents/, derived by
benchmarks/sample_documents.py; its gold is the answer spans) at four chunkings: `whole` (the
sample's own chunks, fixtures/documents/sample_chunker.py), 512/64 and 256/32 tokens (`unicode`
tokenizer) and three sentences. Each run is fixtures/documents/ragretrieval.toml with its
`[chunker]` replaced, written to a temporary folder with a temporary baseline (the committed files
are not touched). The retrievers that embed (`vector`, `hybrid`) run at `whole` only: the committed
embedding cache holds those texts, and the other chunkings' texts would be embedded on this CPU.

`--cmrc PATH`: the same four chunkings on CMRC 2018 dev (SQuAD format), passages as documents (id =
the passage's id; `whole` = the passage as one chunk), each question's first answer as its gold span
(answer_start and text; where the offset does not hold the text, the script writes the occurrence
nearest to it, as the gate refuses a span off its text), bm25 retrievers only, no domain dictionary.
Download it first (about 3 MB):

    curl -L -o /tmp/cmrc2018_dev.json \\
        https://raw.githubusercontent.com/ymcui/cmrc2018/master/squad-style-data/cmrc2018_dev.json
    python benchmarks/chunking.py --cmrc /tmp/cmrc2018_dev.json [--questions 1000]

`--chroma PATH`: Chroma's `state_of_the_union` corpus and its questions (their `questions_df.csv`,
references as excerpt spans; Smith & Troynikov 2024) from a checkout of
brandonstarxel/chunking_evaluation at the commit tests/unit/data/chroma_oracle/README.md names,
cut at three chunkings (paragraphs, 512/64 and 256/32 `unicode` tokens) in one gate session, bm25
on each; then each question's char recall, precision and IoU at k from its --rag-json ranking with
our scoring/spans.py and, where their package imports under `--chroma-python` (an interpreter with
pandas, chromadb, tiktoken and fuzzywuzzy; default this one), with their own
`_scores_from_dataset_and_retrievals`, and the largest difference between the two:

    git clone https://github.com/brandonstarxel/chunking_evaluation /tmp/chunking_evaluation
    git -C /tmp/chunking_evaluation checkout d451fc4cf56e417b755994b4ca5212fd5057c0d2
    python benchmarks/chunking.py --chroma /tmp/chunking_evaluation [--chroma-python PYTHON]

It prints, per chunking and retriever, the span metrics at k (their means over the answerable
questions), the chunk count and mean chunk length, recall@k over chunk ids (shown, never compared
across chunkings: its labels differ per chunking), then each chunking against `whole` per retriever:
the mean difference, the paired two-sided randomization p (scoring/stats.py, the gate's own test) and
the questions won, tied and lost.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ragretrieval.evalset.chunkers import Chunker, chunk_documents
from pytest_ragretrieval.evalset.documents import load_documents
from pytest_ragretrieval.evalset.records import Span
from pytest_ragretrieval.scoring.spans import char_iou, char_precision, char_recall
from pytest_ragretrieval.scoring.stats import randomization_p

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures" / "documents"
CHUNKINGS: dict[str, dict[str, Any]] = {
    "whole": {"type": "python", "python": "sample_chunker:split"},
    "512/64": {"type": "tokens", "size": 512, "overlap": 64, "tokenizer": "unicode"},
    "256/32": {"type": "tokens", "size": 256, "overlap": 32, "tokenizer": "unicode"},
    "3 sentences": {"type": "sentences", "size": 3, "overlap": 0},
}
SPAN_METRICS = ("char_recall", "char_precision", "char_iou", "answer_hit")
EMBEDDING = ("vector", "hybrid")
"""Retrievers that need the chunks' embeddings: run where the committed cache holds them (`whole`)."""
PATHS = ("documents", "evalset", "cache", "user_dict")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_text(settings: dict[str, Any]) -> str:
    """The settings as a --rag-config file: scalars first, then [chunker] and [retrievers.NAME]."""
    lines = [f"{key} = {toml_value(v)}" for key, v in settings.items() if key not in ("chunker", "retrievers")]
    lines += ["", "[chunker]", *(f"{key} = {toml_value(v)}" for key, v in settings["chunker"].items())]
    for name, body in settings["retrievers"].items():
        lines += ["", f"[retrievers.{name}]", *(f"{key} = {toml_value(v)}" for key, v in body.items())]
    return "\n".join(lines) + "\n"


def absolute(settings: dict[str, Any], base: Path) -> dict[str, Any]:
    """Path keys (top level and in retrievers) made absolute, as they are relative to the file holding them."""
    def fixed(table: dict[str, Any]) -> dict[str, Any]:
        return {k: str((base / v).resolve()) if k in PATHS and isinstance(v, str) else v for k, v in table.items()}
    out = fixed(settings)
    out["retrievers"] = {name: fixed(body) for name, body in settings.get("retrievers", {}).items()}
    return out


def configured(settings: dict[str, Any], name: str, chunker: dict[str, Any], work: Path) -> dict[str, Any]:
    """One chunking's settings: its chunker, a baseline in `work`, the embedding retrievers only at `whole`;
    other chunkings keep their token cache in `work`, out of the committed one."""
    out = {**settings, "chunker": chunker, "baseline": str(work / "baseline.json")}
    drop = () if name == "whole" else EMBEDDING
    if drop:
        out["cache"] = str(work / "cache")
    out["retrievers"] = {r: body for r, body in settings["retrievers"].items() if r not in drop}
    out["compare"] = [pair for pair in settings.get("compare", []) if not set(pair) & set(drop)]
    if not out["compare"]:
        del out["compare"]
    return out


def run_gate(settings: dict[str, Any], work: Path, chunker_path: Path) -> dict[str, Any]:
    """The gate once (recording a baseline in `work`), its --rag-json results."""
    config = work / "ragretrieval.toml"
    config.write_text(toml_text(settings), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(chunker_path), str(ROOT),
                                                                     os.environ.get("PYTHONPATH", "")]))}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-m", "rag_eval",
               "--rag-update-baseline", f"--rag-config={config}", f"--rag-json={work / 'results.json'}"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"the gate failed ({' '.join(command)}):\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    results: dict[str, Any] = json.loads((work / "results.json").read_text(encoding="utf-8"))
    return results


def chunk_sizes(documents: Path, chunker: dict[str, Any], root: Path) -> tuple[int, float]:
    """(chunk count, mean chunk length in characters) of the documents under the chunker."""
    chunks = chunk_documents(load_documents(documents), Chunker(**chunker), root)
    return len(chunks), sum(len(c.text) for c in chunks) / len(chunks)


def study(settings: dict[str, Any], chunker_path: Path, k: int) -> str:
    """Run every chunking; the table and the paired comparisons against `whole`, as text."""
    rows: list[list[str]] = []
    values: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for name, chunker in CHUNKINGS.items():
        with tempfile.TemporaryDirectory(prefix="rag-chunking-") as folder:
            results = run_gate(configured(settings, name, chunker, Path(folder)), Path(folder), chunker_path)
        count, mean = chunk_sizes(Path(settings["documents"]), chunker, chunker_path)
        for retriever, entry in results["retrievers"].items():
            values[name, retriever] = {q: v["metrics"] for q, v in entry["questions"].items()}
            means = entry["metrics"]
            rows.append([name, retriever, str(count), f"{mean:.0f}",
                         *(f"{means[f'{m}@{k}']:.4f}" for m in SPAN_METRICS), f"{means[f'recall@{k}']:.4f}"])
    head = ["chunking", "retriever", "chunks", "mean chars", *(f"{m}@{k}" for m in SPAN_METRICS),
            f"recall@{k} (ids)"]
    text = table(head, rows)
    pairs: list[list[str]] = []
    for (name, retriever), per in values.items():
        base = values.get(("whole", retriever))
        if name == "whole" or base is None:
            continue
        for metric in ("char_recall", "char_iou", "answer_hit"):
            key = f"{metric}@{k}"
            questions = sorted(q for q in per if key in per[q] and key in base[q])
            diff = np.array([per[q][key] - base[q][key] for q in questions])
            pairs.append([f"{name} vs whole", retriever, key, f"{diff.mean():+.4f}",
                          f"{randomization_p(diff, 'two-sided'):.4f}",
                          f"{int((diff > 0).sum())}/{int((diff == 0).sum())}/{int((diff < 0).sum())}"])
    return (text + "\n\npaired two-sided randomization test against whole (w/t/l: questions won, tied, lost):\n"
            + table(["a vs b", "retriever", "metric", "delta", "p", "w/t/l"], pairs))


def table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def sample_settings() -> dict[str, Any]:
    path = SAMPLE / "ragretrieval.toml"
    return absolute(tomllib.loads(path.read_text(encoding="utf-8")), path.parent)


def nearest(context: str, text: str, start: int) -> int:
    """Where `text` is in `context` nearest to the dataset's `answer_start` (3 of CMRC dev's 3,219 offsets do
    not hold their text; the gate refuses such a span in documents no baseline recorded)."""
    places = [at for at in range(len(context)) if context.startswith(text, at)]
    return min(places, key=lambda at: abs(at - start)) if places else start


def cmrc_settings(source: Path, work: Path, limit: int) -> dict[str, Any]:
    """CMRC 2018 dev as documents and span gold in `work`, with the sample's settings and bm25 retrievers."""
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    documents: list[str] = []
    questions: list[str] = []
    for article in data:
        for paragraph in article["paragraphs"]:
            doc = str(paragraph["id"]).replace("#", "_")
            documents.append(json.dumps({"id": doc, "text": paragraph["context"]}, ensure_ascii=False))
            for qa in paragraph["qas"]:
                answer = qa["answers"][0] if qa.get("answers") else None
                if answer and answer["text"].strip() and len(questions) < limit:
                    start = nearest(paragraph["context"], answer["text"], int(answer["answer_start"]))
                    span = {"doc": doc, "start": start, "end": start + len(answer["text"]), "grade": 1,
                            "text": answer["text"]}
                    questions.append(json.dumps({"id": str(qa["id"]), "query": qa["question"],
                                                 "relevant_spans": [span]}, ensure_ascii=False))
    (work / "docs.jsonl").write_text("\n".join(documents) + "\n", encoding="utf-8")
    (work / "evalset.jsonl").write_text("\n".join(questions) + "\n", encoding="utf-8")
    settings = sample_settings()
    settings.update(documents=str(work / "docs.jsonl"), evalset=str(work / "evalset.jsonl"), cache=str(work / "cache"))
    retrievers = {name: dict(body) for name, body in settings["retrievers"].items() if name not in EMBEDDING}
    retrievers["bm25_search"].pop("user_dict", None)
    settings["retrievers"] = retrievers
    settings.pop("compare", None)
    return settings


CHROMA_DATA = Path("chunking_evaluation") / "evaluation_framework" / "general_evaluation_data"
CHROMA_CORPUS = "state_of_the_union"
CHROMA_CHUNKINGS: dict[str, dict[str, Any]] = {
    "paragraphs": {"type": "python", "python": "sample_chunker:split"},
    "t512": {"type": "tokens", "size": 512, "overlap": 64, "tokenizer": "unicode"},
    "t256": {"type": "tokens", "size": 256, "overlap": 32, "tokenizer": "unicode"},
}
"""Whole paragraphs (no overlap; the sample's paragraph chunker) is the default chunking, the others named."""
THEIRS = """
import json, sys, types
from pathlib import Path
root = Path(sys.argv[1])
for name in ("chunking_evaluation", "chunking_evaluation.evaluation_framework"):
    package = types.ModuleType(name)  # their __init__ files import the synthetic evaluation (openai, anthropic)
    package.__path__ = [str(root.joinpath(*name.split(".")))]
    sys.modules[name] = package
import pandas as pd
from chunking_evaluation.evaluation_framework.base_evaluation import BaseEvaluation
given = json.load(sys.stdin)
evaluation = BaseEvaluation.__new__(BaseEvaluation)
evaluation.questions_df = pd.DataFrame(given["rows"])
print(json.dumps(evaluation._scores_from_dataset_and_retrievals(given["metadatas"], given["counts"])))
"""
"""Their function on the retrievals, in `--chroma-python`: their questions and the retrieved chunks' metadatas
as chromadb's `collection.query` returns them, as tests/unit/data/chroma_oracle/README.md's script hands them."""


def chroma_inputs(checkout: Path, work: Path) -> list[dict[str, Any]]:
    """Their corpus as one document and their questions (references as spans) in `work`; their rows."""
    data = checkout / CHROMA_DATA
    text = (data / "corpora" / f"{CHROMA_CORPUS}.md").read_text(encoding="utf-8")
    with (data / "questions_df.csv").open(encoding="utf-8", newline="") as file:
        rows = [row for row in csv.DictReader(file) if row["corpus_id"] == CHROMA_CORPUS]
    questions = []
    for number, row in enumerate(rows):
        spans = [{"doc": CHROMA_CORPUS, "start": int(r["start_index"]), "end": int(r["end_index"]), "grade": 1,
                  "text": text[int(r["start_index"]):int(r["end_index"])]} for r in json.loads(row["references"])]
        questions.append({"id": f"q{number:03d}", "query": row["question"], "relevant_spans": spans})
    (work / "docs.jsonl").write_text(json.dumps({"id": CHROMA_CORPUS, "text": text}) + "\n", encoding="utf-8")
    (work / "evalset.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return [{"question": row["question"], "references": json.loads(row["references"]), "corpus_id": CHROMA_CORPUS}
            for row in rows]


def chroma_settings(work: Path, k: int) -> dict[str, Any]:
    """One session: the first chunking the default, the others named, bm25 on each, each paired with the first."""
    default, *named = CHROMA_CHUNKINGS
    return {
        "documents": str(work / "docs.jsonl"), "evalset": str(work / "evalset.jsonl"), "baseline": str(work / "b.json"),
        "cache": str(work / "cache"), "k": k, "tokenizer": "english", "significance": "randomization",
        "metrics": ["recall", "char_recall", "char_precision", "char_iou", "answer_hit"],
        "chunker": CHROMA_CHUNKINGS[default], "chunkings": {n: CHROMA_CHUNKINGS[n] for n in named},
        "retrievers": {f"bm25_{n}": {"type": "bm25", **({"chunking": n} if n != default else {})}
                       for n in CHROMA_CHUNKINGS},
        "compare": [[f"bm25_{n}", f"bm25_{default}"] for n in named],
    }


def chroma_study(checkout: Path, python: str, k: int = 5) -> str:
    """One session over their corpus at every chunking; our span metrics against theirs, question by question."""
    with tempfile.TemporaryDirectory(prefix="rag-chroma-") as folder:
        work = Path(folder)
        rows = chroma_inputs(checkout, work)
        default = next(iter(CHROMA_CHUNKINGS))
        results = run_gate(chroma_settings(work, k), work, SAMPLE)
        documents = load_documents(work / "docs.jsonl")
        questions = {json.loads(line)["id"]: json.loads(line) for line in
                     (work / "evalset.jsonl").read_text(encoding="utf-8").splitlines()}
        lines: list[list[str]] = []
        for name, chunker in CHROMA_CHUNKINGS.items():
            chunks = chunk_documents(documents, Chunker(**chunker), SAMPLE)
            spans = {(c.id if name == default else f"{c.doc}#{name}#{c.id.rpartition('#')[2]}"):
                     Span(doc=str(c.doc), start=int(c.start or 0), end=int(c.end or 0)) for c in chunks}
            per = results["retrievers"][f"bm25_{name}"]["questions"]
            ours: list[tuple[float, float, float]] = []
            gate_gap = 0.0
            for qid, entry in per.items():
                top = [spans[c] for c in entry["ranking"][:k]]
                gold = [Span(doc=s["doc"], start=s["start"], end=s["end"]) for s in questions[qid]["relevant_spans"]]
                values = (char_iou(top, gold), char_recall(top, gold), char_precision(top, gold))
                ours.append(values)
                gate = (entry["metrics"][f"char_iou@{k}"], entry["metrics"][f"char_recall@{k}"],
                        entry["metrics"][f"char_precision@{k}"])
                gate_gap = max(gate_gap, *(abs(a - b) for a, b in zip(values, gate, strict=True)))
            theirs = chroma_scores(checkout, python, rows, [[spans[c] for c in e["ranking"][:k]] for e in per.values()])
            gap = "not run (their package did not import)"
            if theirs is not None:
                most = max(abs(a - b) for m, o in zip(ours, theirs, strict=True) for a, b in zip(m, o, strict=True))
                if most > 1e-12:
                    sys.exit(f"{name}: our span metrics and Chroma's differ by {most:.3e} (more than 1e-12)")
                gap = f"{most:.1e}"
            iou, recall, precision = (float(np.mean([v[i] for v in ours])) for i in range(3))
            lines.append([name, f"bm25_{name}", str(len(chunks)), f"{np.mean([len(c.text) for c in chunks]):.0f}",
                          f"{recall:.4f}", f"{precision:.4f}", f"{iou:.4f}", f"{gate_gap:.1e}", gap])
        head = ["chunking", "retriever", "chunks", "mean chars", f"char_recall@{k}", f"char_precision@{k}",
                f"char_iou@{k}", "max |ours - gate|", "max |ours - theirs|"]
        pairs = [[f"{c['a']} vs {c['b']}", c["metric"], f"{c['delta']:+.4f}", f"{c['p_value']:.4f}",
                  f"{c['wins']}/{c['ties']}/{c['losses']}"] for c in results["comparisons"]]
        return (f"{len(rows)} questions on {CHROMA_CORPUS} ({len(documents[0].text)} characters), k = {k}\n"
                + table(head, lines) + "\n\nthe gate's comparisons (paired two-sided randomization test):\n"
                + table(["a vs b", "metric", "delta", "p", "w/t/l"], pairs))


def chroma_scores(checkout: Path, python: str, rows: list[dict[str, Any]],
                  retrieved: list[list[Span]]) -> list[tuple[float, float, float]] | None:
    """Their (IoU, recall, precision) per question, or None where their package does not import."""
    metadatas = [[{"start_index": s.start, "end_index": s.end, "corpus_id": s.doc} for s in top] for top in retrieved]
    given = json.dumps({"rows": rows, "metadatas": metadatas, "counts": [len(top) for top in retrieved]})
    done = subprocess.run([python, "-c", THEIRS, str(checkout)], input=given, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        print(f"their function did not run under {python}: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    iou, recall, precision = json.loads(done.stdout)
    return list(zip(iou, recall, precision, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--sample", action="store_true", help="the bundled sample's documents version")
    which.add_argument("--cmrc", type=Path, metavar="PATH", help="CMRC 2018 dev (cmrc2018_dev.json)")
    which.add_argument("--chroma", type=Path, metavar="PATH", help="a checkout of brandonstarxel/chunking_evaluation")
    parser.add_argument("--chroma-python", default=sys.executable, help="--chroma: the interpreter that imports theirs")
    parser.add_argument("--questions", type=int, default=10**9, help="CMRC: the first N questions")
    args = parser.parse_args(argv)
    if args.sample:
        settings = sample_settings()
        print(study(settings, SAMPLE, int(settings.get("k", 5))))
        return 0
    if args.chroma:
        print(chroma_study(args.chroma, args.chroma_python))
        return 0
    with tempfile.TemporaryDirectory(prefix="rag-cmrc-") as folder:
        settings = cmrc_settings(args.cmrc, Path(folder), args.questions)
        print(study(settings, SAMPLE, int(settings.get("k", 5))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
