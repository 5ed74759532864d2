"""NumPy reference of the midrange game (arena/native/games/midrange/midrange.h), for parity tests and
reading.

``MidrangeReference`` has the face of ``arena._core.MidrangeBatch``: the same parameters, seeds,
output buffers (as attributes, rewritten by every step), auto-reset and world state. The physics
lives in ``midrange_physics``; this module holds the observation and the decision step.
Observations are computed in float64 and cast to float32 at the end, like the C++ casts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from arena.envs.reference import (
    END_NONE,
    END_TIME_LIMIT,
    OUTCOME_NONE,
    OUTCOME_TEAM0,
    OUTCOME_TEAM1,
    Arr,
    EnvOutputs,
    env_seed,
    mix64,
)
from arena.games.midrange.physics import (
    ACTION_NVEC,
    DEFAULT_PARAMS,
    EV_FIRED,
    FIGHTER_FEATURES,
    MISSILE_FEATURES,
    NUM_EVENTS,
    RANGE_SCALE,
    SPEED_SCALE,
    Derived,
    World,
    launch_target,
    physics_step,
    reset_env,
    try_launch,
)

# As in midrange.h, each length is inverted once and the feature scales are multiplied in.
INV_RANGE_SCALE = 1.0 / RANGE_SCALE
INV_SPEED_SCALE = 1.0 / SPEED_SCALE


def _inverse_length(r: Arr) -> Arr:
    """``inverse_length``: 1 / r, or 0 below 1e-9 m."""
    near = r < 1e-9
    return np.where(near, 0.0, 1.0 / np.where(near, 1.0, r))


def _bearing(hx: Arr, hy: Arr, rx: Arr, ry: Arr, r: Arr, inv_r: Arr) -> tuple[Arr, Arr]:
    """sin, cos of the bearing of (rx, ry), of length r, seen from heading (hx, hy): sin positive
    to the left."""
    near = r < 1e-9
    sin = np.where(near, 0.0, (hx * ry - hy * rx) * inv_r)
    return sin, np.where(near, 1.0, (hx * rx + hy * ry) * inv_r)


def _unit_heading(vx: Arr, vy: Arr, v: Arr) -> tuple[Arr, Arr]:
    """The unit vector of (vx, vy) of length v, or (1, 0) for a mass at rest."""
    still = v < 1e-9
    inv_v = 1.0 / np.where(still, 1.0, v)
    return np.where(still, 1.0, vx * inv_v), np.where(still, 0.0, vy * inv_v)


# The observation is computed for every observer i at once: axis 1 of every [E, F, ...] array
# below is the observing fighter, and "me" values are [E, F, 1] so they broadcast over the list.

def _me(field: Arr) -> Arr:
    """A fighter field seen as the observer's own value: [E, F] -> [E, F, 1]."""
    return field[:, :, None]


def _fighter_features(p: dict[str, Any], w: World, hx: Arr, hy: Arr, j: Arr) -> Arr:
    """``write_fighter`` for fighters j ([E, F, n] indices) seen by each observer: [E, F, n, 9]."""
    rows = np.arange(len(j))[:, None, None]
    ox, oy, ovx, ovy = (a[rows, j] for a in (w.fighter_x, w.fighter_y, w.fighter_vx, w.fighter_vy))
    alive = w.fighter_alive[rows, j]
    rx, ry = ox - _me(w.fighter_x), oy - _me(w.fighter_y)
    r = np.sqrt(rx * rx + ry * ry)
    inv_r = _inverse_length(r)
    bearing_sin, bearing_cos = _bearing(hx, hy, rx, ry, r, inv_r)
    ov = np.sqrt(ovx * ovx + ovy * ovy)
    ohx, ohy = _unit_heading(ovx, ovy, ov)
    aspect_sin, aspect_cos = _bearing(ohx, ohy, -rx, -ry, r, inv_r)  # where I am as seen from its nose
    apart = r > 1e-9
    closing = -(rx * (ovx - _me(w.fighter_vx)) + ry * (ovy - _me(w.fighter_vy)))
    closing = np.where(apart, closing * inv_r, 0.0)
    speed = ov * (1.0 / p["fighter_vt"])
    features = np.stack([r * INV_RANGE_SCALE, bearing_sin, bearing_cos, aspect_sin, aspect_cos,
                         closing * INV_SPEED_SCALE, speed], axis=-1)
    # Present, alive, and the rest only for an alive fighter (zero for the dead).
    return np.concatenate([np.ones_like(r)[..., None], alive[..., None].astype(np.float64),
                           np.where(alive[..., None], features, 0.0)], axis=-1)


def _missile_features(p: dict[str, Any], w: World, hx: Arr, hy: Arr, k: Arr, ref: Arr) -> Arr:
    """``write_missile`` for missile slots k ([E, F, n]) seen by each observer: [E, F, n, 7]. Range
    and closing speed are measured to fighters ``ref`` (the observer for threats, else the target)."""
    rows = np.arange(len(k))[:, None, None]
    mx, my, mvx, mvy = (a[rows, k] for a in (w.missile_x, w.missile_y, w.missile_vx, w.missile_vy))
    fx, fy, fvx, fvy = (a[rows, ref] for a in (w.fighter_x, w.fighter_y, w.fighter_vx, w.fighter_vy))
    rx, ry = fx - mx, fy - my
    r = np.sqrt(rx * rx + ry * ry)
    inv_r = _inverse_length(r)
    bx, by = mx - _me(w.fighter_x), my - _me(w.fighter_y)
    b = np.sqrt(bx * bx + by * by)
    bearing_sin, bearing_cos = _bearing(hx, hy, bx, by, b, _inverse_length(b))
    apart = r > 1e-9
    closing = np.where(apart, (rx * (mvx - fvx) + ry * (mvy - fvy)) * inv_r, 0.0)
    return np.stack([np.ones_like(r), r * INV_RANGE_SCALE, bearing_sin, bearing_cos,
                     np.sqrt(mvx * mvx + mvy * mvy) * INV_SPEED_SCALE, closing * INV_SPEED_SCALE,
                     w.missile_tof[rows, k] * (1.0 / p["missile_max_time_s"])], axis=-1)


def _self_features(p: dict[str, Any], d: Derived, w: World, v: Arr, hx: Arr, hy: Arr) -> Arr:
    """Alive, speed, bearing to the arena centre, distance to the boundary, missiles left,
    cooldown, time left: [E, F, 8]. ``v`` is each fighter's speed."""
    x, y = w.fighter_x, w.fighter_y
    dist_c = np.sqrt(x * x + y * y)
    centre_sin, centre_cos = _bearing(hx[..., 0], hy[..., 0], -x, -y, dist_c, _inverse_length(dist_c))
    cooldown = (w.fighter_cooldown * (1.0 / p["launch_cooldown_s"]) if p["launch_cooldown_s"] > 0
                else np.zeros_like(x))
    time_left = 1.0 - w.physics_steps * (1.0 / d.max_steps_f)
    inv_missiles = np.float64(1.0) / np.float64(p["missiles_per_fighter"])  # inf for 0: 0 * inf is NaN
    return np.stack([np.ones_like(x), v * (1.0 / p["fighter_vt"]), centre_sin, centre_cos,
                     (p["arena_radius_m"] - dist_c) * INV_RANGE_SCALE,
                     w.fighter_missiles.astype(np.float64) * inv_missiles, cooldown,
                     np.broadcast_to(time_left[:, None], x.shape)], axis=-1)


def _first_listed(key: Arr, listed: Arr, slots: int) -> tuple[Arr, Arr]:
    """Indices of the ``slots`` smallest keys among the listed entries of the last axis, ties in
    index order (a stable sort is the C++ insertion sort), and whether each slot holds one.
    Unlisted entries get key inf, so they sort after every listed one."""
    order = np.argsort(np.where(listed, key, np.inf), axis=-1, kind="stable")[..., :slots]
    return order, np.take_along_axis(listed, order, axis=-1)


def observe(p: dict[str, Any], d: Derived, w: World) -> np.ndarray:
    """``observe``: observations of every fighter, float32 [E, F, obs_dim]; zeros for the dead."""
    num_envs, nf = w.fighter_x.shape
    v = np.sqrt(w.fighter_vx * w.fighter_vx + w.fighter_vy * w.fighter_vy)
    hx, hy = (_me(h) for h in _unit_heading(w.fighter_vx, w.fighter_vy, v))
    with np.errstate(divide="ignore", invalid="ignore"):  # missiles_per_fighter = 0 gives NaN, as in C++
        blocks = [_self_features(p, d, w, v, hx, hy)]

    # Enemies then allies: the alive ones by range, then the dead (key 1e300), then zero padding.
    # Lists are sorted by squared range, as in C++.
    team = np.array([0] * p["team_size"][0] + [1] * p["team_size"][1])
    same_team = np.broadcast_to(team[:, None] == team[None, :], (num_envs, nf, nf))
    others = ~np.eye(nf, dtype=bool)
    rx = w.fighter_x[:, None, :] - _me(w.fighter_x)  # [E, i, j]: from observer i to fighter j
    ry = w.fighter_y[:, None, :] - _me(w.fighter_y)
    key = np.where(w.fighter_alive[:, None, :], rx * rx + ry * ry, 1e300)
    for group, slots in ((~same_team, d.max_team), (same_team & others, d.max_team - 1)):
        j, present = _first_listed(key, group, slots)
        block = np.where(present[..., None], _fighter_features(p, w, hx, hy, j), 0.0)
        blocks.append(block.reshape(num_envs, nf, slots * FIGHTER_FEATURES))

    # Missiles locked on me by range to me, then mine in flight by range to their target; K of each.
    me = np.arange(nf)[None, :, None]
    rows = np.arange(num_envs)[:, None, None]
    tracked = p["tracked_missiles"]
    for threats in (True, False):
        locked_or_owned = w.missile_target if threats else w.missile_owner
        listed = w.missile_active[:, None, :] & (locked_or_owned[:, None, :] == me)
        ref = np.broadcast_to(me if threats else np.maximum(w.missile_target, 0)[:, None, :], listed.shape)
        rx = w.fighter_x[rows, ref] - w.missile_x[:, None, :]
        ry = w.fighter_y[rows, ref] - w.missile_y[:, None, :]
        k, shown = _first_listed(rx * rx + ry * ry, listed, tracked)
        features = _missile_features(p, w, hx, hy, k, np.take_along_axis(ref, k, axis=-1))
        block = np.where(shown[..., None], features, 0.0)
        padding = np.zeros((num_envs, nf, tracked - k.shape[-1], MISSILE_FEATURES))  # fewer slots than K
        block = np.concatenate([block, padding], axis=2)
        blocks.append(block.reshape(num_envs, nf, tracked * MISSILE_FEATURES))

    # Legal actions: every rudder and throttle value and "no fire"; "fire" where it would launch.
    legal = np.ones((num_envs, nf, sum(ACTION_NVEC)))
    for i in range(nf):
        legal[:, i, -1] = launch_target(p, d, w, i)[0] >= 0
    blocks.append(legal)

    obs = np.concatenate(blocks, axis=-1)
    return np.where(w.fighter_alive[..., None], obs, 0.0).astype(np.float32)


class MidrangeReference(EnvOutputs):
    """``num_envs`` midrange matches stepped in NumPy exactly as the core steps them.

    ``params`` overrides the defaults of midrange.h ``Params`` (keys: the field names of
    ``arena._core.MidrangeParams``; ``team_size`` a pair). Rows are ``env * fighters + slot``.
    """

    def __init__(self, params: dict[str, Any] | None = None, num_envs: int = 1) -> None:
        unknown = set(params or {}) - set(DEFAULT_PARAMS)
        if unknown:
            raise ValueError(f"unknown midrange parameters {sorted(unknown)}; known: {list(DEFAULT_PARAMS)}")
        p = {**DEFAULT_PARAMS, **(params or {})}
        # The C++ fields are doubles and ints: convert, so Python int arithmetic never sneaks in.
        p = {k: float(v) if isinstance(DEFAULT_PARAMS[k], float) else v for k, v in p.items()}
        p["team_size"] = tuple(int(n) for n in p["team_size"])
        self.params = p
        self.derived = d = Derived.of(p)
        self.num_envs = num_envs
        self.agents_per_env = d.num_fighters
        self.obs_dim = d.obs_dim
        self.world = World.empty(num_envs, d.num_fighters, d.num_missiles)
        self._rng = [0] * num_envs  # generator state per env
        self.allocate_outputs(num_envs, self.agents_per_env, d.obs_dim, NUM_EVENTS)

    # ------------------------------------------------------------ reset

    def reset(self, seed: int) -> np.ndarray:
        """Starts a new match in every env, seeded like ``MidrangeBatch.reset``; returns the obs."""
        seed = int(seed)
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed must lie in [0, 2**64), got {seed}")
        return self.reset_envs([env_seed(seed, e) for e in range(self.num_envs)])

    def reset_envs(self, seeds: list[int] | np.ndarray) -> np.ndarray:
        """Reseeds env e with ``seeds[e]`` (``MidrangeBatch.reset_envs``); returns the obs."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"seeds must have length {self.num_envs}, got {len(seeds)}")
        for e, seed in enumerate(seeds):
            self._rng[e] = reset_env(self.params, self.derived, self.world, e, mix64(int(seed)))
        self.clear_outputs()
        self._observe_all()
        return self.obs.copy()

    # ------------------------------------------------------------ step

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        """One decision of every env (``midrange::step``): fire, then up to frame_skip physics
        steps (fewer where the match ends), then results; finished envs report their final obs
        and are reset in place, their generator continuing. Returns copies of the buffers."""
        p, d, w = self.params, self.derived, self.world
        a = self._check_actions(actions).reshape(self.num_envs, d.num_fighters, len(ACTION_NVEC))
        rudder = 0.5 * (a[..., 0] - 2)
        throttle = 0.5 * a[..., 1]
        events = np.zeros((self.num_envs, d.num_fighters, NUM_EVENTS), np.int32)
        for i in range(d.num_fighters):
            events[:, i, EV_FIRED] += try_launch(p, d, w, i, a[:, i, 2] == 1)

        outcome = np.full(self.num_envs, OUTCOME_NONE, np.int8)
        reason = np.full(self.num_envs, END_NONE, np.int8)
        for _ in range(p["frame_skip"]):
            running = np.flatnonzero(outcome == OUTCOME_NONE)
            if running.size == 0:
                break
            if running.size == self.num_envs:  # no match has ended yet: step the batch in place
                outcome, reason = physics_step(p, d, w, rudder, throttle, events)
            else:  # a finished match stops moving: step a copy of the others and write it back
                part, part_events = w.take(running), events[running]
                outcome[running], reason[running] = physics_step(
                    p, d, part, rudder[running], throttle[running], part_events)
                w.put(running, part)
                events[running] = part_events
        w.decisions += 1

        done = outcome != OUTCOME_NONE
        team = np.array([0] * p["team_size"][0] + [1] * p["team_size"][1])
        decisive = (outcome == OUTCOME_TEAM0) | (outcome == OUTCOME_TEAM1)
        rewards = np.where(decisive[:, None], np.where(outcome[:, None] == team, 1.0, -1.0), 0.0)
        self.rewards[:] = rewards.astype(np.float32).ravel()
        self.terminals[:] = np.repeat(done & (reason != END_TIME_LIMIT), d.num_fighters)
        self.truncations[:] = np.repeat(reason == END_TIME_LIMIT, d.num_fighters)
        self.events[:] = events.reshape(-1, NUM_EVENTS)
        self.outcome[:], self.end_reason[:], self.done[:] = outcome, reason, done
        ended = np.flatnonzero(done)
        if ended.size:
            self.episode_length[ended] = w.decisions[ended]
            self.final_obs.reshape(self.num_envs, d.num_fighters, -1)[ended] = observe(p, d, w.take(ended))
            for e in ended:
                self._rng[e] = reset_env(p, d, w, int(e), self._rng[e])
        self._observe_all()
        return self.outputs()

    def outputs(self) -> dict[str, np.ndarray]:
        """Copies of the output buffers, named like the ``MidrangeBatch`` attributes."""
        names = ("obs", "rewards", "terminals", "truncations", "events", "outcome", "end_reason",
                 "episode_length", "done", "final_obs")
        return {name: getattr(self, name).copy() for name in names}

    def _check_actions(self, actions: np.ndarray) -> np.ndarray:
        a = np.asarray(actions)
        rows = self.num_envs * self.agents_per_env
        if a.shape != (rows, len(ACTION_NVEC)):
            raise ValueError(f"actions must have shape ({rows}, {len(ACTION_NVEC)}), got {a.shape}")
        if ((a < 0) | (a >= np.array(ACTION_NVEC))).any():
            raise ValueError(f"actions out of range: allowed 0..n-1 for n in {ACTION_NVEC}")
        return a.astype(np.int64)

    def _observe_all(self) -> None:
        self.obs[:] = observe(self.params, self.derived, self.world).reshape(self.obs.shape)

    # ------------------------------------------------------------ world state

    def world_state(self) -> dict[str, np.ndarray]:
        """Copies of the state, keyed and shaped like ``MidrangeBatch.world_state()``."""
        return {name: value.copy() for name, value in vars(self.world).items()}

    def set_world_state(self, state: dict[str, Any]) -> None:
        """Replaces the state of every env (every key of ``world_state()`` required), re-observes."""
        current = self.world_state()
        new = {}
        for name, old in current.items():
            if name not in state:
                raise ValueError(f"world state is missing {name!r}")
            value = np.asarray(state[name])
            if value.shape != old.shape:
                raise ValueError(f"world state field {name!r} has shape {value.shape}, expected {old.shape}")
            new[name] = value.astype(old.dtype)
        mis = new["fighter_missiles"]
        if ((mis < 0) | (mis > self.params["missiles_per_fighter"])).any():
            raise ValueError("fighter_missiles must lie in 0..missiles_per_fighter")
        f = self.derived.num_fighters
        for name in ("missile_owner", "missile_target"):
            ids = new[name][new["missile_active"]]
            if ((ids < 0) | (ids >= f)).any():
                raise ValueError("an active missile needs owner and target in 0..num_fighters-1")
        self.world = World(**new)
        self._observe_all()
