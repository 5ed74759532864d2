"""Torch versions of the reward terms: bit-identical to the numpy terms on real matches (but for the
last ulps of transcendental functions in missile_reach and launch_angle), and a term without one
makes the composed reward say so and run on numpy."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

import arena
from arena.config import compose_run_config
from arena.games.midrange.bots import HeuristicPilot
from arena.games.midrange.missile_reach import MissileModel
from arena.games.midrange.obs import MISSILE, SPEED_SCALE_MS, MidrangeObsLayout
from arena.games.midrange.rewards import LaunchAngle, MissileReach, Pointing
from arena.rewards import Reward, RewardError, StepBatch, TorchStepBatch, build_reward, builtin_terms
from arena.train import build_reward_fn

BUILTIN_TERMS = builtin_terms()

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "reward"
# terms with a transcendental function whose torch and numpy versions may round differently:
# compared within a tolerance below, not bit for bit
ROUNDED = {"missile_reach", "launch_angle"}


def play(team_sizes: tuple[int, int], steps: int = 200, seed: int = 0) -> list[StepBatch]:
    """StepBatches of real matches in a small arena, most fighters flown by the heuristic pilot
    (missiles fired, threats defended), the rest straight ahead with random throttle and fire (to
    the edge and out of it); matches end and restart."""
    env = arena.make("midrange", num_envs=24, num_threads=1, team_sizes=team_sizes, arena_radius_m=15000.0,
                     spawn_distance_min_m=6000.0, spawn_distance_max_m=14000.0, time_limit_s=60.0)
    pilot, rng = HeuristicPilot(team_sizes), np.random.default_rng(seed)
    scripted = rng.random(env.num_agents) < 0.7
    obs, _ = env.reset(seed)
    batches = []
    for _ in range(steps):
        uniform = np.stack([rng.integers(0, n, env.num_agents) for n in env.action_space.nvec], axis=1)
        uniform[:, 0] = 2  # rudder centred
        actions = np.where(scripted[:, None], pilot.act(obs), uniform).astype(np.int32)
        before = obs.copy()
        obs, rewards, terminals, truncations, infos = env.step(actions)
        batches.append(StepBatch.from_env(env, before, actions, obs, rewards, terminals, truncations, infos))
    env.close()
    return batches


@pytest.fixture(scope="module", params=[(1, 1), (2, 2)], ids=["1v1", "2v2"])
def batches(request) -> list[StepBatch]:
    found = play(request.param)
    obs = np.concatenate([b.obs_before for b in found])
    layout = MidrangeObsLayout(request.param, 4)
    # the rows cover what the terms read
    assert len(obs) >= 9000
    assert (layout.threats(obs)[:, :, 0] > 0.5).any(axis=1).sum() > 1000
    assert (layout.own_missiles(obs)[:, :, 0] > 0.5).any(axis=1).sum() > 1000
    assert (layout.self_features(obs)[:, 4] < 0.8).sum() > 20  # within 8 km of the edge
    assert sum(int(b.done_rows.sum()) for b in found) > 50
    return found


def every_term() -> dict[str, dict]:
    terms = {name: {"_target_": name} for name in BUILTIN_TERMS if name not in ROUNDED | {"event"}}
    terms.update({
        "hits_scaled": {"_target_": "event", "event": "hits", "scale": 0.37},
        "pointing_zero_sum": {"_target_": "pointing", "zero_sum": True},
        "pointing_assigned": {"_target_": "pointing", "zero_sum": True, "target": "assigned"},
        "energy_zero_sum": {"_target_": "energy", "zero_sum": True},
        "closing_capped": {"_target_": "closing", "range_scale_m": 3000.0, "max_range_m": 9000.0},
        "boundary_wide": {"_target_": "boundary", "margin_m": 9000.0},
    })
    return {name: {**entry, "weight": 0.3} for name, entry in terms.items()}


@pytest.mark.parametrize("bootstrap", [True, False])
def test_every_torch_term_is_bit_identical_to_its_numpy_term_on_real_matches(batches, bootstrap) -> None:
    reward = build_reward(every_term(), discount=(0.97, bootstrap))
    assert reward.supports_torch and reward.host_bound_terms() == []
    for batch in batches:
        total, parts = reward(batch)
        total_t, parts_t = reward.torch_call(TorchStepBatch.from_step_batch(batch))
        assert parts_t.keys() == parts.keys()
        for name, value in parts.items():
            assert parts_t[name].dtype == torch.float32
            np.testing.assert_array_equal(parts_t[name].numpy(), value, err_msg=name)
        np.testing.assert_array_equal(total_t.numpy(), total)
    # the comparison has teeth: the shaping terms are not zero on these rows
    for name in ("pointing_assigned", "boundary_wide", "missile_closing"):
        assert any(np.abs(reward(b)[1][name]).max() > 0.01 for b in batches), name


@pytest.mark.parametrize("config", sorted(path.stem for path in CONFIGS.glob("*.yaml")))
def test_shipped_reward_configs_run_on_tensors_with_the_numpy_totals(batches, config) -> None:
    reward = build_reward_fn(compose_run_config([f"reward={config}"]))
    reward.set_step(20_000_000)  # scheduled weights part-way
    assert reward.supports_torch
    for batch in batches:
        np.testing.assert_array_equal(reward.torch_call(TorchStepBatch.from_step_batch(batch))[0].numpy(),
                                      reward(batch)[0])


class SquaredPointing(Pointing):
    """A user's change of a built-in term's numpy rule, without a torch twin."""

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        return super().potential(batch, obs) ** 2


class Wingspan(Reward):
    def __call__(self, batch: StepBatch) -> np.ndarray:
        return np.asarray(batch.obs_after[:, 1], dtype=np.float32)


def test_terms_without_a_torch_version_are_named_and_the_composition_falls_back_to_numpy(batches) -> None:
    assert not SquaredPointing().supports_torch and Pointing().supports_torch
    terms = {"outcome": {"_target_": "outcome"},
             "wing": {"_target_": f"{__name__}.Wingspan", "weight": 0.5},
             "squared": {"_target_": f"{__name__}.SquaredPointing"},
             "reach": {"_target_": "missile_reach"}}
    reward = build_reward(terms, discount=(0.99, True))
    assert not reward.supports_torch
    assert reward.host_bound_terms() == [
        f"reward term 'wing' ({__name__}.Wingspan)", f"reward term 'squared' ({__name__}.SquaredPointing)"]
    for batch in batches[::20]:
        total, parts = reward(batch)
        total_t, parts_t = reward.torch_call(TorchStepBatch.from_step_batch(batch))
        np.testing.assert_array_equal(total_t.numpy(), total)
        assert all(np.array_equal(parts_t[name].numpy(), parts[name]) for name in parts)


def missiles_in_flight(batches: list[StepBatch]) -> np.ndarray:
    """[n, 7] every missile slot in flight (mine and threats) of the observations before each step."""
    team_sizes = batches[0].team_sizes
    obs = np.concatenate([b.obs_before for b in batches])
    layout = MidrangeObsLayout(team_sizes, 4)
    slots = np.concatenate([layout.own_missiles(obs), layout.threats(obs)], axis=1).reshape(-1, len(MISSILE))
    return slots[slots[:, MISSILE.index("present")] > 0.5]


def test_missile_reach_on_tensors_equals_the_numpy_reach_to_float64_rounding(batches) -> None:
    """The reach of every missile in flight of the matches (tens of thousands: boost and coast, burnt
    out and dying), against targets fleeing from 0 to 1500 m/s: float64 on both sides, equal but for
    the last ulps of arctanh/exp/log1p/tanh. The reach is a difference of flight distances (up to
    ~1e5 m), so a short one carries their absolute error: asserted rtol 1e-14 and atol 1e-10 m
    (seen: 1.4e-15 relative, 1e-11 m)."""
    model = MissileModel.from_params(batches[0].params)
    missiles = missiles_in_flight(batches)
    assert len(missiles) > 20_000
    speed = missiles[:, MISSILE.index("speed")] * SPEED_SCALE_MS
    tof = missiles[:, MISSILE.index("tof")] * model.max_time_s
    flee = np.random.default_rng(1).uniform(0.0, 1500.0, len(missiles)).astype(np.float32)
    expected = model.reach(speed, tof, flee)
    got = model.reach_torch(*(torch.from_numpy(x) for x in (speed, tof, flee)))
    assert got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-14, atol=1e-10)
    assert (expected > 0).mean() > 0.5 and (expected == 0).any()  # reach and none, both seen
    assert (got.numpy() == expected).mean() > 0.8  # most values bit-identical


ROUNDED_TERMS = {
    "missile_reach": {"_target_": "missile_reach"},
    "missile_reach_wide": {"_target_": "missile_reach", "scale_m": 25000.0, "max_margin": 0.5},
    "missile_reach_edge": {"_target_": "missile_reach", "edge": True},
    "launch_angle": {"_target_": "launch_angle"},
    "launch_angle_narrow": {"_target_": "launch_angle", "cone_deg": 25.0},
}


@pytest.mark.parametrize("bootstrap", [True, False])
def test_missile_reach_and_launch_angle_on_tensors_equal_their_numpy_terms_on_real_matches(
    batches, bootstrap
) -> None:
    """missile_reach: its float32 potential rounds away the float64 reach's last ulps, so potentials
    and shaping are bit-identical on these rows; asserted: potentials within 1 float32 ulp, shaping
    within 2 ulp of the largest potential (1e-6), and all but 0.1% of the values bit-identical.
    launch_angle: float32 arccos, whose numpy (SIMD) and torch versions differ by up to 2 ulp, so
    the price is asserted within 4 float32 ulp (seen: 3), the rows without a launch exactly 0."""
    reward = build_reward({name: {**entry, "weight": 0.3} for name, entry in ROUNDED_TERMS.items()},
                          discount=(0.97, bootstrap))
    assert reward.supports_torch and reward.host_bound_terms() == []
    reaches = [reward.terms[name][1] for name in ("missile_reach", "missile_reach_edge")]
    exact = {name: 0 for name in ROUNDED_TERMS}
    rows = launches = 0
    for batch in batches:
        torch_batch = TorchStepBatch.from_step_batch(batch)
        pairs = ((batch.obs_before, torch_batch.obs_before), (batch.obs_after, torch_batch.obs_after))
        for (obs, obs_t), reach in itertools.product(pairs, reaches):
            potential = reach.torch_potential(torch_batch, obs_t)
            assert potential.dtype == torch.float32
            np.testing.assert_array_max_ulp(potential.numpy(), reach.potential(batch, obs), maxulp=1)
        total, parts = reward(batch)
        total_t, parts_t = reward.torch_call(torch_batch)
        assert parts_t.keys() == parts.keys()
        for name, value in parts.items():
            got = parts_t[name].numpy()
            assert parts_t[name].dtype == torch.float32
            if name.startswith("launch_angle"):
                np.testing.assert_array_max_ulp(got, value, maxulp=4)
                np.testing.assert_array_equal(got == 0, value == 0, err_msg=name)
            else:
                np.testing.assert_allclose(got, value, rtol=0.0, atol=1e-6, err_msg=name)
            exact[name] += int((got == value).sum())
        np.testing.assert_allclose(total_t.numpy(), total, rtol=0.0, atol=4e-6)
        rows += batch.num_rows
        launches += int((parts["launch_angle"] < 0).sum())
    for name in ("missile_reach", "missile_reach_wide", "missile_reach_edge"):
        assert exact[name] >= 0.999 * rows, name
    # the comparison has teeth: launches priced, reach shaping not zero, and the narrower cone
    # charging more than the default one
    assert launches > 300
    for name in ROUNDED_TERMS:
        assert any(np.abs(reward(b)[1][name]).max() > 0.01 for b in batches), name
    assert sum(reward(b)[1]["launch_angle_narrow"].sum() for b in batches) < sum(
        reward(b)[1]["launch_angle"].sum() for b in batches)


def test_a_reward_with_every_built_in_term_runs_wholly_on_tensors(batches) -> None:
    terms = {**every_term(), **{name: {**entry, "weight": 0.3} for name, entry in ROUNDED_TERMS.items()}}
    assert set(BUILTIN_TERMS) <= {entry["_target_"] for entry in terms.values()}
    reward = build_reward(terms, discount=(0.99, True))
    assert MissileReach().supports_torch and LaunchAngle().supports_torch
    assert reward.supports_torch and reward.host_bound_terms() == []
    for batch in batches[::10]:
        total, parts = reward(batch)
        total_t, parts_t = reward.torch_call(TorchStepBatch.from_step_batch(batch))
        for name, value in parts.items():  # the bit-identical terms stay so beside the rounded ones
            if not name.startswith(("missile_reach", "launch_angle")):
                np.testing.assert_array_equal(parts_t[name].numpy(), value, err_msg=name)
        np.testing.assert_allclose(total_t.numpy(), total, rtol=0.0, atol=4e-6)


class Broken(Reward):
    def __call__(self, batch: StepBatch) -> np.ndarray:
        return np.full(batch.num_rows, np.nan, np.float32)

    def torch_call(self, batch: TorchStepBatch) -> torch.Tensor:
        return torch.full((batch.num_rows,), float("nan"))


def test_torch_values_are_checked_like_numpy_values(batches) -> None:
    reward = build_reward({"outcome": {"_target_": "outcome"}, "broken": {"_target_": f"{__name__}.Broken"}})
    assert reward.supports_torch
    with pytest.raises(RewardError, match="reward term 'broken'.*NaN"):
        reward.torch_call(TorchStepBatch.from_step_batch(batches[0]))
