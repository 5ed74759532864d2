"""The game contract: everything arena needs to know about a game, in one object.

Each game module under ``arena/games/`` defines one ``SPEC``; the registry (``arena.games``), both
adapters, the trainer, the league, evaluation, the hydra schema and the scripted bots read it, and
nothing outside the game's own files branches on a game's name. The walkthrough of adding a game
is ``docs/games.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.envs.params import Param, validate_overrides

if TYPE_CHECKING:
    from arena.agents.scripted import ScriptedAgent
    from arena.envs.outcomes import EndReason

# bot factory: (team_sizes, parameter values, seed) -> a scripted player of the game
BotFactory = Callable[[tuple[int, int], Mapping[str, Any], int], "ScriptedAgent"]
# observation bounds: (parameter values, team sizes, obs_dim) -> (low, high), one value per feature
Bounds = Callable[[Mapping[str, Any], tuple[int, int], int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class GameSpec:
    """One game of the core.

    - ``name``: the game's name in the core (``_core.GAMES``), in configs and on the command line.
    - ``params``: every parameter with its default and allowed range (the overrides of ``make``).
    - ``core_params``: builds the core's parameter object from validated values and team sizes,
      raising ``ValueError`` for a combination the game refuses (cross-parameter rules).
    - ``events``: the names of the per-row event counters the core writes, in order.
    - ``end_reasons``: the ways a match of this game can end.
    - ``bots``: scripted players by name; ``reference_bots``: those a league's pool and its
      gauntlet use by default (the rest are opt-in).
    - ``obs_bounds``: finite per-feature bounds of an observation, for the adapters' spaces.
    - ``alive_column``: the observation column that says whether the row's unit is alive (games
      where a player can be out while the match goes on), else None.
    - ``action_mask``: given the parameter values and the team sizes, ``(start, stop)`` of the
      observation columns that are 1 for a legal value of each action (one column per value of
      every action dimension, in order), else None; the policy, the bots and the adapters honour
      it. Goofspiel's core refuses an illegal action; midrange's spends nothing on an illegal
      fire (the only action it ever masks).
    - ``noop``: the action given to rows nobody decides for.
    - ``team_sizes``: the team sizes the game allows, checked by ``check_team_sizes``.
    - ``reference``: returns the NumPy reference implementation (a class), imported on demand.
    - ``presets``: the ``configs/env/*.yaml`` files of the game.
    - ``features``: the optional tools the game supports: ``"shots"`` (missile launch geometry,
      ``evaluate --shots``), ``"render"`` (match drawings), ``"replay"`` (replay files re-simulated
      from world states).
    """

    name: str
    params: Mapping[str, Param]
    core_params: Callable[[dict[str, Any], tuple[int, int]], Any]
    events: tuple[str, ...]
    end_reasons: tuple[EndReason, ...]
    bots: Mapping[str, BotFactory]
    reference_bots: tuple[str, ...]
    obs_bounds: Bounds
    noop: Callable[[Mapping[str, Any]], tuple[int, ...]]
    reference: Callable[[], type]
    presets: tuple[str, ...]
    alive_column: int | None = None
    action_mask: Callable[[Mapping[str, Any], tuple[int, int]], tuple[int, int]] | None = None
    max_team: int = 1
    summary: str = ""
    features: frozenset[str] = frozenset()

    def validate(self, overrides: Mapping[str, Any], team_sizes: tuple[int, int]
                 ) -> tuple[dict[str, Any], Any]:
        """Validated parameter values (defaults with ``overrides``) and the core's object for them."""
        self.check_team_sizes(team_sizes)
        values = validate_overrides(self.name, dict(self.params), dict(overrides))
        return values, self.core_params(values, team_sizes)

    def check_team_sizes(self, team_sizes: tuple[int, int]) -> None:
        if not all(1 <= n <= self.max_team for n in team_sizes):
            allowed = ("it is a 1v1 game, use (1, 1)" if self.max_team == 1
                       else f"use sizes in [1, {self.max_team}]")
            raise ValueError(f"team_sizes={team_sizes!r} is not allowed for {self.name}: {allowed}")

    def make_bot(self, name: str, team_sizes: tuple[int, int], values: Mapping[str, Any], seed: int = 0
                 ) -> ScriptedAgent:
        """Scripted player ``name`` (with or without the ``scripted:`` prefix) of this game."""
        from arena.agents.players import SCRIPTED_PREFIX

        bare = name.removeprefix(SCRIPTED_PREFIX)
        if bare not in self.bots:
            raise ValueError(
                f"unknown scripted player {name!r} for game {self.name!r}; available: {', '.join(self.bots)}"
            )
        return self.bots[bare](tuple(team_sizes), values, seed)

    def require(self, feature: str, what: str) -> None:
        """Raises ``ValueError`` naming the games that support ``feature`` when this one does not."""
        if feature not in self.features:
            from arena.games import GAMES, spec

            able = [name for name in GAMES if feature in spec(name).features]
            raise ValueError(f"{what} works for the games {', '.join(able)}, not {self.name!r}")

    def mask_of(self, obs: np.ndarray, values: Mapping[str, Any], team_sizes: tuple[int, int]
                ) -> np.ndarray | None:
        """The legal-action mask (bool [n, sum(nvec)]) of observation rows, or None without one."""
        if self.action_mask is None:
            return None
        start, stop = self.action_mask(values, team_sizes)
        return np.asarray(obs)[..., start:stop] > 0.5
