"""The baseline is one projection of the run record (`record/projection.py`): `ragretrieval schema
baseline` lists exactly its fields, an update writes exactly the baseline's part of the record's
entries, and a field added to the record's `Retriever` reaches the results schema, every report's
view input and (unless marked run-only) the baseline, with no further edit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec import UNSET, structs
from stages import GOOD, QUESTIONS, WORSE, baseline, config, fingerprint, ran

from pytest_ragretrieval.baseline.format import retriever_record
from pytest_ragretrieval.cli import main
from pytest_ragretrieval.gate.evaluation import evaluate
from pytest_ragretrieval.gate.items import ItemKey
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.record.projection import (
    RUN_ONLY,
    RUN_ONLY_PER_RETRIEVER,
    baseline_entry,
    baseline_fields,
    baseline_of,
)
from pytest_ragretrieval.record.types import Record, Retriever

ROOT = Path(__file__).resolve().parents[2]


def printed(capsys: pytest.CaptureFixture[str], kind: str) -> dict[str, object]:
    assert main(["schema", kind]) == 0
    found: dict[str, object] = json.loads(capsys.readouterr().out)
    return found


def test_schema_baseline_lists_exactly_the_projection_s_fields(capsys: pytest.CaptureFixture[str]) -> None:
    definitions = printed(capsys, "baseline")["$defs"]
    assert isinstance(definitions, dict)
    assert set(definitions["Record"]["properties"]) == set(baseline_fields(Record, RUN_ONLY))
    assert set(definitions["Retriever"]["properties"]) == set(baseline_fields(Retriever, RUN_ONLY_PER_RETRIEVER))
    assert "reused" not in definitions["Record"]["properties"]  # run-only: it named what this run took from its cache
    results = printed(capsys, "results")["$defs"]
    assert isinstance(results, dict)
    assert set(results["Record"]["properties"]) == set(Record.__struct_fields__)
    assert set(results["Retriever"]["properties"]) == set(Retriever.__struct_fields__)


def test_every_run_only_name_is_a_field_that_a_baseline_can_leave_out() -> None:
    for kind, run_only in ((Record, RUN_ONLY), (Retriever, RUN_ONLY_PER_RETRIEVER)):
        defaults = dict(zip(kind.__struct_fields__[-len(kind.__struct_defaults__):], kind.__struct_defaults__,
                            strict=True))
        assert set(run_only) <= set(defaults), f"{kind.__name__}: a run-only name that is no field, or required"


def test_an_update_writes_the_baseline_s_part_of_the_record(tmp_path: Path) -> None:
    """The record's entries, projected, are what an update records: no field set for the record alone
    (in `run_record`) is published in the baseline's schema without being written to the file."""
    cfg = config(tmp_path, 'significance = "randomization"')
    fp = fingerprint(cfg)
    runs = {"one": ran(cfg, "one", WORSE), "two": ran(cfg, "two", GOOD)}
    recorded = baseline(cfg, {name: ran(cfg, name, GOOD) for name in runs}, fp)
    selected = [ItemKey(name, "metric", spec.label) for name in runs for spec in cfg.metrics]
    found = evaluate(cfg, QUESTIONS, recorded, fp, runs, selected, update=True, allow_regression=True, reused=["two"])
    assert found.update is not None and found.update.record is not None
    written = found.update.record
    for name, entry in found.record.retrievers.items():
        run = runs[name].result
        assert run is not None
        assert baseline_entry(entry) == baseline_entry(retriever_record(run))
        assert baseline_entry(entry) == structs.replace(written.retrievers[name], bar=UNSET, approved=UNSET)  # the update's
    projected = json.loads(encode(baseline_of(found.record)))
    assert not set(projected) & set(RUN_ONLY) and "reused" not in projected
    assert all(not set(entry) & set(RUN_ONLY_PER_RETRIEVER) for entry in projected["retrievers"].values())


ADDED = """
import json, sys
from msgspec import UNSET, UnsetType
import pytest_ragretrieval.record.types as types
from pytest_ragretrieval.record import projection


class Retriever(types.Retriever, frozen=True):
    spread: types.Values | UnsetType = UNSET


types.Retriever = Retriever  # before anything reads Record's fields: they name `Retriever` in types
if sys.argv[1] == "run-only":
    projection.RUN_ONLY_PER_RETRIEVER = (*projection.RUN_ONLY_PER_RETRIEVER, "spread")
from pytest_ragretrieval.record.codec import encode
from pytest_ragretrieval.record.schema import schema
from pytest_ragretrieval.report.view import view

record = types.Record(format_version=3, k=5, fingerprint={}, retrievers={
    "bm25": Retriever(metrics={"ndcg@5": 0.5}, spread={"ndcg@5": 0.25})})
print(json.dumps({
    "results schema": "spread" in schema("results")["$defs"]["Retriever"]["properties"],
    "baseline schema": "spread" in schema("baseline")["$defs"]["Retriever"]["properties"],
    "results file": json.loads(encode(record))["retrievers"]["bm25"].get("spread"),
    "baseline file": json.loads(encode(projection.baseline_of(record)))["retrievers"]["bm25"].get("spread"),
    "view input": view(record).retrievers[0].entry.spread,
}))
"""


@pytest.mark.parametrize("marked", ["run-only", "baseline"])
def test_a_field_added_to_the_record_s_retriever_needs_no_plumbing(marked: str) -> None:
    """CONTRIBUTING's worked example ("Adding a statistic"): `spread`, added to the type alone."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", ADDED, marked], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    in_baseline = marked == "baseline"
    assert found == {"results schema": True, "baseline schema": in_baseline, "results file": {"ndcg@5": 0.25},
                     "baseline file": {"ndcg@5": 0.25} if in_baseline else None, "view input": {"ndcg@5": 0.25}}
