"""Evaluation throughput: side-swapped, seed-paired matches per second on midrange 1v1.

Two pairings: the heuristic pilot against the random pilot (numpy bots, the core's cost), and two
LSTM policies of about 143k parameters (``Policy(obs_dim, [5, 3, 2], 128, 128)``, random weights,
sampling) where batched inference dominates. Figures depend on the machine and its load.

``--round-robin N``: a round robin of N such policies (what ``arena.evaluate --league`` plays), timed
three ways in the same run: one pairing at a time (``play_match`` for each pair), side by side in one
batched env with a forward pass per player (``play_matchups(grouped=False)``), and side by side with
the policies stepped together in one bank (``play_matchups(grouped=True)``, what the round robin
does when its policies average few rows); prints the rates and the grouped way's speed-up over each.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import torch

from arena.agents.players import ResolvedPlayer, game_spaces, resolve_player
from arena.agents.policy import Policy
from arena.bench.record import write_record
from arena.evaluation.matchups import play_matchups
from arena.evaluation.runner import MatchResult, MatchSettings, play_match

GAME = "midrange"


def policy_player(label: str, spaces_seed: int, hidden: int) -> ResolvedPlayer:
    spaces = game_spaces(GAME)
    torch.manual_seed(spaces_seed)
    policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden, hidden).eval()
    return ResolvedPlayer(label, "policy", label, spaces, policy=policy)


def describe(label: str, r: MatchResult) -> str:
    decisions = sum(m.length for m in r.matches) * 2  # two fighters per 1v1 match
    mean_length = decisions / 2 / max(r.games, 1)
    return (
        f"{label:28} {r.games:5d} games in {r.elapsed_s:6.2f} s: {r.games_per_second:8.1f} games/s, "
        f"{decisions / r.elapsed_s:10.0f} decisions/s, mean length {mean_length:.0f} decisions, "
        f"A's score {r.score()[0]:.3f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m arena.bench evaluate",
        description="Evaluation matches per second on midrange 1v1 (scripted bots and LSTM policies).",
    )
    parser.add_argument("--games", type=int, default=512, help="games per pairing (default 512)")
    parser.add_argument("--envs", type=int, default=256, help="parallel envs (default 256)")
    parser.add_argument("--threads", type=int, default=None, help="core threads (default: all CPUs)")
    parser.add_argument("--torch-threads", type=int, default=1, help="inference threads (default 1)")
    parser.add_argument("--hidden", type=int, default=128, help="policy MLP and LSTM width (default 128)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--round-robin", type=int, default=0, metavar="N",
                        help="also time a round robin of N policies, one pairing at a time and side by side")
    parser.add_argument("--games-per-pair", type=int, default=64, help="round robin games per pairing")
    parser.add_argument("--skip-one-at-a-time", action="store_true",
                        help="round robin: time only the side-by-side ways (slow for a large N)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write a JSON record of its figures")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    torch.set_num_threads(args.torch_threads)
    if args.round_robin:
        return round_robin(args)
    settings = MatchSettings(game=GAME, games=args.games, num_envs=args.envs, seed=args.seed,
                             num_threads=args.threads)
    a = policy_player("policy-a", 1, args.hidden)
    b = policy_player("policy-b", 2, args.hidden)
    print(f"midrange 1v1, {settings.even_games} games per pairing on {settings.envs} envs, "
          f"core threads {args.threads or 'all'}, torch threads {args.torch_threads}; "
          f"policies of {a.policy.num_parameters() if a.policy else 0} parameters")
    pairings = [
        ("heuristic vs random", resolve_player("scripted:heuristic", GAME),
         resolve_player("scripted:random", GAME)),
        ("policy vs policy (LSTM)", a, b),
    ]
    figures: dict[str, dict] = {}
    for label, first, second in pairings:
        start = time.perf_counter()
        result = play_match(first, second, settings)
        print(f"{describe(label, result)}  (wall {time.perf_counter() - start:.2f} s)")
        figures[label] = pairing_figures(result, time.perf_counter() - start)
    write_json(args, {"games_per_pairing": settings.even_games, "envs": settings.envs, "pairings": figures})
    return 0


def pairing_figures(r: MatchResult, wall_s: float) -> dict[str, float | int]:
    """What ``describe`` prints for one pairing, as numbers."""
    decisions = sum(m.length for m in r.matches) * 2
    return {"games": r.games, "elapsed_s": r.elapsed_s, "games_per_second": r.games_per_second,
            "decisions_per_second": decisions / r.elapsed_s if r.elapsed_s else 0.0,
            "mean_length": decisions / 2 / max(r.games, 1), "score_a": r.score()[0], "wall_s": wall_s}


def write_json(args: argparse.Namespace, figures: dict) -> None:
    """The run's JSON record at ``--json`` (nothing without it)."""
    if args.json:
        figures = {"threads": args.threads, "torch_threads": args.torch_threads, "hidden": args.hidden,
                   "seed": args.seed, **figures}
        print(f"wrote {write_record(args.json, 'evaluate', args.argv, figures)}")


def round_robin(args: argparse.Namespace) -> int:
    if args.round_robin < 2:
        raise SystemExit(f"--round-robin {args.round_robin}: a round robin needs at least 2 players")
    players = {f"policy-{k}": policy_player(f"policy-{k}", k, args.hidden)
               for k in range(args.round_robin)}
    matchups = list(itertools.combinations(players, 2))
    settings = MatchSettings(game=GAME, games=args.games_per_pair, num_envs=args.envs, seed=args.seed,
                             num_threads=args.threads)
    games = len(matchups) * settings.even_games
    print(f"round robin of {len(players)} LSTM policies: {len(matchups)} pairings x {settings.even_games} "
          f"games on {settings.envs} envs each, core threads {args.threads or 'all'}, "
          f"torch threads {args.torch_threads}")
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    if not args.skip_one_at_a_time:
        for a, b in matchups:
            play_match(players[a], players[b], settings)
        seconds["one pairing at a time"] = time.perf_counter() - start
    start = time.perf_counter()
    play_matchups(players, matchups, settings, grouped=False)
    seconds["side by side, a pass per player"] = time.perf_counter() - start
    start = time.perf_counter()
    play_matchups(players, matchups, settings, grouped=True)
    seconds["side by side, one grouped pass"] = time.perf_counter() - start
    for label, s in seconds.items():
        print(f"{label:32}: {games} games in {s:7.2f} s, {games / s:8.1f} games/s")
    grouped = seconds["side by side, one grouped pass"]
    for label, s in seconds.items():
        if s != grouped:
            print(f"grouped against {label}: {s / grouped:.2f}x")
    write_json(args, {"round_robin": len(players), "pairings": len(matchups),
                      "games_per_pair": settings.even_games, "envs": settings.envs, "games": games,
                      "seconds": seconds, "games_per_second": {k: games / s for k, s in seconds.items()},
                      "grouped_speedup": {k: s / grouped for k, s in seconds.items() if s != grouped}})
    return 0

