"""The SIMD lanes path of the midrange core gives bit for bit the results of the scalar path.

The CPU core steps groups of envs on SIMD lanes (midrange_lanes_step.h); the scalar path, one env per
call, is the code the CUDA kernel runs. Both must agree exactly, in every output, whatever the
team sizes, the batch size (groups with idle lanes), the env range stepped or the thread count.
"""

from __future__ import annotations

import numpy as np
import pytest

from arena import _core
from arena.envs.registry import build_params

OUTPUTS = ("obs", "final_obs", "rewards", "terminals", "truncations", "events", "outcome", "end_reason",
           "episode_length", "done")


def core(
    sizes: tuple[int, int], num_envs: int, simd: bool, threads: int = 1, **overrides: float
) -> _core.MidrangeBatch:
    _, params = build_params("midrange", sizes, overrides)
    batch = _core.MidrangeBatch(params, num_envs, threads, "cpu", simd=simd)
    batch.reset(7)
    return batch


def actions(rng: np.random.Generator, rows: int, fire_prob: float) -> np.ndarray:
    fire = rng.random(rows) < fire_prob
    return np.stack([rng.integers(0, 5, rows), rng.integers(0, 3, rows), fire], axis=1).astype(np.int32)


def assert_same(a: _core.MidrangeBatch, b: _core.MidrangeBatch, where: str) -> None:
    for name in OUTPUTS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=f"{name} differs {where}")


def assert_same_world(a: _core.MidrangeBatch, b: _core.MidrangeBatch) -> None:
    wa, wb = a.world_state(), b.world_state()
    assert wa.keys() == wb.keys()
    for key in wa:
        np.testing.assert_array_equal(wa[key], wb[key], err_msg=f"world_state[{key!r}] differs")


def test_the_build_steps_envs_on_simd_lanes_unless_told_not_to():
    assert core((1, 1), 4, simd=True).lanes >= 2
    assert core((1, 1), 4, simd=False).lanes == 1


@pytest.mark.parametrize(
    ("sizes", "num_envs", "overrides"),
    [
        ((1, 1), 37, {}),
        ((2, 2), 19, {}),
        ((3, 1), 11, {}),
        ((4, 4), 9, {}),
        ((1, 2), 5, {"frame_skip": 5, "time_limit_s": 20.0, "arena_radius_m": 25_000.0}),
    ],
)
def test_lanes_match_the_scalar_path_bit_for_bit(sizes, num_envs, overrides):
    lanes = core(sizes, num_envs, simd=True, **overrides)
    scalar = core(sizes, num_envs, simd=False, **overrides)
    rng = np.random.default_rng(3)
    rows = num_envs * sum(sizes)
    ended = hits = 0
    for t in range(400):
        a = actions(rng, rows, fire_prob=0.3)
        lanes.step(a, 0, num_envs)
        scalar.step(a, 0, num_envs)
        assert_same(lanes, scalar, f"after decision {t}")
        ended += int(scalar.done.sum())
        hits += int(scalar.events[:, 1].sum())
    assert_same_world(lanes, scalar)
    # The run went through the rare per-lane paths: hits and ended matches.
    assert ended > 0 and hits > 0


@pytest.mark.parametrize(
    ("sizes", "overrides"),
    [
        ((1, 1), {"tracked_missiles": 1}),
        ((1, 1), {"tracked_missiles": 8, "missiles_per_fighter": 8}),
        ((2, 2), {"tracked_missiles": 3}),  # 12 threat candidates: placed by lane-wise ranks
        ((3, 2), {"tracked_missiles": 2, "missiles_per_fighter": 5}),  # 15: sorted per env
    ],
)
def test_lanes_observe_missile_lists_of_any_length_as_the_scalar_path(sizes, overrides):
    num_envs = 13
    lanes = core(sizes, num_envs, simd=True, **overrides)
    scalar = core(sizes, num_envs, simd=False, **overrides)
    rng = np.random.default_rng(11)
    rows = num_envs * sum(sizes)
    for t in range(150):
        a = actions(rng, rows, fire_prob=0.6)
        lanes.step(a, 0, num_envs)
        scalar.step(a, 0, num_envs)
        assert_same(lanes, scalar, f"after decision {t}")


def test_missiles_at_the_same_range_are_listed_in_slot_order_by_both_paths():
    # Two identical missiles of fighter 0 on fighter 1 stay identical, so their ranges tie
    # at every step: both paths must list them the same way (slot order, a stable sort).
    num_envs = 3
    batches = [core((1, 1), num_envs, simd=simd) for simd in (True, False)]
    for batch in batches:
        ws = batch.world_state()
        for slot in (0, 1):
            ws["missile_x"][:, slot] = ws["fighter_x"][:, 0]
            ws["missile_y"][:, slot] = ws["fighter_y"][:, 0]
            ws["missile_vx"][:, slot] = ws["fighter_vx"][:, 0] * 2.0
            ws["missile_vy"][:, slot] = ws["fighter_vy"][:, 0] * 2.0
            ws["missile_tof"][:, slot] = 1.0
            ws["missile_owner"][:, slot] = 0
            ws["missile_target"][:, slot] = 1
            ws["missile_active"][:, slot] = True
        ws["missile_tof"][:, 1] = 2.0  # a different time of flight tells the two apart in the rows
        batch.set_world_state(ws)
    a = np.zeros((num_envs * 2, 3), dtype=np.int32)
    a[:, 0] = 2
    for t in range(5):
        for batch in batches:
            batch.step(a, 0, num_envs)
        assert_same(batches[0], batches[1], f"after decision {t}")
    # Fighter 0's own-missile list (after its state, the enemy and the threat list): the two
    # entries have the same range, and slot 0 (the smaller time of flight) comes first.
    own = batches[0].obs.reshape(num_envs, 2, -1)[:, 0, 8 + 9 + 4 * 7 : 8 + 9 + 8 * 7].reshape(num_envs, 4, 7)
    assert (own[:, :2, 0] == 1).all() and (own[:, 2:, 0] == 0).all()
    assert (own[:, 0, 1] == own[:, 1, 1]).all()
    assert (own[:, 0, 6] < own[:, 1, 6]).all()


def test_lanes_match_the_scalar_path_when_stepping_env_ranges_on_two_threads():
    num_envs = 29
    lanes = core((2, 1), num_envs, simd=True, threads=2)
    scalar = core((2, 1), num_envs, simd=False, threads=1)
    rng = np.random.default_rng(5)
    for t in range(300):
        a = actions(rng, num_envs * 3, fire_prob=0.5)
        for begin, end in ((0, 13), (13, 14), (14, num_envs)):
            lanes.step(a, begin, end)
            scalar.step(a, begin, end)
        assert_same(lanes, scalar, f"after decision {t}")
    assert_same_world(lanes, scalar)


def test_ranges_that_share_a_simd_group_may_be_stepped_from_two_python_threads():
    # The core keeps 8 (or 4, 2) consecutive envs in one SIMD group; ranges split inside a group
    # are stepped one call at a time even when two Python threads ask at once (the GIL is
    # released while C++ steps), and give the results of stepping them in turn.
    from concurrent.futures import ThreadPoolExecutor

    num_envs = 29
    shared = core((1, 1), num_envs, simd=True, threads=2)
    alone = core((1, 1), num_envs, simd=True, threads=1)
    rng = np.random.default_rng(8)
    with ThreadPoolExecutor(2) as pool:
        for t in range(150):
            a = actions(rng, num_envs * 2, fire_prob=0.5)
            futures = [pool.submit(shared.step, a, begin, end) for begin, end in ((0, 13), (13, num_envs))]
            for f in futures:
                f.result()
            alone.step(a, 0, 13)
            alone.step(a, 13, num_envs)
            assert_same(shared, alone, f"after decision {t}")
    assert_same_world(shared, alone)


def test_missiles_closing_from_any_range_hit_at_the_same_step_on_both_paths():
    # The lanes path skips the hit test of missiles too far from their targets to hit within
    # the decision. Missiles fired head-on from 150 m to 3 km (a range per env, so the lanes of
    # a group are near and far) must hit exactly when the scalar path says, and all of them do.
    num_envs = 16
    ranges = np.linspace(150.0, 3000.0, num_envs)
    batches = [core((1, 1), num_envs, simd=simd) for simd in (True, False)]
    for batch in batches:
        ws = batch.world_state()
        ws["fighter_x"][:, 0], ws["fighter_y"][:, 0] = 0.0, 0.0
        ws["fighter_x"][:, 1], ws["fighter_y"][:, 1] = ranges, 0.0
        ws["fighter_vx"][:, 0], ws["fighter_vy"][:, 0] = 300.0, 0.0
        ws["fighter_vx"][:, 1], ws["fighter_vy"][:, 1] = -300.0, 0.0
        ws["missile_x"][:, 0], ws["missile_y"][:, 0] = 20.0, 0.0
        ws["missile_vx"][:, 0], ws["missile_vy"][:, 0] = 900.0, 0.0
        ws["missile_tof"][:, 0] = 0.0
        ws["missile_owner"][:, 0], ws["missile_target"][:, 0] = 0, 1
        ws["missile_active"][:, 0] = True
        batch.set_world_state(ws)
    a = np.zeros((num_envs * 2, 3), dtype=np.int32)
    a[:, 0] = 2  # straight on, no throttle, no fire
    hit_at = np.full(num_envs, -1)
    for t in range(12):
        for batch in batches:
            batch.step(a, 0, num_envs)
        assert_same(batches[0], batches[1], f"after decision {t}")
        hits = batches[1].events.reshape(num_envs, 2, -1)[:, 0, 1] > 0
        hit_at[hits & (hit_at < 0)] = t
    assert (hit_at >= 0).all(), f"missed: {ranges[hit_at < 0]}"
    assert (np.diff(hit_at) >= 0).all() and hit_at[-1] > hit_at[0]  # farther, later
