"""The game contract: everything arena needs to know about a game, in one object.

Each game module under ``arena/games/`` defines one ``SPEC``; the registry (``arena.games``), both
adapters, the trainer, the league, evaluation, the hydra schema and the scripted bots read it, and
nothing outside the game's own files branches on a game's name. The walkthrough of adding a game
is ``docs/games.md``. The contract sits below the game registry (``arena.games``), the games and
everything that reads them: it imports nothing of arena's but the player names (``arena.player_specs``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.player_specs import SCRIPTED_PREFIX

if TYPE_CHECKING:
    from arena.agents.scripted import ScriptedAgent
    from arena.envs.outcomes import EndReason


@dataclass(frozen=True)
class Param:
    """One game parameter: its default, type and closed allowed range (a text parameter: the
    values in ``choices``)."""

    default: Any
    kind: type
    low: float
    high: float
    doc: str
    choices: tuple[str, ...] = ()


def core_param_table(params_class: Any) -> dict[str, Param]:
    """A game's parameter table, read from the core, where each parameter is declared once
    (``Game::params`` in the game's C++ header; ``<Name>Params.TABLE``): name, type, default (the
    C++ field's initialiser), allowed range and doc; a choice becomes a text parameter whose values
    are its names (the core holds the index)."""
    table: dict[str, Param] = {}
    for row in params_class.TABLE:
        if row["kind"] == "choice":
            choices = tuple(row["choices"])
            table[row["name"]] = Param(choices[row["default"]], str, 0, 0, row["doc"], choices)
        else:
            kind = int if row["kind"] == "int" else float
            table[row["name"]] = Param(kind(row["default"]), kind, row["low"], row["high"], row["doc"])
    return table


def validate_team_sizes(team_sizes: Any, max_team: int) -> tuple[int, int]:
    """Two integer team sizes in [1, ``max_team``] (the largest team any game of the core builds; each
    game checks its own limit, ``GameSpec.check_team_sizes``), or a ``ValueError`` saying so."""
    def is_size(x: Any) -> bool:
        return isinstance(x, numbers.Real) and not isinstance(x, bool) and is_integral(x)

    ok = isinstance(team_sizes, Sequence) and not isinstance(team_sizes, str)
    ok = ok and len(team_sizes) == 2 and all(map(is_size, team_sizes))
    if not ok or not all(1 <= x <= max_team for x in team_sizes):
        raise ValueError(
            f"team_sizes={team_sizes!r} is out of range: allowed two integers in [1, {max_team}], "
            "e.g. (1, 1), (4, 4) or (2, 3)"
        )
    return int(team_sizes[0]), int(team_sizes[1])


def validate_overrides(game: str, table: dict[str, Param], overrides: dict[str, Any]) -> dict[str, Any]:
    """Returns the full parameter dict with overrides applied, or raises ``ValueError``."""
    values = {name: p.default for name, p in table.items()}
    for name, value in overrides.items():
        if name not in table:
            allowed = ", ".join(sorted(table))
            raise ValueError(f"unknown parameter {name!r} for game {game!r}; allowed: {allowed}")
        p = table[name]
        if p.kind is str:
            if value not in p.choices:
                allowed = ", ".join(p.choices)
                raise ValueError(f"{name}={value!r} is not allowed: use one of {allowed} ({p.doc})")
            values[name] = value
            continue
        is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if p.kind is int:
            if not is_number or not is_integral(value):
                raise ValueError(f"{name} must be an integer in [{p.low:g}, {p.high:g}], got {value!r}")
            value = int(value)
        else:
            if not is_number:
                raise ValueError(f"{name} must be a number in [{p.low:g}, {p.high:g}], got {value!r}")
            value = as_float(value)
        if not (p.low <= value <= p.high):  # also rejects NaN and the infinities
            raise ValueError(f"{name}={value!r} is out of range: allowed [{p.low:g}, {p.high:g}] ({p.doc})")
        values[name] = value
    return values


def as_float(value: numbers.Real) -> float:
    """``float(value)``, with ints too large for a float as infinities (out of every range)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def is_integral(value: numbers.Real) -> bool:
    return isinstance(value, numbers.Integral) or as_float(value).is_integer()


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
    - ``reference``: returns the NumPy reference implementation (a class).
    - ``presets``: the ``configs/env/*.yaml`` files of the game.
    - ``core_batch``: the core's batch class of the game (``_core.<Game>Batch``), which ``make`` builds.
    - ``reward_terms``: the game's own reward terms by the short name a reward config gives as
      ``_target_`` (beside the terms every game can use, ``arena.rewards.terms.GENERIC_TERMS``).
    - ``shot_recorder``: builds the recorder of missile launch geometry (``evaluate --shots``) for a
      game with the ``"shots"`` feature.
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
    core_batch: type | None = None
    reward_terms: Mapping[str, type] = field(default_factory=dict)
    shot_recorder: Callable[[], Any] | None = None
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
        bare = name.removeprefix(SCRIPTED_PREFIX)
        if bare not in self.bots:
            raise ValueError(
                f"unknown scripted player {name!r} for game {self.name!r}; available: {', '.join(self.bots)}"
            )
        return self.bots[bare](tuple(team_sizes), values, seed)

    def mask_of(self, obs: np.ndarray, values: Mapping[str, Any], team_sizes: tuple[int, int]
                ) -> np.ndarray | None:
        """The legal-action mask (bool [n, sum(nvec)]) of observation rows, or None without one."""
        if self.action_mask is None:
            return None
        start, stop = self.action_mask(values, team_sizes)
        return np.asarray(obs)[..., start:stop] > 0.5
