"""Simulator throughput: physics steps/s and agent decisions/s of the native core.

Prints, for 1v1 and 4v4 at 1 and 2 threads, the core's speed, the thread scaling, the speed-up
over the NumPy reference and the ratio to a bare loop of the fighter equations, all measured
in the same run. Physics steps count env-steps: one env advanced by dt.

Two workloads, each a tape of actions fixed before the timing starts:
- random: uniform random actions (fire probability 0.5 by default). Every fighter empties its
  racks within seconds, so about 11 missiles are in flight per 1v1 match: the heaviest load the
  game has, a stress test.
- pilots: the heuristic pilots on both sides, recorded once and replayed (their own compute is
  not timed). They fire at a sensible range, one missile at a time, and defend: a real fight.
Both the core and the NumPy reference play the same tape from the same seed, so they simulate
the same matches: the reference is timed from the core's world state at three points of the
core's run (its speed depends on the missiles in flight).

This machine's speed drifts by tens of percent within a minute, so the 1- and 2-thread cores
are timed in turns (1, 2, 1, 2, ...) and each figure is the median over the turns, with the
best turn beside it; the scaling compares turns taken side by side. The NumPy reference is
timed with 256 envs (as earlier runs of this bench) and with as many envs as the core.

``--device cuda`` times the GPU path instead: physics steps/s of 1v1 and 4v4 batches of 16k, 64k,
256k and 1M envs (``--cuda-envs``) stepped with ``VectorEnv.step_envs_tensor`` on random actions
already on the GPU (a tape of eight batches checked once; no host copy and no wait per step), the
GPU waited for at the end of each turn. Beside each GPU figure: this machine's CPU core on the same
workload with ``--envs`` envs and every thread, for comparison. Without a CUDA build of the core
and a usable GPU it exits with code 2 and says why.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import arena
from arena import _core
from arena.agents.scripted import make_scripted
from arena.envs.registry import MAX_ENVS, build_params
from arena.games.midrange.reference import MidrangeReference

SEED = 1
WARMUP = 40  # decisions before the first timed turn
WORKLOADS = ("random", "pilots")
CUDA_ENVS = (16_384, 65_536, 262_144, 1_048_576)


def random_actions(rng: np.random.Generator, rows: int, fire_prob: float) -> np.ndarray:
    """Uniform rudder and throttle; fire with probability ``fire_prob`` (0.5 = uniform actions)."""
    fire = rng.random(rows) < fire_prob
    return np.stack([rng.integers(0, 5, rows), rng.integers(0, 3, rows), fire], axis=1).astype(np.int32)


def random_tape(rows: int, length: int, fire_prob: float) -> list[np.ndarray]:
    """``length`` decisions of random actions: eight batches, repeated."""
    rng = np.random.default_rng(0)
    batches = [random_actions(rng, rows, fire_prob) for _ in range(8)]
    return [batches[t % len(batches)] for t in range(length)]


def pilot_tape(team_sizes: tuple[int, int], num_envs: int, length: int) -> list[np.ndarray]:
    """The actions of ``length`` decisions of the heuristic pilots on both sides of ``num_envs``
    matches seeded with SEED (the matches every core and reference run replays)."""
    env = arena.make("midrange", num_envs=num_envs, seed=SEED, team_sizes=team_sizes)
    pilot = make_scripted("heuristic", "midrange", team_sizes=team_sizes)
    obs, _ = env.reset(SEED)
    tape = []
    for _ in range(length):
        actions = pilot.act(obs)
        tape.append(actions)
        obs, *_ = env.step(actions)
    env.close()
    return tape


class CoreRunner:
    """A core that plays the tape from its start: warmed up on the first WARMUP decisions, then
    timed a turn of ``decisions`` decisions at a time."""

    def __init__(self, team_sizes: tuple[int, int], num_envs: int, threads: int, decisions: int,
                 tape: Sequence[np.ndarray]) -> None:
        self.env = arena.make("midrange", num_envs=num_envs, num_threads=threads, seed=SEED,
                              team_sizes=team_sizes)
        self.env.reset(SEED)
        for t in range(WARMUP):
            self.env.step(tape[t])
        self.tape, self.decisions, self.position = tape, decisions, WARMUP

    def turn(self) -> float:
        """Plays the next turn; returns its env physics steps per second."""
        actions = self.tape[self.position : self.position + self.decisions]
        self.position += self.decisions
        start = time.perf_counter()
        for a in actions:
            self.env.step(a)
        elapsed = time.perf_counter() - start
        return self.env.num_envs * self.env.params["frame_skip"] * len(actions) / elapsed


def reference_rate(team_sizes: tuple[int, int], num_envs: int, decisions: int, tape: Sequence[np.ndarray],
                   points: list[tuple[int, dict[str, np.ndarray]]]) -> float:
    """Physics steps/s of the NumPy reference on the first ``num_envs`` matches of the tape:
    from each (position, world state of the core there) of ``points``, ``decisions`` decisions
    of the tape. The two simulate the same matches bit for bit (a match that ends meanwhile
    restarts from another spawn: the world state holds no generator); the reference would take
    minutes to get there on its own, and its speed depends on the missiles in flight."""
    ref = MidrangeReference({"team_size": team_sizes}, num_envs=num_envs)
    ref.reset(SEED)
    rows = num_envs * sum(team_sizes)
    elapsed = 0.0
    for position, world in points:
        ref.set_world_state({name: value[:num_envs] for name, value in world.items()})
        actions = [tape[t][:rows] for t in range(position, position + decisions)]
        start = time.perf_counter()
        for a in actions:
            ref.step(a)
        elapsed += time.perf_counter() - start
    return num_envs * ref.params["frame_skip"] * decisions * len(points) / elapsed


def bare_rate(num_envs: int, steps: int, repeats: int) -> float:
    def run() -> float:
        start = time.perf_counter()
        _core.bare_fighter_loop(num_envs, steps)
        return num_envs * steps / (time.perf_counter() - start)

    return max(run() for _ in range(repeats))


def interleaved(cores: dict[int, CoreRunner], repeats: int,
                samples: int = 3) -> tuple[dict[int, list[float]], list[tuple[int, dict[str, np.ndarray]]]]:
    """Rates of each core over ``repeats`` rounds, one turn of each per round; and the position
    and world state of the first core at the start of ``samples`` rounds spread over the run,
    where the reference is timed too."""
    rates: dict[int, list[float]] = {threads: [] for threads in cores}
    first = next(iter(cores.values()))
    sampled = {r * repeats // samples for r in range(samples)}
    points = []
    for r in range(repeats):
        if r in sampled:
            points.append((first.position, first.env.world_state()))
        for threads, core in cores.items():
            rates[threads].append(core.turn())
    return rates, points


def cuda_tape(rows: int, fire_prob: float) -> list[Any]:
    """Eight batches of random actions on the GPU (as ``random_actions``), int32 [rows, 3]."""
    import torch

    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    tape = []
    for _ in range(8):
        rudder = torch.randint(0, 5, (rows,), generator=gen, device="cuda", dtype=torch.int32)
        throttle = torch.randint(0, 3, (rows,), generator=gen, device="cuda", dtype=torch.int32)
        fire = (torch.rand(rows, generator=gen, device="cuda") < fire_prob).to(torch.int32)
        tape.append(torch.stack([rudder, throttle, fire], dim=1).contiguous())
    return tape


def device_rate(team_sizes: tuple[int, int], num_envs: int, device: str, decisions: int, repeats: int,
                fire_prob: float, threads: int | None = None) -> tuple[float, float]:
    """(median, best) physics steps/s of ``num_envs`` matches on ``device`` stepped with
    ``step_envs_tensor`` on a tape of actions on that device, over ``repeats`` turns of
    ``decisions`` decisions; on CUDA the actions are checked once and the GPU is waited for only at
    the end of each turn."""
    import torch

    env = arena.make("midrange", num_envs=num_envs, num_threads=threads, seed=SEED, team_sizes=team_sizes,
                     device=device)
    try:
        if device == "cuda":
            tape = cuda_tape(env.num_agents, fire_prob)
        else:
            tape = [torch.from_numpy(a) for a in random_tape(env.num_agents, 8, fire_prob)]
        for a in tape:  # checks every batch of the tape once (and warms up)
            env.step_envs_tensor(a, 0, num_envs)
        for t in range(WARMUP):
            env.step_envs_tensor(tape[t % len(tape)], 0, num_envs, check=False)
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        sync()
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            for t in range(decisions):
                env.step_envs_tensor(tape[t % len(tape)], 0, num_envs, check=False)
            sync()
            rates.append(num_envs * env.params["frame_skip"] * decisions / (time.perf_counter() - start))
    finally:
        env.close()
    return statistics.median(rates), max(rates)


def cuda_main(args: argparse.Namespace) -> int:
    """The GPU table (see the module docstring); exit code 2 where no GPU can step the core."""
    try:
        arena.make("midrange", num_envs=1, device="cuda").close()
    except RuntimeError as err:
        print(f"error: --device cuda: {err}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("error: --device cuda: torch sees no usable GPU (the actions live in torch tensors)",
              file=sys.stderr)
        return 2
    print(f"GPU: {torch.cuda.get_device_name()}; workload: random actions on the GPU, fire probability "
          f"{args.fire_prob}; {args.cuda_decisions} decisions per turn, {args.repeats} turns")
    print(f"{'game':6} {'envs':>9} {'GPU physics steps/s (best)':>28} {'agent dec/s':>12} "
          f"{'CPU steps/s':>12} {'GPU/CPU':>8}")
    for sizes in ((1, 1), (4, 4)):
        label = f"{sizes[0]}v{sizes[1]}"
        cpu, _ = device_rate(sizes, args.envs, "cpu", max(1, args.decisions // sum(sizes) * 2), args.repeats,
                             args.fire_prob)
        for envs in args.cuda_envs:
            rate, best = device_rate(sizes, envs, "cuda", args.cuda_decisions, args.repeats, args.fire_prob)
            per_agent = rate / 12 * sum(sizes)
            print(f"{label:6} {envs:9d} {rate / 1e6:13.1f} M ({best / 1e6:8.1f} M) {per_agent / 1e6:9.2f} M "
                  f"{cpu / 1e6:9.2f} M {rate / cpu:7.1f}x")
        print(f"{label:6} CPU: this machine's core, {args.envs} envs, every thread: "
              f"{cpu / 1e6:.2f} M physics steps/s")
    return 0


def describe_workload(workload: str, fire_prob: float) -> str:
    if workload == "random":
        return f"random actions, fire probability {fire_prob}"
    return "heuristic pilots on both sides (recorded, then replayed)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=int, default=4096, help="envs per batch")
    parser.add_argument("--decisions", type=int, default=40,
                        help="decisions per timed turn (1v1; 4v4 takes a quarter)")
    parser.add_argument("--repeats", type=int, default=15, help="timed turns per figure")
    parser.add_argument("--reference-envs", type=int, default=256)
    parser.add_argument("--reference-decisions", type=int, default=10)
    parser.add_argument("--workload", choices=WORKLOADS, nargs="+", default=list(WORKLOADS),
                        help="action tapes to time (default: both)")
    parser.add_argument("--fire-prob", type=float, default=0.5,
                        help="random workload: chance a fighter asks to fire each decision (0.5: uniform "
                        "random actions, about 11 missiles in flight per 1v1 match; 0: no missiles)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cpu (default): the CPU tables; cuda: the GPU table (needs a CUDA build and "
                        "a GPU)")
    parser.add_argument("--cuda-envs", type=int, nargs="+", default=list(CUDA_ENVS),
                        help="--device cuda: batch sizes to time (default 16k 64k 256k 1M)")
    parser.add_argument("--cuda-decisions", type=int, default=50,
                        help="--device cuda: decisions per timed turn")
    args = parser.parse_args(argv)
    for name in ("envs", "decisions", "repeats", "reference_envs", "reference_decisions"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.reference_envs > args.envs:
        parser.error(f"--reference-envs {args.reference_envs} must not exceed --envs {args.envs}")
    if args.device == "cuda":
        if args.cuda_decisions < 1 or any(not 1 <= n <= MAX_ENVS for n in args.cuda_envs):
            parser.error(f"--cuda-decisions must be at least 1 and --cuda-envs in [1, {MAX_ENVS}]")
        return cuda_main(args)

    lanes = _core.MidrangeBatch(build_params("midrange", (1, 1), {})[1], 8, 1, "cpu").lanes
    print(f"{args.envs} envs per batch; the core steps {lanes} envs per SIMD call")
    bare = bare_rate(args.envs, 600, 5)
    print(f"bare fighter-equation loop (1 thread, 2 fighters/env, no missiles, no obs): "
          f"{bare / 1e6:8.2f} M env-steps/s")
    for workload in args.workload:
        print(f"\nworkload: {describe_workload(workload, args.fire_prob)}")
        print(f"{'game':6} {'threads':>7} {'physics steps/s (best)':>24} {'decisions/s':>12} "
              f"{'agent dec/s':>12} {'vs 1 thread':>11} {'vs numpy':>9} {'vs numpy same envs':>18} "
              f"{'vs bare':>8}")
        for sizes in ((1, 1), (4, 4)):
            label = f"{sizes[0]}v{sizes[1]}"
            decisions = args.decisions if sum(sizes) == 2 else max(1, args.decisions // 4)
            length = WARMUP + decisions * args.repeats + args.reference_decisions
            if workload == "random":
                tape = random_tape(args.envs * sum(sizes), length, args.fire_prob)
            else:
                tape = pilot_tape(sizes, args.envs, length)
            cores = {t: CoreRunner(sizes, args.envs, t, decisions, tape) for t in (1, 2)}
            rates, points = interleaved(cores, args.repeats)
            ref = reference_rate(sizes, args.reference_envs, args.reference_decisions, tape, points)
            ref_same = reference_rate(sizes, args.envs, max(2, args.reference_decisions // 4), tape, points)
            in_flight = statistics.mean(float(w["missile_active"].sum()) / args.envs for _, w in points)
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
                  f"envs, {ref_same / 1e3:8.1f} k with {args.envs}; median 1-thread core {one / 1e6:.2f} M; "
                  f"{in_flight:.1f} missiles in flight per env (mean)")
    return 0
