"""`ragretrieval schema results|baseline`: JSON Schemas generated from the run record's types, checked
with jsonschema against real files: the bundled sample's baseline, older formats, and a `--rag-json`
record of a judged run with every optional part present."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from stages import GOOD, QUESTIONS, WORSE, baseline, config, fingerprint, ran

from pytest_ragretrieval.cli import main
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.gate.judge import Judge
from pytest_ragretrieval.gate.record import run_record
from pytest_ragretrieval.record.codec import decode, encode, to_document
from pytest_ragretrieval.record.schema import schema

ROOT = Path(__file__).resolve().parents[2]


def printed(capsys: pytest.CaptureFixture[str], kind: str) -> dict[str, object]:
    assert main(["schema", kind]) == 0
    found: dict[str, object] = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator.check_schema(found)
    return found


@pytest.mark.parametrize("path", ["baselines/retrieval.json", "tests/data/baseline-format-1.json",
                                  "tests/data/baseline-format-2.json"])
def test_the_sample_baseline_and_older_formats_meet_both_schemas(capsys: pytest.CaptureFixture[str], path: str) -> None:
    doc = json.loads((ROOT / path).read_text(encoding="utf-8"))
    for kind in ("baseline", "results"):
        jsonschema.validate(doc, printed(capsys, kind))


def judged_record(tmp_path: Path) -> dict[str, object]:
    """A `--rag-json` record of a run that failed items, compared configurations and adjusted p-values."""
    cfg = config(tmp_path, 'significance = "randomization"')
    fp = fingerprint(cfg)
    recorded = baseline(cfg, {name: ran(cfg, name, GOOD) for name in ("one", "two", "fused")}, fp)
    runs = {"one": ran(cfg, "one", WORSE), "two": ran(cfg, "two", GOOD), "fused": ran(cfg, "fused", GOOD)}
    judge = Judge(cfg, QUESTIONS, recorded, fp, runs)
    key = ItemKey("one", "metric", "ndcg@3")
    record = run_record(cfg, fp, runs, judge, {key: judge.outcome(key)}, {"judge": 0.01})
    return to_document(record)


def test_a_judged_run_s_record_meets_the_results_schema_and_not_the_baseline_s_fields(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = judged_record(tmp_path)
    run_only = {"failures", "comparisons", "since_baseline", "significance", "phases", "comparable", "notes",
                "pair_notes", "settings"}
    assert run_only <= set(doc)
    jsonschema.validate(doc, printed(capsys, "results"))
    baseline_schema = printed(capsys, "baseline")
    properties = baseline_schema["$defs"]["Record"]["properties"]  # type: ignore[index]
    assert not set(doc) - run_only - set(properties)
    entry = baseline_schema["$defs"]["Retriever"]["properties"]  # type: ignore[index]
    assert "failures" not in properties and not {"latency_ms", "recorded", "notes", "wrongly_empty"} & set(entry)
    assert {"recorded", "notes", "wrongly_empty"} <= set(doc["retrievers"]["one"])  # type: ignore[index]


def test_the_record_reads_back_as_written(tmp_path: Path) -> None:
    text = encode(decode(Path("r.json"), json.dumps(judged_record(tmp_path))).record)
    assert decode(Path("r.json"), text).document == json.loads(text)
    assert encode(decode(Path("r.json"), text).record) == text


def test_a_file_the_schema_refuses_is_refused_by_the_codec_with_its_path(tmp_path: Path) -> None:
    doc = judged_record(tmp_path)
    doc["significance"] = {**doc["significance"], "adjustment": "bonferroni"}  # type: ignore[dict-item]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema("results"))
    with pytest.raises(Exception, match=r"^r\.json: significance\.adjustment: invalid enum value 'bonferroni'; fix it"):
        decode(Path("r.json"), json.dumps(doc))
