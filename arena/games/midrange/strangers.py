"""Held-out midrange pilots: styles the game's own bots do not fly, for judging what a league
publishes against opponents it never trained against.

No league meets them unless its ``league.scripted`` names them, and none does by default (nor the
gauntlet): they stand in for "pilots written outside the project". Each breaks one habit every
other bot shares (the heuristic, the evader, ``varied`` and the ladder all keep their nose on the
enemy after a launch, keep one missile in flight at a time, and defend by cranking, then
dragging):

- ``sniper``: shoot and scoot. Fires from far out (20 km plus 8 km per km/s of closing), turns
  its tail to the enemy as soon as its missile is away and flies off until the missile is spent,
  then comes back; defends every threat with less than 60 s to go by dragging at once.
- ``salvo``: empties its rack from 24 km, one missile every cooldown without waiting for the last
  to miss (every other bot keeps one missile in flight at a time), and defends by dragging at once.
- ``rusher``: never defends. Flies straight at the enemy at full throttle and fires only inside
  6 km, where a missile is hard to outrun.

numpy only (``act_torch`` falls back to ``act``). They read only the observation, like every pilot.
"""

from __future__ import annotations

import numpy as np

from arena.games.midrange.bots import HeuristicPilot, HeuristicTuning, wrap

#: The held-out pilots' names (``scripted:<name>``).
STRANGERS = ("sniper", "salvo", "rusher")


class _Stranger(HeuristicPilot):
    """The heuristic's target choice, rudder, boundary and fire rules with the pilot's own numbers
    (``TUNING``), full throttle; a pilot that points elsewhere replaces ``_heading`` (which leaves it
    without a torch version: ``act_torch`` runs ``act``)."""

    TUNING = HeuristicTuning()

    def __init__(self, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4) -> None:
        super().__init__(team_sizes, tracked_missiles, self.TUNING)


class SniperPilot(_Stranger):
    """Shoot and scoot: a long shot, then the tail to the enemy while the missile flies."""

    name = "sniper"
    TUNING = HeuristicTuning(fire_range_km=20.0, fire_range_per_closing_km=8.0, defend_time_s=60.0,
                             defend_range_km=8.0, drag_time_s=1e9)  # drag at once, never crank

    def _heading(self, obs: np.ndarray, bearing: np.ndarray) -> np.ndarray:
        threatened, drag = self._defence(obs)
        scoot = self._missile_in_flight(obs)
        return np.where(threatened, drag, np.where(scoot, wrap(bearing + np.pi), bearing))


class SalvoPilot(_Stranger):
    """Empties its rack from far out, one missile every cooldown, and defends by dragging at once."""

    name = "salvo"
    TUNING = HeuristicTuning(fire_range_km=24.0, fire_range_per_closing_km=0.0, drag_time_s=1e9)

    def _missile_in_flight(self, obs: np.ndarray) -> np.ndarray:
        """Never waits for its last missile: the salvo's discipline is the cooldown alone."""
        return np.zeros(len(obs), dtype=bool)


class RusherPilot(_Stranger):
    """Straight at the enemy, no defence, close shots only."""

    name = "rusher"
    TUNING = HeuristicTuning(fire_range_km=6.0, fire_range_per_closing_km=0.0, fire_cone_deg=30.0)

    def _heading(self, obs: np.ndarray, bearing: np.ndarray) -> np.ndarray:
        return bearing


def stranger(name: str, team_sizes: tuple[int, int] = (1, 1), tracked_missiles: int = 4) -> _Stranger:
    """The held-out pilot ``name`` (one of ``STRANGERS``)."""
    classes = {cls.name: cls for cls in (SniperPilot, SalvoPilot, RusherPilot)}
    if name not in classes:
        raise ValueError(f"no held-out pilot {name!r}; allowed: {', '.join(STRANGERS)}")
    return classes[name](team_sizes, tracked_missiles)


__all__ = ["STRANGERS", "RusherPilot", "SalvoPilot", "SniperPilot", "stranger"]
