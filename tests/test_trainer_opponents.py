"""The env -> player assignment: matchmaking, learner rows, row groups per player."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.agents.policy import Policy
from arena.trainer.events import MatchesEnded
from arena.trainer.opponents import FixedMix, Opponents


class Constant:
    def __init__(self, value: int) -> None:
        self.value = value

    def act(self, obs: np.ndarray) -> np.ndarray:
        return np.full((len(obs), 1), self.value, dtype=np.int32)


def first(envs: np.ndarray) -> MatchesEnded:
    return MatchesEnded.starting(envs)


def ended(envs: np.ndarray) -> MatchesEnded:
    """Every env's match ended in a win for team 0 after 10 decisions."""
    return MatchesEnded(envs, np.zeros(len(envs), dtype=np.int8), np.full(len(envs), 10.0), 500)


def opponents(matchmaker=None, num_envs: int = 4) -> Opponents:
    return Opponents(num_envs=num_envs, team_sizes=(1, 1), game="rpsw", matchmaker=matchmaker)


def test_fixed_mix_keeps_each_envs_draw_unless_asked_to_redraw() -> None:
    envs = np.arange(200)
    fixed = FixedMix({"a": 1.0, "b": 3.0}, seed=0)
    drawn = fixed(first(envs))
    assert fixed(ended(envs)) == drawn
    assert 0.6 < drawn.count("b") / 200 < 0.9
    redraw = FixedMix({"a": 1.0, "b": 1.0}, redraw=True, seed=0)
    assert redraw(first(envs)) != redraw(ended(envs))


def test_fixed_mix_state_round_trips() -> None:
    mix = FixedMix(["a", "b", "c"], redraw=True, seed=4)
    mix(first(np.arange(10)))
    copy = FixedMix(["a", "b", "c"], redraw=True, seed=99)
    copy.load_state_dict(mix.state_dict())
    assert copy(ended(np.arange(10))) == mix(ended(np.arange(10)))


def test_learner_rows_are_team_0_plus_team_1_of_mirror_envs() -> None:
    opp = opponents()
    opp.add_player("zero", Constant(0))
    opp.set_assignment(np.arange(4), ["mirror", "zero", "mirror", "zero"])
    assert opp.learner_row_mask.tolist() == [True, True, True, False, True, True, True, False]
    groups = opp.groups(0, 4)
    assert groups.learner_count == 6
    assert [(p, rows.tolist()) for p, rows in groups.scripted] == [(1, [3, 7])]
    assert isinstance(opp.groups(0, 2).learner, torch.Tensor)
    opp.set_assignment(np.array([1, 3]), ["mirror", "mirror"])
    assert opp.groups(0, 2).learner == slice(0, 4)  # all learner rows: a slice, no gather


def test_each_opponent_acts_on_its_own_rows() -> None:
    opp = opponents()
    opp.add_player("zero", Constant(0))
    opp.add_player("three", Constant(3))
    opp.set_assignment(np.arange(4), ["zero", "three", "mirror", "three"])
    obs = np.zeros((8, 11), dtype=np.float32)
    actions = torch.full((8, 1), -1, dtype=torch.int64)
    opp.act(opp.groups(0, 4), obs, torch.from_numpy(obs), torch.ones(8, dtype=torch.bool), actions,
            torch.rand(8, 1))
    assert actions.squeeze(1).tolist() == [-1, 0, -1, 3, -1, -1, -1, 3]


def test_a_frozen_policy_opponent_keeps_an_lstm_state_per_row() -> None:
    opp = opponents()
    torch.manual_seed(0)
    opp.add_player("frozen", Policy(11, [4], hidden_size=8, lstm_size=8))
    opp.set_assignment(np.arange(4), ["frozen"] * 4)
    obs = np.random.default_rng(0).normal(size=(8, 11)).astype(np.float32)
    actions = torch.zeros(8, 1, dtype=torch.int64)
    with torch.inference_mode():
        opp.act(opp.groups(0, 4), obs, torch.from_numpy(obs), torch.ones(8, dtype=torch.bool), actions,
                torch.rand(8, 1))
    h, _ = opp.frozen.state_of(8)
    assert bool(h[[1, 3, 5, 7]].abs().sum(1).gt(0).all()) and bool(h[[0, 2, 4, 6]].eq(0).all())


def test_a_matchmaker_returning_the_wrong_number_of_ids_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 1 player ids for 4 envs"):
        opponents(lambda event: ["mirror"]).start()
