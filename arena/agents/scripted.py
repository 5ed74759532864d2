"""Scripted players: the common interface and the registry the league addresses them by.

A scripted player maps a batch of observation rows to a batch of actions with numpy alone;
it keeps no per-row memory, so any rows of any envs, in any order, can be handed to it.
A player may also have a torch version (``act_torch``, ``supports_torch``): the same actions from
observation tensors on any device, so that a rollout with the env on the GPU needs no host copy of
the observations for it.
The league names them ``"scripted:<name>"``; ``make_scripted`` accepts either spelling.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from arena.games import GAMES, spec
from arena.rewards.base import twins_defined

if TYPE_CHECKING:  # torch is optional (the train extra): the numpy path never imports it
    from torch import Tensor


class _BotNames(Mapping[str, tuple[str, ...]]):
    """game -> names of its scripted bots, read from the game specs (``arena/games/``)."""

    def __init__(self, reference_only: bool) -> None:
        self._reference_only = reference_only

    def __getitem__(self, game: str) -> tuple[str, ...]:
        if game not in GAMES:
            raise KeyError(game)
        found = spec(game)
        return tuple(found.reference_bots if self._reference_only else found.bots)

    def __iter__(self) -> Iterator[str]:
        return iter(GAMES)

    def __len__(self) -> int:
        return len(GAMES)


SCRIPTED_BOTS: Mapping[str, tuple[str, ...]] = _BotNames(reference_only=False)
# The game's standard bots: a league's pool and its gauntlet's references by default. The rest of
# SCRIPTED_BOTS are opt-in (``league.scripted``), e.g. midrange's heuristic_<N>km ladder.
REFERENCE_BOTS: Mapping[str, tuple[str, ...]] = _BotNames(reference_only=True)


class ScriptedAgent(ABC):
    """A fixed player: ``act(obs [n, obs_dim] float32) -> actions [n, action_dims] int32``."""

    game: str = ""
    name: str = ""
    #: (numpy method, its torch twin) pairs: ``act_torch`` runs the torch twins only where each numpy
    #: rule has its twin defined at least as deep in the class hierarchy (``twins_defined``)
    TORCH_TWINS: ClassVar[tuple[tuple[str, str], ...]] = (("_act", "_act_torch"),)
    #: Whether the bot keeps something per row between steps and so needs ``act``'s ``rows`` and
    #: ``episode_start`` (a trainer passes them only then: a user's bot may define ``act(obs)`` alone)
    keeps_rows: ClassVar[bool] = False

    def __init__(self, obs_dim: int, action_nvec: tuple[int, ...]) -> None:
        self.obs_dim = obs_dim
        self.action_nvec = tuple(int(k) for k in action_nvec)

    @property
    def action_dims(self) -> int:
        return len(self.action_nvec)

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray:
        """Actions for ``n`` observation rows; an empty batch gives an empty [0, action_dims] array.
        ``rows`` and ``episode_start`` (the ``arena.agents.players.Agent`` interface) are ignored
        unless the bot ``keeps_rows``."""
        obs = self._check_obs(obs)
        if len(obs) == 0:
            return np.zeros((0, self.action_dims), dtype=np.int32)
        actions = self._act(obs)
        return np.ascontiguousarray(actions, dtype=np.int32)

    @property
    def supports_torch(self) -> bool:
        """Whether ``act_torch`` computes on tensors what ``act`` computes (see ``TORCH_TWINS``)."""
        return twins_defined(type(self), self.TORCH_TWINS, ScriptedAgent)

    def act_torch(self, obs: Tensor) -> Tensor:
        """``act`` on an observation tensor [n, obs_dim]: int32 actions [n, action_dims] on its device.

        A player with a torch version computes them there; one without copies the rows to the host
        and runs ``act`` (the numpy path), so every player can be called this way."""
        import torch

        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(
                f"{type(self).__name__} expects observations of shape [n, {self.obs_dim}], "
                f"got {tuple(obs.shape)}")
        if len(obs) == 0:
            return torch.zeros((0, self.action_dims), dtype=torch.int32, device=obs.device)
        if not self.supports_torch:
            return torch.from_numpy(self.act(obs.detach().cpu().numpy())).to(obs.device)
        return self._act_torch(obs.to(torch.float32)).to(torch.int32)

    def _act_torch(self, obs: Tensor) -> Tensor:
        """``_act`` on a validated, non-empty float32 tensor; players with a torch version define it."""
        raise NotImplementedError(f"{type(self).__name__} has no torch version (_act_torch)")

    def reset(self) -> None:  # noqa: B027 - deliberately empty: the Agent interface's reset
        """Nothing to reset: no per-row memory."""

    @abstractmethod
    def _act(self, obs: np.ndarray) -> np.ndarray:
        """Actions for a validated, non-empty float32 [n, obs_dim] batch."""

    def _check_obs(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs, dtype=np.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(
                f"{type(self).__name__} expects observations of shape [n, {self.obs_dim}], got {obs.shape}"
            )
        return obs

    def __repr__(self) -> str:
        return f"{type(self).__name__}(game={self.game!r}, obs_dim={self.obs_dim})"


def make_scripted(
    name: str,
    game: str,
    *,
    team_sizes: tuple[int, int] = (1, 1),
    params: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> ScriptedAgent:
    """Builds scripted player ``name`` (optionally ``"scripted:<name>"``) of ``game``, for matches
    with these team sizes and game parameters (``env.params``; the defaults where left out: they
    fix the observation layout); ``seed`` seeds the players that draw random actions."""
    if game not in GAMES:
        raise ValueError(f"no scripted players for game {game!r}; games: {', '.join(GAMES)}")
    return spec(game).make_bot(name, tuple(team_sizes), dict(params or {}), seed)
