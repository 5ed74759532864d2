"""The trainer's matchmaker callable, backed by the league.

``PPOTrainer(..., matchmaker=LeagueMatchmaker(...))``: the league's side of the matchmaker interface.
At every episode end the trainer calls it with a ``MatchesEnded`` event (the finished envs, their
``Outcome`` from the learner's team's view, the matches' lengths and the learner's step). It then

1. records each finished match in the league (learner vs the env's previous team-1 player, outcome,
   length, learner step, and the checkpoint count of each learning player in it): committed to the
   store as it finishes, then payoff and ratings update;
2. picks the envs' next opponents with a chooser (the league ``Matchmaker``, or an exploiter's);
3. has the player cache load (and register with ``Opponents``) any frozen player newly needed.

Its ``state_dict`` (the chooser's RNG and who plays in each env) rides in the trainer checkpoint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from arena.agents.players import MIRROR, parse_player
from arena.envs.outcomes import Outcome
from arena.league.league import League
from arena.league.outcome import DRAW, LOSS, WIN
from arena.league.player_cache import PlayerCache
from arena.league.timing import LeagueTimer
from arena.trainer.events import MatchesEnded

# The trainer's outcomes (team 0's view) -> the league's +1 / -1 / 0.
LEAGUE_OUTCOME = {int(Outcome.TEAM0): WIN, int(Outcome.TEAM1): LOSS, int(Outcome.DRAW): DRAW}


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
        with self.timer.measure("record"):
            for k, (env, code) in enumerate(zip(envs.tolist(), codes.tolist(), strict=True)):
                opponent = self.current[env]
                if opponent is None:
                    continue  # an env this matchmaker never assigned (cannot happen through Opponents)
                length = float(lengths[k])
                tags = None
                if self.checkpoints_of is not None:
                    tags = {p: c for p in (self.learner_id, opponent)
                            if (c := self.checkpoints_of(p)) is not None}
                self.league.record_match(team_a, [opponent], LEAGUE_OUTCOME[int(code)], length=length,
                                         learner_step=step, checkpoints=tags)
                self.matches_recorded += 1

    def source_of(self, player_id: str) -> str | None:
        """Where another rank of a data-parallel run loads ``player_id`` from: a frozen snapshot's
        file; None for the ids ``Opponents`` builds itself (scripted bots, the learner as ``mirror``)."""
        from arena.league.player_cache import snapshot_file
        if parse_player(player_id).kind in ("mirror", "scripted"):
            return None
        player = self.league.pool.get(player_id)
        if player.path is None:
            raise ValueError(f"player {player_id!r} ({player.kind}) plays with live weights, which only "
                             "rank 0 holds: a data-parallel run can play frozen snapshots and scripted bots")
        return str(snapshot_file(self.cache.run_dir, player))

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
