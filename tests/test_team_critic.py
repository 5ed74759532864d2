"""A team critic (``agent.team_critic``, MAPPO's centralised value): a fighter's value reads its living
teammates' LSTM features as well as its own, the actor still reads only its own row, and a fighter
alone in its team gets exactly the plain critic's value."""

from __future__ import annotations

import numpy as np
import torch

from arena.agents.policy import Policy
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.experience import Experience
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

OBS, NVEC = 8, [3, 2]
MASK = (5, 10)  # legal-action flags are not in this toy observation: has_decision reads columns 5..10


def policies(value_heads: int = 1) -> tuple[Policy, Policy]:
    """The same network with and without a team critic (its weights made non-zero)."""
    torch.manual_seed(3)
    plain = Policy(obs_dim=OBS, action_nvec=NVEC, hidden_size=16, lstm_size=8, value_heads=value_heads)
    torch.manual_seed(3)
    team = Policy(obs_dim=OBS, action_nvec=NVEC, hidden_size=16, lstm_size=8, value_heads=value_heads,
                  team_critic=True)
    assert team.team_critic is not None
    with torch.no_grad():
        team.team_critic.weight.normal_()
    return plain, team


def test_a_team_critic_starts_from_the_same_weights_as_the_plain_critic() -> None:
    torch.manual_seed(3)
    plain = Policy(obs_dim=OBS, action_nvec=NVEC, hidden_size=16, lstm_size=8)
    torch.manual_seed(3)
    team = Policy(obs_dim=OBS, action_nvec=NVEC, hidden_size=16, lstm_size=8, team_critic=True)
    for name, weight in plain.state_dict().items():
        assert torch.equal(weight, team.state_dict()[name]), name
    assert team.team_critic is not None and not team.team_critic.weight.any()


def test_a_one_fighter_team_gets_exactly_the_plain_critics_value() -> None:
    plain, team = policies(value_heads=3)
    n = 6
    obs, starts = torch.randn(n, OBS), torch.ones(n, dtype=torch.bool)
    classes = torch.tensor([0, 1, 2, 0, 1, 2])
    labels = torch.arange(n)  # 1v1: every row is a team of its own
    with torch.no_grad():
        logits_p, value_p, state_p = plain.forward_step(obs, plain.initial_state(n), starts, classes)
        logits_t, value_t, state_t = team.forward_step(obs, team.initial_state(n), starts, classes, labels)
        seq_p = plain.forward_sequence(obs[:, None].repeat(1, 4, 1), plain.initial_state(n),
                                       starts[:, None].repeat(1, 4), classes[:, None].repeat(1, 4))
        seq_t = team.forward_sequence(obs[:, None].repeat(1, 4, 1), team.initial_state(n),
                                      starts[:, None].repeat(1, 4), classes[:, None].repeat(1, 4), labels)
    assert torch.equal(value_p, value_t)
    assert torch.equal(seq_p[1], seq_t[1])
    for a, b in zip(logits_p + seq_p[0], logits_t + seq_t[0], strict=True):
        assert torch.equal(a, b)
    assert torch.equal(state_p[0], state_t[0])


def test_teammates_change_a_fighters_value_and_never_its_actions() -> None:
    plain, team = policies()
    obs, starts = torch.randn(4, OBS), torch.ones(4, dtype=torch.bool)
    two_teams = torch.tensor([0, 0, 1, 1])  # 2v2: rows 0-1 one team, rows 2-3 the other
    with torch.no_grad():
        logits_p, value_p, _ = plain.forward_step(obs, plain.initial_state(4), starts)
        logits_t, value_t, (h, _) = team.forward_step(obs, team.initial_state(4), starts, None, two_teams)
        assert team.team_critic is not None
        mate = h[[1, 0, 3, 2]]  # each row's only teammate
        expected = value_p + team.team_critic(mate)[:, 0]
    for a, b in zip(logits_p, logits_t, strict=True):
        assert torch.equal(a, b)
    assert torch.allclose(value_t, expected, atol=1e-6)
    assert not torch.allclose(value_t, value_p)


def test_a_fighters_value_reads_its_teammates_features_without_training_them() -> None:
    _, team = policies()
    obs = torch.randn(2, OBS, requires_grad=True)
    _, value, _ = team.forward_step(obs, team.initial_state(2), torch.ones(2, dtype=torch.bool), None,
                                    torch.tensor([0, 0]))
    value[0].backward()
    assert obs.grad is not None
    assert obs.grad[0].abs().sum() > 0  # its own row: the plain critic's gradient
    assert not obs.grad[1].any()  # the teammate's row: read, never shaped


def test_a_shot_down_teammate_adds_nothing_to_the_team_critic() -> None:
    torch.manual_seed(3)
    team = Policy(obs_dim=12, action_nvec=NVEC, hidden_size=16, lstm_size=8, action_mask=list(MASK),
                  team_critic=True)
    assert team.team_critic is not None
    with torch.no_grad():
        team.team_critic.weight.normal_()
    obs = torch.randn(3, 12)
    obs[:, MASK[0]:MASK[1]] = 1.0  # every action legal: alive
    obs[2] = 0.0  # row 2 shot down: its zeroed row has no decision
    labels = torch.tensor([7, 7, 7])  # one team of three
    state = (torch.randn(3, 8), torch.randn(3, 8))
    starts = torch.zeros(3, dtype=torch.bool)
    other_state = (state[0].clone(), state[1].clone())
    other_state[0][2] += 5.0  # whatever the dead one's memory holds
    other_state[1][2] -= 3.0
    with torch.no_grad():
        _, value, _ = team.forward_step(obs, state, starts, None, labels)
        _, again, _ = team.forward_step(obs, other_state, starts, None, labels)
        _, pair, _ = team.forward_step(obs[:2], (state[0][:2], state[1][:2]), starts[:2], None, labels[:2])
    assert torch.allclose(value[:2], again[:2], atol=1e-6)
    assert torch.allclose(value[:2], pair, atol=1e-6)  # the same as a team of the two living ones


def test_step_by_step_play_and_the_sequence_pass_give_a_team_critic_the_same_values() -> None:
    _, team = policies()
    n, steps = 6, 5
    obs = torch.randn(n, steps, OBS)
    starts = torch.zeros(n, steps, dtype=torch.bool)
    starts[:, 0] = True
    starts[2:4, 3] = True  # one team starts a new match mid-segment
    labels = torch.tensor([4, 4, 9, 9, 1, 1])
    with torch.no_grad():
        _, seq_values = team.forward_sequence(obs, team.initial_state(n), starts, None, labels)
        state = team.initial_state(n)
        for t in range(steps):
            _, value, state = team.forward_step(obs[:, t], state, starts[:, t], None, labels)
            assert torch.allclose(seq_values[:, t], value, atol=1e-6)


def test_a_minibatch_holds_whole_teams_and_every_segment_once() -> None:
    rows, steps, horizon = 4 * 3, 8, 4  # four 2v1 envs: slots 0-1 team 0, slot 2 team 1
    exp = Experience(rows, steps, horizon, OBS, 2, 8, team_of_slot=np.array([0, 0, 1]))
    exp.learner_mask[:] = True
    exp.learner_mask[:, 2::3] = False  # team 1 played by a bot
    segments = exp.learner_segments()
    zeros = torch.zeros(steps, rows)
    seen: list[int] = []
    for mb_ids in exp._shuffled(segments, 3, np.random.default_rng(0), None):
        seen += mb_ids.tolist()
        mb = exp.gather(mb_ids, zeros, zeros)
        assert mb.team is not None
        _, counts = torch.unique(mb.team, return_counts=True)
        assert counts.tolist() == [2] * len(counts)  # both fighters of each team, over the same steps
    assert sorted(seen) == sorted(segments.tolist())


def make_trainer(tmp_path, team_sizes: tuple[int, int] = (2, 2), team_critic: bool = True) -> PPOTrainer:
    config = TrainerConfig(
        num_envs=8, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
        rollout_steps=16, minibatch_size=64, update_epochs=1, seed=5, checkpoint_dir=str(tmp_path),
    )
    return PPOTrainer(
        config, PolicyConfig(hidden_size=16, lstm_size=8, team_critic=team_critic), game="midrange",
        team_sizes=team_sizes, matchmaker=FixedMix({"mirror": 1.0, "scripted:heuristic": 1.0}, seed=2),
    )


def test_the_values_a_2v1_rollout_stores_are_the_ones_training_recomputes(tmp_path) -> None:
    with make_trainer(tmp_path, team_sizes=(2, 1)) as trainer:
        assert trainer.policy.team_critic is not None
        with torch.no_grad():
            trainer.policy.team_critic.weight.normal_()
        trainer.evaluate()
        exp = trainer.experience
        ids = exp.learner_segments()
        zeros = torch.zeros_like(exp.values)
        with torch.no_grad():
            mb = exp.gather(ids, zeros, zeros)
            _, values = trainer.policy.forward_sequence(mb.obs, mb.state, mb.episode_starts, mb.value_class,
                                                        mb.team)
        learner = mb.learner_mask
        assert torch.allclose(values[learner], mb.values[learner], atol=1e-5)
        losses = trainer.train()
        assert np.isfinite(losses["value_loss"]) and np.isfinite(losses["policy_loss"])


def test_a_run_with_a_team_critic_resumes_with_it(tmp_path) -> None:
    with make_trainer(tmp_path) as trainer:
        trainer.evaluate()
        trainer.train()
        path = trainer.save()
        assert trainer.policy.team_critic is not None
        weights = trainer.policy.team_critic.weight.detach().clone()
        assert weights.any()  # it learnt
    with PPOTrainer.resume(path, matchmaker=FixedMix("mirror")) as resumed:
        assert resumed.policy.spec["team_critic"] is True
        assert resumed.policy.team_critic is not None
        assert torch.equal(resumed.policy.team_critic.weight, weights)
