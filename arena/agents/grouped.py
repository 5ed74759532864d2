"""Many frozen policies of one architecture stepped together: the league's opponents.

A step of a league run holds the opponent rows of dozens of frozen players, a few rows each.
Stepping each player with its own ``forward_step`` costs ~30 small torch calls per player, and
even one matrix product per player and layer is slow: a player's LSTM weights (~0.5 MB) are
streamed from memory for a handful of rows, by a GEMM kernel built for tall matrices. So a
``PolicyBank`` keeps the weights of every resident player stacked, one slot each, and steps the
rows of all of them with one batched matrix product per layer (``torch.bmm`` over players, each
player's rows padded to the longest group). Padding costs little: the weights, not the rows, are
the traffic. State masking, the gate nonlinearities and the heads' layout are those of
``Policy.forward_step``; ``tests/test_grouped_policies.py`` pins the results to each player's own
forward pass.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from arena.agents.policy import LstmState, Policy, fuse_lstm_weights, lstm_cell_from_gates

ArchitectureKey = tuple[int, tuple[int, ...], int, int, int]


def architecture_key(policy: Policy) -> ArchitectureKey:
    """Policies with equal keys can be stepped together (same shapes everywhere)."""
    return (policy.obs_dim, tuple(policy.action_nvec), policy.hidden_size, policy.lstm_size,
            policy.encoder_layers)


class PolicyBank:
    """Stacked weights of frozen policies of one architecture, one slot per player id.

    ``put`` copies a policy's weights into its slot (again after the policy's weights changed);
    ``drop`` frees the slot. The lowest free slot is taken first and storage grows by a quarter, so
    the slots in use stay packed at the front and bounded by the players resident at once: a step
    streams the weights of ``[0, highest slot in play]`` (memory traffic is its cost).
    """

    def __init__(self, like: Policy, device: torch.device | str = "cpu", capacity: int = 8) -> None:
        self.key = architecture_key(like)
        self.device = torch.device(device)
        obs_dim, nvec, hidden, lstm, layers = self.key
        widths = [obs_dim] + [hidden] * layers
        shapes = {
            **{f"enc{i}_w": (widths[i], hidden) for i in range(layers)},
            **{f"enc{i}_b": (1, hidden) for i in range(layers)},
            "lstm_w": (hidden + lstm + 1, 4 * lstm),
            "actor_w": (lstm, sum(nvec)),
            "actor_b": (1, sum(nvec)),
        }
        self.layers = layers
        self.stacks = {name: torch.zeros(capacity, *shape, device=self.device)
                       for name, shape in shapes.items()}
        self.slot_of: dict[int, int] = {}
        self._free: list[int] = list(range(capacity))  # a heap: the lowest free slot first

    @property
    def capacity(self) -> int:
        return int(self.stacks["lstm_w"].shape[0])

    def put(self, player: int, policy: Policy) -> None:
        if architecture_key(policy) != self.key:
            raise ValueError(f"policy of architecture {architecture_key(policy)} in a bank of {self.key}")
        if player not in self.slot_of:
            if not self._free:
                self._grow()
            self.slot_of[player] = heapq.heappop(self._free)
        slot = self.slot_of[player]
        with torch.no_grad():
            for i, linear in enumerate(policy.encoder_linears()):
                self.stacks[f"enc{i}_w"][slot].copy_(linear.weight.t())
                self.stacks[f"enc{i}_b"][slot, 0].copy_(linear.bias)
            self.stacks["lstm_w"][slot].copy_(fuse_lstm_weights(policy.lstm))
            self.stacks["actor_w"][slot].copy_(policy.actor.weight.t())
            self.stacks["actor_b"][slot, 0].copy_(policy.actor.bias)

    def drop(self, player: int) -> None:
        slot = self.slot_of.pop(player, None)
        if slot is not None:
            heapq.heappush(self._free, slot)

    def _grow(self) -> None:
        old = self.capacity
        extra = max(8, old // 4)
        self.stacks = {name: torch.cat([stack, stack.new_zeros(extra, *stack.shape[1:])])
                       for name, stack in self.stacks.items()}
        self._free = list(range(old, old + extra))

    def forward_step(
        self,
        players: Sequence[int],
        bounds: Sequence[tuple[int, int]],
        obs: Tensor,
        state: LstmState,
        episode_start: Tensor,
    ) -> tuple[Tensor, LstmState]:
        """One decision of player ``players[k]`` for rows ``bounds[k] = (lo, hi)`` of ``obs``.

        The segments tile the rows in order (``bounds[0][0] == 0``, each ``hi`` the next ``lo``,
        the last ``hi == n``). Returns the heads' logits concatenated (``[n, sum(action_nvec)]``,
        what ``Policy.sample_actions`` takes) and every row's new LSTM state. Inference only.
        """
        n = obs.shape[0]
        _check_tiling(bounds, n)
        if len(players) != len(bounds):
            raise ValueError(f"{len(players)} players for {len(bounds)} row segments")
        missing = [p for p in players if p not in self.slot_of]
        if missing:
            raise ValueError(f"players {missing} have no weights in this bank")
        slots = np.array([self.slot_of[p] for p in players], dtype=np.int64)
        counts = np.array([hi - lo for lo, hi in bounds], dtype=np.int64)
        width = max(1, int(counts.max()) if len(counts) else 1)
        # Padded layout: batch b holds one player's rows, then zeros. With most slots up to the
        # highest in play in use, that prefix of the stack is used in place (idle slots compute on
        # zeros); otherwise the slots in play are gathered, which copies their weights once.
        high = int(slots.max()) + 1 if len(slots) else 1
        whole = len(slots) * 2 >= high
        batch_of = slots if whole else np.arange(len(slots))
        batches = high if whole else len(slots)
        offsets = np.arange(n) - np.repeat(np.array([lo for lo, _ in bounds], dtype=np.int64), counts)
        position = torch.from_numpy(np.repeat(batch_of, counts) * width + offsets).to(obs.device)
        if whole:
            weights = {name: stack[:high] for name, stack in self.stacks.items()}
        else:
            in_play = torch.from_numpy(slots).to(self.device)
            weights = {name: stack.index_select(0, in_play) for name, stack in self.stacks.items()}

        def pad(x: Tensor) -> Tensor:
            out = x.new_zeros(batches * width, x.shape[1])
            out.index_copy_(0, position, x)
            return out.view(batches, width, x.shape[1])

        keep = (~episode_start.bool()).unsqueeze(-1).to(obs.dtype)
        x = pad(obs)
        for i in range(self.layers):
            x = torch.baddbmm(weights[f"enc{i}_b"], x, weights[f"enc{i}_w"]).relu_()
        h, c = pad(state[0] * keep), pad(state[1] * keep)
        ones = x.new_ones(batches, width, 1)
        gates = torch.bmm(torch.cat([x, h, ones], dim=2), weights["lstm_w"])
        h, c = lstm_cell_from_gates(gates.view(batches * width, -1), c.view(batches * width, -1))
        logits = torch.baddbmm(weights["actor_b"], h.view(batches, width, -1), weights["actor_w"])
        return (logits.view(-1, logits.shape[-1]).index_select(0, position),
                (h.index_select(0, position), c.index_select(0, position)))


def _check_tiling(bounds: Sequence[tuple[int, int]], n: int) -> None:
    ends_ok = bool(bounds) and bounds[0][0] == 0 and bounds[-1][1] == n
    tiled = ends_ok and all(lo <= hi for lo, hi in bounds)
    if not tiled or any(prev[1] != nxt[0] for prev, nxt in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"row segments {list(bounds)} must tile rows [0, {n}) in order")
