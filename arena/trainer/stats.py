"""What the rollout counts between two ``mean_and_log`` calls: episodes, match outcomes per opponent,
the game's events per learner fighter and match (``match/<event>``, e.g. ``match/fired``,
``match/hits``, ``match/evaded`` in midrange: whether the learner shoots, hits and defends; in a team
game also per fighter slot, ``match/fighter<i>/<event>``, ``i`` as in the world state), reward terms
and where the time went."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

OUTCOME_WIN, OUTCOME_LOSS, OUTCOME_DRAW = 0, 1, 2  # the core's codes, from team 0's view
TIME_PARTS = ("sim", "inference", "learn")
# Reported too, as parts of the above: the opponents' share of the inference time.
SUB_PARTS = ("inference_opponents",)


class RolloutStats:
    """Running sums, cleared by ``summary``."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.return_sum = 0.0
        self.returns = 0
        self.length_sum = 0.0
        self.lengths = 0
        self.outcomes: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(3, dtype=np.int64))
        self.term_sums: dict[str, float] = defaultdict(float)
        self.term_samples = 0
        self.event_sums: dict[str, float] = defaultdict(float)
        self.event_rows = 0
        self.slot_event_sums: dict[str, float] = defaultdict(float)  # "fighter<i>/<event>"
        self.slot_rows: dict[str, int] = defaultdict(int)  # "fighter<i>"
        self.seconds: dict[str, float] = defaultdict(float)

    def add_time(self, part: str, seconds: float) -> None:
        self.seconds[part] += seconds

    def record_returns(self, returns: np.ndarray) -> None:
        """Training-reward returns of the learner rows whose episodes just ended."""
        self.return_sum += float(returns.sum())
        self.returns += len(returns)

    def record_events(
        self, counts: np.ndarray, names: tuple[str, ...], slots: np.ndarray | None = None
    ) -> None:
        """Each event's count over a finished match, one row per learner row whose match ended;
        ``slots`` (a team game): each row's fighter slot in its env, for the per-slot means."""
        if len(counts) == 0:
            return
        for name, total in zip(names, counts.sum(axis=0).tolist(), strict=True):
            self.event_sums[name] += float(total)
        self.event_rows += len(counts)
        if slots is None:
            return
        for slot in np.unique(slots).tolist():
            mine = slots == slot
            for name, total in zip(names, counts[mine].sum(axis=0).tolist(), strict=True):
                self.slot_event_sums[f"fighter{slot}/{name}"] += float(total)
            self.slot_rows[f"fighter{slot}"] += int(mine.sum())

    def record_matches(
        self, players: np.ndarray, names: list[str], outcomes: np.ndarray, lengths: np.ndarray
    ) -> None:
        """Finished matches: each one's team-1 player (index into ``names``), outcome code (team 0's
        view) and length."""
        self.length_sum += float(lengths.sum())
        self.lengths += len(lengths)
        counts = np.bincount(players * 3 + outcomes.astype(np.int64), minlength=3 * len(names))
        for p in np.unique(players):
            self.outcomes[names[p]] += counts[3 * p : 3 * p + 3]

    def record_terms(self, terms: Mapping[str, np.ndarray], learner_rows: np.ndarray) -> None:
        """Sums of each reward term over the learner rows of one step."""
        count = int(learner_rows.sum())
        if count == 0:
            return
        for name, values in terms.items():
            self.term_sums[name] += float(np.asarray(values, dtype=np.float64)[learner_rows].sum())
        self.term_samples += count

    def to_state(self) -> dict[str, object]:
        """The running sums as plain types (what a data-parallel rank sends to the others)."""
        return {
            "return_sum": self.return_sum, "returns": self.returns, "length_sum": self.length_sum,
            "lengths": self.lengths, "outcomes": {k: v.tolist() for k, v in self.outcomes.items()},
            "term_sums": dict(self.term_sums), "term_samples": self.term_samples,
            "event_sums": dict(self.event_sums), "event_rows": self.event_rows, "seconds": dict(self.seconds),
            "slot_event_sums": dict(self.slot_event_sums), "slot_rows": dict(self.slot_rows),
        }

    def merge(self, states: list[dict[str, object]]) -> None:
        """Replaces the sums by those of ``states`` (every rank's ``to_state()``) added up; the time
        split is their mean (the ranks work side by side)."""
        self.clear()
        for st in states:
            self.return_sum += float(st["return_sum"])  # type: ignore[arg-type]
            self.returns += int(st["returns"])  # type: ignore[call-overload]
            self.length_sum += float(st["length_sum"])  # type: ignore[arg-type]
            self.lengths += int(st["lengths"])  # type: ignore[call-overload]
            for k, v in st["outcomes"].items():  # type: ignore[attr-defined]
                self.outcomes[k] += np.asarray(v, dtype=np.int64)
            for k, v in st["term_sums"].items():  # type: ignore[attr-defined]
                self.term_sums[k] += float(v)
            self.term_samples += int(st["term_samples"])  # type: ignore[call-overload]
            for k, v in st["event_sums"].items():  # type: ignore[attr-defined]
                self.event_sums[k] += float(v)
            self.event_rows += int(st["event_rows"])  # type: ignore[call-overload]
            for k, v in st.get("slot_event_sums", {}).items():  # type: ignore[attr-defined]
                self.slot_event_sums[k] += float(v)
            for k, v in st.get("slot_rows", {}).items():  # type: ignore[attr-defined]
                self.slot_rows[k] += int(v)
            for k, v in st["seconds"].items():  # type: ignore[attr-defined]
                self.seconds[k] += float(v) / len(states)

    def summary(self) -> dict[str, float]:
        """Means since the last summary (keys only for what happened), then clears."""
        out: dict[str, float] = {}
        if self.returns:
            out["episode_return"] = self.return_sum / self.returns
        if self.lengths:
            out["episode_length"] = self.length_sum / self.lengths
            out["episodes"] = float(self.lengths)
        for pid, counts in sorted(self.outcomes.items()):
            total = int(counts.sum())
            if total:
                out[f"win_rate/{pid}"] = float(counts[OUTCOME_WIN]) / total
                out[f"draw_rate/{pid}"] = float(counts[OUTCOME_DRAW]) / total
                out[f"loss_rate/{pid}"] = float(counts[OUTCOME_LOSS]) / total
                out[f"episodes/{pid}"] = float(total)
        if self.event_rows:
            for name, total_value in self.event_sums.items():
                out[f"match/{name}"] = total_value / self.event_rows
        for key, total_value in sorted(self.slot_event_sums.items()):
            rows = self.slot_rows[key.split("/")[0]]
            if rows:
                out[f"match/{key}"] = total_value / rows
        if self.term_samples:
            for name, total_value in sorted(self.term_sums.items()):
                out[f"reward/{name}"] = total_value / self.term_samples
        for part in TIME_PARTS + SUB_PARTS:
            out[f"time/{part}"] = self.seconds.get(part, 0.0)
        self.clear()
        return out
