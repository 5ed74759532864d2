"""Frozen policies acting on rows, each row with its own LSTM state: the one implementation that
training opponents (``arena.trainer.opponents``), the league (through them) and evaluation
(``PolicyAgent``) share.

``FrozenPolicies`` holds any number of frozen players by index, their weights stacked per
architecture in a ``PolicyBank`` (``arena.agents.grouped``: one batched matrix product per layer
for all of them), and one LSTM state table of ``num_rows`` rows per LSTM size. ``step`` advances
the given rows (indices into that table) of the given players and returns their logits. A row's
state is zeroed when its ``episode_start`` flag is set, exactly as ``Policy.forward_step`` does in
training. A row belongs to one player at a time and changes player only at an episode start, so one
table per LSTM size serves every player.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from arena.agents.grouped import ArchitectureKey, PolicyBank, architecture_key
from arena.agents.policy import Policy


class FrozenPolicies:
    """Frozen players (``put(index, policy)``) stepped on rows of one state table."""

    def __init__(self, num_rows: int, device: torch.device | str = "cpu") -> None:
        if isinstance(num_rows, bool) or not isinstance(num_rows, int | np.integer) or num_rows < 0:
            raise ValueError(f"num_rows={num_rows!r} must be an integer >= 0")
        self.num_rows = int(num_rows)
        self.device = torch.device(device)
        self._banks: dict[ArchitectureKey, PolicyBank] = {}
        self._key_of: dict[int, ArchitectureKey] = {}
        self._states: dict[int, tuple[Tensor, Tensor]] = {}  # per LSTM size, every row

    def put(self, player: int, policy: Policy) -> None:
        """Copies ``policy``'s weights in as player ``player`` (again after its weights changed)."""
        self.drop(player)
        key = architecture_key(policy)
        with torch.inference_mode(False):  # the bank's storage must stay writable outside it
            if key not in self._banks:
                self._banks[key] = PolicyBank(policy, self.device)
            self._banks[key].put(player, policy)
        self._key_of[player] = key

    def drop(self, player: int) -> None:
        key = self._key_of.pop(player, None)
        if key is not None:
            self._banks[key].drop(player)

    def step(self, players: Sequence[int], bounds: Sequence[tuple[int, int]], rows: Tensor, obs: Tensor,
             episode_start: Tensor) -> Tensor:
        """One decision: player ``players[k]`` for ``rows[lo:hi]`` with ``(lo, hi) = bounds[k]``
        (segments in order, tiling ``rows``; every player of one architecture). ``obs`` and
        ``episode_start`` are those rows'. Returns the heads' logits concatenated ``[n, sum(nvec)]``
        (what ``Policy.sample_actions`` takes); the rows' states advance, the others stay."""
        keys = {self._key_of[p] for p in players}
        if len(keys) != 1:
            raise ValueError(f"players {list(players)} are of {len(keys)} architectures: step one at a time")
        key = keys.pop()
        h, c = self._state_for(key[3])
        logits, (h_new, c_new) = self._banks[key].forward_step(
            players, bounds, obs, (h.index_select(0, rows), c.index_select(0, rows)), episode_start)
        h.index_copy_(0, rows, h_new)
        c.index_copy_(0, rows, c_new)
        return logits

    def _state_for(self, lstm_size: int) -> tuple[Tensor, Tensor]:
        if lstm_size not in self._states:
            zeros = torch.zeros(self.num_rows, lstm_size, device=self.device)
            self._states[lstm_size] = (zeros, zeros.clone())
        return self._states[lstm_size]

    def state_of(self, lstm_size: int) -> tuple[Tensor, Tensor]:
        """The state table ``(h, c)`` of the players with this LSTM size (zeros before any step)."""
        return self._state_for(lstm_size)

    def row_states(self) -> dict[int, tuple[Tensor, Tensor]]:
        """Every row's LSTM state, per LSTM size (for checkpoints that continue matches in flight)."""
        return {size: (h.detach().cpu().clone(), c.detach().cpu().clone())
                for size, (h, c) in self._states.items()}

    def load_row_states(self, states: Mapping[int, tuple[Tensor, Tensor]]) -> None:
        self._states = {int(size): (h.to(self.device).clone(), c.to(self.device).clone())
                        for size, (h, c) in states.items()}

    def reset_states(self) -> None:
        """Every row from a zero state. Dropped, not zeroed: states made inside an inference mode
        cannot be written outside it; the next step makes fresh zeros."""
        self._states.clear()


class PolicyAgent:
    """One frozen policy for a fixed set of rows, behind evaluation's ``Agent`` interface:
    ``act(obs [n, d], rows [n], episode_start [n]) -> actions int32 [n, dims]``.

    ``rows`` are indices into the agent's own state table of ``num_rows`` rows, not env rows, so one
    agent can drive every row a player controls across many envs. Sampling draws from a
    ``torch.Generator`` seeded with ``seed``, so a run is reproducible; ``deterministic=True`` takes
    the most likely action of every head instead (argmax).
    """

    def __init__(self, policy: Policy, num_rows: int, deterministic: bool = False, seed: int = 0) -> None:
        self.policy = policy.eval()
        self.frozen = FrozenPolicies(num_rows, policy.actor.weight.device)
        self.frozen.put(0, self.policy)
        self.num_rows = self.frozen.num_rows
        self.deterministic = deterministic
        self.device = self.frozen.device
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))

    @property
    def obs_dim(self) -> int:
        return self.policy.obs_dim

    @property
    def action_nvec(self) -> tuple[int, ...]:
        return tuple(self.policy.action_nvec)

    def reset(self) -> None:
        """Every row from a zero state (a new evaluation from scratch)."""
        self.frozen.reset_states()

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray:
        """One decision for ``rows`` of the state table; their states advance, others stay."""
        if rows is None or episode_start is None:
            raise ValueError("PolicyAgent.act needs rows and episode_start: it keeps an LSTM state per row")
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
            logits = self.frozen.step([0], [(0, n)], torch.from_numpy(rows).to(self.device),
                                      torch.from_numpy(obs).to(self.device),
                                      torch.from_numpy(episode_start).to(self.device))
            actions = choose_actions(self.policy, logits, self.generator, self.deterministic)
        return np.ascontiguousarray(actions.cpu().numpy(), dtype=np.int32)

    def __repr__(self) -> str:
        return (
            f"PolicyAgent(obs_dim={self.obs_dim}, action_nvec={list(self.action_nvec)}, "
            f"num_rows={self.num_rows}, deterministic={self.deterministic})"
        )


def choose_actions(policy: Policy, logits: Tensor, generator: torch.Generator, deterministic: bool) -> Tensor:
    """``policy``'s actions ``[n, dims]`` for ``logits``: drawn with ``generator``, or with
    ``deterministic`` the most likely action of every head."""
    if deterministic:
        heads = logits.split(policy.action_nvec, dim=-1)
        return torch.stack([head.argmax(dim=-1) for head in heads], dim=-1)
    return policy.sample_actions(logits, generator)[0]
