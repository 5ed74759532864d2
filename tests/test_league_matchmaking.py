"""Opponent choice: PFSP weightings, min_games, fallbacks, and reproducible mixes."""

import numpy as np
import pytest

from arena.league.matchmaking.pfsp import (
    Matchmaker,
    f_hard,
    f_var,
    linear_capped,
    pfsp_probabilities,
    score_for_pfsp,
    scores_for_pfsp,
)
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Player, Pool, snapshot_id
from arena.league.model.snapshots import SnapshotGate


def make_pool(n_snapshots: int = 3, n_scripted: int = 2) -> Pool:
    pool = Pool([Player("learner", "learner")])
    for i in range(n_snapshots):
        pool.add(Player(snapshot_id("learner", i), "snapshot", path=f"/s/{i}.pt", sha256="0" * 64,
                        step=i * 100, parent="learner"))
    for name in ["heuristic", "random"][:n_scripted]:
        pool.add(Player(f"scripted:{name}", "scripted"))
    return pool


def test_weighting_functions_match_their_formulas():
    x = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    np.testing.assert_allclose(f_hard(x, 2.0), [1.0, 0.64, 0.25, 0.01, 0.0])
    np.testing.assert_allclose(f_hard(x, 1.0), [1.0, 0.8, 0.5, 0.1, 0.0])
    np.testing.assert_allclose(f_var(x), [0.0, 0.16, 0.25, 0.09, 0.0])
    np.testing.assert_allclose(linear_capped(x), [0.5, 0.5, 0.5, 0.1, 0.0])


def test_pfsp_probabilities_hand_computed():
    scores = [0.2, 0.5, 0.9]
    np.testing.assert_allclose(pfsp_probabilities(scores, "hard", 2.0), np.array([0.64, 0.25, 0.01]) / 0.9)
    np.testing.assert_allclose(pfsp_probabilities(scores, "var"), [0.32, 0.5, 0.18])
    np.testing.assert_allclose(pfsp_probabilities(scores, "linear_capped"), np.array([0.5, 0.5, 0.1]) / 1.1)


@pytest.mark.parametrize(("weighting", "scores"), [("hard", [1.0, 1.0]), ("var", [0.0, 1.0, 1.0]),
                                                   ("linear_capped", [1.0])])
def test_all_zero_weights_fall_back_to_uniform_without_nan(weighting, scores):
    probs = pfsp_probabilities(scores, weighting)
    assert not np.any(np.isnan(probs))
    np.testing.assert_allclose(probs, np.full(len(scores), 1.0 / len(scores)))


def test_empty_candidates_give_empty_probabilities():
    assert pfsp_probabilities([], "hard").size == 0


def test_bad_weighting_and_scores_are_rejected():
    with pytest.raises(ValueError, match="'hardest'.*one of"):
        pfsp_probabilities([0.5], "hardest")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pfsp_probabilities([1.5], "hard")


def test_score_is_one_half_until_min_games():
    payoff = PayoffTable()
    for _ in range(4):
        payoff.record("learner", "snap", "win")
    assert score_for_pfsp(payoff, "learner", "snap", min_games=5) == 0.5
    payoff.record("learner", "snap", "draw")
    assert score_for_pfsp(payoff, "learner", "snap", min_games=5) == pytest.approx(4.5 / 5)
    assert score_for_pfsp(payoff, "learner", "never-played", min_games=0) == 0.5


def test_pfsp_never_picks_an_opponent_always_beaten_under_hard_weighting():
    pool = make_pool()
    payoff = PayoffTable()
    beaten, even = snapshot_id("learner", 0), snapshot_id("learner", 1)
    for _ in range(10):
        payoff.record("learner", beaten, "win")
        payoff.record("learner", even, "draw")
    mm = Matchmaker(pool, payoff, {"pfsp": 1.0}, seed=0, weighting="hard", p=2.0, min_games=5)
    # beaten: x=1 -> 0; even: x=0.5 -> 0.25; unplayed: x=0.5 -> 0.25
    np.testing.assert_allclose(mm.pfsp_probabilities("learner"), [0.0, 0.5, 0.5])
    assert beaten not in mm.choose_many("learner", 500)


def test_same_seed_gives_same_choices_and_choose_is_choose_many_of_one():
    mix = {"mirror": 0.35, "pfsp": 0.5, "scripted": 0.15}
    a = Matchmaker(make_pool(), PayoffTable(), mix, seed=7)
    b = Matchmaker(make_pool(), PayoffTable(), mix, seed=7)
    c = Matchmaker(make_pool(), PayoffTable(), mix, seed=8)
    first = a.choose_many("learner", 200)
    assert first == b.choose_many("learner", 200)
    assert first != c.choose_many("learner", 200)
    one_a = Matchmaker(make_pool(), PayoffTable(), mix, seed=3)
    one_b = Matchmaker(make_pool(), PayoffTable(), mix, seed=3)
    singles = [one_a.choose("learner") for _ in range(20)]
    assert singles == [one_b.choose_many("learner", 1)[0] for _ in range(20)]


def test_mix_proportions_are_respected_over_many_draws():
    pool = make_pool()
    mm = Matchmaker(pool, PayoffTable(), {"mirror": 0.35, "pfsp": 0.5, "scripted": 0.15}, seed=1)
    picks = mm.choose_many("learner", 20000)
    kinds = np.array([pool.get(p).kind for p in picks])
    assert np.mean(kinds == "learner") == pytest.approx(0.35, abs=0.015)
    assert np.mean(kinds == "snapshot") == pytest.approx(0.5, abs=0.015)
    assert np.mean(kinds == "scripted") == pytest.approx(0.15, abs=0.015)


def test_latest_picks_newest_snapshot_and_uniform_covers_the_pool():
    pool = make_pool(n_snapshots=3)
    mm = Matchmaker(pool, PayoffTable(), {"latest": 1.0}, seed=0)
    assert set(mm.choose_many("learner", 50)) == {snapshot_id("learner", 2)}
    mm = Matchmaker(pool, PayoffTable(), {"uniform": 1.0}, seed=0)
    counts = {p: 0 for p in mm.opponent_pool("learner")}
    for p in mm.choose_many("learner", 3000):
        counts[p] += 1
    assert set(counts) == {snapshot_id("learner", i) for i in range(3)}
    assert all(900 < c < 1100 for c in counts.values())


def test_sources_without_candidates_fall_back_to_mirror():
    pool = make_pool(n_snapshots=0, n_scripted=0)
    mix = {"latest": 0.3, "pfsp": 0.3, "uniform": 0.2, "scripted": 0.2}
    mm = Matchmaker(pool, PayoffTable(), mix, seed=0)
    assert set(mm.choose_many("learner", 100)) == {"learner"}


@pytest.mark.parametrize(("mix", "message"), [
    ({"mirror": 0.5, "pfsp": 0.6}, "sums to 1.1"),
    ({"selfplay": 1.0}, "'selfplay' is not one of"),
    ({"mirror": -0.1, "pfsp": 1.1}, "must be >= 0"),
    ({}, "non-empty"),
])
def test_bad_mix_is_rejected_clearly(mix, message):
    with pytest.raises(ValueError, match=message):
        Matchmaker(make_pool(), PayoffTable(), mix, seed=0)


def test_unknown_learner_is_rejected():
    mm = Matchmaker(make_pool(), PayoffTable(), {"mirror": 1.0}, seed=0)
    with pytest.raises(ValueError, match="unknown player 'nobody'"):
        mm.choose("nobody")


def test_pfsp_scripted_weights_only_the_bots_by_how_often_the_learner_loses_to_them():
    pool = make_pool(n_snapshots=20, n_scripted=2)  # many snapshots would dilute a bot in "pfsp"
    payoff = PayoffTable()
    for _ in range(10):
        payoff.record("learner", "scripted:heuristic", "loss")  # x=0 -> weight 1
        payoff.record("learner", "scripted:random", "draw")  # x=0.5 -> weight 0.25
    mm = Matchmaker(pool, payoff, {"pfsp_scripted": 1.0}, seed=0, weighting="hard", p=2.0, min_games=5)
    ids, probs = mm.candidates("pfsp_scripted", "learner")
    assert ids == ["scripted:heuristic", "scripted:random"]
    np.testing.assert_allclose(probs, [0.8, 0.2])
    picks = mm.choose_many("learner", 2000)
    assert set(picks) == {"scripted:heuristic", "scripted:random"}
    assert picks.count("scripted:heuristic") / 2000 == pytest.approx(0.8, abs=0.03)


def test_pfsp_exploiters_draws_only_exploiter_snapshots_weighted_by_how_often_the_learner_loses_to_them():
    pool = make_pool(n_snapshots=20, n_scripted=2)  # the learner's own snapshots would crowd "pfsp"
    for gen in range(3):
        pool.add(Player(f"main_exploiter-{gen}", "main_exploiter"))
        pool.add(Player(snapshot_id(f"main_exploiter-{gen}", 0), "snapshot", path=f"/e/{gen}.pt",
                        sha256="0" * 64, step=gen, parent=f"main_exploiter-{gen}"))
    pool.retire(["main_exploiter-0", "main_exploiter-1"])  # restarted generations keep their snapshots
    pool.retire([snapshot_id("main_exploiter-2", 0)])  # a retired snapshot is not drawn
    payoff = PayoffTable()
    for _ in range(10):
        payoff.record("learner", snapshot_id("main_exploiter-0", 0), "loss")  # x=0 -> weight 1
        payoff.record("learner", snapshot_id("main_exploiter-1", 0), "draw")  # x=0.5 -> weight 0.25
    mm = Matchmaker(pool, payoff, {"pfsp_exploiters": 1.0}, seed=0, weighting="hard", p=2.0, min_games=5)
    ids, probs = mm.candidates("pfsp_exploiters", "learner")
    assert ids == [snapshot_id("main_exploiter-0", 0), snapshot_id("main_exploiter-1", 0)]
    np.testing.assert_allclose(probs, [0.8, 0.2])
    picks = mm.choose_many("learner", 2000)
    assert set(picks) == set(ids)
    assert picks.count(ids[0]) / 2000 == pytest.approx(0.8, abs=0.03)


def test_pfsp_exploiters_plays_mirror_until_an_exploiter_has_a_snapshot():
    pool = make_pool(n_snapshots=3)
    pool.add(Player("main_exploiter-0", "main_exploiter"))
    mm = Matchmaker(pool, PayoffTable(), {"pfsp_exploiters": 1.0}, seed=0)
    assert mm.candidates("pfsp_exploiters", "learner")[0] == []
    assert mm.choose_many("learner", 5) == ["learner"] * 5


def test_pfsp_scores_of_a_whole_pool_at_once_are_the_per_pair_scores_to_the_bit():
    rng = np.random.default_rng(5)
    payoff = PayoffTable(decay=0.99)
    opponents = [f"p{i:03d}" for i in range(60)] + ["a", "learner"]  # ids on both sides of "learner"
    for _ in range(3000):
        payoff.record("learner", opponents[int(rng.integers(len(opponents) - 5))], int(rng.integers(-1, 2)))
    for min_games in (0.0, 5.0, 20.0):
        at_once = scores_for_pfsp(payoff, "learner", opponents, min_games)
        one_by_one = [score_for_pfsp(payoff, "learner", o, min_games) for o in opponents]
        assert at_once.tolist() == one_by_one  # exact equality: the draws of a seed stay the same


def test_the_snapshot_gate_reads_lazy_win_rates_only_as_far_as_it_needs():
    gate = SnapshotGate(every_steps=None, beat_all_threshold=0.7, min_games=5)
    read = []

    def rates(items):
        for item in items:
            read.append(item[0])
            yield item

    assert not gate.should_snapshot(10, 0, rates([("new", (0.5, 9.0)), ("old", (0.9, 30.0))]))
    assert read == ["new"]  # stopped at the first opponent not beaten
    assert gate.should_snapshot(10, 0, rates([("a", (0.8, 9.0)), ("b", (0.9, 30.0))]))
    assert not gate.should_snapshot(10, 0, rates([]))  # an empty pool gives no evidence
