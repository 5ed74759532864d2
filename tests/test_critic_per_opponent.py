"""A critic with one value per class of opponent (``agent.critic_per_opponent``): the trainer tells the
critic whom each match is against (the actor never sees it), and everything that reads a policy
keeps working with the extra heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.agents.policy import Policy
from arena.agents.scripted import SCRIPTED_BOTS
from arena.trainer.checkpoint import CheckpointError, atomic_save
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.opponents import FROZEN_POLICIES, FixedMix, Opponents, opponent_value_classes
from arena.trainer.ppo import PPOTrainer


def small_policy(value_heads: int) -> Policy:
    torch.manual_seed(0)
    return Policy(obs_dim=6, action_nvec=[3, 2], hidden_size=16, lstm_size=8, value_heads=value_heads)


def test_each_row_takes_the_value_of_its_own_class_head_and_head_zero_without_a_class() -> None:
    policy = small_policy(3)
    obs, starts = torch.randn(5, 6), torch.ones(5, dtype=torch.bool)
    classes = torch.tensor([0, 1, 2, 2, 1])
    with torch.no_grad():
        _, values, (h, _) = policy.forward_step(obs, policy.initial_state(5), starts, classes)
        _, plain, _ = policy.forward_step(obs, policy.initial_state(5), starts)
        heads = policy.critic(h)
    assert torch.allclose(values, heads[torch.arange(5), classes])
    assert torch.allclose(plain, heads[:, 0])
    assert len({round(float(v), 6) for v in heads[0]}) == 3  # the heads differ from the start


def test_the_sequence_pass_picks_the_same_heads_as_step_by_step_play() -> None:
    policy = small_policy(4)
    steps, n = 6, 3
    obs = torch.randn(n, steps, 6)
    starts = torch.zeros(n, steps, dtype=torch.bool)
    starts[:, 0] = True
    starts[1, 3] = True  # a new match mid-segment, against another class
    classes = torch.tensor([[1] * 6, [2, 2, 2, 3, 3, 3], [0] * 6])
    with torch.no_grad():
        _, seq_values = policy.forward_sequence(obs, policy.initial_state(n), starts, classes)
        state = policy.initial_state(n)
        for t in range(steps):
            _, value, state = policy.forward_step(obs[:, t], state, starts[:, t], classes[:, t])
            assert torch.allclose(seq_values[:, t], value, atol=1e-6)


def test_a_policy_file_with_several_value_heads_reloads_with_them() -> None:
    policy = small_policy(5)
    assert policy.spec["value_heads"] == 5
    again = Policy(**policy.spec)
    again.load_state_dict(policy.state_dict())
    assert again.critic.weight.shape == (5, 8)
    with pytest.raises(ValueError, match="value_heads"):
        Policy(obs_dim=6, action_nvec=[3], value_heads=0)


def test_the_classes_are_mirror_frozen_policies_then_each_scripted_bot_of_the_game() -> None:
    classes = opponent_value_classes("midrange")
    assert classes[:2] == ["mirror", FROZEN_POLICIES]
    assert classes[2:] == [f"scripted:{name}" for name in SCRIPTED_BOTS["midrange"]]


def test_each_row_is_classed_by_the_player_its_env_is_against_and_follows_the_assignment() -> None:
    classes = opponent_value_classes("midrange")
    opponents = Opponents(num_envs=4, team_sizes=(1, 1), game="midrange", value_classes=classes)
    frozen = Policy(obs_dim=opponents_obs_dim(), action_nvec=[5, 3, 2], hidden_size=16, lstm_size=8)
    opponents.add_player("learner:snap-000001", frozen)
    envs = np.arange(4)
    opponents.set_assignment(envs, ["mirror", "scripted:heuristic", "learner:snap-000001", "scripted:evader"])
    want = [0, classes.index("scripted:heuristic"), 1, classes.index("scripted:evader")]
    assert opponents.value_class_of_row.tolist() == list(np.repeat(want, 2))
    opponents.set_assignment(np.array([1]), ["mirror"])  # a match ended: the next one is mirror play
    assert opponents.value_class_of_row[2:4].tolist() == [0, 0]


def test_without_classes_every_row_is_class_zero() -> None:
    opponents = Opponents(num_envs=2, team_sizes=(1, 1), game="midrange")
    opponents.set_assignment(np.arange(2), ["scripted:heuristic", "mirror"])
    assert opponents.value_class_of_row.tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="value_classes"):
        Opponents(num_envs=2, team_sizes=(1, 1), game="midrange", value_classes=["policy", "mirror"])


def opponents_obs_dim() -> int:
    import arena

    env = arena.make("midrange", num_envs=1)
    try:
        return int(env.obs_dim)
    finally:
        env.close()


def make_trainer(tmp_path, critic_per_opponent: bool = True) -> PPOTrainer:
    config = TrainerConfig(
        num_envs=16, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
        rollout_steps=16, minibatch_size=64, update_epochs=1, seed=5, checkpoint_dir=str(tmp_path),
    )
    return PPOTrainer(
        config, PolicyConfig(hidden_size=16, lstm_size=8, critic_per_opponent=critic_per_opponent),
        game="midrange", matchmaker=FixedMix({"mirror": 1.0, "scripted:heuristic": 1.0}, seed=2),
    )


def test_a_trainer_with_a_critic_per_opponent_stores_each_steps_class_and_trains(tmp_path) -> None:
    with make_trainer(tmp_path) as trainer:
        heads = 2 + len(SCRIPTED_BOTS["midrange"])
        assert trainer.policy.value_heads == heads
        trainer.evaluate()
        exp = trainer.experience
        heuristic = opponent_value_classes("midrange").index("scripted:heuristic")
        learner_classes = set(exp.value_class[exp.learner_mask].tolist())
        assert learner_classes == {0, heuristic}  # mirror rows and rows against the pilot
        # the values the rollout stored are the heads of each row's class
        row = int(np.flatnonzero(trainer.opponents.value_class_of_row == heuristic)[0])
        assert exp.value_class[0, row] == heuristic
        losses = trainer.train()
        assert np.isfinite(losses["value_loss"])


def test_a_run_with_a_critic_per_opponent_resumes_with_its_heads(tmp_path) -> None:
    with make_trainer(tmp_path) as trainer:
        trainer.evaluate()
        trainer.train()
        path = trainer.save()
        weights = trainer.policy.critic.weight.detach().clone()
    resumed = PPOTrainer.resume(path, matchmaker=FixedMix({"mirror": 1.0, "scripted:heuristic": 1.0}, seed=2))
    with resumed:
        assert torch.equal(resumed.policy.critic.weight, weights)
        assert resumed.opponents.value_classes == opponent_value_classes("midrange")


def test_a_checkpoint_written_before_value_heads_existed_still_resumes(tmp_path) -> None:
    with make_trainer(tmp_path, critic_per_opponent=False) as trainer:
        trainer.evaluate()
        path = trainer.save()
    payload = torch.load(path, weights_only=True)
    del payload["policy_spec"]["value_heads"]
    del payload["policy_config"]["critic_per_opponent"]
    atomic_save(payload, path)
    with PPOTrainer.resume(path, matchmaker=FixedMix("mirror")) as resumed:
        assert resumed.policy.value_heads == 1


def _drop_head(payload: dict, name: str, classes: list[str], names: list[str]) -> None:
    """``payload`` as a trainer whose game lacked class ``name`` would have written it."""
    keep = [i for i, c in enumerate(classes) if c != name]
    for key in ("critic.weight", "critic.bias"):
        payload["policy"][key] = payload["policy"][key][keep]
        moments = payload["optimizer"]["state"][names.index(key)]
        for m in ("exp_avg", "exp_avg_sq"):
            moments[m] = moments[m][keep]
    payload["policy_spec"]["value_heads"] = len(keep)


def test_a_run_resumes_after_its_game_gained_a_bot_each_class_keeping_its_head(tmp_path) -> None:
    matchmaker = FixedMix({"mirror": 1.0, "scripted:heuristic": 1.0}, seed=2)
    with make_trainer(tmp_path) as trainer:
        trainer.evaluate()
        trainer.train()
        path = trainer.save()
        classes = list(trainer.value_classes)
        names = [n for n, _ in trainer.policy.named_parameters()]
        weights = trainer.policy.critic.weight.detach().clone()
        moments = trainer.optimizer.state_dict()["state"][names.index("critic.weight")]["exp_avg"].clone()
        lstm = trainer.policy.lstm.weight_ih.detach().clone()
    with make_trainer(tmp_path / "fresh") as fresh:
        fresh_head = fresh.policy.critic.weight[-1].detach().clone()
    newest = classes[-1]  # the game's last bot (midrange's freestyle): added after the file was written
    payload = torch.load(path, weights_only=True)
    assert payload["value_classes"] == classes  # the file records its classes
    _drop_head(payload, newest, classes, names)
    del payload["value_classes"]  # and one written before files recorded them
    atomic_save(payload, path)
    with PPOTrainer.resume(path, matchmaker=matchmaker) as resumed:
        assert resumed.policy.value_heads == len(classes)
        assert torch.equal(resumed.policy.critic.weight[:-1], weights[:-1])  # each old class its head
        assert torch.equal(resumed.policy.critic.weight[-1], fresh_head)  # the new bot's starts fresh
        assert torch.equal(resumed.policy.lstm.weight_ih, lstm)  # the rest is the file's
        state = resumed.optimizer.state_dict()["state"][names.index("critic.weight")]
        assert torch.equal(state["exp_avg"][:-1], moments[:-1]) and not state["exp_avg"][-1].any()
        resumed.evaluate()
        resumed.train()  # and it trains on

    # a file that records its classes is read by name, in its own order
    payload = torch.load(path, weights_only=True)  # the file above: every class but the newest
    order = [classes[1], classes[0], *classes[2:-1]]  # frozen policies' head first, then mirror's, ...
    payload["policy"]["critic.weight"] = payload["policy"]["critic.weight"][[1, 0, *range(2, len(order))]]
    payload["value_classes"] = order
    atomic_save(payload, path)
    with PPOTrainer.resume(path, matchmaker=matchmaker) as resumed:
        moved = resumed.policy.critic.weight
        assert torch.equal(moved[0], weights[0]) and torch.equal(moved[1], weights[1])
        assert torch.equal(moved[2:-1], weights[2:-1])

    # a network that differs in more than its heads is still refused, naming both
    payload["policy_spec"]["lstm_size"] = 16
    atomic_save(payload, path)
    with pytest.raises(CheckpointError, match="holds a policy"):
        PPOTrainer.resume(path, matchmaker=matchmaker)
