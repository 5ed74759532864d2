"""Benchmarks: ``python -m arena.bench {sim,pilots,train,...}``. Each prints figures; none asserts."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "sim": ("arena.bench.sim", "simulator physics steps/s and decisions/s, threads, vs NumPy"),
    "pilots": ("arena.bench.pilots", "heuristic pilot against the random bot over 1000 matches"),
    "train": ("arena.bench.train_sps", "training SPS with the time split"),
    "learn": ("arena.bench.learn", "win rate against the heuristic pilot over 15 minutes of training"),
    "bank": ("arena.bench.bank", "frozen opponents' batched step: one padded pass vs planned passes"),
    "league": ("arena.bench.league", "share of training wall time in league work, selfplay midrange 1v1"),
    "evaluate": ("arena.bench.evaluate", "evaluation matches/s, midrange 1v1: scripted and LSTM players"),
    "ddp": ("arena.bench.ddp", "data-parallel training, 1 rank vs 2 (gloo): parameters equal, SPS"),
    "exploitability": ("arena.bench.exploitability",
                       "Goofspiel leagues (selfplay, pfsp, alphastar): exact exploitability over training"),
    "exploit": ("arena.bench.exploit",
                "approximate exploitability: a fresh learner trains against TARGET alone, its score"),
    "gpu": ("arena.bench.gpu", "the GPU path in one command (<= 6 min): parity, physics, SPS, league"),
    "league-scale": ("arena.bench.league_scale",
                     "a week-long league: resume, per-update league work, memory, disk at 20k snapshots"),
    "crash": ("arena.bench.crash", "SIGKILL a league run at random moments, resume it, check the league"),
    "sb3": ("arena.bench.sb3", "Stable-Baselines3 on ArenaVecEnv vs SubprocVecEnv: env and PPO.learn SPS"),
    "pruning": ("arena.bench.pruning", "one Optuna study on rpsw without and with a pruner: wall time, best"),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        lines = "\n".join(f"  {name:14} {doc}" for name, (_, doc) in COMMANDS.items())
        print(f"usage: python -m arena.bench COMMAND [options]\n\ncommands:\n{lines}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return int(module.main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
