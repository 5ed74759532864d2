"""A league wired into a training run: the learners' matchmakers, snapshots, exploiters and league views.

How it plugs into ``arena.train`` (nothing inside the trainer knows about the league)::

    run = LeagueRun(config, run_dir, game=..., team_sizes=..., seed=...)   # opens RUN_DIR/league.sqlite
    trainer = PPOTrainer(..., matchmaker=run.matchmaker())   # or PPOTrainer.resume(..., matchmaker=...)
    run.attach(trainer, make_reward)     # listens to the trainer's updates; exploiters (AlphaStar) start
    while not trainer.done:
        trainer.evaluate(); trainer.train()
        metrics = trainer.mean_and_log()   # its UpdateFinished runs run.on_update: snapshots, exploiters'
                                           # turn; the league/* metrics join the update's
        run.log_views(logger, step)        # leaderboard, payoff heatmap, rating chart every log_interval
    run.finish(trainer.global_step); trainer.save(); run.save(); run.close()

The trainer and the league meet only at the typed events of ``arena.trainer.events``: ``MatchesEnded``
to the matchmaker, ``UpdateFinished`` to ``on_update``; the guard's restore is the trainer's
``restore_policy``.

The store is the source of truth: every match, player and rating is committed before memory changes,
so a run killed at any moment resumes from the store; the trainer checkpoint carries only the
matchmakers' RNG and env assignment. Each match is tagged with the checkpoint count of the learners
in it, and a resumed learner's matches from after its checkpoint are rolled back when the league opens
(``_roll_back``; the README's Reliability section states the invariant). To keep league work a
small share of training time (``python -m arena.bench league``), matches are rated with TrueSkill's
two-team closed form (``TwoTeamRatings``, the same numbers) and PFSP weights are computed once per
update (``UpdateMatchmaker``).

With ``league.exploiter_ranks`` under torchrun (``use_exploiter_ranks`` before ``attach``), the
exploiters train on ranks of their own: this process holds a ``RemoteTrainer`` for each (its weights
and step as of the last league round) and ``on_update`` runs the round
(``arena.league.exploiter_ranks``) instead of the exploiters' turns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arena.agents.players import game_spaces, resolve_player
from arena.agents.policy import Policy, policy_from_payload
from arena.agents.scripted import REFERENCE_BOTS
from arena.atomic import atomic_path
from arena.evaluation.matchups import play_matchups
from arena.evaluation.runner import MatchSettings
from arena.league.config import LeagueConfig, MatchmakingConfig
from arena.league.exploitability import METRIC as EXPLOITABILITY_METRIC
from arena.league.exploitability import best_responses, league_exploitability
from arena.league.exploiters import MainExploiterChooser, current_generation, exploiter_id
from arena.league.gauntlet import Gauntlet, gauntlet_metrics, metric_name
from arena.league.guard import GuardCounts, best_snapshot, guard_score, rejects
from arena.league.league import League
from arena.league.learner import (
    LeagueLearner,
    LeagueMatchmaker,
    LeagueTrainer,
    freeze_policy,
    snapshot_file_name,
    snapshot_state,
)
from arena.league.matchmaking import UpdateMatchmaker
from arena.league.meta import META_KEY, MetaGame
from arena.league.player_cache import PlayerCache
from arena.league.players import Player, snapshot_id
from arena.league.published import PUBLISHED_KEY, published_mixture
from arena.league.ratings import TwoTeamRatings
from arena.league.snapshots import SnapshotGate, load_snapshot, snapshot_file, verify_snapshot
from arena.league.timing import LeagueTimer
from arena.league.view import RatingCurves, plot_payoff_heatmap, shown_players
from arena.player_specs import scripted_id
from arena.replay.animate import write_animation
from arena.trainer.checkpoint import checkpoints_written
from arena.trainer.events import UpdateFinished, UpdateListener
from arena.trainer.ppo import CHECKPOINT_NAME, RESUME_OVERRIDES, PPOTrainer

logger = logging.getLogger(__name__)

PAYOFF_IMAGE = Path("league") / "payoff.png"
CANDIDATE_FILE = Path("league") / "candidate.pt"  # the weights the guard judges, while it plays them
REJECTED_DIR = Path("league") / "rejected"  # the weights of the candidates the guard rejected, to play back
# What log_views sends to the logger (besides the league/* scalars of metrics()).
LEADERBOARD_KEY, PAYOFF_KEY, PAYOFF_IMAGE_KEY = "league/leaderboard", "league/payoff_heatmap", "league/payoff"
RATINGS_KEY = "league/rating_curves"
LEADERBOARD_COLUMNS = ("rank", "player", "kind", "mu", "sigma", "mu-3sigma", "score_vs_learner",
                       "games_vs_learner")
# Exploiter metrics worth a line in the logs (their per-opponent rates would read as the main's).
EXPLOITER_KEYS = ("SPS", "global_step", "episode_return", "episode_length", "policy_loss", "value_loss",
                  "entropy", "approx_kl")
_SEED_OFFSET = {"main_exploiter": 1000, "league_exploiter": 2000}


class LeagueRun:
    """The league side of one training run (see the module docstring)."""

    def __init__(self, config: LeagueConfig, run_dir: str | os.PathLike[str], *, game: str,
                 team_sizes: tuple[int, int] = (1, 1), seed: int = 0, learner_checkpoints: int = 0) -> None:
        """``learner_checkpoints``: the checkpoints the main learner had written when the checkpoint
        it resumes from was written (0 for a new learner); the matches it played after that are
        rolled back, as are those of the exploiters after their own checkpoints (see ``rollback``)."""
        self.config = config.validate(game)
        if (config.main_exploiter or config.league_exploiter) and config.matchmaking.mix.learners:
            raise ValueError("league.matchmaking.mix 'learners' is not supported with exploiters: a reset "
                             "exploiter's old generation has no live weights to play")
        self.run_dir, self.game, self.team_sizes = Path(run_dir), game, tuple(team_sizes)
        self.seed = config.seed if config.seed is not None else seed
        self.learner_id = config.learner_id
        self.timer = LeagueTimer()
        self.league = League.open(self.run_dir, decay=config.decay, ratings_config=config.ratings_config())
        # Same TrueSkill numbers, closed form: rating thousands of matches a minute stays cheap.
        self.league.ratings = TwoTeamRatings.like(self.league.ratings)
        self.league.store.set_meta("league_config", dataclasses.asdict(config))
        self.league.add_player(Player(self.learner_id, "learner"))
        for name in config.scripted if config.scripted is not None else REFERENCE_BOTS[game]:
            self.league.add_player(Player(scripted_id(name), "scripted"))
        for player in self.league.pool.of_kind("snapshot"):  # a damaged one fails now, naming its file
            if player.sha256 is not None:
                verify_snapshot(snapshot_file(self.run_dir, player), player.sha256)
        self.rolled_back = self._roll_back(learner_checkpoints)
        self.live: dict[str, Policy] = {}  # learning players' current weights, by player id
        self._main_matchmaker: LeagueMatchmaker | None = None
        self.main: LeagueLearner | None = None
        self.exploiters: list[LeagueLearner] = []
        self._make_reward: Callable[[], Any] = lambda: None
        self.ranks: Any = None  # ExploiterRanks: the exploiters train on ranks of their own
        self.updates = 0
        self._logged_views_at = -1
        self.gauntlet: Gauntlet | None = None
        self._gauntlet_step: int | None = None  # learner step of the last snapshot that played it
        self._gauntlet_new: list[Any] = []  # results not yet in the metrics
        self._replays_new: list[tuple[str, Path, Any]] = []  # gauntlet replays not yet sent to the loggers
        self._snapshots_new: list[Player] = []  # snapshots not yet given to the logger
        self._rating_curves: Any = None  # a view.RatingCurves, read from the store at the first view
        self._guard_new: dict[str, float] = {}  # the last restore's figures, not yet in the metrics
        self._counts: GuardCounts | None = None  # the guard's counts (store meta), once read
        self._checkpoints_heard: int | None = None  # the main learner's checkpoint count, last heard
        meta = self.league.store.meta()
        # PSRO's meta-game over the main learner's snapshots (arena.league.meta), when the league keeps one
        self.meta_game = MetaGame.from_meta(meta) if config.uses_meta_game else None
        self._meta_strategy: dict[str, float] = self.meta_game.strategy() if self.meta_game else {}
        self._meta_players: dict[str, Any] = {}  # the meta-game's members, resolved once each
        resumed, current = GuardCounts.at_checkpoint(meta, learner_checkpoints), GuardCounts.from_meta(meta)
        if resumed != current:  # decisions about weights no checkpoint holds are undone
            logger.warning("the guard's counts go back to those at the learner's checkpoint %d: %s (were %s)",
                           learner_checkpoints, resumed, current)
            self._set_guard_counts(resumed)

    def _roll_back(self, learner_checkpoints: int) -> dict[str, int]:
        """Before anything reads the league: every learner about to resume (the main learner, and each
        exploiter's current generation) forgets the matches played by a state no checkpoint holds."""
        targets = {self.learner_id: int(learner_checkpoints)}
        for kind in ("main_exploiter", "league_exploiter"):
            generation = current_generation(self.league.pool, kind)
            if getattr(self.config, kind) is not None and generation is not None:
                player_id = exploiter_id(kind, generation)
                path = self._exploiter_checkpoint(player_id)
                targets[player_id] = checkpoints_written(path) if path.is_file() else 0
        removed = {}
        for player_id, count in targets.items():
            n = self.league.rollback(player_id, count)
            if n:
                removed[player_id] = n
                logger.warning("%s resumes from its checkpoint %d: %d matches it played after that "
                               "checkpoint were rolled back and the later matches re-rated",
                               player_id, count, n)
        return removed

    # ------------------------------------------------------------------ building

    def matchmaker(self) -> LeagueMatchmaker:
        """The main learner's matchmaker, to give to its ``PPOTrainer`` (new or resumed)."""
        if self._main_matchmaker is None:
            chooser = self._chooser(self.config.matchmaking, np.random.default_rng([self.seed, 0]))
            self._main_matchmaker = self._matchmaker_for(self.learner_id, chooser)
        return self._main_matchmaker

    def _chooser(self, m: MatchmakingConfig, rng: np.random.Generator) -> UpdateMatchmaker:
        chooser = UpdateMatchmaker(self.league.pool, self.league.payoff, m.mix.as_dict(), rng=rng,
                                   weighting=m.weighting, p=m.p, min_games=m.min_games,
                                   pool_kinds=tuple(m.pool_kinds))
        chooser.meta_strategy = self.meta_strategy
        return chooser

    def _matchmaker_for(self, player_id: str, chooser: Any) -> LeagueMatchmaker:
        cache = PlayerCache(self.league.pool, self.run_dir, owner=player_id, capacity=self.config.cache_size,
                            live=self.live, timer=self.timer)
        return LeagueMatchmaker(self.league, player_id, chooser, cache, timer=self.timer,
                                checkpoints_of=self._checkpoints_of)

    def _checkpoints_of(self, player_id: str) -> int | None:
        """A learning player's count of checkpoints written; None for every other player."""
        learner = next((x for x in self.learners if x.player_id == player_id), None)
        return None if learner is None else learner.checkpoints

    def _exploiter_checkpoint(self, player_id: str) -> Path:
        return self.run_dir / "checkpoints" / player_id / CHECKPOINT_NAME

    def attach(self, trainer: LeagueTrainer, make_reward: Callable[[], Any] | None = None) -> None:
        """Links the main learner's trainer (built with ``matchmaker()``) and starts the exploiters;
        ``make_reward`` builds a reward function for each exploiter's trainer."""
        matchmaker = self.matchmaker()
        if not matchmaker.bound:  # a trainer built with it binds it (through rank 0's shared one, too)
            raise ValueError("attach() a trainer that was built with this LeagueRun's matchmaker()")
        snap = self.config.snapshot
        self.main = LeagueLearner(self.learner_id, "learner", trainer, matchmaker,
                                  SnapshotGate(snap.every_steps, snap.beat_all_threshold, snap.min_games),
                                  vs_kinds=tuple(snap.vs_kinds), seed=self.seed)
        self.live[self.learner_id] = trainer.policy
        trainer.add_update_listener(self.on_update)
        self._make_reward = make_reward or (lambda: None)
        g = self.config.gauntlet
        if g.games > 0:
            bots = [scripted_id(b) for b in REFERENCE_BOTS[self.game]]
            references = g.players if g.players is not None else bots
            self.gauntlet = Gauntlet(references, g.games, game=self.game, team_sizes=self.team_sizes,
                                     overrides=trainer.env_spec["overrides"], seed=g.seed,
                                     num_threads=trainer.config.num_threads, replays=g.replays,
                                     replay_dir=self.run_dir / "replays")
        for kind in ("main_exploiter", "league_exploiter"):
            if getattr(self.config, kind) is not None:
                generation = current_generation(self.league.pool, kind)
                self.exploiters.append(self._exploiter(kind, 0 if generation is None else generation))

    def _exploiter(self, kind: str, generation: int) -> LeagueLearner:
        """Generation ``generation`` of an exploiter: resumed from its checkpoint when it has one. With
        exploiter ranks its trainer runs on a rank of its own and rank 0 holds a ``RemoteTrainer``."""
        assert self.main is not None
        player_id = exploiter_id(kind, generation)
        self.league.add_player(Player(player_id, kind))
        rng = np.random.default_rng([self.seed, _SEED_OFFSET[kind], generation])
        if kind == "main_exploiter":
            cfg: Any = self.config.main_exploiter
            chooser: Any = MainExploiterChooser(
                self.league.pool, self.league.payoff, self.learner_id, rng=rng, low_score=cfg.low_score,
                snapshot_prob=cfg.snapshot_prob, weighting=cfg.weighting, min_games=cfg.min_games)
            reset_prob = cfg.reset_prob  # AlphaStar: 1, a main exploiter restarts at every snapshot
        else:
            cfg = self.config.league_exploiter
            chooser = self._chooser(cfg.matchmaking, rng)
            reset_prob = cfg.reset_prob
        matchmaker = self._matchmaker_for(player_id, chooser)
        main = self.main.trainer
        checkpoint = self._exploiter_checkpoint(player_id)
        init_weights = None
        if getattr(cfg, "init", "fresh") == "learner" and not checkpoint.is_file():
            init_weights = str(checkpoint.parent / "init.pt")  # the learner's weights now
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(init_weights) as tmp:
                torch.save(main.policy.state_dict(), tmp)
        plan = ExploiterPlan(
            kind=kind, generation=generation, player_id=player_id, learner_id=self.learner_id,
            checkpoint=str(checkpoint),
            config=dataclasses.replace(main.config,
                                       num_envs=cfg.num_envs or max(2, main.config.num_envs // 4),
                                       seed=int(main.config.seed) + _SEED_OFFSET[kind] + generation,
                                       checkpoint_dir=str(checkpoint.parent)),
            resume_overrides={**{key: getattr(main.config, key) for key in RESUME_OVERRIDES},
                              "checkpoint_dir": str(checkpoint.parent)},
            policy_config=main.policy_config, env_spec=dict(main.env_spec),
            policy_spec=dict(main.policy.spec),
            rng_seed=(self.seed, _SEED_OFFSET[kind], generation, 1), cache_size=self.config.cache_size,
            init_weights=init_weights)
        trainer: Any
        if self.ranks is not None:
            trainer = RemoteTrainer(plan)
        else:
            trainer = build_exploiter_trainer(plan, self._make_reward(), matchmaker)
        self.live[player_id] = trainer.policy
        snap = cfg.snapshot
        learner = LeagueLearner(player_id, kind, trainer, matchmaker,
                                SnapshotGate(snap.every_steps, snap.beat_all_threshold, snap.min_games),
                                vs_kinds=tuple(snap.vs_kinds), reset_prob=reset_prob, generation=generation,
                                seed=self.seed)
        trainer.add_update_listener(learner.heard)
        return learner

    def use_exploiter_ranks(self, ranks: Any) -> None:
        """Before ``attach``: the exploiters train on ranks of their own (an
        ``arena.league.exploiter_ranks.ExploiterRanks`` of rank 0), not in turn inside this process."""
        if self.main is not None:
            raise RuntimeError("use_exploiter_ranks() must come before attach()")
        self.ranks = ranks

    @property
    def learners(self) -> list[LeagueLearner]:
        return ([self.main] if self.main is not None else []) + self.exploiters

    # ------------------------------------------------------------------ the loop

    def on_update(self, event: UpdateFinished) -> dict[str, float]:
        """The main learner's update listener (``attach`` adds it): after its update, its snapshot if
        due, then each exploiter's turn (one rollout and update, snapshot, restart); returns the league
        metrics of this update."""
        if self.main is None:
            raise RuntimeError("LeagueRun.on_update() before attach()")
        self.main.heard(event)
        if event.checkpoints_written != self._checkpoints_heard:  # a checkpoint was written this update,
            # before this round's guard: record the counts it goes with (see GuardCounts.at_checkpoint)
            self._checkpoints_heard = event.checkpoints_written
            self.league.store.set_metas(
                self._guard_counts().recorded_at(self.league.store.meta(), event.checkpoints_written))
        self.updates += 1
        self._refresh_matchmaking()
        self._sync_live()
        self._maybe_snapshot(self.main)
        if self.ranks is not None:  # the exploiters trained concurrently: this update's league round
            extra = self.ranks.round(self)
            return {**self.metrics(), **extra}
        extra: dict[str, float] = {}
        for i, exploiter in enumerate(list(self.exploiters)):
            trainer = exploiter.trainer
            trainer.evaluate()
            trainer.train()
            metrics = trainer.mean_and_log()
            self._sync_live()
            extra.update(self._exploiter_metrics(exploiter, metrics))
            index = self._maybe_snapshot(exploiter)
            if index is not None and exploiter.restarts_after(index):
                self.exploiters[i] = self._restart(exploiter)
        return {**self.metrics(), **extra}

    def finish(self, step: int | None = None) -> bool:
        """At the end of a run (done, or stopped by Ctrl-C): the main learner's last weights become a
        snapshot only through the gauntlet and the guard, so the run's newest snapshot is a judged
        one (the learner's weights, or the best snapshot's when they fall clearly below it), not
        whatever the learner held at its last unjudged snapshot. Nothing happens without the guard
        or when the learner has not trained since its newest snapshot. Returns whether it took a
        snapshot (whose gauntlet and guard metrics ``metrics()`` then gives). ``step``: the learner's
        step now (the run may stop after its last update, e.g. by Ctrl-C in a rollout), else the last
        update's."""
        if self.main is None or not self._guarding():
            return False
        if step is not None:
            self.main.step = int(step)
        step = self.main.step
        last = self.league.last_snapshot_step(self.main.player_id)
        if last is not None and step <= last:
            return False
        logger.info("end of run: the learner's weights at step %d play the gauntlet for its last snapshot",
                    step)
        self._maybe_snapshot(self.main, final=True)
        return True

    def _maybe_snapshot(self, learner: LeagueLearner, *, final: bool = False) -> int | None:
        """Takes a snapshot when the learner's gate says so (``final``: now, through the gauntlet);
        returns its index among its snapshots."""
        if not final:
            with self.timer.measure("snapshot"):
                if not learner.snapshot_due(self.league):
                    return None
        step = learner.step
        gauntlet_due = learner is self.main and (final or self._gauntlet_due(step))
        if learner is self.main and not gauntlet_due and self._below_best():
            return None  # judged below its best snapshot: it publishes nothing until a gauntlet accepts it
        # The games the published weights already played (the guard's accepted candidate, else none),
        # and the weights to publish instead of the learner's (a rejected candidate's best snapshot).
        judged, instead = self._guard(learner) if gauntlet_due and self._guarding() else ([], None)
        with self.timer.measure("snapshot"):
            if instead is None:
                player = learner.snapshot(self.league, self.run_dir)
            else:
                player = freeze_policy(self.league, self.run_dir, learner.player_id, instead, learner.step)
            self._snapshots_new.append(player)
        if gauntlet_due:
            assert self.gauntlet is not None
            with self.timer.measure("gauntlet"):
                if not judged:  # no candidate played, or it was rejected
                    judged = self.gauntlet.play(player.player_id, snapshot_file(self.run_dir, player),
                                                player.step)
                for record in judged:
                    record = dataclasses.replace(record, player_id=player.player_id)
                    self.league.store.record_gauntlet(record)
                    self._gauntlet_new.append(record)
                self._replays_new.extend(self.gauntlet.take_saved())
            self._gauntlet_step = player.step
        if learner is self.main:
            self._publish()
        return len(self.league.pool.snapshots(parent=learner.player_id)) - 1

    def _publish(self) -> None:
        """After a snapshot of the main learner: PSRO's meta-game grows by it (when the league keeps
        one), and a mixture the league publishes is written, both in one store transaction
        (``arena.league.published``, ``arena.league.meta``)."""
        values: dict[str, Any] = {}
        snapshots = self.league.pool.snapshots(parent=self.learner_id)
        if self.meta_game is not None and snapshots[-1].player_id not in self.meta_game.players:
            with self.timer.measure("meta_game"):
                self.meta_game.add(snapshots[-1].player_id, self._meta_scores(snapshots[-1]))
                self._meta_strategy = self.meta_game.strategy()
            values[META_KEY] = self.meta_game.to_meta()
            self._refresh_matchmaking()
        mixture = published_mixture(self.config.publish, self.config.publish_window,
                                    [p.player_id for p in snapshots], self._meta_strategy)
        if mixture is not None:
            values[PUBLISHED_KEY] = {"members": list(mixture), "weights": list(mixture.values()),
                                     "step": snapshots[-1].step}
        if values:
            self.league.store.set_metas(values)

    def _meta_scores(self, newcomer: Player) -> list[float]:
        """The newcomer's scores against every member of the meta-game: ``league.meta_games``
        side-swapped, seed-paired games each, all pairings in one batched call of the runner."""
        assert self.meta_game is not None
        if not self.meta_game.players:
            return []

        spaces = next(iter(self._meta_players.values())).spaces if self._meta_players else game_spaces(
            self.game, self.team_sizes, self._env_overrides())
        for player_id in [*self.meta_game.players, newcomer.player_id]:
            if player_id not in self._meta_players:  # a resumed run's members, then each newcomer
                path = snapshot_file(self.run_dir, self.league.pool.get(player_id))
                self._meta_players[player_id] = resolve_player(str(path), self.game, self.team_sizes,
                                                               spaces=spaces)
        players = {p: self._meta_players[p] for p in [*self.meta_game.players, newcomer.player_id]}
        settings = MatchSettings(game=self.game, team_sizes=self.team_sizes, games=self.config.meta_games,
                                 seed=self.config.gauntlet.seed + len(self.meta_game.players),
                                 overrides=self._env_overrides())
        results = play_matchups(players, [(newcomer.player_id, p) for p in self.meta_game.players], settings)
        return [r.score()[0] if r.games else 0.5 for r in results]

    def _env_overrides(self) -> dict[str, Any]:
        assert self.main is not None
        return dict(self.main.trainer.env_spec["overrides"])

    def meta_strategy(self) -> dict[str, float]:
        """PSRO's meta-strategy now (``{}`` before the first snapshot or without a meta-game)."""
        return dict(self._meta_strategy)

    def _guarding(self) -> bool:
        """Whether the guard judges the main learner's snapshots. Under torchrun too: rank 0 plays the
        gauntlet, and a restore reaches every rank (``PPOTrainer.restore_policy``)."""
        return self.gauntlet is not None and self.config.gauntlet.guard

    def _below_best(self) -> bool:
        """Whether the guard's last verdict on the main learner was a rejection it has not been
        restored from (``arena.league.guard``): its unjudged snapshots would publish that drop."""
        return self._guarding() and self._guard_counts().in_a_row > 0

    def _guard_counts(self) -> GuardCounts:
        """The guard's counts, read from the store once per process (this process is its one writer)."""
        if self._counts is None:
            self._counts = GuardCounts.from_meta(self.league.store.meta())
        return self._counts

    def _set_guard_counts(self, counts: GuardCounts) -> None:
        self.league.store.set_metas(counts.as_meta())  # in one transaction
        self._counts = counts

    def _guard(self, learner: LeagueLearner) -> tuple[list[Any], Policy | None]:
        """The learner's weights play the gauntlet as a candidate for its next snapshot; when they fall
        clearly below the best snapshot's (``arena.league.guard``), the snapshot publishes the best's
        weights instead, and after ``guard_patience`` rejections in a row the learner is restored from
        them. Returns the candidate's records when they stand for the next snapshot (the same weights,
        the same games), else [] (the published weights play their own); and the weights to publish
        instead of the learner's (None: the learner's)."""
        assert self.gauntlet is not None
        pool = self.league.pool
        snapshots = [p.player_id for p in pool.snapshots(parent=learner.player_id)]
        best = best_snapshot(self.league.store.gauntlet(), snapshots, list(self.gauntlet.references))
        candidate_id = snapshot_id(learner.player_id, len(snapshots))
        path = self.run_dir / CANDIDATE_FILE
        with self.timer.measure("gauntlet"):
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(snapshot_state(learner.policy), path)
            try:
                records = self.gauntlet.play(candidate_id, path, learner.step)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        candidate = guard_score(records)
        counts = self._guard_counts()
        if not rejects(candidate, best, self.config.gauntlet.guard_margin):
            path.unlink(missing_ok=True)
            if counts.in_a_row:
                self._set_guard_counts(dataclasses.replace(counts, in_a_row=0))
            return records, None
        assert best is not None
        # Kept, never loaded by the league: what the learner had become, for a user to play back
        # (python -m arena.evaluate <run>/league/rejected/<file> scripted:heuristic --shots).
        kept = self.run_dir / REJECTED_DIR / snapshot_file_name(candidate_id)
        kept.parent.mkdir(parents=True, exist_ok=True)
        path.replace(kept)
        self.gauntlet.take_saved()  # the candidate's replays: the published weights play their own
        best_player = pool.get(best.player_id)
        assert best_player.sha256 is not None  # freeze_policy records every snapshot's
        best_file = snapshot_file(self.run_dir, best_player)
        state = load_snapshot(best_file, best_player.sha256)
        streak, rejections, restores = counts.in_a_row + 1, counts.rejections + 1, counts.restores
        instead: Policy | None = None
        if streak >= self.config.gauntlet.guard_patience:
            learner.trainer.restore_policy(state["policy"])  # Adam's moments are cleared with it
            self._sync_live()
            restores, streak = restores + 1, 0
            action = f"the learner is restored from {best.player_id} (restore {restores})"
        else:
            instead = policy_from_payload(state, source=f"snapshot {best_file}")
            left = self.config.gauntlet.guard_patience - streak
            action = (f"the snapshot publishes {best.player_id}'s weights; the learner keeps learning "
                      f"({left} more rejection(s) in a row restore it)")
        self._set_guard_counts(GuardCounts(rejections, restores, streak))
        self._guard_new = {"league/guard_rejections": float(rejections),
                           "league/guard_restores": float(restores),
                           "league/guard_rejected_score": candidate.score,
                           "league/guard_best_score": best.score}
        logger.warning(
            "guard: at step %d the learner scores %.3f [%.3f, %.3f] against %s, below the best snapshot "
            "%s (%.3f against %s): %s; its weights are kept in %s",
            learner.step, candidate.score, candidate.lower, candidate.upper,
            candidate.reference, best.player_id, best.score, best.reference, action, kept)
        return [], instead

    def _gauntlet_due(self, step: int | None) -> bool:
        if self.gauntlet is None:
            return False
        if self._gauntlet_step is None:  # first of this process: resume from the store's last
            played = self.league.store.gauntlet()
            self._gauntlet_step = max((r.learner_step or 0 for r in played), default=None)
        if self._gauntlet_step is None or step is None:
            return True
        return step - self._gauntlet_step >= self.config.gauntlet.every_steps

    def _restart(self, old: LeagueLearner) -> LeagueLearner:
        """A new generation of an exploiter, from fresh weights or the learner's (``init``), with its own
        env batch and checkpoints."""
        logger.info("%s restarts at step %d", old.player_id, old.step)
        old.trainer.close()
        del self.live[old.player_id]
        return self._exploiter(old.kind, old.generation + 1)

    def _refresh_matchmaking(self) -> None:
        for learner in self.learners:
            refresh = getattr(learner.matchmaker.chooser, "refresh", None)
            if callable(refresh):
                refresh()

    def _sync_live(self) -> None:
        for learner in self.learners:
            learner.matchmaker.cache.sync_live()

    # ------------------------------------------------------------------ metrics and views

    def metrics(self) -> dict[str, float]:
        """``league/*`` scalars: size, ratings (mu - 3 sigma), opponent mix, time in league work."""
        assert self.main is not None
        with self.timer.measure("views"):
            pool, ratings = self.league.pool, self.league.ratings
            out: dict[str, float] = {
                "league/size": float(len(pool)),
                "league/matches": float(self.league.match_count),
                "league/snapshots": float(len(pool.snapshots())),
                "league/rating": ratings.conservative(self.learner_id),
            }
            latest = pool.latest_snapshot(parent=self.learner_id)
            if latest is not None and latest.player_id in ratings:  # rated once it has played
                out["league/snapshot_rating"] = ratings.conservative(latest.player_id)
            found = league_exploitability(self.league.payoff, best_responses(pool), self.learner_id)
            if found is not None:  # the best score a best response of the league holds against the learner
                out[EXPLOITABILITY_METRIC] = found.value
            for player_id, share in self.main.matchmaker.mix().items():
                out[f"league/mix/{player_id}"] = share
            if self._views_due():  # the bounded set of the views (league.view_players), not the pool
                order = [e.player_id for e in ratings.leaderboard(pool.ids)]
                for player_id in self._shown(order):
                    out[f"league/rating/{player_id}"] = ratings.conservative(player_id)
        if self._guard_new:
            out.update(self._guard_new)
            self._guard_new = {}
        if self._gauntlet_new:  # once per snapshot, at the step it was taken
            out.update(gauntlet_metrics(self._gauntlet_new))
            self._gauntlet_new = []
        out.update({f"league/time/{part}": seconds for part, seconds in self.timer.take().items()})
        return out

    def _exploiter_metrics(self, exploiter: LeagueLearner, metrics: dict[str, float]) -> dict[str, float]:
        out = {f"{exploiter.kind}/{k}": float(metrics[k]) for k in EXPLOITER_KEYS if k in metrics}
        out[f"{exploiter.kind}/generation"] = float(exploiter.generation)
        out[f"{exploiter.kind}/rating"] = self.league.ratings.conservative(exploiter.player_id)
        return out

    def _views_due(self) -> bool:
        return self.updates % self.config.log_interval == 0

    def _shown(self, order: list[str]) -> list[str]:
        """Of ``order`` (the leaderboard's, best rated first), the players the views show
        (``league.view_players``; ``shown_players``)."""
        return shown_players(order, list(self.league.pool), self.learner_id, self.config.view_players)

    def leaderboard(self) -> list[list[Any]]:
        """Rows of ``LEADERBOARD_COLUMNS`` for the players the views show (``_shown``), best
        conservative rating first; a row's rank is its rank in the whole league."""
        pool, payoff, lid = self.league.pool, self.league.payoff, self.learner_id
        entries = self.league.ratings.leaderboard(pool.ids)
        shown = set(self._shown([e.player_id for e in entries]))
        rows = []
        for rank, entry in enumerate(entries, start=1):
            if entry.player_id not in shown:
                continue
            score = payoff.score(entry.player_id, lid) if entry.player_id != lid else None
            rows.append([rank, entry.player_id, pool.get(entry.player_id).kind, entry.mu, entry.sigma,
                         entry.conservative, score, payoff.games(entry.player_id, lid)])
        return rows

    def log_views(self, log: Any, step: int, *, force: bool = False) -> None:
        """Every ``log_interval`` updates, or now with ``force``: the leaderboard table
        (``league/leaderboard``), the payoff matrix as a heatmap chart (``league/payoff_heatmap``) and
        a PNG (``league/payoff``), and one chart of every player's rating (``league/rating_curves``).
        New snapshot files go to ``log.log_snapshot`` at every call (kept only where the logger is
        told to). New gauntlet replays (``league.gauntlet.replays``) are drawn as GIFs beside their
        files and go to ``log.log_video`` as ``replay/<reference>``."""
        self._log_replays(log, step)
        for player in self._snapshots_new:
            log.log_snapshot(player.player_id, snapshot_file(self.run_dir, player), int(player.step or 0),
                             {"parent": player.parent, "sha256": player.sha256})
        self._snapshots_new = []
        if not (force or self._views_due()) or self._logged_views_at == self.updates:
            return
        self._logged_views_at = self.updates

        with self.timer.measure("views"):
            rows = self.leaderboard()
            log.log_table(LEADERBOARD_KEY, list(LEADERBOARD_COLUMNS), rows, step)
            order = [r[1] for r in rows]
            log.log_heatmap(PAYOFF_KEY, order, order, self.league.payoff.matrix(order), step,
                            title="Payoff: row player's score against the column player", value_name="score")
            path = self.run_dir / PAYOFF_IMAGE
            path.parent.mkdir(parents=True, exist_ok=True)
            image = plot_payoff_heatmap(self.league.payoff, order, path)
            log.log_image(PAYOFF_IMAGE_KEY, image, step)
            if self._rating_curves is None:
                store = self.league.store
                self._rating_curves = RatingCurves.from_history(store.rating_history(), store.matches())
            self._rating_curves.add(step, {r[1]: r[5] for r in rows})
            log.log_line_series(RATINGS_KEY, self._rating_curves.series(), step,
                                title="Rating (mu - 3 sigma) of every player", xname="learner step")

    def _log_replays(self, log: Any, step: int) -> None:
        if not self._replays_new:
            return

        with self.timer.measure("gauntlet"):
            for reference, path, replay in self._replays_new:
                gif = write_animation(replay, path.with_suffix(".gif"))
                name = metric_name(reference).replace("gauntlet/", "replay/", 1)
                snapshot = replay.extra.get("snapshot", path.stem)
                log.log_video(name, gif, step, caption=f"{snapshot} vs {reference}")
        self._replays_new = []

    # ------------------------------------------------------------------ lifecycle

    def save(self) -> None:
        """Checkpoints of the exploiters (the main learner's trainer saves itself)."""
        for exploiter in self.exploiters:
            exploiter.trainer.save()

    def close(self) -> None:
        for exploiter in self.exploiters:
            exploiter.trainer.close()
        self.league.close()


@dataclasses.dataclass(frozen=True)
class ExploiterPlan:
    """What an exploiter's trainer is built from (in rank 0's process, or sent to its own rank):
    resumed from ``checkpoint`` when that file exists, else fresh with ``config``."""

    kind: str
    generation: int
    player_id: str
    learner_id: str  # the main learner's id
    checkpoint: str
    config: Any  # TrainerConfig of a fresh start
    resume_overrides: dict[str, Any]
    policy_config: Any
    env_spec: dict[str, Any]
    policy_spec: dict[str, Any]  # of the main learner's policy (the exploiter's is alike)
    rng_seed: tuple[int, ...]  # of the matchmaker's draws on an exploiter rank
    cache_size: int
    init_weights: str | None = None  # a fresh start loads these weights (a state dict file), if given


def build_exploiter_trainer(plan: ExploiterPlan, reward_fn: Any, matchmaker: Any) -> Any:
    """The exploiter's ``PPOTrainer``: resumed from its checkpoint when it has one, else fresh."""
    checkpoint = Path(plan.checkpoint)
    if checkpoint.is_file():
        logger.info("resuming %s from %s", plan.player_id, checkpoint)
        return PPOTrainer.resume(checkpoint, reward_fn=reward_fn, matchmaker=matchmaker,
                                 config_overrides=dict(plan.resume_overrides))
    env = plan.env_spec
    trainer = PPOTrainer(plan.config, plan.policy_config, game=env["game"],
                         team_sizes=tuple(env["team_sizes"]), env_overrides=env["overrides"],
                         reward_fn=reward_fn, matchmaker=matchmaker)
    if plan.init_weights is not None:
        logger.info("%s starts from the weights in %s", plan.player_id, plan.init_weights)
        trainer.policy.load_state_dict(torch.load(plan.init_weights, map_location="cpu", weights_only=True))
    return trainer


class RemoteTrainer:
    """Rank 0's stand-in for an exploiter that trains on its own rank: its step, checkpoint count and
    a frozen copy of its weights, as of the last league round (what snapshots and gates read). Each
    round's report from the rank (``heard_from_rank``) is its ``UpdateFinished``."""

    def __init__(self, plan: ExploiterPlan) -> None:
        self.plan = plan
        self.policy = Policy(**plan.policy_spec).eval().requires_grad_(False)
        self.global_step = 0
        self.checkpoints_written = 0
        self.update = 0
        self._listeners: list[UpdateListener] = []

    def add_update_listener(self, listener: UpdateListener) -> None:
        self._listeners.append(listener)

    def heard_from_rank(self, step: int, checkpoints: int, weights: dict[str, Any],
                        metrics: dict[str, float]) -> None:
        """The exploiter's rank finished an update: its step, checkpoint count and weights then."""
        self.global_step, self.checkpoints_written = int(step), int(checkpoints)
        self.policy.load_state_dict(weights)
        self.update += 1
        event = UpdateFinished(self.global_step, self.update, self.checkpoints_written, self.policy,
                               dict(metrics))
        for listener in self._listeners:
            listener(event)

    def save(self) -> None:
        """Nothing: the exploiter's rank writes its own checkpoint."""

    def close(self) -> None:
        """Nothing to release here."""
