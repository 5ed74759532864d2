"""Opponent choice: at each episode end the league picks who drives the other team of that env slot.

Sources (mixed with fixed probabilities, e.g. {"mirror": 0.35, "pfsp": 0.5, "scripted": 0.15}):
- "mirror": the learner plays itself (mirror self-play).
- "latest": the newest snapshot (of this learner if it has any, else of anyone).
- "uniform": uniform over the opponent pool (fictitious self-play, FSP).
- "pfsp": prioritized FSP over the opponent pool, weight f(x) with x the learner's score against it.
- "scripted": uniform over scripted bots.
- "pfsp_scripted": PFSP over the scripted bots only, so the bot the learner loses to most gets most
  of these episodes however many snapshots the pool holds (in the "pfsp" source a bot is one
  candidate among them all).
- "learners": uniform over the other learning players (what a main exploiter trains against).
- "pfsp_exploiters": PFSP over the exploiters' snapshots only (AlphaStar's main agents kept a share
  of their games for past main exploiters), so an exploiter snapshot the learner still loses to gets
  these episodes however many of the learner's own snapshots crowd the pool.
- "nash": PSRO's meta-strategy, the Nash mixture of the meta-game over the main learner's snapshots
  (``arena.league.model.meta``; the league hands it in as ``meta_strategy``).
The opponent pool is every player whose kind is in `pool_kinds` (snapshots by default), minus the asker.
A source with no candidate falls back to mirror, so a young league works from the first episode.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from arena.league.model.payoff import PayoffTable
from arena.league.model.players import EXPLOITER_KINDS, LEARNING_KINDS, PLAYER_KINDS, Pool

log = logging.getLogger(__name__)

SOURCES = ("mirror", "latest", "uniform", "pfsp", "scripted", "learners", "pfsp_scripted", "pfsp_exploiters",
           "nash")


def f_hard(x: np.ndarray | float, p: float = 2.0) -> np.ndarray:
    """(1 - x)^p: focus on the opponents the learner loses to."""
    return np.power(1.0 - np.asarray(x, dtype=float), p)


def f_var(x: np.ndarray | float, p: float = 2.0) -> np.ndarray:
    """x (1 - x): focus on opponents of about equal strength (p is ignored)."""
    x = np.asarray(x, dtype=float)
    return x * (1.0 - x)


def linear_capped(x: np.ndarray | float, p: float = 2.0) -> np.ndarray:
    """min(0.5, 1 - x): like hard, but every opponent still beaten half the time weighs the same."""
    return np.minimum(0.5, 1.0 - np.asarray(x, dtype=float))


WEIGHTINGS: dict[str, Callable[..., np.ndarray]] = {
    "hard": f_hard,
    "var": f_var,
    "linear_capped": linear_capped,
}


def pfsp_probabilities(
    scores: Sequence[float] | np.ndarray, weighting: str = "hard", p: float = 2.0
) -> np.ndarray:
    """Probabilities proportional to weighting(score); uniform when every weight is zero.

    Never NaN: an empty input gives an empty array, zero (or non-finite) total weight gives uniform.
    """
    fn = _weighting(weighting)
    x = np.asarray(scores, dtype=float)
    if x.size == 0:
        return np.zeros(0)
    if np.any((x < 0) | (x > 1)) or not np.all(np.isfinite(x)):
        raise ValueError(f"PFSP scores {x.tolist()} must be finite and in [0, 1]")
    w = np.clip(fn(x, p), 0.0, None)
    total = float(w.sum())
    if not math.isfinite(total) or total <= 0.0:
        return np.full(x.size, 1.0 / x.size)
    return w / total


def score_for_pfsp(payoff: PayoffTable, learner_id: str, opponent_id: str, min_games: float) -> float:
    """x = (W + D/2) / games of the learner against the opponent; 0.5 while games < min_games."""
    if payoff.games(learner_id, opponent_id) < min_games:
        return 0.5
    score = payoff.score(learner_id, opponent_id)
    return 0.5 if score is None else score


def scores_for_pfsp(payoff: PayoffTable, learner_id: str, opponents: Sequence[str],
                    min_games: float) -> np.ndarray:
    """`score_for_pfsp` of every opponent at once, the same numbers (the same operations, elementwise)."""
    counts = payoff.wdl_against(learner_id, opponents)
    w, d, l = counts[:, 0], counts[:, 1], counts[:, 2]  # noqa: E741
    games = w + d + l
    with np.errstate(divide="ignore", invalid="ignore"):
        score = (w + 0.5 * d) / games
    return np.where((games < min_games) | (games <= 0.0), 0.5, score)


class Matchmaker:
    """Chooses opponents from a pool with a fixed mix of sources, reproducibly for a seed.

    The pool and payoff table are read live, so snapshots added and games recorded later are seen.
    """

    def __init__(
        self,
        pool: Pool,
        payoff: PayoffTable,
        mix: Mapping[str, float],
        *,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
        weighting: str = "hard",
        p: float = 2.0,
        min_games: float = 5.0,
        pool_kinds: Sequence[str] = ("snapshot",),
    ) -> None:
        if seed is not None and rng is not None:
            raise ValueError("give the Matchmaker a seed or an rng, not both")
        self.pool = pool
        self.payoff = payoff
        self.sources, self.source_probs = _parse_mix(mix)
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        _weighting(weighting)
        if not (math.isfinite(p) and p > 0):
            raise ValueError(f"PFSP exponent p={p!r} must be finite and > 0")
        if not (math.isfinite(min_games) and min_games >= 0):
            raise ValueError(f"min_games={min_games!r} must be >= 0")
        for kind in pool_kinds:
            if kind not in PLAYER_KINDS:
                raise ValueError(f"pool kind {kind!r} is not one of {PLAYER_KINDS}")
        self.weighting = weighting
        self.p = float(p)
        self.min_games = float(min_games)
        self.pool_kinds = tuple(pool_kinds)
        self._warned: set[str] = set()
        # The "nash" source's weights ({player: weight}, PSRO's meta-strategy), set by the league.
        self.meta_strategy: Callable[[], Mapping[str, float]] | None = None

    def set_mix(self, mix: Mapping[str, float]) -> None:
        """Draws from now on with another mix of sources (checked as the constructor checks it); the
        RNG stream goes on."""
        self.sources, self.source_probs = _parse_mix(mix)

    def choose(self, learner_id: str) -> str:
        """One opponent's player id for an env slot of `learner_id`."""
        return self.choose_many(learner_id, 1)[0]

    def choose_many(self, learner_id: str, n: int) -> list[str]:
        """Opponents for n env slots of `learner_id` (each slot draws its source independently)."""
        self.pool.get(learner_id)  # fails clearly for an unknown learner
        if n < 0:
            raise ValueError(f"number of opponents n={n} must be >= 0")
        picks = self.rng.choice(len(self.sources), size=n, p=self.source_probs)
        out: list[str] = [learner_id] * n
        for k, source in enumerate(self.sources):  # fixed order keeps the rng stream reproducible
            slots = np.flatnonzero(picks == k)
            if slots.size == 0:
                continue
            ids, probs = self.candidates(source, learner_id)
            if not ids:
                self._warn_fallback(source, learner_id)
                continue
            chosen = self.rng.choice(len(ids), size=slots.size, p=probs)
            for slot, c in zip(slots, chosen, strict=True):
                out[int(slot)] = ids[int(c)]
        return out

    def candidates(self, source: str, learner_id: str) -> tuple[list[str], np.ndarray]:
        """The players `source` may choose for `learner_id` and their probabilities (empty if none)."""
        if source == "mirror":
            return [learner_id], np.ones(1)
        if source == "latest":
            latest = self.pool.latest_snapshot(parent=learner_id) or self.pool.latest_snapshot()
            ids = [] if latest is None or latest.player_id == learner_id else [latest.player_id]
            return ids, np.ones(len(ids))
        if source in ("scripted", "pfsp_scripted"):
            ids = [p.player_id for p in self.pool.of_kind("scripted") if p.player_id != learner_id]
            if source == "pfsp_scripted":
                return ids, self.pfsp_probabilities(learner_id, ids)
        elif source == "nash":
            strategy = self.meta_strategy() if self.meta_strategy is not None else {}
            ids = [p for p, w in strategy.items() if w > 0 and p != learner_id and p in self.pool]
            if ids:
                weights = np.array([strategy[p] for p in ids], dtype=float)
                return ids, weights / weights.sum()
        elif source == "learners":
            ids = [p.player_id for p in self.pool.of_kind(*LEARNING_KINDS) if p.player_id != learner_id]
        elif source == "pfsp_exploiters":
            ids = self.exploiter_snapshots(learner_id)
            return ids, self.pfsp_probabilities(learner_id, ids)
        elif source in ("uniform", "pfsp"):
            ids = self.opponent_pool(learner_id)
            if source == "pfsp":
                return ids, self.pfsp_probabilities(learner_id, ids)
        else:
            raise ValueError(f"matchmaking source {source!r} is not one of {SOURCES}")
        return ids, (np.full(len(ids), 1.0 / len(ids)) if ids else np.zeros(0))

    def opponent_pool(self, learner_id: str) -> list[str]:
        """Players of the pool kinds other than the learner, in joining order."""
        return [p.player_id for p in self.pool.of_kind(*self.pool_kinds) if p.player_id != learner_id]

    def exploiter_snapshots(self, learner_id: str) -> list[str]:
        """The exploiters' snapshots in the pool, in joining order: those of every generation, of
        restarted ones too."""
        return [p.player_id for p in self.pool.snapshots()
                if p.player_id != learner_id and p.parent is not None and p.parent in self.pool
                and self.pool.get(p.parent).kind in EXPLOITER_KINDS]

    def pfsp_probabilities(self, learner_id: str, opponents: Sequence[str] | None = None) -> np.ndarray:
        """PFSP probabilities over `opponents` (the opponent pool by default), for logging or tests."""
        ids = self.opponent_pool(learner_id) if opponents is None else list(opponents)
        scores = scores_for_pfsp(self.payoff, learner_id, ids, self.min_games)
        return pfsp_probabilities(scores, self.weighting, self.p)

    def _warn_fallback(self, source: str, learner_id: str) -> None:
        if source not in self._warned:
            self._warned.add(source)
            log.info("matchmaking source %r has no candidates for %r yet; using mirror", source, learner_id)


def _weighting(name: str) -> Callable[..., np.ndarray]:
    try:
        return WEIGHTINGS[name]
    except (KeyError, TypeError):
        raise ValueError(f"PFSP weighting {name!r} is not one of {sorted(WEIGHTINGS)}") from None


def _parse_mix(mix: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    if not isinstance(mix, Mapping) or not mix:
        raise ValueError(f"matchmaking mix {mix!r} must be a non-empty mapping of source -> probability")
    for source, prob in mix.items():
        if source not in SOURCES:
            raise ValueError(f"matchmaking source {source!r} is not one of {SOURCES}")
        if not (isinstance(prob, int | float) and math.isfinite(prob) and prob >= 0):
            raise ValueError(f"probability {prob!r} of matchmaking source {source!r} must be >= 0")
    total = float(sum(mix.values()))
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"matchmaking mix {dict(mix)} sums to {total:g}; the probabilities must sum to 1")
    sources = [s for s in SOURCES if mix.get(s, 0.0) > 0]
    probs = np.array([mix[s] for s in sources], dtype=float)
    return sources, probs / probs.sum()


class UpdateMatchmaker(Matchmaker):
    """A ``Matchmaker`` whose ``candidates`` are cached until ``refresh()`` or until the pool grows.

    The league ``Matchmaker`` with its candidate lists and PFSP probabilities computed once per update.

    At every episode end the trainer asks for opponents, often for one or two envs at a time; computing
    PFSP weights over the whole pool at each request costs O(pool) each time, which grows with the league.
    The weights move slowly (one match changes one pair's decayed score a little), so they are computed
    once per update (``refresh``, called by the training loop after each update) and at once whenever a
    player joins the league. Draws still come one per env slot from the matchmaker's own RNG.
    """

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
