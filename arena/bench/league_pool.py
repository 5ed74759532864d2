"""League training against mirror training, in turns in one process, with a pool of N snapshots.

``python -m arena.bench train --league-pool N [--league selfplay|pfsp|alphastar] [--pool-dir DIR]``

The pool: N snapshots of the learner in the league store of ``--pool-dir`` (default: a temporary
directory), each a freshly initialised, seeded policy of the default architecture. A directory that
already holds snapshots is reused and topped up to N. Nobody has played them yet, so PFSP weighs
them all alike and the league's PFSP share of the envs spreads over the whole pool: the most
distinct frozen players per step, the worst case for opponent inference. Snapshot-taking is off, so
the pool keeps its size while it is timed.

Both trainers are built with the default trainer settings (``--num-envs`` envs each) and take turns,
``--turn`` updates at a time, so the VM's drifting speed hits both alike. SPS counts learner samples
(with AlphaStar, the exploiters' too) per second of wall time, the league's own work included
(``LeagueRun.on_update``: snapshots, exploiter turns, views). Figures are medians over the measured updates.
Resident memory is read from /proc at the end: compare runs with different N (e.g. 50 and 200).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from arena.agents.policy import Policy
from arena.bench.record import write_record
from arena.config import compose_run_config
from arena.league.run.learner import freeze_policy
from arena.league.timing import LEAGUE_PARTS
from arena.train import build_reward_fn, build_trainer, open_league
from arena.trainer.stats import TIME_PARTS

TRAINER_PARTS = (*TIME_PARTS, "other")
GOAL = 0.9


def resident_mb(pid: int | None = None) -> tuple[float, float]:
    """(current, peak) resident set size in MiB of this process, or of process ``pid`` (Linux /proc;
    NaN elsewhere, or once that process is gone)."""
    values = {"VmRSS": float("nan"), "VmHWM": float("nan")}
    try:
        for line in Path(f"/proc/{pid if pid is not None else 'self'}/status").read_text().splitlines():
            key = line.split(":")[0]
            if key in values:
                values[key] = float(line.split()[1]) / 1024.0
    except OSError:
        pass
    return values["VmRSS"], values["VmHWM"]


def fill_pool(league_run: Any, spec: dict[str, Any], size: int, seed: int) -> int:
    """Adds seeded fresh policies of ``spec`` as snapshots of the learner until it has ``size``;
    returns how many were added."""
    import torch

    have = len(league_run.league.pool.snapshots(parent=league_run.learner_id))
    for index in range(have, size):
        torch.manual_seed(seed * 100_003 + index)
        policy = Policy(**spec)
        freeze_policy(league_run.league, league_run.run_dir, league_run.learner_id, policy, step=index)
    return max(0, size - have)


class Timed:
    """One trainer (and its league) run update by update, with samples, wall time and splits."""

    def __init__(self, name: str, trainer: Any, league_run: Any = None) -> None:
        self.name, self.trainer, self.league_run = name, trainer, league_run
        self.sps: list[float] = []
        self.split = dict.fromkeys(TRAINER_PARTS, 0.0)
        self.opponents_inference = 0.0
        self.league_time = dict.fromkeys(LEAGUE_PARTS, 0.0)
        self.wall = 0.0
        self.agent_sps: list[float] = []  # every row of the main trainer's envs, learner or not
        self.opponents_per_step: list[float] = []

    def steps(self) -> dict[int, int]:
        """Learner samples so far of the main trainer and of each exploiter's, by trainer."""
        trainers = [self.trainer]
        if self.league_run is not None:
            trainers += [e.trainer for e in self.league_run.exploiters]
        return {id(t): int(t.global_step) for t in trainers}

    def update(self, measured: bool) -> None:
        before = self.steps()
        t0 = time.perf_counter()
        self.trainer.evaluate()
        self.trainer.train()
        metrics = self.trainer.mean_and_log()  # a league's round runs in it (LeagueRun.on_update)
        elapsed = time.perf_counter() - t0
        if not measured:
            return
        # An exploiter that restarts from fresh weights in this update starts counting from 0.
        after = self.steps()
        samples = sum(n - before.get(k, 0) if n >= before.get(k, 0) else n for k, n in after.items())
        self.sps.append(samples / elapsed)
        self.agent_sps.append(self.trainer.config.rollout_steps * self.trainer.experience.rows / elapsed)
        self.wall += elapsed
        for part in TIME_PARTS:
            self.split[part] += metrics.get(f"time/{part}", 0.0)
        busy = sum(metrics.get(f"time/{part}", 0.0) for part in TIME_PARTS)
        self.split["other"] += max(0.0, elapsed - busy)  # the trainer's own "other" spans the turns
        self.opponents_inference += metrics.get("time/inference_opponents", 0.0)
        for part in LEAGUE_PARTS:
            self.league_time[part] += metrics.get(f"league/time/{part}", 0.0)
        opponents = self.trainer.opponents  # they act once a step on every env, halves or not
        batches = opponents.groups(0, opponents.num_envs).policies
        self.opponents_per_step.append(sum(len(b.players) for b in batches))

    def report(self) -> str:
        total = sum(self.split.values()) or 1.0
        split = "  ".join(f"{part} {100 * self.split[part] / total:4.1f}%" for part in TRAINER_PARTS)
        return (f"{self.name:9} SPS {statistics.median(self.sps):9,.0f}  (min {min(self.sps):,.0f}, "
                f"max {max(self.sps):,.0f})  |  {split}")


def main(args: argparse.Namespace) -> int:
    common = [f"trainer.num_envs={args.num_envs}", f"trainer.seed={args.seed}", "dashboard=false",
              "logger=none", "trainer.total_timesteps=1000000000000",
              *[o for o in args.override if not o.startswith("league.")]]
    if args.torch_threads:
        common.append(f"trainer.torch_threads={args.torch_threads}")
    league_overrides = [f"+league={args.league}", "league.snapshot.every_steps=1000000000000",
                        "league.snapshot.beat_all_threshold=null",
                        *[o for o in args.override if o.startswith("league.")]]
    with tempfile.TemporaryDirectory() as tmp:
        pool_dir = Path(args.pool_dir) if args.pool_dir else Path(tmp) / "pool"
        pool_dir.mkdir(parents=True, exist_ok=True)
        mirror_cfg = compose_run_config(common + ["opponents.players=[mirror]", "opponents.weights=[1]"])
        league_cfg = compose_run_config(common + league_overrides + [f"run_dir={pool_dir}"])
        rss_start, _ = resident_mb()
        mirror_trainer, _ = build_trainer(mirror_cfg, Path(tmp) / "mirror")
        league_run = open_league(league_cfg, pool_dir, resuming=True)
        added = fill_pool(league_run, mirror_trainer.policy.spec, args.league_pool, args.seed)
        league_trainer, _ = build_trainer(league_cfg, pool_dir, matchmaker=league_run.matchmaker())
        league_run.attach(league_trainer, make_reward=lambda: build_reward_fn(league_cfg))
        pool = len(league_run.league.pool.snapshots(parent=league_run.learner_id))
        print(f"midrange 1v1, {args.num_envs} envs each: mirror self-play against +league={args.league} with "
              f"{pool} snapshots in the pool ({added} made now, in {pool_dir}), {args.turn} update(s) per "
              f"turn, {args.rounds} rounds after {args.warmup} warm-up round(s)", flush=True)
        runs = [Timed("mirror", mirror_trainer), Timed(f"{args.league}", league_trainer, league_run)]
        try:
            for round_index in range(args.warmup + args.rounds):
                for run in runs:
                    for _ in range(args.turn):
                        run.update(measured=round_index >= args.warmup)
            rss, peak = resident_mb()
            mirror, league = runs
            for run in runs:
                print(run.report())
            ratio = statistics.median(league.sps) / statistics.median(mirror.sps)
            league_work = sum(v for part, v in league.league_time.items() if part != "views")
            times = league.league_time.items()
            parts = "  ".join(f"{part} {100 * v / league.wall:.1f}%" for part, v in times)
            cache = league_run.matchmaker().cache
            opponents = 100 * league.opponents_inference / league.wall
            print(f"league work (in the league's wall time): {100 * league_work / league.wall:.1f}%  "
                  f"({parts}); opponents' inference {opponents:.1f}%")
            print(f"distinct frozen players per step: {statistics.mean(league.opponents_per_step):.1f}; "
                  f"frozen players loaded {cache.loads} times, {len(cache.loaded)} resident now "
                  f"(cache_size {league_run.config.cache_size})")
            print(f"resident memory: {rss:,.0f} MiB now, {peak:,.0f} MiB peak "
                  f"({rss_start:,.0f} MiB before the trainers were built)")
            verdict = "met" if ratio >= GOAL else "NOT met"
            mirror_rows = statistics.median(mirror.agent_sps)
            league_rows = statistics.median(league.agent_sps)
            learner_share = statistics.median(league.sps) / league_rows
            print(f"agent steps/s (every row, learner or opponent): mirror {mirror_rows:,.0f}, league "
                  f"{league_rows:,.0f}: {league_rows / mirror_rows:.2f}x; learner rows are "
                  f"{learner_share:.0%} of the league's")
            print(f"league / mirror SPS (learner samples): {ratio:.2f}x (goal >= {GOAL}x: {verdict})")
            if getattr(args, "json", None):
                figures = {
                    "league": args.league, "pool": pool, "num_envs": args.num_envs, "rounds": args.rounds,
                    "turn": args.turn, "overrides": list(args.override),
                    "league_sps": statistics.median(league.sps), "mirror_sps": statistics.median(mirror.sps),
                    "learner_sample_ratio": ratio, "agent_step_ratio": league_rows / mirror_rows,
                    "mirror_agent_steps_per_s": mirror_rows, "league_agent_steps_per_s": league_rows,
                    "learner_row_share": learner_share, "league_work_share": league_work / league.wall,
                    "league_time_shares": {part: v / league.wall for part, v in times},
                    "opponents_inference_share": opponents / 100,
                    "distinct_frozen_players_per_step": statistics.mean(league.opponents_per_step),
                    "frozen_player_loads": cache.loads, "resident_mib": rss, "peak_mib": peak,
                    "reports": [run.report() for run in runs]}
                print(f"wrote {write_record(args.json, 'train', list(getattr(args, 'argv', [])), figures)}")
        finally:
            league_run.save()
            league_run.close()
            league_trainer.close()
            mirror_trainer.close()
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--league-pool", type=int, default=None, metavar="N",
                        help="time league training with N snapshots in the pool against mirror training")
    parser.add_argument("--league", choices=("selfplay", "pfsp", "alphastar"), default="selfplay")
    parser.add_argument("--pool-dir", default=None, help="league run directory holding the pool (reused)")
    parser.add_argument("--rounds", type=int, default=4, help="measured rounds (league mode)")
    parser.add_argument("--turn", type=int, default=2, help="updates per trainer per round (league mode)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override (league mode; repeatable): league.* for the league, "
                             "anything else for both, e.g. trainer.overlap=false or league.cache_size=64")
