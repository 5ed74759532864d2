"""What a replay looks like: tracks in km, missile flights, launch and kill markers, ranges between sides.

The animation (``arena.replay.animate``) and the HTML viewer (``arena.replay.html``) draw the same
``Scene``. Markers come from the event counts: a launch at the firing fighter's place in the frame of
the decision that fired, a kill where the fighter was in the frame after the decision it died in (the
last frame when that decision ended the game).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from arena.envs.outcomes import EndReason, Outcome
from arena.replay.file import Replay

TEAM_COLOURS = ("#1f77b4", "#d62728")  # team 0 blue, team 1 red
END_WORDS = {
    EndReason.ELIMINATION: "elimination", EndReason.MUTUAL: "mutual destruction",
    EndReason.NO_MISSILES: "no missiles left", EndReason.TIME_LIMIT: "time limit", EndReason.ROUNDS: "rounds",
}


@dataclass(frozen=True)
class Flight:
    """One missile from launch to its end: frames ``start .. start + len(xy) - 1``."""

    slot: int
    owner: int
    target: int
    start: int
    xy: np.ndarray  # [n, 2] km


@dataclass(frozen=True)
class Marker:
    """A launch or a kill (``kind``: launch, kill, left_arena) of ``fighter`` at frame ``frame``."""

    kind: str
    frame: int
    fighter: int
    x: float
    y: float


@dataclass(frozen=True)
class Scene:
    length: int
    decision_s: float
    team: np.ndarray  # [F] 0 or 1
    xy: np.ndarray  # [T, F, 2] km
    heading: np.ndarray  # [T, F] radians
    speed: np.ndarray  # [T, F] m/s
    alive: np.ndarray  # [T, F] bool
    missiles_left: np.ndarray  # [T, F]
    flights: tuple[Flight, ...]
    markers: tuple[Marker, ...]
    pairs: tuple[tuple[int, int], ...]  # (team 0 fighter, team 1 fighter)
    ranges: np.ndarray  # [T, P] km, NaN once either is dead
    arena_radius_km: float
    bounds: tuple[float, float, float, float]  # xmin, xmax, ymin, ymax of everything drawn, km
    side_names: tuple[str, str]  # team 0's, team 1's: "A: <player>" / "B: <player>"
    title: str
    result: str

    @property
    def min_range(self) -> np.ndarray:
        """[T] closest distance between the two sides, km (NaN once a side is gone)."""
        out = np.full(self.length, np.nan)
        ok = ~np.isnan(self.ranges).all(axis=1)
        out[ok] = np.nanmin(self.ranges[ok], axis=1)
        return out

    def time_s(self, frame: int) -> float:
        return frame * self.decision_s


def build_scene(replay: Replay) -> Scene:
    """The scene of ``replay``."""
    fr = replay.frames
    t, f = replay.length, replay.num_fighters
    xy = np.stack([fr["fighter_x"], fr["fighter_y"]], axis=-1) / 1000.0
    team = replay.team_of_fighter
    flights = _flights(fr["missile_active"], fr["missile_x"], fr["missile_y"], fr["missile_owner"],
                       fr["missile_target"])
    markers = _markers(replay, xy)
    pairs = tuple((i, j) for i in range(f) if team[i] == 0 for j in range(f) if team[j] == 1)
    alive = fr["fighter_alive"]
    ranges = np.full((t, len(pairs)), np.nan)
    for p, (i, j) in enumerate(pairs):
        both = alive[:, i] & alive[:, j]
        ranges[both, p] = np.hypot(*(xy[both, i] - xy[both, j]).T)
    points = [xy[alive]] + [fl.xy for fl in flights] + [xy[0]]
    allxy = np.concatenate(points)
    lo, hi = allxy.min(axis=0), allxy.max(axis=0)
    margin = max(1.0, 0.06 * float((hi - lo).max()))
    bounds = (float(lo[0] - margin), float(hi[0] + margin), float(lo[1] - margin), float(hi[1] + margin))
    a, b = replay.players
    names = (f"A: {a.name}", f"B: {b.name}") if replay.a_team == 0 else (f"B: {b.name}", f"A: {a.name}")
    return Scene(
        length=t, decision_s=replay.decision_s, team=team, xy=xy, heading=replay.heading(),
        speed=replay.speed(), alive=alive, missiles_left=fr["fighter_missiles"].astype(np.int64),
        flights=flights, markers=markers, pairs=pairs, ranges=ranges,
        arena_radius_km=float(replay.params["arena_radius_m"]) / 1000.0, bounds=bounds, side_names=names,
        title=f"{a.name} (A) vs {b.name} (B), {replay.game} {replay.team_sizes[0]}v{replay.team_sizes[1]}",
        result=_result_text(replay),
    )


def _flights(active: np.ndarray, x: np.ndarray, y: np.ndarray, owner: np.ndarray,
             target: np.ndarray) -> tuple[Flight, ...]:
    out = []
    for slot in range(active.shape[1]):
        on = np.concatenate([[False], active[:, slot], [False]]).astype(np.int8)
        starts = np.flatnonzero(np.diff(on) == 1)
        ends = np.flatnonzero(np.diff(on) == -1)
        for s, e in zip(starts, ends, strict=True):
            xy = np.stack([x[s:e, slot], y[s:e, slot]], axis=1) / 1000.0
            out.append(Flight(slot, int(owner[s, slot]), int(target[s, slot]), int(s), xy))
    return tuple(sorted(out, key=lambda fl: (fl.start, fl.slot)))


def _markers(replay: Replay, xy: np.ndarray) -> tuple[Marker, ...]:
    names = replay.event_names
    ev = replay.events
    t_last = replay.length - 1
    out = []
    for t, i in np.argwhere(ev[:, :, names.index("fired")] > 0):
        out.append(Marker("launch", int(t), int(i), float(xy[t, i, 0]), float(xy[t, i, 1])))
    for t, i in np.argwhere(ev[:, :, names.index("died")] > 0):
        at = min(int(t) + 1, t_last)
        kind = "left_arena" if ev[t, i, names.index("left_arena")] > 0 else "kill"
        out.append(Marker(kind, at, int(i), float(xy[at, i, 0]), float(xy[at, i, 1])))
    return tuple(sorted(out, key=lambda m: (m.frame, m.fighter)))


def _result_text(replay: Replay) -> str:
    how = END_WORDS.get(EndReason(replay.end_reason), "end")
    seconds = replay.length * replay.decision_s
    if replay.outcome == Outcome.DRAW:
        return f"draw ({how}) after {seconds:.1f} s"
    winner = "A" if replay.a_outcome == 1 else "B"
    name = replay.players[0 if winner == "A" else 1].name
    return f"{winner} ({name}) wins by {how} after {seconds:.1f} s"
