"""The magnet (TrainerConfig.magnet_coef): a KL pull toward a frozen copy of the policy."""

from __future__ import annotations

import pytest
import torch

from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer


def trainer(tmp_path=None, **overrides) -> PPOTrainer:
    values = dict(
        num_envs=64, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=16,
        rollout_steps=16, minibatch_size=512, update_epochs=4, learning_rate=3e-3, anneal_lr=False,
        ent_coef=0.0, seed=3,
    )
    if tmp_path is not None:
        values["checkpoint_dir"] = str(tmp_path)
    values.update(overrides)
    return PPOTrainer(TrainerConfig(**values), PolicyConfig(hidden_size=32, lstm_size=32), game="rpsw",
                      matchmaker=FixedMix("scripted:constant"))


def kl_to_initial(t: PPOTrainer, initial: dict) -> float:
    """KL(policy || its initial weights) over the last rollout's learner steps."""
    exp = t.experience
    start = t.policy.state_dict()
    with torch.no_grad():
        args = (exp.row_major(exp.obs), (exp.state_h[0], exp.state_c[0]), exp.row_major(exp.episode_starts))
        now = torch.log_softmax(t.policy.forward_sequence(*args)[0][0], dim=-1)
        t.policy.load_state_dict(initial)
        before = torch.log_softmax(t.policy.forward_sequence(*args)[0][0], dim=-1)
        t.policy.load_state_dict(start)
    mask = exp.row_major(exp.learner_mask)
    return float((now.exp() * (now - before)).sum(-1)[mask].mean())


def run(t: PPOTrainer, updates: int) -> list[dict[str, float]]:
    out = []
    for _ in range(updates):
        t.evaluate()
        out.append(t.train())
    return out


def test_a_fixed_magnet_holds_the_policy_near_where_it_started():
    free, held = trainer(), trainer(magnet_coef=5.0)
    initial = {k: v.clone() for k, v in free.policy.state_dict().items()}
    run(free, 6)
    losses = run(held, 6)
    assert all(m["magnet_kl"] >= 0.0 for m in losses)
    assert "magnet_kl" not in run(free, 1)[0]
    # against a constant thrower the free learner turns deterministic; the magnet keeps it close
    assert kl_to_initial(held, initial) < 0.25 * kl_to_initial(free, initial)


def test_a_refreshed_magnet_is_the_policy_after_every_refresh_and_survives_a_checkpoint(tmp_path):
    t = trainer(tmp_path, magnet_coef=0.5, magnet_every=2)
    initial = {k: v.clone() for k, v in t.policy.state_dict().items()}
    run(t, 1)
    assert all(torch.equal(v, initial[k]) for k, v in t.magnet.state_dict().items())  # not yet refreshed
    run(t, 1)
    assert all(torch.equal(v, t.policy.state_dict()[k]) for k, v in t.magnet.state_dict().items())
    run(t, 1)
    magnet = {k: v.clone() for k, v in t.magnet.state_dict().items()}
    path = t.save()
    resumed = PPOTrainer.resume(path, matchmaker=FixedMix("scripted:constant"))
    assert all(torch.equal(v, magnet[k]) for k, v in resumed.magnet.state_dict().items())
    assert not all(torch.equal(v, resumed.policy.state_dict()[k]) for k, v in magnet.items())


def test_bad_magnet_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="magnet_coef"):
        TrainerConfig(magnet_coef=-1.0).validate()
    with pytest.raises(ValueError, match="magnet_every"):
        TrainerConfig(magnet_every=-2).validate()
