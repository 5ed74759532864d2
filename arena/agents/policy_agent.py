"""A frozen policy acting for a fixed set of rows: batched, with one LSTM state per row.

The agent owns a state table of ``num_rows`` LSTM states; a caller hands it any subset of those rows
each step (``rows`` are indices into that table, not env rows), so one agent can drive every row a
player controls across many envs while each row keeps its own memory. A row's state is zeroed when
its ``episode_start`` flag is set, exactly as the policy's own ``forward_step`` does in training.
"""

from __future__ import annotations

import numpy as np
import torch

from arena.agents.policy import Policy


class PolicyAgent:
    """``act(obs [n, d], rows [n], episode_start [n]) -> actions int32 [n, dims]``.

    Sampling draws from a ``torch.Generator`` seeded with ``seed``, so a run is reproducible;
    ``deterministic=True`` takes the most likely action of every head instead (argmax).
    """

    def __init__(self, policy: Policy, num_rows: int, deterministic: bool = False, seed: int = 0) -> None:
        if isinstance(num_rows, bool) or not isinstance(num_rows, int | np.integer) or num_rows < 0:
            raise ValueError(f"num_rows={num_rows!r} must be an integer >= 0")
        self.policy = policy.eval()
        self.num_rows = int(num_rows)
        self.deterministic = deterministic
        self.device = policy.actor.weight.device
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))
        with torch.inference_mode():
            self._h, self._c = policy.initial_state(self.num_rows, self.device)

    @property
    def obs_dim(self) -> int:
        return self.policy.obs_dim

    @property
    def action_nvec(self) -> tuple[int, ...]:
        return tuple(self.policy.action_nvec)

    def reset(self) -> None:
        """Zeroes every row's state (a new evaluation from scratch)."""
        with torch.inference_mode():
            self._h.zero_()
            self._c.zero_()

    def act(self, obs: np.ndarray, rows: np.ndarray, episode_start: np.ndarray) -> np.ndarray:
        """One decision for ``rows`` of the state table; their states advance, others stay."""
        obs = np.asarray(obs, dtype=np.float32)
        rows = np.asarray(rows, dtype=np.int64)
        episode_start = np.asarray(episode_start, dtype=bool)
        n = len(rows)
        if obs.ndim != 2 or obs.shape != (n, self.obs_dim) or episode_start.shape != (n,):
            raise ValueError(
                f"act expects obs [n, {self.obs_dim}], rows [n] and episode_start [n]; got obs "
                f"{obs.shape}, rows {rows.shape}, episode_start {episode_start.shape}"
            )
        if n == 0:
            return np.zeros((0, len(self.action_nvec)), dtype=np.int32)
        if rows.min() < 0 or rows.max() >= self.num_rows:
            raise ValueError(f"rows must be indices in [0, {self.num_rows}), got {rows.min()}..{rows.max()}")
        with torch.inference_mode():
            index = torch.from_numpy(rows).to(self.device)
            state = (self._h[index], self._c[index])
            obs_t = torch.from_numpy(obs).to(self.device)
            start_t = torch.from_numpy(episode_start).to(self.device)
            logits, _, (h, c) = self.policy.forward_step(obs_t, state, start_t)
            self._h[index] = h
            self._c[index] = c
            if self.deterministic:
                actions = torch.stack([head.argmax(dim=-1) for head in logits], dim=-1)
            else:
                actions, _ = self.policy.sample_actions(logits, self.generator)
        return np.ascontiguousarray(actions.cpu().numpy(), dtype=np.int32)

    def __repr__(self) -> str:
        return (
            f"PolicyAgent(obs_dim={self.obs_dim}, action_nvec={list(self.action_nvec)}, "
            f"num_rows={self.num_rows}, deterministic={self.deterministic})"
        )
