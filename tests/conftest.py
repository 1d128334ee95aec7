"""Shared test set-up.

Compiled modules are imported here, before pytester snapshots sys.modules: pytester removes
modules first imported inside a test, and numpy cannot be imported twice in one process.
"""
from __future__ import annotations

import jieba  # noqa: F401
import numpy  # noqa: F401
import rank_bm25  # noqa: F401
