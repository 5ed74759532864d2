"""Players by name: a scripted bot or a policy file, behind one acting interface.

A player spec is
- ``"scripted:<name>"``: a scripted bot of the game (``SCRIPTED_BOTS`` lists them);
- ``"checkpoint:<path>"`` or a bare path: a policy file (trainer checkpoint or league snapshot).

``resolve_player`` checks the spec once (the file exists, loads, and fits the game's observation
and action spaces) and ``ResolvedPlayer.make_agent`` builds a fresh agent for a given number of rows,
so a round robin loads each file once. Every agent acts with
``act(obs [n, d], rows [n], episode_start [n]) -> int32 [n, dims]``; scripted bots ignore
``rows`` and ``episode_start`` (they keep no memory).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from arena.agents.policy import Policy, load_policy
from arena.agents.policy_agent import PolicyAgent
from arena.agents.scripted import SCRIPTED_BOTS, ScriptedAgent, make_scripted

SCRIPTED_PREFIX = "scripted:"
CHECKPOINT_PREFIX = "checkpoint:"


class Agent(Protocol):
    """What the match runner drives: batched acting over rows of the agent's own state table."""

    @property
    def obs_dim(self) -> int: ...

    @property
    def action_nvec(self) -> tuple[int, ...]: ...

    def act(self, obs: np.ndarray, rows: np.ndarray, episode_start: np.ndarray) -> np.ndarray: ...

    def reset(self) -> None: ...


class ScriptedPlayerAgent:
    """A scripted bot behind the ``Agent`` interface: stateless, so rows and episode starts are ignored."""

    def __init__(self, bot: ScriptedAgent) -> None:
        self.bot = bot

    @property
    def obs_dim(self) -> int:
        return self.bot.obs_dim

    @property
    def action_nvec(self) -> tuple[int, ...]:
        return self.bot.action_nvec

    def act(self, obs: np.ndarray, rows: np.ndarray, episode_start: np.ndarray) -> np.ndarray:
        return self.bot.act(obs)

    def reset(self) -> None:
        """Nothing to reset: a scripted bot keeps no per-row memory."""

    def __repr__(self) -> str:
        return f"ScriptedPlayerAgent({self.bot!r})"


@dataclass(frozen=True)
class GameSpaces:
    """The observation size and action space a player must fit."""

    game: str
    team_sizes: tuple[int, int]
    obs_dim: int
    action_nvec: tuple[int, ...]
    tracked_missiles: int  # midrange observation layout; 0 for other games

    def describe(self) -> str:
        n0, n1 = self.team_sizes
        return f"{self.game} {n0}v{n1} (obs_dim {self.obs_dim}, actions {list(self.action_nvec)})"


def game_spaces(game: str, team_sizes: tuple[int, int] = (1, 1),
                overrides: Mapping[str, Any] | None = None) -> GameSpaces:
    """The spaces of ``game`` with these team sizes and overrides (read from a one-env instance)."""
    import arena  # the envs package loads the native core; only needed here

    overrides = dict(overrides or {})
    env = arena.make(game, num_envs=1, num_threads=1, team_sizes=tuple(team_sizes), **overrides)
    try:
        nvec = tuple(int(k) for k in env.action_space.nvec)
        return GameSpaces(game, env.team_sizes, env.obs_dim, nvec, int(env.params.get("tracked_missiles", 0)))
    finally:
        env.close()


@dataclass(frozen=True)
class ResolvedPlayer:
    """A checked player spec: a scripted bot name, or a loaded policy with its file's sha256."""

    spec: str
    kind: Literal["scripted", "policy"]
    name: str  # "scripted:<bot>" or the policy file's path
    spaces: GameSpaces
    path: str | None = None
    sha256: str | None = None
    policy: Policy | None = field(default=None, compare=False, repr=False)

    def make_agent(self, num_rows: int, seed: int = 0, deterministic: bool = False) -> Agent:
        """A fresh agent (zero state) for ``num_rows`` rows; ``seed`` seeds its random choices."""
        if self.kind == "scripted":
            bot = make_scripted(
                self.name, self.spaces.game, team_sizes=self.spaces.team_sizes,
                tracked_missiles=self.spaces.tracked_missiles, seed=seed,
            )
            return ScriptedPlayerAgent(bot)
        assert self.policy is not None
        return PolicyAgent(self.policy, num_rows, deterministic=deterministic, seed=seed)


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
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"player spec {spec!r} must be a non-empty string")
    spaces = spaces or game_spaces(game, team_sizes, overrides)
    if spec.startswith(SCRIPTED_PREFIX):
        bare = spec.removeprefix(SCRIPTED_PREFIX)
        bots = SCRIPTED_BOTS.get(spaces.game, ())
        if bare not in bots:
            available = ", ".join(SCRIPTED_PREFIX + b for b in bots) or "none"
            raise ValueError(
                f"unknown scripted player {spec!r} for game {spaces.game!r}; available: {available}"
            )
        return ResolvedPlayer(spec, "scripted", SCRIPTED_PREFIX + bare, spaces)
    path = spec.removeprefix(CHECKPOINT_PREFIX)
    if not os.path.isfile(path):
        hint = ""
        if path in SCRIPTED_BOTS.get(spaces.game, ()):
            hint = f" (did you mean the scripted player '{SCRIPTED_PREFIX}{path}'?)"
        raise FileNotFoundError(f"policy file not found: {path}{hint}")
    policy = load_policy(path)
    check_policy_fits(policy, spaces, source=f"policy file {path}")
    return ResolvedPlayer(spec, "policy", path, spaces, path=path, sha256=_sha256(path), policy=policy)


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
