"""SIGTERM raises KeyboardInterrupt while the gate runs; held signals are remembered, not raised (the
results and the cleanup cannot be cut short); ignored stays ignored; the previous handlers come back."""
from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from pytest_ragretrieval.core.signals import Watch


@pytest.fixture(autouse=True)
def handlers() -> Iterator[None]:
    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


class Stopped(KeyboardInterrupt):
    """What the plugin passes: pytest's Session.Interrupted."""


def test_sigterm_raises_the_given_interrupt_until_stopped() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    watch = Watch(Stopped)
    watch.start()
    with pytest.raises(Stopped, match="received SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)
    assert watch.received == "SIGTERM"
    watch.stop()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_an_ignored_sigterm_stays_ignored() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    watch = Watch()
    watch.start()
    watch.hold()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    watch.stop()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN


def test_held_signals_are_remembered_and_do_not_interrupt() -> None:
    before = signal.getsignal(signal.SIGINT)
    watch = Watch()
    watch.start()
    watch.hold()
    finished = False
    os.kill(os.getpid(), signal.SIGTERM)
    os.kill(os.getpid(), signal.SIGINT)
    finished = True
    assert finished and watch.received == "SIGTERM"  # the first that came
    watch.stop()
    assert signal.getsignal(signal.SIGINT) is before
