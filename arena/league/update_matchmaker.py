"""The league ``Matchmaker`` with its candidate lists and PFSP probabilities computed once per update.

At every episode end the trainer asks for opponents, often for one or two envs at a time; computing
PFSP weights over the whole pool at each request costs O(pool) each time, which grows with the league.
The weights move slowly (one match changes one pair's decayed score a little), so they are computed
once per update (``refresh``, called by the training loop after each update) and at once whenever a
player joins the league. Draws still come one per env slot from the matchmaker's own RNG.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arena.league.matchmaking import Matchmaker


class UpdateMatchmaker(Matchmaker):
    """A ``Matchmaker`` whose ``candidates`` are cached until ``refresh()`` or until the pool grows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cached: dict[tuple[str, str], tuple[int, list[str], np.ndarray]] = {}

    def candidates(self, source: str, learner_id: str) -> tuple[list[str], np.ndarray]:
        key = (source, learner_id)
        hit = self._cached.get(key)
        if hit is None or hit[0] != len(self.pool):
            hit = (len(self.pool), *super().candidates(source, learner_id))
            self._cached[key] = hit
        return hit[1], hit[2]

    def distribution(self, learner_id: str) -> tuple[list[str], np.ndarray]:
        """The players ``choose_many`` draws each slot from and their probabilities (summing to 1): each
        source's candidates weighted by the source's probability; a source without any plays mirror
        (``learner_id``). A player several sources can pick appears once."""
        self.pool.get(learner_id)
        total: dict[str, float] = {}
        for source, weight in zip(self.sources, self.source_probs.tolist(), strict=True):
            ids, probs = self.candidates(source, learner_id)
            if not ids:
                ids, probs = [learner_id], np.ones(1)
            for player_id, prob in zip(ids, np.asarray(probs, dtype=float).tolist(), strict=True):
                total[player_id] = total.get(player_id, 0.0) + weight * prob
        ids = list(total)
        probs = np.array([total[p] for p in ids], dtype=float)
        return ids, probs / probs.sum()

    def refresh(self) -> None:
        """Recompute candidates and PFSP weights from the current payoff at the next request."""
        self._cached.clear()
