"""``python -m arena.bench gpu``: everything about the GPU path in one command of at most ``--minutes``
(6) minutes, for the day a GPU is lent for a few minutes.

In order, each part printed as it finishes:

1. **Parity**: the first matches of the core on the device (actions and outputs as device tensors,
   ``step_envs_tensor``) against the CPU core (numpy, ``step_envs``), same seeds and actions:
   observations, rewards, end flags and outcomes must be bit-identical (1v1 and 4v4).
2. **Physics**: steps/s of midrange 1v1 and 4v4 batches of 2^14 to 2^20 envs on the device, random
   actions already there (``arena.bench.sim``'s ``device_rate``).
3. **Training SPS**, end to end through ``arena.train``'s own builder (the default opponents, reward
   and policy): the default trainer and ``trainer=gpu``, each with the matches on the device
   (``env.device`` following ``trainer.device``) and on the CPU threads (``env.device=cpu``).
4. **League**: ``python -m arena.train +league=selfplay trainer=gpu`` from scratch for the minutes
   left, then its gauntlet against ``scripted:heuristic`` (the newest snapshot's score).
5. **Memory**: the GPU's peak memory allocated by torch in this process and the device's total.

It writes ``gpu.json`` (``arena.bench.record``) and the league's run directory under ``--run-dir``.
Figures against the anchors (PufferLib's CUDA Craftax: 24M env-SPS, 8-10M training SPS on one GPU)
are printed beside them.

``--dry-run`` runs the same code on the CPU at tiny sizes (the CPU core standing in for the
device, 64 and 256 envs, a 20-second league): a rehearsal that CI runs, so the command works the day
a GPU is there. Without ``--dry-run`` and without a CUDA build of the core and a usable GPU it exits
with code 2 and says why.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import arena
from arena.bench.learn_scratch import train_for
from arena.bench.record import write_record
from arena.bench.sim import device_rate, random_tape
from arena.config import compose_run_config
from arena.league.model.store import LEAGUE_DB, LeagueStore
from arena.train import build_trainer

logger = logging.getLogger("arena.bench.gpu")

PUFFER_ENV_SPS = 24e6  # PufferLib's CUDA Craftax, env steps/s on one GPU
PUFFER_TRAIN_SPS = 8e6  # its training SPS (8-10M)
PHYSICS_TARGET = 1e9  # physics steps/s, midrange 1v1 (issue 45)
TRAIN_TARGET = 1e6  # training SPS with trainer=gpu
LEAGUE_TARGET = 0.8  # the default league against the heuristic within 3 minutes


@dataclass(frozen=True)
class Sizes:
    """What one run of the bench measures: the real sizes, or the dry run's."""

    device: str
    parity_envs: int
    parity_decisions: int
    physics_envs: tuple[int, ...]
    physics_decisions: int
    physics_repeats: int
    train_updates: int
    train_overrides: tuple[str, ...]
    league_overrides: tuple[str, ...]
    league_minutes_cap: float


# trainer=gpu's learner makes millions of samples a second: a snapshot and a gauntlet every 20M
REAL = Sizes("cuda", 4096, 600, tuple(2**k for k in (14, 16, 18, 20)), 50, 5, 3, (),
             ("league.snapshot.every_steps=20000000", "league.gauntlet.every_steps=20000000"), 1e9)
DRY = Sizes("cpu", 64, 200, (64, 256), 10, 2, 1,
            ("trainer.num_envs=64", "trainer.rollout_steps=16", "trainer.bptt_horizon=16",
             "trainer.minibatch_size=512"),
            ("trainer.num_envs=64", "trainer.rollout_steps=16", "trainer.bptt_horizon=16",
             "trainer.minibatch_size=512", "league.snapshot.every_steps=4096", "league.gauntlet.games=16",
             "league.gauntlet.every_steps=4096"),
            1 / 3)


def parity(sizes: Sizes, team_sizes: tuple[int, int]) -> dict[str, Any]:
    """The device path against the CPU core over the same first matches (same seeds, same actions):
    which outputs differ (none is the pass) and how many first matches ended in the window. An env
    leaves the comparison once its first match ends: the GPU draws a new spawn's sine and cosine with
    CUDA's maths library, within 2 ulp of the host's (docs/scaling.md)."""
    import torch

    n, seed = sizes.parity_envs, 7
    device_env = arena.make("midrange", num_envs=n, seed=seed, team_sizes=team_sizes, device=sizes.device,
                            time_limit_s=60.0)
    cpu_env = arena.make("midrange", num_envs=n, seed=seed, team_sizes=team_sizes, time_limit_s=60.0)
    try:
        out, core, per_env = device_env.tensors(), cpu_env.host, cpu_env.agents_per_env
        tape = random_tape(cpu_env.num_agents, 16, fire_prob=0.2)
        differ: set[str] = set()
        first = np.ones(n, dtype=bool)  # envs still playing their first match
        for t in range(sizes.parity_decisions):
            actions = tape[t % len(tape)]
            device_env.step_envs_tensor(torch.from_numpy(actions).to(sizes.device), 0, n)
            cpu_env.step_envs(actions, 0, n)
            mine = {name: getattr(out, name).cpu().numpy() for name in
                    ("obs", "final_obs", "rewards", "terminals", "truncations", "done", "outcome")}
            done = core.done.astype(bool)
            rows = np.repeat(first, per_env)
            playing = np.repeat(first & ~done, per_env)  # their obs is still the first match's
            ending = np.repeat(first & done, per_env)
            checks = {"done": first, "outcome": first & done, "rewards": rows, "terminals": rows,
                      "truncations": rows, "obs": playing, "final_obs": ending}
            for name, where in checks.items():
                if not np.array_equal(mine[name][where], getattr(core, name)[where]):
                    differ.add(name)
            first &= ~done
    finally:
        device_env.close()
        cpu_env.close()
    return {"envs": n, "decisions": sizes.parity_decisions, "matches_ended": int(n - first.sum()),
            "identical": not differ, "differ": sorted(differ)}


def physics(sizes: Sizes) -> list[dict[str, Any]]:
    rows = []
    for team_sizes in ((1, 1), (4, 4)):
        for envs in sizes.physics_envs:
            median, best = device_rate(team_sizes, envs, sizes.device, sizes.physics_decisions,
                                       sizes.physics_repeats, fire_prob=0.5)
            rows.append({"game": f"{team_sizes[0]}v{team_sizes[1]}", "envs": envs,
                         "physics_steps_per_s": median, "best": best})
            print(f"  {rows[-1]['game']} {envs:>9,} envs: {median / 1e6:10.1f} M physics steps/s "
                  f"(best {best / 1e6:.1f} M)", flush=True)
    return rows


def training_sps(sizes: Sizes, preset: str, env_device: str, run_dir: Path) -> dict[str, Any]:
    """Median SPS of ``sizes.train_updates`` updates (after one warm-up) of ``arena.train``'s
    trainer for ``trainer=preset`` with the matches on ``env_device``."""
    overrides = [f"trainer={preset}", f"trainer.device={sizes.device}", f"env.device={env_device}",
                 "trainer.checkpoint_minutes=0", *sizes.train_overrides]
    cfg = compose_run_config(overrides)
    trainer, parts = build_trainer(cfg, run_dir)
    try:
        trainer.evaluate()
        trainer.train()
        trainer.mean_and_log()
        rates = []
        for _ in range(sizes.train_updates):
            start = time.perf_counter()
            samples = trainer.evaluate()
            trainer.train()
            if sizes.device == "cuda":
                import torch

                torch.cuda.synchronize()
            rates.append(samples / (time.perf_counter() - start))
            trainer.mean_and_log()
        return {"trainer": preset, "env_device": env_device, "num_envs": trainer.config.num_envs,
                "batch": samples, "SPS": statistics.median(rates)}
    finally:
        trainer.close()


def league(sizes: Sizes, minutes: float, run_dir: Path) -> dict[str, Any]:
    """``+league=selfplay trainer=gpu`` from scratch for ``minutes`` (then Ctrl-C, as a user would),
    and the gauntlet scores its snapshots got against the heuristic pilot."""
    command = [sys.executable, "-m", "arena.train", "+league=selfplay", "trainer=gpu",
               f"trainer.device={sizes.device}", f"run_dir={run_dir}", "dashboard=false",
               *sizes.league_overrides]
    print(f"  {' '.join(command[1:])} for {minutes:.1f} min", flush=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    start = time.time()
    returncode = train_for(command, minutes, run_dir / "bench.log", grace_s=120)
    ran = (time.time() - start) / 60
    curve = []
    if (run_dir / LEAGUE_DB).is_file():
        with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
            for row in store.gauntlet():
                if row.reference == "scripted:heuristic" and row.games:
                    score = (row.wins + 0.5 * row.draws) / row.games
                    curve.append({"snapshot": row.player_id, "step": row.learner_step, "score": score,
                                  "minute": (row.created_at - start) / 60, "games": row.games})
    final = curve[-1]["score"] if curve else None
    return {"command": " ".join(["python", *command[1:]]), "returncode": returncode,
            "minutes": ran, "gauntlet": curve, "final_score": final,
            "best_score": max((c["score"] for c in curve), default=None)}


def memory(sizes: Sizes) -> dict[str, Any]:
    if sizes.device != "cuda":
        import resource  # POSIX only

        return {"device": "cpu", "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    import torch

    free, total = torch.cuda.mem_get_info()
    return {"device": torch.cuda.get_device_name(), "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
            "used_bytes_now": total - free, "total_bytes": total}


def check_device(dry_run: bool) -> str | None:
    """Why this machine cannot run the real bench (None: it can)."""
    if dry_run:
        return None
    import torch

    if not getattr(arena._core, "cuda_built", False):
        return ("the installed core was built without CUDA (ARENA_CUDA=ON pip install . builds it; "
                "ARENA_CORE_PATH can point at a CUDA build)")
    if not torch.cuda.is_available():
        return "torch sees no usable GPU"
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench gpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=6.0, help="the whole bench's wall-clock budget")
    parser.add_argument("--dry-run", action="store_true",
                        help="the same code on the CPU at tiny sizes (CI's rehearsal)")
    parser.add_argument("--run-dir", default=None, help="default: runs/bench-gpu-<time>")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error(f"--minutes {args.minutes} must be > 0")
    why = check_device(args.dry_run)
    if why is not None:
        print(f"arena.bench gpu: error: {why}; --dry-run rehearses on the CPU", file=sys.stderr)
        return 2
    import torch

    sizes = DRY if args.dry_run else REAL
    deadline = time.time() + args.minutes * 60
    root = Path(args.run_dir or f"runs/bench-gpu-{time.strftime('%Y%m%d-%H%M%S')}")
    root.mkdir(parents=True, exist_ok=True)
    name = "CPU twin (dry run)" if args.dry_run else torch.cuda.get_device_name()
    print(f"arena.bench gpu on {name}: torch {torch.__version__}, core cuda_built="
          f"{bool(getattr(arena._core, 'cuda_built', False))}; budget {args.minutes:g} min", flush=True)
    figures: dict[str, Any] = {"device": name, "dry_run": args.dry_run, "torch": torch.__version__}

    print("1. parity: the device core against the CPU core, same matches", flush=True)
    figures["parity"] = [parity(sizes, ts) | {"game": f"{ts[0]}v{ts[1]}"} for ts in ((1, 1), (4, 4))]
    for p in figures["parity"]:
        verdict = "identical" if p["identical"] else f"DIFFER in {', '.join(p['differ'])}"
        print(f"  {p['game']}: {p['envs']} envs x {p['decisions']} decisions, {p['matches_ended']} matches "
              f"ended: {verdict}", flush=True)

    print("2. physics steps/s (random actions on the device)", flush=True)
    figures["physics"] = physics(sizes)
    best_1v1 = max(r["physics_steps_per_s"] for r in figures["physics"] if r["game"] == "1v1")
    print(f"  1v1 best: {best_1v1 / 1e6:.1f} M/s = {best_1v1 / PHYSICS_TARGET:.3f}x the 1e9 target, "
          f"{best_1v1 / PUFFER_ENV_SPS:.1f}x PufferLib's CUDA Craftax env-SPS", flush=True)

    print("3. training SPS, end to end (arena.train's trainer, default opponents and reward)", flush=True)
    figures["training"] = []
    for preset in ("default", "gpu"):
        for env_device in (sizes.device, "cpu") if sizes.device != "cpu" else ("cpu",):
            row = training_sps(sizes, preset, env_device, root / f"train-{preset}-{env_device}")
            figures["training"].append(row)
            print(f"  trainer={preset:8} matches on {env_device:5} {row['num_envs']:>7,} envs: "
                  f"{row['SPS']:12,.0f} SPS ({row['SPS'] / TRAIN_TARGET:.3f}x the 1M target, "
                  f"{row['SPS'] / PUFFER_TRAIN_SPS:.3f}x PufferLib's 8M)", flush=True)

    left = (deadline - time.time()) / 60 - 0.5  # room for the gauntlet's last write and the record
    minutes = min(left, sizes.league_minutes_cap)
    print(f"4. league: +league=selfplay trainer=gpu for the {max(minutes, 0):.1f} minutes left", flush=True)
    if minutes > 0.1:
        figures["league"] = league(sizes, minutes, root / "league")
        lg = figures["league"]
        for c in lg["gauntlet"]:
            print(f"  {c['snapshot']} at {c['minute']:.1f} min ({c['step']:,} samples): {c['score']:.3f} "
                  f"against scripted:heuristic over {c['games']} games", flush=True)
        final = lg["final_score"]
        shown = "no gauntlet yet" if final is None else f"{final:.3f} (target >= {LEAGUE_TARGET})"
        print(f"  after {lg['minutes']:.1f} min: {shown}", flush=True)
    else:
        figures["league"] = None
        print("  skipped: no time left in the budget", flush=True)

    figures["memory"] = memory(sizes)
    print(f"5. memory: {figures['memory']}", flush=True)
    path = write_record(root / "gpu.json", "gpu", argv, figures)
    print(f"wrote {path}", flush=True)
    return 0 if all(p["identical"] for p in figures["parity"]) else 1
