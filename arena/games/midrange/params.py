"""Midrange's parameter table (every default, its allowed range) and the rules that tie parameters
together (``Param`` and the validation of overrides: ``arena.games.spec``).

Every number of the game model (docs/midrange.md, "Constants") is a keyword override of
``arena.make``; an unknown name or an out-of-range value raises ``ValueError`` naming it and what
is allowed.
"""

from __future__ import annotations

import math
from typing import Any

from arena import _core
from arena.games.spec import Param, core_param_table

# Every parameter of the game model, declared once in C++ (MidrangeGame::params,
# arena/native/games/midrange/game.h): defaults, ranges and docs.
MIDRANGE_PARAMS: dict[str, Param] = core_param_table(_core.MidrangeParams)

MAX_TEAM = int(_core.MIDRANGE_MAX_TEAM)  # the largest team the core builds


MIN_LAUNCH_COOLDOWN_S = 1e-6


def drag_speed_limit(vt: float, ld: float, rmin: float, g: float, dt: float) -> float:
    """The speed above which one physics step of drag could reverse a body's velocity: the
    semi-implicit Euler step is stable while C v dt <= 1/2, C the largest drag coefficient
    (parasitic plus induced at full command). Mirrors ``drag_speed_limit`` in
    arena/native/games/midrange/midrange_limits.h, which bounds world-state speeds the same way."""
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
