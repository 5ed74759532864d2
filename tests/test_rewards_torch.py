"""Torch versions of the reward terms: bit-identical to the numpy terms on real matches, and a term
without one makes the composed reward say so and run on numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import arena
from arena.agents.scripted_midrange import HeuristicPilot
from arena.envs.midrange_obs import MidrangeObsLayout
from arena.rewards import BUILTIN_TERMS, Reward, RewardError, StepBatch, TorchStepBatch, build_reward
from arena.rewards.terms import LaunchAngle, MissileReach, Pointing

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "reward"
NUMPY_ONLY = {"missile_reach", "launch_angle"}


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
    terms = {name: {"_target_": name} for name in BUILTIN_TERMS if name not in NUMPY_ONLY | {"event"}}
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


@pytest.mark.parametrize("config", ["outcome", "scratch", "shaped"])
def test_shipped_reward_configs_run_on_tensors_with_the_numpy_totals(batches, config) -> None:
    terms = yaml.safe_load((CONFIGS / f"{config}.yaml").read_text())["terms"]
    reward = build_reward(terms, discount=(0.99, True))
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
    assert not MissileReach().supports_torch and not LaunchAngle().supports_torch
    assert not SquaredPointing().supports_torch and Pointing().supports_torch
    terms = {"outcome": {"_target_": "outcome"},
             "wing": {"_target_": f"{__name__}.Wingspan", "weight": 0.5},
             "squared": {"_target_": f"{__name__}.SquaredPointing"},
             "reach": {"_target_": "missile_reach"}}
    reward = build_reward(terms, discount=(0.99, True))
    assert not reward.supports_torch
    assert reward.host_bound_terms() == [
        f"reward term 'wing' ({__name__}.Wingspan)", f"reward term 'squared' ({__name__}.SquaredPointing)",
        "reward term 'reach' (arena.rewards.terms.MissileReach)"]
    for batch in batches[::20]:
        total, parts = reward(batch)
        total_t, parts_t = reward.torch_call(TorchStepBatch.from_step_batch(batch))
        np.testing.assert_array_equal(total_t.numpy(), total)
        assert all(np.array_equal(parts_t[name].numpy(), parts[name]) for name in parts)


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
