"""The rollout buffer: step-major ``[T, rows]`` tensors, cut into segments of ``bptt_horizon`` steps of
one row for training.

Step-major, so that storing one step of every row is a contiguous write (the rollout's hot path); a
minibatch gathers its segments ``[segments, bptt_horizon, ...]`` with one indexing op per field.

Every row of the env has a lane, learner or not: ``learner_mask`` says, per (row, step), whether the
learner played it (team 0 always; team 1 in mirror self-play). Training uses only segments holding at
least one learner step and weights each step by the mask, so an env that switches between mirror and
another opponent at an episode end needs no special case. The LSTM state at each segment start is
stored, so training replays exactly the states the rollout saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor


@dataclass
class Minibatch:
    """Whole segments: every tensor is ``[segments, bptt_horizon, ...]`` except the states."""

    obs: Tensor
    actions: Tensor
    logprobs: Tensor
    values: Tensor
    advantages: Tensor
    returns: Tensor
    episode_starts: Tensor
    learner_mask: Tensor
    state: tuple[Tensor, Tensor]  # LSTM (h, c) at each segment's start, [segments, lstm_size]
    teacher_actions: Tensor | None = None  # a kickstarting teacher's actions, when there is one
    value_class: Tensor | None = None  # each step's opponent class, the critic's head (int64)
    team: Tensor | None = None  # a team critic's label of each segment: teammates' segments share one


def team_labels(row: Tensor, team_of_slot: Tensor) -> Tensor:
    """A team critic's label of each row (``env * 2 + team``; rows come one env after another, each
    env's fighter slots belonging to ``team_of_slot``): teammates share one, and labels are < the
    rows counted. The rollout labels its rows with it, the buffer its segments."""
    a = len(team_of_slot)
    return row // a * 2 + team_of_slot[row % a]


class Experience:
    """Preallocated storage for one rollout of ``rollout_steps`` steps of every row.

    Segment ``id = j * rows + r`` is steps ``[j * bptt_horizon, (j + 1) * bptt_horizon)`` of row ``r``.
    """

    def __init__(
        self,
        rows: int,
        rollout_steps: int,
        bptt_horizon: int,
        obs_dim: int,
        action_dims: int,
        lstm_size: int,
        device: torch.device | str = "cpu",
        team_of_slot: np.ndarray | None = None,
    ) -> None:
        """``team_of_slot`` (for a team critic: the team, 0 or 1, of each fighter slot of an env, whose
        rows come one env after another): a minibatch then holds whole teams, every segment of a team's
        rows over the same steps, and each segment carries its team's label (``Minibatch.team``)."""
        if rollout_steps % bptt_horizon:
            raise ValueError(
                f"rollout_steps={rollout_steps} must be a multiple of bptt_horizon={bptt_horizon}"
            )
        self.rows, self.steps, self.horizon = rows, rollout_steps, bptt_horizon
        self.segments_per_row = rollout_steps // bptt_horizon
        shape = (rollout_steps, rows)

        def zeros(*extra: int, dtype: torch.dtype = torch.float32) -> Tensor:
            return torch.zeros(*shape, *extra, dtype=dtype, device=device)

        self.obs = zeros(obs_dim)
        self.actions = zeros(action_dims, dtype=torch.int64)
        self.logprobs = zeros()
        self.values = zeros()
        self.rewards = zeros()
        self.final_values = zeros()  # value of the final observation, on truncated steps only
        self.terminals = zeros(dtype=torch.bool)
        self.truncations = zeros(dtype=torch.bool)
        self.episode_starts = zeros(dtype=torch.bool)
        self.learner_mask = zeros(dtype=torch.bool)
        self.value_class = zeros(dtype=torch.int64)  # the class of each row's opponent (Policy._value)
        # LSTM state at each segment start, [segments_per_row, rows, lstm_size]
        self.state_h = torch.zeros(self.segments_per_row, rows, lstm_size, device=device)
        self.state_c = torch.zeros(self.segments_per_row, rows, lstm_size, device=device)
        self.next_value = torch.zeros(rows, device=device)  # bootstrap after the last step
        self.next_mask = torch.zeros(rows, dtype=torch.bool, device=device)
        self.team_of_slot = (None if team_of_slot is None
                             else torch.as_tensor(np.asarray(team_of_slot, dtype=np.int64), device=device))
        if self.team_of_slot is not None and rows % len(self.team_of_slot):
            raise ValueError(f"{rows} rows are not whole envs of {len(self.team_of_slot)} fighters")

    @property
    def num_segments(self) -> int:
        return self.rows * self.segments_per_row

    def clear_step_outputs(self) -> None:
        """Before a rollout: fields written only on some steps must not keep old values."""
        self.final_values.zero_()
        self.logprobs.zero_()
        self.values.zero_()

    def learner_samples(self) -> int:
        return int(self.learner_mask.sum())

    def segment_has_learner(self) -> Tensor:
        """``[segments_per_row, rows]``: whether each segment holds a learner step."""
        return self.learner_mask.view(self.segments_per_row, self.horizon, self.rows).any(dim=1)

    def learner_segments(self, has_learner: Tensor | None = None) -> Tensor:
        """Ids of the segments with at least one learner step; with ``has_learner`` (a
        ``segment_has_learner()`` of more rows: every rank's, side by side), ids among those rows."""
        if has_learner is None:
            has_learner = self.segment_has_learner()
        if bool(has_learner.all()):
            return torch.arange(has_learner.numel(), device=has_learner.device)
        return has_learner.reshape(-1).nonzero().squeeze(1)

    def minibatches(
        self,
        advantages: Tensor,
        returns: Tensor,
        segment_ids: Tensor,
        segments_per_minibatch: int,
        rng: np.random.Generator,
        teacher_actions: Tensor | None = None,
        shard_rows: tuple[int, int] | None = None,
    ) -> Iterator[Minibatch]:
        """One pass over ``segment_ids`` in a random order, in minibatches of whole segments.

        ``shard_rows=(first, total)``: the ids are a data-parallel run's (rows ``[0, total)``, this
        buffer holding rows ``[first, first + rows)``); each minibatch is the run's, of which this
        buffer yields the segments it holds. A minibatch that holds none here yields one segment
        with no learner step (weight 0), so that every rank takes part in every update."""
        for ids in self._shuffled(segment_ids, segments_per_minibatch, rng, shard_rows):
            if shard_rows is None:
                yield self.gather(ids, advantages, returns, teacher_actions)
                continue
            first, total = shard_rows
            block, row = ids // total, ids % total - first
            here = (row >= 0) & (row < self.rows)
            if bool(here.any()):
                yield self.gather(block[here] * self.rows + row[here], advantages, returns, teacher_actions)
            else:
                mb = self.gather(ids[:1] * 0, advantages, returns, teacher_actions)
                mb.learner_mask = torch.zeros_like(mb.learner_mask)
                yield mb

    def _shuffled(
        self, segment_ids: Tensor, per_minibatch: int, rng: np.random.Generator,
        shard_rows: tuple[int, int] | None,
    ) -> Iterator[Tensor]:
        """``segment_ids`` in a random order, cut into minibatches of ``per_minibatch``. With a team
        critic, teams are shuffled instead: the segments of a team's rows over one block of steps stay
        together, in the minibatch where the team starts (so a minibatch may run over by part of a team)."""
        if self.team_of_slot is None:
            order = torch.from_numpy(rng.permutation(len(segment_ids))).to(segment_ids.device)
            shuffled = segment_ids[order]
            for begin in range(0, len(shuffled), per_minibatch):
                yield shuffled[begin : begin + per_minibatch]
            return
        total = self.rows if shard_rows is None else shard_rows[1]
        block, row = segment_ids // total, segment_ids % total
        key = block * (2 * total) + team_labels(row, self.team_of_slot)
        keys, group = torch.unique(key, return_inverse=True)
        groups = keys.numel()
        rank = torch.from_numpy(rng.permutation(groups)).to(segment_ids.device)[group]
        rank, order = torch.sort(rank, stable=True)
        shuffled = segment_ids[order]
        sizes = torch.bincount(rank, minlength=groups)
        first_of_group = torch.cumsum(sizes, 0) - sizes
        per_batch = torch.bincount(first_of_group // per_minibatch, weights=sizes.to(torch.float64))
        yield from shuffled.split([int(n) for n in per_batch.tolist() if n > 0])

    def gather(
        self, ids: Tensor, advantages: Tensor, returns: Tensor, teacher_actions: Tensor | None = None
    ) -> Minibatch:
        """Segments ``ids`` of every field (and of ``advantages``/``returns``/``teacher_actions``,
        shaped like the buffer)."""
        block, row = ids // self.rows, ids % self.rows

        def pick(x: Tensor) -> Tensor:
            return x.view(self.segments_per_row, self.horizon, self.rows, *x.shape[2:])[block, :, row]

        return Minibatch(
            obs=pick(self.obs),
            actions=pick(self.actions),
            logprobs=pick(self.logprobs),
            values=pick(self.values),
            advantages=pick(advantages),
            returns=pick(returns),
            episode_starts=pick(self.episode_starts),
            learner_mask=pick(self.learner_mask),
            state=(self.state_h[block, row], self.state_c[block, row]),
            teacher_actions=None if teacher_actions is None else pick(teacher_actions),
            value_class=pick(self.value_class),
            team=None if self.team_of_slot is None
            else block * (2 * self.rows) + team_labels(row, self.team_of_slot),
        )

    def row_major(self, x: Tensor) -> Tensor:
        """A ``[T, rows, ...]`` field seen as ``[rows, T, ...]`` (a view, for inspection)."""
        return x.transpose(0, 1)
