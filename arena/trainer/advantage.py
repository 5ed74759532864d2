"""Generalised advantage estimation over ``[rows, T]`` experience, vectorised across rows.

Episode ends are of two kinds. A terminal cuts the return: nothing follows. A truncation (a time
limit) also ends the episode in the buffer, but the game would have gone on, so the step bootstraps
from the critic's value of the final observation (``final_values``, computed by the rollout with
the row's LSTM state before the reset). Steps that were not played by the learner
(``learner_mask`` false) get a zero advantage and cut the recursion.
"""

from __future__ import annotations

import torch
from torch import Tensor


def compute_gae(
    rewards: Tensor,
    values: Tensor,
    terminals: Tensor,
    truncations: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    gamma: float,
    gae_lambda: float,
    learner_mask: Tensor | None = None,
    next_mask: Tensor | None = None,
) -> Tensor:
    """Advantages ``[rows, T]``; returns (value targets) are ``advantages + values``.

    ``rewards, values, terminals, truncations, final_values, learner_mask`` are ``[rows, T]``;
    step ``t``'s flags say the episode ended at that step. ``next_value`` ``[rows]`` is the value of
    the observation after the last step (the bootstrap at the end of the rollout), ``next_mask``
    whether the learner plays that observation.
    """
    rows, steps = rewards.shape
    dtype = values.dtype
    terminals, truncations = terminals.bool(), truncations.bool()
    if learner_mask is None:
        learner_mask = torch.ones(rows, steps, dtype=torch.bool, device=values.device)
    if next_mask is None:
        next_mask = learner_mask[:, -1]
    mask = learner_mask.bool()
    next_values = torch.cat([values[:, 1:], next_value.reshape(rows, 1).to(dtype)], dim=1)
    following_mask = torch.cat([mask[:, 1:], next_mask.reshape(rows, 1).bool()], dim=1)
    bootstrap = torch.where(truncations, final_values.to(dtype), next_values)
    bootstrap = torch.where(terminals & ~truncations, torch.zeros_like(bootstrap), bootstrap)
    deltas = (rewards.to(dtype) + gamma * bootstrap - values) * mask
    # the recursion continues only inside one learner-played episode
    carry = (gamma * gae_lambda) * ((~(terminals | truncations)) & following_mask & mask).to(dtype)
    advantages = torch.empty_like(deltas)
    last = torch.zeros(rows, dtype=dtype, device=values.device)
    for t in range(steps - 1, -1, -1):
        last = torch.addcmul(deltas[:, t], carry[:, t], last)
        advantages[:, t] = last
    return advantages
