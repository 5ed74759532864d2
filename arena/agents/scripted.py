"""Scripted players: the common interface and the registry the league addresses them by.

A scripted player maps a batch of observation rows to a batch of actions with numpy alone;
it keeps no per-row memory, so any rows of any envs, in any order, can be handed to it.
The league names them ``"scripted:<name>"``; ``make_scripted`` accepts either spelling.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

SCRIPTED_BOTS: dict[str, tuple[str, ...]] = {
    "midrange": ("random", "heuristic", "evader", "heuristic_6km", "heuristic_10km", "heuristic_14km"),
    "rpsw": ("random", "cycle", "biased", "constant", "counter"),
}
# The game's standard bots: a league's pool and its gauntlet's references by default. The rest of
# SCRIPTED_BOTS are opt-in (``league.scripted``): midrange's heuristic_<N>km ladder.
REFERENCE_BOTS: dict[str, tuple[str, ...]] = {
    "midrange": ("random", "heuristic", "evader"),
    "rpsw": SCRIPTED_BOTS["rpsw"],
}
PREFIX = "scripted:"


class ScriptedAgent(ABC):
    """A fixed player: ``act(obs [n, obs_dim] float32) -> actions [n, action_dims] int32``."""

    game: str = ""
    name: str = ""

    def __init__(self, obs_dim: int, action_nvec: tuple[int, ...]) -> None:
        self.obs_dim = obs_dim
        self.action_nvec = tuple(int(k) for k in action_nvec)

    @property
    def action_dims(self) -> int:
        return len(self.action_nvec)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions for ``n`` observation rows; an empty batch gives an empty [0, action_dims] array."""
        obs = self._check_obs(obs)
        if len(obs) == 0:
            return np.zeros((0, self.action_dims), dtype=np.int32)
        actions = self._act(obs)
        return np.ascontiguousarray(actions, dtype=np.int32)

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
    tracked_missiles: int = 4,
    seed: int = 0,
) -> ScriptedAgent:
    """Builds scripted player ``name`` (optionally ``"scripted:<name>"``) for ``game``.

    ``team_sizes`` and ``tracked_missiles`` fix the midrange observation layout; ``seed`` seeds
    the players that draw random actions.
    """
    if game not in SCRIPTED_BOTS:
        raise ValueError(f"no scripted players for game {game!r}; games: {', '.join(SCRIPTED_BOTS)}")
    bare = name.removeprefix(PREFIX)
    if bare not in SCRIPTED_BOTS[game]:
        raise ValueError(
            f"unknown scripted player {name!r} for game {game!r}; available: {', '.join(SCRIPTED_BOTS[game])}"
        )
    # Imported here because the player modules import ScriptedAgent from this one.
    if game == "midrange":
        from arena.agents.scripted_midrange import EvaderPilot, HeuristicPilot, RandomPilot, ladder_pilot

        if bare == "random":
            return RandomPilot(team_sizes=team_sizes, tracked_missiles=tracked_missiles, seed=seed)
        if bare == "evader":
            return EvaderPilot(team_sizes=team_sizes, tracked_missiles=tracked_missiles)
        if bare.startswith("heuristic_"):
            return ladder_pilot(bare, team_sizes=team_sizes, tracked_missiles=tracked_missiles)
        return HeuristicPilot(team_sizes=team_sizes, tracked_missiles=tracked_missiles)

    from arena.agents.scripted_rpsw import (
        BiasedThrower,
        ConstantThrower,
        CounterThrower,
        CycleThrower,
        RandomThrower,
    )

    if bare == "random":
        return RandomThrower(seed=seed)
    if bare == "cycle":
        return CycleThrower()
    if bare == "biased":
        return BiasedThrower(seed=seed)
    if bare == "constant":
        return ConstantThrower()
    return CounterThrower()
