"""What a league publishes: the player spec ``league:RUN_DIR``.

A league trains many policies; what it *publishes* is the one a user should take away and the one
its strength is judged by:

- ``league.publish: newest`` (the default): the newest snapshot of the main learner. With the guard
  on (``league.gauntlet.guard``), every such snapshot is a judged one: a candidate the gauntlet
  rejected was published with the best snapshot's weights instead (``arena/league/run/guard.py``).
- ``league.publish: mixture``: the main learner's last ``publish_window`` snapshots with equal
  weights; ``league.publish: nash``: PSRO's meta-strategy over its snapshots (``arena.league.model.meta``).
  Either is played by drawing one member per match. ``league.publish: held``: the candidate to publish
  (a snapshot whose gauntlet cleared the guard's bar) that held the main exploiter longest
  (``arena.league.model.time_to_exploit.held_longest``); the newest snapshot until one has been
  attacked. ``league.publish: unbeaten``: the newest candidate no main exploiter generation has
  beaten (``newest_unbeaten``), else held's choice. The league writes it to its store (meta key
  ``published``, in one transaction) after each snapshot, so a reader beside a running trainer
  always sees a whole one.

``published(run_dir)`` reads it back, read-only, with every member's file and sha256;
``arena.agents.players.resolve_player`` turns it into an evaluation player. ``arena.evaluate``,
``arena.export`` (a single network), ``arena.bench exploit`` and a trainer's ``opponents.players``
accept ``league:RUN_DIR`` wherever they accept a player.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.league.model.players import Player
from arena.league.model.snapshots import snapshot_file, verify_snapshot
from arena.league.model.store import LEAGUE_DB, LeagueStore

PUBLISHED_KEY = "published"  # store meta: {"members": [ids], "weights": [w], "step": int}
PUBLISH_MODES = ("newest", "mixture", "nash", "held", "unbeaten")
BY_EXPLOITERS = ("held", "unbeaten")  # the modes that publish by the exploiters' games against candidates


@dataclass(frozen=True)
class PublishedMember:
    player_id: str
    path: Path
    sha256: str
    weight: float


@dataclass(frozen=True)
class Published:
    """A league's published policy: one member (a single network) or several with weights."""

    run_dir: Path
    members: tuple[PublishedMember, ...]
    step: int | None

    @property
    def is_mixture(self) -> bool:
        return len(self.members) > 1

    def describe(self) -> str:
        if not self.is_mixture:
            return f"{self.members[0].player_id} of {self.run_dir}"
        parts = ", ".join(f"{m.player_id} {m.weight:.3f}" for m in self.members)
        return f"a mixture of {len(self.members)} snapshots of {self.run_dir}: {parts}"


def learner_id_of(meta: Mapping[str, str]) -> str:
    """The main learner's id in a league store's meta table (the league config it was run with)."""
    config = json.loads(meta.get("league_config", "{}"))
    return str(config.get("learner_id") or "learner")


def published_mixture(publish: str, window: int, snapshots: Sequence[str],
                      strategy: Mapping[str, float], held: str | None = None) -> dict[str, float] | None:
    """The mixture ``{player: weight}`` a league publishes after the main learner's ``snapshots``
    (ids, in order): its last ``window`` with equal weights for ``mixture``, PSRO's meta-strategy
    ``strategy`` for ``nash`` (None while it is empty), the candidate ``held`` alone for ``held``
    (None while there is none); None for ``newest`` (the newest alone)."""
    if publish == "mixture":
        return {p: 1.0 for p in snapshots[-window:]}
    if publish == "nash" and strategy:
        return dict(strategy)
    if publish in BY_EXPLOITERS and held is not None:
        return {held: 1.0}
    return None


def published_record(meta: Mapping[str, str]) -> dict[str, Any] | None:
    """The mixture a league's store says it publishes (``{"members", "weights", "step"}``), or None
    where it publishes its newest snapshot (no mixture recorded)."""
    return json.loads(meta[PUBLISHED_KEY]) if PUBLISHED_KEY in meta else None


def published(run_dir: str | os.PathLike[str]) -> Published:
    """The policy the league in ``run_dir`` publishes; ``FileNotFoundError`` without a league store
    there, ``ValueError`` when it has published nothing yet (no snapshot of its main learner)."""
    run_dir = Path(run_dir)
    db = run_dir / LEAGUE_DB
    if not db.is_file():
        raise FileNotFoundError(f"league:{run_dir}: no league store at {db} (is it a league's run "
                                "directory?)")
    with LeagueStore(db, read_only=True) as store:
        players = {p.player_id: p for p in store.players()}
        meta = store.meta()
    learner = learner_id_of(meta)
    record = published_record(meta)
    if record is not None:
        ids, weights = list(record["members"]), [float(w) for w in record["weights"]]
        missing = [i for i in ids if i not in players]
        if missing:
            raise ValueError(f"league:{run_dir}: the published mixture names {missing}, which the store "
                             "does not hold")
        members = tuple(_member(run_dir, players[i], w) for i, w in zip(ids, weights, strict=True) if w > 0)
        if not members:
            raise ValueError(f"league:{run_dir}: the published mixture has no member with a weight above 0")
        return Published(run_dir, members, record.get("step"))
    snapshots = [p for p in players.values() if p.kind == "snapshot" and p.parent == learner]
    if not snapshots:
        raise ValueError(f"league:{run_dir}: the league has published nothing yet (no snapshot of "
                         f"{learner!r}); train it until its first snapshot")
    newest = snapshots[-1]
    return Published(run_dir, (_member(run_dir, newest, 1.0),), newest.step)


def _member(run_dir: Path, player: Player, weight: float) -> PublishedMember:
    if player.kind != "snapshot" or player.sha256 is None:
        raise ValueError(f"league:{run_dir}: published player {player.player_id!r} is a {player.kind}, "
                         "not a snapshot with a file")
    return PublishedMember(player.player_id, snapshot_file(run_dir, player).resolve(), player.sha256,
                           float(weight))


def published_checkpoints(run_dir: str | os.PathLike[str]) -> dict[str, float]:
    """``{"checkpoint:<file>": weight}`` of the published members (weights summing to 1), each file
    checked against its sha256: what a trainer's fixed opponent mix draws per match for
    ``league:RUN_DIR``."""
    found = published(run_dir)
    total = sum(m.weight for m in found.members)
    out: dict[str, float] = {}
    for m in found.members:
        verify_snapshot(m.path, m.sha256)
        out[f"checkpoint:{m.path}"] = out.get(f"checkpoint:{m.path}", 0.0) + m.weight / total
    return out
