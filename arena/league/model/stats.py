"""Evaluation statistics: score intervals, Elo differences, SPRT and Bradley-Terry (Elo) fits.

Small and explicit, in the spirit of OpenSpiel's evaluation code. Conventions throughout:
- a game's score is 1 for a win, 1/2 for a draw, 0 for a loss; the score of a match-up is the mean;
- Elo is the logistic Elo scale: expected score s = 1 / (1 + 10^(-elo / 400)).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

_ELO_PER_NAT = 400.0 / math.log(10.0)


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r} must be in (0, 1)")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _games(wins: float, draws: float, losses: float) -> float:
    for name, value in (("wins", wins), ("draws", draws), ("losses", losses)):
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name}={value!r} must be a finite count >= 0")
    return wins + draws + losses


def _check_counts(wins: float, draws: float, losses: float) -> float:
    n = _games(wins, draws, losses)
    if n <= 0:
        raise ValueError("no games: wins + draws + losses must be > 0")
    return n


def score(wins: float, draws: float, losses: float) -> float:
    """(W + D/2) / (W + D + L)."""
    n = _check_counts(wins, draws, losses)
    return (wins + 0.5 * draws) / n


def score_variance(wins: float, draws: float, losses: float) -> float:
    """Empirical per-game score variance: (W + D/4)/n - s^2 (mean of squared scores minus squared mean)."""
    n = _check_counts(wins, draws, losses)
    s = (wins + 0.5 * draws) / n
    return max(0.0, (wins + 0.25 * draws) / n - s * s)


def wilson_interval(
    wins: float, draws: float, losses: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(score, lower, upper): Wilson score interval with draws counted as half a win.

    With n games, score s = (W + D/2)/n and per-game variance v = (W + D/4)/n - s^2 (score_variance),
    draws make the games less variable than coin flips: v = s(1-s) - (D/n)/4. The Wilson interval solves
    (p - s)^2 = z^2 p (1 - p) / n_eff for p, with the binomial-equivalent sample size
    n_eff = n s (1 - s) / v (n_eff = n when v = 0, e.g. all games alike; n_eff >= n always):
        center = (s + z^2 / (2 n_eff)) / (1 + z^2 / n_eff)
        half   = z / (1 + z^2 / n_eff) * sqrt(s (1 - s) / n_eff + z^2 / (4 n_eff^2))
    Without draws this is exactly the classic Wilson interval (e.g. 8 wins, 2 losses: [0.490, 0.943]).
    """
    n = _check_counts(wins, draws, losses)
    z = _z(confidence)
    s = (wins + 0.5 * draws) / n
    v = score_variance(wins, draws, losses)
    n_eff = n * s * (1.0 - s) / v if v > 1e-15 else n
    z2 = z * z / n_eff
    center = (s + z2 / 2.0) / (1.0 + z2)
    half = z / (1.0 + z2) * math.sqrt(s * (1.0 - s) / n_eff + z * z / (4.0 * n_eff * n_eff))
    return s, max(0.0, center - half), min(1.0, center + half)


def elo_from_score(s: float) -> float:
    """Elo difference implied by an expected score: -400 log10(1/s - 1); +-inf at s = 1 or 0."""
    if not 0.0 <= s <= 1.0:
        raise ValueError(f"score {s!r} must be in [0, 1]")
    if s <= 0.0:
        return -math.inf
    if s >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


def score_from_elo(elo: float) -> float:
    """Expected score of a player `elo` points stronger: 1 / (1 + 10^(-elo/400))."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def elo_difference(
    wins: float, draws: float, losses: float, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(elo, lower, upper): the Elo difference and the Wilson score interval's ends mapped to Elo."""
    s, lo, hi = wilson_interval(wins, draws, losses, confidence)
    return elo_from_score(s), elo_from_score(lo), elo_from_score(hi)


def sprt_llr(wins: float, draws: float, losses: float, elo0: float, elo1: float) -> float:
    """Log-likelihood ratio of H1: elo = elo1 against H0: elo = elo0 (trinomial GSPRT approximation).

    The generalized SPRT used by fishtest and cutechess: with n games, empirical score s and per-game
    variance v (score_variance), and s0, s1 the expected scores at elo0, elo1 (score_from_elo),
        LLR = n (s1 - s0) (2 s - s0 - s1) / (2 v)
    which is the normal approximation of the log-likelihood ratio of the score mean. 0 while v = 0.
    """
    n = _check_counts(wins, draws, losses)
    v = score_variance(wins, draws, losses)
    if v <= 1e-15:
        return 0.0
    s = (wins + 0.5 * draws) / n
    s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
    return n * (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * v)


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's bounds (lower, upper) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha))."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not 0.0 < value < 0.5:
            raise ValueError(f"SPRT {name}={value!r} must be in (0, 0.5)")
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def sprt(
    wins: float,
    draws: float,
    losses: float,
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
) -> Literal["H0", "H1"] | None:
    """Sequential test of H0: elo = elo0 against H1: elo = elo1 (elo1 > elo0).

    Returns "H1" when LLR >= ln((1 - beta) / alpha), "H0" when LLR <= ln(beta / (1 - alpha)), else None
    (keep playing). alpha and beta are the false-positive and false-negative rates.
    """
    if not elo1 > elo0:
        raise ValueError(f"SPRT needs elo1 > elo0; got elo0={elo0!r}, elo1={elo1!r}")
    lower, upper = sprt_bounds(alpha, beta)
    llr = sprt_llr(wins, draws, losses, elo0, elo1)
    if llr >= upper:
        return "H1"
    if llr <= lower:
        return "H0"
    return None


@dataclass(frozen=True)
class BradleyTerryFit:
    """Elo ratings fitted to pairwise results, with normal-approximation intervals."""

    players: list[str]
    elo: np.ndarray
    stderr: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    anchor: str | None

    def as_dict(self) -> dict[str, tuple[float, float, float]]:
        """player -> (elo, lower, upper)."""
        return {
            p: (float(e), float(lo), float(hi))
            for p, e, lo, hi in zip(self.players, self.elo, self.lower, self.upper, strict=True)
        }


def bradley_terry(
    results: Mapping[tuple[str, str], tuple[float, float, float]],
    *,
    players: Sequence[str] | None = None,
    anchor: str | None = None,
    confidence: float = 0.95,
    virtual_draws: float = 1.0,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> BradleyTerryFit:
    """Fit Bradley-Terry (Elo) ratings to round-robin results by Newton's method.

    results maps (a, b) -> (W, D, L) of a against b (both orders may appear; they add up). The model is
    P(a beats b) = 1 / (1 + exp(r_b - r_a)); a draw counts as half a win for each side; Elo = r * 400/ln 10.
    virtual_draws adds that many drawn games to every pair that played, a mild prior that keeps the fit
    finite when a player won (or lost) every game; 0 gives the plain maximum-likelihood fit.
    The ratings are anchored so that `anchor` is 0 (or, with anchor None, their mean is 0). Intervals are
    elo +- z * stderr with the covariance from the inverse Fisher information (negative Hessian of the
    log-likelihood) in the anchored parameterisation.
    """
    if not (math.isfinite(virtual_draws) and virtual_draws >= 0):
        raise ValueError(f"virtual_draws={virtual_draws!r} must be >= 0")
    names = list(dict.fromkeys(players if players is not None else [p for ab in results for p in ab]))
    index = {p: i for i, p in enumerate(names)}
    k = len(names)
    if k < 2:
        raise ValueError(f"a Bradley-Terry fit needs at least two players; got {names}")
    if anchor is not None and anchor not in index:
        raise ValueError(f"anchor {anchor!r} is not one of the players {names}")
    n_games = np.zeros((k, k))
    wins = np.zeros((k, k))  # wins[i, j]: score points of i against j (draws as halves)
    for (a, b), (w, d, l) in results.items():  # noqa: E741
        for p in (a, b):
            if p not in index:
                raise ValueError(f"results name player {p!r}, who is not in players {names}")
        if a == b:
            continue
        _games(w, d, l)
        i, j = index[a], index[b]
        n_games[i, j] += w + d + l
        n_games[j, i] += w + d + l
        wins[i, j] += w + 0.5 * d
        wins[j, i] += l + 0.5 * d
    played = n_games > 0
    n_games += virtual_draws * played
    wins += 0.5 * virtual_draws * played
    _check_connected(names, played)

    iu, ju = np.triu_indices(k, 1)
    keep = n_games[iu, ju] > 0
    iu, ju = iu[keep], ju[keep]
    n_pair, w_pair = n_games[iu, ju], wins[iu, ju]
    fixed = index[anchor] if anchor is not None else 0
    free = np.array([i for i in range(k) if i != fixed])

    def loglik_grad_hess(r: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        diff = r[iu] - r[ju]
        p = 1.0 / (1.0 + np.exp(-diff))
        ll = float(np.sum(w_pair * -np.logaddexp(0.0, -diff) + (n_pair - w_pair) * -np.logaddexp(0.0, diff)))
        g_pair = w_pair - n_pair * p
        grad = np.zeros(k)
        np.add.at(grad, iu, g_pair)
        np.add.at(grad, ju, -g_pair)
        c = n_pair * p * (1.0 - p)
        info = np.zeros((k, k))  # Fisher information = -Hessian
        np.add.at(info, (iu, iu), c)
        np.add.at(info, (ju, ju), c)
        np.add.at(info, (iu, ju), -c)
        np.add.at(info, (ju, iu), -c)
        return ll, grad, info

    r = np.zeros(k)
    ll, grad, info = loglik_grad_hess(r)
    for _ in range(max_iter):
        step = np.zeros(k)
        try:
            step[free] = np.linalg.solve(info[np.ix_(free, free)], grad[free])
        except np.linalg.LinAlgError:
            raise ValueError("Bradley-Terry fit diverged; pass virtual_draws > 0 to regularise it") from None
        t = 1.0
        while True:  # backtracking keeps every Newton step an ascent step
            ll_new, grad_new, info_new = loglik_grad_hess(r + t * step)
            if ll_new >= ll - 1e-12 or t < 1e-8:
                break
            t *= 0.5
        r = r + t * step
        ll, grad, info = ll_new, grad_new, info_new
        if np.max(np.abs(t * step)) < tol:
            break
    if not np.all(np.isfinite(r)):
        raise ValueError("Bradley-Terry fit diverged; pass virtual_draws > 0 to regularise it")

    cov = np.zeros((k, k))
    cov[np.ix_(free, free)] = np.linalg.inv(info[np.ix_(free, free)])
    if anchor is None:  # re-anchor at the mean: r - mean(r) is the linear map P = I - 1/k
        proj = np.eye(k) - np.full((k, k), 1.0 / k)
        r = proj @ r
        cov = proj @ cov @ proj.T
    elo = r * _ELO_PER_NAT
    stderr = np.sqrt(np.clip(np.diag(cov), 0.0, None)) * _ELO_PER_NAT
    z = _z(confidence)
    return BradleyTerryFit(names, elo, stderr, elo - z * stderr, elo + z * stderr, anchor)


def _check_connected(names: list[str], played: np.ndarray) -> None:
    k = len(names)
    seen = {0}
    frontier = [0]
    while frontier:
        i = frontier.pop()
        for j in np.flatnonzero(played[i]):
            if int(j) not in seen:
                seen.add(int(j))
                frontier.append(int(j))
    if len(seen) < k:
        apart = [names[i] for i in range(k) if i not in seen]
        raise ValueError(
            f"players {apart} never played (directly or through others) against {names[0]!r}; "
            "ratings across unconnected groups are not comparable"
        )
