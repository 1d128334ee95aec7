"""Switches read from the environment: one reading rule for all of them."""
from __future__ import annotations

import os


def truthy(value: str | None) -> bool:
    """How environment switches such as HF_HUB_OFFLINE are read: 1, true, yes or on."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def in_github_actions() -> bool:
    """GitHub sets GITHUB_ACTIONS=true in every step; the step summary and annotations need it."""
    return os.environ.get("GITHUB_ACTIONS") == "true"
