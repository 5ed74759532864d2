"""Scripted midrange pilots: a uniform random pilot and a rule-based BVR pilot.

Both read only the observation (layout in ``arena/games/midrange/obs.py``) and decide every row
at once with numpy. Angles are relative to the fighter's nose, positive to the LEFT, as the
observation's bearings and the rudder are.

Each pilot also has a torch version (``act_torch``), for a rollout whose observations stay on the
GPU. The heuristic's repeats the numpy rules operation by operation in the dtypes numpy computes
them in (float32, float64 where numpy promotes), so on the same observations it gives the same
actions, with one exception: ``arctan2`` (bearings from sin/cos) is not the same function in numpy
(float32: SIMD code, SVML on AVX-512 CPUs) and torch; the two differ by a few ulp, so a row whose
angle lies within a few ulp of one of the rules' thresholds may get another action (measured: none
of the tens of thousands of rows of real matches the tests compare). The random pilot's torch
version draws from the same numpy generator as ``act``, so the two are equal draw for draw.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.agents.scripted import ScriptedAgent
from arena.games.midrange.obs import (
    ACTION_NVEC,
    FIGHTER,
    MISSILE,
    RANGE_SCALE_M,
    SELF,
    SPEED_SCALE_MS,
    MidrangeObsLayout,
)

if TYPE_CHECKING:
    from torch import Tensor

RUDDER_CENTRE = 2
FULL_THROTTLE = 2
# Whether numpy computes a float32 array times a numpy float64 scalar in float64 (numpy >= 2, NEP 50)
# or in float32 (numpy 1's value-based casting): the torch version follows the installed numpy.
_MIXED_FLOAT64 = (np.ones(1, np.float32) * np.deg2rad(1.0)).dtype == np.float64

_S = {name: i for i, name in enumerate(SELF)}
_F = {name: i for i, name in enumerate(FIGHTER)}
_M = {name: i for i, name in enumerate(MISSILE)}


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angle wrapped into (-pi, pi]."""
    return np.pi - np.mod(np.pi - angle, 2.0 * np.pi)


def angle_of(sin: np.ndarray, cos: np.ndarray) -> np.ndarray:
    """Bearing in radians from its sin/cos features (0 for zero padding)."""
    return np.arctan2(sin, cos)


def _per_row(value: float | np.ndarray) -> float | np.ndarray:
    """A tuning value against a per-missile [n, K] array: a scalar as it is, a per-row [n] array
    (``VariedPilot``'s) as a column."""
    return value[:, None] if isinstance(value, np.ndarray) else value


def wrap_torch(angle: Tensor) -> Tensor:
    """``wrap`` on a tensor, in its dtype: ``remainder`` is numpy's ``mod`` (a floored ``fmod``)."""
    import torch

    return math.pi - torch.remainder(math.pi - angle, 2.0 * math.pi)


def _mixed(x: Tensor) -> Tensor:
    """A float32 tensor in the dtype numpy gives a float32 array times a numpy float64 scalar."""
    import torch

    return x.to(torch.float64) if _MIXED_FLOAT64 else x


class MidrangePilot(ScriptedAgent):
    """Base of the midrange pilots: the layout for the given team sizes and missile lists."""

    game = "midrange"

    def __init__(self, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4) -> None:
        self.layout = MidrangeObsLayout(tuple(int(t) for t in team_sizes), int(tracked_missiles))
        super().__init__(self.layout.obs_dim, ACTION_NVEC)

    # The layout's views cannot reshape an empty block (allies in 1v1, missiles with K = 0).
    def allies(self, obs: np.ndarray) -> np.ndarray:
        """[n, max_team - 1, 9]: allies by range."""
        if self.layout.max_team == 1:
            return np.zeros((len(obs), 0, len(FIGHTER)), dtype=obs.dtype)
        return self.layout.allies(obs)

    def threats(self, obs: np.ndarray) -> np.ndarray:
        """[n, K, 7]: missiles locked on me, nearest first."""
        if self.layout.tracked_missiles == 0:
            return np.zeros((len(obs), 0, len(MISSILE)), dtype=obs.dtype)
        return self.layout.threats(obs)

    def own_missiles(self, obs: np.ndarray) -> np.ndarray:
        """[n, K, 7]: my missiles in flight."""
        if self.layout.tracked_missiles == 0:
            return np.zeros((len(obs), 0, len(MISSILE)), dtype=obs.dtype)
        return self.layout.own_missiles(obs)

    def missile_block_torch(self, obs: Tensor, own: bool) -> Tensor:
        """[n, K, 7] tensor view of my missiles (``own``) or of the threats (empty with K = 0)."""
        import torch

        if self.layout.tracked_missiles == 0:
            return torch.zeros((len(obs), 0, len(MISSILE)), dtype=obs.dtype, device=obs.device)
        return self.layout.own_missiles(obs) if own else self.layout.threats(obs)


class RandomPilot(MidrangePilot):
    """Uniformly random rudder, throttle and fire, from a seeded numpy generator."""

    name = "random"

    def __init__(
        self, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4, seed: int = 0
    ) -> None:
        super().__init__(team_sizes, tracked_missiles)
        self.rng = np.random.default_rng(seed)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        return self._draw(len(obs))

    def _act_torch(self, obs: Tensor) -> Tensor:
        """The numpy generator's draw (as ``_act``), moved to the observations' device: the numbers
        are few, the observations are not read, and checkpoints keep one generator state per pilot."""
        import torch

        return torch.from_numpy(self._draw(len(obs)).astype(np.int32)).to(obs.device)

    def _draw(self, n: int) -> np.ndarray:
        return self.rng.integers(0, np.asarray(self.action_nvec), size=(n, self.action_dims))


@dataclass(frozen=True)
class HeuristicTuning:
    """The numbers behind the heuristic pilot's rules (distances in km, times in s)."""

    fire_range_km: float = 14.0  # fire at a target inside this range...
    fire_range_per_closing_km: float = 8.0  # ...plus this much per km/s of closing speed
    fire_min_range_km: float = 1.0  # too close for the missile to turn onto the target
    fire_cone_deg: float = 20.0  # target within this angle off the nose
    defend_time_s: float = 40.0  # a closing threat with less time to go than this is defended
    defend_range_km: float = 6.0  # a threat inside this range is defended, closing or not
    drag_time_s: float = 20.0  # crank above this time to go, drag (threat on the tail) below it
    crank_deg: float = 70.0  # threat this far off the nose while cranking
    boundary_soft_km: float = 12.0  # start bending the heading toward the centre here...
    boundary_hard_km: float = 4.0  # ...and keep it within ``boundary_max_off_deg`` of it here
    boundary_max_off_deg: float = 60.0
    rudder_full_deg: float = 8.0  # heading error that asks for full rudder
    burn_fraction_of_flight: float = 10.0 / 60.0  # motor burn / longest flight (game defaults)


class HeuristicPilot(MidrangePilot):
    """A beyond-visual-range pilot built from a few rules, every row decided independently.

    1. Attack: head at full throttle for the nearest alive enemy that no ally is nearer to (so
       a team spreads over the enemies); fire when it is inside the cone and the range (longer
       when closing fast) and is the enemy the missile will lock, with cooldown done, missiles
       left, and no own missile still live (one in flight at a time: the observation does not
       say which enemy an own missile chases).
    2. Defend: a missile locked on me with little time to go (or very close) overrides the
       attack: far out, crank (threat ~70 deg off the nose, turning away on its side); close in,
       drag (threat on the tail) so the missile runs out of energy chasing me.
    3. Boundary: near the arena edge the chosen heading is bent toward the centre, the more so
       the closer the edge, because leaving the arena is death.
    """

    name = "heuristic"
    TORCH_TWINS = (("_act", "_act_torch"), ("_heading", "_heading_torch"), ("_defence", "_defence_torch"),
                   ("_bend_from_boundary", "_bend_from_boundary_torch"), ("_rudder", "_rudder_torch"),
                   ("_fire", "_fire_torch"), ("_missile_in_flight", "_missile_in_flight_torch"))

    def __init__(
        self,
        team_sizes: tuple[int, int] = (1, 1),
        tracked_missiles: int = 4,
        tuning: HeuristicTuning | None = None,
    ) -> None:
        super().__init__(team_sizes, tracked_missiles)
        self.tuning = tuning or HeuristicTuning()

    def _act(self, obs: np.ndarray) -> np.ndarray:
        me = self.layout.self_features(obs)
        enemies = self.layout.enemies(obs)
        target = self.layout.assigned_enemy(obs)  # allies spread over the enemies
        rows = np.arange(len(obs))
        enemy = enemies[rows, np.maximum(target, 0)]
        has_target = target >= 0
        bearing = angle_of(enemy[:, _F["bearing_sin"]], enemy[:, _F["bearing_cos"]])
        target_bearing = np.where(has_target, bearing, 0.0)

        heading = self._bend_from_boundary(me, self._heading(obs, target_bearing))

        actions = np.empty((len(obs), 3), dtype=np.int32)
        actions[:, 0] = self._rudder(heading)
        actions[:, 1] = FULL_THROTTLE
        actions[:, 2] = self._fire(obs, enemy, has_target, target_bearing)
        return actions

    def _act_torch(self, obs: Tensor) -> Tensor:
        """``_act`` on tensors, rule by rule (each ``_<rule>_torch`` repeats ``_<rule>``)."""
        import torch

        me = self.layout.self_features(obs)
        enemies = self.layout.enemies(obs)
        target = self.layout.assigned_enemy_torch(obs)
        rows = torch.arange(len(obs), device=obs.device)
        enemy = enemies[rows, target.clamp(min=0)]
        has_target = target >= 0
        bearing = torch.atan2(enemy[:, _F["bearing_sin"]], enemy[:, _F["bearing_cos"]])
        target_bearing = torch.where(has_target, bearing, torch.zeros((), dtype=obs.dtype, device=obs.device))

        heading = self._bend_from_boundary_torch(me, self._heading_torch(obs, target_bearing))

        actions = torch.empty((len(obs), 3), dtype=torch.int32, device=obs.device)
        actions[:, 0] = self._rudder_torch(heading)
        actions[:, 1] = FULL_THROTTLE
        actions[:, 2] = self._fire_torch(obs, enemy, has_target, target_bearing).to(torch.int32)
        return actions

    # ------------------------------------------------------------------ rules

    def _heading(self, obs: np.ndarray, target_bearing: np.ndarray) -> np.ndarray:
        """Where to point (relative to the nose, rad), before the boundary bends it: the defence's
        heading when a threat is urgent, else the target's bearing (the rule other pilots replace)."""
        threatened, defend_heading = self._defence(obs)
        return np.where(threatened, defend_heading, target_bearing)

    def _heading_torch(self, obs: Tensor, target_bearing: Tensor) -> Tensor:
        """``_heading`` on tensors, in float64 as numpy's."""
        import torch

        threatened, defend_heading = self._defence_torch(obs)
        return torch.where(threatened, defend_heading, target_bearing.to(torch.float64))

    def _defence(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which rows defend, and the heading (relative, rad) that defends them."""
        t = self.tuning
        threats = self.threats(obs)  # [n, K, 7]
        n = len(obs)
        if threats.shape[1] == 0:  # no threat list in this layout
            return np.zeros(n, dtype=bool), np.zeros(n)
        present = threats[:, :, _M["present"]] > 0.5
        range_km = threats[:, :, _M["range"]] * (RANGE_SCALE_M / 1000.0)
        closing_kms = threats[:, :, _M["closing"]] * (SPEED_SCALE_MS / 1000.0)
        time_to_go = np.where(closing_kms > 1e-3, range_km / np.maximum(closing_kms, 1e-3), np.inf)
        urgent = present & ((time_to_go < _per_row(t.defend_time_s))
                            | (range_km < _per_row(t.defend_range_km)))
        # The worst threat: least time to go, a near one that is not closing (yet) counting as
        # closing slowly, since it can still turn back onto me.
        urgency = np.where(urgent, range_km / np.maximum(closing_kms, 0.3), np.inf)
        worst = threats[np.arange(n), np.argmin(urgency, axis=1)]
        bearing = angle_of(worst[:, _M["bearing_sin"]], worst[:, _M["bearing_cos"]])
        worst_range = worst[:, _M["range"]] * (RANGE_SCALE_M / 1000.0)
        worst_closing = worst[:, _M["closing"]] * (SPEED_SCALE_MS / 1000.0)
        side = np.where(bearing >= 0.0, 1.0, -1.0)  # the threat is on my left (+1) or right
        crank = bearing - side * np.deg2rad(t.crank_deg)
        drag = wrap(bearing + np.pi)
        drag_now = (worst_range < t.drag_time_s * np.maximum(worst_closing, 0.0)) | (
            worst_range < t.defend_range_km
        )
        return urgent.any(axis=1), np.where(drag_now, drag, crank)

    def _defence_torch(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        """``_defence`` on tensors; the heading in float64, as numpy's."""
        import torch

        t = self.tuning
        threats = self.missile_block_torch(obs, own=False)
        n = len(obs)
        if threats.shape[1] == 0:
            return (torch.zeros(n, dtype=torch.bool, device=obs.device),
                    torch.zeros(n, dtype=torch.float64, device=obs.device))
        inf = torch.tensor(math.inf, dtype=obs.dtype, device=obs.device)
        present = threats[:, :, _M["present"]] > 0.5
        range_km = threats[:, :, _M["range"]] * (RANGE_SCALE_M / 1000.0)
        closing_kms = threats[:, :, _M["closing"]] * (SPEED_SCALE_MS / 1000.0)
        time_to_go = torch.where(closing_kms > 1e-3, range_km / closing_kms.clamp(min=1e-3), inf)
        urgent = present & ((time_to_go < t.defend_time_s) | (range_km < t.defend_range_km))
        urgency = torch.where(urgent, range_km / closing_kms.clamp(min=0.3), inf)
        worst = threats[torch.arange(n, device=obs.device), urgency.argmin(dim=1)]
        bearing = torch.atan2(worst[:, _M["bearing_sin"]], worst[:, _M["bearing_cos"]])
        worst_range = worst[:, _M["range"]] * (RANGE_SCALE_M / 1000.0)
        worst_closing = worst[:, _M["closing"]] * (SPEED_SCALE_MS / 1000.0)
        side = torch.where(bearing >= 0.0, 1.0, -1.0).to(torch.float64)
        crank = bearing.to(torch.float64) - side * float(np.deg2rad(t.crank_deg))
        drag = wrap_torch(bearing + math.pi)
        drag_now = (worst_range < t.drag_time_s * worst_closing.clamp(min=0.0)) | (
            worst_range < t.defend_range_km
        )
        return urgent.any(dim=1), torch.where(drag_now, drag.to(torch.float64), crank)

    def _bend_from_boundary(self, me: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """Clamps the heading to within an allowed angle of the centre near the edge."""
        t = self.tuning
        boundary_km = me[:, _S["boundary"]] * (RANGE_SCALE_M / 1000.0)
        centre = angle_of(me[:, _S["centre_sin"]], me[:, _S["centre_cos"]])
        closeness = np.clip(
            (t.boundary_soft_km - boundary_km) / (t.boundary_soft_km - t.boundary_hard_km), 0.0, 1.0
        )
        allowed = np.pi - closeness * (np.pi - np.deg2rad(t.boundary_max_off_deg))
        off = wrap(heading - centre)
        return centre + np.clip(off, -allowed, allowed)

    def _bend_from_boundary_torch(self, me: Tensor, heading: Tensor) -> Tensor:
        """``_bend_from_boundary`` on tensors (``heading`` float64, as numpy's)."""
        import torch

        t = self.tuning
        boundary_km = me[:, _S["boundary"]] * (RANGE_SCALE_M / 1000.0)
        centre = torch.atan2(me[:, _S["centre_sin"]], me[:, _S["centre_cos"]])
        width = torch.tensor(t.boundary_soft_km - t.boundary_hard_km, dtype=me.dtype, device=me.device)
        closeness = ((t.boundary_soft_km - boundary_km) / width).clamp(0.0, 1.0)
        allowed = math.pi - _mixed(closeness) * float(np.pi - np.deg2rad(t.boundary_max_off_deg))
        allowed = allowed.to(torch.float64)
        off = wrap_torch(heading - centre.to(torch.float64))
        return centre.to(torch.float64) + torch.minimum(torch.maximum(off, -allowed), allowed)

    def _rudder(self, heading: np.ndarray) -> np.ndarray:
        """Rudder index turning the nose toward ``heading`` (positive = left = high index)."""
        command = np.clip(wrap(heading) / np.deg2rad(self.tuning.rudder_full_deg), -1.0, 1.0)
        return (RUDDER_CENTRE + np.rint(2.0 * command)).astype(np.int32)

    def _rudder_torch(self, heading: Tensor) -> Tensor:
        """``_rudder`` on a float64 heading tensor (``round`` is numpy's ``rint``: half to even)."""
        import torch

        full = torch.tensor(float(np.deg2rad(self.tuning.rudder_full_deg)), dtype=heading.dtype,
                            device=heading.device)
        command = (wrap_torch(heading) / full).clamp(-1.0, 1.0)
        return (RUDDER_CENTRE + torch.round(2.0 * command)).to(torch.int32)

    def _fire(
        self, obs: np.ndarray, enemy: np.ndarray, has_target: np.ndarray, target_bearing: np.ndarray
    ) -> np.ndarray:
        """Fire at the target when the shot is good and none of my missiles is still live."""
        t = self.tuning
        me = self.layout.self_features(obs)
        range_km = enemy[:, _F["range"]] * (RANGE_SCALE_M / 1000.0)
        closing_kms = enemy[:, _F["closing"]] * (SPEED_SCALE_MS / 1000.0)
        max_range = t.fire_range_km + t.fire_range_per_closing_km * closing_kms
        in_envelope = (range_km < max_range) & (range_km > t.fire_min_range_km)
        in_cone = np.abs(target_bearing) < np.deg2rad(t.fire_cone_deg)
        ready = (me[:, _S["missiles"]] > 1e-6) & (me[:, _S["cooldown"]] < 1e-6)
        # The missile locks on the enemy nearest the nose: it must be the target.
        enemies = self.layout.enemies(obs)
        off_nose = np.abs(angle_of(enemies[:, :, _F["bearing_sin"]], enemies[:, :, _F["bearing_cos"]]))
        off_nose = np.where(enemies[:, :, _F["alive"]] > 0.5, off_nose, np.inf)
        locks_target = np.abs(target_bearing) <= off_nose.min(axis=1) + 1e-6
        return has_target & in_envelope & in_cone & ready & locks_target & ~self._missile_in_flight(obs)

    def _fire_torch(self, obs: Tensor, enemy: Tensor, has_target: Tensor, target_bearing: Tensor) -> Tensor:
        """``_fire`` on tensors: [n] bool."""
        import torch

        t = self.tuning
        me = self.layout.self_features(obs)
        range_km = enemy[:, _F["range"]] * (RANGE_SCALE_M / 1000.0)
        closing_kms = enemy[:, _F["closing"]] * (SPEED_SCALE_MS / 1000.0)
        max_range = t.fire_range_km + t.fire_range_per_closing_km * closing_kms
        in_envelope = (range_km < max_range) & (range_km > t.fire_min_range_km)
        cone = float(np.deg2rad(t.fire_cone_deg))
        if _MIXED_FLOAT64:
            in_cone = target_bearing.abs().to(torch.float64) < cone
        else:
            in_cone = target_bearing.abs() < torch.tensor(cone, dtype=target_bearing.dtype,
                                                          device=target_bearing.device)
        ready = (me[:, _S["missiles"]] > 1e-6) & (me[:, _S["cooldown"]] < 1e-6)
        enemies = self.layout.enemies(obs)
        off_nose = torch.atan2(enemies[:, :, _F["bearing_sin"]], enemies[:, :, _F["bearing_cos"]]).abs()
        inf = torch.tensor(math.inf, dtype=obs.dtype, device=obs.device)
        off_nose = torch.where(enemies[:, :, _F["alive"]] > 0.5, off_nose, inf)
        locks_target = target_bearing.abs() <= off_nose.min(dim=1).values + 1e-6
        return (has_target & in_envelope & in_cone & ready & locks_target
                & ~self._missile_in_flight_torch(obs))

    def _missile_in_flight(self, obs: np.ndarray) -> np.ndarray:
        """Whether one of my missiles is still a danger to its target: motor burning or closing.

        The observation does not say which enemy an own missile chases, so the discipline is
        one live missile at a time; a missile its target has outrun frees the next shot.
        """
        own = self.own_missiles(obs)  # [n, K, 7]
        burning = own[:, :, _M["tof"]] < self.tuning.burn_fraction_of_flight
        live = (own[:, :, _M["present"]] > 0.5) & ((own[:, :, _M["closing"]] > 0.0) | burning)
        return live.any(axis=1)

    def _missile_in_flight_torch(self, obs: Tensor) -> Tensor:
        """``_missile_in_flight`` on tensors: [n] bool."""
        own = self.missile_block_torch(obs, own=True)
        burning = own[:, :, _M["tof"]] < self.tuning.burn_fraction_of_flight
        live = (own[:, :, _M["present"]] > 0.5) & ((own[:, :, _M["closing"]] > 0.0) | burning)
        return live.any(dim=1)


class EvaderPilot(HeuristicPilot):
    """The heuristic pilot's flying and missile defence (crank, drag, keep off the edge), never
    firing: a target that must be shot down, not out-waited, and that cannot punish mistakes. A
    stepping stone in a league's pool (HHMARL's curriculum also starts with opponents that do not
    shoot back)."""

    name = "evader"

    def _act(self, obs: np.ndarray) -> np.ndarray:
        actions = super()._act(obs)
        actions[:, 2] = 0
        return actions

    def _act_torch(self, obs: Tensor) -> Tensor:
        actions = super()._act_torch(obs)
        actions[:, 2] = 0
        return actions


#: What ``VariedPilot`` draws for each match, uniformly within each range (distances in km, times in
#: s): the tuning fields of ``HeuristicTuning`` it varies, the share of matches flown at half
#: throttle, and the share of "patient" matches, which hold fire while more than a drawn fraction of
#: the time limit is left (defending all the while), then attack.
VARIED_RANGES: dict[str, tuple[float, float]] = {
    "fire_range_km": (4.0, 24.0),
    "fire_range_per_closing_km": (0.0, 8.0),
    "fire_cone_deg": (5.0, 20.0),
    "defend_time_s": (10.0, 60.0),
    "defend_range_km": (2.0, 8.0),
    "drag_time_s": (5.0, 30.0),
    "crank_deg": (40.0, 90.0),
}
HALF_THROTTLE_SHARE = 0.25
PATIENT_SHARE = 0.25
PATIENT_HOLD = (0.3, 0.9)  # the patient hold fire while the time left is above this fraction
_VARIED_COLUMNS = (*VARIED_RANGES, "throttle", "hold_above")


class VariedPilot(HeuristicPilot):
    """The heuristic pilot with its numbers drawn anew for every match, per fighter: fire range and
    cone, when and how it defends (``VARIED_RANGES``), its throttle, and whether it is patient
    (holds fire, defending, for the first part of the match). One player that flies a different
    style every match: a league's pool meets shooters from 4 to ~40 km, early and late defenders,
    slow and fast fighters, and pilots that wait out a volley before they attack, where the fixed
    bots show it three styles (the randomised scripted opponents of HHMARL's and AlphaStar's
    diverse pools).

    A fighter's numbers are drawn when its row starts a match (``episode_start``), or when the row
    is first seen, from a generator seeded with ``seed``; rows are the caller's (``act``'s ``rows``;
    without them, the batch's positions). ``state_dict`` holds the generator and every row's numbers,
    so a resumed run goes on with the same matches. numpy only (no torch version)."""

    name = "varied"
    keeps_rows = True
    #: the names of a row's numbers, the columns of ``table`` (a subclass that draws more appends its own)
    COLUMNS: tuple[str, ...] = _VARIED_COLUMNS

    def __init__(
        self, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4, seed: int = 0
    ) -> None:
        super().__init__(team_sizes, tracked_missiles)
        self.base_tuning = self.tuning
        self.rng = np.random.default_rng(seed)
        self.table = np.zeros((0, len(self.COLUMNS)))  # [rows seen, columns] the numbers of each row
        self.drawn = np.zeros(0, dtype=bool)
        self._current: np.ndarray | None = None  # the rows' numbers while ``_act`` runs

    def act(self, obs: np.ndarray, rows: np.ndarray | None = None,
            episode_start: np.ndarray | None = None) -> np.ndarray:
        obs = self._check_obs(obs)
        rows = np.arange(len(obs)) if rows is None else np.asarray(rows, dtype=np.int64).reshape(-1)
        starts = np.zeros(len(obs), dtype=bool) if episode_start is None else np.asarray(episode_start, bool)
        if rows.shape != (len(obs),) or starts.shape != (len(obs),) or (len(rows) and rows.min() < 0):
            raise ValueError(f"VariedPilot.act expects rows [n] >= 0 and episode_start [n] for {len(obs)} "
                             f"observation rows; got rows {rows.shape}, episode_start {starts.shape}")
        if len(rows) and rows.max() >= len(self.drawn):
            grow = int(rows.max()) + 1 - len(self.drawn)
            self.table = np.concatenate([self.table, np.zeros((grow, self.table.shape[1]))])
            self.drawn = np.concatenate([self.drawn, np.zeros(grow, dtype=bool)])
        fresh = rows[starts | ~self.drawn[rows]]
        if len(fresh):
            self.table[fresh] = self._draw(len(fresh))
            self.drawn[fresh] = True
        self._current = self.table[rows]
        try:
            return super().act(obs)
        finally:
            self._current = None

    def reset(self) -> None:
        """Every row draws new numbers at its next step."""
        self.drawn[:] = False

    def _draw(self, n: int) -> np.ndarray:
        """``n`` rows of numbers, column by column (``COLUMNS``)."""
        columns = [self.rng.uniform(low, high, n) for low, high in VARIED_RANGES.values()]
        half = self.rng.random(n) < HALF_THROTTLE_SHARE
        columns.append(np.where(half, FULL_THROTTLE - 1, FULL_THROTTLE).astype(np.float64))
        patient = self.rng.random(n) < PATIENT_SHARE
        columns.append(np.where(patient, self.rng.uniform(*PATIENT_HOLD, n), np.inf))
        return np.stack(columns, axis=1)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        called_alone = self._current is None  # without ``act``'s rows: numbers for this call only
        numbers = self._draw(len(obs)) if self._current is None else self._current
        self._current = numbers
        by_name = dict(zip(self.COLUMNS, numbers.T, strict=True))
        self.tuning = dataclasses.replace(self.base_tuning, **{k: by_name[k] for k in VARIED_RANGES})
        try:
            actions = super()._act(obs)  # a subclass's rules read the rows' numbers in ``_current``
        finally:
            self.tuning = self.base_tuning
            if called_alone:
                self._current = None
        actions[:, 1] = by_name["throttle"].astype(np.int32)
        time_left = self.layout.self_features(obs)[:, _S["time_left"]]
        actions[:, 2] &= (time_left <= by_name["hold_above"]).astype(np.int32)
        return actions

    def state_dict(self) -> dict[str, Any]:
        """The generator and the numbers of every row seen (plain lists: checkpoints load with
        ``weights_only=True``)."""
        return {"rng": self.rng.bit_generator.state, "table": self.table.tolist(),
                "drawn": self.drawn.tolist()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        table = np.asarray(state["table"], dtype=np.float64)
        if table.size == 0:
            table = table.reshape(0, len(self.COLUMNS))
        who = type(self).__name__
        if table.ndim != 2 or table.shape[1] != len(self.COLUMNS):
            raise ValueError(f"{who} state: a table of {len(self.COLUMNS)} numbers per row "
                             f"({', '.join(self.COLUMNS)}) expected; got shape {table.shape}")
        drawn = np.asarray(state["drawn"], dtype=bool)
        if drawn.shape != (len(table),):
            raise ValueError(f"{who} state: {len(table)} rows of numbers but {drawn.shape} drawn flags")
        self.rng.bit_generator.state = dict(state["rng"])
        self.table, self.drawn = table, drawn


def ladder_pilot(
    name: str, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4
) -> HeuristicPilot:
    """``heuristic_<N>km``: the heuristic pilot firing only inside N km, whatever the closing speed
    (the heuristic itself fires inside 14 km plus 8 km per km/s of closing, ~19 km head-on).

    Between heuristic pilots the one that fires first wins: the other turns to defend and never
    fires back (``tests/test_scripted_pilots.py`` checks 10 km against 6 km; measured, 128 of 128
    games in each pairing tried, 8 km against 4 up to 20 against 16, and 24 km against the
    heuristic itself). So a ladder of them in
    a league's pool (6, 10, 14 km) grades the skill the heuristic asks for: a learner that holds
    its fire to the merge loses to the 6 km rung, and beating each rung takes a shot from further
    out than the last. HHMARL's curriculum uses graded scripted opponents the same way."""
    km = float(name.removeprefix("heuristic_").removesuffix("km"))
    pilot = HeuristicPilot(team_sizes, tracked_missiles,
                           HeuristicTuning(fire_range_km=km, fire_range_per_closing_km=0.0))
    pilot.name = name
    return pilot
