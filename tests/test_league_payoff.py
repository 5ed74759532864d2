"""Payoff table: consistent pairs, decay, scores and the heatmap matrix."""

import numpy as np
import pytest

from arena.league.model.payoff import PayoffTable


def test_counts_are_mirror_images_for_the_two_orders():
    payoff = PayoffTable()
    payoff.record("b", "a", "win")
    payoff.record("a", "b", +1)
    payoff.record("a", "b", "draw")
    assert payoff.wdl("a", "b") == (1.0, 1.0, 1.0)
    payoff.record("a", "b", -1)
    assert payoff.wdl("a", "b") == (1.0, 1.0, 2.0)
    assert payoff.wdl("b", "a") == (2.0, 1.0, 1.0)
    assert payoff.games("b", "a") == 4.0
    assert payoff.score("a", "b") == pytest.approx(1.5 / 4)
    assert payoff.score("b", "a") == pytest.approx(2.5 / 4)


def test_decay_multiplies_the_pairs_existing_counts_before_each_result():
    payoff = PayoffTable(decay=0.5)
    payoff.record("a", "b", "win")   # [1, 0, 0]
    payoff.record("a", "c", "loss")  # other pair: not decayed by a-b results
    payoff.record("a", "b", "win")   # [0.5, 0, 0] + win = [1.5, 0, 0]
    payoff.record("a", "b", "loss")  # [0.75, 0, 0] + loss = [0.75, 0, 1]
    assert payoff.wdl("a", "b") == pytest.approx((0.75, 0.0, 1.0))
    assert payoff.score("a", "b") == pytest.approx(0.75 / 1.75)
    assert payoff.wdl("c", "a") == (1.0, 0.0, 0.0)


def test_no_games_means_no_score():
    payoff = PayoffTable()
    assert payoff.score("a", "b") is None
    assert payoff.games("a", "b") == 0.0


def test_mirror_games_keep_a_symmetric_half_score():
    payoff = PayoffTable()
    payoff.record("a", "a", "win")
    payoff.record("a", "a", "draw")
    assert payoff.wdl("a", "a") == (0.5, 1.0, 0.5)
    assert payoff.score("a", "a") == 0.5


def test_team_match_counts_each_cross_pair():
    payoff = PayoffTable()
    payoff.record_teams(["a", "b"], ["c"], "win")
    assert payoff.wdl("a", "c") == (1.0, 0.0, 0.0)
    assert payoff.wdl("c", "b") == (0.0, 0.0, 1.0)
    assert payoff.games("a", "b") == 0.0


def test_matrix_holds_row_scores_and_nan_where_unplayed():
    payoff = PayoffTable()
    payoff.record("a", "b", "win")
    payoff.record("a", "b", "draw")
    m = payoff.matrix(["a", "b", "c"])
    assert m[0, 1] == pytest.approx(0.75)
    assert m[1, 0] == pytest.approx(0.25)
    assert np.isnan(m[0, 2]) and np.isnan(m[2, 2])
    np.testing.assert_array_equal(payoff.games_matrix(["a", "b"]), [[0, 2], [2, 0]])


@pytest.mark.parametrize("decay", [0.0, 1.5, -1])
def test_decay_outside_unit_interval_is_rejected(decay):
    with pytest.raises(ValueError, match=r"decay .* must be in \(0, 1\]"):
        PayoffTable(decay)


@pytest.mark.parametrize("outcome", ["won", 2, 0.5, True, None])
def test_bad_outcome_is_rejected(outcome):
    with pytest.raises(ValueError, match="outcome .* is not one of"):
        PayoffTable().record("a", "b", outcome)


def test_numpy_integer_outcomes_are_accepted():
    payoff = PayoffTable()
    payoff.record("a", "b", np.int8(-1))
    assert payoff.wdl("a", "b") == (0.0, 0.0, 1.0)


def test_a_result_is_made_from_the_cores_code_for_either_team_and_parsed_once_from_what_a_user_gives():
    from arena.envs.outcomes import Outcome, Result

    assert [Result.of_team(code, 0) for code in (Outcome.TEAM0, Outcome.TEAM1, Outcome.DRAW)] == [
        Result.WIN, Result.LOSS, Result.DRAW]
    assert [Result.of_team(code, 1) for code in (Outcome.TEAM0, Outcome.TEAM1, Outcome.DRAW)] == [
        Result.LOSS, Result.WIN, Result.DRAW]
    assert Result.parse("win") is Result.WIN and Result.parse(-1) is Result.LOSS
    assert Result.parse(Result.DRAW) is Result.DRAW and Result.parse(np.int8(0)) is Result.DRAW
    for bad in ("won", 2, 0.5, True, np.True_, None):
        with pytest.raises(ValueError, match="'win', 'draw', 'loss', 1, 0, -1"):
            Result.parse(bad)
    with pytest.raises(ValueError, match="outcome code"):
        Result.of_team(Outcome.NONE, 0)
