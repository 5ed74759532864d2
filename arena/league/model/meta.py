"""PSRO's meta-game: the league's snapshots, their payoffs against each other, and its Nash.

Policy-Space Response Oracles (Lanctot et al. 2017) grows a population of policies, each a best
response to a mixture of the earlier ones (the *meta-strategy*), and solves the game between them
(the *meta-game*) for the next mixture. In an arena league:

- every new snapshot of the main learner plays ``league.meta_games`` side-swapped, seed-paired games
  against every earlier member (one batched call of the evaluation runner), which fills its row of
  the meta-game's score matrix; with ``league.meta_exploiters`` every snapshot of an exploiter joins
  the same way, so the population holds the best responses the league found, not only the learner's
  copies (in PSRO each new member is a best response);
- the meta-strategy is a Nash equilibrium of that symmetric zero-sum matrix game (``nash``:
  regret matching+ with linearly weighted averaging, deterministic);
- the matchmaking source ``nash`` draws the learner's opponents from the snapshots with those
  weights (the learner trains toward a best response to the meta-strategy), and
  ``league.publish: nash`` publishes that mixture (``league:RUN_DIR``, ``arena.league.model.published``).

The matrix lives in the store's meta table (key ``meta_game``), written in one transaction with the
published mixture, so a resumed run and a reader beside it see a whole one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

META_KEY = "meta_game"
SOLVER_ITERATIONS = 4000


def nash(scores: np.ndarray, iterations: int = SOLVER_ITERATIONS) -> np.ndarray:
    """An approximate Nash equilibrium of the symmetric zero-sum game whose row player scores
    ``scores[i, j]`` (in [0, 1], 0.5 = even) against column ``j``: regret matching+ in self-play with
    linearly weighted averaging (Tammelin 2014), which converges to an equilibrium of such a game."""
    s = np.asarray(scores, dtype=np.float64)
    n = s.shape[0]
    if s.shape != (n, n) or n == 0:
        raise ValueError(f"a meta-game needs a square, non-empty score matrix, got shape {s.shape}")
    payoff = (s - s.T)  # antisymmetric: the row's expected outcome (+1 win, -1 loss) against the column
    regrets = np.zeros(n)
    x = np.full(n, 1.0 / n)
    average = np.zeros(n)
    for t in range(1, iterations + 1):
        u = payoff @ x
        regrets = np.maximum(regrets + u - x @ u, 0.0)
        total = regrets.sum()
        x = regrets / total if total > 0 else np.full(n, 1.0 / n)
        average += t * x
    average /= average.sum()
    average[average < 1e-4] = 0.0  # members a solver of this precision cannot tell from 0
    return average / average.sum()


@dataclass
class MetaGame:
    """The population (player ids, in joining order) and the score of each against each."""

    players: list[str] = field(default_factory=list)
    scores: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    def add(self, player_id: str, scores_vs: Sequence[float]) -> None:
        """A new member with its scores against every member so far (in their order)."""
        n = len(self.players)
        if player_id in self.players:
            raise ValueError(f"{player_id!r} is already in the meta-game")
        if len(scores_vs) != n:
            raise ValueError(f"{player_id!r} needs one score per member ({n}), got {len(scores_vs)}")
        grown = np.full((n + 1, n + 1), 0.5)
        grown[:n, :n] = self.scores
        grown[n, :n] = scores_vs
        grown[:n, n] = 1.0 - np.asarray(scores_vs, dtype=np.float64)
        self.players.append(player_id)
        self.scores = grown

    def strategy(self) -> dict[str, float]:
        """The meta-strategy: ``{player: weight}`` over members with a weight above 0."""
        if not self.players:
            return {}
        weights = nash(self.scores)
        return {p: float(w) for p, w in zip(self.players, weights, strict=True) if w > 0}

    def to_meta(self) -> dict[str, object]:
        return {"players": list(self.players), "scores": np.round(self.scores, 6).tolist()}

    @classmethod
    def from_meta(cls, meta: Mapping[str, str]) -> MetaGame:
        """The meta-game a league store holds (empty when it holds none)."""
        if META_KEY not in meta:
            return cls()
        record = json.loads(meta[META_KEY])
        players = [str(p) for p in record["players"]]
        scores = np.asarray(record["scores"], dtype=np.float64).reshape(len(players), len(players))
        return cls(players, scores)
