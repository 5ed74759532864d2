"""Rock-paper-scissors-well (``arena/native/games/rpsw/rpsw.h``): the tiny 1v1 game for fast trainer and
league tests, and its spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from arena import _core
from arena.envs.outcomes import EndReason
from arena.games.rpsw import bots as throwers
from arena.games.rpsw.reference import RpswReference
from arena.games.spec import GameSpec, Param, core_param_table

EVENTS = ("round_won", "round_lost", "round_drawn")
# declared once in C++ (RpswGame::params, arena/native/games/rpsw/rpsw.h)
PARAMS: dict[str, Param] = core_param_table(_core.RpswParams)


def core_params(values: dict[str, Any], team_sizes: tuple[int, int]) -> Any:
    params = _core.RpswParams()
    params.rounds = values["rounds"]
    return params


def obs_bounds(values: Mapping[str, Any], team_sizes: tuple[int, int], obs_dim: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """One-hot throws, fractions and a score lead: every feature in [-1, 1]."""
    return -np.ones(obs_dim), np.ones(obs_dim)


def _thrower(kind: str):  # noqa: ANN202 - a BotFactory
    def build(team_sizes: tuple[int, int], values: Mapping[str, Any], seed: int) -> Any:
        if kind == "random":
            return throwers.RandomThrower(seed=seed)
        if kind == "biased":
            return throwers.BiasedThrower(seed=seed)
        return {"cycle": throwers.CycleThrower, "constant": throwers.ConstantThrower,
                "counter": throwers.CounterThrower}[kind]()

    return build


def _reference() -> type:
    return RpswReference


BOTS = ("random", "cycle", "biased", "constant", "counter")
SPEC = GameSpec(
    name="rpsw",
    summary="rock-paper-scissors-well over a fixed number of rounds",
    params=PARAMS,
    core_params=core_params,
    events=EVENTS,
    end_reasons=(EndReason.ROUNDS,),
    bots={name: _thrower(name) for name in BOTS},
    reference_bots=BOTS,
    obs_bounds=obs_bounds,
    noop=lambda values: (0,),
    reference=_reference,
    presets=("rpsw",),
    core_batch=_core.RpswBatch,
)
