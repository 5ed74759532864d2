"""League overhead benchmark: the share of training wall time spent in league work.

Trains midrange 1v1 with ``+league=selfplay`` (default trainer settings) for ``--seconds`` and times,
with perf_counter around each call, the league's work: recording matches (store commit, payoff,
TrueSkill), matchmaking, loading frozen players, snapshot gate and writing; and separately the views
for the logger (ratings, leaderboard, payoff heatmap). Goal: league work at most 3% of the wall time.
Extra ``key=value`` arguments are hydra overrides of the run config, e.g. ``trainer.num_envs=512``;
on a machine shared with other jobs pass ``trainer.torch_threads=1`` (torch's spinning intra-op threads
otherwise slow training, not the league, by an order of magnitude).

    python -m arena.bench league                          # 90 s, default selfplay settings
    python -m arena.bench league --seconds 600 --snapshot-every 200000 trainer.torch_threads=1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from arena.league.timing import LEAGUE_PARTS

GOAL = 0.03
DEFAULTS = ["+league=selfplay", "dashboard=false", "logger=none", "trainer.total_timesteps=1000000000"]


def main(argv: list[str] | None = None) -> int:
    from arena.config import compose_run_config
    from arena.train import build_reward_fn, build_trainer, open_league
    from arena.trainer.loggers import make_logger

    parser = argparse.ArgumentParser(prog="python -m arena.bench league", description=__doc__)
    parser.add_argument("--seconds", type=float, default=90.0, help="training wall-clock budget")
    parser.add_argument("--game", default="midrange", help="env config (midrange, midrange_2v2, rpsw, ...)")
    parser.add_argument("--snapshot-every", type=int, default=None,
                        help="learner samples between snapshots (default: the selfplay config's)")
    parser.add_argument("overrides", nargs="*", help="hydra overrides, e.g. trainer.num_envs=512")
    args = parser.parse_args(argv)

    overrides = [*DEFAULTS, f"env={args.game}"]
    if args.snapshot_every is not None:
        overrides.append(f"league.snapshot.every_steps={args.snapshot_every}")
    cfg = compose_run_config(overrides + list(args.overrides))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        league = open_league(cfg, run_dir)
        trainer, _ = build_trainer(cfg, run_dir, matchmaker=league.matchmaker())
        league.attach(trainer, make_reward=lambda: build_reward_fn(cfg))
        log = make_logger("none", run_dir)
        print(f"league benchmark: {args.game} {tuple(cfg.env.team_sizes)}, +league=selfplay, "
              f"{trainer.config.num_envs} envs, {args.seconds:g} s of training", flush=True)
        start = time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            trainer.evaluate()
            trainer.train()
            metrics = trainer.mean_and_log()
            metrics.update(league.after_update())
            league.log_views(log, trainer.global_step)
            log.log(metrics, trainer.global_step)
        wall = time.perf_counter() - start
        totals = dict(league.timer.totals)
        matches, snapshots = league.league.match_count, len(league.league.pool.snapshots())
        steps, loads = trainer.global_step, league.matchmaker().cache.loads
        log.close()
        league.close()
        trainer.close()

    work = sum(v for part, v in totals.items() if part != "views")
    print(f"{steps} learner samples ({steps / wall:.0f} SPS), {league.updates} updates, {matches} matches "
          f"({matches / wall:.1f}/s), {snapshots} snapshots, {loads} frozen-player loads in {wall:.1f} s")
    for part in LEAGUE_PARTS:
        print(f"  {part:12} {totals[part]:8.3f} s  {totals[part] / wall:7.3%}")
    print(f"league work (all but views): {work:.3f} s = {work / wall:.2%} of training wall time "
          f"(goal <= {GOAL:.0%}: {'met' if work / wall <= GOAL else 'NOT met'})")
    print(f"with the logger views: {(work + totals['views']) / wall:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
