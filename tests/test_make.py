"""arena.make: the documented entry point builds each game with its spaces and defaults."""

from __future__ import annotations

import numpy as np
import pytest

import arena


def test_make_midrange_quickstart_call_builds_requested_batch():
    env = arena.make("midrange", num_envs=8, team_sizes=(2, 2), time_limit_s=120, arena_radius_m=80_000)
    assert env.num_envs == 8 and env.agents_per_env == 4 and env.num_agents == 32
    assert env.params["time_limit_s"] == 120 and env.params["arena_radius_m"] == 80_000
    assert tuple(env.action_space.nvec) == (5, 3, 2)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (32, env.observation_space.shape[0]) and obs.dtype == np.float32
    assert env.observation_space.contains(obs[0])
    np.testing.assert_array_equal(env.team_of_row[:4], [0, 0, 1, 1])


def test_make_rpsw_is_a_one_vs_one_game_with_four_throws():
    env = arena.make("rpsw", num_envs=3)
    assert env.num_agents == 6 and tuple(env.action_space.nvec) == (4,)
    with pytest.raises(ValueError, match="1v1"):
        arena.make("rpsw", team_sizes=(2, 2))


def test_make_rejects_unknown_game_naming_the_available_ones():
    with pytest.raises(ValueError, match="midrange, rpsw"):
        arena.make("chess")
