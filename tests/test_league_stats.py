"""Evaluation statistics: Wilson intervals, Elo, SPRT and Bradley-Terry on known and simulated data."""

import math

import numpy as np
import pytest

from arena.league.model.stats import (
    bradley_terry,
    elo_difference,
    elo_from_score,
    score_from_elo,
    score_variance,
    sprt,
    sprt_bounds,
    sprt_llr,
    wilson_interval,
)

ELO = 400.0 / math.log(10.0)


def simulate(rng: np.random.Generator, elo: float, n: int, draw: float = 0.2) -> np.ndarray:
    """Outcomes (+1/0/-1) of n games of a player `elo` stronger, with expected score score_from_elo(elo)."""
    s = score_from_elo(elo)
    return rng.choice([1, 0, -1], size=n, p=[s - draw / 2, draw, 1 - s - draw / 2])


def counts(outcomes: np.ndarray) -> tuple[int, int, int]:
    return int(np.sum(outcomes == 1)), int(np.sum(outcomes == 0)), int(np.sum(outcomes == -1))


def test_wilson_without_draws_is_the_classic_interval():
    s, lo, hi = wilson_interval(8, 0, 2)
    assert s == 0.8
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(0, 0, 10)[1:] == pytest.approx((0.0, 0.2775), abs=1e-4)


def test_wilson_with_draws_uses_the_binomial_equivalent_sample_size():
    # W=3 D=4 L=3: s = 0.5, v = (3 + 4/4)/10 - 0.25 = 0.15, n_eff = 10 * 0.25 / 0.15 = 16.67;
    # Wilson at s = 0.5 is symmetric: half = z / (1 + z^2/n) * sqrt(0.25/n + z^2 / (4 n^2)).
    assert score_variance(3, 4, 3) == pytest.approx(0.15)
    n, z = 10 * 0.25 / 0.15, 1.959964
    half = z / (1 + z * z / n) * math.sqrt(0.25 / n + z * z / (4 * n * n))
    s, lo, hi = wilson_interval(3, 4, 3)
    assert (s, lo, hi) == pytest.approx((0.5, 0.5 - half, 0.5 + half), abs=1e-6)
    assert hi - lo < wilson_interval(5, 0, 5)[2] - wilson_interval(5, 0, 5)[1]  # draws narrow it


def test_a_bot_against_itself_scores_half_within_its_interval():
    rng = np.random.default_rng(2024)
    w, d, l = counts(rng.choice([1, 0, -1], size=1000, p=[0.4, 0.2, 0.4]))  # noqa: E741
    s, lo, hi = wilson_interval(w, d, l)
    assert lo < 0.5 < hi
    assert abs(s - 0.5) < 0.05
    elo, elo_lo, elo_hi = elo_difference(w, d, l)
    assert elo_lo < 0 < elo_hi and elo_hi - elo_lo < 60


def test_elo_and_score_are_inverse_and_infinite_at_the_ends():
    for elo in (-400.0, -50.0, 0.0, 120.0):
        assert elo_from_score(score_from_elo(elo)) == pytest.approx(elo)
    assert elo_from_score(0.75) == pytest.approx(400 * math.log10(3))
    assert elo_from_score(1.0) == math.inf and elo_from_score(0.0) == -math.inf
    assert elo_difference(10, 0, 0)[2] == math.inf


def test_sprt_formula_and_bounds():
    lower, upper = sprt_bounds(0.05, 0.05)
    assert (lower, upper) == pytest.approx((math.log(0.05 / 0.95), math.log(0.95 / 0.05)))
    w, d, l = 60, 20, 40  # noqa: E741
    s, v = (w + d / 2) / 120, (w + d / 4) / 120 - ((w + d / 2) / 120) ** 2
    s0, s1 = 0.5, score_from_elo(20)
    assert sprt_llr(w, d, l, 0, 20) == pytest.approx(120 * (s1 - s0) * (2 * s - s0 - s1) / (2 * v))
    assert sprt_llr(5, 0, 0, 0, 20) == 0.0  # no variance yet: no evidence


def run_sprt(rng: np.random.Generator, true_elo: float, elo0: float, elo1: float, max_games: int = 20000):
    cum = np.cumsum(np.eye(3)[1 - simulate(rng, true_elo, max_games)], axis=0)
    for n in range(20, max_games + 1, 20):
        w, d, l = cum[n - 1]  # noqa: E741
        decision = sprt(w, d, l, elo0, elo1)
        if decision is not None:
            return decision, n
    return None, max_games


def test_sprt_accepts_h1_for_a_clearly_stronger_player():
    decision, n = run_sprt(np.random.default_rng(1), true_elo=150.0, elo0=0.0, elo1=50.0)
    assert decision == "H1", n


def test_sprt_accepts_h0_for_equal_players():
    decision, n = run_sprt(np.random.default_rng(2), true_elo=0.0, elo0=0.0, elo1=50.0)
    assert decision == "H0", n


def test_sprt_rejects_bad_hypotheses():
    with pytest.raises(ValueError, match="elo1 > elo0"):
        sprt(10, 10, 10, 5.0, 5.0)
    with pytest.raises(ValueError, match="alpha=0.7"):
        sprt(10, 10, 10, 0.0, 5.0, alpha=0.7)


def test_bradley_terry_two_player_hand_case():
    # a scores 3 of 4 against b: r_a - r_b = ln 3; Fisher information n p (1-p) = 0.75.
    fit = bradley_terry({("a", "b"): (3, 0, 1)}, anchor="b", virtual_draws=0.0)
    elo, lo, hi = fit.as_dict()["a"]
    assert elo == pytest.approx(400 * math.log10(3))
    assert fit.stderr[0] == pytest.approx(ELO / math.sqrt(0.75))
    assert fit.as_dict()["b"] == (0.0, 0.0, 0.0)
    assert lo < elo < hi


def test_bradley_terry_recovers_known_strengths_from_a_simulated_round_robin():
    rng = np.random.default_rng(7)
    true = {"a": 0.0, "b": 100.0, "c": 200.0, "d": -150.0}
    names = list(true)
    results = {}
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            results[(x, y)] = counts(simulate(rng, true[x] - true[y], 600))
    fit = bradley_terry(results, anchor="a")
    est = fit.as_dict()
    assert est["a"] == (0.0, 0.0, 0.0)
    for p, elo in true.items():
        assert est[p][0] == pytest.approx(elo, abs=30.0)
        assert est[p][1] <= elo <= est[p][2]  # each 95% interval covers the truth (fixed seed)
    centred = bradley_terry(results)  # mean anchored: same differences, mean zero
    assert np.mean(centred.elo) == pytest.approx(0.0, abs=1e-9)
    np.testing.assert_allclose(np.diff(centred.elo), np.diff(fit.elo), atol=1e-6)


def test_bradley_terry_stays_finite_when_a_player_wins_everything():
    fit = bradley_terry({("a", "b"): (10, 0, 0), ("b", "c"): (5, 0, 5)}, anchor="b")
    assert np.all(np.isfinite(fit.elo)) and fit.elo[0] > 200


def test_bradley_terry_rejects_unconnected_players_and_unknown_anchor():
    with pytest.raises(ValueError, match=r"\['c', 'd'\] never played"):
        bradley_terry({("a", "b"): (1, 1, 1), ("c", "d"): (1, 1, 1)})
    with pytest.raises(ValueError, match="anchor 'z' is not one of"):
        bradley_terry({("a", "b"): (1, 1, 1)}, anchor="z")
