"""Midrange air combat, 1v1 to 4v4 (``arena/native/games/midrange/midrange.h``; the model's equations and
constants are in ``docs/midrange.md``): the game's spec."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from arena import _core
from arena.envs.outcomes import EndReason
from arena.games.midrange import bots as pilots
from arena.games.midrange.freestyle import FreestylePilot
from arena.games.midrange.obs import (
    FIGHTER,
    LEGAL_FEATURES,
    MISSILE,
    RANGE_SCALE_M,
    SELF,
    SPEED_SCALE_MS,
    MidrangeObsLayout,
)
from arena.games.midrange.params import MIDRANGE_PARAMS, check_midrange_consistency
from arena.games.midrange.reference import MidrangeReference
from arena.games.midrange.rewards import TERMS
from arena.games.midrange.shots import ShotRecorder
from arena.games.midrange.strangers import STRANGERS, stranger
from arena.games.spec import GameSpec

EVENTS = ("fired", "hits", "kills", "was_hit", "died", "left_arena", "missed", "evaded")
# Straight, idle, no fire: what a row without a decision maker is given (a dead fighter ignores it).
NOOP = (2, 0, 0)


def core_params(values: dict[str, Any], team_sizes: tuple[int, int]) -> Any:
    check_midrange_consistency(values)
    params = _core.MidrangeParams()
    params.team_size = team_sizes
    for key, value in values.items():
        setattr(params, key, value)
    return params


def obs_bounds(p: Mapping[str, Any], team_sizes: tuple[int, int], obs_dim: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Bounds implied by the game model: flags (the legal-action block too) in [0, 1], sines and
    cosines in [-1, 1], and magnitudes bounded by the arena and the terminal speeds (with a safety
    factor of 2 on speeds, which semi-implicit Euler and turns can exceed slightly)."""
    fighter_speed = 2.0 * max(p["spawn_speed"], p["fighter_vt"] * math.sqrt(p["fighter_thrust_g"]))
    missile_speed = 2.0 * max(fighter_speed, p["missile_vt"] * math.sqrt(p["missile_thrust_g"]))
    radius = p["arena_radius_m"]
    missile_reach = 2.0 * radius + p["missile_max_time_s"] * missile_speed
    unit, signed = (0.0, 1.0), (-1.0, 1.0)
    self_bounds = dict.fromkeys(SELF, unit) | {
        "speed": (0.0, fighter_speed / p["fighter_vt"]),
        "centre_sin": signed,
        "centre_cos": signed,
        "boundary": (0.0, radius / RANGE_SCALE_M),
    }
    closing = 2.0 * fighter_speed / SPEED_SCALE_MS
    fighter_bounds = dict.fromkeys(FIGHTER, signed) | {
        "present": unit,
        "alive": unit,
        "range": (0.0, 2.0 * radius / RANGE_SCALE_M),
        "closing": (-closing, closing),
        "speed": (0.0, fighter_speed / p["fighter_vt"]),
    }
    closing = (missile_speed + fighter_speed) / SPEED_SCALE_MS
    missile_bounds = dict.fromkeys(MISSILE, signed) | {
        "present": unit,
        "range": (0.0, missile_reach / RANGE_SCALE_M),
        "speed": (0.0, missile_speed / SPEED_SCALE_MS),
        "closing": (-closing, closing),
        "tof": unit,
    }
    layout = MidrangeObsLayout(team_sizes, int(p["tracked_missiles"]))
    blocks = (
        [self_bounds]
        + [fighter_bounds] * (2 * layout.max_team - 1)
        + [missile_bounds] * (2 * layout.tracked_missiles)
    )
    flat = [b for block in blocks for b in block.values()] + [unit] * LEGAL_FEATURES
    bounds = np.array(flat, dtype=np.float64).reshape(-1, 2)
    return bounds[:, 0], bounds[:, 1]


def legal_columns(values: Mapping[str, Any], team_sizes: tuple[int, int]) -> tuple[int, int]:
    """The observation columns of the legal-action flags: the last ``LEGAL_FEATURES`` of a row."""
    tracked = int(values.get("tracked_missiles", MIDRANGE_PARAMS["tracked_missiles"].default))
    layout = MidrangeObsLayout(tuple(team_sizes), tracked)
    return layout.legal_start, layout.obs_dim


def _pilot(kind: str):  # noqa: ANN202 - a BotFactory
    def build(team_sizes: tuple[int, int], values: Mapping[str, Any], seed: int) -> Any:
        tracked = int(values.get("tracked_missiles", MIDRANGE_PARAMS["tracked_missiles"].default))
        if kind == "random":
            return pilots.RandomPilot(team_sizes=team_sizes, tracked_missiles=tracked, seed=seed)
        if kind == "varied":
            return pilots.VariedPilot(team_sizes=team_sizes, tracked_missiles=tracked, seed=seed)
        if kind == "freestyle":
            return FreestylePilot(team_sizes=team_sizes, tracked_missiles=tracked, seed=seed)
        if kind == "evader":
            return pilots.EvaderPilot(team_sizes=team_sizes, tracked_missiles=tracked)
        if kind in STRANGERS:
            return stranger(kind, team_sizes=team_sizes, tracked_missiles=tracked)
        if kind.startswith("heuristic_"):
            return pilots.ladder_pilot(kind, team_sizes=team_sizes, tracked_missiles=tracked)
        return pilots.HeuristicPilot(team_sizes=team_sizes, tracked_missiles=tracked)

    return build


def _reference() -> type:
    return MidrangeReference


SPEC = GameSpec(
    name="midrange",
    summary="midrange air combat: fighters with missiles, 1v1 to 4v4",
    params=MIDRANGE_PARAMS,
    core_params=core_params,
    events=EVENTS,
    end_reasons=(EndReason.ELIMINATION, EndReason.MUTUAL, EndReason.NO_MISSILES, EndReason.TIME_LIMIT),
    # the heuristic_<N>km ladder and freestyle are opt-in (league.scripted), see the README; the
    # strangers are held out; a new bot goes last, so the existing bots keep their per-opponent critic heads
    bots={name: _pilot(name) for name in
          ("random", "heuristic", "evader", "varied", "heuristic_6km", "heuristic_10km", "heuristic_14km",
           *STRANGERS, "freestyle")},
    reference_bots=("random", "heuristic", "evader"),
    obs_bounds=obs_bounds,
    noop=lambda values: NOOP,
    reference=_reference,
    presets=("midrange", "midrange_2v2", "midrange_4v4"),
    features=frozenset({"shots", "render", "replay"}),
    alive_column=SELF.index("alive"),
    action_mask=legal_columns,
    max_team=int(_core.MIDRANGE_MAX_TEAM),
    core_batch=_core.MidrangeBatch,
    reward_terms=TERMS,
    shot_recorder=ShotRecorder,
)
