"""The rollout's torch side: reward and scripted opponents computed on tensors give the numpy side's
experience exactly, and the parts without a torch version are named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from arena.rewards import Reward, StepBatch, build_reward
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer
from arena.trainer.rollout import Rollout

SCRATCH = Path(__file__).resolve().parents[1] / "configs" / "reward" / "scratch.yaml"
# short matches at close range: many end (kills, time limit) inside the rollouts compared
SHORT_MATCHES = {"time_limit_s": 30.0, "spawn_distance_min_m": 8000.0, "spawn_distance_max_m": 14000.0,
                 "arena_radius_m": 20000.0}


class Wingspan(Reward):
    """A user term in numpy only: it has no torch version."""

    def __call__(self, batch: StepBatch) -> np.ndarray:
        return np.asarray(batch.obs_after[:, 1], dtype=np.float32)


def scratch_terms() -> dict:
    return yaml.safe_load(SCRATCH.read_text())["terms"]


def trainer(opponents: dict[str, float], torch_side: bool, extra_terms: dict | None = None) -> PPOTrainer:
    config = TrainerConfig(num_envs=8, num_threads=1, torch_threads=1, total_timesteps=100_000,
                           bptt_horizon=8, rollout_steps=80, minibatch_size=80 * 16, update_epochs=1, seed=5)
    reward = build_reward({**scratch_terms(), **(extra_terms or {})},
                          discount=(config.gamma, config.bootstrap_truncation))
    made = PPOTrainer(config, PolicyConfig(hidden_size=16, lstm_size=16), game="midrange",
                      env_overrides=SHORT_MATCHES, reward_fn=reward,
                      matchmaker=FixedMix(opponents, redraw=True, seed=2))
    old = made.rollout
    made.rollout = Rollout(
        made.env, made.policy, made.opponents, made.experience, made.stats, overlap=len(old.halves) > 1,
        reward_fn=reward, generator=made.generator, step_fn=made._step_fn, device=made.device,
        bootstrap_truncation=config.bootstrap_truncation, torch_side=torch_side,
    )
    old.close()
    return made


@pytest.mark.parametrize("opponents", [{"scripted:heuristic": 1.0}, {"scripted:random": 1.0},
                                        {"scripted:heuristic": 1.0, "scripted:random": 1.0, "mirror": 1.0}],
                         ids=["heuristic", "random", "mixed"])
def test_cpu_rollout_on_the_torch_side_collects_the_numpy_sides_experience(opponents) -> None:
    numpy_side, torch_side = trainer(opponents, False), trainer(opponents, True)
    assert not numpy_side.rollout.torch_reward and torch_side.rollout.torch_reward
    assert torch_side.rollout.host_bound_parts() == []
    ended = 0
    for _ in range(4):  # 320 decisions: the matches end and start again inside the rollouts
        for made in (numpy_side, torch_side):
            made.evaluate()
        a, b = numpy_side.experience, torch_side.experience
        for name in ("obs", "actions", "rewards", "terminals", "truncations", "episode_starts",
                     "learner_mask", "logprobs", "values", "final_values"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
        ended += int((a.terminals | a.truncations).sum())
        assert not torch.equal(a.rewards, torch.where(a.terminals, a.rewards, 0.0))  # shaped every step
    assert ended >= 16
    sums_a, sums_b = numpy_side.stats.term_sums, torch_side.stats.term_sums
    assert sums_a.keys() == sums_b.keys() == set(scratch_terms())
    for name in sums_a:
        assert sums_b[name] == pytest.approx(sums_a[name], rel=1e-9, abs=1e-9), name
    assert numpy_side.stats.term_samples == torch_side.stats.term_samples > 0
    for made in (numpy_side, torch_side):
        made.close()


def test_a_term_without_a_torch_version_is_named_and_keeps_the_numpy_path() -> None:
    extra = {"wingspan": {"_target_": f"{__name__}.Wingspan", "weight": 0.1}}
    numpy_side = trainer({"scripted:heuristic": 1.0}, False, extra)
    torch_side = trainer({"scripted:heuristic": 1.0}, True, extra)
    assert not torch_side.rollout.torch_reward
    assert torch_side.rollout.host_bound_parts() == [f"reward term 'wingspan' ({__name__}.Wingspan)"]
    for made in (numpy_side, torch_side):
        made.evaluate()
    for name in ("obs", "actions", "rewards"):
        assert torch.equal(getattr(numpy_side.experience, name), getattr(torch_side.experience, name)), name
    for made in (numpy_side, torch_side):
        made.close()
