"""Players by name, and one acting interface for them.

A player spec (``arena.player_specs.parse_player``, the one parser of these names) is
- ``"mirror"``: the learner itself (in training, where the learner drives both teams);
- ``"scripted:<name>"``: a scripted bot of the game (``SCRIPTED_BOTS`` lists them);
- ``"checkpoint:<path>"`` or a path to an existing file: a policy file (trainer checkpoint or league
  snapshot);
- ``"league:<run_dir>"``: what the league in that run directory publishes (``arena.league.model.published``:
  its newest judged snapshot, or a mixture of snapshots played one member per match);
- ``"sb3:<path>.zip"``: a Stable-Baselines3 model (``arena.agents.sb3``);
- anything else: an id some other part registered (a league's players), or a missing file.

``resolve_player`` checks the spec once (the file exists, loads, and fits the game's observation
and action spaces) and ``ResolvedPlayer.make_agent`` builds a fresh agent for a given number of rows,
so a round robin loads each file once. Every agent acts with
``act(obs [n, d], rows [n], episode_start [n]) -> int32 [n, dims]`` (``Agent``); scripted bots
ignore ``rows`` and ``episode_start`` (they keep no memory).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

import arena
from arena.agents.frozen import PolicyAgent
from arena.agents.mixture import MixtureAgent
from arena.agents.policy import Policy, load_policy
from arena.agents.sb3 import check_model_fits, load_sb3_model, sb3_agent
from arena.agents.scripted import SCRIPTED_BOTS, make_scripted
from arena.league.matchmaking.player_cache import load_frozen_policy
from arena.league.model.players import Player
from arena.league.model.published import published
from arena.player_specs import SCRIPTED_PREFIX, parse_player


class Agent(Protocol):
    """The one acting interface: ``act(obs [n, d], rows [n], episode_start [n]) -> int32 [n, dims]``.

    ``rows`` index the agent's own state table and ``episode_start`` flags the rows whose match
    begins with this decision; a stateful agent (``arena.agents.frozen.PolicyAgent``) needs both, a
    stateless one (every ``ScriptedAgent``) ignores them and may be called with ``act(obs)``."""

    @property
    def obs_dim(self) -> int: ...

    @property
    def action_nvec(self) -> tuple[int, ...]: ...

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray: ...

    def reset(self) -> None: ...


@dataclass(frozen=True)
class GameSpaces:
    """The observation size and action space a player must fit."""

    game: str
    team_sizes: tuple[int, int]
    obs_dim: int
    action_nvec: tuple[int, ...]
    # the game's parameter values (they fix e.g. midrange's observation layout)
    params: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def describe(self) -> str:
        n0, n1 = self.team_sizes
        return f"{self.game} {n0}v{n1} (obs_dim {self.obs_dim}, actions {list(self.action_nvec)})"


def game_spaces(game: str, team_sizes: tuple[int, int] = (1, 1),
                overrides: Mapping[str, Any] | None = None) -> GameSpaces:
    """The spaces of ``game`` with these team sizes and overrides (read from a one-env instance)."""
    overrides = dict(overrides or {})
    env = arena.make(game, num_envs=1, num_threads=1, team_sizes=tuple(team_sizes), **overrides)
    try:
        nvec = tuple(int(k) for k in env.action_space.nvec)
        return GameSpaces(game, env.team_sizes, env.obs_dim, nvec, dict(env.params))
    finally:
        env.close()


@dataclass(frozen=True)
class ResolvedPlayer:
    """A checked player spec: a scripted bot name, a loaded policy with its file's sha256, or a
    mixture of policies (``members`` with ``weights``; one member drawn per match)."""

    spec: str
    kind: Literal["scripted", "policy", "mixture", "sb3"]
    name: str  # "scripted:<bot>", the policy file's path, "sb3:<path>", or the mixture's spec
    spaces: GameSpaces
    path: str | None = None
    sha256: str | None = None
    policy: Policy | None = field(default=None, compare=False, repr=False)
    members: tuple[Policy, ...] = field(default=(), compare=False, repr=False)
    weights: tuple[float, ...] = ()
    model: Any = field(default=None, compare=False, repr=False)  # an SB3 model

    def make_agent(self, num_rows: int, seed: int = 0, deterministic: bool = False) -> Agent:
        """A fresh agent (zero state) for ``num_rows`` rows; ``seed`` seeds its random choices."""
        if self.kind == "scripted":
            return make_scripted(
                self.name, self.spaces.game, team_sizes=self.spaces.team_sizes,
                params=self.spaces.params, seed=seed,
            )
        if self.kind == "mixture":
            return MixtureAgent(self.members, self.weights, num_rows, deterministic=deterministic, seed=seed)
        if self.kind == "sb3":
            return sb3_agent(self.model, self.spaces.game, self.spaces.team_sizes, dict(self.spaces.params),
                             num_rows=num_rows, deterministic=deterministic, seed=seed)
        assert self.policy is not None
        return PolicyAgent(self.policy, num_rows, deterministic=deterministic, seed=seed)


def _resolve_published(run_dir: str, spaces: GameSpaces, spec: str) -> ResolvedPlayer:
    """``league:RUN_DIR``: what the league publishes (``arena.league.model.published``), its snapshot's
    policy or a mixture played one member per match."""
    found = published(run_dir)
    policies = []
    for m in found.members:
        player = Player(m.player_id, "snapshot", path=str(m.path), sha256=m.sha256)
        policy = load_frozen_policy(found.run_dir, player)
        check_policy_fits(policy, spaces, source=f"{spec} ({m.player_id})")
        policies.append(policy)
    if not found.is_mixture:
        m = found.members[0]
        return ResolvedPlayer(spec, "policy", str(m.path), spaces, path=str(m.path), sha256=m.sha256,
                              policy=policies[0])
    return ResolvedPlayer(spec, "mixture", spec, spaces, members=tuple(policies),
                          weights=tuple(m.weight for m in found.members))


def resolve_player(
    spec: str,
    game: str,
    team_sizes: tuple[int, int] = (1, 1),
    *,
    overrides: Mapping[str, Any] | None = None,
    spaces: GameSpaces | None = None,
) -> ResolvedPlayer:
    """Checks ``spec`` against the game; raises ``ValueError`` (unknown bot, a file that is not a
    policy or does not fit the game) or ``FileNotFoundError`` (missing file), naming the problem.

    ``spaces`` skips building a one-env instance when the caller already knows the game's spaces.
    """
    parsed = parse_player(spec)
    if parsed.kind == "mirror":
        raise ValueError(f"player spec {spec!r}: 'mirror' exists only in training (the learner itself); "
                         "name a scripted bot or a policy file")
    spaces = spaces or game_spaces(game, team_sizes, overrides)
    if parsed.kind == "scripted":
        bots = SCRIPTED_BOTS.get(spaces.game, ())
        if parsed.name not in bots:
            available = ", ".join(SCRIPTED_PREFIX + b for b in bots) or "none"
            raise ValueError(
                f"unknown scripted player {spec!r} for game {spaces.game!r}; available: {available}"
            )
        return ResolvedPlayer(spec, "scripted", parsed.id, spaces)
    if parsed.kind == "league":
        return _resolve_published(parsed.name, spaces, spec)
    if parsed.kind == "sb3":
        return _resolve_sb3(parsed.name, spaces, spec)
    path = parsed.name
    if not os.path.isfile(path):
        hint = ""
        if path in SCRIPTED_BOTS.get(spaces.game, ()):
            hint = f" (did you mean the scripted player '{SCRIPTED_PREFIX}{path}'?)"
        raise FileNotFoundError(f"policy file not found: {path}{hint}")
    policy = load_policy(path)
    check_policy_fits(policy, spaces, source=f"policy file {path}")
    return ResolvedPlayer(spec, "policy", path, spaces, path=path, sha256=_sha256(path), policy=policy)


def _resolve_sb3(path: str, spaces: GameSpaces, spec: str) -> ResolvedPlayer:
    """``sb3:PATH.zip``: a Stable-Baselines3 model that fits the game's spaces."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Stable-Baselines3 model not found: {path} (player spec {spec!r})")
    model = load_sb3_model(path)
    check_model_fits(model, spaces.obs_dim, spaces.action_nvec, f"Stable-Baselines3 model {path}")
    return ResolvedPlayer(spec, "sb3", spec, spaces, path=path, sha256=_sha256(path), model=model)


def check_policy_fits(policy: Policy, spaces: GameSpaces, source: str = "policy") -> None:
    """Raises ``ValueError`` unless the policy's observation size and action space are the game's."""
    nvec = tuple(policy.action_nvec)
    if policy.obs_dim != spaces.obs_dim or nvec != spaces.action_nvec:
        raise ValueError(
            f"{source} does not fit {spaces.describe()}: it takes obs_dim {policy.obs_dim} and "
            f"actions {list(nvec)}; was it trained on another game, team size or game settings?"
        )


def load_player(
    spec: str,
    game: str,
    team_sizes: tuple[int, int] = (1, 1),
    *,
    num_rows: int,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    deterministic: bool = False,
) -> Agent:
    """An agent for ``spec`` (see the module docstring) acting for ``num_rows`` rows of ``game``."""
    resolved = resolve_player(spec, game, team_sizes, overrides=overrides)
    return resolved.make_agent(num_rows, seed=seed, deterministic=deterministic)


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
