"""Simulator throughput: physics steps/s and agent decisions/s of the native core.

Prints, for 1v1 and 4v4 at 1 and 2 threads, the core's speed, the thread scaling, the speed-up
over the NumPy reference and the ratio to a bare loop of the fighter equations, all measured
in the same run. Physics steps count env-steps: one env advanced by dt.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import arena
from arena import _core


def _best_rate(run: Callable[[], float], repeats: int) -> float:
    """Highest of `repeats` measurements: the least disturbed by other load on the machine."""
    return max(run() for _ in range(repeats))


def random_actions(rng: np.random.Generator, rows: int, fire_prob: float) -> np.ndarray:
    """Uniform rudder and throttle; fire with probability ``fire_prob`` (0.5 = uniform actions)."""
    fire = rng.random(rows) < fire_prob
    return np.stack([rng.integers(0, 5, rows), rng.integers(0, 3, rows), fire], axis=1).astype(np.int32)


def core_rate(
    team_sizes: tuple[int, int], num_envs: int, threads: int, decisions: int, repeats: int, fire_prob: float
) -> float:
    """Env physics steps per second of the native core with random actions."""
    env = arena.make("midrange", num_envs=num_envs, num_threads=threads, seed=1, team_sizes=team_sizes)
    rng = np.random.default_rng(0)
    batches = [random_actions(rng, env.num_agents, fire_prob) for _ in range(8)]
    for a in batches:  # warm-up: touch every buffer once
        env.step(a)

    def run() -> float:
        start = time.perf_counter()
        for t in range(decisions):
            env.step(batches[t % len(batches)])
        return num_envs * env.params["frame_skip"] * decisions / (time.perf_counter() - start)

    return _best_rate(run, repeats)


def reference_rate(team_sizes: tuple[int, int], num_envs: int, decisions: int, fire_prob: float) -> float:
    from arena.envs.reference.midrange import MidrangeReference

    ref = MidrangeReference({"team_size": team_sizes}, num_envs=num_envs)
    ref.reset(1)
    rng = np.random.default_rng(0)
    rows = num_envs * sum(team_sizes)
    batches = [random_actions(rng, rows, fire_prob) for _ in range(8)]
    for a in batches:  # the same warm-up as the core: missiles in flight
        ref.step(a)
    start = time.perf_counter()
    for t in range(decisions):
        ref.step(batches[t % len(batches)])
    return num_envs * 12 * decisions / (time.perf_counter() - start)


def bare_rate(num_envs: int, steps: int, repeats: int) -> float:
    def run() -> float:
        start = time.perf_counter()
        _core.bare_fighter_loop(num_envs, steps)
        return num_envs * steps / (time.perf_counter() - start)

    return _best_rate(run, repeats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench sim", description=__doc__)
    parser.add_argument("--envs", type=int, default=4096, help="envs per batch")
    parser.add_argument("--decisions", type=int, default=100, help="decisions per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="measurements per figure (best is kept)")
    parser.add_argument("--reference-envs", type=int, default=256)
    parser.add_argument("--reference-decisions", type=int, default=10)
    parser.add_argument("--fire-prob", type=float, default=0.5,
                        help="chance a fighter asks to fire each decision (0.5: uniform random actions, "
                        "about 11 missiles in flight per 1v1 match; 0: no missiles)")
    args = parser.parse_args(argv)

    print(f"workload: {args.envs} envs, random actions with fire probability {args.fire_prob}")
    bare = bare_rate(args.envs, 600, args.repeats)
    print(f"bare fighter-equation loop (1 thread, 2 fighters/env, no missiles, no obs): "
          f"{bare / 1e6:8.2f} M env-steps/s")
    print(f"{'game':6} {'threads':>7} {'physics steps/s':>16} {'decisions/s':>13} {'agent dec/s':>13} "
          f"{'vs 1 thread':>11} {'vs numpy':>9} {'vs bare':>8}")
    for sizes in ((1, 1), (4, 4)):
        ref = reference_rate(sizes, args.reference_envs, args.reference_decisions, args.fire_prob)
        one = 0.0
        for threads in (1, 2):
            rate = core_rate(sizes, args.envs, threads, args.decisions, args.repeats, args.fire_prob)
            one = one or rate
            label = f"{sizes[0]}v{sizes[1]}"
            decisions = rate / 12
            print(f"{label:6} {threads:7d} {rate / 1e6:13.2f} M {decisions / 1e6:10.3f} M "
                  f"{decisions * sum(sizes) / 1e6:10.3f} M {rate / one:10.2f}x {rate / ref:8.0f}x "
                  f"{rate / bare:7.2f}x")
        print(f"{label:6} numpy reference ({args.reference_envs} envs): {ref / 1e3:10.1f} k physics steps/s")
    return 0
