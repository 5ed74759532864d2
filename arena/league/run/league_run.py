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

``LeagueRun`` owns its collaborators and wires them together: the ``Guard`` (the gauntlet's schedule
and the guard's verdicts, ``arena.league.run.guard``), the ``SnapshotSchedule`` (snapshots and what is
published, ``arena.league.run.schedule``), the ``Exploiters`` (``arena.league.run.exploiter_trainers``),
the ``Answer`` with ``league.answer`` (``arena.league.run.answer``: a main exploiter's defeat of a
candidate reaches it from the exploiters' turns) and the ``LeagueViews`` it logs
(``arena.league.view.training_views``).

With ``league.exploiter_ranks`` under torchrun (``use_exploiter_ranks`` before ``attach``), the
exploiters train on ranks of their own: this process holds a ``RemoteTrainer`` for each (its weights
and step as of the last league round) and ``on_update`` runs the round
(``arena.league.run.exploiter_ranks``) instead of the exploiters' turns.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from arena.agents.policy import Policy
from arena.agents.scripted import REFERENCE_BOTS
from arena.league.config import LeagueConfig, MatchmakingConfig
from arena.league.matchmaking.pfsp import UpdateMatchmaker
from arena.league.matchmaking.player_cache import PlayerCache
from arena.league.model.exploitability import METRIC as EXPLOITABILITY_METRIC
from arena.league.model.exploitability import best_responses, league_exploitability
from arena.league.model.league import League
from arena.league.model.players import Player
from arena.league.model.published import published_record
from arena.league.model.ratings import TwoTeamRatings
from arena.league.model.snapshots import SnapshotGate, verify_snapshots
from arena.league.run.answer import Answer
from arena.league.run.exploiter_trainers import Exploiters
from arena.league.run.gauntlet import Gauntlet
from arena.league.run.guard import REJECTED_DIR, Guard
from arena.league.run.learner import LeagueLearner, LeagueMatchmaker, LeagueTrainer
from arena.league.run.retention import cap_files, finish_retirement, retire_snapshots
from arena.league.run.schedule import SnapshotSchedule
from arena.league.timing import LeagueTimer
from arena.league.view.plots import recent_snapshots
from arena.league.view.training_views import LeagueViews
from arena.player_specs import SB3_PREFIX, scripted_id
from arena.trainer.events import UpdateFinished

logger = logging.getLogger(__name__)

OLDER_SNAPSHOTS_KEY = "league/mix/older_snapshots"
REPLAY_DIR = "replays"  # the gauntlet's replay files, RUN_DIR/replays/<snapshot>-vs-<reference>.npz


class LeagueRun:
    """The league side of one training run (see the module docstring)."""

    def __init__(self, config: LeagueConfig, run_dir: str | os.PathLike[str], *, game: str,
                 team_sizes: tuple[int, int] = (1, 1), seed: int = 0, learner_checkpoints: int = 0) -> None:
        """``learner_checkpoints``: the checkpoints the main learner had written when the checkpoint
        it resumes from was written (0 for a new learner); the matches it played after that are
        rolled back, as are those of the exploiters after their own checkpoints (see ``rollback``)."""
        self.config = config.validate(game)
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
            # a fixed player: a bot by name, or a Stable-Baselines3 model (sb3:PATH.zip) by its spec
            player_id = name if name.startswith(SB3_PREFIX) else scripted_id(name)
            self.league.add_player(Player(player_id, "scripted"))
        finish_retirement(self.league, self.run_dir)  # files a killed run's retention left behind
        # a damaged snapshot fails now, naming its file: hashed where its size or mtime changed since
        # its last check (every one with league.verify_all)
        self.league.store.set_file_stats(verify_snapshots(
            self.run_dir, self.league.pool.of_kind("snapshot"), self.league.store.file_stats(),
            verify_all=config.verify_all))
        self.live: dict[str, Policy] = {}  # learning players' current weights, by player id
        self.exploiter_set = Exploiters(self.league, self.run_dir, config, seed=self.seed, live=self.live,
                                        matchmaker_for=self._matchmaker_for, chooser_for=self._chooser)
        self.rolled_back = self._roll_back(learner_checkpoints)
        self._main_matchmaker: LeagueMatchmaker | None = None
        self.main: LeagueLearner | None = None
        self.updates = 0
        self.guard = Guard(self.league, self.run_dir, config.gauntlet, self.timer,
                           learner_checkpoints=learner_checkpoints, on_restore=self.sync_live)
        self.learner_checkpoints = int(learner_checkpoints)
        # league.answer: the learner answers the main exploiter once it beats a candidate
        self.answer = Answer(self.league, config.answer, self.guard) if config.answer.enabled else None
        self.schedule = SnapshotSchedule(self.league, self.run_dir, config, self.guard, self.timer,
                                         game=game, team_sizes=self.team_sizes,
                                         on_meta_changed=self._refresh_matchmaking)
        self.views = LeagueViews(self.league, self.run_dir, config, self.learner_id, self.timer)
        self._checkpoints_heard: int | None = None  # the main learner's checkpoint count, last heard
        # players assigned to an env when some learner's last two checkpoints were written: a resume
        # restores those assignments, so retention keeps their files
        self._checkpoint_counts: tuple[int, ...] = ()
        self._assigned_at_checkpoints: list[set[str]] = []

    def _roll_back(self, learner_checkpoints: int) -> dict[str, int]:
        """Before anything reads the league: every learner about to resume (the main learner, and each
        exploiter's current generation) forgets the matches played by a state no checkpoint holds."""
        targets = {self.learner_id: int(learner_checkpoints), **self.exploiter_set.checkpoint_counts()}
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
                                checkpoints_of=self.checkpoints_of)

    def checkpoints_of(self, player_id: str) -> int | None:
        """A learning player's count of checkpoints written; None for every other player."""
        learner = next((x for x in self.learners if x.player_id == player_id), None)
        return None if learner is None else learner.checkpoints

    def attach(self, trainer: LeagueTrainer, make_reward: Callable[[], Any] | None = None) -> None:
        """Links the main learner's trainer (built with ``matchmaker()``) and starts the exploiters;
        ``make_reward`` builds a reward function for each exploiter's trainer."""
        matchmaker = self.matchmaker()
        if not matchmaker.bound:  # a trainer built with it binds it (through rank 0's shared one, too)
            raise ValueError("attach() a trainer that was built with this LeagueRun's matchmaker()")
        snap = self.config.snapshot
        self.main = LeagueLearner(self.learner_id, "learner", trainer, matchmaker,
                                  SnapshotGate.of(snap),
                                  vs_kinds=tuple(snap.vs_kinds), seed=self.seed)
        self.schedule.main = self.main
        self.live[self.learner_id] = trainer.policy
        trainer.add_update_listener(self.on_update)
        g = self.config.gauntlet
        if g.games > 0:
            bots = [scripted_id(b) for b in REFERENCE_BOTS[self.game]]
            references = g.players if g.players is not None else bots
            self.guard.gauntlet = Gauntlet(references, g.games, game=self.game, team_sizes=self.team_sizes,
                                           overrides=trainer.env_spec["overrides"], seed=g.seed,
                                           num_threads=trainer.config.num_threads, replays=g.replays,
                                           replay_dir=self.run_dir / REPLAY_DIR)
        if self.answer is not None:
            if (not self.config.answer.teacher and trainer.collective is not None
                    and trainer.config.kickstart_teacher is not None):
                raise ValueError("league.answer.teacher=false pauses the kickstarting teacher, which each "
                                 "rank of a data-parallel run applies itself; set league.answer.teacher=true "
                                 "or trainer.kickstart_teacher=null under torchrun")
            self.answer.resume(self.main, self.learner_checkpoints)
        main = self.main
        self.exploiter_set.start(main, make_reward, reached=lambda score: self.guard.reached(main, score),
                                 candidates=lambda: self.guard.candidates(main.player_id))

    def use_exploiter_ranks(self, ranks: Any) -> None:
        """Before ``attach``: the exploiters train on ranks of their own (an
        ``arena.league.run.exploiter_ranks.ExploiterRanks`` of rank 0), not in turn inside this process."""
        if self.main is not None:
            raise RuntimeError("use_exploiter_ranks() must come before attach()")
        self.exploiter_set.ranks = ranks

    @property
    def exploiters(self) -> list[LeagueLearner]:
        """Each exploiter kind's current generation."""
        return self.exploiter_set.learners

    @property
    def learners(self) -> list[LeagueLearner]:
        return ([self.main] if self.main is not None else []) + self.exploiters

    @property
    def gauntlet(self) -> Gauntlet | None:
        return self.guard.gauntlet

    @property
    def meta_game(self) -> Any:
        """PSRO's meta-game (``arena.league.model.meta.MetaGame``), when the league keeps one."""
        return self.schedule.meta_game

    def meta_strategy(self) -> dict[str, float]:
        """PSRO's meta-strategy now (``{}`` before the first snapshot or without a meta-game)."""
        return self.schedule.meta_strategy()

    # ------------------------------------------------------------------ the loop

    def on_update(self, event: UpdateFinished) -> dict[str, float]:
        """The main learner's update listener (``attach`` adds it): after its update, its snapshot if
        due, then each exploiter's turn (one rollout and update, snapshot, restart); returns the league
        metrics of this update."""
        if self.main is None:
            raise RuntimeError("LeagueRun.on_update() before attach()")
        self.main.heard(event)
        self._note_checkpoint_assignments()
        if event.checkpoints_written != self._checkpoints_heard:  # a checkpoint was written this update,
            # before this round's guard: record the counts it goes with (see GuardCounts.at_checkpoint)
            self._checkpoints_heard = event.checkpoints_written
            self.guard.note_checkpoint(event.checkpoints_written)
            with self.timer.measure("record"):  # a resume from this checkpoint replays only what follows
                self.league.mark()
        self.updates += 1
        self._refresh_matchmaking()
        self.sync_live()
        self.maybe_snapshot(self.main)
        if self.exploiter_set.ranks is not None:  # the exploiters trained concurrently: this update's round
            extra = self.exploiter_set.ranks.round(self)
        else:
            waiting = self.answer is not None and not self.answer.active  # for the first defeat
            extra = self.exploiter_set.take_turns(self.sync_live, self.maybe_snapshot,
                                                  on_beaten=self._beaten if waiting else None)
        return {**self.metrics(), **extra}

    def _beaten(self, exploiter_snapshot: str, target: str) -> None:
        """A main exploiter's snapshot beat its frozen target: with ``league.answer``, the learner
        answers (``Answer.begin``, the first time; until then ``on_update`` asks the exploiters)."""
        assert self.main is not None and self.answer is not None
        if self.league.pool.get(target).parent == self.learner_id:
            self.answer.begin(self.main, exploiter_snapshot, target)

    def maybe_snapshot(self, learner: LeagueLearner, *, final: bool = False) -> int | None:
        """A learner's snapshot when due (``SnapshotSchedule.maybe_snapshot``), then retention; its
        index, or None."""
        index = self.schedule.maybe_snapshot(learner, final=final)
        if index is not None:
            self.retain()
        return index

    def retain(self) -> list[str]:
        """Retention (``league.retention``, ``arena.league.run.retention``): retires the snapshots
        outside the kept set and caps the rejected candidates and replays; returns the retired ids."""
        r = self.config.retention
        if not r.enabled:
            return []
        with self.timer.measure("snapshot"):
            retired = retire_snapshots(self.league, self.run_dir, r, self._protected())
            cap_files(self.run_dir / REJECTED_DIR, ("*.pt",), r.max_rejected)
            cap_files(self.run_dir / REPLAY_DIR, ("*.npz", "*.gif"), r.max_replays)
        if retired:
            self._refresh_matchmaking()
        return retired

    def _protected(self) -> set[str]:
        """Snapshots retention must keep whatever their age or rating: what an env plays now or did at
        the last checkpoints, what the league publishes, PSRO's meta-game, the guard's best."""
        keep: set[str] = set().union(*self._assigned_at_checkpoints)
        for learner in self.learners:
            keep |= learner.matchmaker.assigned()
        record = published_record(self.league.store.meta())
        if record is not None:
            keep.update(record["members"])
        if self.meta_game is not None:
            keep.update(self.meta_game.players)
        if self.main is not None:
            best = self.guard.best(self.main)
            if best is not None:
                keep.add(best)
        return keep

    def _note_checkpoint_assignments(self) -> None:
        counts = tuple(learner.checkpoints for learner in self.learners)
        if counts != self._checkpoint_counts:
            self._checkpoint_counts = counts
            assigned = set().union(*(learner.matchmaker.assigned() for learner in self.learners))
            self._assigned_at_checkpoints = [*self._assigned_at_checkpoints[-1:], assigned]

    def finish(self, step: int | None = None) -> bool:
        """At the end of a run (done, or stopped by Ctrl-C): the main learner's last weights become a
        snapshot only through the gauntlet and the guard, so the run's newest snapshot is a judged
        one (the learner's weights, or the best snapshot's when they fall clearly below it), not
        whatever the learner held at its last unjudged snapshot. That holds when the run stops right
        after an unjudged snapshot, with no training since: the same weights play the gauntlet as one
        more snapshot at the same step. Nothing happens without the guard, or when the newest snapshot
        was judged and the learner has not trained since (so a second call adds nothing). Returns
        whether it took a snapshot (whose gauntlet and guard metrics ``metrics()`` then gives).
        ``step``: the learner's step now (the run may stop after its last update, e.g. by Ctrl-C in a
        rollout), else the last update's."""
        if self.main is None or not self.guard.active:
            return False
        if step is not None:
            self.main.step = int(step)
        step = self.main.step
        latest = self.league.pool.latest_snapshot(parent=self.main.player_id)
        if latest is not None and latest.step is not None and step <= latest.step:
            if self.league.store.has_gauntlet(latest.player_id):
                return False  # judged, and nothing learnt since
            logger.info("end of run: the newest snapshot %s is unjudged; the learner's weights at step %d "
                        "play the gauntlet for one more", latest.player_id, step)
        else:
            logger.info("end of run: the learner's weights at step %d play the gauntlet for its last "
                        "snapshot", step)
        self.maybe_snapshot(self.main, final=True)
        return True

    def _refresh_matchmaking(self) -> None:
        for learner in self.learners:
            refresh = getattr(learner.matchmaker.chooser, "refresh", None)
            if callable(refresh):
                refresh()

    def sync_live(self) -> None:
        """Every learner's cache of live players takes their current weights."""
        for learner in self.learners:
            learner.matchmaker.cache.sync_live()

    # ------------------------------------------------------------------ metrics and views

    def metrics(self) -> dict[str, float]:
        """``league/*`` scalars: size, ratings (mu - 3 sigma), opponent mix, time in league work; the
        guard's and the gauntlet's figures when they are new."""
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
            out.update(self._mix_metrics())
            if self.answer is not None:
                out.update(self.answer.metrics())
            if self.views.due(self.updates):  # the views' bounded set (league.view_players), not the pool
                out.update(self.views.rating_metrics())
        out.update(self.guard.take_metrics())
        out.update({f"league/time/{part}": seconds for part, seconds in self.timer.take().items()})
        return out

    def _mix_metrics(self) -> dict[str, float]:
        """``league/mix/<player>``: the share of envs each opponent holds now, for a bounded set of
        keys whatever the pool's size (W&B advises under 10k keys): every player that is not a
        snapshot, and the main learner's newest snapshots; the other snapshots together as
        ``league/mix/older_snapshots``."""
        assert self.main is not None
        recent = set(recent_snapshots(self.league.pool, self.learner_id))
        out: dict[str, float] = {}
        for player_id, share in self.main.matchmaker.mix().items():
            player = self.league.pool.get(player_id) if player_id in self.league.pool else None
            if player is not None and player.kind == "snapshot" and player_id not in recent:
                out[OLDER_SNAPSHOTS_KEY] = out.get(OLDER_SNAPSHOTS_KEY, 0.0) + share
            else:
                out[f"league/mix/{player_id}"] = share
        return out

    def leaderboard(self) -> list[list[Any]]:
        """Rows of ``LEADERBOARD_COLUMNS`` for the players the views show (``LeagueViews.leaderboard``)."""
        return self.views.leaderboard()

    def log_views(self, log: Any, step: int, *, force: bool = False) -> None:
        """Every ``log_interval`` updates, or now with ``force``: the leaderboard table
        (``league/leaderboard``), the payoff matrix as a heatmap chart (``league/payoff_heatmap``) and
        a PNG (``league/payoff``), and one chart of every player's rating (``league/rating_curves``).
        New snapshot files go to ``log.log_snapshot`` at every call (kept only where the logger is
        told to). New gauntlet replays (``league.gauntlet.replays``) are drawn as GIFs beside their
        files and go to ``log.log_video`` as ``replay/<reference>``."""
        self.views.log(log, step, self.updates, snapshots=self.schedule.take_new(),
                       replays=self.guard.take_replays(), force=force)

    # ------------------------------------------------------------------ lifecycle

    def save(self) -> None:
        """Checkpoints of the exploiters (the main learner's trainer saves itself), and a mark of the
        league (``League.mark``): opening it again replays nothing."""
        self.exploiter_set.save()
        self.league.mark()

    def close(self) -> None:
        self.exploiter_set.close()
        self.league.close()
