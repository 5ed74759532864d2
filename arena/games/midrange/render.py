"""Record a midrange match from ``world_state()`` and draw it: tracks, missiles, kills, the arena."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arena.envs.vector import VectorEnv
from arena.games import require

TEAM_COLOURS = ("tab:blue", "tab:red")


@dataclass
class MatchRecording:
    """Positions of every fighter and missile of one env, one frame per decision."""

    team_sizes: tuple[int, int]
    arena_radius_m: float
    fighter_xy: list[np.ndarray] = field(default_factory=list)  # each [F, 2]
    fighter_alive: list[np.ndarray] = field(default_factory=list)  # each [F]
    missile_xy: list[np.ndarray] = field(default_factory=list)  # each [M, 2]
    missile_active: list[np.ndarray] = field(default_factory=list)  # each [M]
    missile_owner: list[np.ndarray] = field(default_factory=list)
    outcome: int = -1

    def add(self, ws: dict[str, np.ndarray], env_index: int) -> None:
        e = env_index
        self.fighter_xy.append(np.stack([ws["fighter_x"][e], ws["fighter_y"][e]], axis=1))
        self.fighter_alive.append(ws["fighter_alive"][e].copy())
        self.missile_xy.append(np.stack([ws["missile_x"][e], ws["missile_y"][e]], axis=1))
        self.missile_active.append(ws["missile_active"][e].copy())
        self.missile_owner.append(ws["missile_owner"][e].copy())


def record_match(
    env: VectorEnv,
    policy: Callable[[np.ndarray], np.ndarray],
    env_index: int = 0,
    max_decisions: int = 10_000,
) -> MatchRecording:
    """Plays every env with ``policy(obs) -> actions`` until env ``env_index`` ends its match.

    Frames are taken after each decision; the core resets a finished env at once, so the last
    frame is the decision before the one that ended the match (at most frame_skip physics steps
    before the end).
    """
    require(env.game, "render", "record_match")
    rec = MatchRecording(env.team_sizes, float(env.params["arena_radius_m"]))
    obs = env.observations
    rec.add(env.world_state(), env_index)
    for _ in range(max_decisions):
        obs, _, _, _, infos = env.step(policy(obs))
        if infos["done"][env_index]:
            rec.outcome = int(infos["outcome"][env_index])
            break
        rec.add(env.world_state(), env_index)
    return rec


def draw_match(rec: MatchRecording, path: str | Path, title: str | None = None) -> Path:
    """Writes a PNG of the recorded match and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fxy = np.stack(rec.fighter_xy) / 1000.0  # [T, F, 2] in km
    alive = np.stack(rec.fighter_alive)
    mxy = np.stack(rec.missile_xy) / 1000.0
    mact = np.stack(rec.missile_active)
    owner = np.stack(rec.missile_owner)
    n0 = rec.team_sizes[0]
    fig, ax = plt.subplots(figsize=(8, 8))
    ax.add_patch(plt.Circle((0, 0), rec.arena_radius_m / 1000.0, fill=False, ls=":", color="grey"))
    for i in range(fxy.shape[1]):
        colour = TEAM_COLOURS[0 if i < n0 else 1]
        live = alive[:, i]
        ax.plot(fxy[live, i, 0], fxy[live, i, 1], color=colour, lw=1.5)
        if live.any():
            last = np.flatnonzero(live)[-1]
            marker = "x" if not live[-1] else ">"
            ax.plot(fxy[last, i, 0], fxy[last, i, 1], marker, color=colour, ms=9)
            ax.plot(fxy[0, i, 0], fxy[0, i, 1], "o", color=colour, ms=5)
    for k in range(mxy.shape[1]):
        on = mact[:, k]
        if on.any():
            colour = TEAM_COLOURS[0 if owner[on, k][0] < n0 else 1]
            ax.plot(mxy[on, k, 0], mxy[on, k, 1], color=colour, lw=0.8, ls="--", alpha=0.8)
    outcome = {-1: "unfinished", 0: "blue wins", 1: "red wins", 2: "draw"}[rec.outcome]
    ax.set_title(title or f"midrange {rec.team_sizes[0]}v{rec.team_sizes[1]}: {outcome}")
    ax.set_xlabel("x, km")
    ax.set_ylabel("y, km")
    ax.set_aspect("equal")
    span = max(np.abs(fxy).max(), np.abs(mxy[mact]).max() if mact.any() else 0.0) * 1.1 + 1.0
    ax.set_xlim(-span, span)
    ax.set_ylim(-span, span)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
