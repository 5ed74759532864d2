"""A replay as an animation: a GIF through imageio (Pillow draws the frames), or an MP4 when the
``imageio-ffmpeg`` package is installed. One animation frame per ``stride`` decisions.

A GIF is assembled in memory before it is written (imageio and Pillow both keep every frame), so by
default it shows at most ``GIF_MAX_FRAMES`` frames (the stride grows with the game's length); an
MP4 is streamed and shows every decision by default.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from arena.atomic import atomic_path
from arena.replay.file import Replay
from arena.replay.scene import TEAM_COLOURS, Scene, build_scene

if TYPE_CHECKING:
    from PIL import ImageDraw

TRAIL_FRAMES = 50  # decisions of fading trail behind a fighter (10 s at the default frame_skip)
MISSILE_TRAIL_FRAMES = 12
SIZE = 480
GIF_MAX_FRAMES = 300
DEFAULT_FPS = 15.0


def write_animation(replay: Replay, path: str | os.PathLike[str], *, fps: float = DEFAULT_FPS,
                    stride: int | None = None, size: int = SIZE) -> Path:
    """Writes ``path`` (``.gif``, or ``.mp4`` with imageio-ffmpeg) atomically; returns it. ``stride``
    None: every decision in an MP4, at most ``GIF_MAX_FRAMES`` frames in a GIF."""
    path = Path(path)
    kind = path.suffix.lower()
    if kind not in (".gif", ".mp4"):
        raise ValueError(f"animation file {str(path)!r} must end in .gif or .mp4")
    if not (isinstance(fps, int | float) and math.isfinite(fps) and 0 < fps <= 100):
        raise ValueError(f"fps={fps!r} must be a number in (0, 100]")
    if stride is not None and (isinstance(stride, bool) or not isinstance(stride, int) or stride < 1):
        raise ValueError(f"stride={stride!r} must be an integer >= 1 (or None: chosen from the length)")
    if isinstance(size, bool) or not isinstance(size, int) or not 64 <= size <= 4096:
        raise ValueError(f"size={size!r} must be an integer in [64, 4096] pixels")
    if kind == ".mp4" and importlib.util.find_spec("imageio_ffmpeg") is None:
        raise RuntimeError("writing an MP4 needs the imageio-ffmpeg package (pip install imageio-ffmpeg); "
                           "a GIF (--gif) needs only imageio")
    import imageio.v2 as iio

    scene = build_scene(replay)
    if stride is None:
        stride = 1 if kind == ".mp4" else max(1, math.ceil(scene.length / GIF_MAX_FRAMES))
    frames = animation_frames(scene.length, stride)
    with atomic_path(path) as tmp:
        if kind == ".gif":
            # Pillow's GIF writer takes the frame time in ms; loop=0 repeats forever.
            writer = iio.get_writer(tmp, format="GIF", mode="I", duration=1000.0 / fps, loop=0)
        else:
            writer = iio.get_writer(tmp, format="FFMPEG", mode="I", fps=fps, macro_block_size=1)
        with writer as out:
            for t in frames:
                out.append_data(draw_frame(scene, t, size))
    return path


def animation_frames(length: int, stride: int) -> list[int]:
    """Decisions shown: every ``stride``-th, and always the last one."""
    frames = list(range(0, length, stride))
    if frames[-1] != length - 1:
        frames.append(length - 1)
    return frames


def draw_frame(scene: Scene, t: int, size: int = SIZE) -> np.ndarray:
    """The picture of decision ``t``: [size, size, 3] uint8."""
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("RGB", (size, size), "white")
    d = ImageDraw.Draw(img)
    font = _font(ImageFont, 13)
    xmin, xmax, ymin, ymax = scene.bounds
    header = 34
    span = max(xmax - xmin, ymax - ymin)
    scale = (size - 20 - header) / span
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2

    def px(x: float, y: float) -> tuple[float, float]:
        return size / 2 + (x - cx) * scale, header + (size - header) / 2 - (y - cy) * scale

    _grid(d, px, scene, span, size, header)
    r = scene.arena_radius_km * scale
    ox, oy = px(0.0, 0.0)
    d.ellipse((ox - r, oy - r, ox + r, oy + r), outline=(170, 170, 170))
    for i in range(scene.xy.shape[1]):
        colour = _rgb(TEAM_COLOURS[scene.team[i]])
        live = np.flatnonzero(scene.alive[: t + 1, i])
        if live.size == 0:
            continue
        end = int(live[-1])
        pts = [px(*scene.xy[k, i]) for k in range(0, end + 1)]
        if len(pts) > 1:
            d.line(pts, fill=_fade(colour, 0.18), width=1)  # the whole track so far, faint
        start = max(0, end - TRAIL_FRAMES)
        for k in range(start, end):
            a = 0.25 + 0.75 * (k - start + 1) / max(1, end - start)
            d.line([pts[k], pts[k + 1]], fill=_fade(colour, a), width=2)
    for fl in scene.flights:
        last = fl.start + len(fl.xy) - 1
        if not fl.start <= t <= last:
            continue
        k = t - fl.start
        colour = _rgb(TEAM_COLOURS[scene.team[fl.owner]])
        pts = [px(*p) for p in fl.xy[max(0, k - MISSILE_TRAIL_FRAMES): k + 1]]
        if len(pts) > 1:
            d.line(pts, fill=_fade(colour, 0.55), width=1)
        x, y = pts[-1]
        d.ellipse((x - 2.5, y - 2.5, x + 2.5, y + 2.5), fill=colour)
    for m in scene.markers:
        if m.frame > t:
            continue
        colour = _rgb(TEAM_COLOURS[scene.team[m.fighter]])
        x, y = px(m.x, m.y)
        if m.kind == "launch":
            d.ellipse((x - 3, y - 3, x + 3, y + 3), outline=_fade(colour, 0.6))
        else:
            d.line([(x - 7, y - 7), (x + 7, y + 7)], fill=colour, width=3)
            d.line([(x - 7, y + 7), (x + 7, y - 7)], fill=colour, width=3)
    for i in range(scene.xy.shape[1]):
        if not scene.alive[t, i]:
            continue
        x, y = px(*scene.xy[t, i])
        h = float(scene.heading[t, i])
        nose = (x + 9 * math.cos(h), y - 9 * math.sin(h))
        left = (x + 6 * math.cos(h + 2.5), y - 6 * math.sin(h + 2.5))
        right = (x + 6 * math.cos(h - 2.5), y - 6 * math.sin(h - 2.5))
        d.polygon([nose, left, right], fill=_rgb(TEAM_COLOURS[scene.team[i]]), outline=(0, 0, 0))
    d.rectangle((0, 0, size, header - 4), fill=(245, 245, 245))
    d.text((6, 3), f"t = {scene.time_s(t):6.1f} s", fill=(0, 0, 0), font=font)
    d.text((110, 3), scene.side_names[0], fill=_rgb(TEAM_COLOURS[0]), font=font)
    d.text((110, 17), scene.side_names[1], fill=_rgb(TEAM_COLOURS[1]), font=font)
    rng = scene.min_range[t]
    if not np.isnan(rng):
        d.text((6, 17), f"range {rng:5.1f} km", fill=(60, 60, 60), font=font)
    if t == scene.length - 1:
        d.text((6, size - 18), scene.result, fill=(0, 0, 0), font=font)
    return np.asarray(img)


def _grid(d: ImageDraw.ImageDraw, px: Callable[[float, float], tuple[float, float]], scene: Scene,
          span: float, size: int, header: int) -> None:
    step = _nice_step(span / 6)
    xmin, xmax, ymin, ymax = scene.bounds
    for v in np.arange(math.floor(xmin / step) * step, xmax + step, step):
        x, _ = px(float(v), 0.0)
        d.line([(x, header), (x, size)], fill=(236, 236, 236))
    for v in np.arange(math.floor(ymin / step) * step, ymax + step, step):
        _, y = px(0.0, float(v))
        if y >= header:
            d.line([(0, y), (size, y)], fill=(236, 236, 236))
    d.text((size - 70, size - 18), f"grid {step:g} km", fill=(150, 150, 150))


def _nice_step(raw: float) -> float:
    exp = 10 ** math.floor(math.log10(max(raw, 1e-9)))
    for m in (1, 2, 5, 10):
        if raw <= m * exp:
            return m * exp
    return 10 * exp


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def _fade(colour: tuple[int, int, int], alpha: float) -> tuple[int, int, int]:
    """``colour`` blended onto white with opacity ``alpha``."""
    r, g, b = (int(round(255 + (c - 255) * alpha)) for c in colour)
    return r, g, b


def _font(image_font: Any, size: int) -> Any:
    try:
        return image_font.load_default(size=size)
    except (TypeError, OSError, ImportError):  # Pillow without FreeType: its bitmap font
        return image_font.load_default()
