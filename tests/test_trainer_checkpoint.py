"""Determinism and checkpoints: same seed, same losses; a resumed run continues exactly."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import torch

from arena.agents.policy import load_policy
from arena.rewards import CompositeReward, Reward, StepBatch
from arena.rewards.compose import WeightSchedule
from arena.trainer.checkpoint import CheckpointError, load_checkpoint, save_policy_snapshot
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

LOSSES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance")


def config(tmp_path, **overrides) -> TrainerConfig:
    values = dict(
        num_envs=16, num_threads=1, torch_threads=1, total_timesteps=20_000, bptt_horizon=8,
        rollout_steps=16, minibatch_size=64, update_epochs=2, learning_rate=1e-2, seed=11,
        checkpoint_dir=str(tmp_path / "ckpt"),
    )
    values.update(overrides)
    return TrainerConfig(**values)


def make(tmp_path, **overrides) -> PPOTrainer:
    return PPOTrainer(
        config(tmp_path, **overrides), PolicyConfig(hidden_size=16, lstm_size=16), game="rpsw",
        matchmaker=FixedMix({"mirror": 1.0, "scripted:random": 1.0}, redraw=True, seed=2),
    )


def run(trainer: PPOTrainer, updates: int) -> list[tuple[float, ...]]:
    out = []
    for _ in range(updates):
        trainer.evaluate()
        losses = trainer.train()
        out.append(tuple(losses[k] for k in LOSSES))
    return out


def test_the_same_seed_and_config_give_the_same_losses(tmp_path) -> None:
    a, b = make(tmp_path), make(tmp_path)
    assert run(a, 3) == run(b, 3)
    c = make(tmp_path, seed=12)
    assert run(c, 1)[0] != run(make(tmp_path), 1)[0]
    for t in (a, b, c):
        t.close()


def test_a_resumed_run_continues_with_the_same_losses_as_an_uninterrupted_one(tmp_path) -> None:
    first = make(tmp_path)
    run(first, 2)
    path = first.save()
    saved_step = first.global_step
    continued = run(first, 2)
    resumed = PPOTrainer.resume(
        path, matchmaker=FixedMix({"mirror": 1.0, "scripted:random": 1.0}, redraw=True, seed=99)
    )
    assert resumed.global_step == saved_step
    assert resumed.update == 2
    assert run(resumed, 2) == continued
    first.close()
    resumed.close()


def test_checkpoints_by_wall_time_leave_the_run_as_it_would_be_without_them(tmp_path) -> None:
    """Time-based checkpoints land wherever the clock says: they must not change what the run does."""
    plain = make(tmp_path / "a")
    timed = make(tmp_path / "b", checkpoint_minutes=1e-9)  # due after every update
    assert run(timed, 3) == run(plain, 3)
    assert timed.checkpoints_written == 3 and plain.checkpoints_written == 0
    mix = FixedMix({"mirror": 1.0, "scripted:random": 1.0}, redraw=True, seed=2)
    resumed = PPOTrainer.resume(timed.checkpoint_path(), matchmaker=mix)
    assert resumed.global_step == timed.global_step and resumed.checkpoints_written == 3
    for t in (plain, timed, resumed):
        t.close()


def test_a_resume_from_a_checkpoint_by_wall_time_continues_the_matches_in_flight_exactly(tmp_path) -> None:
    """No restart at a time-based checkpoint: the file carries every env's state, every row's LSTM
    state and the scripted opponents' generators, and the resumed run continues those matches."""
    timed = make(tmp_path, checkpoint_minutes=1e-9)
    run(timed, 2)
    saved = shutil.copy(timed.checkpoint_path(), tmp_path / "after-2.pt")
    assert "inflight" in load_checkpoint(saved)
    continued = run(timed, 3)
    mix = FixedMix({"mirror": 1.0, "scripted:random": 1.0}, redraw=True, seed=99)
    resumed = PPOTrainer.resume(saved, matchmaker=mix)
    assert run(resumed, 3) == continued
    timed.close()
    resumed.close()


def test_midrange_with_frozen_and_scripted_opponents_resumes_in_flight_exactly(tmp_path) -> None:
    def midrange(mix: FixedMix, **overrides) -> PPOTrainer:
        policy = PolicyConfig(hidden_size=16, lstm_size=16)
        return PPOTrainer(config(tmp_path, num_envs=8, **overrides), policy, game="midrange", matchmaker=mix)

    frozen = midrange(FixedMix("mirror"), seed=5)
    snapshot = save_policy_snapshot(frozen.policy, tmp_path / "frozen.pt")
    frozen.close()
    mix = {"mirror": 1.0, "scripted:random": 1.0, "scripted:heuristic": 1.0, str(snapshot): 1.0}
    timed = midrange(FixedMix(mix, redraw=True, seed=2), checkpoint_minutes=1e-9)
    run(timed, 2)
    saved = shutil.copy(timed.checkpoint_path(), tmp_path / "after-2.pt")
    continued = run(timed, 2)
    resumed = PPOTrainer.resume(saved, matchmaker=FixedMix(mix, redraw=True, seed=99))
    assert run(resumed, 2) == continued
    timed.close()
    resumed.close()


def test_a_checkpoint_holds_weights_optimiser_rngs_counters_and_config(tmp_path) -> None:
    trainer = make(tmp_path)
    run(trainer, 1)
    path = trainer.save()
    assert path == tmp_path / "ckpt" / "trainer.pt"
    assert os.listdir(path.parent) == ["trainer.pt"]  # no temporary file left behind
    payload = load_checkpoint(path)
    assert payload["counters"]["update"] == 1
    assert payload["config"]["seed"] == 11 and payload["env"]["game"] == "rpsw"
    assert payload["optimizer"]["state"]
    assert {"torch", "sample", "shuffle", "env_seed", "python"} <= set(payload["rng"])
    # the learner in a checkpoint can be loaded as a frozen opponent
    frozen = load_policy(path)
    for name, value in frozen.state_dict().items():
        torch.testing.assert_close(value, trainer.policy.state_dict()[name])
    trainer.close()


def test_checkpoints_are_written_every_interval(tmp_path) -> None:
    trainer = make(tmp_path, checkpoint_interval=600)  # a rollout is 16 rows x 16 steps at most
    run(trainer, 2)
    assert not (tmp_path / "ckpt" / "trainer.pt").exists() or trainer.global_step >= 600
    run(trainer, 2)
    assert load_checkpoint(tmp_path / "ckpt" / "trainer.pt")["counters"]["global_step"] >= 600
    trainer.close()


def test_resuming_from_a_missing_checkpoint_names_the_path(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        PPOTrainer.resume(tmp_path / "missing.pt")


def test_resuming_from_a_corrupted_checkpoint_names_the_path(tmp_path) -> None:
    trainer = make(tmp_path)
    path = trainer.save()
    trainer.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="trainer.pt"):
        PPOTrainer.resume(path)
    other = tmp_path / "weights.pt"
    torch.save({"just": torch.zeros(2)}, other)
    with pytest.raises(CheckpointError, match="weights.pt"):
        load_checkpoint(other)


class CountingTerm(Reward):
    """A term with state beyond per-row state: how many steps it has rewarded."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, batch: StepBatch) -> np.ndarray:
        self.calls += 1
        return np.zeros(batch.num_rows, dtype=np.float32)

    def state_dict(self) -> dict:
        return {"calls": self.calls}

    def load_state_dict(self, state) -> None:
        self.calls = int(state["calls"])


def test_reward_terms_with_state_ride_in_the_checkpoint(tmp_path) -> None:
    mix = FixedMix({"mirror": 1.0}, redraw=True, seed=2)
    term = CountingTerm()
    reward = CompositeReward({"count": (1.0, term)}, {"count": WeightSchedule(1.0, 0.0, 1_000_000)})
    trainer = PPOTrainer(config(tmp_path), PolicyConfig(hidden_size=16, lstm_size=16), game="rpsw",
                         matchmaker=mix, reward_fn=reward)
    run(trainer, 2)
    path = trainer.save()
    assert term.calls > 0
    fresh = CountingTerm()
    resumed = PPOTrainer.resume(path, matchmaker=FixedMix({"mirror": 1.0}, redraw=True, seed=2),
                                reward_fn=CompositeReward({"count": (1.0, fresh)},
                                                          {"count": WeightSchedule(1.0, 0.0, 1_000_000)}))
    assert fresh.calls == term.calls
    assert resumed.reward_fn.step == reward.step > 0
    trainer.close()
    resumed.close()
