"""SIGTERM raises KeyboardInterrupt while the gate runs; the cleanup cannot be cut short; ignored stays ignored."""
from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from pytest_ragretrieval.core.signals import deferred, handle_sigterm


@pytest.fixture(autouse=True)
def handlers() -> Iterator[None]:
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


def test_sigterm_raises_keyboard_interrupt_until_restored() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    restore = handle_sigterm()
    assert restore is not None
    with pytest.raises(KeyboardInterrupt, match="received SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
    restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_an_ignored_sigterm_stays_ignored() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    assert handle_sigterm() is None
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_signals_during_the_cleanup_do_not_interrupt_it() -> None:
    handle_sigterm()
    before = signal.getsignal(signal.SIGINT)
    finished = False
    with deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
        finished = True
    assert finished
    assert signal.getsignal(signal.SIGINT) is before
