"""``python -m arena.bench pruning``: one Optuna study run twice, without a pruner and with one.

Both runs are ``python -m arena.train -m +sweep=rpsw`` with the same sampler seed, one after the other
on this machine, each in its own folder and SQLite study: first ``sweep.pruner=none`` with ``--trials``
trials, then ``sweep.pruner=<--pruner>`` with ``--pruned-trials`` (complete or pruned; by default as
many). It prints each study's wall time, its trials by state and its best value, the ratio of the wall
times, and when (if ever) the pruned study first matched the unpruned study's best value. A pruner
earns its keep when that time is below the unpruned study's wall time: given more trials for the time
it saves, it finds as good a value sooner. It writes ``pruning.png`` (the best value so far against
wall-clock seconds) and ``pruning.json`` in ``--run-dir``.

    python -m arena.bench pruning --trials 16 --run-dir runs/pruning
    python -m arena.bench pruning --pruner hyperband --pruned-trials 32 -- trainer.total_timesteps=100000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from arena.bench.record import write_record
from arena.figures import pyplot, save_figure


def run_study(name: str, pruner: str, n_trials: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Runs one study through the CLI; its wall time, trials by state and best value so far over time."""
    import optuna

    folder = root / name
    command = [sys.executable, "-m", "arena.train", "-m", "+sweep=rpsw", f"sweep.n_trials={n_trials}",
               f"sweep.name={name}", f"hydra.sweep.dir={folder}", f"sweep.pruner={pruner}",
               f"sweep.sampler.seed={args.seed}", *args.overrides]
    print(f"{name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    with open(root / f"{name}.log", "w") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{name}: the study exited {done.returncode}; see {root / f'{name}.log'}")
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{folder / 'study.db'}")
    trials = study.get_trials(deepcopy=False)
    states: dict[str, int] = {}
    for t in trials:
        states[t.state.name.lower()] = states.get(t.state.name.lower(), 0) + 1
    first = min(t.datetime_start for t in trials if t.datetime_start is not None)
    curve, best = [], None
    ended = sorted((t for t in trials if t.datetime_complete is not None), key=lambda t: t.datetime_complete)
    for t in ended:
        if t.state == optuna.trial.TrialState.COMPLETE and (best is None or t.value > best):
            best = float(t.value)
        curve.append(((t.datetime_complete - first).total_seconds(), best))
    top = study.best_trial
    return {"pruner": pruner, "wall_s": round(wall, 1), "trials": states, "best_value": float(top.value),
            "best_trial": top.number, "best_params": dict(top.params), "best_so_far": curve}


def time_to_reach(curve: list[tuple[float, float | None]], value: float) -> float | None:
    """The first time on a best-so-far curve at which it is at least ``value`` (None if never)."""
    return next((t for t, best in curve if best is not None and best >= value), None)


def plot(studies: dict[str, dict[str, Any]], path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, study in enumerate(studies.values()):
        points = [(s, b) for s, b in study["best_so_far"] if b is not None]
        ax.step([s for s, _ in points], [b for _, b in points], where="post", color=f"C{i}", marker="o",
                label=f"pruner {study['pruner']}: {study['wall_s']:.0f} s, best {study['best_value']:.4f}")
    ax.set_xlabel("wall-clock seconds since the first trial started")
    ax.set_ylabel("best objective so far")
    ax.set_title("Optuna study on rpsw, with and without pruning", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return save_figure(fig, path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench pruning", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=16, help="finished trials per study")
    parser.add_argument("--pruned-trials", type=int, default=None,
                        help="trials of the pruned study (default: --trials)")
    parser.add_argument("--pruner", choices=("median", "hyperband"), default="median")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed (both studies)")
    parser.add_argument("--run-dir", default=None,
                        help="folder of both studies (default runs/pruning-<time>)")
    parser.add_argument("overrides", nargs="*", help="more overrides for both studies (after --)")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error(f"--trials {args.trials}: must be at least 1")
    pruned_trials = args.trials if args.pruned_trials is None else args.pruned_trials
    if pruned_trials < 1:
        parser.error(f"--pruned-trials {pruned_trials}: must be at least 1")
    root = Path(args.run_dir or f"runs/pruning-{time.strftime('%Y%m%d-%H%M%S')}")
    if root.exists() and any(root.iterdir()):
        parser.error(f"--run-dir {root} already holds files: choose a new folder")
    root.mkdir(parents=True, exist_ok=True)
    studies = {"unpruned": run_study("unpruned", "none", args.trials, args, root),
               "pruned": run_study("pruned", args.pruner, pruned_trials, args, root)}
    print(f"{'study':10} {'pruner':10} {'wall s':>8} {'trials':32} best value")
    for name, s in studies.items():
        print(f"{name:10} {s['pruner']:10} {s['wall_s']:8.1f} {str(s['trials']):32} {s['best_value']:.6g}")
    ratio = studies["pruned"]["wall_s"] / studies["unpruned"]["wall_s"]
    print(f"wall time, pruned / unpruned: {ratio:.2f}x")
    target = studies["unpruned"]["best_value"]
    reached = time_to_reach(studies["pruned"]["best_so_far"], target)
    if reached is None:
        print(f"the pruned study never matched the unpruned study's best value ({target:.6g})")
    else:
        share = reached / studies["unpruned"]["wall_s"]
        print(f"the pruned study matched the unpruned study's best value ({target:.6g}) after "
              f"{reached:.1f} s: {share:.2f}x the unpruned study's wall time")
    image = plot(studies, root / "pruning.png")
    record = write_record(root / "pruning.json", "pruning", argv,
                          {"studies": studies, "wall_ratio_pruned_over_unpruned": round(ratio, 3),
                           "pruned_reaches_unpruned_best_s": None if reached is None else round(reached, 1),
                           "png": str(image)})
    print(f"record: {record}\nfigure: {image}")
    return 0
