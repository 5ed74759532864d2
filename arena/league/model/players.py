"""Players of a league and the pool (registry) that holds them.

A player is anything that can drive a team: a learner that is being trained, a frozen snapshot of a
learner (a checkpoint file identified by its sha256), a scripted bot, or an exploiter (AlphaStar's main
and league exploiters, which are learners with their own objective). Player ids are stable strings
("learner", "learner:snap-000003", "scripted:heuristic") used everywhere: payoff table, ratings, store.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

PLAYER_KINDS = ("learner", "snapshot", "scripted", "main_exploiter", "league_exploiter")
# Kinds that are trained (their weights change); all other kinds are fixed players.
LEARNING_KINDS = ("learner", "main_exploiter", "league_exploiter")
EXPLOITER_KINDS = ("main_exploiter", "league_exploiter")  # AlphaStar's, one generation after another

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Player:
    """One league member. Snapshots carry the checkpoint file, its sha256 and the learner they froze from."""

    player_id: str
    kind: str
    path: str | None = None
    sha256: str | None = None
    step: int | None = None
    parent: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.player_id, str) or not self.player_id.strip():
            raise ValueError(f"player_id {self.player_id!r} must be a non-empty string")
        if self.kind not in PLAYER_KINDS:
            raise ValueError(f"player kind {self.kind!r} of {self.player_id!r} is not one of {PLAYER_KINDS}")
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(
                f"sha256 {self.sha256!r} of {self.player_id!r} must be 64 lowercase hex digits"
            )
        if self.step is not None:
            if isinstance(self.step, bool) or not isinstance(self.step, numbers.Integral) or self.step < 0:
                raise ValueError(f"step {self.step!r} of {self.player_id!r} must be an int >= 0 or None")
            object.__setattr__(self, "step", int(self.step))  # numpy ints become plain ints
        if self.kind == "snapshot" and (self.path is None or self.sha256 is None):
            raise ValueError(
                f"snapshot {self.player_id!r} needs both path and sha256 (got path={self.path!r}, "
                f"sha256={self.sha256!r})"
            )

    @property
    def is_learning(self) -> bool:
        """True for players whose weights are being trained (learner and exploiters)."""
        return self.kind in LEARNING_KINDS


def snapshot_id(parent: str, index: int) -> str:
    """The id of the index-th snapshot frozen from learner `parent`, e.g. "learner:snap-000003"."""
    if index < 0:
        raise ValueError(f"snapshot index {index} must be >= 0")
    return f"{parent}:snap-{index:06d}"


class Pool:
    """Registry of players in the order they joined (the order "latest" and uniform choices rely on).

    Players retention retired (``league.retention``) stay registered, so ``get`` and ``in`` still
    know them and ``count_snapshots`` still counts them (a new snapshot's index never repeats one),
    but they are out of the pool: iteration, ``ids``, ``len``, ``of_kind``, ``snapshots`` and
    ``latest_snapshot`` leave them out, so matchmaking and the views never offer them.
    """

    def __init__(self, players: Iterable[Player] = (), retired: Iterable[str] = ()) -> None:
        self._players: dict[str, Player] = {}
        self._retired: set[str] = set()
        for player in players:
            self.add(player)
        self.retire(retired)

    def add(self, player: Player) -> Player:
        """Add a player; an identical player again is a no-op, a different one with the same id fails."""
        existing = self._players.get(player.player_id)
        if existing is not None:
            if existing != player:
                raise ValueError(
                    f"player id {player.player_id!r} is already taken by {existing!r}; got {player!r}"
                )
            return existing
        self._players[player.player_id] = player
        return player

    def retire(self, player_ids: Iterable[str]) -> None:
        """Takes registered players out of the pool (see the class docstring)."""
        for player_id in player_ids:
            self.get(player_id)
            self._retired.add(player_id)

    @property
    def retired(self) -> set[str]:
        return set(self._retired)

    def get(self, player_id: str) -> Player:
        try:
            return self._players[player_id]
        except KeyError:
            raise ValueError(
                f"unknown player {player_id!r}; known players: {sorted(self._players)}"
            ) from None

    def __contains__(self, player_id: object) -> bool:
        return player_id in self._players

    def __iter__(self) -> Iterator[Player]:
        return (p for p in self._players.values() if p.player_id not in self._retired)

    def __len__(self) -> int:
        return len(self._players) - len(self._retired)

    @property
    def ids(self) -> list[str]:
        return [p.player_id for p in self]

    def of_kind(self, *kinds: str) -> list[Player]:
        """Players of the given kinds, in joining order (retired ones left out)."""
        for kind in kinds:
            if kind not in PLAYER_KINDS:
                raise ValueError(f"player kind {kind!r} is not one of {PLAYER_KINDS}")
        return [p for p in self if p.kind in kinds]

    def snapshots(self, parent: str | None = None) -> list[Player]:
        """Snapshots in joining order, optionally only those frozen from `parent` (retired ones left out)."""
        return [p for p in self.of_kind("snapshot") if parent is None or p.parent == parent]

    def count_snapshots(self, parent: str) -> int:
        """Every snapshot ever frozen from ``parent``, retired ones included: the next one's index."""
        return sum(1 for p in self._players.values() if p.kind == "snapshot" and p.parent == parent)

    def latest_snapshot(self, parent: str | None = None) -> Player | None:
        """The newest snapshot (of `parent` if given), or None when there is none."""
        snaps = self.snapshots(parent)
        return snaps[-1] if snaps else None


_GENERATION = re.compile(r"^(?P<kind>.+)-(?P<gen>\d+)$")


def exploiter_id(kind: str, generation: int) -> str:
    """The player id of generation ``generation`` of an exploiter kind, e.g. ``main_exploiter-0``."""
    if kind not in EXPLOITER_KINDS:
        raise ValueError(f"exploiter kind {kind!r} is not one of {EXPLOITER_KINDS}")
    if generation < 0:
        raise ValueError(f"generation {generation} must be >= 0")
    return f"{kind}-{generation}"


def current_generation(pool: Pool, kind: str) -> int | None:
    """The newest generation of ``kind`` registered in the league, or None."""
    generations = [
        int(m.group("gen")) for p in pool.of_kind(kind)
        if (m := _GENERATION.match(p.player_id)) and m.group("kind") == kind
    ]
    return max(generations) if generations else None
