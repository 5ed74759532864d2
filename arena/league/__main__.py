"""`python -m arena.league show RUN_DIR [--out DIR] [--x match|step] [--all]`: leaderboard and plots."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from arena.league.view.plots import show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.league", description="Inspect a league store.")
    commands = parser.add_subparsers(dest="command", required=True)
    show_cmd = commands.add_parser(
        "show", help="print the leaderboard, gauntlet, exploitability, the exploiters' time to exploit and "
                "what the league publishes; write their PNGs")
    show_cmd.add_argument("run_dir", help="run directory holding league.sqlite")
    show_cmd.add_argument("--out", default=None, help="directory for the PNGs (default: RUN_DIR)")
    show_cmd.add_argument("--x", choices=("match", "step"), default="match",
                          help="x axis of the rating curves: match index or learner step")
    show_cmd.add_argument("--all", action="store_true", dest="all_players",
                          help="every player (default: the league's view_players: every non-snapshot "
                               "player, the learner's newest snapshots and the best rated)")
    args = parser.parse_args(argv)

    console = Console()
    try:
        view = show(args.run_dir, args.out, x=args.x, all_players=args.all_players)
    except (FileNotFoundError, ValueError) as err:
        Console(stderr=True).print(f"[red]error:[/red] {err}")
        return 2
    wanted = max(console.measure(t, options=console.options.update_width(1000)).maximum
                 for t in (view.table, view.time_to_exploit) if t is not None)
    if wanted > console.width:  # wrap in a narrow terminal rather than cut the numbers short
        console = Console(width=wanted)
    console.print(view.table)
    if view.gauntlet is not None:
        console.print(view.gauntlet)
    if view.time_to_exploit is not None:
        console.print(view.time_to_exploit)
    if view.exploitability is not None:
        console.print(view.exploitability, soft_wrap=True)
    console.print(view.published, soft_wrap=True, markup=False)
    for image in view.images:
        console.print(f"wrote {image}", soft_wrap=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
