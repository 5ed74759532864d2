"""The snapshot schedule of a league run: when a learner leaves a frozen copy of itself in the pool, what
that copy holds, and what the league publishes after each snapshot of the main learner.

A learner's ``SnapshotGate`` says when one is due (every ``snapshot.every_steps`` samples, or sooner
once it beats everyone it must). For the main learner, a snapshot that is due for the gauntlet goes
through the guard first (``arena.league.run.guard``): the copy holds the learner's weights, or the
best snapshot's when the learner fell clearly below it. After it, PSRO's meta-game grows by the new
snapshot (when the league keeps one, ``arena.league.model.meta``; with ``league.meta_exploiters`` an
exploiter's snapshot joins it too) and the mixture the league publishes is rewritten
(``arena.league.model.published``), both in one store transaction. With ``league.publish: held`` an
exploiter's snapshot rewrites it too: it may mark a candidate beaten.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.agents.players import game_spaces, resolve_player
from arena.evaluation.matchups import play_matchups
from arena.evaluation.runner import MatchSettings
from arena.league.config import LeagueConfig
from arena.league.model.league import League
from arena.league.model.meta import META_KEY, MetaGame
from arena.league.model.players import EXPLOITER_KINDS, Player
from arena.league.model.published import BY_EXPLOITERS, PUBLISHED_KEY, published_mixture
from arena.league.model.snapshots import snapshot_file
from arena.league.model.time_to_exploit import held_longest, newest_unbeaten, time_to_exploit
from arena.league.run.guard import Guard
from arena.league.run.learner import LeagueLearner, freeze_policy
from arena.league.timing import LeagueTimer


class SnapshotSchedule:
    """Takes the learners' snapshots (``maybe_snapshot``) and publishes after the main learner's. Owned
    by ``LeagueRun``; ``main`` is set when it attaches the main learner."""

    def __init__(self, league: League, run_dir: str | os.PathLike[str], config: LeagueConfig, guard: Guard,
                 timer: LeagueTimer, *, game: str, team_sizes: tuple[int, int],
                 on_meta_changed: Callable[[], None] = lambda: None) -> None:
        """``on_meta_changed``: called when PSRO's meta-strategy changed (the matchmakers read it)."""
        self.league, self.run_dir, self.config = league, Path(run_dir), config
        self.guard, self.timer = guard, timer
        self.game, self.team_sizes = game, tuple(team_sizes)
        self.main: LeagueLearner | None = None
        self._on_meta_changed = on_meta_changed
        self._new: list[Player] = []  # snapshots not yet given to the logger
        # PSRO's meta-game over the main learner's snapshots (and the exploiters', with
        # league.meta_exploiters), when the league keeps one
        self.meta_game = MetaGame.from_meta(league.store.meta()) if config.uses_meta_game else None
        self._meta_strategy: dict[str, float] = self.meta_game.strategy() if self.meta_game else {}
        self._meta_players: dict[str, Any] = {}  # the meta-game's members, resolved once each

    def meta_strategy(self) -> dict[str, float]:
        """PSRO's meta-strategy now (``{}`` before the first snapshot or without a meta-game)."""
        return dict(self._meta_strategy)

    def take_new(self) -> list[Player]:
        """The snapshots taken since the last call."""
        new, self._new = self._new, []
        return new

    def maybe_snapshot(self, learner: LeagueLearner, *, final: bool = False) -> int | None:
        """Takes a snapshot when the learner's gate says so (``final``: now, through the gauntlet);
        returns its index among its snapshots."""
        if not final:
            with self.timer.measure("snapshot"):
                if not learner.snapshot_due(self.league):
                    return None
        is_main = learner is self.main
        gauntlet_due = is_main and (final or self.guard.due(learner.step))
        if is_main and not gauntlet_due and self.guard.below_best():
            return None  # judged below its best snapshot: it publishes nothing until a gauntlet accepts it
        # The games the published weights already played (the guard's accepted candidate, else none),
        # and the weights to publish instead of the learner's (a rejected candidate's best snapshot).
        judged, instead = self.guard.judge(learner) if gauntlet_due and self.guard.active else ([], None)
        with self.timer.measure("snapshot"):
            if instead is None:
                player = learner.snapshot(self.league, self.run_dir)
            else:
                player = freeze_policy(self.league, self.run_dir, learner.player_id, instead, learner.step)
            self._new.append(player)
        if gauntlet_due:
            self.guard.record(player, judged)
        if is_main or (learner.kind in EXPLOITER_KINDS and (
                self.config.meta_exploiters or self.config.publish in BY_EXPLOITERS)):
            self._publish(player)
        return self.league.pool.count_snapshots(learner.player_id) - 1

    def _publish(self, newcomer: Player) -> None:
        """After a snapshot of the main learner (or of an exploiter, with ``league.meta_exploiters``):
        PSRO's meta-game grows by it (when the league keeps one), and a mixture the league publishes
        is written, both in one store transaction."""
        assert self.main is not None
        values: dict[str, Any] = {}
        snapshots = self.league.pool.snapshots(parent=self.main.player_id)
        joins = newcomer.parent == self.main.player_id or self.config.meta_exploiters
        if self.meta_game is not None and joins and newcomer.player_id not in self.meta_game.players and (
                self._clears_meta_bar(newcomer)):
            with self.timer.measure("meta_game"):
                self.meta_game.add(newcomer.player_id, self._meta_scores(newcomer))
                self._meta_strategy = self.meta_game.strategy()
            values[META_KEY] = self.meta_game.to_meta()
            self._on_meta_changed()
        held = self._held_longest() if self.config.publish in BY_EXPLOITERS else None
        mixture = published_mixture(self.config.publish, self.config.publish_window,
                                    [p.player_id for p in snapshots], self._meta_strategy, held)
        if mixture:  # {} before the main learner's first snapshot
            values[PUBLISHED_KEY] = {"members": list(mixture), "weights": list(mixture.values()),
                                     "step": snapshots[-1].step if snapshots else newcomer.step}
        if values:
            self.league.store.set_metas(values)

    def _held_longest(self) -> str | None:
        """With ``league.publish: held``: the candidate to publish that held the main exploiter's
        generations longest, read from the store's matches (``held_longest``); with ``unbeaten``, the
        newest candidate none has beaten (``newest_unbeaten``)."""
        assert self.main is not None
        candidates = self.guard.candidates(self.main.player_id)
        if not candidates:
            return None
        players = self.league.store.players()
        roots = [p.player_id for p in players if p.kind in EXPLOITER_KINDS]
        if not roots:
            return None
        with self.timer.measure("snapshot"):
            records = time_to_exploit(players, self.league.store.iter_matches(touching=roots))
        budget = self.config.main_exploiter.snapshot.every_steps if self.config.main_exploiter else None
        choose = newest_unbeaten if self.config.publish == "unbeaten" else held_longest
        return choose(records, candidates, budget)

    def _clears_meta_bar(self, newcomer: Player) -> bool:
        """Whether a snapshot may join the meta-game: any, without ``league.meta_bar``; the main
        learner's only once its gauntlet scored at least the bar against every reference."""
        bar = self.config.meta_bar
        assert self.main is not None  # _publish runs only once the main learner is attached
        if bar is None or newcomer.parent != self.main.player_id:
            return True
        score = self.guard.score_of(newcomer.player_id)
        return score is not None and score.score >= bar

    def _meta_scores(self, newcomer: Player) -> list[float]:
        """The newcomer's scores against every member of the meta-game: ``league.meta_games``
        side-swapped, seed-paired games each, all pairings in one batched call of the runner."""
        assert self.meta_game is not None and self.main is not None
        if not self.meta_game.players:
            return []
        overrides = dict(self.main.trainer.env_spec["overrides"])
        spaces = next(iter(self._meta_players.values())).spaces if self._meta_players else game_spaces(
            self.game, self.team_sizes, overrides)
        for player_id in [*self.meta_game.players, newcomer.player_id]:
            if player_id not in self._meta_players:  # a resumed run's members, then each newcomer
                path = snapshot_file(self.run_dir, self.league.pool.get(player_id))
                self._meta_players[player_id] = resolve_player(str(path), self.game, self.team_sizes,
                                                               spaces=spaces)
        players = {p: self._meta_players[p] for p in [*self.meta_game.players, newcomer.player_id]}
        settings = MatchSettings(game=self.game, team_sizes=self.team_sizes, games=self.config.meta_games,
                                 seed=self.config.gauntlet.seed + len(self.meta_game.players),
                                 overrides=overrides)
        results = play_matchups(players, [(newcomer.player_id, p) for p in self.meta_game.players], settings)
        return [r.score()[0] if r.games else 0.5 for r in results]
