"""A mixture of frozen policies behind one ``Agent``: one member drawn per match.

A league may publish a mixture (a meta-strategy over its snapshots, as PSRO does, or an average of
its recent policies). Playing a mixture means drawing one member with the mixture's weights when a
match starts and letting that member play the whole match: by Kuhn's theorem that is the behaviour
policy the mixture stands for (``arena.games.goofspiel.exploitability.mixture_probs`` computes it
exactly for Goofspiel). Drawing per decision instead would be another, weaker policy.

Every row keeps its member until its next ``episode_start``; the draws come from a generator seeded
with ``seed``, so a run is reproducible. Members of one architecture step together in one
``FrozenPolicies`` bank (one batched product per layer).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from arena.agents.frozen import FrozenPolicies, choose_actions
from arena.agents.grouped import architecture_key
from arena.agents.policy import Policy


def mixture_weights(weights: Sequence[float], members: int) -> np.ndarray:
    """``weights`` normalised to sum 1; ``ValueError`` unless there is one finite weight >= 0 per
    member and their sum is positive."""
    w = np.asarray([float(x) for x in weights], dtype=np.float64)
    if len(w) != members or members == 0:
        raise ValueError(f"a mixture needs one weight per member: {members} members, {len(w)} weights")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"mixture weights must be finite, >= 0 and sum to more than 0; got {list(weights)}")
    return w / w.sum()


class MixtureAgent:
    """``act(obs [n, d], rows [n], episode_start [n]) -> int32 [n, dims]`` for a weighted set of
    policies that share one observation size and action space; a row's member is drawn at its
    episode start (and at its first decision)."""

    def __init__(self, policies: Sequence[Policy], weights: Sequence[float], num_rows: int,
                 deterministic: bool = False, seed: int = 0) -> None:
        if not policies:
            raise ValueError("a mixture needs at least one policy")
        self.weights = mixture_weights(weights, len(policies))
        first = policies[0]
        for i, p in enumerate(policies):
            if p.obs_dim != first.obs_dim or tuple(p.action_nvec) != tuple(first.action_nvec):
                raise ValueError(f"mixture member {i} takes obs_dim {p.obs_dim} and actions "
                                 f"{list(p.action_nvec)}; member 0 takes {first.obs_dim} and "
                                 f"{list(first.action_nvec)}")
        self.policies = [p.eval() for p in policies]
        self.device = first.actor.weight.device
        self.frozen = FrozenPolicies(num_rows, self.device)
        for i, p in enumerate(self.policies):
            self.frozen.put(i, p)
        self.num_rows = self.frozen.num_rows
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(int(seed))
        self.member_of_row = np.full(self.num_rows, -1, dtype=np.int64)
        groups: dict[object, list[int]] = {}  # members of one architecture step in one bank
        for m, p in enumerate(self.policies):
            groups.setdefault(architecture_key(p), []).append(m)
        self._groups = list(groups.values())

    @property
    def obs_dim(self) -> int:
        return self.policies[0].obs_dim

    @property
    def action_nvec(self) -> tuple[int, ...]:
        return tuple(self.policies[0].action_nvec)

    def reset(self) -> None:
        """Every row from a zero state, its member drawn again at its next decision."""
        self.frozen.reset_states()
        self.member_of_row[:] = -1

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray:
        if rows is None or episode_start is None:
            raise ValueError("MixtureAgent.act needs rows and episode_start: it keeps a member and an "
                             "LSTM state per row")
        obs = np.asarray(obs, dtype=np.float32)
        rows = np.asarray(rows, dtype=np.int64)
        episode_start = np.asarray(episode_start, dtype=bool)
        n = len(rows)
        if obs.shape != (n, self.obs_dim) or episode_start.shape != (n,):
            raise ValueError(f"act expects obs [n, {self.obs_dim}], rows [n] and episode_start [n]; got obs "
                             f"{obs.shape}, rows {rows.shape}, episode_start {episode_start.shape}")
        out = np.zeros((n, len(self.action_nvec)), dtype=np.int32)
        if n == 0:
            return out
        if rows.min() < 0 or rows.max() >= self.num_rows:
            raise ValueError(f"rows must be indices in [0, {self.num_rows}), got {rows.min()}..{rows.max()}")
        redraw = rows[episode_start | (self.member_of_row[rows] < 0)]
        if len(redraw):
            self.member_of_row[redraw] = self.rng.choice(len(self.policies), size=len(redraw), p=self.weights)
        members = self.member_of_row[rows]
        counts = np.bincount(members, minlength=len(self.policies))
        with torch.inference_mode():
            for group in self._groups:
                players = [m for m in group if counts[m]]
                if not players:
                    continue
                take = np.flatnonzero(np.isin(members, players))
                take = take[np.argsort(members[take], kind="stable")]  # rows by member, in group order
                ends = np.cumsum([counts[m] for m in players])
                bounds = [(int(end - counts[m]), int(end)) for m, end in zip(players, ends, strict=True)]
                logits = self.frozen.step(players, bounds, torch.from_numpy(rows[take]).to(self.device),
                                          torch.from_numpy(obs[take]).to(self.device),
                                          torch.from_numpy(episode_start[take]).to(self.device))
                actions = choose_actions(self.policies[group[0]], logits, self.generator, self.deterministic)
                out[take] = actions.cpu().numpy()
        return out

    def __repr__(self) -> str:
        return (f"MixtureAgent({len(self.policies)} members, weights={np.round(self.weights, 3).tolist()}, "
                f"num_rows={self.num_rows}, deterministic={self.deterministic})")
