"""Frozen opponents' batched step (``arena.agents.grouped.PolicyBank``): one padded pass against the
planned passes, for row counts spread evenly over the players and for a pool where a few players
hold most rows (PFSP's favourites).

``python -m arena.bench bank [--players 50] [--rows 256] [--reps 200]``

Every player has the default architecture (the ~143k-parameter LSTM policy, midrange 1v1
observations). A step's rows are drawn over the players (multinomial, seeded): evenly, and with two
players holding 20% and 10% of the rows. The two ways are timed in alternating turns (medians of 4
turns), and the printout names the passes the plan chose.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from arena.agents import grouped
from arena.agents.policy import Policy
from arena.bench.record import write_record
from arena.envs.registry import make


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m arena.bench bank", description=__doc__.splitlines()[0])
    p.add_argument("--players", type=int, default=50)
    p.add_argument("--rows", type=int, default=256, help="opponent rows per half-step")
    p.add_argument("--reps", type=int, default=200, help="steps per timed turn")
    p.add_argument("--turns", type=int, default=4)
    p.add_argument("--torch-threads", type=int, default=None, help="default: torch's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="PATH", help="write a JSON record of its figures")
    return p.parse_args(argv)


def one_pass(counts: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
    """Every player's rows in one padded product (the plan before passes)."""
    return [(np.arange(len(counts)), 0, int(np.max(counts)))]


def time_step(bank: grouped.PolicyBank, counts: np.ndarray, obs_dim: int, reps: int) -> float:
    """Milliseconds per ``forward_step`` over rows split by ``counts``."""
    edges = np.cumsum([0, *counts.tolist()]).tolist()
    bounds = list(zip(edges[:-1], edges[1:], strict=True))
    n = edges[-1]
    obs = torch.randn(n, obs_dim)
    lstm = bank.stacks["lstm_w"].shape[2] // 4
    state = (torch.zeros(n, lstm), torch.zeros(n, lstm))
    starts = torch.zeros(n, dtype=torch.bool)
    players = list(range(len(counts)))
    with torch.inference_mode():
        for _ in range(5):
            bank.forward_step(players, bounds, obs, state, starts)
        t0 = time.perf_counter()
        for _ in range(reps):
            bank.forward_step(players, bounds, obs, state, starts)
    return 1e3 * (time.perf_counter() - t0) / reps


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    env = make("midrange", num_envs=1, num_threads=1)
    obs_dim, nvec = env.obs_dim, [int(n) for n in env.action_space.nvec]
    torch.manual_seed(args.seed)
    bank = grouped.PolicyBank(Policy(obs_dim, nvec))
    for player in range(args.players):
        bank.put(player, Policy(obs_dim, nvec).eval())
    rng = np.random.default_rng(args.seed)
    even = np.full(args.players, 1.0 / args.players)
    skewed = np.concatenate([[0.2, 0.1], np.full(args.players - 2, 0.7 / (args.players - 2))])
    print(f"{args.players} frozen LSTM policies in one bank, {args.rows} rows per step, torch threads "
          f"{torch.get_num_threads()}; ms per step, medians of {args.turns} alternating turns")
    planned = grouped.plan_passes
    cases: dict[str, dict] = {}
    for name, probs in (("even", even), ("two favourites", skewed)):
        counts = rng.multinomial(args.rows, probs)
        times: dict[str, list[float]] = {"one pass": [], "planned": []}
        try:
            for _ in range(args.turns):
                for way, plan in (("one pass", one_pass), ("planned", planned)):
                    grouped.plan_passes = plan
                    times[way].append(time_step(bank, counts, obs_dim, args.reps))
        finally:
            grouped.plan_passes = planned
        single, multi = (statistics.median(times[w]) for w in ("one pass", "planned"))
        passes = [(len(m), w) for m, _, w in planned(counts)]
        print(f"{name:15} rows per player max {counts.max():3d}, mean {counts.mean():4.1f}: one pass "
              f"{single:6.3f} ms (padded to {len(counts) * counts.max()} rows), planned {multi:6.3f} ms "
              f"({len(passes)} pass(es), players x width {passes}): {single / multi:.2f}x")
        cases[name] = {"rows_per_player_max": int(counts.max()), "rows_per_player_mean": float(counts.mean()),
                       "one_pass_ms": single, "padded_rows": int(len(counts) * counts.max()),
                       "planned_ms": multi, "passes": [list(x) for x in passes], "speedup": single / multi}
    if args.json:
        figures = {"players": args.players, "rows": args.rows, "turns": args.turns, "reps": args.reps,
                   "torch_threads": torch.get_num_threads(), "cases": cases}
        print(f"wrote {write_record(args.json, 'bank', list(argv), figures)}")
    return 0
