"""Round robin: every pair of players plays a side-swapped, seed-paired match; Bradley-Terry Elo on top.

Every pairing uses the same seed, so every pairing sees the same spawns (common random numbers:
differences between pairings come from the players, not from the luck of the draw). The pairings are
played side by side in one batched env (``play_matchups``): each player acts once per step over all
its rows, whatever the number of pairings it is in. The Elo fit is
anchored on a scripted bot when one plays (``scripted:random`` first: the natural zero of a ladder),
else on the mean of all players.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from arena.agents.players import ResolvedPlayer
from arena.evaluation.matchups import DEFAULT_MAX_ENVS, MatchupProgress, play_matchups
from arena.evaluation.runner import MatchSettings
from arena.league.model.stats import BradleyTerryFit, bradley_terry
from arena.player_specs import parse_player

logger = logging.getLogger(__name__)

PREFERRED_ANCHOR = "scripted:random"


@dataclass(frozen=True)
class RoundRobinResult:
    """Pairwise results (W/D/L of the first player of each key) and the Elo fit."""

    players: list[str]
    results: dict[tuple[str, str], tuple[int, int, int]]
    fit: BradleyTerryFit
    elapsed_s: float

    def wdl(self, a: str, b: str) -> tuple[int, int, int] | None:
        """W/D/L of ``a`` against ``b`` (either key order), or None if they did not play."""
        if (a, b) in self.results:
            return self.results[(a, b)]
        if (b, a) in self.results:
            w, d, l = self.results[(b, a)]  # noqa: E741
            return l, d, w
        return None

    def score(self, a: str, b: str) -> float | None:
        """``a``'s score against ``b``: (W + D/2) / games, or None."""
        wdl = self.wdl(a, b)
        if wdl is None or sum(wdl) == 0:
            return None
        return (wdl[0] + 0.5 * wdl[1]) / sum(wdl)

    def games_of(self, player: str) -> int:
        return sum(sum(r) for (a, b), r in self.results.items() if player in (a, b))

    def as_dict(self) -> dict[str, Any]:
        ratings = self.fit.as_dict()
        return {
            "players": list(self.players),
            "anchor": self.fit.anchor,
            "elo": {p: {"elo": e, "ci95": [lo, hi], "games": self.games_of(p)}
                    for p, (e, lo, hi) in ratings.items()},
            "results": [{"a": a, "b": b, "wins": w, "draws": d, "losses": l, "score": self.score(a, b)}
                        for (a, b), (w, d, l) in self.results.items()],  # noqa: E741
            "elapsed_s": self.elapsed_s,
        }


def default_anchor(players: Sequence[str]) -> str | None:
    """``scripted:random`` if it plays, else the first scripted bot, else None (anchor on the mean)."""
    if PREFERRED_ANCHOR in players:
        return PREFERRED_ANCHOR
    return next((p for p in players if parse_player(p).kind == "scripted"), None)


def play_round_robin(
    players: Mapping[str, ResolvedPlayer],
    settings: MatchSettings,
    *,
    anchor: str | None = None,
    confidence: float = 0.95,
    virtual_draws: float = 1.0,
    on_progress: MatchupProgress | None = None,
    max_envs: int = DEFAULT_MAX_ENVS,
) -> RoundRobinResult:
    """Plays ``settings.games`` games for every pair of ``players`` (id -> resolved player).

    ``anchor`` None picks ``default_anchor``; ``virtual_draws`` regularises the fit (see
    ``bradley_terry``) so that a player who won every game still gets a finite rating. At most
    ``max_envs`` envs step at once (pairings beyond them play in later groups).
    """
    ids = list(players)
    if len(ids) < 2:
        raise ValueError(f"a round robin needs at least two players; got {ids}")
    anchor = anchor if anchor is not None else default_anchor(ids)
    if anchor is not None and anchor not in players:
        raise ValueError(f"anchor {anchor!r} is not one of the players {ids}")
    results: dict[tuple[str, str], tuple[int, int, int]] = {}
    start = time.perf_counter()
    matchups = list(itertools.combinations(ids, 2))
    played = play_matchups(players, matchups, replace(settings, sprt=None), max_envs=max_envs,
                           on_progress=on_progress)
    for (a, b), result in zip(matchups, played, strict=True):
        results[(a, b)] = (result.wins, result.draws, result.losses)
        logger.info("round robin %s vs %s: %d/%d/%d", a, b, result.wins, result.draws, result.losses)
    elapsed = time.perf_counter() - start
    fit = bradley_terry(results, players=ids, anchor=anchor, confidence=confidence,
                        virtual_draws=virtual_draws)
    return RoundRobinResult(ids, results, fit, elapsed)
