"""A replay as one self-contained HTML page: no server, no network, the data inline as JSON.

The page (``arena.replay.viewer_page``) draws the engagement on a ``<canvas id="canvas">``: fading
tracks in team colours, heading arrows, missiles with short trails, launch rings and kill crosses.
Below it, ``<canvas id="range">`` charts the range between every pair of opposing fighters (and the
closest, thicker) over time, with a cursor at the current time; clicking it jumps there. Controls:
``#play`` (play/pause; space), ``#scrub`` (the decision shown; arrow keys step, shift for ten),
``#speed`` (times real time). ``window.replayViewer`` exposes ``frame`` (the decision shown),
``frames``, ``playing``, ``setFrame(i)``, ``play()`` and ``pause()``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from arena.atomic import atomic_path
from arena.replay.file import Replay
from arena.replay.scene import TEAM_COLOURS, Scene, build_scene
from arena.replay.viewer_page import PAGE


def write_html(replay: Replay, path: str | os.PathLike[str]) -> Path:
    """Writes the viewer page of ``replay`` to ``path`` atomically; returns it."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"viewer file {str(path)!r} must end in .html")
    page = viewer_html(replay)
    with atomic_path(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return path


def viewer_html(replay: Replay) -> str:
    """The page's text."""
    data = viewer_data(replay)
    # Inside <script>, "</" could close the element early: JSON allows the escaped "<\/" as well.
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    title = _escape(data["title"])
    return PAGE.replace("__TITLE__", title).replace("__DATA__", text)


def viewer_data(replay: Replay) -> dict[str, Any]:
    """Everything the page draws, as JSON-ready values (km, radians, frame indices)."""
    scene = build_scene(replay)
    return {
        "title": scene.title,
        "result": scene.result,
        "frames": scene.length,
        "decision_s": scene.decision_s,
        "arena_radius_km": scene.arena_radius_km,
        "bounds": [round(v, 3) for v in scene.bounds],
        "colours": list(TEAM_COLOURS),
        "sides": list(scene.side_names),
        "fighters": [_fighter(scene, i) for i in range(scene.xy.shape[1])],
        # each missile's shooter and target by their labels ("A2>B1"): the viewer writes it beside the
        # missile in team games
        "flights": [{"owner": fl.owner, "target": fl.target, "start": fl.start,
                     "label": f"{_label(scene, fl.owner)}>{_label(scene, fl.target)}",
                     "x": _km(fl.xy[:, 0]), "y": _km(fl.xy[:, 1])} for fl in scene.flights],
        "markers": [{"kind": m.kind, "frame": m.frame, "fighter": m.fighter, "x": round(m.x, 3),
                     "y": round(m.y, 3)} for m in scene.markers],
        "pairs": [list(p) for p in scene.pairs],
        "ranges": [_km(scene.ranges[:, p]) for p in range(len(scene.pairs))],
        "min_range": _km(scene.min_range),
        # The seed as text: a 64-bit integer loses digits as a JavaScript number.
        "game": {"name": replay.game, "team_sizes": list(replay.team_sizes), "seed": str(replay.seed),
                 "match_index": replay.match_index, "game_number": replay.game_number},
    }


def _label(scene: Scene, i: int) -> str:
    """Fighter ``i``'s label: its side's letter and its place in its team from 1 ("A1", "B2")."""
    team = int(scene.team[i])
    side = scene.side_names[team][0]  # "A" or "B"
    return f"{side}{i + 1 - int(np.flatnonzero(scene.team == team)[0])}"


def _fighter(scene: Scene, i: int) -> dict[str, Any]:
    alive = scene.alive[:, i]
    team = int(scene.team[i])
    return {
        "team": team,
        "label": _label(scene, i),
        "x": _km(scene.xy[:, i, 0]),
        "y": _km(scene.xy[:, i, 1]),
        "heading": [round(float(h), 3) for h in scene.heading[:, i]],
        "speed": [int(round(float(v))) for v in scene.speed[:, i]],
        "alive": [int(a) for a in alive],
        "missiles": [int(m) for m in scene.missiles_left[:, i]],
    }


def _km(values: np.ndarray) -> list[float | None]:
    return [None if not math.isfinite(v) else round(float(v), 3) for v in values]


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
