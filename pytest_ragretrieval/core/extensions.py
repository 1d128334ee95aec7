"""The four plug-in points' registries, open to other distributions through entry points.

A distribution adds a retriever type, an embedder, a metric or a report format by declaring an
entry point in the group `pytest_ragretrieval.<point>` (see GROUPS): its name is what a config
or an option names, its value the object the registry holds (`module` for a retriever type,
`module:ATTRIBUTE` for the others). The built-ins are not entry points: each registry is seeded
with them in its own module, so a source checkout needs no installed metadata and the built-in
lines stay the one place to read. Entry points are read once per process, when a registry is
first used (not at import: loading the plugin stays cheap); a bad one is one line naming its
group, entry and distribution, raised on every use of that registry.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from .errors import ExtensionError, describe_exception

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")
PREFIX = "pytest_ragretrieval"
GROUPS = ("retrievers", "embedders", "metrics", "formats")
BUILT_IN = "pytest-ragretrieval"


@functools.cache
def read_all() -> dict[str, tuple[EntryPoint, ...]]:
    """Every installed entry point of our groups, by group: one scan of the installed metadata."""
    from importlib.metadata import entry_points

    found = entry_points()
    return {
        group: tuple(sorted(found.select(group=f"{PREFIX}.{group}"), key=lambda ep: (ep.name, distribution(ep))))
        for group in GROUPS
    }


def distribution(ep: EntryPoint) -> str:
    """`name version` of the distribution that declares `ep`."""
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "an unknown distribution"


class Registry(Mapping[str, T]):
    """A plug-in point's members by name: the built-ins, then each entry point of its group.

    `check(name, value, members)` returns the value as the registry holds it, or raises
    ValueError saying what it is not. Reading it as a mapping raises the first bad entry's
    ExtensionError; `usable()` gives what loaded, for pytest's options, which every run adds
    (a broken extension must fail the gate, not every test run).
    """

    def __init__(self, point: str, builtins: Mapping[str, T], check: Callable[[str, object, Mapping[str, T]], T]):
        assert point in GROUPS
        self.point = point
        self.group = f"{PREFIX}.{point}"
        self.builtins = dict(builtins)
        self._check = check
        self._members: dict[str, T] | None = None
        self._owners: dict[str, str] = {}
        self._error: ExtensionError | None = None

    def _load(self) -> dict[str, T]:
        if self._members is None:
            members = dict(self.builtins)
            self._owners = dict.fromkeys(members, BUILT_IN)
            for ep in read_all()[self.point]:
                try:
                    members[ep.name] = self._entry(ep, members)
                    self._owners[ep.name] = distribution(ep)
                except ExtensionError as exc:
                    self._error = self._error or exc
            self._members = members
        return self._members

    def _entry(self, ep: EntryPoint, members: Mapping[str, T]) -> T:
        where = f"entry point {ep.name} = {ep.value} (group {self.group}) of {distribution(ep)}"
        uninstall = f"uninstall {distribution(ep).rpartition(' ')[0]}"
        if ep.name in members:
            taken = f"the name {ep.name!r} is {self._owners[ep.name]}'s already"
            raise ExtensionError(f"{where}: {taken}; rename the entry point or {uninstall}")
        try:
            value = ep.load()
        except Exception as exc:
            problem = " ".join(describe_exception(exc).split())
            raise ExtensionError(f"{where}: cannot be loaded ({problem}); fix it or {uninstall}") from None
        try:
            return self._check(ep.name, value, members)
        except ValueError as exc:
            raise ExtensionError(f"{where}: {exc}; fix it or {uninstall}") from None

    def usable(self) -> dict[str, T]:
        """The members that loaded, whatever another entry point's problem."""
        return dict(self._load())

    def _ready(self) -> dict[str, T]:
        members = self._load()
        if self._error is not None:
            raise self._error
        return members

    def __getitem__(self, name: str) -> T:
        return self._ready()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ready())

    def __len__(self) -> int:
        return len(self._ready())
