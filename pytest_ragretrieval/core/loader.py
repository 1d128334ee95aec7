"""Importing users' code named as `module:attribute` (factories, embedders)."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import ConfigError


def load_object(path: str, root: Path, what: str) -> Callable[..., Any]:
    """Import `module:attribute`, looking in the config's folder first as pytest's rootdir would."""
    module_name, _, attribute = path.partition(":")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{what} {path!r}: cannot import module {module_name!r} ({exc})") from None
    try:
        target = module
        for part in attribute.split("."):
            target = getattr(target, part)
    except AttributeError:
        raise ConfigError(f"{what} {path!r}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise ConfigError(f"{what} {path!r}: {attribute!r} is not callable")
    return target
