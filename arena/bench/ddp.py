"""``python -m arena.bench ddp``: data-parallel training on this machine, 1 rank against 2 ranks.

Both runs train the same run (the same total ``--envs``, seeds and config) for ``--updates`` PPO
updates: one process stepping every env, then two processes (gloo, ``torch.multiprocessing`` with a
real process group) of half the envs each. It prints the largest difference between the two runs'
parameters after the first and the last update (data parallelism must not change what is learnt:
float rounding only; over many updates a rounding difference now and then flips a sampled action,
after which the two runs are alike in distribution, no longer bit for bit), and each run's training
SPS (learner samples per second, the first update excluded as warm-up) with the ratio. Each rank
gets ``cores / ranks`` threads, so on a 2-core machine 2 ranks cannot be faster than 1: the figure to
read there is the overhead of the collectives. See docs/scaling.md.

    python -m arena.bench ddp                      # midrange 1v1, 1024 envs, 6 updates
    python -m arena.bench ddp --envs 256 --updates 3 --game rpsw
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from arena.bench.record import write_record
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.distributed import Collective
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

WARMUP_UPDATES = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def train_rank(rank: int, world: int, port: int, spec: dict[str, Any], out_dir: str) -> None:
    """One rank of a run of ``world`` ranks (world 1: a plain process): trains ``spec["updates"]``
    updates of the config in ``spec`` and, on rank 0, writes its parameters and figures to
    ``out_dir/world-<world>.pt`` / ``.json``. The entry point of the spawned processes.

    ``spec["resume"]``: start from that checkpoint instead; ``spec["save"]``: write a checkpoint there
    after ``spec["save_at"]`` updates (default: all of them; every rank calls ``save``, rank 0 writes)
    and go on; ``spec["restore_at"]``: after that many updates rank 0 restores the initial weights
    (``restore_policy``, as the league's guard does) and the run goes on."""
    import torch.distributed as dist

    os.environ["LOCAL_WORLD_SIZE"] = str(world)  # each rank's share of the cores (TrainerConfig)
    collective = None
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
        collective = Collective()
    try:
        config = TrainerConfig(**spec["trainer"])
        policy = PolicyConfig(**spec.get("policy", {}))
        players = spec.get("opponents", ["mirror"])
        matchmaker = FixedMix(players, redraw=True, seed=config.seed) if rank == 0 or world == 1 else None
        if spec.get("resume"):
            trainer = PPOTrainer.resume(spec["resume"], matchmaker=matchmaker, collective=collective)
        else:
            trainer = PPOTrainer(config, policy, game=spec["game"], team_sizes=tuple(spec["team_sizes"]),
                                 matchmaker=matchmaker, collective=collective)
        losses, started, samples_at_start = [], time.perf_counter(), 0
        initial = {k: v.detach().clone() for k, v in trainer.policy.state_dict().items()}
        for update in range(int(spec["updates"])):
            if update == WARMUP_UPDATES:
                started, samples_at_start = time.perf_counter(), trainer.global_step
            trainer.evaluate()
            losses.append(trainer.train())
            trainer.mean_and_log()
            if rank == 0 and update + 1 == spec.get("restore_at"):
                trainer.restore_policy(initial)
            if spec.get("save") and update + 1 == int(spec.get("save_at", spec["updates"])):
                trainer.save(spec["save"])
            if update == 0 and rank == 0:
                first = {k: v.detach().cpu().clone() for k, v in trainer.policy.state_dict().items()}
                torch.save(first, Path(out_dir) / f"world-{world}-first.pt")
        elapsed = time.perf_counter() - started
        if rank == 0:
            params = {k: v.detach().cpu().clone() for k, v in trainer.policy.state_dict().items()}
            torch.save(params, Path(out_dir) / f"world-{world}.pt")
            figures = {"sps": (trainer.global_step - samples_at_start) / elapsed,
                       "global_step": trainer.global_step, "losses": losses}
            (Path(out_dir) / f"world-{world}.json").write_text(json.dumps(figures))
        trainer.close()
    finally:
        if collective is not None:
            collective.close()


def spawned_rank(rank: int, world: int, port: int, spec: dict[str, Any], out_dir: str) -> None:
    """``train_rank`` in a spawned process that ends at once when it is done. Its files are written
    and its process group left (every rank through the closing barrier); what is left is the
    interpreter's and the C++ libraries' own teardown, where gloo's threads have aborted a finished
    rank ("terminate called without an active exception", once in a CI run) and turned a run that
    succeeded into a failure. An error still propagates: the spawner reports it."""
    train_rank(rank, world, port, spec, out_dir)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(0)


def run(world: int, spec: dict[str, Any], out_dir: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Runs ``train_rank`` on ``world`` spawned processes; returns rank 0's parameters and figures."""
    import torch.multiprocessing as mp

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    mp.start_processes(spawned_rank, args=(world, free_port(), spec, out_dir), nprocs=world, join=True,
                       start_method="spawn")
    params = torch.load(Path(out_dir) / f"world-{world}.pt", weights_only=True)
    return params, json.loads((Path(out_dir) / f"world-{world}.json").read_text())


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def default_spec(game: str, envs: int, updates: int, seed: int = 0) -> dict[str, Any]:
    return {
        "game": game, "team_sizes": [1, 1], "updates": updates,
        "trainer": {"num_envs": envs, "rollout_steps": 64, "bptt_horizon": 16, "minibatch_size": 4096,
                    "update_epochs": 2, "seed": seed, "total_timesteps": 10**12, "checkpoint_interval": 0,
                    "checkpoint_minutes": 0.0, "checkpoint_dir": tempfile.gettempdir()},
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m arena.bench ddp", description=__doc__.splitlines()[0])
    p.add_argument("--game", default="midrange", choices=["midrange", "rpsw"])
    p.add_argument("--envs", type=int, default=1024, help="the run's total envs (default 1024)")
    p.add_argument("--updates", type=int, default=6,
                   help="PPO updates per run (default 6; the first is warm-up)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, metavar="PATH", help="write a JSON record of its figures")
    args = p.parse_args(argv)
    if args.updates <= WARMUP_UPDATES:
        p.error(f"--updates must be more than {WARMUP_UPDATES} (the first update is warm-up)")
    logging.basicConfig(level=logging.WARNING)
    spec = default_spec(args.game, args.envs, args.updates, args.seed)
    with tempfile.TemporaryDirectory() as out:
        print(f"{args.game}, {args.envs} envs in all, {args.updates} updates, {os.cpu_count()} cores")
        one, one_figures = run(1, spec, out)
        print(f"1 rank : {one_figures['sps']:>10,.0f} SPS")
        two, two_figures = run(2, spec, out)
        print(f"2 ranks: {two_figures['sps']:>10,.0f} SPS ({two_figures['sps'] / one_figures['sps']:.2f}x)")
        first = [torch.load(Path(out) / f"world-{w}-first.pt", weights_only=True) for w in (1, 2)]
    same_steps = one_figures["global_step"] == two_figures["global_step"]
    print(f"learner samples: {one_figures['global_step']} and {two_figures['global_step']} "
          f"({'equal' if same_steps else 'DIFFERENT'})")
    print(f"largest parameter difference after 1 update: {max_difference(*first):.3g}, "
          f"after {args.updates}: {max_difference(one, two):.3g}")
    if args.json:
        figures = {"game": args.game, "envs": args.envs, "updates": args.updates, "seed": args.seed,
                   "one_rank_sps": one_figures["sps"], "two_ranks_sps": two_figures["sps"],
                   "ratio": two_figures["sps"] / one_figures["sps"],
                   "learner_samples": [one_figures["global_step"], two_figures["global_step"]],
                   "max_difference_first_update": max_difference(*first),
                   "max_difference_last_update": max_difference(one, two)}
        print(f"wrote {write_record(args.json, 'ddp', list(argv), figures)}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
