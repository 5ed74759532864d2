"""Learning benchmark: train midrange 1v1 against the heuristic pilot, and print the learner's win
rate against it over training wall-clock time.

Every ``--eval-every`` seconds of training the current policy plays ``--eval-games`` side-swapped,
seed-paired games against ``scripted:heuristic`` (sampling its actions, as in training); the
evaluation's own time is not counted as training time. At the end, ``--final-games`` games give the
closing figure with its 95% interval. Extra ``key=value`` arguments are hydra overrides of the run
config (the same as ``python -m arena.train``), e.g. ``trainer.num_envs=512 reward=shaped``.

The default recipe kickstarts from the heuristic pilot (``trainer.kickstart_teacher``): a cross-entropy
pull toward the teacher's actions on the learner's own observations, its weight falling linearly to 0
over the first 30M samples, with the outcome (+1/-1) as the only reward (``trainer=kickstart``:
configs/trainer/kickstart.yaml). From scratch, the outcome
reward alone gives no signal here: a random policy loses every match to the heuristic, so every
return is -1. Pass ``trainer.kickstart_teacher=null`` to see that.

``--from-scratch`` measures something else: the default league, no teacher, through the real CLI
(``arena/bench/learn_scratch.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

from arena.agents.players import resolve_player
from arena.bench import learn_scratch
from arena.config import compose_run_config
from arena.evaluation.runner import MatchSettings, play_match
from arena.train import build_trainer

DEFAULTS = [
    "opponents.players=[scripted:heuristic]",
    "opponents.weights=[1.0]",
    "dashboard=false",
    "logger=none",
    "trainer=kickstart",  # the recipe: configs/trainer/kickstart.yaml
    "reward=outcome",  # the kickstart recipe as measured: the outcome alone, a uniform fresh policy
    "agent.action_prior=null",
]


def _win_rate(policy: torch.nn.Module, path: Path, games: int, seed: int) -> tuple[float, float, float, str]:
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    learner = resolve_player(str(path), "midrange")
    heuristic = resolve_player("scripted:heuristic", "midrange")
    result = play_match(learner, heuristic, MatchSettings(games=games, seed=seed, num_envs=min(games, 256)))
    score, lo, hi = result.score()
    wins = result.wins / max(result.games, 1)
    return wins, score, hi - lo, f"{result.wins}/{result.draws}/{result.losses}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench learn", description=__doc__)
    parser.add_argument("--minutes", type=float, default=15.0, help="training wall-clock budget")
    parser.add_argument("--eval-every", type=float, default=90.0, help="training seconds between evaluations")
    parser.add_argument("--eval-games", type=int, default=200)
    parser.add_argument("--final-games", type=int, default=1000)
    parser.add_argument("overrides", nargs="*", help="hydra overrides, e.g. trainer.num_envs=512")
    learn_scratch.add_arguments(parser)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    if args.from_scratch:
        return learn_scratch.main(args)

    cfg = compose_run_config(DEFAULTS + ["trainer.total_timesteps=1000000000"] + list(args.overrides))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        trainer, parts = build_trainer(cfg, run_dir)
        print(f"learning benchmark: midrange {parts['team_sizes']} vs scripted:heuristic, "
              f"{args.minutes:g} min of training, policy {trainer.policy.num_parameters()} parameters, "
              f"{trainer.config.num_envs} envs")
        print(f"{'train min':>9} {'steps':>11} {'SPS':>8} {'win rate':>9} {'score':>6} {'W/D/L':>12}")
        budget, trained, next_eval = args.minutes * 60.0, 0.0, 0.0
        policy_file = run_dir / "policy.pt"
        evals = 0
        while True:
            if trained >= next_eval or trained >= budget:
                final = trained >= budget
                games = args.final_games if final else args.eval_games
                wins, score, width, wdl = _win_rate(trainer.policy, policy_file, games, seed=1000 + evals)
                evals += 1
                sps = trainer.global_step / max(trained, 1e-9)
                note = f"  (final, {games} games, score 95% CI width {width:.3f})" if final else ""
                print(f"{trained / 60:9.1f} {trainer.global_step:11d} {sps:8.0f} {wins:9.3f} {score:6.3f} "
                      f"{wdl:>12}{note}", flush=True)
                next_eval += args.eval_every
                if final:
                    break
            start = time.perf_counter()
            trainer.evaluate()
            trainer.train()
            trainer.mean_and_log()
            trained += time.perf_counter() - start
        trainer.close()
    return 0
