"""Game parameters: every default of a game, its allowed range, and validation.

Every number in DESIGN.md's game model is a keyword override of ``arena.make``; an unknown
name or an out-of-range value raises ``ValueError`` naming it and what is allowed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """One game parameter: its default, type and closed allowed range."""

    default: Any
    kind: type
    low: float
    high: float
    doc: str


def _p(default: Any, low: float, high: float, doc: str) -> Param:
    return Param(default, type(default), low, high, doc)


INF = math.inf

MIDRANGE_PARAMS: dict[str, Param] = {
    "frame_skip": _p(12, 1, 600, "physics steps per decision"),
    "dt": _p(1.0 / 60.0, 1e-4, 0.1, "physics time step, s"),
    "g": _p(9.8, 0.1, 100.0, "gravity, m/s^2"),
    "time_limit_s": _p(300.0, 1.0, 36000.0, "game time before a draw by time limit, s"),
    "arena_radius_m": _p(60000.0, 1000.0, 1e7, "a fighter outside this circle is destroyed, m"),
    "fighter_vt": _p(400.0, 10.0, 5000.0, "fighter terminal velocity at 1 g of thrust, m/s"),
    "fighter_rmin": _p(1000.0, 1.0, 1e6, "fighter minimum turn radius, m"),
    "fighter_ld": _p(5.0, 0.1, 100.0, "fighter lift/drag ratio"),
    "fighter_thrust_g": _p(1.5, 0.0, 100.0, "fighter thrust at full throttle, g"),
    "fighter_max_g": _p(9.0, 0.1, 100.0, "fighter load limit, g"),
    "spawn_speed": _p(300.0, 1.0, 5000.0, "fighter speed at spawn, m/s"),
    "missiles_per_fighter": _p(6, 1, 8, "missiles each fighter carries"),
    "launch_cooldown_s": _p(0.5, 0.0, 3600.0, "time between two launches of one fighter, s"),
    "launch_cone_deg": _p(60.0, 0.0, 180.0, "largest off-boresight angle of a launch target, deg"),
    "launch_offset_m": _p(20.0, 0.0, 1000.0, "a missile appears this far ahead of the shooter, m"),
    "missile_vt": _p(400.0, 10.0, 5000.0, "missile terminal velocity at 1 g of thrust, m/s"),
    "missile_rmin": _p(1000.0, 1.0, 1e6, "missile minimum turn radius, m"),
    "missile_ld": _p(2.0, 0.1, 100.0, "missile lift/drag ratio"),
    "missile_thrust_g": _p(15.0, 0.0, 1000.0, "missile motor thrust, g"),
    "missile_burn_s": _p(10.0, 0.0, 3600.0, "missile motor burn time, s"),
    "missile_max_g": _p(30.0, 0.1, 1000.0, "missile load limit, g"),
    "missile_min_speed": _p(200.0, 0.0, 5000.0, "a burnt-out missile slower than this dies, m/s"),
    "missile_max_time_s": _p(60.0, 0.1, 36000.0, "missile flight time limit, s"),
    "nav_gain": _p(200.0 / math.pi, 0.0, 1e6, "proportional navigation gain, u per rad/s"),
    "hit_radius_m": _p(100.0, 0.0, 1e5, "closest approach that destroys the target, m"),
    "spawn_distance_min_m": _p(20000.0, 0.0, 1e7, "smallest distance between the teams at spawn, m"),
    "spawn_distance_max_m": _p(40000.0, 0.0, 1e7, "largest distance between the teams at spawn, m"),
    "spawn_heading_jitter_deg": _p(30.0, 0.0, 180.0, "spawn heading spread around the enemy, deg"),
    "formation_spacing_m": _p(2000.0, 0.0, 1e6, "lateral spacing inside a formation, m"),
    "tracked_missiles": _p(4, 0, 8, "missiles per list (threats, own) in an observation"),
}

RPSW_PARAMS: dict[str, Param] = {
    "rounds": _p(9, 1, 10000, "throws per match"),
}

MAX_TEAM = 4


def validate_overrides(game: str, table: dict[str, Param], overrides: dict[str, Any]) -> dict[str, Any]:
    """Returns the full parameter dict with overrides applied, or raises ``ValueError``."""
    values = {name: p.default for name, p in table.items()}
    for name, value in overrides.items():
        if name not in table:
            allowed = ", ".join(sorted(table))
            raise ValueError(f"unknown parameter {name!r} for game {game!r}; allowed: {allowed}")
        p = table[name]
        is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if p.kind is int:
            if not is_number or not float(value).is_integer():
                raise ValueError(f"{name} must be an integer in [{p.low:g}, {p.high:g}], got {value!r}")
            value = int(value)
        else:
            if not is_number:
                raise ValueError(f"{name} must be a number in [{p.low:g}, {p.high:g}], got {value!r}")
            value = float(value)
        if not (p.low <= value <= p.high):  # also rejects NaN
            raise ValueError(f"{name}={value!r} is out of range: allowed [{p.low:g}, {p.high:g}] ({p.doc})")
        values[name] = value
    return values


def validate_team_sizes(team_sizes: Any) -> tuple[int, int]:
    def is_size(x: Any) -> bool:
        return isinstance(x, numbers.Real) and not isinstance(x, bool) and float(x).is_integer()

    ok = isinstance(team_sizes, Sequence) and not isinstance(team_sizes, str)
    ok = ok and len(team_sizes) == 2 and all(map(is_size, team_sizes))
    if not ok or not all(1 <= x <= MAX_TEAM for x in team_sizes):
        raise ValueError(
            f"team_sizes={team_sizes!r} is out of range: allowed two integers in [1, {MAX_TEAM}], "
            "e.g. (1, 1), (4, 4) or (2, 3)"
        )
    return int(team_sizes[0]), int(team_sizes[1])


def check_midrange_consistency(values: dict[str, Any]) -> None:
    if values["spawn_distance_min_m"] > values["spawn_distance_max_m"]:
        raise ValueError(
            f"spawn_distance_min_m={values['spawn_distance_min_m']} must not exceed "
            f"spawn_distance_max_m={values['spawn_distance_max_m']}"
        )
    if values["spawn_distance_max_m"] / 2 >= values["arena_radius_m"]:
        raise ValueError(
            f"spawn_distance_max_m={values['spawn_distance_max_m']} puts the teams outside the arena: "
            f"allowed below 2 * arena_radius_m = {2 * values['arena_radius_m']:g}"
        )
