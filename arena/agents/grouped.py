"""Many frozen policies of one architecture stepped as one batch: the league's opponents.

A step of a league run holds the opponent rows of dozens of frozen players, a few rows each.
Stepping each player with its own ``forward_step`` (gather its rows and LSTM states, ~30 small
torch calls, scatter back) makes the per-call cost, not the arithmetic, the price of a sample, and
that price grows with the pool. Here the caller sorts the rows by player, so each player's rows
are one contiguous segment: per player only its three matrix products remain (encoder, LSTM
gates, actor heads), each written into its slice of a shared output; state masking, the gate
nonlinearities and the critic-free head run once over every row. The arithmetic is that of each
player's own ``forward_step`` on its rows (``tests/test_grouped_policies.py`` pins this).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from arena.agents.policy import LstmState, Policy, lstm_cell_from_gates, lstm_input

ArchitectureKey = tuple[int, tuple[int, ...], int, int, int]


def architecture_key(policy: Policy) -> ArchitectureKey:
    """Policies with equal keys can be stepped together (same shapes everywhere)."""
    return (policy.obs_dim, tuple(policy.action_nvec), policy.hidden_size, policy.lstm_size,
            policy.encoder_layers)


def grouped_forward_step(
    policies: Sequence[Policy],
    bounds: Sequence[tuple[int, int]],
    obs: Tensor,
    state: LstmState,
    episode_start: Tensor,
) -> tuple[Tensor, LstmState]:
    """One decision of ``policies[k]`` for rows ``bounds[k] = (lo, hi)`` of ``obs``, for every k.

    The segments tile the rows in order: ``bounds[0][0] == 0``, each ``hi`` is the next ``lo``,
    the last ``hi == n``. Returns the heads' logits concatenated (``[n, sum(action_nvec)]``, what
    ``sample_actions`` takes) and the new LSTM state of every row. Inference only: call it with
    autograd off.
    """
    if len(policies) != len(bounds):
        raise ValueError(f"{len(policies)} policies for {len(bounds)} row segments")
    if not policies:
        raise ValueError("grouped_forward_step needs at least one policy")
    n = obs.shape[0]
    tiled = bounds[0][0] == 0 and bounds[-1][1] == n and all(lo <= hi for lo, hi in bounds)
    if not tiled or any(prev[1] != nxt[0] for prev, nxt in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"row segments {list(bounds)} must tile rows [0, {n}) in order")
    key = architecture_key(policies[0])
    for policy in policies[1:]:
        if architecture_key(policy) != key:
            raise ValueError(f"policies of different architectures cannot be grouped: {key} and "
                             f"{architecture_key(policy)}")
    keep = (~episode_start.bool()).unsqueeze(-1).to(obs.dtype)
    h, c = state[0] * keep, state[1] * keep
    encoders = [policy.encoder_linears() for policy in policies]
    x = obs
    for layer in range(len(encoders[0])):
        out = obs.new_empty(n, policies[0].hidden_size)
        for linears, (lo, hi) in zip(encoders, bounds, strict=True):
            torch.addmm(linears[layer].bias, x[lo:hi], linears[layer].weight.t(), out=out[lo:hi])
        x = out.relu_()
    joined = lstm_input(x, h)
    gates = obs.new_empty(n, 4 * policies[0].lstm_size)
    for policy, (lo, hi) in zip(policies, bounds, strict=True):
        torch.mm(joined[lo:hi], policy.fused_lstm_weight(), out=gates[lo:hi])
    h, c = lstm_cell_from_gates(gates, c)
    logits = obs.new_empty(n, sum(policies[0].action_nvec))
    for policy, (lo, hi) in zip(policies, bounds, strict=True):
        torch.addmm(policy.actor.bias, h[lo:hi], policy.actor.weight.t(), out=logits[lo:hi])
    return logits, (h, c)
