"""Midrange's reward terms (its observations, events and missiles), registered by the game's spec
(``GameSpec.reward_terms``) under the short names of ``TERMS``.

- ``MissileFired``, ``MissileMissed``, ``MissileEvaded``: counts of the core's missile events.
- ``Survival``: +1 per decision the fighter is alive after the step.
- ``MissileClosing``: potential-based shaping on the closing speed of my missiles minus that of
  the missiles locked on me (zero-sum in 1v1).
- ``MissileReach``: potential-based shaping on how far inside its reach (the range it can still
  close on a target that flees straight away) each of my missiles is, minus the same for the
  missiles locked on me (zero-sum in 1v1).
- ``Pointing``, ``Energy`` and ``Closing``: potential-based shaping on the nearest alive enemy:
  ``F = gamma * phi(s') - phi(s)``. Because F is a difference of potentials, it adds the same
  constant, ``-phi(s_0)``, to the return of every policy from a start state and leaves the optimal
  policy unchanged, provided ``gamma`` equals the trainer's discount. The potential of the state
  after a match ends is 0 (the episode's absorbing state), so the sum of the shaping over an
  episode telescopes to ``-phi(s_0)`` with gamma = 1.
- ``LaunchAngle``: a price on each launch that grows with the locked enemy's angle off the nose,
  paid at the launch.
- ``Boundary``: a penalty that grows linearly from 0 at ``margin_m`` from the arena edge to -1 at the
  edge. Not potential-based: it is meant to change behaviour (discourage flying out).

Torch versions are bit-identical to the numpy ones except ``MissileReach``'s reach (float64
arctanh, exp, log1p, tanh: a few float64 ulp, which the float32 potential almost always rounds
away) and ``LaunchAngle``'s float32 ``arccos`` (neither numpy's nor torch's is correctly rounded:
the price can differ in its last few float32 ulp).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.games.midrange.missile_reach import MissileModel, room, room_torch
from arena.games.midrange.obs import FIGHTER, MISSILE, RANGE_SCALE_M, SELF, SPEED_SCALE_MS, MidrangeObsLayout
from arena.games.midrange.params import MIDRANGE_PARAMS
from arena.rewards.base import Reward, RewardError, StepBatch, TorchStepBatch
from arena.rewards.terms import Event, PotentialShaping, divide_as_numpy, where_or_zero

if TYPE_CHECKING:
    from torch import Tensor

SELF_ALIVE = SELF.index("alive")
SELF_BOUNDARY = SELF.index("boundary")
ENEMY_ALIVE = FIGHTER.index("alive")
ENEMY_RANGE = FIGHTER.index("range")
ENEMY_BEARING_COS = FIGHTER.index("bearing_cos")
ENEMY_ASPECT_COS = FIGHTER.index("aspect_cos")
MISSILE_PRESENT = MISSILE.index("present")
MISSILE_RANGE = MISSILE.index("range")
MISSILE_SPEED = MISSILE.index("speed")
MISSILE_CLOSING = MISSILE.index("closing")
MISSILE_TOF = MISSILE.index("tof")
ENEMY_PRESENT = FIGHTER.index("present")
ENEMY_SPEED = FIGHTER.index("speed")
SELF_SPEED = SELF.index("speed")
SELF_CENTRE_COS = SELF.index("centre_cos")
SELF_CENTRE_SIN = SELF.index("centre_sin")
ENEMY_BEARING_SIN = FIGHTER.index("bearing_sin")
MISSILE_BEARING_COS = MISSILE.index("bearing_cos")
MISSILE_BEARING_SIN = MISSILE.index("bearing_sin")


def layout_of(term: Reward, batch: StepBatch | TorchStepBatch) -> MidrangeObsLayout:
    """The observation layout of a midrange batch, for ``term`` (checks the game and the obs width)."""
    term.check_game(batch)
    tracked = batch.params.get("tracked_missiles") if batch.params else None
    if tracked is None:  # infer it: obs_dim = self + enemies + allies + 2 * K * missile
        probe = MidrangeObsLayout(tuple(batch.team_sizes), 0)
        tracked = (batch.obs_after.shape[1] - probe.obs_dim) // 14
    layout = MidrangeObsLayout(tuple(batch.team_sizes), int(tracked))
    if batch.obs_after.shape[1] != layout.obs_dim or batch.obs_before.shape[1] != layout.obs_dim:
        raise RewardError(
            f"{term.label()}: observations have {batch.obs_after.shape[1]} features but the midrange "
            f"layout for team_sizes={batch.team_sizes}, tracked_missiles={tracked} has {layout.obs_dim}"
        )
    return layout




class MissileFired(Event):
    """-1 per missile launched: a cost that discourages spraying missiles."""

    def __init__(self) -> None:
        super().__init__("fired", -1.0)


class MissileMissed(Event):
    """-1 per missile of this agent that burnt out or timed out without hitting (midrange): a
    wasted shot, one of a handful. Paired with ``MissileEvaded`` on the same weight it is zero-sum:
    the shooter loses what the target gains."""

    def __init__(self) -> None:
        super().__init__("missed", -1.0)


class MissileEvaded(Event):
    """+1 per missile locked on this agent that burnt out or timed out without hitting it
    (midrange): a defended shot."""

    def __init__(self) -> None:
        super().__init__("evaded", 1.0)


class Survival(Reward):
    """+1 per decision this agent's fighter is alive after the step."""

    game = "midrange"

    def __call__(self, batch: StepBatch) -> np.ndarray:
        layout = layout_of(self, batch)
        return (layout.self_features(batch.obs_after)[:, SELF_ALIVE] > 0.5).astype(np.float32)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        import torch

        layout = layout_of(self, batch)
        return (layout.self_features(batch.obs_after)[:, SELF_ALIVE] > 0.5).to(torch.float32)


class MidrangeShaping(PotentialShaping):
    """Potential-based shaping on midrange observations: checks the layout before each step and finds
    the nearest alive enemy."""

    game = "midrange"

    def _check_ready(self, batch: StepBatch | TorchStepBatch) -> float:
        layout_of(self, batch)
        return super()._check_ready(batch)

    def nearest_enemy(self, batch: StepBatch, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(features [rows, 9] of the nearest alive enemy, mask [rows]: self alive and such an enemy).

        The observation lists alive enemies by range first, so slot 0 is the nearest alive one."""
        layout = layout_of(self, batch)
        nearest = layout.enemies(obs)[:, 0, :]
        alive = layout.self_features(obs)[:, SELF_ALIVE] > 0.5
        return nearest, alive & (nearest[:, ENEMY_ALIVE] > 0.5)

    def nearest_enemy_torch(self, batch: TorchStepBatch, obs: Tensor) -> tuple[Tensor, Tensor]:
        """``nearest_enemy`` on tensors."""
        layout = layout_of(self, batch)
        nearest = layout.enemies(obs)[:, 0, :]
        alive = layout.self_features(obs)[:, SELF_ALIVE] > 0.5
        return nearest, alive & (nearest[:, ENEMY_ALIVE] > 0.5)


class AdvantageShaping(MidrangeShaping):
    """Shaping on a quantity of mine that, with ``zero_sum=True``, has the nearest alive enemy's
    counterpart subtracted (an advantage: in 1v1 one side's potential is the other's negative)."""

    def __init__(
        self, gamma: float | None = None, bootstrap_truncation: bool | None = None, zero_sum: bool = False
    ) -> None:
        super().__init__(gamma, bootstrap_truncation)
        if not isinstance(zero_sum, bool):
            raise RewardError(f"zero_sum must be true or false, got {zero_sum!r}")
        self.zero_sum = zero_sum


class Pointing(AdvantageShaping):
    """Potential = cosine of the bearing to the nearest alive enemy (1 nose-on, -1 tail-on).

    Rewards turning the nose toward the enemy, where missiles can be launched. ``zero_sum=True``
    subtracts the enemy's own pointing at me (the cosine of the aspect): the classic angle
    advantage, 2 with the enemy's tail in front of my nose, -2 the other way round, and in 1v1 one
    side's potential is the other's negative. It also credits forcing the enemy to turn away.

    ``target="assigned"`` points at the enemy left to me by the heuristic pilot's split of targets
    (``MidrangeObsLayout.assigned_enemy``: each enemy to the friendly fighter nearest it) instead of
    my nearest, so that a team's fighters are credited for spreading over the enemies rather than
    all turning to the same one. In 1v1 both are the enemy."""

    TARGETS = ("nearest", "assigned")

    def __init__(self, gamma: float | None = None, bootstrap_truncation: bool | None = None,
                 zero_sum: bool = False, target: str = "nearest") -> None:
        super().__init__(gamma, bootstrap_truncation, zero_sum)
        if target not in self.TARGETS:
            raise RewardError(f"target={target!r} is not one of {list(self.TARGETS)}")
        self.target = target

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        if self.target == "assigned":
            layout = layout_of(self, batch)
            pick = layout.assigned_enemy(obs)
            enemy = layout.enemies(obs)[np.arange(len(obs)), np.maximum(pick, 0)]
            valid = (layout.self_features(obs)[:, SELF_ALIVE] > 0.5) & (pick >= 0)
        else:
            enemy, valid = self.nearest_enemy(batch, obs)
        phi = enemy[:, ENEMY_BEARING_COS]
        if self.zero_sum:
            phi = phi - enemy[:, ENEMY_ASPECT_COS]
        return np.where(valid, phi, 0.0).astype(np.float32)

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        import torch

        if self.target == "assigned":
            layout = layout_of(self, batch)
            pick = layout.assigned_enemy_torch(obs)
            rows = torch.arange(len(obs), device=obs.device)
            enemy = layout.enemies(obs)[rows, pick.clamp(min=0)]
            valid = (layout.self_features(obs)[:, SELF_ALIVE] > 0.5) & (pick >= 0)
        else:
            enemy, valid = self.nearest_enemy_torch(batch, obs)
        phi = enemy[:, ENEMY_BEARING_COS]
        if self.zero_sum:
            phi = phi - enemy[:, ENEMY_ASPECT_COS]
        return where_or_zero(valid, phi)


class Energy(AdvantageShaping):
    """Potential = my speed / VT (the fighter's terminal speed: the observation's own scale).

    Speed is energy: a missile leaves the rail at the launcher's speed and reaches further, and a
    fast fighter closes to its launch range sooner and drags a threat out of its reach. A fresh
    policy that turns at random bleeds speed; this credits holding it. ``zero_sum=True`` subtracts
    the nearest alive enemy's speed (the energy advantage), so in 1v1 one side's potential is the
    other's negative. Potential-based: it changes no optimal policy."""

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        layout = layout_of(self, batch)
        me = layout.self_features(obs)
        alive = me[:, SELF_ALIVE] > 0.5
        phi = me[:, SELF_SPEED].astype(np.float32)
        if self.zero_sum:  # with no alive enemy left there is no advantage to hold: 0
            nearest, valid = self.nearest_enemy(batch, obs)
            return np.where(valid, phi - nearest[:, ENEMY_SPEED], 0.0).astype(np.float32)
        return np.where(alive, phi, 0.0).astype(np.float32)

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        layout = layout_of(self, batch)
        me = layout.self_features(obs)
        phi = me[:, SELF_SPEED]
        if self.zero_sum:
            nearest, valid = self.nearest_enemy_torch(batch, obs)
            return where_or_zero(valid, phi - nearest[:, ENEMY_SPEED])
        return where_or_zero(me[:, SELF_ALIVE] > 0.5, phi)


class Closing(MidrangeShaping):
    """Potential = -(range to the nearest alive enemy) / ``range_scale_m``, capped at ``max_range_m``.

    The shaping per step is then about the closing distance covered (closing speed * dt), so it
    rewards closing in; the cap keeps a far-away enemy from dominating the return."""

    def __init__(
        self,
        gamma: float | None = None,
        bootstrap_truncation: bool | None = None,
        range_scale_m: float = 10000.0,
        max_range_m: float = 60000.0,
    ) -> None:
        super().__init__(gamma, bootstrap_truncation)
        for key, value in (("range_scale_m", range_scale_m), ("max_range_m", max_range_m)):
            if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise RewardError(f"{key} must be a positive number of metres, got {value!r}")
        self.range_scale_m = float(range_scale_m)
        self.max_range_m = float(max_range_m)

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        nearest, valid = self.nearest_enemy(batch, obs)
        range_m = np.minimum(nearest[:, ENEMY_RANGE] * RANGE_SCALE_M, self.max_range_m)
        return np.where(valid, -range_m / self.range_scale_m, 0.0).astype(np.float32)

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        nearest, valid = self.nearest_enemy_torch(batch, obs)
        range_m = (nearest[:, ENEMY_RANGE] * RANGE_SCALE_M).clamp(max=self.max_range_m)
        return where_or_zero(valid, divide_as_numpy(-range_m, self.range_scale_m))


class MissileClosing(MidrangeShaping):
    """Potential = closing speed (km/s) of my missiles on their targets minus that of the missiles
    locked on me, each counted only while closing (midrange).

    The shaping rewards what makes a missile hit or miss while it flies: a launch that closes fast,
    turning tail so that a threat closes slower. A missile that is hit or runs out takes its part
    of the potential with it, so over a match the shaping sums to about zero. In 1v1 one side's
    potential is the other's negative: the term is zero-sum. Missiles beyond the
    ``tracked_missiles`` nearest of each list are not seen and do not count."""

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        layout = layout_of(self, batch)
        alive = layout.self_features(obs)[:, SELF_ALIVE] > 0.5
        if layout.tracked_missiles == 0:
            return np.zeros(len(obs), np.float32)
        total = np.zeros(len(obs), np.float32)
        for block, sign in ((layout.own_missiles(obs), 1.0), (layout.threats(obs), -1.0)):
            present = block[:, :, MISSILE_PRESENT] > 0.5
            closing = np.maximum(block[:, :, MISSILE_CLOSING], 0.0) * (SPEED_SCALE_MS / 1000.0)
            total += np.float32(sign) * np.where(present, closing, 0.0).sum(axis=1, dtype=np.float32)
        return np.where(alive, total, 0.0).astype(np.float32)

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        import torch

        layout = layout_of(self, batch)
        alive = layout.self_features(obs)[:, SELF_ALIVE] > 0.5
        total = torch.zeros(len(obs), dtype=torch.float32, device=obs.device)
        if layout.tracked_missiles == 0:
            return total
        for block, sign in ((layout.own_missiles(obs), 1.0), (layout.threats(obs), -1.0)):
            present = block[:, :, MISSILE_PRESENT] > 0.5
            closing = block[:, :, MISSILE_CLOSING].clamp(min=0.0) * (SPEED_SCALE_MS / 1000.0)
            closing = where_or_zero(present, closing)
            summed = closing[:, 0]
            for k in range(1, closing.shape[1]):  # left to right, the order numpy adds a few columns in
                summed = summed + closing[:, k]
            total = total + summed * sign
        return where_or_zero(alive, total)


class MissileReach(MidrangeShaping):
    """Potential = how far inside its reach each of my missiles is, minus the same for the missiles
    locked on me (midrange).

    A missile's reach is the range it can still close on its target if the target turned tail now
    and fled straight away at its current speed (``arena/games/midrange/missile_reach.py``: the missile's
    speed and time of flight give it). Each missile counts ``clip((reach - range) / scale_m, -1,
    max_margin)``: positive inside the no-escape zone, negative for a shot that a dragging target
    outruns. ``max_margin=0`` only charges the shots out of reach (and credits the threats kept out
    of it), so that among the shots inside it a closer one is worth no more.
    So the shaping pays at the launch for where a missile was fired from (range, and the speed
    lost turning onto a target far off the nose), and while it flies for what keeps a threat out
    of reach (running, making it turn and bleed speed). Each missile's part leaves the potential
    when it hits or dies, so the term changes no optimal policy. The target of one of my missiles
    is taken to be the fastest alive enemy (in 1v1, the enemy), so in 1v1 one side's potential is
    the other's negative: the term is zero-sum. Missiles beyond the ``tracked_missiles`` nearest
    of each list are not seen and do not count.

    ``edge=True`` counts the arena's edge: a target runs only as far as the boundary along the line
    away from the missile, and is taken to gain no range after it (``MissileModel.reach_before_edge``),
    so running from a threat toward a nearby edge keeps it no further out of reach, and a shot at
    a target with its back to the edge counts as inside. A threat's line is exact (its bearing from
    me); my own missile's is worked out from its bearing from me and its range to the target (the
    fastest alive enemy, as above): of the two points on that bearing at that range, the one nearer
    me (the farther only when the nearer is behind me). So in 1v1 the term is zero-sum only up to
    that choice and float32 rounding."""

    def __init__(
        self,
        gamma: float | None = None,
        bootstrap_truncation: bool | None = None,
        scale_m: float = 10000.0,
        max_margin: float = 1.0,
        edge: bool = False,
    ) -> None:
        super().__init__(gamma, bootstrap_truncation)
        if not isinstance(edge, bool):
            raise RewardError(f"edge must be true or false, got {edge!r}")
        if not isinstance(scale_m, int | float) or not math.isfinite(scale_m) or scale_m <= 0:
            raise RewardError(f"scale_m must be a positive number of metres, got {scale_m!r}")
        if not isinstance(max_margin, int | float) or not 0.0 <= max_margin <= 1.0:
            raise RewardError(f"max_margin must be a number in [0, 1], got {max_margin!r}")
        self.scale_m = float(scale_m)
        self.max_margin = float(max_margin)
        self.edge = edge

    def potential(self, batch: StepBatch, obs: np.ndarray) -> np.ndarray:
        layout = layout_of(self, batch)
        own = layout.self_features(obs)
        alive = own[:, SELF_ALIVE] > 0.5
        if layout.tracked_missiles == 0:
            return np.zeros(len(obs), np.float32)
        params = batch.params or {}
        model = MissileModel.from_params(params)
        fighter_vt = float(params.get("fighter_vt", MIDRANGE_PARAMS["fighter_vt"].default))
        enemies = layout.enemies(obs)
        enemy_alive = (enemies[:, :, ENEMY_PRESENT] > 0.5) & (enemies[:, :, ENEMY_ALIVE] > 0.5)
        enemy_speed = np.where(enemy_alive, enemies[:, :, ENEMY_SPEED], 0.0).max(axis=1) * fighter_vt
        my_speed = own[:, SELF_SPEED] * fighter_vt
        total = np.zeros(len(obs), np.float64)
        if self.edge:
            radius = float(params.get("arena_radius_m", MIDRANGE_PARAMS["arena_radius_m"].default))
            # my position from the centre and the target's from me, in my heading's frame
            centre = radius - own[:, SELF_BOUNDARY].astype(np.float64) * RANGE_SCALE_M
            me = (-centre * own[:, SELF_CENTRE_COS], -centre * own[:, SELF_CENTRE_SIN])
            fastest = np.where(enemy_alive, enemies[:, :, ENEMY_SPEED], -1.0).argmax(axis=1)
            target = enemies[np.arange(len(obs)), fastest]
            target_range = target[:, ENEMY_RANGE].astype(np.float64) * RANGE_SCALE_M
            to_target = (target_range * target[:, ENEMY_BEARING_COS],
                         target_range * target[:, ENEMY_BEARING_SIN])
        lists = ((layout.own_missiles(obs), 1.0, enemy_speed), (layout.threats(obs), -1.0, my_speed))
        for block, sign, flee in lists:
            # only the missiles in flight are worked out (most slots are empty)
            row, slot = np.nonzero((block[:, :, MISSILE_PRESENT] > 0.5) & alive[:, None])
            missile = block[row, slot]
            speed = missile[:, MISSILE_SPEED] * SPEED_SCALE_MS
            tof = missile[:, MISSILE_TOF] * model.max_time_s
            if self.edge:
                along = _fleeing(me[0][row], me[1][row], to_target[0][row], to_target[1][row],
                                 missile[:, MISSILE_BEARING_COS], missile[:, MISSILE_BEARING_SIN],
                                 missile[:, MISSILE_RANGE].astype(np.float64) * RANGE_SCALE_M,
                                 threat=sign < 0, sqrt=np.sqrt, where=np.where)
                reach = model.reach_before_edge(speed, tof, flee[row], room(*along, radius))
            else:
                reach = model.reach(speed, tof, flee[row])
            margin = np.clip((reach - missile[:, MISSILE_RANGE] * RANGE_SCALE_M) / self.scale_m,
                             -1.0, self.max_margin)
            total += np.bincount(row, weights=sign * margin, minlength=len(obs))
        return total.astype(np.float32)

    def torch_potential(self, batch: TorchStepBatch, obs: Tensor) -> Tensor:
        """``potential`` on tensors: the reach of every missile slot (float64, on the batch's device)
        kept where a missile is in flight, each row's margins added in the slots' order (as
        ``bincount`` adds them), my missiles' before the threats'."""
        import torch

        layout = layout_of(self, batch)
        own = layout.self_features(obs)
        alive = own[:, SELF_ALIVE] > 0.5
        if layout.tracked_missiles == 0:
            return torch.zeros(len(obs), dtype=torch.float32, device=obs.device)
        params = batch.params or {}
        model = MissileModel.from_params(params)
        fighter_vt = float(params.get("fighter_vt", MIDRANGE_PARAMS["fighter_vt"].default))
        enemies = layout.enemies(obs)
        enemy_alive = (enemies[:, :, ENEMY_PRESENT] > 0.5) & (enemies[:, :, ENEMY_ALIVE] > 0.5)
        enemy_speed = where_or_zero(enemy_alive, enemies[:, :, ENEMY_SPEED]).max(dim=1).values * fighter_vt
        my_speed = own[:, SELF_SPEED] * fighter_vt
        total = torch.zeros(len(obs), dtype=torch.float64, device=obs.device)
        scale = torch.tensor(self.scale_m, dtype=torch.float64, device=obs.device)
        if self.edge:
            f64 = torch.float64
            radius = float(params.get("arena_radius_m", MIDRANGE_PARAMS["arena_radius_m"].default))
            centre = radius - own[:, SELF_BOUNDARY].to(f64) * RANGE_SCALE_M
            me = ((-centre * own[:, SELF_CENTRE_COS])[:, None], (-centre * own[:, SELF_CENTRE_SIN])[:, None])
            fastest = torch.where(enemy_alive, enemies[:, :, ENEMY_SPEED], -1.0).argmax(dim=1)
            target = enemies[torch.arange(len(obs), device=obs.device), fastest]
            target_range = target[:, ENEMY_RANGE].to(f64) * RANGE_SCALE_M
            to_target = ((target_range * target[:, ENEMY_BEARING_COS])[:, None],
                         (target_range * target[:, ENEMY_BEARING_SIN])[:, None])
        lists = ((layout.own_missiles(obs), 1.0, enemy_speed), (layout.threats(obs), -1.0, my_speed))
        for block, sign, flee in lists:
            in_flight = (block[:, :, MISSILE_PRESENT] > 0.5) & alive[:, None]
            speed = block[:, :, MISSILE_SPEED] * SPEED_SCALE_MS
            tof = block[:, :, MISSILE_TOF] * model.max_time_s
            if self.edge:
                along = _fleeing(*me, *to_target, block[:, :, MISSILE_BEARING_COS].to(f64),
                                 block[:, :, MISSILE_BEARING_SIN].to(f64),
                                 block[:, :, MISSILE_RANGE].to(f64) * RANGE_SCALE_M,
                                 threat=sign < 0, sqrt=torch.sqrt, where=torch.where)
                reach = model.reach_before_edge_torch(speed, tof, flee[:, None], room_torch(*along, radius))
            else:
                reach = model.reach_torch(speed, tof, flee[:, None])
            margin = (reach - block[:, :, MISSILE_RANGE] * RANGE_SCALE_M) / scale
            margin = margin.clamp(-1.0, self.max_margin)
            margin = torch.where(in_flight, margin * sign, 0.0)
            summed = torch.zeros_like(total)
            for k in range(margin.shape[1]):
                summed = summed + margin[:, k]
            total = total + summed
        return total.to(torch.float32)


def _fleeing(me_x: Any, me_y: Any, target_x: Any, target_y: Any, bearing_cos: Any, bearing_sin: Any,
             missile_range: Any, *, threat: bool, sqrt: Any, where: Any) -> tuple[Any, ...]:
    """(position from the centre, unit direction away from the missile) of the fighter a missile is
    after, in my heading's frame, as ``room`` takes them (numpy arrays or float64 tensors, with the
    library's ``sqrt`` and ``where``). A threat's fighter is me, fleeing against its
    bearing. My own missile's is the target: the missile lies along its bearing at the distance
    ``b`` from me where ``|target - b * bearing| = missile_range``, the nearer root unless it is
    behind me."""
    if threat:
        return me_x, me_y, -bearing_cos, -bearing_sin
    along = target_x * bearing_cos + target_y * bearing_sin
    square = along * along - (target_x * target_x + target_y * target_y) + missile_range * missile_range
    disc = sqrt(where(square > 0.0, square, 0.0))
    near = along - disc
    b = where(near >= 0.0, near, along + disc)
    away_x, away_y = target_x - b * bearing_cos, target_y - b * bearing_sin
    norm = sqrt(away_x * away_x + away_y * away_y)
    # a missile on its target (no line to take) flees along its bearing
    safe = where(norm > 1.0, norm, 1.0)
    ux = where(norm > 1.0, away_x / safe, bearing_cos)
    uy = where(norm > 1.0, away_y / safe, bearing_sin)
    return me_x + target_x, me_y + target_y, ux, uy


#: numpy's float32 ``degrees`` multiplies by 180f / pi_f (57.295776), not by float32(180 / pi)
_DEGREES_F32 = float(np.degrees(np.float32(1.0)))


def _launch_target_torch(layout: MidrangeObsLayout, obs: Tensor, cone_deg: float) -> tuple[Tensor, Tensor]:
    """``MidrangeObsLayout.launch_target`` on tensors: the same enemy rows and flags. The cone's
    cosine is compared in float64, as numpy compares a float32 array with a float64 scalar."""
    import torch

    enemies = layout.enemies(obs)
    cos = enemies[:, :, ENEMY_BEARING_COS]
    living = (enemies[:, :, ENEMY_PRESENT] > 0.5) & (enemies[:, :, ENEMY_ALIVE] > 0.5)
    edge = float(np.cos(np.radians(cone_deg)) - 1e-4)
    in_cone = living & (cos.to(torch.float64) >= edge)
    found = in_cone.any(dim=1)
    best = torch.where(in_cone, cos, -math.inf).argmax(dim=1)  # the first of equal maxima, as numpy
    pick = torch.where(found, best, 0)
    return enemies[torch.arange(len(obs), device=obs.device), pick], found


class LaunchAngle(Reward):
    """``-min(1, angle / cone_deg)`` per launch this decision, ``angle`` being the off-boresight angle
    of the enemy the missile locked (read from the observation the launch was decided on, by the
    core's rule: the living enemy closest to the nose inside the launch cone). A nose-on shot costs
    nothing, one at the edge of the 60-degree launch cone the full weight. Not potential-based: it is
    meant to change behaviour, like a prior on the fire action that favours the cone's centre (LAG).
    A missile turning toward a target off its nose spends the energy it needs to catch one that
    turns away; ``missile_missed`` prices the same shot tens of seconds later, when the miss is
    known, this term at once. ``cone_deg`` defaults to the game's ``launch_cone_deg``."""

    game = "midrange"

    def __init__(self, cone_deg: float | None = None) -> None:
        if cone_deg is not None and (isinstance(cone_deg, bool) or not isinstance(cone_deg, int | float)
                                     or not math.isfinite(cone_deg) or cone_deg <= 0):
            raise RewardError(f"cone_deg must be a positive angle in degrees (or null: the game's "
                              f"launch_cone_deg), got {cone_deg!r}")
        self.cone_deg = None if cone_deg is None else float(cone_deg)

    def __call__(self, batch: StepBatch) -> np.ndarray:
        layout = layout_of(self, batch)
        launched = self.event(batch, "fired") > 0
        game_cone = float(batch.params.get("launch_cone_deg", MIDRANGE_PARAMS["launch_cone_deg"].default))
        cone = self.cone_deg if self.cone_deg is not None else game_cone
        target, found = layout.launch_target(batch.obs_before, game_cone)
        off = np.degrees(np.arccos(np.clip(target[:, ENEMY_BEARING_COS], -1.0, 1.0)))
        price = np.minimum(1.0, off / cone)
        return np.where(launched & found, -price, 0.0).astype(np.float32)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        """``__call__`` on tensors, in float32 as numpy computes it; ``acos`` may differ from numpy's
        float32 ``arccos`` in the last ulps (neither is correctly rounded), so the price does too."""
        import torch

        layout = layout_of(self, batch)
        launched = self.event_torch(batch, "fired") > 0
        game_cone = float(batch.params.get("launch_cone_deg", MIDRANGE_PARAMS["launch_cone_deg"].default))
        cone = self.cone_deg if self.cone_deg is not None else game_cone
        target, found = _launch_target_torch(layout, batch.obs_before, game_cone)
        cos = target[:, ENEMY_BEARING_COS].clamp(-1.0, 1.0)
        off = torch.acos(cos) * torch.tensor(_DEGREES_F32, dtype=cos.dtype, device=cos.device)
        price = divide_as_numpy(off, cone).clamp(max=1.0)
        return where_or_zero(launched & found, -price)


class Boundary(Reward):
    """Penalty near the arena edge: ``-max(0, 1 - distance_to_edge / margin_m)`` for alive fighters,
    after the step (0 far inside, -1 at the edge)."""

    game = "midrange"

    def __init__(self, margin_m: float = 5000.0) -> None:
        if not isinstance(margin_m, int | float) or not math.isfinite(margin_m) or margin_m <= 0:
            raise RewardError(f"margin_m must be a positive number of metres, got {margin_m!r}")
        self.margin_m = float(margin_m)

    def __call__(self, batch: StepBatch) -> np.ndarray:
        own = layout_of(self, batch).self_features(batch.obs_after)
        distance_m = own[:, SELF_BOUNDARY] * RANGE_SCALE_M
        penalty = np.clip(1.0 - distance_m / self.margin_m, 0.0, 1.0)
        return np.where(own[:, SELF_ALIVE] > 0.5, -penalty, 0.0).astype(np.float32)

    def torch_call(self, batch: TorchStepBatch) -> Tensor:
        own = layout_of(self, batch).self_features(batch.obs_after)
        distance_m = own[:, SELF_BOUNDARY] * RANGE_SCALE_M
        penalty = (1.0 - divide_as_numpy(distance_m, self.margin_m)).clamp(0.0, 1.0)
        return where_or_zero(own[:, SELF_ALIVE] > 0.5, -penalty)


#: short names usable as ``_target_`` in reward configs (``GameSpec.reward_terms``)
TERMS: dict[str, type[Reward]] = {
    "missile_fired": MissileFired,
    "missile_missed": MissileMissed,
    "missile_evaded": MissileEvaded,
    "missile_closing": MissileClosing,
    "missile_reach": MissileReach,
    "survival": Survival,
    "pointing": Pointing,
    "energy": Energy,
    "closing": Closing,
    "boundary": Boundary,
    "launch_angle": LaunchAngle,
}
