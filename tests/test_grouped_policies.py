"""Frozen opponents stepped together from a bank of stacked weights act exactly as each would alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arena
from arena.agents.grouped import PolicyBank, plan_passes
from arena.agents.policy import Policy
from arena.trainer.opponents import Opponents


def frozen(seed: int, obs_dim: int = 11, **sizes: int) -> Policy:
    torch.manual_seed(seed)
    policy = Policy(obs_dim, [5, 3, 2], **({"hidden_size": 16, "lstm_size": 8} | sizes))
    with torch.no_grad():  # non-zero biases, so that a wrong bias would show
        for p in policy.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return policy.eval().requires_grad_(False)


def bank_of(policies: dict[int, Policy]) -> PolicyBank:
    bank = PolicyBank(next(iter(policies.values())), capacity=2)  # small: it must grow
    for player, policy in policies.items():
        bank.put(player, policy)
    return bank


def assert_bank_step_equals_own_steps(policies: dict[int, Policy], in_play: list[int], counts: list[int],
                                      seed: int) -> None:
    """A bank of ``policies`` steps ``counts[k]`` rows of player ``in_play[k]`` (random observations,
    states and episode starts) as each policy's own ``forward_step`` steps them."""
    bank = bank_of(policies)
    edges = np.cumsum([0] + counts).tolist()
    bounds = list(zip(edges[:-1], edges[1:], strict=True))
    n = edges[-1]
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, 11, generator=g)
    h, c = torch.randn(n, 8, generator=g), torch.randn(n, 8, generator=g)
    starts = torch.rand(n, generator=g) < 0.3
    with torch.inference_mode():
        logits, (h_new, c_new) = bank.forward_step(in_play, bounds, obs, (h, c), starts)
        for player, (lo, hi) in zip(in_play, bounds, strict=True):
            own_logits, _, (own_h, own_c) = policies[player].forward_step(obs[lo:hi], (h[lo:hi], c[lo:hi]),
                                                                          starts[lo:hi])
            torch.testing.assert_close(logits[lo:hi], torch.cat(own_logits, dim=-1), rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(h_new[lo:hi], own_h, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(c_new[lo:hi], own_c, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_play", [[0, 1, 2, 3, 4, 5], [4, 1]])  # the whole stack; a gathered few
def test_a_bank_step_equals_each_policys_own_forward_step_on_its_rows(in_play):
    policies = {k: frozen(k, encoder_layers=2) for k in range(6)}
    assert_bank_step_equals_own_steps(policies, in_play, [3, 0, 7, 1, 2, 4][: len(in_play)], seed=0)


def test_a_bank_step_with_a_few_crowded_players_equals_each_policys_own_forward_step():
    # Most players hold one row and two hold many: the rows are stepped in several padded passes
    # (the crowded players' later rows with their weights gathered), each row exactly once.
    counts = [1, 1, 700, 1, 0, 1, 300, 1, 2, 1, 1, 1]
    assert len(plan_passes(np.array(counts))) == 3
    policies = {k: frozen(k) for k in range(len(counts))}
    assert_bank_step_equals_own_steps(policies, list(policies), counts, seed=1)


@pytest.mark.parametrize("counts", [[3, 0, 7, 1, 2, 4], [1] * 40 + [600, 300], [1] * 8 + [700, 2, 300],
                                    [5] * 10, [0, 0], [12]])
def test_the_pass_plan_covers_each_players_rows_once_and_never_pads_more_than_one_batch(counts):
    counts = np.array(counts)
    covered = np.zeros(len(counts), dtype=int)
    padded = 0
    for members, skip, width in plan_passes(counts):
        assert width > 0 and len(members) > 0
        assert (covered[members] == skip).all()  # a pass goes on where the last one stopped
        covered[members] += np.minimum(counts[members] - skip, width)
        padded += len(members) * width
    assert (covered == counts).all()
    assert padded <= len(counts) * counts.max()


def test_a_slot_put_again_takes_the_new_weights_and_a_dropped_slot_is_reused():
    bank = bank_of({0: frozen(0), 1: frozen(1)})
    obs, state = torch.randn(2, 11), (torch.zeros(2, 8), torch.zeros(2, 8))
    starts = torch.ones(2, dtype=torch.bool)
    replacement = frozen(7)
    bank.put(1, replacement)
    with torch.inference_mode():
        logits, _ = bank.forward_step([1], [(0, 2)], obs, state, starts)
        expected = torch.cat(replacement.forward_step(obs, state, starts)[0], dim=-1)
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    slot = bank.slot_of[0]
    bank.drop(0)
    bank.put(5, frozen(5))
    assert bank.slot_of[5] == slot


def test_bank_misuse_is_refused_by_name():
    bank = bank_of({0: frozen(0)})
    obs, state = torch.zeros(3, 11), (torch.zeros(3, 8), torch.zeros(3, 8))
    starts = torch.zeros(3, dtype=torch.bool)
    with pytest.raises(ValueError, match="architecture"):
        bank.put(1, frozen(1, hidden_size=32))
    with pytest.raises(ValueError, match=r"players \[9\] have no weights"):
        bank.forward_step([9], [(0, 3)], obs, state, starts)
    for bounds in ([(0, 1)], [(0, 1), (2, 3)], [(1, 3)], [(0, 2), (1, 3)]):
        with pytest.raises(ValueError, match="must tile rows"):
            bank.forward_step([0] * len(bounds), bounds, obs, state, starts)


def one_by_one(policies: dict[int, Policy], player_of_row: np.ndarray, obs: torch.Tensor,
               state: tuple[torch.Tensor, torch.Tensor], starts: torch.Tensor,
               noise: torch.Tensor) -> torch.Tensor:
    """The reference: each player's own forward pass and sampling on its rows (with each row's
    uniform numbers of the step), in player order."""
    actions = torch.full((len(obs), 3), -1, dtype=torch.int64)
    for p in sorted(policies):
        rows = torch.from_numpy(np.flatnonzero(player_of_row == p))
        if not len(rows):
            continue
        row_state = (state[0][rows], state[1][rows])
        logits, _, (h, c) = policies[p].forward_step(obs[rows], row_state, starts[rows])
        state[0][rows], state[1][rows] = h, c
        actions[rows] = policies[p].sample_actions(logits, noise=noise[rows])[0]
    return actions


def test_league_opponents_take_the_actions_each_frozen_player_would_take_alone():
    """Real midrange observations from the compiled core, 12 frozen players plus mirror envs, three
    decisions (LSTM states carried): the grouped path draws the same actions as each player's own
    forward pass and sampling with the same uniform numbers."""
    num_envs = 48
    env = arena.make("midrange", num_envs=num_envs, seed=3)
    obs_np, _ = env.reset(seed=3)
    obs_dim = obs_np.shape[1]
    policies = {k + 1: frozen(100 + k, obs_dim=obs_dim, hidden_size=32, lstm_size=16) for k in range(12)}
    opp = Opponents(num_envs=num_envs, team_sizes=(1, 1), game="midrange")
    for index, policy in policies.items():
        opp.add_player(f"snap-{index}", policy)
    rng = np.random.default_rng(0)
    names = ["mirror"] + [f"snap-{k}" for k in policies]
    opp.set_assignment(np.arange(num_envs), [names[i] for i in rng.integers(0, len(names), num_envs)])
    player_of_row = np.where(opp.learner_row_mask, 0, np.repeat(opp.player_of_env, 2))
    reference_state = (torch.zeros(2 * num_envs, 16), torch.zeros(2 * num_envs, 16))
    generator = torch.Generator().manual_seed(7)
    starts = torch.ones(2 * num_envs, dtype=torch.bool)
    for _ in range(3):
        obs = torch.from_numpy(obs_np.copy())
        actions = torch.full((2 * num_envs, 3), -1, dtype=torch.int64)
        noise = torch.rand(2 * num_envs, 3, generator=generator)
        with torch.inference_mode():
            opp.act(opp.groups(0, num_envs), obs_np, obs, starts, actions, noise)
            expected = one_by_one(policies, player_of_row, obs, reference_state, starts, noise)
        assert torch.equal(actions, expected)
        assert (actions[~torch.from_numpy(opp.learner_row_mask)] >= 0).all()
        step_actions = np.where(actions.numpy() < 0, 0, actions.numpy()).astype(np.int32)
        obs_np = env.step(step_actions)[0]
        starts = torch.zeros(2 * num_envs, dtype=torch.bool)
    env.close()
