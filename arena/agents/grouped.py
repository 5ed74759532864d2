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

from arena.agents.policy import LstmState, Policy, fuse_lstm_weights, lstm_cell_from_gates, masked_logits

ArchitectureKey = tuple[int, tuple[int, ...], int, int, int, tuple[int, int] | None]


def architecture_key(policy: Policy) -> ArchitectureKey:
    """Policies with equal keys can be stepped together (same shapes everywhere, same action mask)."""
    return (policy.obs_dim, tuple(policy.action_nvec), policy.hidden_size, policy.lstm_size,
            policy.encoder_layers, policy.action_mask)


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
        obs_dim, nvec, hidden, lstm, layers, self.action_mask = self.key
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
        firsts = np.array([lo for lo, _ in bounds], dtype=np.int64)
        keep = (~episode_start.bool()).unsqueeze(-1).to(obs.dtype)
        h0, c0 = state[0] * keep, state[1] * keep
        passes = plan_passes(counts)
        if len(passes) == 1:  # every row in one padded product: no gather or scatter of rows
            logits, new_state = self._padded_step(slots, counts, passes[0][2], obs, h0, c0)
            return self._masked(logits, obs), new_state
        logits = obs.new_empty(n, self.stacks["actor_w"].shape[2])
        h_out, c_out = torch.empty_like(h0), torch.empty_like(c0)
        for members, skip, width in passes:
            take = np.minimum(counts[members] - skip, width)
            rows_np = np.repeat(firsts[members] + skip, take) + _offsets(take)
            rows = torch.from_numpy(rows_np).to(obs.device)
            part_logits, (part_h, part_c) = self._padded_step(
                slots[members], take, width, obs.index_select(0, rows), h0.index_select(0, rows),
                c0.index_select(0, rows))
            logits.index_copy_(0, rows, part_logits)
            h_out.index_copy_(0, rows, part_h)
            c_out.index_copy_(0, rows, part_c)
        return self._masked(logits, obs), (h_out, c_out)

    def _masked(self, logits: Tensor, obs: Tensor) -> Tensor:
        """``Policy.mask_logits``: the illegal actions of each row (the mask is the same observation
        columns for every player of the bank: part of its architecture key)."""
        return masked_logits(logits, obs, self.action_mask)

    def _padded_step(
        self, slots: np.ndarray, counts: np.ndarray, width: int, obs: Tensor, h: Tensor, c: Tensor
    ) -> tuple[Tensor, LstmState]:
        """One padded batched step: batch b holds up to ``width`` rows of one player, then zeros.
        ``obs``, ``h`` and ``c`` hold ``counts[k]`` rows of the player in ``slots[k]``, in order.
        With most slots up to the highest in play in use, that prefix of the stack is used in place
        (idle slots compute on zeros); otherwise the slots in play are gathered, which copies their
        weights once."""
        high = int(slots.max()) + 1 if len(slots) else 1
        whole = len(slots) * 2 >= high
        batch_of = slots if whole else np.arange(len(slots))
        batches = high if whole else len(slots)
        width = max(1, width)
        position = torch.from_numpy(np.repeat(batch_of, counts) * width + _offsets(counts)).to(obs.device)
        if whole:
            weights = {name: stack[:high] for name, stack in self.stacks.items()}
        else:
            in_play = torch.from_numpy(slots).to(self.device)
            weights = {name: stack.index_select(0, in_play) for name, stack in self.stacks.items()}

        def pad(x: Tensor) -> Tensor:
            out = x.new_zeros(batches * width, x.shape[1])
            out.index_copy_(0, position, x)
            return out.view(batches, width, x.shape[1])

        x = pad(obs)
        for i in range(self.layers):
            x = torch.baddbmm(weights[f"enc{i}_b"], x, weights[f"enc{i}_w"]).relu_()
        h, c = pad(h), pad(c)
        ones = x.new_ones(batches, width, 1)
        gates = torch.bmm(torch.cat([x, h, ones], dim=2), weights["lstm_w"])
        h, c = lstm_cell_from_gates(gates.view(batches * width, -1), c.view(batches * width, -1))
        logits = torch.baddbmm(weights["actor_b"], h.view(batches, width, -1), weights["actor_w"])
        return (logits.view(-1, logits.shape[-1]).index_select(0, position),
                (h.index_select(0, position), c.index_select(0, position)))


# The cost model of a pass, in padded rows (one padded row costs ~1 us on a 2-core VM): a pass's own
# overhead (the rows' gather and scatter, a dozen more torch calls) and a player's weights copied
# for a later pass. Measured with 50 players of the default architecture.
PASS_COST_ROWS = 300
GATHER_COST_ROWS = 32


def plan_passes(counts: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    """Splits the players' row counts into padded passes ``(members, skip, width)``: pass ``i``
    steps rows ``[skip, skip + width)`` of each member's segment. The first pass holds every player
    (its weights used in place), later ones only the players with rows left (their weights
    gathered). Padding every player to the largest count wastes most of the work when a few players
    have many rows (PFSP's favourites, a scripted-free pool's early snapshots); each pass's width is
    the one that minimises padded rows plus ``GATHER_COST_ROWS`` per player carried to the next."""
    counts = np.asarray(counts, dtype=np.int64)
    members = np.flatnonzero(counts > 0)  # players with no rows take no part
    skip, passes = 0, []
    while len(members):
        left = counts[members] - skip
        top = int(left.max())
        if len(members) * top - int(left.sum()) <= PASS_COST_ROWS:  # padding costs less than a pass
            passes.append((members, skip, top))
            break
        widths = np.unique(left)
        carried = len(left) - np.searchsorted(np.sort(left), widths, side="right")  # players > width
        costs = len(members) * widths + np.where(
            carried > 0, PASS_COST_ROWS + carried * (top - widths + GATHER_COST_ROWS), 0)
        width = int(widths[int(np.argmin(costs))])
        passes.append((members, skip, width))
        members, skip = members[left > width], skip + width
    return passes


def _offsets(counts: np.ndarray) -> np.ndarray:
    """``[0, 1, .., counts[0]-1, 0, 1, .., counts[1]-1, ...]``."""
    total = int(counts.sum())
    return np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)


def _check_tiling(bounds: Sequence[tuple[int, int]], n: int) -> None:
    ends_ok = bool(bounds) and bounds[0][0] == 0 and bounds[-1][1] == n
    tiled = ends_ok and all(lo <= hi for lo, hi in bounds)
    if not tiled or any(prev[1] != nxt[0] for prev, nxt in zip(bounds, bounds[1:], strict=False)):
        raise ValueError(f"row segments {list(bounds)} must tile rows [0, {n}) in order")
