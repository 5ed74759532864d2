"""The guard: the main learner's gauntleted snapshots never fall clearly below the best one.

A learner trained against its own past can get worse and stay worse: its policy drifts into a style
that beats its recent snapshots and loses to everything else, or its entropy collapses. The gauntlet
(``arena.league.gauntlet``) sees it happen on a fixed scale; the guard acts on what it sees.

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

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from arena.league.store import GauntletRecord

GUARD_RESTORES_KEY = "guard_restores"  # league store meta: the guard's restores over the run
GUARD_REJECTIONS_KEY = "guard_rejections"  # league store meta: candidates rejected over the run
GUARD_STREAK_KEY = "guard_rejections_in_a_row"  # league store meta: since the last accepted or restore
# league store meta: {checkpoint count: [rejections, restores, in a row]}, the counts the main learner
# had when it wrote each checkpoint (recorded when the league first hears of it)
GUARD_AT_CHECKPOINT_KEY = "guard_counts_at_checkpoint"


@dataclass(frozen=True)
class GuardCounts:
    """The guard's counts over a run, kept in the league store's meta: candidates rejected, restores
    of the learner, and rejections since the last accepted candidate or restore."""

    rejections: int = 0
    restores: int = 0
    in_a_row: int = 0

    @classmethod
    def from_meta(cls, meta: dict[str, str]) -> GuardCounts:
        return cls(int(meta.get(GUARD_REJECTIONS_KEY, "0")), int(meta.get(GUARD_RESTORES_KEY, "0")),
                   int(meta.get(GUARD_STREAK_KEY, "0")))

    def as_meta(self) -> dict[str, int]:
        return {GUARD_REJECTIONS_KEY: self.rejections, GUARD_RESTORES_KEY: self.restores,
                GUARD_STREAK_KEY: self.in_a_row}

    @classmethod
    def at_checkpoint(cls, meta: dict[str, str], checkpoints: int) -> GuardCounts:
        """The counts of a learner that resumes from its ``checkpoints``-th checkpoint: zero for a
        new learner (0), the ones recorded when the league heard of that checkpoint, else the
        current ones (a checkpoint newer than every record: written just before the process ended,
        so the guard decided nothing after it)."""
        if checkpoints == 0:
            return cls()
        recorded = json.loads(meta.get(GUARD_AT_CHECKPOINT_KEY, "{}")).get(str(checkpoints))
        return cls(*recorded) if recorded is not None else cls.from_meta(meta)

    def recorded_at(self, meta: dict[str, str], checkpoints: int) -> dict[str, dict[str, list[int]]]:
        """The meta update that records these counts as the ones at checkpoint ``checkpoints``."""
        records = json.loads(meta.get(GUARD_AT_CHECKPOINT_KEY, "{}"))
        records[str(checkpoints)] = [self.rejections, self.restores, self.in_a_row]
        return {GUARD_AT_CHECKPOINT_KEY: records}


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
                  references: Sequence[str]) -> GuardScore | None:
    """The best of ``snapshots`` (in snapshot order) that played every one of ``references``: the
    highest guard score, the latest of equals. None when none has played them all."""
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
        if best is None or score.score >= best.score:
            best = score
    return best


def rejects(candidate: GuardScore, best: GuardScore | None, margin: float = 0.0) -> bool:
    """Whether the best snapshot's score lies above the candidate's 95% interval by more than ``margin``."""
    if best is None or candidate.score >= best.score:
        return False
    return candidate.upper + margin < best.score - 1e-9  # a rounding of the interval is not a drop
