"""The freestyle pilot: the varied pilot (``bots.VariedPilot``) with its habits drawn per match too.

The varied pilot draws the heuristic's numbers (fire range, cone, when to defend, throttle,
patience) but keeps every habit the game's bots share: the nose on the enemy after a launch, one
missile in flight at a time, a defence that cranks and then drags. A learner that trains only
against those habits has a blind spot wherever an opponent breaks one, and a league's exploiters
find only the styles its own learners stumble on. The freestyle pilot draws, per fighter and per
match, beside the varied numbers:

- **after a launch** (``AFTER_LAUNCH``): keep the nose on the enemy (the heuristic's habit), crank
  (hold the enemy ``crank_deg`` off the nose, slowing the closure while the missile flies), or turn
  the tail to it and fly off until the missile is spent, then come back;
- **missile discipline** (``SALVO_SHARE``): one missile in flight at a time, or one every cooldown
  without waiting for the last to miss;
- **defence** (``DEFENCES``): crank, then drag (the heuristic's), drag at once, or none at all.

So one player in a league's pool shows the learner shooters that run, shooters that empty their
rack, and pilots that never turn away, in every mix with the varied numbers: the randomised scripted
opponents of a diverse pool (HHMARL, AlphaStar), over habits rather than numbers alone. The held-out
pilots (``strangers.py``) are single points of such habits; they stay out of every pool.

numpy only (``act_torch`` falls back to ``act``), like the varied pilot; ``state_dict`` holds the
habits with the numbers, so a resumed league goes on with the same matches.
"""

from __future__ import annotations

import numpy as np

from arena.games.midrange.bots import VariedPilot, wrap

#: what a fighter does while its own missile is live, and each habit's share of the draws
AFTER_LAUNCH = ("nose", "crank", "tail")
AFTER_LAUNCH_SHARES = (0.4, 0.3, 0.3)
#: how a fighter meets a missile locked on it, and each's share of the draws
DEFENCES = ("crank_then_drag", "drag", "none")
DEFENCE_SHARES = (0.5, 0.3, 0.2)
#: the share of fighters that fire every cooldown, not one missile at a time
SALVO_SHARE = 0.25
_DRAG_AT_ONCE_S = 1e9  # a drag_time_s above any time to go: the defence drags from the start


class FreestylePilot(VariedPilot):
    """The varied pilot with its after-launch habit, missile discipline and defence drawn per match
    (the module's docstring)."""

    name = "freestyle"
    COLUMNS = (*VariedPilot.COLUMNS, "after_launch", "salvo")

    def _draw(self, n: int) -> np.ndarray:
        numbers = super()._draw(n)
        defence = self.rng.choice(len(DEFENCES), size=n, p=DEFENCE_SHARES)
        column = self.COLUMNS.index
        numbers[defence == DEFENCES.index("drag"), column("drag_time_s")] = _DRAG_AT_ONCE_S
        never = defence == DEFENCES.index("none")
        numbers[never, column("defend_time_s")] = 0.0  # no threat is ever urgent...
        numbers[never, column("defend_range_km")] = 0.0  # ...however close
        after = self.rng.choice(len(AFTER_LAUNCH), size=n, p=AFTER_LAUNCH_SHARES)
        salvo = self.rng.random(n) < SALVO_SHARE
        return np.concatenate([numbers, np.stack([after, salvo], axis=1).astype(np.float64)], axis=1)

    def _habit(self, name: str) -> np.ndarray:
        assert self._current is not None  # set by ``VariedPilot.act`` / ``_act`` around the rules
        return self._current[:, self.COLUMNS.index(name)]

    def _heading(self, obs: np.ndarray, target_bearing: np.ndarray) -> np.ndarray:
        threatened, defend_heading = self._defence(obs)
        away = super()._missile_in_flight(obs)  # a live missile of mine, salvo or not
        after = self._habit("after_launch")
        side = np.where(target_bearing >= 0.0, 1.0, -1.0)  # the enemy on my left (+1) or right
        crank = target_bearing - side * np.deg2rad(self.tuning.crank_deg)
        tail = wrap(target_bearing + np.pi)
        attack = np.select([away & (after == AFTER_LAUNCH.index("crank")),
                            away & (after == AFTER_LAUNCH.index("tail"))], [crank, tail], target_bearing)
        return np.where(threatened, defend_heading, attack)

    def _missile_in_flight(self, obs: np.ndarray) -> np.ndarray:
        """The fire rule's wait for the last missile, which a salvo row does not keep."""
        return super()._missile_in_flight(obs) & (self._habit("salvo") < 0.5)


__all__ = ["AFTER_LAUNCH", "DEFENCES", "FreestylePilot", "SALVO_SHARE"]
