"""Training SPS: midrange 1v1 mirror self-play with the ~143k-parameter LSTM policy, with and without
overlap (double buffering), and where the time goes.

``python -m arena.bench train [--num-envs 2048] [--updates 5] [--mode both]``. With ``--league-pool N``
it times league training with N snapshots in the pool against mirror training instead
(``arena/bench/league_pool.py``). SPS counts learner agent
steps (in mirror play every row) per second of wall time, collection and PPO update together. Each
figure is the median over the measured updates, after warm-up updates that are not counted.

The anchors of the issue were measured on this machine type on another day: PufferLib 3.0's trainer
~40k SPS, and a bare torch forward+backward+Adam of such a policy ~105k samples/s. This VM's speed
swings up to 2x from day to day, so the same run also times that bare torch loop and scales the
PufferLib anchor by it: the ratio printed last compares like with like.
"""

from __future__ import annotations

import argparse
import statistics
import time

from arena.agents.policy import Policy
from arena.bench import league_pool
from arena.bench.record import write_record
from arena.games.midrange.bots import ACTION_NVEC
from arena.games.midrange.obs import MidrangeObsLayout
from arena.trainer.config import PolicyConfig, TrainerConfig, available_cores
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

PARTS = ("sim", "inference", "learn", "other")
PUFFERLIB_SPS_ANCHOR = 40_000.0  # PufferLib 3.0 trainer on CPU, default ~150k LSTM policy
BARE_TORCH_ANCHOR = 105_000.0  # bare forward+backward+Adam samples/s, measured with the PufferLib anchor


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m arena.bench train", description=__doc__.splitlines()[0])
    p.add_argument("--num-envs", type=int, default=None,
                   help="matches (rows = 2 x envs in 1v1); default 2048, with --league-pool the "
                        "trainer's 1024")
    p.add_argument("--updates", type=int, default=5, help="measured updates per mode")
    p.add_argument("--warmup", type=int, default=1, help="updates run before measuring")
    p.add_argument("--bptt-horizon", type=int, default=64)
    p.add_argument("--minibatch-size", type=int, default=32768)
    p.add_argument("--update-epochs", type=int, default=1)
    p.add_argument("--torch-threads", type=int, default=None, help="default: every core")
    p.add_argument("--sim-threads", type=int, default=None, help="simulator threads; default: every core")
    p.add_argument("--mode", choices=("both", "overlap", "sequential"), default="both")
    p.add_argument("--compile", action="store_true", help="torch.compile the policy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="PATH", help="write a JSON record of its figures")
    league_pool.add_arguments(p)
    return p.parse_args(argv)


def measure(args: argparse.Namespace, overlap: bool) -> dict[str, float]:
    config = TrainerConfig(
        num_envs=args.num_envs, num_threads=args.sim_threads, torch_threads=args.torch_threads,
        seed=args.seed, total_timesteps=10**12, bptt_horizon=args.bptt_horizon,
        rollout_steps=args.bptt_horizon, minibatch_size=args.minibatch_size,
        update_epochs=args.update_epochs, compile=args.compile, overlap=overlap,
    )
    trainer = PPOTrainer(config, PolicyConfig(), game="midrange", matchmaker=FixedMix("mirror"))
    try:
        for _ in range(args.warmup):
            trainer.evaluate()
            trainer.train()
        trainer.mean_and_log()
        sps, collect_sps, learn_sps, shares = [], [], [], {part: 0.0 for part in PARTS}
        for _ in range(args.updates):
            t0 = time.perf_counter()
            samples = trainer.evaluate()
            t1 = time.perf_counter()
            trainer.train()
            t2 = time.perf_counter()
            metrics = trainer.mean_and_log()
            sps.append(metrics["SPS"])
            collect_sps.append(samples / (t1 - t0))
            learn_sps.append(samples / (t2 - t1))
            total = sum(metrics[f"time/{part}"] for part in PARTS)
            for part in PARTS:
                shares[part] += metrics[f"time/{part}"] / total / args.updates
        return {
            "SPS": statistics.median(sps),
            "SPS_min": min(sps),
            "SPS_max": max(sps),
            "collect_SPS": statistics.median(collect_sps),
            "learn_SPS": statistics.median(learn_sps),
            "params": float(trainer.policy.num_parameters()),
            "batch": float(samples),
            **{f"share/{part}": value for part, value in shares.items()},
        }
    finally:
        trainer.close()


def bare_torch_rate(args: argparse.Namespace, repeats: int = 5) -> float:
    """Samples/s of a bare forward+backward+Adam step of the same policy on one minibatch of
    segments (no env, no PPO bookkeeping): the machine's speed for this work today."""
    import torch

    torch.set_num_threads(args.torch_threads or available_cores())
    torch.manual_seed(args.seed)
    policy = Policy(MidrangeObsLayout().obs_dim, ACTION_NVEC)
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-4)
    segments = max(1, args.minibatch_size // args.bptt_horizon)
    obs = torch.randn(segments, args.bptt_horizon, policy.obs_dim)
    starts = torch.zeros(segments, args.bptt_horizon, dtype=torch.bool)
    state = policy.initial_state(segments)
    actions = torch.zeros(segments, args.bptt_horizon, len(ACTION_NVEC), dtype=torch.int64)
    rates = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        logits, values = policy.forward_sequence(obs, state, starts)
        logp, entropy = policy.log_prob_and_entropy(logits, actions)
        loss = -(logp.mean() + 0.01 * entropy.mean()) + (values**2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if i:  # the first step warms up
            rates.append(segments * args.bptt_horizon / (time.perf_counter() - t0))
    return statistics.median(rates)


def main(argv: list[str]) -> int:
    args = parse(argv)
    args.argv = list(argv)
    if args.league_pool is not None:
        if args.league_pool < 0:
            raise SystemExit(f"--league-pool {args.league_pool}: allowed an integer >= 0")
        args.num_envs = args.num_envs or TrainerConfig().num_envs
        return league_pool.main(args)
    args.num_envs = args.num_envs or 2048
    modes = {"both": (True, False), "overlap": (True,), "sequential": (False,)}[args.mode]
    cores = available_cores()
    print(
        f"midrange 1v1 mirror self-play: {args.num_envs} envs ({2 * args.num_envs} learner rows), "
        f"bptt_horizon {args.bptt_horizon}, minibatch {args.minibatch_size}, {args.update_epochs} epoch(s), "
        f"torch threads {args.torch_threads or cores}, sim threads {args.sim_threads or cores}, {cores} cores"
    )
    r_first: dict[str, float] = {}
    measured: dict[str, dict[str, float]] = {}
    for overlap in modes:
        r = measure(args, overlap)
        r_first = r_first or r
        measured["overlap" if overlap else "sequential"] = dict(r)
        name = "overlap   " if overlap else "sequential"
        split = "  ".join(f"{part} {100 * r[f'share/{part}']:4.1f}%" for part in PARTS)
        print(
            f"{name}  SPS {r['SPS']:9,.0f}  (min {r['SPS_min']:,.0f}, max {r['SPS_max']:,.0f})  "
            f"collect {r['collect_SPS']:9,.0f}/s  learn {r['learn_SPS']:9,.0f}/s  |  {split}"
        )
    print(f"policy parameters: {int(r['params']):,}; batch {int(r['batch']):,} samples per update")
    bare = bare_torch_rate(args)
    scaled = PUFFERLIB_SPS_ANCHOR * bare / BARE_TORCH_ANCHOR
    print(
        f"bare torch forward+backward+Adam today: {bare:,.0f} samples/s "
        f"(anchor day: {BARE_TORCH_ANCHOR:,.0f})\n"
        f"arena / PufferLib anchor: {r_first['SPS'] / PUFFERLIB_SPS_ANCHOR:.2f}x as measured; "
        f"{r_first['SPS'] / scaled:.2f}x against the anchor scaled by today's bare torch speed "
        f"({scaled:,.0f} SPS; an estimate) (goal 1.5x)"
    )
    if args.json:
        figures = {"num_envs": args.num_envs, "modes": measured, "bare_torch_samples_per_s": bare,
                   "pufferlib_anchor_ratio": r_first["SPS"] / PUFFERLIB_SPS_ANCHOR,
                   "scaled_anchor_ratio": r_first["SPS"] / scaled}
        print(f"wrote {write_record(args.json, 'train', args.argv, figures)}")
    return 0
