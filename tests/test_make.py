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


def test_set_params_changes_spawns_from_the_next_reset_and_keeps_the_buffers():
    env = arena.make("midrange", num_envs=4, seed=2)
    obs_before = env.observations
    env.set_params(spawn_distance_min_m=5000.0, spawn_distance_max_m=6000.0)
    env.reset(seed=2)
    ws = env.world_state()
    dx = ws["fighter_x"][:, 0] - ws["fighter_x"][:, 1]
    gap = np.hypot(dx, ws["fighter_y"][:, 0] - ws["fighter_y"][:, 1])
    assert ((gap > 4900) & (gap < 6100)).all()
    assert env.observations is obs_before and env.params["spawn_distance_max_m"] == 6000.0


def test_set_params_refuses_what_shapes_the_buffers_and_bad_values():
    env = arena.make("midrange", num_envs=1)
    with pytest.raises(ValueError, match="cannot change"):
        env.set_params(tracked_missiles=2)
    with pytest.raises(ValueError, match="spawn_speed"):
        env.set_params(spawn_speed=-5.0)
