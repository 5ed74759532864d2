"""Frozen copies of players that reach a rank as snapshot files, loaded into its ``Opponents``.

A rank other than the league's (rank 0 of a data-parallel run, or an exploiter's own rank) knows a
snapshot player only by the file rank 0 named. It loads the player when first picked, keeps the
files it loaded in least-recently-used order, and releases the oldest ones no env is assigned to once
it holds more than ``capacity``; a released player is loaded again when it is picked again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from arena.agents.policy import load_policy


class PlayerFile(NamedTuple):
    """Where a rank loads a player from: the snapshot file, and the sha256 the league recorded for it
    (None for a file the league does not hash); a file whose bytes differ is refused."""

    path: str
    sha256: str | None = None


class SnapshotCopies:
    """The players one rank loaded from files into its ``Opponents``, least recently used first."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.loaded: list[str] = []

    def clear(self) -> None:
        """Forgets every copy (after binding to fresh ``Opponents``)."""
        self.loaded = []

    def use(self, opponents: Any, name: str, source: PlayerFile) -> None:
        """Makes ``name`` playable from its file ``source`` (loading it, checked against its sha256,
        unless ``opponents`` has it) and marks it the most recently used."""
        if not opponents.has_player(name):
            policy = load_policy(source.path, device=opponents.device, sha256=source.sha256)
            opponents.add_player(name, policy)
            self.loaded.append(name)
        elif name in self.loaded:
            self.loaded.remove(name)
            self.loaded.append(name)

    def trim(self, opponents: Any, in_use: Callable[[], set[str | None]]) -> None:
        """Beyond ``capacity``: releases the least recently used copies ``in_use()`` does not name
        (asked only then)."""
        if len(self.loaded) <= self.capacity:
            return
        keep = in_use()
        for name in list(self.loaded):
            if len(self.loaded) <= self.capacity:
                break
            if name not in keep:
                opponents.release_player(name)
                self.loaded.remove(name)
