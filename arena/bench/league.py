"""League overhead benchmark: the share of training wall time spent in league work.

Trains midrange 1v1 with ``+league=selfplay`` (default trainer settings) for ``--seconds`` and times,
with perf_counter around each call, the league's work: recording matches (store commit, payoff,
TrueSkill), matchmaking, loading frozen players, snapshot gate and writing, the gauntlet of each new
snapshot; and separately the views for the logger (ratings, leaderboard, payoff heatmap). The
opponents' inference (the frozen players' forward passes during the rollout) is what a league
costs beyond mirror play, so it is printed too and counted in the league's total. Goal for the
bookkeeping: at most 3% of the wall time; with the gauntlet, at most 5%. The cost of the league
against mirror play as a user sees it, in SPS: ``python -m arena.bench train --league-pool N``.
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

from arena.config import compose_run_config
from arena.league.timing import LEAGUE_PARTS
from arena.train import build_reward_fn, build_trainer, open_league
from arena.trainer.telemetry.loggers import make_logger

GOAL = 0.03
GAUNTLET_GOAL = 0.05
DEFAULTS = ["+league=selfplay", "dashboard=false", "logger=none", "trainer.total_timesteps=1000000000"]


def main(argv: list[str] | None = None) -> int:
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
        league.attach(trainer, make_reward=lambda: build_reward_fn(cfg, exploiter=True))
        log = make_logger("none", run_dir)
        print(f"league benchmark: {args.game} {tuple(cfg.env.team_sizes)}, +league=selfplay, "
              f"{trainer.config.num_envs} envs, {args.seconds:g} s of training", flush=True)
        start = time.perf_counter()
        opponents_inference = 0.0
        while time.perf_counter() - start < args.seconds:
            trainer.evaluate()
            trainer.train()
            metrics = trainer.mean_and_log()  # the league's round runs in it (LeagueRun.on_update)
            opponents_inference += metrics.get("time/inference_opponents", 0.0)
            league.log_views(log, trainer.global_step)
            log.log(metrics, trainer.global_step)
        wall = time.perf_counter() - start
        totals = dict(league.timer.totals)
        matches, snapshots = league.league.match_count, len(league.league.pool.snapshots())
        steps, loads = trainer.global_step, league.matchmaker().cache.loads
        log.close()
        league.close()
        trainer.close()

    work = sum(v for part, v in totals.items() if part not in ("views", "gauntlet"))
    print(f"{steps} learner samples ({steps / wall:.0f} SPS), {league.updates} updates, {matches} matches "
          f"({matches / wall:.1f}/s), {snapshots} snapshots, {loads} frozen-player loads in {wall:.1f} s")
    for part in LEAGUE_PARTS:
        print(f"  {part:12} {totals[part]:8.3f} s  {totals[part] / wall:7.3%}")
    print(f"  {'opponents':12} {opponents_inference:8.3f} s  {opponents_inference / wall:7.3%}  "
          "(frozen and scripted opponents' inference in the rollout)")
    print(f"league bookkeeping (record, matchmaking, loading, snapshot): {work:.3f} s = {work / wall:.2%} of "
          f"training wall time (goal <= {GOAL:.0%}: {'met' if work / wall <= GOAL else 'NOT met'})")
    with_gauntlet = work + totals["gauntlet"]
    print(f"with the gauntlet: {with_gauntlet / wall:.2%} (goal <= {GAUNTLET_GOAL:.0%}: "
          f"{'met' if with_gauntlet / wall <= GAUNTLET_GOAL else 'NOT met'})")
    print(f"with the logger views: {(with_gauntlet + totals['views']) / wall:.2%}")
    print(f"with the opponents' inference: {(with_gauntlet + opponents_inference) / wall:.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
