"""``PPOTrainer`` receives its env (as SB3's ``PPO(policy, env)`` does); the command line builds it."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer, trainer_env

SMALL = PolicyConfig(hidden_size=16, lstm_size=16)


def _config(tmp_path, **overrides) -> TrainerConfig:
    base = dict(num_envs=4, rollout_steps=8, bptt_horizon=8, minibatch_size=32, update_epochs=1,
                checkpoint_dir=str(tmp_path), num_threads=1, torch_threads=1, seed=3)
    return TrainerConfig(**(base | overrides))


def test_the_trainer_steps_the_env_it_is_given_and_records_it_for_its_checkpoints(tmp_path):
    config = _config(tmp_path)
    env = arena.make("rpsw", num_envs=4, seed=3, rounds=5)
    trainer = PPOTrainer(config, SMALL, env=env)
    try:
        assert trainer.env is env
        assert trainer.env_spec == {"game": "rpsw", "team_sizes": [1, 1], "overrides": {"rounds": 5}}
        samples = trainer.evaluate()
        assert samples == config.rollout_steps * env.num_agents
    finally:
        trainer.close()


def test_a_given_env_plays_as_the_env_the_trainer_would_build(tmp_path):
    config = _config(tmp_path)
    built = PPOTrainer(config, SMALL, game="rpsw", env_overrides={"rounds": 5})
    given = PPOTrainer(config, SMALL, env=trainer_env(config, "rpsw", env_overrides={"rounds": 5}))
    try:
        for trainer in (built, given):
            trainer.evaluate()
            trainer.train()
        assert built.env_spec == given.env_spec
        np.testing.assert_array_equal(built.experience.actions.numpy(), given.experience.actions.numpy())
        for a, b in zip(built.policy.parameters(), given.policy.parameters(), strict=True):
            assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    finally:
        built.close()
        given.close()


def test_an_env_of_another_size_than_the_trainers_is_refused_naming_both(tmp_path):
    env = arena.make("rpsw", num_envs=3)
    try:
        with pytest.raises(ValueError, match=r"3 matches, the trainer steps 4 \(trainer.num_envs=4\)"):
            PPOTrainer(_config(tmp_path), SMALL, env=env)
    finally:
        env.close()
