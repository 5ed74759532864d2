"""The payoff table: decayed win/draw/loss counts per pair of players.

A result is ``arena.envs.outcomes.Result`` (+1 win, 0 draw, -1 loss) from one side's point of view;
the trainer's path makes it from the core's code where a match enters the league
(``Result.of_team``), and a name or number a user gives is read once by ``Result.parse``.

Each unordered pair is stored once, as counts from the point of view of the pair's first id (in sorted
order), so `wdl(a, b)` and `wdl(b, a)` are mirror images by construction. Decay is per pair: each new
result of a pair first multiplies that pair's existing counts by `decay`, so recent results weigh more
(AlphaStar's payoff decay); decay = 1.0 keeps plain totals.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from arena.envs.outcomes import Result, ResultLike


class PayoffTable:
    """W/D/L per pair of players with per-pair exponential decay."""

    def __init__(self, decay: float = 1.0) -> None:
        if not (isinstance(decay, int | float) and 0.0 < decay <= 1.0):
            raise ValueError(f"payoff decay {decay!r} must be in (0, 1] (1.0 = no decay)")
        self.decay = float(decay)
        # (first, second) with first <= second -> [wins, draws, losses] of `first` against `second`.
        self._counts: dict[tuple[str, str], np.ndarray] = {}

    def record(self, a: str, b: str, outcome: ResultLike) -> None:
        """Record one game of a against b; outcome is from a's point of view ("win"/"draw"/"loss", +1/0/-1).

        A player against itself (mirror self-play) counts a decisive game as half a win and half a loss,
        so its score stays 0.5 and its counts stay symmetric.
        """
        result = Result.parse(outcome)
        key, flipped = _key(a, b)
        counts = self._counts.get(key)
        if counts is None:
            counts = self._counts[key] = np.zeros(3)
        counts *= self.decay
        if a == b:
            counts += (0.0, 1.0, 0.0) if result == 0 else (0.5, 0.0, 0.5)
        else:
            from_first = -result if flipped else result
            counts[1 - from_first] += 1.0  # +1 -> index 0 (W), 0 -> 1 (D), -1 -> 2 (L)

    def record_teams(self, team_a: Sequence[str], team_b: Sequence[str], outcome: ResultLike) -> None:
        """Record a team match as one game for every (player of A, player of B) pair."""
        result = Result.parse(outcome)
        for a in dict.fromkeys(team_a):
            for b in dict.fromkeys(team_b):
                self.record(a, b, result)

    def wdl(self, a: str, b: str) -> tuple[float, float, float]:
        """Decayed (wins, draws, losses) of a against b; zeros for a pair that never played."""
        key, flipped = _key(a, b)
        counts = self._counts.get(key)
        if counts is None:
            return (0.0, 0.0, 0.0)
        w, d, l = (float(c) for c in counts)  # noqa: E741
        return (l, d, w) if flipped else (w, d, l)

    def wdl_against(self, a: str, opponents: Sequence[str]) -> np.ndarray:
        """``(len(opponents), 3)``: the decayed (wins, draws, losses) of a against each opponent, zeros
        for a pair that never played; the rows equal `wdl`'s, one dictionary lookup each (a pool of
        thousands in milliseconds)."""
        get, zero = self._counts.get, (0.0, 0.0, 0.0)
        rows = []
        for b in opponents:
            if a <= b:
                counts = get((a, b))
                rows.append(zero if counts is None else counts)
            else:
                counts = get((b, a))
                rows.append(zero if counts is None else counts[::-1])
        return np.array(rows, dtype=float).reshape(len(rows), 3)

    def games(self, a: str, b: str) -> float:
        """Decayed number of games between a and b."""
        return float(sum(self.wdl(a, b)))

    def score(self, a: str, b: str) -> float | None:
        """(W + D/2) / games of a against b, or None when they never played."""
        w, d, l = self.wdl(a, b)  # noqa: E741
        games = w + d + l
        return None if games <= 0.0 else (w + 0.5 * d) / games

    def rows(self) -> Iterator[tuple[str, str, float, float, float]]:
        """Every pair's decayed counts as (first, second, wins, draws, losses) of first against second,
        first <= second: what the store keeps at a mark (`load_rows` reads them back exactly)."""
        for (a, b), counts in self._counts.items():
            yield a, b, float(counts[0]), float(counts[1]), float(counts[2])

    def load_rows(self, rows: Iterable[tuple[str, str, float, float, float]]) -> None:
        """Sets the counts of the pairs in ``rows`` (as `rows` gives them), replacing what they held."""
        for a, b, wins, draws, losses in rows:
            if a > b:
                raise ValueError(f"payoff row ({a!r}, {b!r}) must name its pair in sorted order")
            self._counts[(a, b)] = np.array([wins, draws, losses], dtype=float)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """The pairs that have played, each once, as (first, second) in sorted order."""
        return iter(list(self._counts))

    def matrix(self, players: Sequence[str]) -> np.ndarray:
        """Scores of row player against column player; NaN where they never played (blank in a heatmap)."""
        n = len(players)
        out = np.full((n, n), np.nan)
        for i, a in enumerate(players):
            for j, b in enumerate(players):
                s = self.score(a, b)
                if s is not None:
                    out[i, j] = s
        return out

    def games_matrix(self, players: Sequence[str]) -> np.ndarray:
        """Decayed game counts between row and column players."""
        return np.array([[self.games(a, b) for b in players] for a in players], dtype=float).reshape(
            len(players), len(players)
        )


def _key(a: str, b: str) -> tuple[tuple[str, str], bool]:
    return ((a, b), False) if a <= b else ((b, a), True)
