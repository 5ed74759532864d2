"""How far a midrange missile in flight can still gain on a target that runs straight away from it.

The missile of the game model (docs/midrange.md, "Missile reach") flies on
``dv/dt = thrust(t) - Cd0 v^2`` along its line of sight (induced drag from turning is left out),
with thrust ``missile_thrust_g * g`` for the first ``missile_burn_s`` of its flight and none after,
``Cd0 = g / missile_vt^2``. It dies when, burnt out, it is slower than ``missile_min_speed``, or
at ``missile_max_time_s``. A target that flees
straight away at speed ``u`` opens the range at ``u``; the missile gains ``v(t) - u`` per second,
so its greatest gain ("reach") is reached where, burnt out, it has slowed to ``u``, or where it
dies. A launch whose reach exceeds the range is inside the no-escape zone: dragging alone cannot
defeat it.

Both phases have closed forms (``V = sqrt(a / Cd0)``, ``k = sqrt(a Cd0)``):
- boost below ``V``: ``v = V tanh(k t + atanh(v0 / V))``, distance
  ``ln(cosh(k t + p) / cosh(p)) / Cd0``; above ``V`` (a missile launched faster than the boost's
  own terminal speed): ``v = V coth(k t + acoth(v0 / V))``, distance ``ln(sinh(k t + p) / sinh(p)) / Cd0``;
- coast: ``v = v1 / (1 + Cd0 v1 t)``, distance ``ln(1 + Cd0 v1 t) / Cd0``, and the time to slow
  to ``s`` is ``(1 / s - 1 / v1) / Cd0``.

The arena is a circle, and a fighter outside it is destroyed, so a target can run only as far as
its edge (``room``, along the line away from the missile). Taken to gain no more range once it gets
there, it is caught by a missile whose whole remaining flight (its reach against a target that
does not run) exceeds the range plus that room: the reach before the edge is
``max(reach(u), reach(0) - room)`` (``reach_before_edge``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.games.midrange.params import MIDRANGE_PARAMS

if TYPE_CHECKING:  # torch is optional (the train extra): the numpy path never imports it
    from torch import Tensor

_LOG_2 = float(np.log(2.0))


def _const(like: Tensor, value: float) -> Tensor:
    """``value`` as a 0-d tensor of ``like``'s dtype and device. Dividing by it (or dividing it by a
    tensor) rounds as numpy does: CUDA turns a division by a Python number into a multiplication by
    its reciprocal, and ``number / tensor`` is ``tensor.reciprocal() * number`` (two roundings)."""
    import torch

    return torch.tensor(value, dtype=like.dtype, device=like.device)


@dataclass(frozen=True)
class MissileModel:
    """The missile numbers the reach depends on (the game's defaults unless given)."""

    g: float = MIDRANGE_PARAMS["g"].default
    vt: float = MIDRANGE_PARAMS["missile_vt"].default
    thrust_g: float = MIDRANGE_PARAMS["missile_thrust_g"].default
    burn_s: float = MIDRANGE_PARAMS["missile_burn_s"].default
    min_speed: float = MIDRANGE_PARAMS["missile_min_speed"].default
    max_time_s: float = MIDRANGE_PARAMS["missile_max_time_s"].default

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> MissileModel:
        """The model of a game's parameter dict (missing names keep their defaults)."""
        keys = {"g": "g", "vt": "missile_vt", "thrust_g": "missile_thrust_g", "burn_s": "missile_burn_s",
                "min_speed": "missile_min_speed", "max_time_s": "missile_max_time_s"}
        return cls(**{field: float(params.get(name, getattr(cls, field))) for field, name in keys.items()})

    @property
    def cd0(self) -> float:
        return self.g / self.vt**2

    def reach(self, speed: np.ndarray, time_of_flight: np.ndarray, flee_speed: np.ndarray) -> np.ndarray:
        """Greatest range (m) a missile with this speed (m/s) and time of flight (s) can still close
        on a target fleeing straight away at ``flee_speed`` (m/s); 0 if it can close none. Arrays
        broadcast together; the result is float64."""
        arrays = (np.asarray(x, np.float64) for x in (speed, time_of_flight, flee_speed))
        v0, t0, u = np.broadcast_arrays(*arrays)
        v0 = np.maximum(v0, 1e-6)
        u = np.maximum(u, 0.0)
        c = self.cd0
        end = np.full(v0.shape, self.max_time_s)
        boost_left = np.clip(np.minimum(self.burn_s, end) - t0, 0.0, None)

        # boost: the speed rises (toward V), so the gain is largest at its start or its end; coast:
        # the speed falls, so the gain is largest where it reaches u (or the missile dies)
        a = self.thrust_g * self.g
        boost_dist, v1 = self._boost(v0, boost_left, a, c)
        boost_gain = boost_dist - u * boost_left

        # coast phase: from v1 at time t0 + boost_left until it slows to max(u, min_speed) or times out
        coast_start = t0 + boost_left
        coast_left = np.clip(end - coast_start, 0.0, None)
        stop_speed = np.maximum(u, self.min_speed)
        with np.errstate(divide="ignore"):
            to_stop = np.where(v1 > stop_speed, (1.0 / stop_speed - 1.0 / v1) / c, 0.0)
        t_coast = np.minimum(to_stop, coast_left)
        coast_dist = np.log1p(c * v1 * t_coast) / c
        coast_gain = coast_dist - u * t_coast
        # a missile already burnt out and slower than the minimum speed is dead: no reach
        dead = (boost_left <= 0.0) & (v0 < self.min_speed)
        best = np.maximum(boost_gain + np.maximum(coast_gain, 0.0), 0.0)
        return np.where(dead, 0.0, best)

    def reach_before_edge(self, speed: np.ndarray, time_of_flight: np.ndarray, flee_speed: np.ndarray,
                          room: np.ndarray) -> np.ndarray:
        """``reach`` for a target that has only ``room`` m to run before the arena's edge and gains
        no range after it: ``max(reach(u), reach(0) - room)`` (float64)."""
        still = self.reach(speed, time_of_flight, 0.0)
        return np.maximum(self.reach(speed, time_of_flight, flee_speed), still - np.asarray(room, np.float64))

    @staticmethod
    def _boost(v0: np.ndarray, t: np.ndarray, a: float, c: float) -> tuple[np.ndarray, np.ndarray]:
        """(distance, final speed) after ``t`` s of boost from ``v0``."""
        if a <= 0.0:
            dist = np.log1p(c * v0 * t) / c
            return dist, v0 / (1.0 + c * v0 * t)
        big_v, k = np.sqrt(a / c), np.sqrt(a * c)
        below = v0 < big_v
        ratio = np.where(below, v0 / big_v, big_v / np.maximum(v0, big_v * (1 + 1e-12)))
        p = np.arctanh(np.clip(ratio, 0.0, 1.0 - 1e-12))
        x = k * t + p
        # ln(cosh(x) / cosh(p)) and ln(sinh(x) / sinh(p)), written to stay finite for large x
        log_cosh = lambda z: z + np.log1p(np.exp(-2.0 * z)) - np.log(2.0)  # noqa: E731
        log_sinh = lambda z: z + np.log1p(-np.exp(-2.0 * z)) - np.log(2.0)  # noqa: E731
        with np.errstate(divide="ignore", invalid="ignore"):
            dist_below = (log_cosh(x) - log_cosh(p)) / c
            dist_above = (log_sinh(x) - log_sinh(np.maximum(p, 1e-12))) / c
            v_below = big_v * np.tanh(x)
            v_above = big_v / np.tanh(np.maximum(x, 1e-12))
        dist = np.where(below, dist_below, dist_above)
        speed = np.where(below, v_below, v_above)
        return np.where(t > 0.0, dist, 0.0), np.where(t > 0.0, speed, v0)

    def reach_torch(self, speed: Tensor, time_of_flight: Tensor, flee_speed: Tensor) -> Tensor:
        """``reach`` on tensors (any one device), float64: the numpy arithmetic operation by
        operation. Equal to ``reach`` but for the last ulp of the float64 transcendental functions
        (arctanh, exp, log1p, tanh), whose torch and numpy implementations may round differently."""
        import torch

        f64 = torch.float64
        v0, t0, u = torch.broadcast_tensors(*(x.to(f64) for x in (speed, time_of_flight, flee_speed)))
        v0 = v0.clamp(min=1e-6)
        u = u.clamp(min=0.0)
        c = self.cd0
        boost_left = (min(self.burn_s, self.max_time_s) - t0).clamp(min=0.0)

        a = self.thrust_g * self.g
        boost_dist, v1 = self._boost_torch(v0, boost_left, a, c)
        boost_gain = boost_dist - u * boost_left

        coast_start = t0 + boost_left
        coast_left = (self.max_time_s - coast_start).clamp(min=0.0)
        stop_speed = u.clamp(min=self.min_speed)
        one = _const(v0, 1.0)
        to_stop = torch.where(v1 > stop_speed, (one / stop_speed - one / v1) / _const(v0, c), 0.0)
        t_coast = torch.minimum(to_stop, coast_left)
        coast_dist = torch.log1p(c * v1 * t_coast) / _const(v0, c)
        coast_gain = coast_dist - u * t_coast
        dead = (boost_left <= 0.0) & (v0 < self.min_speed)
        best = (boost_gain + coast_gain.clamp(min=0.0)).clamp(min=0.0)
        return torch.where(dead, 0.0, best)

    def reach_before_edge_torch(self, speed: Tensor, time_of_flight: Tensor, flee_speed: Tensor,
                                room: Tensor) -> Tensor:
        """``reach_before_edge`` on tensors, float64."""
        import torch

        still = self.reach_torch(speed, time_of_flight, torch.zeros_like(flee_speed))
        running = self.reach_torch(speed, time_of_flight, flee_speed)
        return torch.maximum(running, still - room.to(torch.float64))

    @staticmethod
    def _boost_torch(v0: Tensor, t: Tensor, a: float, c: float) -> tuple[Tensor, Tensor]:
        """``_boost`` on float64 tensors."""
        import torch

        c_t = _const(v0, c)
        if a <= 0.0:
            dist = torch.log1p(c * v0 * t) / c_t
            return dist, v0 / (1.0 + c * v0 * t)
        big_v, k = float(np.sqrt(a / c)), float(np.sqrt(a * c))
        big_v_t = _const(v0, big_v)
        below = v0 < big_v
        ratio = torch.where(below, v0 / big_v_t, big_v_t / v0.clamp(min=big_v * (1 + 1e-12)))
        p = torch.atanh(ratio.clamp(0.0, 1.0 - 1e-12))
        x = k * t + p

        def log_cosh(z: Tensor) -> Tensor:
            return z + torch.log1p(torch.exp(-2.0 * z)) - _LOG_2

        def log_sinh(z: Tensor) -> Tensor:
            return z + torch.log1p(-torch.exp(-2.0 * z)) - _LOG_2

        dist_below = (log_cosh(x) - log_cosh(p)) / c_t
        dist_above = (log_sinh(x) - log_sinh(p.clamp(min=1e-12))) / c_t
        v_below = big_v * torch.tanh(x)
        v_above = big_v_t / torch.tanh(x.clamp(min=1e-12))
        dist = torch.where(below, dist_below, dist_above)
        speed = torch.where(below, v_below, v_above)
        return torch.where(t > 0.0, dist, 0.0), torch.where(t > 0.0, speed, v0)


def room(qx: np.ndarray, qy: np.ndarray, ux: np.ndarray, uy: np.ndarray, radius: float) -> np.ndarray:
    """How far (m) a fighter at ``(qx, qy)`` from the arena's centre can go along the unit vector
    ``(ux, uy)`` before the circle of ``radius`` m: the positive root of ``|q + s u| = radius``
    (0 for a fighter on or outside it). Any frame in which both are written will do (float64)."""
    qx, qy, ux, uy = (np.asarray(x, np.float64) for x in (qx, qy, ux, uy))
    along = qx * ux + qy * uy
    inside = np.maximum(along * along - (qx * qx + qy * qy) + radius * radius, 0.0)
    return np.maximum(np.sqrt(inside) - along, 0.0)


def room_torch(qx: Tensor, qy: Tensor, ux: Tensor, uy: Tensor, radius: float) -> Tensor:
    """``room`` on tensors, float64, operation by operation."""
    import torch

    qx, qy, ux, uy = (x.to(torch.float64) for x in (qx, qy, ux, uy))
    along = qx * ux + qy * uy
    inside = (along * along - (qx * qx + qy * qy) + radius * radius).clamp(min=0.0)
    return (torch.sqrt(inside) - along).clamp(min=0.0)
