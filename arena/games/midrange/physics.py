"""NumPy twin of the parameters, state, reset and physics of arena/native/games/midrange/midrange.h.

State is float64 like the C++ doubles, batched over envs: fighters are ``[envs, fighters]``
arrays and missile slots ``[envs, fighters * missiles_per_fighter]`` arrays. Every arithmetic
expression keeps the C++ evaluation order (the core is built with -ffp-contract=off), so the two
agree to rounding, in practice bit for bit. Each entity update is computed for every slot and
kept only where the C++ would have run it (``np.where``). The physics loops over fighters, never
over envs; a reset draws its few numbers env by env, as the generator is a scalar per env.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from arena.envs.reference import (
    END_ELIMINATION,
    END_MUTUAL,
    END_NO_MISSILES,
    END_NONE,
    END_TIME_LIMIT,
    OUTCOME_DRAW,
    OUTCOME_NONE,
    OUTCOME_TEAM0,
    OUTCOME_TEAM1,
    Arr,
    Num,
    clamp,
    rng_uniform,
)

# ---------------------------------------------------------------- parameters

PI = 3.14159265358979323846
NUM_EVENTS = 8
EV_FIRED, EV_HITS, EV_KILLS, EV_WAS_HIT, EV_DIED, EV_LEFT_ARENA, EV_MISSED, EV_EVADED = range(NUM_EVENTS)
SELF_FEATURES, FIGHTER_FEATURES, MISSILE_FEATURES = 8, 9, 7
ACTION_NVEC = (5, 3, 2)  # rudder {-1, -.5, 0, .5, 1}, throttle {0, .5, 1}, fire {0, 1}
LEGAL_FEATURES = sum(ACTION_NVEC)  # the row's last block: one legal flag per action value
RANGE_SCALE, SPEED_SCALE = 10000.0, 1000.0

DEFAULT_PARAMS: dict[str, Any] = {
    "team_size": (1, 1), "frame_skip": 12, "dt": 1.0 / 60.0, "g": 9.8, "time_limit_s": 300.0,
    "arena_radius_m": 60000.0,
    "fighter_vt": 400.0, "fighter_rmin": 1000.0, "fighter_ld": 5.0,
    "fighter_thrust_g": 1.5, "fighter_max_g": 9.0, "spawn_speed": 300.0,
    "missiles_per_fighter": 6, "launch_cooldown_s": 0.5, "launch_cone_deg": 60.0, "launch_offset_m": 20.0,
    "missile_vt": 400.0, "missile_rmin": 1000.0, "missile_ld": 2.0,
    "missile_thrust_g": 15.0, "missile_burn_s": 10.0, "missile_max_g": 30.0,
    "missile_min_speed": 200.0, "missile_max_time_s": 60.0, "nav_gain": 200.0 / PI, "hit_radius_m": 100.0,
    "spawn_distance_min_m": 20000.0, "spawn_distance_max_m": 40000.0,
    "spawn_heading_jitter_deg": 30.0, "formation_spacing_m": 2000.0,
    "tracked_missiles": 4,
}


@dataclass(frozen=True)
class Derived:
    """``derive()``: constants computed once from the parameters."""

    f_cd0: float
    f_k: float
    f_thrust: float
    m_cd0: float
    m_k: float
    m_thrust: float
    cos_cone: float
    # Missile timers accumulate tof += dt; comparing against these (a millionth of a step early)
    # makes a 10 s burn last exactly 10 s / dt steps despite rounding in the sum.
    burn_end_s: float
    max_time_end_s: float
    max_steps_f: float
    max_steps: int
    max_team: int
    num_fighters: int
    num_missiles: int
    obs_dim: int

    @classmethod
    def of(cls, p: dict[str, Any]) -> Derived:
        f_cd0 = p["g"] / (p["fighter_vt"] * p["fighter_vt"])
        m_cd0 = p["g"] / (p["missile_vt"] * p["missile_vt"])
        max_steps_f = float(math.ceil(p["time_limit_s"] / p["dt"] - 1e-9))
        max_team = max(p["team_size"])
        num_fighters = sum(p["team_size"])
        return cls(
            f_cd0=f_cd0, f_k=1.0 / (4.0 * f_cd0 * p["fighter_ld"] * p["fighter_ld"]),
            f_thrust=p["fighter_thrust_g"] * p["g"],
            m_cd0=m_cd0, m_k=1.0 / (4.0 * m_cd0 * p["missile_ld"] * p["missile_ld"]),
            m_thrust=p["missile_thrust_g"] * p["g"],
            cos_cone=math.cos(p["launch_cone_deg"] * PI / 180.0),
            burn_end_s=p["missile_burn_s"] - 1e-6 * p["dt"],
            max_time_end_s=p["missile_max_time_s"] - 1e-6 * p["dt"],
            max_steps_f=max_steps_f, max_steps=int(max_steps_f), max_team=max_team,
            num_fighters=num_fighters, num_missiles=num_fighters * p["missiles_per_fighter"],
            obs_dim=SELF_FEATURES + FIGHTER_FEATURES * (2 * max_team - 1)
            + MISSILE_FEATURES * 2 * p["tracked_missiles"] + LEGAL_FEATURES,
        )


# ---------------------------------------------------------------- state

@dataclass
class World:
    """The state of every env; field names are the keys of ``MidrangeBatch.world_state()``."""

    fighter_x: np.ndarray  # float64 [E, F]
    fighter_y: np.ndarray
    fighter_vx: np.ndarray
    fighter_vy: np.ndarray
    fighter_cooldown: np.ndarray
    fighter_missiles: np.ndarray  # int32 [E, F]
    fighter_alive: np.ndarray  # bool [E, F]
    missile_x: np.ndarray  # float64 [E, M]
    missile_y: np.ndarray
    missile_vx: np.ndarray
    missile_vy: np.ndarray
    missile_tof: np.ndarray
    missile_owner: np.ndarray  # int32 [E, M], -1 for a slot never used
    missile_target: np.ndarray
    missile_active: np.ndarray  # bool [E, M]
    physics_steps: np.ndarray  # int32 [E]
    decisions: np.ndarray  # int32 [E]

    @classmethod
    def empty(cls, envs: int, fighters: int, missiles: int) -> World:
        f, m = (envs, fighters), (envs, missiles)
        return cls(
            *(np.zeros(f) for _ in range(5)), np.zeros(f, np.int32), np.zeros(f, bool),
            *(np.zeros(m) for _ in range(5)), np.full(m, -1, np.int32), np.full(m, -1, np.int32),
            np.zeros(m, bool), np.zeros(envs, np.int32), np.zeros(envs, np.int32),
        )

    def take(self, envs: np.ndarray) -> World:
        """A copy of the given envs only."""
        return World(*(getattr(self, f.name)[envs] for f in fields(self)))

    def put(self, envs: np.ndarray, part: World) -> None:
        """Writes back a part made by ``take(envs)``."""
        for f in fields(self):
            getattr(self, f.name)[envs] = getattr(part, f.name)


def reset_env(p: dict[str, Any], d: Derived, w: World, e: int, rng: int) -> int:
    """``reset()`` of env e, drawing from generator state ``rng``; returns the new state."""
    rng, u = rng_uniform(rng)
    dist = p["spawn_distance_min_m"] + (p["spawn_distance_max_m"] - p["spawn_distance_min_m"]) * u
    rng, u = rng_uniform(rng)
    theta = 2.0 * PI * u
    ax, ay = math.cos(theta), math.sin(theta)  # from team 0 towards team 1
    lx, ly = -ay, ax  # lateral axis of the formations
    jitter = p["spawn_heading_jitter_deg"] * PI / 180.0
    n0 = p["team_size"][0]
    for i in range(d.num_fighters):
        team = 0 if i < n0 else 1
        j = i if team == 0 else i - n0
        side = -0.5 if team == 0 else 0.5
        offset = (j - 0.5 * (p["team_size"][team] - 1)) * p["formation_spacing_m"]
        rng, u = rng_uniform(rng)
        heading = theta + (0.0 if team == 0 else PI) + jitter * (2.0 * u - 1.0)
        w.fighter_x[e, i] = side * dist * ax + offset * lx
        w.fighter_y[e, i] = side * dist * ay + offset * ly
        w.fighter_vx[e, i] = p["spawn_speed"] * math.cos(heading)
        w.fighter_vy[e, i] = p["spawn_speed"] * math.sin(heading)
    w.fighter_cooldown[e] = 0.0
    w.fighter_missiles[e] = p["missiles_per_fighter"]
    w.fighter_alive[e] = True
    for name in ("missile_x", "missile_y", "missile_vx", "missile_vy", "missile_tof"):
        getattr(w, name)[e] = 0.0
    w.missile_owner[e] = -1
    w.missile_target[e] = -1
    w.missile_active[e] = False
    w.physics_steps[e] = 0
    w.decisions[e] = 0
    return rng


# ---------------------------------------------------------------- physics

def integrate(x: Arr, y: Arr, vx: Arr, vy: Arr, u: Num, thrust: Num, cd0: float, k: float, rmin: float,
              max_g: float, g: float, dt: float) -> tuple[Arr, Arr, Arr, Arr]:
    """One semi-implicit Euler step of point masses; returns the new (x, y, vx, vy).

    u is the turn command in [-1, 1] (positive turns left), limited by max_g. A mass slower than
    1e-9 m/s gets no acceleration (the C++ skips the block; here it is computed on a safe
    denominator and discarded).
    """
    v2 = vx * vx + vy * vy
    moving = v2 > 1e-18
    v2_safe = np.where(moving, v2, 1.0)
    inv_v = 1.0 / np.sqrt(v2_safe)
    # The g limit caps the control: |u| v^2 <= max_g g Rmin; where it binds, |u_eff| = turn_cap / v^2,
    # computed as turn_cap * inv_v * inv_v (as the C++, which spares a division so).
    turn_cap = max_g * g * rmin
    inv_rmin = 1.0 / rmin
    u = np.asarray(u, dtype=np.float64)
    cap = turn_cap * (inv_v * inv_v)
    ue = np.where(np.abs(u) * v2 > turn_cap, np.where(u > 0.0, cap, -cap), u)
    cl = np.abs(ue) * inv_rmin
    a_par = thrust - (cd0 + k * cl * cl) * v2
    a_perp = v2 * ue * inv_rmin
    hx, hy = vx * inv_v, vy * inv_v
    ax = np.where(moving, a_par * hx - a_perp * hy, 0.0)
    ay = np.where(moving, a_par * hy + a_perp * hx, 0.0)
    vx = vx + ax * dt
    vy = vy + ay * dt
    return x + vx * dt, y + vy * dt, vx, vy


def pn_command(mx: Arr, my: Arr, mvx: Arr, mvy: Arr, tx: Arr, ty: Arr, tvx: Arr, tvy: Arr,
               nav_gain: float) -> Arr:
    """Proportional navigation, u = clamp(N * lambda_dot) with lambda_dot = (r x v_rel) / |r|^2."""
    rx, ry = tx - mx, ty - my
    wx, wy = tvx - mvx, tvy - mvy
    r2 = rx * rx + ry * ry
    near = r2 < 1e-9
    lambda_dot = (rx * wy - ry * wx) / np.where(near, 1.0, r2)
    return np.where(near, 0.0, clamp(nav_gain * lambda_dot, -1.0, 1.0))


def swept_distance2(ax0: Arr, ay0: Arr, ax1: Arr, ay1: Arr, bx0: Arr, by0: Arr, bx1: Arr, by1: Arr) -> Arr:
    """Squared closest approach of two straight segments travelled in the same interval."""
    dx, dy = ax0 - bx0, ay0 - by0
    ex, ey = (ax1 - ax0) - (bx1 - bx0), (ay1 - ay0) - (by1 - by0)
    ee = ex * ex + ey * ey
    moving = ee > 1e-12
    t = np.where(moving, clamp(-(dx * ex + dy * ey) / np.where(moving, ee, 1.0), 0.0, 1.0), 0.0)
    cx, cy = dx + t * ex, dy + t * ey
    return cx * cx + cy * cy


def launch_target(p: dict[str, Any], d: Derived, w: World, i: int) -> tuple[Arr, Arr, Arr]:
    """``launch_target``: per env, the enemy fighter i would lock on if it fired now (the alive
    enemy with the smallest off-boresight angle inside the cone, largest cosine, ties to the lowest
    index), or -1 where a launch would do nothing (dead, no missile, cooling down, no enemy in the
    cone); and i's heading (hx, hy)."""
    x, y, vx, vy = w.fighter_x[:, i], w.fighter_y[:, i], w.fighter_vx[:, i], w.fighter_vy[:, i]
    v = np.sqrt(vx * vx + vy * vy)
    can = w.fighter_alive[:, i] & (w.fighter_missiles[:, i] > 0)
    can &= ~(w.fighter_cooldown[:, i] > 1e-9) & ~(v < 1e-9)
    v_safe = np.where(v < 1e-9, 1.0, v)
    hx, hy = vx / v_safe, vy / v_safe
    n0 = p["team_size"][0]
    enemies = range(n0, d.num_fighters) if i < n0 else range(n0)
    best = np.full(len(x), -1)
    best_cos = np.full(len(x), -2.0)
    for j in enemies:
        rx, ry = w.fighter_x[:, j] - x, w.fighter_y[:, j] - y
        r = np.sqrt(rx * rx + ry * ry)
        seen = w.fighter_alive[:, j] & ~(r < 1e-9)
        c = (hx * rx + hy * ry) / np.where(seen, r, 1.0)
        better = seen & (c >= d.cos_cone) & (c > best_cos)
        best = np.where(better, j, best)
        best_cos = np.where(better, c, best_cos)
    return np.where(can, best, -1), hx, hy


def try_launch(p: dict[str, Any], d: Derived, w: World, i: int, fire: np.ndarray) -> np.ndarray:
    """Fighter i fires in the envs where ``fire``; returns where a missile left the rail: where it
    has a ``launch_target``. Elsewhere no launch, no missile spent."""
    best, hx, hy = launch_target(p, d, w, i)
    x, y, vx, vy = w.fighter_x[:, i], w.fighter_y[:, i], w.fighter_vx[:, i], w.fighter_vy[:, i]
    launch = fire & (best >= 0)
    e = np.flatnonzero(launch)
    mpf = p["missiles_per_fighter"]
    slot = i * mpf + (mpf - w.fighter_missiles[e, i])  # the k-th launch uses the k-th own slot
    w.missile_x[e, slot] = x[e] + hx[e] * p["launch_offset_m"]
    w.missile_y[e, slot] = y[e] + hy[e] * p["launch_offset_m"]
    w.missile_vx[e, slot] = vx[e]
    w.missile_vy[e, slot] = vy[e]
    w.missile_tof[e, slot] = 0.0
    w.missile_owner[e, slot] = i
    w.missile_target[e, slot] = best[e]
    w.missile_active[e, slot] = True
    w.fighter_missiles[e, i] -= 1
    w.fighter_cooldown[e, i] = p["launch_cooldown_s"]
    return launch


def _score_hits(w: World, hit: np.ndarray, events: np.ndarray) -> None:
    """Counts the hits of this step in slot order, as the C++ loop does: every hit counts for its
    owner (hits) and target (was_hit); the lowest-slot hit on a target kills it."""
    if not hit.any():  # the common case: nothing to count
        return
    rows = np.arange(len(hit))
    for j in range(w.fighter_x.shape[1]):
        events[:, j, EV_HITS] += (hit & (w.missile_owner == j)).sum(axis=1, dtype=np.int32)
        on_j = hit & (w.missile_target == j)
        events[:, j, EV_WAS_HIT] += on_j.sum(axis=1, dtype=np.int32)
        # A hit needs the target alive at step start, so the first hit on it always kills.
        e = np.flatnonzero(on_j.any(axis=1))
        killer = w.missile_owner[rows, on_j.argmax(axis=1)][e]
        events[e, killer, EV_KILLS] += 1
        events[e, j, EV_DIED] += 1
        w.fighter_alive[e, j] = False


def physics_step(p: dict[str, Any], d: Derived, w: World, rudder: np.ndarray, throttle: np.ndarray,
                 events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One physics step of every env in ``w``; returns (outcome, end_reason) per env."""
    # fighter_field[at_target] is [E, M]: the field of each missile slot's target (fighter 0 for
    # a slot never used, whose value is then ignored).
    at_target = (np.arange(len(w.missile_target))[:, None], np.maximum(w.missile_target, 0))
    # Guidance from the state at the start of the step.
    u_m = pn_command(w.missile_x, w.missile_y, w.missile_vx, w.missile_vy, w.fighter_x[at_target],
                     w.fighter_y[at_target], w.fighter_vx[at_target], w.fighter_vy[at_target], p["nav_gain"])
    u_m = np.where(w.missile_active, u_m, 0.0)
    fx0, fy0, alive0 = w.fighter_x.copy(), w.fighter_y.copy(), w.fighter_alive.copy()

    # Fighters integrate, then their launch cooldown runs down.
    moved = integrate(w.fighter_x, w.fighter_y, w.fighter_vx, w.fighter_vy, rudder,
                      d.f_thrust * throttle, d.f_cd0, d.f_k, p["fighter_rmin"], p["fighter_max_g"],
                      p["g"], p["dt"])
    w.fighter_x, w.fighter_y, w.fighter_vx, w.fighter_vy = (np.where(alive0, new, old) for new, old in zip(
        moved, (w.fighter_x, w.fighter_y, w.fighter_vx, w.fighter_vy), strict=True))
    cooled = w.fighter_cooldown - p["dt"]
    w.fighter_cooldown = np.where(alive0, np.where(cooled > 0.0, cooled, 0.0), w.fighter_cooldown)

    # Missiles integrate (motor on while tof < burn time) and age.
    active = w.missile_active
    mx0, my0 = w.missile_x, w.missile_y
    thrust = np.where(w.missile_tof < d.burn_end_s, d.m_thrust, 0.0)
    moved = integrate(mx0, my0, w.missile_vx, w.missile_vy, u_m, thrust, d.m_cd0, d.m_k,
                      p["missile_rmin"], p["missile_max_g"], p["g"], p["dt"])
    w.missile_x, w.missile_y, w.missile_vx, w.missile_vy = (np.where(active, new, old) for new, old in zip(
        moved, (mx0, my0, w.missile_vx, w.missile_vy), strict=True))
    w.missile_tof = np.where(active, w.missile_tof + p["dt"], w.missile_tof)

    # Swept hit test against targets alive at the start of the step, however fast the crossing.
    miss_d2 = swept_distance2(mx0, my0, w.missile_x, w.missile_y, fx0[at_target], fy0[at_target],
                              w.fighter_x[at_target], w.fighter_y[at_target])
    hit = active & alive0[at_target] & (miss_d2 <= p["hit_radius_m"] * p["hit_radius_m"])
    _score_hits(w, hit, events)
    # Missiles that missed expire after max time, or when burnt out and too slow.
    v2 = w.missile_vx * w.missile_vx + w.missile_vy * w.missile_vy
    burnt_out = w.missile_tof >= d.burn_end_s
    expired = (w.missile_tof >= d.max_time_end_s) | (
        burnt_out & (v2 < p["missile_min_speed"] * p["missile_min_speed"]))
    missed = active & ~hit & expired
    if missed.any():
        for j in range(w.fighter_x.shape[1]):
            events[:, j, EV_MISSED] += (missed & (w.missile_owner == j)).sum(axis=1, dtype=np.int32)
            events[:, j, EV_EVADED] += (missed & (w.missile_target == j)).sum(axis=1, dtype=np.int32)
    active = active & ~hit & ~expired

    # A fighter that leaves the arena is destroyed.
    r2 = w.fighter_x * w.fighter_x + w.fighter_y * w.fighter_y
    left = w.fighter_alive & (r2 > p["arena_radius_m"] * p["arena_radius_m"])
    events[:, :, EV_DIED] += left
    events[:, :, EV_LEFT_ARENA] += left
    w.fighter_alive = w.fighter_alive & ~left
    # A missile whose target is gone has nothing to guide on: it is removed.
    w.missile_active = active & w.fighter_alive[at_target]
    w.physics_steps += 1

    # End conditions in the C++ priority order: the first that holds decides.
    n0 = p["team_size"][0]
    team0_out, team1_out = ~w.fighter_alive[:, :n0].any(1), ~w.fighter_alive[:, n0:].any(1)
    any_ammo = (w.fighter_alive & (w.fighter_missiles > 0)).any(1)
    any_missile = w.missile_active.any(1)
    ends = [
        (team0_out & team1_out, OUTCOME_DRAW, END_MUTUAL),
        (team0_out, OUTCOME_TEAM1, END_ELIMINATION),
        (team1_out, OUTCOME_TEAM0, END_ELIMINATION),
        (~any_ammo & ~any_missile, OUTCOME_DRAW, END_NO_MISSILES),
        (w.physics_steps >= d.max_steps, OUTCOME_DRAW, END_TIME_LIMIT),
    ]
    outcome = np.full(len(w.physics_steps), OUTCOME_NONE, np.int8)
    reason = np.full(len(w.physics_steps), END_NONE, np.int8)
    decided = np.zeros(len(w.physics_steps), bool)
    for holds, who, why in ends:
        now = holds & ~decided
        outcome[now], reason[now] = who, why
        decided |= holds
    return outcome, reason
