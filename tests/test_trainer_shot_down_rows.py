"""A shot-down fighter's rows in a team match make no decision: the policy's update ignores them."""

from __future__ import annotations

import torch

from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

# A policy that fires at the first chance, so that fighters are shot down within one rollout.
FIRE_HAPPY = PolicyConfig(hidden_size=16, lstm_size=16,
                          action_prior=[[0.2] * 5, [0.2, 0.2, 0.6], [0.05, 0.95]])


def make(tmp_path) -> PPOTrainer:
    config = TrainerConfig(
        num_envs=16, num_threads=1, torch_threads=1, total_timesteps=100_000, bptt_horizon=16,
        rollout_steps=256, minibatch_size=1024, update_epochs=1, learning_rate=1e-2, seed=3,
        checkpoint_dir=str(tmp_path / "ckpt"),
    )
    return PPOTrainer(config, FIRE_HAPPY, game="midrange", team_sizes=(2, 2),
                      matchmaker=FixedMix({"mirror": 1.0}, seed=2))


def scramble(trainer: PPOTrainer, rows: torch.Tensor) -> None:
    """New actions and log-probabilities on ``rows`` ([steps, rows] bool) of the last rollout."""
    exp, generator = trainer.experience, torch.Generator().manual_seed(7)
    for dim, size in enumerate(trainer.policy.action_nvec):
        drawn = torch.randint(size, exp.actions[..., dim].shape, generator=generator)
        exp.actions[..., dim] = torch.where(rows, drawn, exp.actions[..., dim])
    exp.logprobs[rows] = -torch.rand(exp.logprobs.shape, generator=generator)[rows] * 5


def updated_weights(trainer: PPOTrainer) -> list[torch.Tensor]:
    trainer.train()
    return [p.detach().clone() for p in trainer.policy.parameters()]


def test_a_shot_down_fighters_rows_leave_the_policys_update_unchanged(tmp_path) -> None:
    # A fighter shot down keeps its row (all zeros, no legal action) until its team's match ends;
    # whatever was sampled there, the game ignored. Those steps must not move the policy: with other
    # actions on them the update is the same. The critic still learns their values (GAE reads them).
    plain, scrambled, control = make(tmp_path / "a"), make(tmp_path / "b"), make(tmp_path / "c")
    for trainer in (plain, scrambled, control):
        trainer.evaluate()
    exp = scrambled.experience
    decides = scrambled.policy.has_decision(exp.obs)
    shot_down = exp.learner_mask & ~decides
    assert int(shot_down.sum()) > 100, int(shot_down.sum())  # the rollout has such rows to ignore
    scramble(scrambled, shot_down)
    # as many live steps scrambled in the control: those do move the policy, so the test can fail
    live = exp.learner_mask & decides
    live_rows = live & (torch.rand(live.shape, generator=torch.Generator().manual_seed(9))
                        < shot_down.sum() / live.sum())
    scramble(control, live_rows)

    reference = updated_weights(plain)
    for a, b in zip(reference, updated_weights(scrambled), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert any(not torch.equal(a, b) for a, b in zip(reference, updated_weights(control), strict=True))
    for trainer in (plain, scrambled, control):
        trainer.close()
