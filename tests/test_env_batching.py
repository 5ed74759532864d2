"""The vector env as a batch: determinism over threads and seeds, zero-copy buffers, and the
errors that bad actions and bad configurations raise."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena import _core


def random_actions(env: arena.VectorEnv, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, [5, 3, 2], size=(env.num_agents, 3), dtype=np.int32)


def rollout(num_envs: int, num_threads: int, seed: int, steps: int = 300, **kw) -> dict[str, np.ndarray]:
    """Copies of everything the env returned over ``steps`` random decisions."""
    env = arena.make("midrange", num_envs=num_envs, num_threads=num_threads, seed=seed, **kw)
    rng = np.random.default_rng(1234)
    obs, _ = env.reset(seed)
    trace: dict[str, list[np.ndarray]] = {"obs": [obs.copy()]}
    for _ in range(steps):
        obs, rewards, terminals, truncations, infos = env.step(random_actions(env, rng))
        for key, value in (
            ("obs", obs),
            ("rewards", rewards),
            ("terminals", terminals),
            ("truncations", truncations),
            ("events", infos["events"]),
            ("done", infos["done"]),
            ("outcome", infos["outcome"]),
        ):
            trace.setdefault(key, []).append(value.copy())
    return {key: np.stack(values) for key, values in trace.items()}


# Short matches in 2v2, so that the rollouts cross several auto-resets.
GAME = {"team_sizes": (2, 2), "time_limit_s": 20.0}


def test_a_seed_gives_bit_identical_results_for_one_and_two_threads():
    one = rollout(8, 1, seed=3, **GAME)
    two = rollout(8, 2, seed=3, **GAME)
    assert one["done"].sum() >= 8, "the rollout covers finished matches and auto-resets"
    assert one["events"][..., 0].sum() > 0, "and missiles fired"
    for key in one:
        np.testing.assert_array_equal(one[key], two[key], err_msg=key)


@pytest.mark.parametrize("num_envs, num_threads", [(7, 3), (3, 4)])
def test_odd_splits_over_threads_match_one_thread(num_envs, num_threads):
    one = rollout(num_envs, 1, seed=9, steps=200, **GAME)
    many = rollout(num_envs, num_threads, seed=9, steps=200, **GAME)
    for key in one:
        np.testing.assert_array_equal(one[key], many[key], err_msg=key)


def test_many_envs_handed_out_in_chunks_to_three_threads_match_one_thread():
    # 300 envs are 38 SIMD groups, handed out a few at a time to whichever thread is free:
    # which thread steps which env changes from step to step, and no result may.
    one = rollout(300, 1, seed=5, steps=120, **GAME)
    many = rollout(300, 3, seed=5, steps=120, **GAME)
    assert one["done"].sum() > 0 and one["events"][..., 1].sum() > 0, "matches ended and missiles hit"
    for key in one:
        np.testing.assert_array_equal(one[key], many[key], err_msg=key)


def test_different_seeds_give_different_matches():
    a, b = rollout(4, 1, seed=1, steps=5), rollout(4, 1, seed=2, steps=5)
    assert not np.array_equal(a["obs"][0], b["obs"][0])


def test_envs_of_one_batch_get_different_spawns():
    env = arena.make("midrange", num_envs=4, num_threads=1, seed=0)
    obs, _ = env.reset(0)
    assert len({obs[2 * e].tobytes() for e in range(4)}) == 4


def test_reset_with_the_same_seed_twice_replays_the_same_matches():
    env = arena.make("midrange", num_envs=3, num_threads=2, seed=0, **GAME)
    rng = np.random.default_rng(0)
    acts = [random_actions(env, rng) for _ in range(50)]
    runs = []
    for _ in range(2):
        obs, _ = env.reset(seed=77)
        trace = [obs.copy()] + [env.step(a)[0].copy() for a in acts]
        runs.append(np.stack(trace))
    np.testing.assert_array_equal(runs[0], runs[1])


def test_reset_envs_with_equal_seeds_gives_equal_spawns():
    env = arena.make("midrange", num_envs=3, num_threads=1)
    obs, _ = env.reset_envs(np.array([5, 5, 6]))
    np.testing.assert_array_equal(obs[0:2], obs[2:4])
    assert not np.array_equal(obs[0:2], obs[4:6])


def test_stepping_two_halves_equals_stepping_the_whole_batch():
    whole = arena.make("midrange", num_envs=4, num_threads=1, seed=4, **GAME)
    halves = arena.make("midrange", num_envs=4, num_threads=2, seed=4, **GAME)
    rng = np.random.default_rng(5)
    for _ in range(60):
        a = random_actions(whole, rng)
        whole.step(a)
        halves.step_envs(a, 0, 2)
        halves.step_envs(a, 2, 4)
        np.testing.assert_array_equal(whole.observations, halves.observations)


# ---------------------------------------------------------------- zero-copy


def data_pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_step_returns_the_same_buffers_every_time_rewritten_in_place():
    env = arena.make("midrange", num_envs=3, num_threads=1)
    rng = np.random.default_rng(0)
    obs0, infos0 = env.reset()
    first = env.step(random_actions(env, rng))
    before = first[0].copy()
    second = env.step(random_actions(env, rng))
    for a, b in zip(first[:4], second[:4], strict=True):
        assert a is b and data_pointer(a) == data_pointer(b)
    for key in infos0:
        assert infos0[key] is first[4][key] is second[4][key], key
    assert first[0] is obs0 is env.observations
    assert not np.array_equal(before, first[0]), "the earlier reference sees the new data"
    core = env._core
    for returned, buffer in zip(
        second[:4], (core.obs, core.rewards, core.terminals, core.truncations), strict=True
    ):
        assert returned is buffer and data_pointer(returned) == data_pointer(buffer)


def test_buffers_have_the_documented_shapes_and_dtypes():
    env = arena.make("midrange", num_envs=2, num_threads=1, team_sizes=(1, 3))
    obs, rewards, terminals, truncations, infos = env.step(np.zeros((8, 3), np.int32))
    assert obs.shape == (8, env.obs_dim) and obs.dtype == np.float32 and obs.flags.c_contiguous
    assert rewards.shape == (8,) and rewards.dtype == np.float32
    assert terminals.dtype == truncations.dtype == np.bool_
    assert infos["events"].shape == (8, len(env.event_names)) == (8, 8)
    assert infos["final_observation"].shape == obs.shape
    assert infos["done"].shape == infos["outcome"].shape == infos["episode_length"].shape == (2,)


# ---------------------------------------------------------------- bad actions


@pytest.fixture
def env() -> arena.VectorEnv:
    return arena.make("midrange", num_envs=2, num_threads=1)


def good(env: arena.VectorEnv, dtype=np.int32) -> np.ndarray:
    return np.tile(np.array([2, 1, 0], dtype=dtype), (env.num_agents, 1))


@pytest.mark.parametrize("shape", [(4,), (4, 2), (3, 3), (4, 3, 1)])
def test_actions_of_the_wrong_shape_are_rejected_naming_the_expected_shape(env, shape):
    with pytest.raises(ValueError, match=r"shape \(4, 3\)"):
        env.step(np.zeros(shape, np.int32))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_infinite_actions_are_rejected(env, bad):
    a = good(env, np.float64)
    a[1, 2] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        env.step(a)


def test_non_integral_float_actions_are_rejected_but_integral_floats_are_accepted(env):
    a = good(env, np.float32)
    env.step(a)
    a[0, 0] = 1.5
    with pytest.raises(ValueError, match="integers"):
        env.step(a)


@pytest.mark.parametrize(
    "dtype, dim, value",
    [
        (np.int32, 0, -1),
        (np.int32, 0, 5),
        (np.int32, 1, 3),
        (np.int32, 2, 2),
        (np.int64, 0, -1),
        (np.int64, 2, 2),
        (np.int64, 0, 2**32 + 2),  # would wrap to the valid 2 in int32
        (np.int64, 1, -(2**40)),
        (np.uint64, 0, 2**63),
    ],
)
def test_out_of_range_actions_are_rejected_naming_the_value_and_range(env, dtype, dim, value):
    a = good(env, dtype)
    a[3, dim] = value
    high = [4, 2, 1][dim]
    with pytest.raises(ValueError, match=rf"{value}.*dimension {dim}.*out of range: allowed 0\.\.{high}"):
        env.step(a)


def test_the_core_names_the_row_of_the_first_out_of_range_action(env):
    # int32 actions go to the core unchecked by Python; it names the first bad one in row order.
    a = good(env, np.int32)
    a[2, 1] = 7
    a[3, 0] = -4
    with pytest.raises(ValueError, match=r"action 7 at row 2, dimension 1 is out of range: allowed 0\.\.2"):
        env.step(a)


def test_non_numeric_actions_are_rejected(env):
    with pytest.raises(ValueError, match="integers"):
        env.step(np.full((4, 3), "1"))


def test_a_rejected_action_leaves_the_envs_unstepped(env):
    before = env.world_state()["decisions"].copy()
    a = good(env)
    a[-1, 0] = 9
    with pytest.raises(ValueError):
        env.step(a)
    np.testing.assert_array_equal(env.world_state()["decisions"], before)


@pytest.mark.parametrize("begin, end", [(0, 3), (-1, 1), (2, 1)])
def test_stepping_an_env_range_outside_the_batch_is_rejected(env, begin, end):
    with pytest.raises(ValueError, match=rf"env range \[{begin}, {end}\) is outside \[0, 2\)"):
        env.step_envs(good(env), begin, end)


def test_stepping_a_closed_env_raises(env):
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(good(env))
    with pytest.raises(RuntimeError, match="closed"):
        env.reset()


# ---------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"bogus_param": 1}, r"unknown parameter 'bogus_param'.*allowed: .*frame_skip"),
        ({"team_sizes": (5, 1)}, r"team_sizes=\(5, 1\).*allowed two integers in \[1, 4\]"),
        ({"team_sizes": (0, 2)}, r"team_sizes=\(0, 2\).*\[1, 4\]"),
        ({"team_sizes": (1, 1, 1)}, r"team_sizes.*\[1, 4\]"),
        ({"frame_skip": 0}, r"frame_skip=0 is out of range: allowed \[1, 600\]"),
        ({"frame_skip": 2.5}, r"frame_skip must be an integer in \[1, 600\], got 2.5"),
        ({"frame_skip": True}, r"frame_skip must be an integer in \[1, 600\], got True"),
        ({"arena_radius_m": -1}, r"arena_radius_m=-1.0 is out of range: allowed \[1000, 1e\+07\]"),
        ({"time_limit_s": float("nan")}, r"time_limit_s=nan is out of range: allowed \[1, 36000\]"),
        ({"time_limit_s": "300"}, r"time_limit_s must be a number in \[1, 36000\], got '300'"),
        ({"missiles_per_fighter": 9}, r"missiles_per_fighter=9 is out of range: allowed \[1, 8\]"),
        ({"num_envs": 0}, r"num_envs=0 is out of range"),
        ({"num_envs": 2.0}, r"num_envs=2.0 is out of range"),
        ({"num_threads": 0}, r"num_threads=0 is out of range: allowed an integer in \[1, 1024\]"),
        ({"seed": -1}, r"seed=-1 must be a non-negative integer"),
        ({"device": "tpu"}, r"device='tpu' is not allowed: use 'cpu' or 'cuda'"),
        ({"spawn_distance_min_m": 50000.0}, r"spawn_distance_min_m=50000.0 must not exceed"),
        ({"spawn_distance_max_m": 130000.0}, r"outside the arena"),
    ],
)
def test_bad_configuration_is_rejected_naming_the_key_and_what_is_allowed(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        arena.make("midrange", **{"num_envs": 1, **kwargs})


def test_an_unknown_game_is_rejected_listing_the_games():
    with pytest.raises(ValueError, match="unknown game 'chess'.*midrange"):
        arena.make("chess")


@pytest.mark.parametrize("value", ["12", "abc", None, [12]])
def test_a_non_number_for_an_integer_parameter_is_rejected_naming_the_key(value):
    with pytest.raises(ValueError, match=r"frame_skip must be an integer in \[1, 600\]"):
        arena.make("midrange", frame_skip=value)


def test_a_string_for_team_sizes_is_rejected():
    with pytest.raises(ValueError, match="team_sizes"):
        arena.make("midrange", team_sizes="11")


def test_numpy_integers_are_accepted_as_integer_parameters():
    env = arena.make("midrange", frame_skip=np.int64(6), team_sizes=(np.int64(2), 2))
    assert env.params["frame_skip"] == 6 and env.team_sizes == (2, 2)


@pytest.mark.skipif(_core.cuda_built, reason="this build has CUDA")
def test_device_cuda_on_a_build_without_cuda_raises_a_clear_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA"):
        arena.make("midrange", device="cuda")


def same_world(a, b) -> None:
    """Field by field (the state's bytes include struct padding, which carries no state)."""
    wa, wb = a.world_state(), b.world_state()
    assert wa.keys() == wb.keys()
    for key in wa:
        np.testing.assert_array_equal(wa[key], wb[key], err_msg=key)


@pytest.mark.parametrize("game", ["midrange", "rpsw"])
def test_env_state_continues_every_match_exactly_in_another_env(game):
    """What checkpoints carry: the world, the counters and each env's spawn generator."""
    rng = np.random.default_rng(0)
    a = arena.make(game, num_envs=6, num_threads=1, seed=1)
    a.reset(1)
    nvec = a.action_space.nvec
    for _ in range(40):
        a.step(rng.integers(0, nvec, size=(a.num_agents, len(nvec))))
    saved = a.env_state()
    b = arena.make(game, num_envs=6, num_threads=2, seed=7)
    b.reset(7)
    np.testing.assert_array_equal(b.set_env_state(saved), a._core.obs)
    for _ in range(300):  # matches end and new ones spawn from the restored generators
        actions = rng.integers(0, nvec, size=(a.num_agents, len(nvec)))
        obs_a, rew_a, *_ = a.step(actions)
        obs_b, rew_b, *_ = b.step(actions)
        np.testing.assert_array_equal(obs_a, obs_b)
        np.testing.assert_array_equal(rew_a, rew_b)
    same_world(a, b)


def test_a_foreign_or_damaged_env_state_is_refused_and_changes_nothing():
    env = arena.make("midrange", num_envs=4, num_threads=1, seed=1)
    env.reset(1)
    before = env.env_state()
    with pytest.raises(ValueError, match="this batch needs"):
        env.set_env_state(before[:-8])
    world, obs = env.world_state(), env._core.obs.copy()
    garbage = bytes([0xFF]) * len(before)  # NaN positions, impossible counters
    with pytest.raises(ValueError, match="world state"):
        env.set_env_state(garbage)
    for key, value in env.world_state().items():
        np.testing.assert_array_equal(value, world[key], err_msg=key)
    np.testing.assert_array_equal(env._core.obs, obs)
