"""GAE: bootstraps truncations from the final observation's value, cuts at terminals and masks."""

from __future__ import annotations

import torch

from arena.trainer.advantage import compute_gae

GAMMA, LAM = 0.9, 0.8


def flags(*steps: int, length: int = 5) -> torch.Tensor:
    out = torch.zeros(1, length, dtype=torch.bool)
    out[0, list(steps)] = True
    return out


def test_gae_matches_a_hand_computed_case_with_a_terminal_and_a_truncation() -> None:
    rewards = torch.tensor([[1.0, 0.0, 2.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 1.0, 1.5, 0.2, 0.3]])
    final_values = torch.tensor([[0.0, 0.0, 0.0, 2.0, 0.0]])  # the truncated step's final obs is worth 2
    adv = compute_gae(
        rewards, values, terminals=flags(1), truncations=flags(3), final_values=final_values,
        next_value=torch.tensor([0.7]), gamma=GAMMA, gae_lambda=LAM,
    )
    # t=4: 1 + .9*.7 - .3 = 1.33                     (bootstrap from the value after the rollout)
    # t=3: 0 + .9*2.0 - .2 = 1.6, no carry           (truncation: bootstrap from the final obs)
    # t=2: 2 + .9*.2 - 1.5 = .68, + .72*1.6 = 1.832
    # t=1: 0 - 1.0 = -1.0, no carry                  (terminal: nothing follows)
    # t=0: 1 + .9*1.0 - .5 = 1.4, + .72*(-1.0) = .68
    torch.testing.assert_close(adv, torch.tensor([[0.68, -1.0, 1.832, 1.6, 1.33]]))


def test_gae_without_episode_ends_is_the_discounted_sum_of_td_errors() -> None:
    rewards, values = torch.tensor([[1.0, 1.0]]), torch.tensor([[0.0, 0.0]])
    none = torch.zeros(1, 2, dtype=torch.bool)
    adv = compute_gae(rewards, values, none, none, torch.zeros(1, 2), torch.tensor([1.0]), GAMMA, LAM)
    torch.testing.assert_close(adv, torch.tensor([[1.0 + 0.72 * 1.9, 1.9]]))


def test_steps_the_learner_did_not_play_get_no_advantage_and_do_not_leak_into_earlier_steps() -> None:
    rewards = torch.tensor([[1.0, 1.0, 1.0, 5.0, 5.0]])
    values = torch.zeros(1, 5)
    mask = torch.tensor([[True, True, True, False, False]])  # a scripted opponent after step 2's end
    adv = compute_gae(
        rewards, values, terminals=flags(2), truncations=flags(), final_values=torch.zeros(1, 5),
        next_value=torch.tensor([9.0]), gamma=GAMMA, gae_lambda=LAM, learner_mask=mask,
        next_mask=torch.tensor([False]),
    )
    assert adv[0, 3] == 0 and adv[0, 4] == 0
    torch.testing.assert_close(adv[0, 2], torch.tensor(1.0))
    torch.testing.assert_close(adv[0, 1], torch.tensor(1.0 + 0.72 * 1.0))


def test_gae_treats_every_row_independently() -> None:
    rewards = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    values = torch.tensor([[0.2, 0.1], [0.3, 0.4]])
    terminals = torch.tensor([[False, True], [False, False]])
    none = torch.zeros(2, 2, dtype=torch.bool)
    next_value = torch.tensor([5.0, 0.5])
    both = compute_gae(rewards, values, terminals, none, torch.zeros(2, 2), next_value, GAMMA, LAM)
    for r in range(2):
        one = compute_gae(
            rewards[r : r + 1], values[r : r + 1], terminals[r : r + 1], none[r : r + 1],
            torch.zeros(1, 2), torch.tensor([[5.0, 0.5][r]]), GAMMA, LAM,
        )
        torch.testing.assert_close(both[r : r + 1], one)
