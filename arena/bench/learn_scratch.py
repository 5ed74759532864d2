"""Learning from scratch through the real CLI: ``python -m arena.bench learn --from-scratch``.

Runs ``python -m arena.train +league=selfplay`` (no teacher; extra ``key=value`` arguments are passed
on) in a subprocess for ``--minutes`` of wall time, then stops it with Ctrl-C (SIGINT: the trainer
writes its checkpoint and the league its state, as when a user stops a run). While it runs, the
league's gauntlet (every new snapshot against the game's reference bots, ``league.gauntlet``) is read
from the run's league store and printed as it arrives: minute, snapshot, learner step, and the
score against each reference with its 95% Wilson interval. At the end the curve is drawn to a PNG
and, with ``--final-games N``, the newest snapshot plays N side-swapped, seed-paired games against
``--reference`` (default ``scripted:heuristic``).

    python -m arena.bench learn --from-scratch --minutes 30 --seed 1 --run-dir runs/scratch-1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from arena.agents.players import resolve_player
from arena.bench.record import write_record
from arena.config import game_overrides
from arena.evaluation.runner import MatchSettings, play_match
from arena.games import spec as game_spec
from arena.games.midrange.shots import ShotRecorder
from arena.league.matchmaking.player_cache import snapshot_file
from arena.league.model.guard_counts import GuardCounts
from arena.league.model.store import LEAGUE_DB, GauntletRecord, LeagueStore
from arena.league.view.plots import plot_gauntlet

POLL_S = 10.0
REACH, FLOOR, GAP = 0.80, 0.75, 0.05  # issue 11's "no collapse" bar


@dataclass(frozen=True)
class Holding:
    """Whether a run's snapshots, once good, stayed good against one reference (gauntlet order).

    ``first_reach``: the first snapshot scoring >= ``reach``; ``lowest_after``: the lowest score of
    the snapshots after it; ``largest_drop``: the largest amount by which a snapshot scored below
    the best snapshot before it (the newest is then that far from the best); ``health``: health
    warnings counted over the second half of the run's updates, by name."""

    reference: str
    records: list[GauntletRecord]  # against ``reference``, in gauntlet order
    first_reach: int | None
    lowest_after: float | None
    largest_drop: float
    health: dict[str, int]

    @property
    def scores(self) -> list[float]:
        return [r.score()[0] for r in self.records]

    @property
    def holds(self) -> bool:
        return (self.first_reach is not None and (self.lowest_after is None or self.lowest_after >= FLOOR)
                and self.largest_drop <= GAP and not self.health)

    def lines(self) -> list[str]:
        scores = self.scores
        if self.first_reach is None:
            best = max(scores, default=0.0)
            return [f"vs {self.reference}: no snapshot reached {REACH:.2f} (best {best:.3f})"]
        first = self.records[self.first_reach]
        after = "no later snapshot" if self.lowest_after is None else f"lowest later {self.lowest_after:.3f}"
        health = ", ".join(f"{k} x{v}" for k, v in sorted(self.health.items())) or "none"
        return [f"vs {self.reference}: first >= {REACH:.2f}: {first.player_id} "
                f"(step {first.learner_step or 0:,}); {after} (bar {FLOOR:.2f})",
                f"largest drop below the best snapshot before it {self.largest_drop:.3f} (bar {GAP:.2f}); "
                f"newest {scores[-1]:.3f}, best {max(scores):.3f}",
                f"health warnings in the second half of the updates: {health}",
                f"holds: {'yes' if self.holds else 'no'}"]


def holding(records: list[GauntletRecord], reference: str, metrics: Path | None = None) -> Holding:
    """The no-collapse summary of a run's gauntlet against ``reference`` (and its metrics file)."""
    mine = [r for r in records if r.reference == reference]
    scores = [r.score()[0] for r in mine]
    first = next((i for i, x in enumerate(scores) if x >= REACH), None)
    lowest = min(scores[first + 1:], default=None) if first is not None else None
    drop = max((max(scores[:i]) - x for i, x in enumerate(scores) if i), default=0.0)
    return Holding(reference, mine, first, lowest, max(drop, 0.0), _late_health(metrics))


def _late_health(metrics: Path | None) -> dict[str, int]:
    """Health warnings (``health/<name>`` = 1) in the second half of the logged updates."""
    if metrics is None or not metrics.is_file():
        return {}
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if any(k.startswith("health/") for k in r)]
    return dict(Counter(key.removeprefix("health/") for r in rows[len(rows) // 2:]
                        for key, value in r.items() if key.startswith("health/") and value))


def restore_sigint() -> None:
    """In a child process: Ctrl-C ends it (a shell starts background jobs with SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(process: subprocess.Popen[bytes], grace_s: float = 300.0) -> None:
    """Ctrl-C to a running ``arena.train`` (it checkpoints and exits), a kill if it has not exited
    ``grace_s`` seconds later; nothing if it has already ended."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def train_for(command: list[str], minutes: float, log_path: Path, grace_s: float = 300.0) -> int | None:
    """Runs ``command`` (an ``arena.train`` line) with its output in ``log_path`` for ``minutes`` of
    wall time, then stops it as a user would (``interrupt``); returns its exit status."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ),
                                   preexec_fn=restore_sigint)
        try:
            process.wait(timeout=max(1.0, minutes * 60))
        except subprocess.TimeoutExpired:
            interrupt(process, grace_s)
    return process.returncode


def curve_title(seed: int, overrides: list[str]) -> str:
    """The curve's title: a new league, its seed and the run's overrides (``trainer=kickstart``, ...)."""
    run = ", ".join([f"seed {seed}", *overrides])
    return f"New league, {run}: each snapshot against fixed references"


def _read_gauntlet(run_dir: Path) -> list[GauntletRecord]:
    db = run_dir / LEAGUE_DB
    if not db.is_file():
        return []
    try:
        with LeagueStore(db, read_only=True) as store:
            return store.gauntlet()
    except Exception:  # the writer may hold the file mid-creation; the next poll reads it
        return []


def _print_new(records: list[GauntletRecord], seen: set[tuple[str, str]], start: float) -> None:
    for r in records:
        if (r.player_id, r.reference) in seen:
            continue
        seen.add((r.player_id, r.reference))
        score, lo, hi = r.score()
        print(f"{(r.created_at - start) / 60:7.1f} {r.player_id:>14} {r.learner_step or 0:>12,} "
              f"{r.reference:>20} {score:6.3f}  [{lo:.3f}, {hi:.3f}]  {r.wins}/{r.draws}/{r.losses}",
              flush=True)


def main(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir or f"runs/scratch-seed{args.seed}-{time.strftime('%Y%m%d-%H%M%S')}")
    if (run_dir / LEAGUE_DB).exists():
        raise SystemExit(f"--run-dir {run_dir} already holds a league; give a new directory")
    command = [sys.executable, "-m", "arena.train", "+league=selfplay", f"run_dir={run_dir}",
               f"trainer.seed={args.seed}", "dashboard=false", *args.overrides]
    print(f"learning from scratch, {args.minutes:g} min: {' '.join(command[1:])}", flush=True)
    print(f"{'minute':>7} {'snapshot':>14} {'step':>12} {'reference':>20} {'score':>6}  "
          "95% interval     W/D/L")
    run_dir.mkdir(parents=True, exist_ok=True)
    log = open(run_dir / "train.log", "w")  # noqa: SIM115 - open while the subprocess writes it
    start = time.time()
    # SIGINT restored for the child: a shell starts background jobs with it ignored, and the child
    # would inherit that and never see the Ctrl-C that ends the run cleanly.
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ),
                               preexec_fn=restore_sigint)
    seen: set[tuple[str, str]] = set()
    try:
        while process.poll() is None and time.time() - start < args.minutes * 60:
            time.sleep(min(POLL_S, max(0.1, args.minutes * 60 - (time.time() - start))))
            _print_new(_read_gauntlet(run_dir), seen, start)
    finally:
        interrupt(process)
        log.close()
    records = _read_gauntlet(run_dir)
    _print_new(records, seen, start)
    if process.returncode not in (0, None):
        print(f"arena.train exited with status {process.returncode}; see {log.name}")
    if not records:
        print("no snapshot finished its gauntlet: nothing to draw")
        return 1
    image = plot_gauntlet(records, run_dir / "gauntlet_minutes.png", start_time=start,
                          title=curve_title(args.seed, args.overrides))
    print(f"wrote {image}")
    held = holding(records, args.reference, run_dir / "metrics.jsonl").lines()
    for line in held:
        print(line)
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        guard = GuardCounts.from_meta(store.meta())
    print(f"guard (arena/league/run/guard.py): {guard.rejections} candidate(s) rejected (the best snapshot's "
          f"weights published instead), {guard.restores} restore(s) of the learner from its best snapshot")
    final: dict = {}
    if args.final_games:
        with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
            newest = [p for p in store.players() if p.kind == "snapshot" and p.parent == "learner"][-1]
        path = snapshot_file(run_dir, newest)
        game, team_sizes, overrides = _run_game(run_dir)  # the run's env: 2v2, changed parameters
        players = [resolve_player(spec, game, team_sizes, overrides=overrides)
                   for spec in (str(path), args.reference)]
        settings = MatchSettings(game=game, team_sizes=team_sizes, overrides=overrides,
                                 games=args.final_games, seed=args.seed + 1000, num_envs=256)
        shots = ShotRecorder() if "shots" in game_spec(game).features else None
        result = play_match(*players, settings, recorder=shots)
        score, lo, hi = result.score()
        print(f"newest snapshot {newest.player_id} (step {newest.step:,}) vs {args.reference}: "
              f"{result.wins}/{result.draws}/{result.losses}, score {score:.3f} [{lo:.3f}, {hi:.3f}] "
              f"over {result.games} games")
        print("per match (each side's fighters summed): " + ", ".join(
            f"{name} {a:.2f} vs {b:.2f}" for name, (a, b) in result.events.items() if a or b))
        final = {"snapshot": newest.player_id, "step": newest.step, "reference": args.reference,
                 "games": result.games, "wins": result.wins, "draws": result.draws, "losses": result.losses,
                 "score": score, "lo": lo, "hi": hi,
                 "events_per_match": {name: [a, b] for name, (a, b) in result.events.items()}}
        if shots is not None:  # where the misses were fired from (arena/games/midrange/shots.py)
            final["shots"] = []
            for label, summary in zip(("newest snapshot", args.reference), shots.summary(), strict=True):
                print("\n".join(summary.lines(label)))
                final["shots"] += summary.lines(label)
    figures = scratch_figures(records, start, args, held, guard.rejections, guard.restores, final)
    print(f"wrote {write_record(run_dir / 'learn.json', 'learn', list(getattr(args, 'argv', [])), figures)}")
    return 0


def scratch_figures(records: list[GauntletRecord], start: float, args: argparse.Namespace, held: list[str],
                    rejections: int, restores: int, final: dict) -> dict:
    """The record's figures: every gauntlet row as printed (minute, snapshot, step, reference, score,
    interval, W/D/L), the holding verdict's lines, the guard's counts and the final games."""
    rows = []
    for r in records:
        score, lo, hi = r.score()
        rows.append({"minute": (r.created_at - start) / 60, "snapshot": r.player_id,
                     "step": r.learner_step or 0, "reference": r.reference, "score": score, "lo": lo,
                     "hi": hi, "wins": r.wins, "draws": r.draws, "losses": r.losses})
    return {"minutes": args.minutes, "seed": args.seed, "overrides": list(args.overrides),
            "gauntlet": rows, "holding": list(held),
            "guard": {"rejections": rejections, "restores": restores}, "final_games": final}


def _run_game(run_dir: Path) -> tuple[str, tuple[int, int], dict]:
    """The game, team sizes and parameter overrides a run trained on (from its config.yaml)."""
    from omegaconf import OmegaConf

    env = OmegaConf.to_container(OmegaConf.load(run_dir / "config.yaml").env, resolve=True)
    assert isinstance(env, dict)
    sizes = env["team_sizes"]
    overrides = game_overrides(env)
    return str(env["name"]), (int(sizes[0]), int(sizes[1])), overrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--from-scratch", action="store_true",
                        help="run the default league from scratch through the CLI and print its gauntlet")
    parser.add_argument("--seed", type=int, default=0, help="trainer seed (with --from-scratch)")
    parser.add_argument("--run-dir", default=None, help="run directory (with --from-scratch)")
    parser.add_argument("--reference", default="scripted:heuristic",
                        help="the final evaluation's opponent (with --from-scratch)")
