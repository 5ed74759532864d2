"""Head-to-head and round-robin evaluation from the command line.

    python -m arena.evaluate A B --games 1000 [--game midrange] [--sprt 0 10] [--record RUN_DIR]
    python -m arena.evaluate A B --games 100 --replays DIR [--replay-games 10] [--replay-which losses]
    python -m arena.evaluate --league RUN_DIR --games-per-pair 200 [--checkpoint learner=last.pt]
    python -m arena.evaluate A B --games 200 --logger wandb [--wandb-project P] [--log-dir DIR]

A player is ``scripted:<bot>`` or a policy file (``checkpoint:<path>`` or a bare path). Games are
played in side-swapped, seed-paired pairs (see ``arena.evaluation.runner``). Errors in the inputs
(missing file, unknown bot, a policy for another game) exit with code 2 and a message naming them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import arena
from arena.agents.players import game_spaces, resolve_player
from arena.envs.registry import GAMES
from arena.evaluation import log_results
from arena.evaluation.league_players import league_players
from arena.evaluation.record import record_result
from arena.evaluation.report import format_match, format_round_robin
from arena.evaluation.round_robin import play_round_robin
from arena.evaluation.runner import MatchSettings, SprtSettings, play_match
from arena.games import DEFAULT_GAME, spec
from arena.games import require as require_feature
from arena.provenance import provenance
from arena.replay.file import REPLAY_GAMES, replay_file_name, save_replay
from arena.replay.record import ReplayRecorder


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m arena.evaluate",
        description="Play two players head-to-head (A B) or a league's round robin (--league RUN_DIR). "
        "Players: scripted:<bot> or a policy file (checkpoint:<path> or a path).",
    )
    p.add_argument("players", nargs="*", metavar="PLAYER", help="the two players A and B")
    p.add_argument("--games", type=int, default=200, help="games of A vs B, rounded up to even (default 200)")
    p.add_argument("--game", default=DEFAULT_GAME, choices=GAMES, help=f"game (default {DEFAULT_GAME})")
    p.add_argument("--team-sizes", type=int, nargs=2, default=(1, 1), metavar=("N0", "N1"))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="game setting override, e.g. --set time_limit_s=120 (repeatable)")
    p.add_argument("--envs", type=int, default=None, help="parallel envs (default min(games, 256))")
    p.add_argument("--seed", type=int, default=0, help="seed of spawns and players (default 0)")
    p.add_argument("--threads", type=int, default=None, help="core threads (default: all CPUs)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="where the matches are stepped and the policies run (default cpu; cuda needs a "
                   "CUDA build of the core and a GPU)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="threads for policy inference (default 1: evaluation batches are small, and more "
                   "threads contend with the core's own thread pool)")
    p.add_argument("--deterministic", action="store_true", help="policies take their argmax action")
    p.add_argument("--sprt", type=float, nargs=2, default=None, metavar=("ELO0", "ELO1"),
                   help="stop early when the SPRT of H0: elo=ELO0 vs H1: elo=ELO1 decides")
    p.add_argument("--alpha", type=float, default=0.05, help="SPRT false-positive rate (default 0.05)")
    p.add_argument("--beta", type=float, default=0.05, help="SPRT false-negative rate (default 0.05)")
    p.add_argument("--record", metavar="RUN_DIR", default=None, help="record every match in this league")
    p.add_argument("--replays", metavar="DIR", default=None,
                   help="save chosen games as replay files (.npz) in DIR (python -m arena.replay shows one)")
    p.add_argument("--replay-games", type=int, default=None, metavar="K",
                   help="replays to save (default 10; not with --replay-which all)")
    p.add_argument("--replay-which", default="first", choices=("first", "wins", "draws", "losses", "all"),
                   help="which games: the first K in counting order (default), the first K that A won, "
                   "drew or lost, or all of them")
    p.add_argument("--shots", action="store_true",
                   help="games with missiles: where each side fired from (range, off the nose, speed, "
                   "closing, aspect, time; 10th/50th/90th percentiles), its hits per shot, and its fire "
                   "picks that launched nothing")
    p.add_argument("--league", metavar="RUN_DIR", default=None, help="round robin of this league's players")
    p.add_argument("--games-per-pair", type=int, default=100, help="round-robin games per pair (default 100)")
    p.add_argument("--checkpoint", action="append", default=[], metavar="[ID=]PATH",
                   help="play a league's learning player from this file (ID defaults to 'learner')")
    p.add_argument("--anchor", default=None, help="player rated 0 (default: a scripted bot, else the mean)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--logger", default="none", choices=("none", "wandb", "tensorboard"),
                   help="also log the result: score, interval, Elo, W/D/L, games/s (a round robin: ratings "
                   "table and payoff heatmap) to W&B (offline without an API key) or TensorBoard")
    p.add_argument("--wandb-project", default=None, metavar="P", help="W&B project (default arena)")
    p.add_argument("--log-dir", default=None, metavar="DIR",
                   help="where --logger writes (default runs/evaluate-<date>-<time>)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help and on bad arguments
        return int(exc.code or 0)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.torch_threads < 1:
            raise ValueError(f"--torch-threads {args.torch_threads} must be at least 1")
        if args.logger == "none" and (args.wandb_project is not None or args.log_dir is not None):
            raise ValueError("--wandb-project and --log-dir need --logger wandb or tensorboard")
        if args.logger == "tensorboard" and args.wandb_project is not None:
            raise ValueError("--wandb-project applies to --logger wandb, not --logger tensorboard")
        import torch

        torch.set_num_threads(args.torch_threads)
        if args.device == "cuda":
            _check_cuda(args.game)
        if args.league is not None:
            if args.players:
                raise ValueError("give either two players or --league RUN_DIR, not both")
            return _round_robin(args)
        if len(args.players) != 2:
            raise ValueError(f"expected two players A B (or --league RUN_DIR), got {len(args.players)}")
        return _head_to_head(args)
    except (FileNotFoundError, ValueError) as exc:
        # The first line says what is wrong; torch appends pages of advice to a damaged file's error.
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2


def _check_cuda(game: str) -> None:
    """Refuses --device cuda up front, with the core's or torch's reason, where it cannot run."""
    try:
        arena.make(game, num_envs=1, device="cuda").close()
    except RuntimeError as exc:
        raise ValueError(f"--device cuda: {exc}") from None
    import torch

    if not torch.cuda.is_available():
        raise ValueError("--device cuda: torch sees no usable GPU for the policies; use --device cpu")


def _settings(args: argparse.Namespace, games: int) -> Any:
    sprt = None if args.sprt is None else SprtSettings(args.sprt[0], args.sprt[1], args.alpha, args.beta)
    return MatchSettings(
        game=args.game, team_sizes=(args.team_sizes[0], args.team_sizes[1]), games=games,
        num_envs=args.envs, seed=args.seed, num_threads=args.threads, overrides=_overrides(args.overrides),
        deterministic=args.deterministic, sprt=sprt, device=args.device,
    )


def _head_to_head(args: argparse.Namespace) -> int:
    settings = _settings(args, args.games)
    recorder = _replay_recorder(args, settings.game)
    shots = _shot_recorder(args, settings.game)
    spaces = game_spaces(settings.game, settings.team_sizes, settings.overrides)
    a, b = (resolve_player(spec, settings.game, spaces=spaces) for spec in args.players)
    with _progress(args, "games") as update:
        result = play_match(a, b, settings, on_progress=None if update is None else (
            lambda p: update(p.finished, p.games_total, _tally(p.wins, p.draws, p.losses))),
            recorder=[r for r in (recorder, shots) if r is not None])
    ids = record_result(args.record, a, b, result) if args.record else None
    _log_result(args, f"{args.players[0]} vs {args.players[1]}", "log_match", result)
    replays = _save_replays(recorder, result, args.replays) if recorder is not None else None
    if args.json:
        out = {**result.as_dict(), "provenance": provenance()}
        if ids is not None:
            out["recorded"] = {"run_dir": args.record, "a": ids[0], "b": ids[1],
                               "matches": len(result.matches)}
        if replays is not None:
            out["replays"] = [str(path) for path in replays]
        if shots is not None:
            out["shots"] = {side: dataclasses.asdict(summary)
                            for side, summary in zip(("a", "b"), shots.summary(), strict=True)}
        print(json.dumps(out, indent=2))
    else:
        print(format_match(result))
        if ids is not None:
            print(f"  recorded  {len(result.matches)} matches as {ids[0]} vs {ids[1]} in {args.record}")
        if replays is not None:
            print(f"  replays   {len(replays)} games ({args.replay_which}) saved in {args.replays}")
        if shots is not None:
            for label, summary in zip((a.name, b.name), shots.summary(), strict=True):
                print("\n".join("  shots     " + line for line in summary.lines(label)))
    return 0


def _shot_recorder(args: argparse.Namespace, game: str) -> Any:
    """A ``ShotRecorder`` for ``--shots``, or None; refused before any game for a game without missiles."""
    if not args.shots:
        return None
    require_feature(game, "shots", "--shots (missile launch geometry)")

    return spec(game).shot_recorder()


def _replay_recorder(args: argparse.Namespace, game: str) -> Any:
    """A ``ReplayRecorder`` for ``--replays``, or None; the options checked before any game is played."""
    if args.replays is None:
        if args.replay_games is not None or args.replay_which != "first":
            raise ValueError("--replay-games and --replay-which need --replays DIR")
        return None

    if game not in REPLAY_GAMES:
        raise ValueError(f"--replays records {', '.join(REPLAY_GAMES)} games, not {game}")
    if args.replay_which == "all" and args.replay_games is not None:
        raise ValueError("--replay-games does not apply to --replay-which all (every counted game is saved)")
    if args.replay_games is not None and args.replay_games < 1:
        raise ValueError(f"--replay-games {args.replay_games} must be at least 1")
    if os.path.exists(args.replays) and not os.path.isdir(args.replays):
        raise ValueError(f"--replays {args.replays} exists and is not a directory")
    return ReplayRecorder(args.replay_which, 10 if args.replay_games is None else args.replay_games)


def _save_replays(recorder: Any, result: Any, directory: str) -> list[Any]:
    chosen = recorder.replays(result.matches)
    return [save_replay(r, os.path.join(directory, replay_file_name(r))) for r in chosen]


def _round_robin(args: argparse.Namespace) -> int:
    if args.sprt is not None or args.record is not None:
        raise ValueError("--sprt and --record apply to head-to-head matches, not to --league")
    if args.replays is not None:
        raise ValueError("--replays applies to head-to-head matches, not to --league")
    settings = _settings(args, args.games_per_pair)
    players = league_players(args.league, settings.game, settings.team_sizes, overrides=settings.overrides,
                             checkpoints=_checkpoints(args.checkpoint))
    if len(players) < 2:
        raise ValueError(f"the league at {args.league} has {len(players)} playable players "
                         f"({list(players)}); a round robin needs two (give --checkpoint for the learner)")
    pairs = len(players) * (len(players) - 1) // 2
    games_of_pair: dict[tuple[str, str], int] = {}
    with _progress(args, "games") as update:
        def on_progress(a: str, b: str, p: Any) -> None:
            games_of_pair[(a, b)] = p.finished
            assert update is not None
            update(sum(games_of_pair.values()), pairs * p.games_total,
                   f"{a} vs {b}: {_tally(p.wins, p.draws, p.losses)}")

        rr = play_round_robin(players, settings, anchor=args.anchor,
                              on_progress=None if update is None else on_progress)
    _log_result(args, f"round robin of {args.league}", "log_round_robin", rr)
    print(json.dumps({**rr.as_dict(), "provenance": provenance()}, indent=2) if args.json
          else format_round_robin(rr))
    return 0


def _log_result(args: argparse.Namespace, name: str, how: str, result: Any) -> None:
    """Sends the result to ``--logger`` (nothing with ``none``) with ``log_match`` or ``log_round_robin``."""
    if args.logger == "none":
        return

    config = {k: v for k, v in vars(args).items() if k not in ("logger", "wandb_project", "log_dir")}
    with log_results.open_logger(args.logger, args.log_dir, project=args.wandb_project, name=name,
                                 config=config) as log:
        getattr(log_results, how)(log, result)
    print(f"logged to {log.loggers[0].run_dir} ({args.logger})", file=sys.stderr)


def _tally(wins: int, draws: int, losses: int) -> str:
    n = wins + draws + losses
    score = (wins + 0.5 * draws) / n if n else 0.5
    return f"W/D/L {wins}/{draws}/{losses}  score {score:.3f}"


@contextmanager
def _progress(args: argparse.Namespace, unit: str) -> Iterator[Callable[[int, int, str], None] | None]:
    """A rich progress bar on a terminal; None (no bar) when stdout is not one, or when asked."""
    if args.no_progress or args.json or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(unit), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, text: str) -> None:
            bar.update(task, completed=done, total=total, description=text)

        yield update


def _overrides(pairs: list[str]) -> dict[str, float | int | str]:
    """``KEY=VALUE`` pairs as game overrides: numbers where the value reads as one, else the text
    (a text parameter such as goofspiel's ``points_order``); ``make`` checks both against the game."""
    out: dict[str, float | int | str] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {pair!r} must look like KEY=VALUE, e.g. time_limit_s=120")
        try:
            out[key] = int(text)
        except ValueError:
            try:
                out[key] = float(text)
            except ValueError:
                out[key] = text
    return out


def _checkpoints(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        player_id, sep, path = item.partition("=")
        out[player_id if sep else "learner"] = path if sep else item
    return out


if __name__ == "__main__":
    sys.exit(main())
