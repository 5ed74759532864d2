"""Named views of a midrange observation row (layout written by arena/native/games/midrange/midrange.h).

Row layout, all ego-centric (bearings relative to the fighter's velocity, sin positive = left):
- self (8): alive, speed/VT, bearing to arena centre sin/cos, distance to boundary/10 km,
  missiles left fraction, cooldown fraction, time left fraction
- enemies (max_team x 9), then allies (max_team - 1 x 9), alive ones by range, then the dead,
  then padding: present, alive, range/10 km, bearing sin/cos, aspect sin/cos (where I am seen
  from its nose; cos = 1: it points at me), closing speed/1000, speed/VT
- threats (K x 7): missiles locked on me, nearest first; own (K x 7): my missiles in flight,
  nearest to their target first: present, range/10 km (to me, or to its target), bearing sin/cos
  of the missile from me, speed/1000, closing speed/1000 (on me, or on its target), time of flight/max
- legal actions (10): one flag per action value (rudder 5, throttle 3, fire 2), 1 where legal. Only
  "fire" is ever 0: where it would launch nothing (no missile, cooling down, no alive enemy within
  the launch cone). The policy masks its logits with this block (the game's ``action_mask``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is optional (the train extra): the numpy path never imports it
    from torch import Tensor

SELF = ("alive", "speed", "centre_sin", "centre_cos", "boundary", "missiles", "cooldown", "time_left")
FIGHTER = ("present", "alive", "range", "bearing_sin", "bearing_cos", "aspect_sin", "aspect_cos",
           "closing", "speed")
MISSILE = ("present", "range", "bearing_sin", "bearing_cos", "speed", "closing", "tof")
ACTION_NVEC = (5, 3, 2)  # rudder {-1, -.5, 0, .5, 1}, throttle {0, .5, 1}, fire {0, 1}
LEGAL_FEATURES = sum(ACTION_NVEC)
RANGE_SCALE_M = 10000.0
SPEED_SCALE_MS = 1000.0


@dataclass(frozen=True)
class MidrangeObsLayout:
    team_sizes: tuple[int, int] = (1, 1)
    tracked_missiles: int = 4

    @property
    def max_team(self) -> int:
        return max(self.team_sizes)

    @property
    def enemies_start(self) -> int:
        return len(SELF)

    @property
    def allies_start(self) -> int:
        return self.enemies_start + len(FIGHTER) * self.max_team

    @property
    def threats_start(self) -> int:
        return self.allies_start + len(FIGHTER) * (self.max_team - 1)

    @property
    def own_missiles_start(self) -> int:
        return self.threats_start + len(MISSILE) * self.tracked_missiles

    @property
    def legal_start(self) -> int:
        return self.own_missiles_start + len(MISSILE) * self.tracked_missiles

    @property
    def obs_dim(self) -> int:
        return self.legal_start + LEGAL_FEATURES

    def self_features(self, obs: np.ndarray) -> np.ndarray:
        """[n, 8] view."""
        return obs[:, : len(SELF)]

    def enemies(self, obs: np.ndarray) -> np.ndarray:
        """[n, max_team, 9] view, nearest alive first."""
        n = len(FIGHTER)
        return obs[:, self.enemies_start : self.allies_start].reshape(len(obs), self.max_team, n)

    def launch_target(self, obs: np.ndarray, cone_deg: float) -> tuple[np.ndarray, np.ndarray]:
        """([n, 9] features of the enemy a launch would lock, [n] bool: there is one). The core's
        rule (``docs/midrange.md``, "Launch"): the living enemy closest to the nose inside the
        ``cone_deg`` launch cone, which in a team game need not be the nearest. Rows without one get
        the nearest enemy's slot. The cone's edge is widened by 1e-4 in cosine for the observation's
        rounding."""
        enemies = self.enemies(obs)
        cos = enemies[:, :, feature("bearing_cos", FIGHTER)]
        present, alive = (enemies[:, :, feature(name, FIGHTER)] > 0.5 for name in ("present", "alive"))
        living = present & alive
        in_cone = living & (cos >= np.cos(np.radians(cone_deg)) - 1e-4)
        found = in_cone.any(axis=1)
        pick = np.where(found, np.where(in_cone, cos, -np.inf).argmax(axis=1), 0)
        return enemies[np.arange(len(obs)), pick], found

    def assigned_enemy(self, obs: np.ndarray) -> np.ndarray:
        """[n] index (in ``enemies``) of the enemy each fighter is left to attack, -1 with none alive.

        The heuristic pilot's split of targets: each alive enemy is left to the friendly fighter
        nearest to it (this one included), so allies that see the same picture spread over the
        enemies instead of all attacking the nearest one; a fighter nearest to no enemy takes its own
        nearest. In 1v1 it is the enemy."""
        enemies = self.enemies(obs)
        alive = enemies[:, :, feature("alive", FIGHTER)] > 0.5
        my_range = np.where(alive, enemies[:, :, feature("range", FIGHTER)], np.inf)  # [n, E]
        allies = self.allies(obs)
        if allies.shape[1]:
            (ex, ey), (ax, ay) = _relative_position(enemies), _relative_position(allies)
            ally_range = np.hypot(ex[:, None, :] - ax[:, :, None], ey[:, None, :] - ay[:, :, None])
            ally_alive = allies[:, :, feature("alive", FIGHTER)] > 0.5
            ally_range = np.where(ally_alive[:, :, None], ally_range, np.inf)  # [n, A, E]
            mine = alive & (my_range <= ally_range.min(axis=1))
        else:
            mine = alive
        claimed = np.where(mine, my_range, np.inf)
        target = np.where(mine.any(axis=1), claimed.argmin(axis=1), my_range.argmin(axis=1))
        return np.where(alive.any(axis=1), target, -1)

    def assigned_enemy_torch(self, obs: Tensor) -> Tensor:
        """``assigned_enemy`` on tensors: [n] int64 index of the enemy each fighter is left to attack,
        -1 with none alive. Ranges between fighters are worked out as numpy's float32 ``hypot`` does
        (in float64, rounded once), so the split is the numpy one."""
        import torch  # torch is optional (the train extra): the numpy path never imports it

        alive_col, range_col = feature("alive", FIGHTER), feature("range", FIGHTER)
        enemies = self.enemies(obs)
        alive = enemies[:, :, alive_col] > 0.5
        inf = torch.tensor(math.inf, dtype=obs.dtype, device=obs.device)
        my_range = torch.where(alive, enemies[:, :, range_col], inf)  # [n, E]
        mine = alive
        if self.max_team > 1:
            allies = self.allies(obs)

            cos_col, sin_col = feature("bearing_cos", FIGHTER), feature("bearing_sin", FIGHTER)

            def position(block: Tensor) -> tuple[Tensor, Tensor]:
                r = block[:, :, range_col]
                return r * block[:, :, cos_col], r * block[:, :, sin_col]

            (ex, ey), (ax, ay) = position(enemies), position(allies)
            dx = (ex[:, None, :] - ax[:, :, None]).to(torch.float64)
            dy = (ey[:, None, :] - ay[:, :, None]).to(torch.float64)
            ally_range = torch.sqrt(dx * dx + dy * dy).to(obs.dtype)
            ally_alive = allies[:, :, alive_col] > 0.5
            ally_range = torch.where(ally_alive[:, :, None], ally_range, inf)  # [n, A, E]
            mine = alive & (my_range <= ally_range.min(dim=1).values)
        claimed = torch.where(mine, my_range, inf)
        target = torch.where(mine.any(dim=1), claimed.argmin(dim=1), my_range.argmin(dim=1))
        return torch.where(alive.any(dim=1), target, torch.full_like(target, -1))

    def allies(self, obs: np.ndarray) -> np.ndarray:
        """[n, max_team - 1, 9] view."""
        n = len(FIGHTER)
        return obs[:, self.allies_start : self.threats_start].reshape(len(obs), self.max_team - 1, n)

    def threats(self, obs: np.ndarray) -> np.ndarray:
        """[n, K, 7] view of missiles locked on this fighter, nearest first."""
        return obs[:, self.threats_start : self.own_missiles_start].reshape(
            len(obs), self.tracked_missiles, len(MISSILE)
        )

    def own_missiles(self, obs: np.ndarray) -> np.ndarray:
        """[n, K, 7] view of this fighter's missiles in flight."""
        return obs[:, self.own_missiles_start : self.legal_start].reshape(
            len(obs), self.tracked_missiles, len(MISSILE)
        )


def _relative_position(fighters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x ahead, y left) of a [n, m, 9] fighter block relative to the observing fighter, in range units."""
    r = fighters[:, :, feature("range", FIGHTER)]
    cos, sin = (fighters[:, :, feature(name, FIGHTER)] for name in ("bearing_cos", "bearing_sin"))
    return r * cos, r * sin


def feature(name: str, table: tuple[str, ...]) -> int:
    """Index of a named feature inside SELF, FIGHTER or MISSILE."""
    return table.index(name)
