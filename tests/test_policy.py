"""The learner's network: initialisation, the step and sequence paths, the action helpers, loading."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import arena
from arena.agents.policy import Policy, load_policy, policy_from_payload
from arena.games import spec
from arena.trainer.checkpoint import save_policy_snapshot

MIDRANGE_OBS, MIDRANGE_NVEC = 83, [5, 3, 2]


def make_policy(seed: int = 0, **kwargs: int) -> Policy:
    torch.manual_seed(seed)
    return Policy(MIDRANGE_OBS, MIDRANGE_NVEC, **kwargs)


def singular_values(w: torch.Tensor) -> torch.Tensor:
    return torch.linalg.svdvals(w.detach())


def test_actor_heads_are_orthogonal_with_gain_001_and_the_critic_with_gain_1() -> None:
    policy = make_policy()
    heads = policy.actor_head_weights()
    assert [h.shape[0] for h in heads] == MIDRANGE_NVEC
    for head in heads:
        torch.testing.assert_close(singular_values(head), torch.full((head.shape[0],), 0.01))
    torch.testing.assert_close(policy.critic.weight.norm(), torch.tensor(1.0))
    assert policy.actor.bias.abs().max() == 0 and policy.critic.bias.abs().max() == 0


def test_lstm_init_is_orthogonal_and_not_overwritten_by_its_own_constructor() -> None:
    policy = make_policy()
    for w in (policy.lstm.weight_ih, policy.lstm.weight_hh):
        torch.testing.assert_close(singular_values(w), torch.ones(w.shape[1]))
    assert policy.lstm.bias_ih.abs().max() == 0 and policy.lstm.bias_hh.abs().max() == 0
    encoder = policy.encoder[0]
    torch.testing.assert_close(singular_values(encoder.weight), torch.full((MIDRANGE_OBS,), math.sqrt(2)))


def test_default_midrange_policy_has_about_150k_parameters() -> None:
    count = make_policy().num_parameters()
    assert 130_000 <= count <= 170_000, count


def test_step_and_sequence_paths_agree_with_episode_starts_mid_sequence() -> None:
    policy = make_policy(hidden_size=32, lstm_size=24)
    for p in policy.parameters():  # larger weights than the init, so differences would show
        p.data.normal_(0, 0.3)
    n, steps = 5, 12
    obs = torch.randn(n, steps, MIDRANGE_OBS)
    starts = torch.zeros(n, steps, dtype=torch.bool)
    starts[0, 0] = starts[1, 4] = starts[1, 9] = starts[2, 11] = starts[3, 1] = True
    state = (torch.randn(n, 24), torch.randn(n, 24))
    with torch.no_grad():
        seq_logits, seq_values = policy.forward_sequence(obs, state, starts)
        h = state
        for t in range(steps):
            logits, value, h = policy.forward_step(obs[:, t], h, starts[:, t])
            for d in range(len(MIDRANGE_NVEC)):
                torch.testing.assert_close(logits[d], seq_logits[d][:, t], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(value, seq_values[:, t], atol=1e-5, rtol=1e-5)


def test_an_episode_start_erases_the_previous_state() -> None:
    policy = make_policy(hidden_size=16, lstm_size=16)
    obs = torch.randn(2, MIDRANGE_OBS)
    start = torch.ones(2, dtype=torch.bool)
    with torch.no_grad():
        a = policy.forward_step(obs, (torch.randn(2, 16), torch.randn(2, 16)), start)
        b = policy.forward_step(obs, policy.initial_state(2), start)
    torch.testing.assert_close(a[1], b[1])
    torch.testing.assert_close(a[2][0], b[2][0])


def test_sampled_actions_are_in_range_and_their_log_prob_matches() -> None:
    policy = make_policy(hidden_size=16, lstm_size=16)
    n = 4000
    logits = [torch.randn(n, k) * 2 for k in MIDRANGE_NVEC]
    gen = torch.Generator().manual_seed(1)
    actions, logp = policy.sample_actions(logits, gen)
    assert actions.shape == (n, 3) and actions.dtype == torch.int64
    for d, k in enumerate(MIDRANGE_NVEC):
        assert 0 <= int(actions[:, d].min()) and int(actions[:, d].max()) < k
    expected = sum(
        torch.log_softmax(logits[d], -1).gather(1, actions[:, d : d + 1]).squeeze(1) for d in range(3)
    )
    torch.testing.assert_close(logp, expected)
    torch.testing.assert_close(policy.log_prob(logits, actions), expected)


def test_sampling_follows_the_head_probabilities() -> None:
    policy = Policy(4, [3, 2], hidden_size=8, lstm_size=8)
    logits = [torch.log(torch.tensor([[0.7, 0.2, 0.1]])).expand(20000, 3), torch.zeros(20000, 2)]
    actions, _ = policy.sample_actions(logits, torch.Generator().manual_seed(0))
    freq = torch.bincount(actions[:, 0], minlength=3).float() / 20000
    torch.testing.assert_close(freq, torch.tensor([0.7, 0.2, 0.1]), atol=0.015, rtol=0)


def test_entropy_of_uniform_heads_is_the_sum_of_their_log_sizes() -> None:
    policy = make_policy(hidden_size=16, lstm_size=16)
    logits = [torch.zeros(3, k) for k in MIDRANGE_NVEC]
    expected = sum(math.log(k) for k in MIDRANGE_NVEC)
    torch.testing.assert_close(policy.entropy(logits), torch.full((3,), expected))


def test_a_saved_policy_loads_frozen_with_the_same_outputs(tmp_path) -> None:
    policy = make_policy(hidden_size=16, lstm_size=16)
    path = save_policy_snapshot(policy, tmp_path / "snap.pt")
    frozen = load_policy(path)
    assert frozen.spec == policy.spec
    assert not any(p.requires_grad for p in frozen.parameters())
    obs, start = torch.randn(3, MIDRANGE_OBS), torch.ones(3, dtype=torch.bool)
    with torch.no_grad():
        torch.testing.assert_close(
            frozen.forward_step(obs, frozen.initial_state(3), start)[1],
            policy.forward_step(obs, policy.initial_state(3), start)[1],
        )


def test_loading_a_missing_policy_file_names_the_path(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_policy(tmp_path / "nope.pt")


def test_loading_a_corrupted_policy_file_names_the_path(tmp_path) -> None:
    path = tmp_path / "broken.pt"
    path.write_bytes(b"not a torch file at all")
    with pytest.raises(ValueError, match="broken.pt"):
        load_policy(path)


def test_a_fresh_policy_acts_with_its_action_prior():
    prior = [[0.2, 0.2, 0.2, 0.2, 0.2], [0.2, 0.2, 0.6], [0.97, 0.03]]
    torch.manual_seed(0)
    policy = Policy(11, [5, 3, 2], action_prior=prior)
    obs = torch.randn(256, 11)
    with torch.no_grad():
        logits, _, _ = policy.forward_step(obs, policy.initial_state(256), torch.ones(256, dtype=torch.bool))
    for head, probs in zip(logits, prior, strict=True):
        torch.testing.assert_close(head.softmax(-1).mean(0), torch.tensor(probs), atol=0.01, rtol=0)
    assert "action_prior" not in policy.spec  # an initialisation, not part of the architecture


@pytest.mark.parametrize("prior", [
    [[0.5, 0.5]],  # one head for three
    [[0.2] * 5, [0.5, 0.5], [0.5, 0.5]],  # wrong size
    [[0.2] * 5, [0.2, 0.2, 0.6], [1.0, 0.0]],  # a zero probability
    [[0.2] * 5, [0.2, 0.2, 0.7], [0.5, 0.5]],  # does not sum to 1
])
def test_a_malformed_action_prior_is_refused(prior):
    with pytest.raises(ValueError, match="action_prior"):
        Policy(11, [5, 3, 2], action_prior=prior)


def test_a_shot_down_fighters_zeroed_row_still_samples_an_action_the_game_accepts() -> None:
    # In a team match a fighter shot down keeps its row, all zeros, legal-action flags included,
    # until the match ends. Such a row carries no mask: masking all of it would leave the heads'
    # padding to sample, values the core refuses (the 2v2 run of 2026-11-27 stopped on one). Live
    # rows keep their mask: "fire" is never drawn where its flag is 0.
    env = arena.make("midrange", num_envs=32, num_threads=2, seed=5, team_sizes=(2, 2))
    mask = spec("midrange").action_mask(env.params, env.team_sizes)
    torch.manual_seed(0)
    policy = Policy(env.obs_dim, [5, 3, 2], 16, 16, action_mask=mask)
    with torch.no_grad():  # a policy that wants to fire everywhere, legal or not
        policy.actor.bias[-1] = 20.0
    state, start = policy.initial_state(env.num_agents), torch.ones(env.num_agents)
    generator = torch.Generator().manual_seed(1)
    dead_rows = refused_fires = 0
    for _ in range(400):
        obs = torch.from_numpy(env.observations.copy())
        with torch.no_grad():
            logits, _, state = policy.forward_step(obs, state, start)
            actions, _ = policy.sample_actions(logits, generator)
        zeroed = ~obs.any(dim=1)
        live_illegal = ~zeroed & (obs[:, mask[1] - 1] < 0.5)
        dead_rows += int(zeroed.sum())
        refused_fires += int(live_illegal.sum())
        assert not actions[live_illegal, 2].any(), "fire drawn where the live row's flag says illegal"
        _, _, _, _, infos = env.step(actions.numpy().astype(np.int32))  # the core checks the ranges
        start = torch.from_numpy(infos["done"].repeat(env.num_agents // env.num_envs)).float()
    assert dead_rows > 100 and refused_fires > 1000, (dead_rows, refused_fires)


def test_a_policy_loaded_from_a_payload_draws_nothing_from_torchs_generator():
    policy = Policy(obs_dim=12, action_nvec=[3, 2], hidden_size=16, lstm_size=8, team_critic=True)
    payload = {"policy_spec": policy.spec, "policy": policy.state_dict()}
    torch.manual_seed(5)
    expected = torch.rand(4)
    torch.manual_seed(5)
    loaded = policy_from_payload(payload)
    assert torch.equal(torch.rand(4), expected)  # no initial weights were drawn, only to be overwritten
    for (name, a), (_, b) in zip(policy.state_dict().items(), loaded.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
