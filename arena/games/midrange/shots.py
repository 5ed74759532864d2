"""Where each side's missiles were fired from in a midrange evaluation, and how many hit.

``play_match(..., recorder=ShotRecorder())`` watches the env loop: at every decision where a
fighter's ``fired`` event counts, it reads the observation that fighter decided on: range and
bearing of the enemy the missile locked (the core's rule: the living enemy closest to the nose
within the launch cone), own speed, closing speed, the enemy's aspect. ``summary()`` gives per
side the number of shots, the hits per shot and the 10th/50th/90th percentiles of each quantity.
It answers "why do my missiles miss": a shot from far out, far off the nose or at low speed leaves
the missile too little energy to catch a target that turns away (the game's missile model is in
``docs/midrange.md``).

It also counts the decisions where a side picked fire and nothing was launched ("dry fire": no
missile left, the launch cooldown, or no enemy inside the launch cone; the core then spends
nothing). Such a pick changes nothing in the game, so nothing in the return pushes back on it, and
a policy that drifts there fires more where a launch does happen too: against the heuristic pilot,
a kickstarted learner that beat it dry-fired at 0.03% of its decisions and the same learner 24M
samples later, collapsed and spamming missiles, at 16% (README, "Learning from scratch").

Only games inside the evaluation's quotas count (like the match events). In team games the locked
enemy need not be the nearest: a fighter may fire nose-on at the farther of two enemies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from arena.games import require
from arena.games.midrange.obs import FIGHTER, SELF, MidrangeObsLayout

_S = {name: i for i, name in enumerate(SELF)}
_F = {name: i for i, name in enumerate(FIGHTER)}
FIRE_HEAD = 2  # midrange action heads: rudder, throttle, fire (1: launch); ACTION_NVEC in bots.py

# name, unit, how to read it from (self features [n, 8], nearest enemy [n, 9], decision seconds [n])
QUANTITIES: tuple[tuple[str, str], ...] = (
    ("range", "km"),
    ("off the nose", "deg"),
    ("own speed", "x VT"),
    ("closing speed", "m/s"),
    ("enemy aspect", "deg"),  # 0: the enemy points at me (head-on), 180: I am on its tail
    ("time", "s"),
)


@dataclass(frozen=True)
class ShotSummary:
    """One side's shots: how many, how many hit, and each quantity's 10th/50th/90th percentiles."""

    shots: int
    hits: int
    percentiles: dict[str, tuple[float, float, float]]  # by quantity name; empty without shots
    decisions: int = 0  # decisions of alive fighters
    dry_fires: int = 0  # of those, fire picked and nothing launched

    @property
    def hit_rate(self) -> float:
        return self.hits / self.shots if self.shots else 0.0

    @property
    def dry_fire_rate(self) -> float:
        return self.dry_fires / self.decisions if self.decisions else 0.0

    def lines(self, label: str) -> list[str]:
        head = f"{label}: {self.shots} shots, {self.hits} hits ({100 * self.hit_rate:.1f}%)"
        dry = (f"    fire picked with nothing launched (no missile left, cooldown, no enemy in the cone): "
               f"{self.dry_fires} of {self.decisions} decisions ({100 * self.dry_fire_rate:.2f}%)")
        if not self.shots:
            return [head, dry]
        rows = [f"{name} ({unit}) {p10:.2f} / {p50:.2f} / {p90:.2f}"
                for (name, unit), (p10, p50, p90) in zip(QUANTITIES, self.percentiles.values(), strict=True)]
        return [head + "; at launch, 10th / 50th / 90th percentile:", *("    " + r for r in rows), dry]


class ShotRecorder:
    """A ``MatchRecorder`` (``arena.evaluation.runner``) of the launch geometry of midrange shots."""

    def __init__(self) -> None:
        self._shots: list[list[np.ndarray]] = [[], []]  # per side: [n, len(QUANTITIES)] blocks
        self._hits = np.zeros(2, dtype=np.int64)
        self._decisions = np.zeros(2, dtype=np.int64)
        self._dry_fires = np.zeros(2, dtype=np.int64)
        self._started = False

    def start(self, env: Any, layout: Any, settings: Any, a: Any, b: Any) -> None:
        names = tuple(env.event_names)
        require(env.game, "shots", "shot geometry")
        self._fired, self._hit = names.index("fired"), names.index("hits")
        self._layout = MidrangeObsLayout(tuple(env.team_sizes), int(env.params["tracked_missiles"]))
        self._decision_s = float(env.params["dt"]) * int(env.params["frame_skip"])
        self._cone_deg = float(env.params["launch_cone_deg"])
        self._time_limit_s = float(env.params["time_limit_s"])
        self._side_rows = (np.asarray(layout.a_rows), np.asarray(layout.b_rows))
        self._env_of_row = np.asarray(layout.env_of_row)
        self._obs = env.observations.copy()  # what the next decision is made on
        self._started = True

    def step(self, env: Any, actions: np.ndarray, infos: dict[str, np.ndarray], active: np.ndarray) -> None:
        events = infos["events"]
        for side, rows in enumerate(self._side_rows):
            rows = rows[active[self._env_of_row[rows]]]
            self._hits[side] += int(events[rows, self._hit].sum())
            launched = events[rows, self._fired] > 0
            alive = self._layout.self_features(self._obs[rows])[:, _S["alive"]] > 0.5
            self._decisions[side] += int(alive.sum())
            self._dry_fires[side] += int((alive & (actions[rows, FIRE_HEAD] == 1) & ~launched).sum())
            shooters = rows[launched]
            if shooters.size:
                self._shots[side].append(self._geometry(self._obs[shooters]))
        self._obs = env.observations.copy()

    def _geometry(self, obs: np.ndarray) -> np.ndarray:
        me = self._layout.self_features(obs)
        enemy, _ = self._layout.launch_target(obs, self._cone_deg)
        bearing = np.arctan2(enemy[:, _F["bearing_sin"]], enemy[:, _F["bearing_cos"]])
        aspect = np.arctan2(enemy[:, _F["aspect_sin"]], enemy[:, _F["aspect_cos"]])
        elapsed = (1.0 - me[:, _S["time_left"]]) * self._time_limit_s
        return np.stack([
            enemy[:, _F["range"]] * 10.0,  # obs range is per 10 km
            np.degrees(np.abs(bearing)),
            me[:, _S["speed"]],
            enemy[:, _F["closing"]] * 1000.0,
            np.degrees(np.abs(aspect)),
            elapsed,
        ], axis=1)

    def summary(self) -> tuple[ShotSummary, ShotSummary]:
        """(A's shots, B's shots)."""
        if not self._started:
            raise RuntimeError("ShotRecorder.summary() before the evaluation started")
        out = []
        for side in (0, 1):
            shots = np.concatenate(self._shots[side]) if self._shots[side] else np.zeros((0, len(QUANTITIES)))
            percentiles = {  # none without shots
                name: tuple(float(x) for x in np.percentile(shots[:, k], (10, 50, 90)))
                for k, (name, _) in enumerate(QUANTITIES) if len(shots)
            }
            out.append(ShotSummary(len(shots), int(self._hits[side]), percentiles,  # type: ignore[arg-type]
                                   int(self._decisions[side]), int(self._dry_fires[side])))
        return out[0], out[1]
