"""Parity of the NumPy references (arena/envs/reference) with the native core.

Both sides get the same parameters, seeds and random actions (with firing, so missiles fly, hit
and kill) and must produce the same observations, events, outcomes and done flags at every
decision, and the same world state after many decisions. The core is built without FMA
contraction, so in practice the two agree bit for bit; the tolerances only absorb rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from arena import _core
from arena.envs.reference import env_seed, mix64
from arena.games.midrange.physics import (
    DEFAULT_PARAMS,
    EV_EVADED,
    EV_FIRED,
    EV_HITS,
    EV_KILLS,
    EV_LEFT_ARENA,
    EV_MISSED,
    EV_WAS_HIT,
    NUM_EVENTS,
)
from arena.games.midrange.reference import MidrangeReference
from arena.games.rpsw.reference import RpswReference

NUM_ENVS = 8
EXACT_OUTPUTS = ("rewards", "terminals", "truncations", "events", "outcome", "end_reason",
                 "episode_length", "done")


def _midrange_pair(params: dict[str, Any], num_envs: int, seed: int) -> tuple[Any, MidrangeReference]:
    p = _core.MidrangeParams()
    for name, value in params.items():
        setattr(p, name, value)
    core = _core.MidrangeBatch(p, num_envs, 1, "cpu")
    ref = MidrangeReference(params, num_envs)
    core.reset(seed)
    ref.reset(seed)
    return core, ref


def _random_actions(rng: np.random.Generator, rows: int, fire_p: float = 0.3) -> np.ndarray:
    fire = rng.random(rows) < fire_p
    actions = np.stack([rng.integers(0, 5, rows), rng.integers(0, 3, rows), fire], axis=1)
    return np.ascontiguousarray(actions, dtype=np.int32)


def _assert_equal(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    # np.testing is slow; call it only to explain a failure.
    if actual.dtype != expected.dtype or not np.array_equal(actual, expected):
        assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype}, core {expected.dtype}"
        np.testing.assert_array_equal(actual, expected, err_msg=what)


def _assert_close(actual: np.ndarray, expected: np.ndarray, what: str, tol: float = 1e-5) -> None:
    if not np.allclose(actual, expected, rtol=tol, atol=tol):
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, err_msg=what)


def _assert_outputs_equal(core: Any, out: dict[str, np.ndarray], agents: int, when: str) -> None:
    for name in EXACT_OUTPUTS:
        _assert_equal(out[name], getattr(core, name), f"{name} at {when}")
    _assert_close(out["obs"], core.obs, f"obs at {when}")
    ended_rows = np.repeat(core.done, agents)
    _assert_close(out["final_obs"][ended_rows], core.final_obs[ended_rows], f"final_obs at {when}")


def _assert_world_close(core_state: dict[str, np.ndarray], ref_state: dict[str, np.ndarray],
                        when: str) -> None:
    assert set(core_state) == set(ref_state)
    for name, expected in core_state.items():
        actual = ref_state[name]
        assert actual.shape == expected.shape and actual.dtype == expected.dtype, name
        if expected.dtype == np.float64:
            np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-3, err_msg=f"{name} at {when}")
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=f"{name} at {when}")


def _run_midrange(params: dict[str, Any], decisions: int, seed: int) -> dict[str, int]:
    """Steps core and reference side by side; returns counts that show the run was not vacuous."""
    core, ref = _midrange_pair(params, NUM_ENVS, seed)
    agents = ref.agents_per_env
    _assert_world_close(core.world_state(), ref.world_state(), "reset")
    np.testing.assert_array_equal(ref.obs, core.obs)
    rng = np.random.default_rng(seed)
    totals = np.zeros(NUM_EVENTS, np.int64)
    ends: dict[int, int] = {}
    for t in range(decisions):
        actions = _random_actions(rng, NUM_ENVS * agents)
        core.step(actions, 0, NUM_ENVS)
        out = ref.step(actions)
        _assert_outputs_equal(core, out, agents, f"decision {t}")
        totals += out["events"].sum(axis=0)
        for reason in out["end_reason"][out["done"]]:
            ends[int(reason)] = ends.get(int(reason), 0) + 1
        if (t + 1) % 250 == 0:
            _assert_world_close(core.world_state(), ref.world_state(), f"decision {t}")
    return {"fired": int(totals[EV_FIRED]), "hits": int(totals[EV_HITS]), "kills": int(totals[EV_KILLS]),
            "left_arena": int(totals[EV_LEFT_ARENA]), "missed": int(totals[EV_MISSED]),
            "evaded": int(totals[EV_EVADED]), "episodes": sum(ends.values()),
            "time_limit": ends.get(4, 0)}


def test_generator_matches_core() -> None:
    for seed in (0, 1, 12345, 2**63 + 7, 2**64 - 1):
        for env in range(4):
            assert env_seed(seed, env) == _core.env_seed(seed, env)
    assert mix64(0) == 0 and mix64(1) != 1


def test_default_params_match_core() -> None:
    p = _core.MidrangeParams()
    names = {n for n in dir(p) if not n.startswith("_")} - {"TABLE"}  # TABLE: the parameter table itself
    assert names == set(DEFAULT_PARAMS)
    for name, default in DEFAULT_PARAMS.items():
        assert getattr(p, name) == default, name


@pytest.mark.parametrize("team_size", [(1, 1), (2, 2), (1, 2)], ids=["1v1", "2v2", "1v2"])
def test_midrange_parity(team_size: tuple[int, int]) -> None:
    counts = _run_midrange({"team_size": team_size}, decisions=1000, seed=11)
    assert counts["fired"] > 0 and counts["hits"] > 0 and counts["kills"] > 0, counts
    assert counts["episodes"] > 0, counts


@pytest.mark.parametrize("team_size", [(1, 1), (2, 2)], ids=["1v1", "2v2"])
def test_midrange_parity_of_missiles_that_run_out(team_size: tuple[int, int]) -> None:
    # Short-lived missiles: most time out or slow down before they hit (missed / evaded events).
    params = {"team_size": team_size, "missile_max_time_s": 12.0, "missile_min_speed": 600.0}
    counts = _run_midrange(params, decisions=300, seed=7)
    assert counts["missed"] > 0 and counts["missed"] == counts["evaded"], counts


def test_midrange_parity_truncation_and_boundary() -> None:
    # A small arena and a short time limit: fighters fly out and matches run out of time.
    params = {"team_size": (1, 1), "arena_radius_m": 21000.0, "spawn_distance_min_m": 38000.0,
              "spawn_heading_jitter_deg": 180.0, "time_limit_s": 30.0, "tracked_missiles": 2,
              "missiles_per_fighter": 3}
    counts = _run_midrange(params, decisions=300, seed=5)
    assert counts["left_arena"] > 0 and counts["time_limit"] > 0 and counts["fired"] > 0, counts


def test_midrange_set_world_state_parity() -> None:
    core, ref = _midrange_pair({"team_size": (2, 2)}, NUM_ENVS, seed=3)
    rng = np.random.default_rng(3)
    for _ in range(60):  # until missiles are in flight
        actions = _random_actions(rng, NUM_ENVS * 4, fire_p=0.5)
        core.step(actions, 0, NUM_ENVS)
        ref.step(actions)
    state = core.world_state()
    assert state["missile_active"].any()
    # Odd states the random play rarely reaches: a dead fighter, one at rest, a fighter far out.
    state["fighter_alive"][0, 1] = False
    state["fighter_vx"][1, 2] = state["fighter_vy"][1, 2] = 0.0
    state["fighter_x"][2, 0] = 59990.0
    # Env 3: missiles of fighters 0 (slot 0) and 1 (slot 6) 50 m from fighter 2 both hit it in
    # the same physics step: both score a hit, the lower slot the kill.
    state["fighter_alive"][3, 2] = True
    for slot, owner, dx in ((0, 0, 50.0), (6, 1, -50.0)):
        state["missile_x"][3, slot] = state["fighter_x"][3, 2] + dx
        state["missile_y"][3, slot] = state["fighter_y"][3, 2]
        state["missile_vx"][3, slot] = state["fighter_vx"][3, 2]
        state["missile_vy"][3, slot] = state["fighter_vy"][3, 2]
        state["missile_tof"][3, slot] = 1.0
        state["missile_owner"][3, slot], state["missile_target"][3, slot] = owner, 2
        state["missile_active"][3, slot] = True
    core.set_world_state(state)
    ref.set_world_state(state)
    np.testing.assert_allclose(ref.obs, core.obs, rtol=1e-5, atol=1e-5)
    _assert_world_close(core.world_state(), ref.world_state(), "set_world_state")
    actions = np.zeros((NUM_ENVS * 4, 3), np.int32)
    core.step(actions, 0, NUM_ENVS)
    out = ref.step(actions)
    _assert_outputs_equal(core, out, 4, "the double hit")
    env3 = out["events"][12:16]
    assert env3[0, EV_KILLS] >= 1 and env3[1, EV_HITS] >= 1 and env3[2, EV_WAS_HIT] >= 2, env3
    for t in range(60):
        actions = _random_actions(rng, NUM_ENVS * 4)
        core.step(actions, 0, NUM_ENVS)
        _assert_outputs_equal(core, ref.step(actions), 4, f"decision {t} after set_world_state")
    _assert_world_close(core.world_state(), ref.world_state(), "end")


def test_rpsw_parity() -> None:
    p = _core.RpswParams()
    p.rounds = 5
    core = _core.RpswBatch(p, NUM_ENVS, 1, "cpu")
    ref = RpswReference(rounds=5, num_envs=NUM_ENVS)
    core.reset(9)
    ref.reset(9)
    np.testing.assert_array_equal(ref.obs, core.obs)
    rng = np.random.default_rng(9)
    outcomes = set()
    for t in range(40):
        actions = np.ascontiguousarray(rng.integers(0, 4, (2 * NUM_ENVS, 1)), dtype=np.int32)
        core.step(actions, 0, NUM_ENVS)
        out = ref.step(actions)
        _assert_outputs_equal(core, out, 2, f"decision {t}")
        outcomes.update(out["outcome"][out["done"]].tolist())
    assert outcomes == {0, 1, 2}
    core_state, ref_state = core.world_state(), ref.world_state()
    for name, value in core_state.items():
        np.testing.assert_array_equal(ref_state[name], value, err_msg=name)
