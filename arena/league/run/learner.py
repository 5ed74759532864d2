"""The league's side of a training run: how a learning player and its trainer are linked.

A trainer talks to the league only through its typed events (``arena.trainer.events``):

- ``LeagueMatchmaker`` is the trainer's matchmaker (``MatchesEnded -> player ids``). At every
  episode end it
  1. records each finished match in the league (learner vs the env's previous team-1 player,
     outcome, length, learner step, and the checkpoint count of each learning player in it):
     committed to the store as it finishes, then payoff and ratings update;
  2. picks the envs' next opponents with a chooser (the league ``Matchmaker``, or an exploiter's);
  3. has the player cache load (and register with ``Opponents``) any frozen player newly needed.
  Its ``state_dict`` (the chooser's RNG and who plays in each env) rides in the trainer checkpoint.
- ``LeagueLearner.heard`` is an update listener (``UpdateFinished``): the learner's step, checkpoint
  count and policy as of its last update, which its snapshots, gates and match tags read
  (``LeagueRun.on_update`` hears the main learner's updates and then runs the league's round).

Snapshots: a snapshot freezes the learner's current policy into an immutable file
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
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from arena.envs.outcomes import Result
from arena.league.matchmaking.player_cache import PlayerCache, snapshot_file
from arena.league.model.league import League
from arena.league.model.players import Player, snapshot_id
from arena.league.model.snapshots import SnapshotGate, file_stat, write_snapshot
from arena.league.timing import LeagueTimer
from arena.player_specs import MIRROR, parse_player
from arena.trainer.events import MatchesEnded, UpdateFinished, UpdateListener
from arena.trainer.snapshot_copies import PlayerFile

logger = logging.getLogger(__name__)

SNAPSHOT_DIR = Path("league") / "snapshots"



class Chooser(Protocol):
    """Picks opponents for n env slots of a learner (``arena.league.Matchmaker`` is one)."""

    rng: np.random.Generator

    def choose_many(self, learner_id: str, n: int) -> list[str]: ...


class LeagueMatchmaker:
    """``MatchesEnded -> player ids``: records finished matches, then chooses the next opponents."""

    def __init__(
        self,
        league: League,
        learner_id: str,
        chooser: Chooser,
        cache: PlayerCache,
        *,
        timer: LeagueTimer | None = None,
        checkpoints_of: Callable[[str], int | None] | None = None,
    ) -> None:
        league.pool.get(learner_id)  # fails clearly for a learner the league does not know
        self.league, self.learner_id, self.chooser, self.cache = league, learner_id, chooser, cache
        self.timer = timer if timer is not None else cache.timer
        # A learning player's count of checkpoints written (None for frozen players): tags each match.
        self.checkpoints_of = checkpoints_of
        self.current: list[str | None] = []  # league id of the team-1 player of each env
        self.matches_recorded = 0
        self.bound = False

    def bind(self, opponents: Any) -> None:
        """Called by the trainer's ``Opponents`` before its first request: players are registered with it."""
        self.cache.bind(opponents)
        self.current = [None] * int(opponents.num_envs)
        self.bound = True

    def __call__(self, event: MatchesEnded) -> list[str]:
        with self.timer.measure("matchmaking"):  # recording and loading inside count as their own parts
            return self._next_opponents(event)

    def _next_opponents(self, event: MatchesEnded) -> list[str]:
        env_ids = np.asarray(event.env_ids, dtype=np.int64)
        if len(env_ids) and int(env_ids.max()) >= len(self.current):
            self.current += [None] * (int(env_ids.max()) + 1 - len(self.current))
        finished = event.ended
        if finished.any():
            self._record(env_ids[finished], np.asarray(event.outcomes)[finished],
                         np.asarray(event.lengths)[finished], event.learner_step)
        picks = self.chooser.choose_many(self.learner_id, len(env_ids))
        replaced = {self.current[env] for env in env_ids.tolist()}
        for env, player_id in zip(env_ids.tolist(), picks, strict=True):
            self.current[env] = player_id
        # The replaced players still hold their envs in Opponents until it applies these picks.
        self.cache.ensure(picks, in_use=lambda: self.assigned() | {p for p in replaced if p is not None})
        return [MIRROR if p == self.learner_id else p for p in picks]

    def _record(self, envs: np.ndarray, codes: np.ndarray, lengths: np.ndarray, step: int) -> None:
        team_a = [self.learner_id]
        with self.timer.measure("record"), self.league.store.batch():  # one commit for the step's matches
            for k, (env, code) in enumerate(zip(envs.tolist(), codes.tolist(), strict=True)):
                opponent = self.current[env]
                if opponent is None:
                    continue  # an env this matchmaker never assigned (cannot happen through Opponents)
                length = float(lengths[k])
                tags = None
                if self.checkpoints_of is not None:
                    tags = {p: c for p in (self.learner_id, opponent)
                            if (c := self.checkpoints_of(p)) is not None}
                self.league.record_match(team_a, [opponent], Result.of_team(int(code), 0), length=length,
                                         learner_step=step, checkpoints=tags)
                self.matches_recorded += 1

    def source_of(self, player_id: str) -> PlayerFile | None:
        """Where another rank of a data-parallel run loads ``player_id`` from: a frozen snapshot's
        file and its recorded sha256 (the rank refuses other bytes); None for the ids ``Opponents``
        builds itself (scripted bots, ``sb3:`` models from their path, the learner as ``mirror``)."""
        if parse_player(player_id).kind in ("mirror", "scripted", "sb3"):
            return None
        player = self.league.pool.get(player_id)
        if player.path is None:
            raise ValueError(f"player {player_id!r} ({player.kind}) plays with live weights, which only "
                             "rank 0 holds: a data-parallel run can play frozen snapshots and scripted bots")
        return PlayerFile(str(snapshot_file(self.cache.run_dir, player)), player.sha256)

    def assigned(self) -> set[str]:
        """League ids of the players assigned to some env now."""
        return {p for p in self.current if p is not None}

    def mix(self) -> dict[str, float]:
        """Fraction of envs assigned to each opponent now (the learner itself as ``mirror``)."""
        counts = Counter(MIRROR if p == self.learner_id else p for p in self.current if p is not None)
        total = sum(counts.values())
        return {p: n / total for p, n in sorted(counts.items())} if total else {}

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"rng": self.chooser.rng.bit_generator.state, "current": list(self.current)}
        if callable(getattr(self.chooser, "state_dict", None)):
            state["chooser"] = self.chooser.state_dict()  # type: ignore[attr-defined]
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores the RNG and the assignment; the assigned players are loaded so that ``Opponents``
        can restore its own assignment right after."""
        self.chooser.rng.bit_generator.state = dict(state["rng"])
        if "chooser" in state and callable(getattr(self.chooser, "load_state_dict", None)):
            self.chooser.load_state_dict(state["chooser"])  # type: ignore[attr-defined]
        current: Sequence[str | None] = state["current"]
        previous = self.assigned()  # what Opponents still holds until it restores its assignment
        self.current = list(current)
        self.cache.ensure([p for p in self.current if p is not None],
                          in_use=lambda: self.assigned() | previous)


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
    index = league.pool.count_snapshots(learner_id)
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
    league.store.set_file_stats({player_id: file_stat(path)})  # hashed as it was written
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
    config: Any  # TrainerConfig: num_threads for the gauntlet; an exploiter's settings start from it
    policy_config: Any  # PolicyConfig: an exploiter's network is built like the main learner's
    env_spec: dict[str, Any]  # the env's overrides, for the gauntlet's games
    collective: Any  # None outside a data-parallel run

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
    # the one player the gate judges against instead of vs_kinds, when it names one (a main exploiter's
    # frozen target, ``MainExploiterChooser.frozen_target``)
    judged_against: Callable[[str], str | None] | None = None
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
        """What the gate says now, from the league's payoff against ``vs_kinds`` (or the one player
        ``judged_against`` names)."""
        step = self.step
        target = None if self.judged_against is None else self.judged_against(self.player_id)
        rates = (league.iter_win_rates_against(self.player_id, [target]) if target is not None else
                 league.iter_win_rates_vs_pool(self.player_id, kinds=tuple(self.vs_kinds), newest_first=True))
        return self.gate.should_snapshot(step, league.last_snapshot_step(self.player_id), rates)

    def beats(self, league: League, opponent: str) -> bool:
        """Whether the learner's score against ``opponent`` clears its gate's threshold
        (``SnapshotGate.beats``): a main exploiter's verdict on its frozen target."""
        return self.gate.beats(league.iter_win_rates_against(self.player_id, [opponent]))

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
