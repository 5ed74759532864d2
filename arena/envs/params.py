"""The parameter tables of midrange and rpsw (every default, its allowed range), team sizes, and the
midrange rules that tie parameters together (``Param`` and the validation of overrides: ``arena.games.spec``).

Every number of the game model (docs/midrange.md, "Constants") is a keyword override of
``arena.make``; an unknown name or an out-of-range value raises ``ValueError`` naming it and what
is allowed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

from arena import _core
from arena.games.spec import Param, is_integral


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

MAX_TEAM = int(_core.MIDRANGE_MAX_TEAM)  # the largest team the core builds


def validate_team_sizes(team_sizes: Any) -> tuple[int, int]:
    def is_size(x: Any) -> bool:
        return isinstance(x, numbers.Real) and not isinstance(x, bool) and is_integral(x)

    ok = isinstance(team_sizes, Sequence) and not isinstance(team_sizes, str)
    ok = ok and len(team_sizes) == 2 and all(map(is_size, team_sizes))
    if not ok or not all(1 <= x <= MAX_TEAM for x in team_sizes):
        raise ValueError(
            f"team_sizes={team_sizes!r} is out of range: allowed two integers in [1, {MAX_TEAM}], "
            "e.g. (1, 1), (4, 4) or (2, 3)"
        )
    return int(team_sizes[0]), int(team_sizes[1])


MIN_LAUNCH_COOLDOWN_S = 1e-6


def drag_speed_limit(vt: float, ld: float, rmin: float, g: float, dt: float) -> float:
    """The speed above which one physics step of drag could reverse a body's velocity: the
    semi-implicit Euler step is stable while C v dt <= 1/2, C the largest drag coefficient
    (parasitic plus induced at full command). Mirrors ``drag_speed_limit`` in
    arena/native/midrange_limits.h, which bounds world-state speeds the same way."""
    cd0 = g / (vt * vt)
    k = 1.0 / (4.0 * cd0 * ld * ld)
    inv_rmin = 1.0 / rmin
    return 0.5 / ((cd0 + k * inv_rmin * inv_rmin) * dt)


def check_midrange_stability(values: dict[str, Any]) -> None:
    """Refuses parameters under which the physics step can diverge (and observations turn NaN).

    A body must stay below its drag speed limit with a margin: at twice the fastest it flies in
    play (its spawn or launch speed, or its terminal speed at full thrust) plus one physics step of
    thrust and turn acceleration. A missile leaves with its shooter's velocity, so it must also
    handle the fighters' speeds.
    """
    v, g, dt = values, values["g"], values["dt"]
    fighter_top = max(v["spawn_speed"], v["fighter_vt"] * math.sqrt(v["fighter_thrust_g"]))
    fighter_need = 2.0 * fighter_top + (v["fighter_thrust_g"] + v["fighter_max_g"]) * g * dt
    missile_top = v["missile_vt"] * math.sqrt(v["missile_thrust_g"])
    missile_step = (v["missile_thrust_g"] + v["missile_max_g"]) * g * dt
    missile_need = max(fighter_need, 2.0 * missile_top + missile_step)
    sources = {
        "fighter": "spawn_speed, fighter_vt * sqrt(fighter_thrust_g) and fighter_max_g",
        "missile": "missile_vt * sqrt(missile_thrust_g), missile_max_g and the fighters' speeds",
    }
    for body, need in (("fighter", fighter_need), ("missile", missile_need)):
        vt, ld, rmin = v[f"{body}_vt"], v[f"{body}_ld"], v[f"{body}_rmin"]
        limit = drag_speed_limit(vt, ld, rmin, g, dt)
        if need > limit:
            raise ValueError(
                f"these parameters make the {body} physics diverge: above {limit:.6g} m/s one physics step "
                f"of drag (dt={dt:g}, g={g:g}, {body}_vt={vt:g}, {body}_ld={ld:g}, {body}_rmin={rmin:g}) "
                f"could reverse a {body}'s velocity, but it must handle {need:.6g} m/s (twice its top "
                f"speed plus one step, from {sources[body]}); allowed: dt * (g / {body}_vt^2 + "
                f"{body}_vt^2 / (4 g {body}_ld^2 {body}_rmin^2)) * {need:.6g} <= 0.5, e.g. with a smaller dt"
            )


def check_midrange_consistency(values: dict[str, Any]) -> None:
    cooldown = values["launch_cooldown_s"]
    if 0.0 < cooldown < MIN_LAUNCH_COOLDOWN_S:
        raise ValueError(
            f"launch_cooldown_s={cooldown!r} is out of range: allowed 0 (no cooldown) or at least "
            f"{MIN_LAUNCH_COOLDOWN_S:g} s (the observation divides by it)"
        )
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
    check_midrange_stability(values)
