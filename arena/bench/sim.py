"""Simulator throughput: physics steps/s and agent decisions/s of the native core.

Prints, for 1v1 and 4v4 at 1 and 2 threads, the core's speed, the thread scaling, the speed-up
over the NumPy reference and the ratio to a bare loop of the fighter equations, all measured
in the same run. Physics steps count env-steps: one env advanced by dt.

This machine's speed drifts by tens of percent within a minute, so the 1- and 2-thread cores
are timed in turns (1, 2, 1, 2, ...) and each figure is the median over the turns, with the
best turn beside it; the scaling compares turns taken side by side. The NumPy reference is
timed with 256 envs (as earlier runs of this bench) and with as many envs as the core.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import arena
from arena import _core


def random_actions(rng: np.random.Generator, rows: int, fire_prob: float) -> np.ndarray:
    """Uniform rudder and throttle; fire with probability ``fire_prob`` (0.5 = uniform actions)."""
    fire = rng.random(rows) < fire_prob
    return np.stack([rng.integers(0, 5, rows), rng.integers(0, 3, rows), fire], axis=1).astype(np.int32)


def core_turn(team_sizes: tuple[int, int], num_envs: int, threads: int, decisions: int,
              fire_prob: float) -> Callable[[], float]:
    """A warmed-up core; each call of the returned function times one turn of ``decisions``
    decisions and returns its env physics steps per second."""
    env = arena.make("midrange", num_envs=num_envs, num_threads=threads, seed=1, team_sizes=team_sizes)
    rng = np.random.default_rng(0)
    batches = [random_actions(rng, env.num_agents, fire_prob) for _ in range(8)]
    for t in range(40):  # warm-up: missiles in flight, as in the steady state
        env.step(batches[t % len(batches)])
    frame_skip = env.params["frame_skip"]

    def turn() -> float:
        start = time.perf_counter()
        for t in range(decisions):
            env.step(batches[t % len(batches)])
        return num_envs * frame_skip * decisions / (time.perf_counter() - start)

    return turn


def reference_rate(team_sizes: tuple[int, int], num_envs: int, decisions: int, fire_prob: float) -> float:
    from arena.envs.reference.midrange import MidrangeReference

    ref = MidrangeReference({"team_size": team_sizes}, num_envs=num_envs)
    ref.reset(1)
    rng = np.random.default_rng(0)
    rows = num_envs * sum(team_sizes)
    batches = [random_actions(rng, rows, fire_prob) for _ in range(8)]
    for a in batches:  # warm-up: missiles in flight
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

    return max(run() for _ in range(repeats))


def interleaved(turns: dict[int, Callable[[], float]], repeats: int) -> dict[int, list[float]]:
    """Rates of each core over ``repeats`` rounds, one turn of each per round."""
    rates: dict[int, list[float]] = {threads: [] for threads in turns}
    for _ in range(repeats):
        for threads, turn in turns.items():
            rates[threads].append(turn())
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench sim", description=__doc__)
    parser.add_argument("--envs", type=int, default=4096, help="envs per batch")
    parser.add_argument("--decisions", type=int, default=40,
                        help="decisions per timed turn (1v1; 4v4 takes a quarter)")
    parser.add_argument("--repeats", type=int, default=15, help="timed turns per figure")
    parser.add_argument("--reference-envs", type=int, default=256)
    parser.add_argument("--reference-decisions", type=int, default=10)
    parser.add_argument("--fire-prob", type=float, default=0.5,
                        help="chance a fighter asks to fire each decision (0.5: uniform random actions, "
                        "about 11 missiles in flight per 1v1 match; 0: no missiles)")
    args = parser.parse_args(argv)

    from arena.envs.registry import build_params

    lanes = _core.MidrangeBatch(build_params("midrange", (1, 1), {})[1], 8, 1, "cpu").lanes
    print(f"workload: {args.envs} envs, random actions with fire probability {args.fire_prob}; "
          f"the core steps {lanes} envs per SIMD call")
    bare = bare_rate(args.envs, 600, 5)
    print(f"bare fighter-equation loop (1 thread, 2 fighters/env, no missiles, no obs): "
          f"{bare / 1e6:8.2f} M env-steps/s")
    print(f"{'game':6} {'threads':>7} {'physics steps/s (best)':>24} {'decisions/s':>12} {'agent dec/s':>12} "
          f"{'vs 1 thread':>11} {'vs numpy':>9} {'vs numpy same envs':>18} {'vs bare':>8}")
    for sizes in ((1, 1), (4, 4)):
        label = f"{sizes[0]}v{sizes[1]}"
        ref = reference_rate(sizes, args.reference_envs, args.reference_decisions, args.fire_prob)
        ref_same = reference_rate(sizes, args.envs, max(2, args.reference_decisions // 4), args.fire_prob)
        decisions = args.decisions if sum(sizes) == 2 else max(1, args.decisions // 4)
        turns = {t: core_turn(sizes, args.envs, t, decisions, args.fire_prob) for t in (1, 2)}
        rates = interleaved(turns, args.repeats)
        one = statistics.median(rates[1])
        for threads in (1, 2):
            rate, best = statistics.median(rates[threads]), max(rates[threads])
            # Scaling from the turns timed side by side, so that a slow spell hits both.
            scaling = statistics.median(b / a for a, b in zip(rates[1], rates[threads], strict=True))
            per_decision = rate / 12
            print(f"{label:6} {threads:7d} {rate / 1e6:9.2f} M ({best / 1e6:6.2f} M) "
                  f"{per_decision / 1e6:9.3f} M {per_decision * sum(sizes) / 1e6:9.3f} M "
                  f"{scaling:10.2f}x {rate / ref:8.0f}x "
                  f"{rate / ref_same:17.0f}x {rate / bare:7.2f}x")
        print(f"{label:6} numpy reference: {ref / 1e3:8.1f} k physics steps/s with {args.reference_envs} "
              f"envs, {ref_same / 1e3:8.1f} k with {args.envs}; median 1-thread core {one / 1e6:.2f} M")
    return 0
