"""The trainer learns rpsw: it exploits the random thrower and reads the cycle bot from its observation."""

from __future__ import annotations

import pytest
import torch

from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

ROCK = 0


def train_against(opponent: str, updates: int, seed: int = 0) -> tuple[PPOTrainer, float]:
    """Trains ``updates`` updates; returns the trainer and its win rate over the last three."""
    config = TrainerConfig(
        num_envs=128, num_threads=1, torch_threads=2, total_timesteps=10**6, bptt_horizon=16,
        rollout_steps=16, minibatch_size=512, update_epochs=4, learning_rate=3e-3, anneal_lr=False,
        ent_coef=0.01, seed=seed,
    )
    trainer = PPOTrainer(
        config, PolicyConfig(hidden_size=32, lstm_size=32), game="rpsw", matchmaker=FixedMix(opponent)
    )
    wins = games = 0.0
    for update in range(updates):
        trainer.evaluate()
        trainer.train()
        metrics = trainer.mean_and_log()
        if update >= updates - 3:
            n = metrics[f"episodes/{opponent}"]
            wins += metrics[f"win_rate/{opponent}"] * n
            games += n
    return trainer, wins / games


def throw_probabilities(trainer: PPOTrainer) -> torch.Tensor:
    """The learner's mean throw distribution over the steps of its last rollout."""
    exp = trainer.experience
    with torch.no_grad():
        logits, _ = trainer.policy.forward_sequence(
            exp.row_major(exp.obs), (exp.state_h[0], exp.state_c[0]), exp.row_major(exp.episode_starts)
        )
    return torch.softmax(logits[0], dim=-1)[exp.row_major(exp.learner_mask)].mean(dim=0)


def test_the_learner_beats_the_random_thrower_and_stops_throwing_rock() -> None:
    trainer, win_rate = train_against("scripted:random", updates=15)
    probs = throw_probabilities(trainer)
    assert win_rate > 0.6, win_rate  # paper/well score +1/4 a round: about 0.75 of matches
    assert probs[ROCK] < 0.05, probs  # rock is dominated by well
    trainer.close()


def test_the_learner_beats_the_cycle_bot_by_reading_its_last_throw() -> None:
    trainer, win_rate = train_against("scripted:cycle", updates=12)
    # no fixed throw distribution wins this often: the learner must predict the next throw from the obs
    assert win_rate > 0.9, win_rate
    trainer.close()


def test_the_learning_rate_anneals_by_the_configured_power_of_the_samples_left() -> None:
    config = TrainerConfig(
        num_envs=64, num_threads=1, torch_threads=1, total_timesteps=4096, bptt_horizon=16,
        rollout_steps=16, minibatch_size=256, learning_rate=1e-3, lr_anneal_power=2.0,
    )
    trainer = PPOTrainer(config, PolicyConfig(hidden_size=16, lstm_size=16), game="rpsw",
                         matchmaker=FixedMix("scripted:random"))
    seen = []
    while not trainer.done:
        trainer.evaluate()
        seen.append((trainer.global_step - 1024, trainer.train()["learning_rate"]))
        trainer.mean_and_log()
    assert [step for step, _ in seen] == [0, 1024, 2048, 3072]
    for step, lr in seen:
        assert lr == pytest.approx(1e-3 * (1 - step / 4096) ** 2)
    trainer.close()


def test_the_entropy_bonus_moves_linearly_from_ent_coef_to_ent_coef_end_with_the_samples() -> None:
    config = TrainerConfig(
        num_envs=64, num_threads=1, torch_threads=1, total_timesteps=4096, bptt_horizon=16,
        rollout_steps=16, minibatch_size=256, ent_coef=0.3, ent_coef_end=0.1,
    )
    trainer = PPOTrainer(config, PolicyConfig(hidden_size=16, lstm_size=16), game="rpsw",
                         matchmaker=FixedMix("scripted:random"))
    seen = []
    while not trainer.done:
        trainer.evaluate()
        seen.append((trainer.global_step - 1024, trainer.train()["ent_coef"]))
        trainer.mean_and_log()
    assert [step for step, _ in seen] == [0, 1024, 2048, 3072]
    for step, coef in seen:
        assert coef == pytest.approx(0.3 + (0.1 - 0.3) * step / 4096)
    trainer.close()
    with pytest.raises(ValueError, match="ent_coef_end=-0.1 is out of range"):
        TrainerConfig(ent_coef_end=-0.1).validate()
