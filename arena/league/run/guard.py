"""The guard: the main learner's gauntleted snapshots never fall clearly below the best one.

A learner trained against its own past can get worse and stay worse: its policy drifts into a style
that beats its recent snapshots and loses to everything else, or its entropy collapses. The gauntlet
(``arena.league.run.gauntlet``) sees it happen on a fixed scale; the guard acts on what it sees.

When a snapshot of the main learner is due to play the gauntlet, its weights play it as a candidate,
before they are published:

- Its *guard score* is its lowest score over the references (the matchup it is weakest in), with
  that score's 95% Wilson interval.
- The *best* snapshot is the learner's gauntleted snapshot with the highest guard score (the latest
  of equals), read from the league store, so a resumed run judges as the uninterrupted one.
- The candidate is *rejected* when the best's score lies above the candidate's whole interval, by more
  than ``league.gauntlet.guard_margin`` (default 0): a drop the gauntlet's games cannot explain by
  chance. A rejected candidate is never published: the snapshot holds the best snapshot's weights
  (read from its file, sha256-checked) and plays the gauntlet under its own id. The candidate's
  weights are kept in ``<run_dir>/league/rejected/`` to play back (the league never loads them).
- With ``league.gauntlet.guard_bar`` (default null: none), scores are compared capped at the bar: a
  snapshot that clears it is as good as the best, and the best is the *latest* snapshot that cleared
  it. Without a bar one lucky early gauntlet (0.845 over 200 games at 5M samples) can stay the best
  for the whole run and be published in place of every later, longer-trained network that scores
  0.83; with ``guard_bar=0.8`` the later one is published, and only drops below the bar are
  rejected.
- The learner keeps its own weights and goes on learning until ``league.gauntlet.guard_patience``
  (default 3) candidates in a row are rejected; then its weights are restored from the best
  snapshot and its optimizer's moments cleared. Until a gauntlet accepts it again (or it is
  restored), a learner judged below its best takes no snapshot between gauntlets: an unjudged
  snapshot would publish the drop. Restoring at the first rejection (patience 1) kept
  learners of 30-minute midrange runs on a treadmill: each restore was followed by the same drop
  within the next gauntlet's 4M samples, up to five times in a row, with no room to cross a dip.

This is AlphaGo Zero's gate (a new network replaced the best player only when it beat it, while
training went on) and the *exploit* step of population-based training (a member falling behind
copies a better member's weights), measured against fixed references rather than the pool. It keeps
the league's output from regressing; it does not make the learner learn. Until the learner scores
above zero against every reference, every candidate's guard score is ~0 and nothing is rejected.
Snapshots between two gauntlets (``league.gauntlet.every_steps``) are published unjudged.
Off: ``league.gauntlet.guard=false``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arena.agents.policy import Policy, policy_from_payload
from arena.league.config import GauntletConfig
from arena.league.model.guard_counts import GuardCounts
from arena.league.model.league import League
from arena.league.model.players import Player, snapshot_id
from arena.league.model.snapshots import load_snapshot, snapshot_file
from arena.league.model.store import GauntletRecord
from arena.league.run.gauntlet import Gauntlet, gauntlet_metrics
from arena.league.run.learner import LeagueLearner, snapshot_file_name, snapshot_state
from arena.league.timing import LeagueTimer

logger = logging.getLogger(__name__)

CANDIDATE_FILE = Path("league") / "candidate.pt"  # the weights the guard judges, while it plays them
REJECTED_DIR = Path("league") / "rejected"  # the weights of the candidates the guard rejected, to play back

@dataclass(frozen=True)
class GuardScore:
    """A snapshot's lowest score over the references, with that score's 95% Wilson interval."""

    player_id: str
    reference: str
    score: float
    lower: float
    upper: float


def guard_score(records: Sequence[GauntletRecord]) -> GuardScore:
    """The lowest-scoring reference of one snapshot's gauntlet records."""
    if not records:
        raise ValueError("guard_score needs at least one gauntlet record")
    players = {r.player_id for r in records}
    if len(players) != 1:
        raise ValueError(f"guard_score takes the records of one snapshot, got {sorted(players)}")
    worst = min(records, key=lambda r: r.score()[0])
    score, lower, upper = worst.score()
    return GuardScore(worst.player_id, worst.reference, score, lower, upper)


def best_snapshot(records: Iterable[GauntletRecord], snapshots: Sequence[str],
                  references: Sequence[str], bar: float | None = None) -> GuardScore | None:
    """The best of ``snapshots`` (in snapshot order) that played every one of ``references``: the
    highest guard score, the latest of equals. With a ``bar``, scores are compared capped at it: every
    snapshot at or above the bar is as good as any other, so the latest of them is the best. None when
    none has played them all."""
    wanted = set(references)
    by_player: dict[str, dict[str, GauntletRecord]] = {}
    for record in records:  # in the order played: a replayed pair keeps its latest result
        if record.reference in wanted:
            by_player.setdefault(record.player_id, {})[record.reference] = record
    best: GuardScore | None = None
    for player_id in snapshots:
        played = by_player.get(player_id, {})
        if set(played) != wanted:
            continue
        score = guard_score(list(played.values()))
        if best is None or capped(score.score, bar) >= capped(best.score, bar):
            best = score
    return best


def capped(score: float, bar: float | None) -> float:
    """``score`` as the guard compares it: no higher than ``bar`` (None: uncapped)."""
    return score if bar is None else min(score, bar)


def rejects(candidate: GuardScore, best: GuardScore | None, margin: float = 0.0,
            bar: float | None = None) -> bool:
    """Whether the best snapshot's score, capped at ``bar`` (None: uncapped), lies above the candidate's
    95% interval by more than ``margin``."""
    if best is None:
        return False
    target = capped(best.score, bar)
    if candidate.score >= target:
        return False
    return candidate.upper + margin < target - 1e-9  # a rounding of the interval is not a drop


class Guard:
    """The gauntlet's schedule and the guard's verdicts on one run's main learner (the module docstring
    says what it decides). ``LeagueRun`` owns one: it asks ``due`` when a snapshot is taken, ``judge``
    for the weights to publish, and ``record`` for the published snapshot's games; ``take_metrics``
    and ``take_replays`` give what happened since the last call to the logs. The counts live in the
    league store's meta, so a resumed run judges as the uninterrupted one."""

    def __init__(self, league: League, run_dir: str | os.PathLike[str], config: GauntletConfig,
                 timer: LeagueTimer, *, learner_checkpoints: int = 0,
                 on_restore: Callable[[], None] = lambda: None) -> None:
        """``learner_checkpoints``: as ``LeagueRun``'s; the counts go back to those the learner had
        at that checkpoint. ``on_restore``: called after the guard restored the learner's weights."""
        self.league, self.run_dir, self.config, self.timer = league, Path(run_dir), config, timer
        self.gauntlet: Gauntlet | None = None  # set by LeagueRun.attach, once the env is known
        self._on_restore = on_restore
        self._step: int | None = None  # learner step of the last snapshot that played the gauntlet
        self._records_new: list[GauntletRecord] = []  # results not yet in the metrics
        self._replays_new: list[tuple[str, Path, Any]] = []  # gauntlet replays not yet sent to the loggers
        self._metrics_new: dict[str, float] = {}  # the last rejection's figures, not yet in the metrics
        self._counts: GuardCounts | None = None  # read from the store once per process (its one writer)
        self._candidates: tuple[tuple[str, ...], list[str]] | None = None  # (snapshot ids, candidates)
        meta = league.store.meta()
        resumed, current = GuardCounts.at_checkpoint(meta, learner_checkpoints), GuardCounts.from_meta(meta)
        if resumed != current:  # decisions about weights no checkpoint holds are undone
            logger.warning("the guard's counts go back to those at the learner's checkpoint %d: %s (were %s)",
                           learner_checkpoints, resumed, current)
            self._set_counts(resumed)

    @property
    def active(self) -> bool:
        """Whether the guard judges the main learner's snapshots. Under torchrun too: rank 0 plays the
        gauntlet, and a restore reaches every rank (``PPOTrainer.restore_policy``)."""
        return self.gauntlet is not None and self.config.guard

    def counts(self) -> GuardCounts:
        if self._counts is None:
            self._counts = GuardCounts.from_meta(self.league.store.meta())
        return self._counts

    def _set_counts(self, counts: GuardCounts) -> None:
        self.league.store.set_metas(counts.as_meta())  # in one transaction
        self._counts = counts

    def below_best(self) -> bool:
        """Whether the last verdict on the main learner was a rejection it has not been restored from:
        its unjudged snapshots would publish that drop."""
        return self.active and self.counts().in_a_row > 0

    def note_checkpoint(self, checkpoints_written: int) -> None:
        """The main learner wrote its ``checkpoints_written``-th checkpoint before this round's
        verdict: record the counts it goes with (see ``GuardCounts.at_checkpoint``)."""
        meta = self.league.store.meta()
        self.league.store.set_metas(self.counts().recorded_at(meta, checkpoints_written))

    def due(self, step: int | None) -> bool:
        """Whether a snapshot of the main learner at ``step`` plays the gauntlet
        (``league.gauntlet.every_steps`` after the last one; the first of a run always)."""
        if self.gauntlet is None:
            return False
        if self._step is None:  # first of this process: resume from the store's last
            played = self.league.store.gauntlet()
            self._step = max((r.learner_step or 0 for r in played), default=None)
        if self._step is None or step is None:
            return True
        return step - self._step >= self.config.every_steps

    def best(self, learner: LeagueLearner) -> str | None:
        """The id of ``learner``'s best gauntleted snapshot (the one a rejection publishes and a
        restore loads), or None without a gauntlet or before one."""
        if self.gauntlet is None:
            return None
        best = self._best_score(learner, self.config.guard_bar)
        return None if best is None else best.player_id

    def reached(self, learner: LeagueLearner, score: float) -> bool:
        """Whether one of ``learner``'s gauntleted snapshots has scored at least ``score`` against every
        reference (its guard score, uncapped), read from the store; False without a gauntlet."""
        if self.gauntlet is None:
            return False
        best = self._best_score(learner, bar=None)
        return best is not None and best.score >= score

    def _best_score(self, learner: LeagueLearner, bar: float | None) -> GuardScore | None:
        """The best of ``learner``'s gauntleted snapshots, compared capped at ``bar`` (None: uncapped)."""
        assert self.gauntlet is not None
        snapshots = [p.player_id for p in self.league.pool.snapshots(parent=learner.player_id)]
        return best_snapshot(self.league.store.gauntlet(), snapshots, list(self.gauntlet.references),
                             bar)

    def score_of(self, player_id: str) -> GuardScore | None:
        """One snapshot's guard score (its lowest over the references), read from the store; None
        when it has not played every reference (not gauntleted) or there is no gauntlet."""
        if self.gauntlet is None:
            return None
        return best_snapshot(self.league.store.gauntlet(), [player_id], list(self.gauntlet.references))

    def candidates(self, learner_id: str) -> list[str]:
        """The main learner's snapshots that may be published by ``league.publish: held`` and that a
        main exploiter with ``target: candidate`` attacks, in joining order: those whose gauntlet
        scored at least ``guard_bar`` against every reference, each set of weights once (the first
        snapshot that holds it: a rejection's snapshots are copies of the best's). Read from the store
        once per set of snapshots: a snapshot's gauntlet is recorded as it is taken, before anyone asks."""
        if self.gauntlet is None or self.config.guard_bar is None:
            return []
        snapshots = self.league.pool.snapshots(parent=learner_id)
        key = tuple(p.player_id for p in snapshots)
        if self._candidates is not None and self._candidates[0] == key:
            return list(self._candidates[1])
        references = list(self.gauntlet.references)
        records = self.league.store.gauntlet()
        found: list[str] = []
        seen: set[str | None] = set()
        for player in snapshots:
            score = best_snapshot(records, [player.player_id], references)
            if score is not None and score.score >= self.config.guard_bar and player.sha256 not in seen:
                found.append(player.player_id)
                seen.add(player.sha256)
        self._candidates = (key, found)
        return list(found)

    def judge(self, learner: LeagueLearner) -> tuple[list[GauntletRecord], Policy | None]:
        """The learner's weights play the gauntlet as a candidate for its next snapshot; when they fall
        clearly below the best snapshot's, the snapshot publishes the best's weights instead, and
        after ``guard_patience`` rejections in a row the learner is restored from them. Returns the
        candidate's records when they stand for the next snapshot (the same weights, the same games),
        else [] (the published weights play their own); and the weights to publish instead of the
        learner's (None: the learner's)."""
        assert self.gauntlet is not None
        pool = self.league.pool
        best = self._best_score(learner, self.config.guard_bar)
        candidate_id = snapshot_id(learner.player_id, pool.count_snapshots(learner.player_id))
        path = self.run_dir / CANDIDATE_FILE
        with self.timer.measure("gauntlet"):
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(snapshot_state(learner.policy), path)
            try:
                records = self.gauntlet.play(candidate_id, path, learner.step)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
        candidate = guard_score([r for r in records if r.reference in self.gauntlet.references])
        counts = self.counts()
        if not rejects(candidate, best, self.config.guard_margin, self.config.guard_bar):
            path.unlink(missing_ok=True)
            if counts.in_a_row:
                self._set_counts(dataclasses.replace(counts, in_a_row=0))
            return records, None
        assert best is not None
        # Kept, never loaded by the league: what the learner had become, for a user to play back
        # (python -m arena.evaluate <run>/league/rejected/<file> scripted:heuristic --shots).
        kept = self.run_dir / REJECTED_DIR / snapshot_file_name(candidate_id)
        kept.parent.mkdir(parents=True, exist_ok=True)
        path.replace(kept)
        self.gauntlet.take_saved()  # the candidate's replays: the published weights play their own
        best_file, state = self._snapshot_state(best.player_id)
        streak, rejections, restores = counts.in_a_row + 1, counts.rejections + 1, counts.restores
        instead: Policy | None = None
        if streak >= self.config.guard_patience:
            learner.trainer.restore_policy(state["policy"])  # Adam's moments are cleared with it
            self._on_restore()
            restores, streak = restores + 1, 0
            action = f"the learner is restored from {best.player_id} (restore {restores})"
        else:
            instead = policy_from_payload(state, source=f"snapshot {best_file}")
            left = self.config.guard_patience - streak
            action = (f"the snapshot publishes {best.player_id}'s weights; the learner keeps learning "
                      f"({left} more rejection(s) in a row restore it)")
        self._set_counts(GuardCounts(rejections, restores, streak))
        self._metrics_new = {"league/guard_rejections": float(rejections),
                             "league/guard_restores": float(restores),
                             "league/guard_rejected_score": candidate.score,
                             "league/guard_best_score": best.score}
        logger.warning(
            "guard: at step %d the learner scores %.3f [%.3f, %.3f] against %s, below the best snapshot "
            "%s (%.3f against %s): %s; its weights are kept in %s",
            learner.step, candidate.score, candidate.lower, candidate.upper,
            candidate.reference, best.player_id, best.score, best.reference, action, kept)
        return [], instead

    def _snapshot_state(self, player_id: str) -> tuple[Path, dict[str, Any]]:
        """A snapshot's file and its contents, checked against its recorded sha256."""
        player = self.league.pool.get(player_id)
        assert player.sha256 is not None  # freeze_policy records every snapshot's
        path = snapshot_file(self.run_dir, player)
        return path, load_snapshot(path, player.sha256)

    def restore_to(self, learner: LeagueLearner, player_id: str) -> None:
        """The learner's weights become those of its snapshot ``player_id`` (sha256-checked; Adam's
        moments cleared), and a run of rejections ends with it, as with the guard's own restore (not
        counted among them): the league's answer restarts the learner from a beaten candidate."""
        _, state = self._snapshot_state(player_id)
        learner.trainer.restore_policy(state["policy"])
        self._on_restore()
        counts = self.counts()
        if counts.in_a_row:
            self._set_counts(dataclasses.replace(counts, in_a_row=0))

    def record(self, player: Player, judged: list[GauntletRecord]) -> None:
        """The gauntlet of a snapshot just taken: ``judged`` (the accepted candidate's games, the same
        weights) or, when empty, its own games now; stored, and kept for the metrics."""
        assert self.gauntlet is not None
        with self.timer.measure("gauntlet"):
            if not judged:  # no candidate played, or it was rejected
                path = snapshot_file(self.run_dir, player)
                judged = self.gauntlet.play(player.player_id, path, player.step)
            for record in judged:
                record = dataclasses.replace(record, player_id=player.player_id)
                self.league.store.record_gauntlet(record)
                self._records_new.append(record)
            self._replays_new.extend(self.gauntlet.take_saved())
        self._step = player.step

    def take_metrics(self) -> dict[str, float]:
        """The last rejection's figures and the gauntlet scores (``gauntlet/<reference>``, with their
        intervals) since the last call: once per snapshot, at the step it was taken."""
        out, self._metrics_new = self._metrics_new, {}
        if self._records_new:
            out = {**out, **gauntlet_metrics(self._records_new)}
            self._records_new = []
        return out

    def take_replays(self) -> list[tuple[str, Path, Any]]:
        """(reference, replay file, ``Replay``) of the gauntlet replays saved since the last call."""
        replays, self._replays_new = self._replays_new, []
        return replays
