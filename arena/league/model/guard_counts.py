"""The guard's counts over a run (``arena.league.run.guard``), kept in the league store's meta so that a
resumed run judges as the uninterrupted one, and ``python -m arena.league show`` can print them."""

from __future__ import annotations

import json
from dataclasses import dataclass

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
