"""Wall time spent in league work during training, by part, for the logs and the league benchmark."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

# record: store commit + payoff + TrueSkill; matchmaking: opponent choice and the env bookkeeping around
# it; loading: frozen and live players; snapshot: gate + file + registration; views: ratings,
# leaderboard and heatmap for the logger; gauntlet: new snapshots' games against the fixed references;
# meta_game: PSRO's games of each new snapshot against the earlier ones, and the meta-game's solution.
LEAGUE_PARTS = ("record", "matchmaking", "loading", "snapshot", "gauntlet", "views", "meta_game")


class LeagueTimer:
    """perf_counter totals per part, since the start and since the last ``take``. Measures nest: a
    part timed inside another is counted once, in the inner part (exclusive times)."""

    def __init__(self) -> None:
        self.totals = dict.fromkeys(LEAGUE_PARTS, 0.0)
        self._recent = dict.fromkeys(LEAGUE_PARTS, 0.0)
        self._inner: list[float] = []  # per open measure: time already counted by measures inside it

    @contextmanager
    def measure(self, part: str) -> Iterator[None]:
        t0 = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - t0
            own = elapsed - self._inner.pop()
            self.totals[part] += own
            self._recent[part] += own
            if self._inner:
                self._inner[-1] += elapsed

    @property
    def total(self) -> float:
        return sum(self.totals.values())

    def take(self) -> dict[str, float]:
        """Seconds per part since the previous call (and their sum under "total")."""
        recent = dict(self._recent)
        recent["total"] = sum(recent.values())
        self._recent = dict.fromkeys(LEAGUE_PARTS, 0.0)
        return recent
