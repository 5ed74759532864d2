"""Watch a replay: ``python -m arena.replay FILE [--gif OUT.gif | --mp4 OUT.mp4] [--html OUT.html]``.

Without an output it prints what the file holds. ``--check`` plays the game again in the core and
confirms it matches the recording bit for bit. Errors (a missing or damaged file, a bad option, an
MP4 without imageio-ffmpeg) exit with code 2 and a message naming them.
"""

from __future__ import annotations

import argparse
import sys

from arena.replay.animate import DEFAULT_FPS, write_animation
from arena.replay.file import Replay, load_replay
from arena.replay.html import write_html
from arena.replay.scene import build_scene
from arena.replay.simulate import check_replay


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m arena.replay",
                                description="Draw a replay file (.npz) as a GIF, an MP4 or an HTML viewer.")
    p.add_argument("file", metavar="FILE", help="a replay file written by python -m arena.evaluate --replays")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--gif", metavar="OUT.gif", default=None, help="write an animated GIF")
    out.add_argument("--mp4", metavar="OUT.mp4", default=None, help="write an MP4 (needs imageio-ffmpeg)")
    p.add_argument("--html", metavar="OUT.html", default=None,
                   help="write a self-contained HTML viewer (open it in a browser; no server needed)")
    p.add_argument("--fps", type=float, default=DEFAULT_FPS,
                   help=f"animation frames per second (default {DEFAULT_FPS:g}; one frame shows one or more "
                   "decisions, 0.2 s of game time each by default)")
    p.add_argument("--stride", type=int, default=None,
                   help="decisions per animation frame (default: 1 for MP4; GIFs keep at most 300 frames)")
    p.add_argument("--size", type=int, default=480, help="animation width and height in pixels (default 480)")
    p.add_argument("--check", action="store_true",
                   help="re-simulate the game in the core and check it matches the recording bit for bit")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)

    try:
        replay = load_replay(args.file)
        print(_summary(replay))
        if args.check:
            check_replay(replay)
            print("check: the core reproduces every frame, event and the result bit for bit")
        animation = args.gif or args.mp4
        if animation is not None:
            suffix = ".gif" if args.gif else ".mp4"
            if not animation.lower().endswith(suffix):
                raise ValueError(f"--{suffix[1:]} {animation}: the file name must end in {suffix}")
            path = write_animation(replay, animation, fps=args.fps, stride=args.stride, size=args.size)
            print(f"wrote {path}")
        if args.html is not None:
            print(f"wrote {write_html(replay, args.html)}")
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _summary(replay: object) -> str:
    assert isinstance(replay, Replay)
    a, b = replay.players
    fired = replay.events[:, :, replay.event_names.index("fired")].sum(axis=0)
    team = replay.team_of_fighter
    shots = {side: int(fired[team == (replay.a_team if side == "A" else 1 - replay.a_team)].sum())
             for side in "AB"}
    lines = [
        f"{replay.game} {replay.team_sizes[0]}v{replay.team_sizes[1]}: A {a.name} (team {replay.a_team}) vs "
        f"B {b.name} (team {1 - replay.a_team})",
        f"  result    {build_scene(replay).result}, {replay.length} decisions",
        f"  missiles  A fired {shots['A']}, B fired {shots['B']}",
        f"  game      {replay.game_number} of the evaluation (seed {replay.evaluation_seed}); env seed "
        f"{replay.seed}, match {replay.match_index} of env {replay.env_index}",
    ]
    for side, player in (("A", a), ("B", b)):
        if player.sha256:
            lines.append(f"  {side} sha256  {player.sha256}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
