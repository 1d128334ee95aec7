"""`ragretrieval schema results|baseline`: print the JSON Schema of a `--rag-json` results file or a
baseline, generated from the run record's types (the same types that read those files)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..record.schema import KINDS, schema
from .common import Result


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    command = commands.add_parser(
        "schema", parents=[common], help="print the JSON Schema of the --rag-json results or of the baseline",
        description="Print the JSON Schema (draft 2020-12) of a --rag-json results file (`results`) or of a "
        "baseline (`baseline`), generated from the types that read them and the reader's own rules (readable "
        "format versions, each value in its metric's range, rankings without repeats, no control characters, "
        "the fingerprint's sections and digests). What no schema can say (parts of the file agreeing with each "
        "other) is checked on reading too; docs/file-formats.md lists those checks.",
    )
    command.add_argument("kind", choices=KINDS)


def run(args: argparse.Namespace) -> Result:
    text = json.dumps(schema(args.kind), ensure_ascii=False, sort_keys=True, indent=2)
    return Result(out=text.split("\n"))
