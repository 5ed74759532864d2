"""A learning player of the league in a training run: its trainer, matchmaker, snapshot and restart rules.

A snapshot freezes the learner's current policy into an immutable file
``RUN_DIR/league/snapshots/<name>.pt`` (``{"policy_spec", "policy"}``, so ``load_policy`` and
``arena.evaluate`` read it) and registers it in the league with its sha256. The file name is the
player id made portable (``snapshot_file_name``: ``learner:snap-000008`` is stored as
``learner_snap-000008.pt``); the store keeps each player's path, so run directories written with the
old names (the id itself, colon included) still load. The file is written first
and the player registered second: a crash in between leaves a file the store does not know, which the
next snapshot of that index replaces (the store is the source of truth).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from arena.league.league import League
from arena.league.players import Player, snapshot_id
from arena.league.snapshots import SnapshotGate, write_snapshot
from arena.league.trainer_link import LeagueMatchmaker
from arena.trainer.events import UpdateFinished, UpdateListener

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = Path("league") / "snapshots"


def snapshot_file_name(player_id: str) -> str:
    """A portable file name for a snapshot id: every character other than letters, digits, ``.``,
    ``_`` and ``-`` (the colon of ``learner:snap-000008``, a slash) becomes ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", player_id) + ".pt"


def snapshot_state(policy: Any) -> dict[str, Any]:
    """What a snapshot file holds: ``{"policy_spec", "policy"}`` (a CPU copy of the weights)."""
    return {"policy_spec": dict(policy.spec),
            "policy": {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}}


def freeze_policy(league: League, run_dir: str | os.PathLike[str], learner_id: str, policy: Any,
                  step: int) -> Player:
    """Writes the next snapshot of ``learner_id`` and registers it; returns the new player."""
    index = len(league.pool.snapshots(parent=learner_id))
    player_id = snapshot_id(learner_id, index)
    if player_id in league.pool:
        raise ValueError(f"snapshot id {player_id!r} is already taken in the league")
    relative = SNAPSHOT_DIR / snapshot_file_name(player_id)
    taken = [p.player_id for p in league.pool if p.path is not None and Path(p.path) == relative]
    if taken:
        raise ValueError(f"snapshot {player_id!r} would be written to {relative}, the file of {taken[0]!r}")
    path = Path(run_dir) / relative
    if path.exists():
        logger.warning("replacing %s: a snapshot file the league store never registered (crash)", path)
        path.unlink()
    sha256 = write_snapshot(path, snapshot_state(policy))
    player = Player(player_id, "snapshot", path=str(relative), sha256=sha256, step=int(step),
                    parent=learner_id)
    league.add_player(player)
    logger.info("snapshot %s at step %d (%s)", player_id, step, sha256[:12])
    return player


class LeagueTrainer(Protocol):
    """What the league uses of a learner's trainer (``PPOTrainer``; an exploiter on its own rank is a
    ``RemoteTrainer`` with the same face). At run time the trainer talks to the league only through
    its typed events (``arena.trainer.events``): the matches reach the league through the matchmaker
    interface, and each ``UpdateFinished`` (step, checkpoint count, policy) reaches the learner's
    ``LeagueLearner.heard`` (the main learner's through ``LeagueRun.on_update``, which then runs the
    league's round). The league asks one thing back: ``restore_policy`` (its guard). The attributes
    below are read when the learner joins the league (its starting step and weights, the gauntlet's
    threads and env, an exploiter's settings), and the league drives its exploiters' trainers itself
    (``evaluate``, ``train``, ``mean_and_log``, ``save``, ``close``)."""

    global_step: int
    checkpoints_written: int
    policy: Any  # arena.agents.policy.Policy
    config: Any  # TrainerConfig: num_threads for the gauntlet
    env_spec: dict[str, Any]  # the env's overrides, for the gauntlet's games

    @property
    def done(self) -> bool: ...

    def add_update_listener(self, listener: UpdateListener) -> None: ...

    def restore_policy(self, weights: Mapping[str, Any]) -> None: ...

    def evaluate(self) -> int: ...

    def train(self) -> dict[str, float]: ...

    def mean_and_log(self) -> dict[str, float]: ...

    def save(self) -> Any: ...

    def close(self) -> None: ...


@dataclass
class LeagueLearner:
    """One learning player: ``trainer`` plays as ``player_id``; ``gate`` decides its snapshots against
    the players of ``vs_kinds``; after a snapshot it restarts from fresh weights with ``reset_prob``.
    ``step``, ``checkpoints`` and ``policy`` are the trainer's as of its last ``UpdateFinished``
    (``heard``; at first, as it joined the league): what snapshots, gates and match tags read."""

    player_id: str
    kind: str
    trainer: LeagueTrainer
    matchmaker: LeagueMatchmaker
    gate: SnapshotGate
    vs_kinds: Sequence[str] = ("snapshot", "scripted")
    reset_prob: float = 0.0
    generation: int = 0
    seed: int = 0
    step: int = field(init=False)
    checkpoints: int = field(init=False)
    policy: Any = field(init=False)

    def __post_init__(self) -> None:
        self.step = int(self.trainer.global_step)
        self.checkpoints = int(self.trainer.checkpoints_written)
        self.policy = self.trainer.policy

    def heard(self, event: UpdateFinished) -> dict[str, float]:
        """The update listener of the learner's trainer: keeps its step, checkpoint count and policy."""
        self.step, self.checkpoints = int(event.learner_step), int(event.checkpoints_written)
        self.policy = event.policy
        return {}

    def snapshot_due(self, league: League) -> bool:
        """What the gate says now, from the league's payoff against ``vs_kinds``."""
        step = self.step
        rates = league.win_rates_vs_pool(self.player_id, kinds=tuple(self.vs_kinds))
        return self.gate.should_snapshot(step, league.last_snapshot_step(self.player_id), rates)

    def snapshot(self, league: League, run_dir: str | os.PathLike[str]) -> Player:
        return freeze_policy(league, run_dir, self.player_id, self.policy, self.step)

    def restarts_after(self, snapshot_index: int) -> bool:
        """Whether its ``snapshot_index``-th snapshot ends the learner's generation. The draw depends
        only on the seed, the generation and the index, so a resumed run decides the same way."""
        if self.reset_prob <= 0.0:
            return False
        if self.reset_prob >= 1.0:
            return True
        draw = np.random.default_rng([self.seed, self.generation, snapshot_index]).random()
        return bool(draw < self.reset_prob)
