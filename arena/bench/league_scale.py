"""``python -m arena.bench league-scale``: a week-long league's store, in minutes.

For each size (snapshots, matches) it fills a league store in a fresh run directory with that many
snapshot players (tiny files: the store, not the weights, is what grows) and synthetic matches at a
default league's shares (mirror 35%, snapshots 35%, the three bots 30%; a snapshot's share goes half
to the newest 64 and half to all before the match), each non-mirror match with its two rating rows
and its checkpoint tag, and the gauntlet's rows for every fourth snapshot. Then, each in a process of
its own so that resident memory is that of the part measured:

- **first open**: the league opened with no mark, replaying every match up to the last checkpoint
  (how every resume worked before marks); then, as a run does when its learner writes that
  checkpoint, a mark; then the matches after it, recorded one step at a time through the league
  (``League.record_match``), and the run is killed (no mark at its end);
- **training process**: ``LeagueRun`` resumed with a rollback of the last checkpoint's matches (from
  the newest mark), then one update's league work, each part timed: recording an update's matches
  (in one transaction per step), the PFSP refresh and the draws of an update's matches, the
  snapshot gate's win rates, the league metrics, and the views (leaderboard, payoff heatmap chart,
  rating curves) amortised over ``league.log_interval`` updates, the payoff PNG over
  ``league.image_interval``; its resident memory;
- **league show**: ``python -m arena.league show`` on the directory: wall time and peak memory.

It prints the sizes side by side, the league work of one update as a share of an update's wall time
(``--update-seconds``: 2.5, the median update of a default selfplay league on the 2-core VM), the store's size
on disk and a week's projection, and writes a JSON record (``--json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from arena.bench.league_pool import resident_mb
from arena.bench.record import write_record
from arena.figures import pyplot, save_figure
from arena.league.config import RetentionConfig, league_config
from arena.league.matchmaking.pfsp import UpdateMatchmaker
from arena.league.model.exploitability import best_responses, league_exploitability
from arena.league.model.league import League
from arena.league.model.players import Player
from arena.league.model.ratings import Ratings
from arena.league.model.snapshots import SnapshotGate, file_stat, write_snapshot
from arena.league.model.store import META_DECAY, META_RATINGS, LeagueStore
from arena.league.run.league_run import LeagueRun
from arena.league.view.plots import show
from arena.trainer.telemetry.loggers import NoneLogger

SIZES = ((50, 1_000_000), (2_000, 1_000_000), (20_000, 1_000_000), (20_000, 10_000_000))
BOTS = ("scripted:random", "scripted:heuristic", "scripted:evader")
MATCHES_PER_UPDATE = 40  # ~19 matches a second (a default selfplay league, 1v1) x ~2 s an update
MATCHES_PER_CHECKPOINT = 5_800  # five minutes of matches at that rate: what a resume rolls back
GAUNTLET_REFERENCES = BOTS


def last_checkpoint(matches: int) -> int:
    """The checkpoint count the learner had written when it played the league's last match."""
    return (matches - 1) // MATCHES_PER_CHECKPOINT


def fill(run_dir: Path, snapshots: int, matches: int, seed: int = 0) -> dict[str, float]:
    """Writes the synthetic league (see the module docstring) up to its last checkpoint (the matches
    after it are ``first_open``'s); returns its timings."""
    total, matches = matches, last_checkpoint(matches) * MATCHES_PER_CHECKPOINT
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    store = LeagueStore(run_dir / "league.sqlite")
    config = league_config({})
    store.set_metas({META_DECAY: config.decay, META_RATINGS: Ratings().config(),
                     "league_config": dataclasses.asdict(config)})
    store.add_player(Player("learner", "learner"))
    for bot in BOTS:
        store.add_player(Player(bot, "scripted"))
    ids = [f"learner:snap-{i:06d}" for i in range(snapshots)]
    stats = {}
    with store.batch():
        for i, player_id in enumerate(ids):
            relative = Path("league") / "snapshots" / f"learner_snap-{i:06d}.pt"
            sha = write_snapshot(run_dir / relative, rng.bytes(64))
            store.add_player(Player(player_id, "snapshot", path=str(relative), sha256=sha,
                                    step=i * 1_000_000, parent="learner"))
            stats[player_id] = file_stat(run_dir / relative)
    store.set_file_stats(stats)
    opponents = np.array(["learner", *BOTS, *ids], dtype=object)
    chunk = 200_000
    mu = {p: 25.0 for p in opponents}
    conn = store._conn
    for first in range(0, matches, chunk):
        k = np.arange(first, min(first + chunk, matches))
        available = np.maximum(1, ((k + 1) * snapshots) // total)  # snapshots made before match k
        source = rng.random(len(k))
        recent = np.maximum(0, available - 64)
        newest = recent + (rng.random(len(k)) * (available - recent)).astype(int)
        snap = np.where(rng.random(len(k)) < 0.5, newest, (rng.random(len(k)) * available).astype(int))
        pick = np.where(source < 0.35, 0, np.where(source < 0.65, 1 + rng.integers(0, 3, len(k)), 4 + snap))
        outcome = rng.integers(-1, 2, len(k))
        ids_k = k + 1
        checkpoint = k // MATCHES_PER_CHECKPOINT
        match_rows, rating_rows, tag_rows = [], [], []
        for mid, o, out, cp in zip(ids_k.tolist(), pick.tolist(), outcome.tolist(), checkpoint.tolist(),
                                   strict=True):
            opponent = opponents[o]
            match_rows.append((mid, mid * 50, '["learner"]', json.dumps([opponent]), out, 600.0, 0.0))
            tag_rows.append((mid, "learner", cp))
            if opponent != "learner":
                mu["learner"] += 0.01 * out
                mu[opponent] -= 0.01 * out
                rating_rows.append((mid, "learner", mu["learner"], 1.0))
                rating_rows.append((mid, opponent, mu[opponent], 2.0))
        with store.batch():
            conn.executemany("INSERT INTO matches (id, learner_step, team_a, team_b, outcome, length,"
                             " created_at) VALUES (?,?,?,?,?,?,?)", match_rows)
            conn.executemany("INSERT INTO ratings VALUES (?,?,?,?)", rating_rows)
            conn.executemany("INSERT INTO match_learners VALUES (?,?,?)", tag_rows)
    with store.batch():
        for i in range(0, snapshots, 4):
            for ref in GAUNTLET_REFERENCES:
                w = int(rng.integers(0, 200))
                conn.execute("INSERT INTO gauntlet VALUES (?,?,?,?,?,?,?)",
                             (ids[i], ref, i * 1_000_000, w, 0, 200 - w, float(i)))
    store.close()
    return {"fill_s": time.perf_counter() - start}


def first_open(run_dir: Path, matches: int, seed: int = 2) -> dict[str, float]:
    """Opens the league with no mark (a replay of every match so far), writes a mark as at a
    checkpoint, then records the matches after the checkpoint one step (two matches) at a time."""
    start = time.perf_counter()
    league = League.open(run_dir)
    opened = time.perf_counter() - start
    start = time.perf_counter()
    league.mark()
    marked = time.perf_counter() - start
    rng = np.random.default_rng(seed)
    opponents = ["learner", *BOTS, *[p.player_id for p in league.pool.snapshots()[-64:]]]
    checkpoint = last_checkpoint(matches)
    for first in range(league.match_count, matches, 2):
        with league.store.batch():
            for _ in range(min(2, matches - first)):
                opponent = opponents[int(rng.integers(len(opponents)))]
                league.record_match(["learner"], [opponent], int(rng.integers(-1, 2)), length=600.0,
                                    learner_step=10**12, checkpoints={"learner": checkpoint})
    league.close()
    rss, peak = resident_mb()
    return {"open_without_mark_s": opened, "first_mark_s": marked, "open_without_mark_peak_mib": peak,
            "open_without_mark_rss_mib": rss}


def training_process(run_dir: Path, matches: int, seed: int = 1) -> dict[str, float]:
    """A resumed LeagueRun's start and one update's league work (see the module docstring)."""
    config = league_config({})
    checkpoint = last_checkpoint(matches)
    start = time.perf_counter()
    run = LeagueRun(config, run_dir, game="midrange", learner_checkpoints=checkpoint)
    resume = time.perf_counter() - start
    league = run.league
    out: dict[str, float] = {"resume_s": resume, "rolled_back": float(sum(run.rolled_back.values()))}
    rng = np.random.default_rng(seed)
    m = config.matchmaking
    chooser = UpdateMatchmaker(league.pool, league.payoff, m.mix.as_dict(), rng=rng, weighting=m.weighting,
                               p=m.p, min_games=m.min_games, pool_kinds=tuple(m.pool_kinds))
    timings = {}
    start = time.perf_counter()
    chooser.refresh()
    drawn = chooser.choose_many("learner", MATCHES_PER_UPDATE)
    timings["matchmaking"] = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(0, MATCHES_PER_UPDATE, 2):  # two matches end in a step, one transaction each step
        with league.store.batch():
            for opponent in drawn[i:i + 2]:
                league.record_match(["learner"], [opponent], int(rng.integers(-1, 2)),
                                    learner_step=10**12, checkpoints={"learner": checkpoint})
    timings["record"] = time.perf_counter() - start
    snap = config.snapshot
    gate = SnapshotGate.of(snap)
    start = time.perf_counter()  # as the learner asks it (LeagueLearner.snapshot_due), between snapshots
    rates = league.iter_win_rates_vs_pool("learner", tuple(snap.vs_kinds), newest_first=True)
    gate.should_snapshot(1, 0, rates)
    timings["gate"] = time.perf_counter() - start
    start = time.perf_counter()
    league_exploitability(league.payoff, best_responses(league.pool), "learner")
    league.ratings.conservative("learner")
    timings["metrics"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        run.views.run_dir = Path(tmp)  # the view's PNG goes here, not into the league's directory
        start = time.perf_counter()  # the process's first: matplotlib's import, the curves from the store
        run.views.log(NoneLogger(), 10**12, config.log_interval, force=True)
        out["first_view_ms"] = (time.perf_counter() - start) * 1000.0
        start = time.perf_counter()  # a later one with the payoff PNG, every league.image_interval updates
        run.views.log(NoneLogger(), 10**12 + 1, 2 * config.log_interval, force=True)
        timings["view"] = time.perf_counter() - start
        start = time.perf_counter()  # one without it, every league.log_interval updates
        run.views.log(NoneLogger(), 10**12 + 2, 3 * config.log_interval)
        timings["chart_view"] = time.perf_counter() - start
    run.close()
    out.update({f"{k}_ms": v * 1000.0 for k, v in timings.items()})
    views = timings["chart_view"] / config.log_interval + max(
        0.0, timings["view"] - timings["chart_view"]) / config.image_interval
    per_update = sum(v for k, v in timings.items() if k not in ("view", "chart_view")) + views
    out["league_work_per_update_ms"] = per_update * 1000.0
    rss, peak = resident_mb()
    out.update({"rss_mib": rss, "peak_mib": peak})
    return out


def league_show(run_dir: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        show(run_dir, tmp)
        seconds = time.perf_counter() - start
    _, peak = resident_mb()
    return {"show_s": seconds, "show_peak_mib": peak}


LONG_RUN_ARGS = ("+league=selfplay", "trainer.total_timesteps=1000000000",
                 "league.snapshot.every_steps=100000", "logger=none", "dashboard=false")


def long_run(run_dir: Path, minutes: float, overrides: list[str]) -> dict[str, Any]:
    """A real league run (``python -m arena.train`` with ``LONG_RUN_ARGS``: a snapshot every 100k
    samples, a day's pool in miniature), its resident memory sampled every minute; then Ctrl-C,
    its league work per minute from its metrics, and ``league show`` on its directory."""
    args = [sys.executable, "-m", "arena.train", *LONG_RUN_ARGS, *overrides, f"run_dir={run_dir}"]
    log = (run_dir.parent / f"{run_dir.name}.log").open("w")
    # Ctrl-C must reach it even when this bench runs in the background, where a shell starts it
    # with SIGINT ignored (and a child inherits that)
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    start = time.time()
    samples = []
    try:
        while time.time() - start < minutes * 60.0 and proc.poll() is None:
            time.sleep(min(60.0, max(0.0, start + 60.0 * (len(samples) + 1) - time.time())))
            rss, peak = resident_mb(proc.pid)
            snaps = len(list((run_dir / "league" / "snapshots").glob("*.pt")))
            samples.append({"minute": (time.time() - start) / 60.0, "rss_mib": rss, "peak_mib": peak,
                            "snapshot_files": snaps})
            print(f"  minute {samples[-1]['minute']:.1f}: {rss:.0f} MiB resident, {snaps} snapshot files",
                  flush=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=600)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
    text = (run_dir / "metrics.jsonl").read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    t0 = lines[0]["wall_time"] if lines else start
    per_minute: dict[int, dict[str, float]] = {}
    for line in lines:
        if "league/time/total" not in line:
            continue
        slot = per_minute.setdefault(int((line["wall_time"] - t0) // 60), {"league": 0.0, "gauntlet": 0.0,
                                                                           "updates": 0.0})
        slot["league"] += line["league/time/total"] - line.get("league/time/gauntlet", 0.0)
        slot["gauntlet"] += line.get("league/time/gauntlet", 0.0)
        slot["updates"] += 1
    minutes_table = [{"minute": m, "league_share": v["league"] / 60.0, "gauntlet_share": v["gauntlet"] / 60.0,
                      "league_ms_per_update": 1000.0 * v["league"] / max(v["updates"], 1.0),
                      "updates": v["updates"]} for m, v in sorted(per_minute.items())]
    with LeagueStore(run_dir / "league.sqlite", read_only=True) as store:
        players, matches = len(store.players()), store.match_count()
    figures = {"minutes": minutes, "command": " ".join(["python -m arena.train", *LONG_RUN_ARGS, *overrides]),
               "samples": samples, "per_minute": minutes_table, "players": players, "matches": matches,
               **_child("show", run_dir, 0, 0)}
    figures["plot"] = str(plot_long_run(samples, minutes_table, run_dir / "league_long_run.png"))
    return figures


def plot_long_run(samples: list[dict[str, float]], per_minute: list[dict[str, float]], path: Path) -> Path:
    plt = pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    top.plot([s["minute"] for s in samples], [s["rss_mib"] for s in samples], marker="o", markersize=3,
             label="resident memory (MiB)")
    top.set_ylabel("MiB")
    top.set_ylim(bottom=0)
    twin = top.twinx()
    twin.plot([s["minute"] for s in samples], [s["snapshot_files"] for s in samples], color="C2",
              linestyle="--", label="snapshot files")
    twin.set_ylabel("snapshot files", color="C2")
    top.set_title("a long league run: resident memory and league work per minute")
    top.legend(loc="upper left", fontsize="small")
    bottom.plot([m["minute"] + 0.5 for m in per_minute], [100 * m["league_share"] for m in per_minute],
                marker="o", markersize=3, label="league work (record, matchmaking, loading, snapshot, views)")
    bottom.plot([m["minute"] + 0.5 for m in per_minute], [100 * m["gauntlet_share"] for m in per_minute],
                marker="o", markersize=3, label="gauntlet")
    bottom.axhline(3.0, color="grey", linestyle=":", linewidth=0.8)
    bottom.set_ylabel("% of the wall time")
    bottom.set_xlabel("minute of the run")
    bottom.set_ylim(bottom=0)
    bottom.legend(fontsize="small")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    return save_figure(fig, path)


PHASES = {"fill": fill, "first_open": first_open, "training": training_process, "show": league_show}


def _child(phase: str, run_dir: Path, snapshots: int, matches: int) -> dict[str, float]:
    """Runs one phase in a fresh interpreter; returns its figures."""
    args = [sys.executable, "-m", "arena.bench.league_scale", "--phase", phase, "--dir", str(run_dir),
            "--snapshots", str(snapshots), "--matches", str(matches)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"league-scale phase {phase} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(snapshots: int, matches: int, root: Path) -> dict[str, float]:
    run_dir = root / f"league-{snapshots}-{matches}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    figures: dict[str, float] = {"snapshots": snapshots, "matches": matches}
    for phase in ("fill", "first_open", "training", "show"):
        figures.update(_child(phase, run_dir, snapshots, matches))
        print(f"  {snapshots:>6,} snapshots, {matches:>10,} matches: {phase} done", flush=True)
    db = run_dir / "league.sqlite"
    figures["store_mib"] = sum(p.stat().st_size for p in db.parent.glob("league.sqlite*")) / 2**20
    figures["store_bytes_per_match"] = figures["store_mib"] * 2**20 / matches
    return figures


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench league-scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots", type=int, nargs="+", default=None,
                        help="snapshot counts (default: 50, 2000, 20000 at 1M matches and 20000 at 10M)")
    parser.add_argument("--matches", type=int, nargs="+", default=None,
                        help="match counts, one per --snapshots value (or one for all)")
    parser.add_argument("--dir", default=None,
                        help="where the stores are built (default: a temp dir, removed)")
    parser.add_argument("--update-seconds", type=float, default=2.5,
                        help="an update's wall time the league work is a share of (default 2.5: the median "
                             "update of a default selfplay league on the 2-core VM)")
    parser.add_argument("--week-matches", type=float, default=19.3 * 86400 * 7,
                        help="matches in a week, for the disk projection (default: 19.3 a second)")
    parser.add_argument("--json", default=None, help="write the figures as a JSON record here")
    parser.add_argument("--long-run", type=float, default=None, metavar="MINUTES",
                        help="instead of the synthetic stores: a real league run of MINUTES (a snapshot "
                             "every 100k samples), memory and league work sampled every minute, then "
                             "league show; into --dir (default runs/league-long-run)")
    parser.add_argument("overrides", nargs="*", help="with --long-run: extra overrides for arena.train")
    parser.add_argument("--phase", choices=sorted(PHASES), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.long_run is not None:
        run_dir = Path(args.dir or "runs/league-long-run")
        if run_dir.exists():
            parser.error(f"--dir {run_dir} exists; a long run starts a new league")
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        figures = long_run(run_dir, args.long_run, list(args.overrides))
        rss = [s["rss_mib"] for s in figures["samples"]]
        late = [m for m in figures["per_minute"] if m["minute"] >= 2]
        print(f"\n{figures['players']} players, {figures['matches']:,} matches after {args.long_run:g} "
              "minutes")
        if rss:
            print(f"resident memory: {rss[min(3, len(rss) - 1)]:.0f} MiB at minute ~4, {rss[-1]:.0f} MiB at "
                  f"the end, peak {max(s['peak_mib'] for s in figures['samples']):.0f} MiB")
        if late:
            print(f"league work (gauntlet aside) per minute from minute 2: "
                  f"{min(m['league_share'] for m in late):.2%} to {max(m['league_share'] for m in late):.2%} "
                  f"of the wall time; per update {late[0]['league_ms_per_update']:.0f} ms first, "
                  f"{late[-1]['league_ms_per_update']:.0f} ms last")
        print(f"league show: {figures['show_s']:.1f} s, peak {figures['show_peak_mib']:.0f} MiB")
        print(f"wrote {figures['plot']}")
        if args.json:
            print(f"wrote {write_record(args.json, 'league-scale', argv, figures)}")
        return 0
    if args.phase is not None:  # a child process: one phase, its figures as the last line
        run_dir = Path(args.dir)
        if args.phase == "fill":
            figures = fill(run_dir, args.snapshots[0], args.matches[0])
        elif args.phase in ("training", "first_open"):
            figures = PHASES[args.phase](run_dir, args.matches[0])
        else:
            figures = PHASES[args.phase](run_dir)
        print(json.dumps(figures))
        return 0
    if args.snapshots is None:
        sizes = list(SIZES) if args.matches is None else [(s, args.matches[0]) for s, _ in SIZES]
    else:
        matches = args.matches or [1_000_000]
        if len(matches) not in (1, len(args.snapshots)):
            parser.error("--matches takes one value, or one per --snapshots value")
        sizes = [(s, matches[0] if len(matches) == 1 else matches[i]) for i, s in enumerate(args.snapshots)]
    for s, m in sizes:
        if s < 1 or m < MATCHES_PER_UPDATE:
            parser.error(f"--snapshots {s} must be >= 1 and --matches {m} >= {MATCHES_PER_UPDATE}")
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="league-scale-"))
    results = []
    try:
        for snapshots, matches in sizes:
            results.append(measure(snapshots, matches, root))
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    rows = [
        ("resume, no mark (s)", "open_without_mark_s", "{:.2f}"),
        ("  its peak memory (MiB)", "open_without_mark_peak_mib", "{:.0f}"),
        ("resume + rollback from a mark (s)", "resume_s", "{:.2f}"),
        ("  matches rolled back", "rolled_back", "{:.0f}"),
        ("record an update's matches (ms)", "record_ms", "{:.1f}"),
        ("matchmaking (ms)", "matchmaking_ms", "{:.1f}"),
        ("gate win rates (ms)", "gate_ms", "{:.1f}"),
        ("metrics (ms)", "metrics_ms", "{:.1f}"),
        ("first view of a process (ms)", "first_view_ms", "{:.0f}"),
        ("a later view with the payoff PNG (ms)", "view_ms", "{:.0f}"),
        ("a later view without it (ms)", "chart_view_ms", "{:.0f}"),
        ("league work per update (ms)", "league_work_per_update_ms", "{:.1f}"),
        ("  share of a {u:g} s update", "share", "{:.2%}"),
        ("training process resident (MiB)", "rss_mib", "{:.0f}"),
        ("training process peak (MiB)", "peak_mib", "{:.0f}"),
        ("league show (s)", "show_s", "{:.2f}"),
        ("league show peak (MiB)", "show_peak_mib", "{:.0f}"),
        ("store on disk (MiB)", "store_mib", "{:.0f}"),
        ("store bytes per match", "store_bytes_per_match", "{:.0f}"),
    ]
    for r in results:
        r["share"] = r["league_work_per_update_ms"] / 1000.0 / args.update_seconds
    base = results[0]
    print("\nleague-scale (midrange 1v1 league, default config)")
    labels = [f"{r['snapshots']:,} / {r['matches'] / 1e6:g}M" for r in results]
    header = "".join(f"{label:>18}" for label in labels)
    print(f"{'snapshots / matches':36}{header}")
    for label, key, fmt in rows:
        cells = "".join(f"{fmt.format(r[key]):>18}" for r in results)
        print(f"{label.format(u=args.update_seconds):36}{cells}")
    print(f"{'resident memory vs the first size':36}"
          + "".join(f"{r['rss_mib'] / base['rss_mib']:>17.2f}x" for r in results))
    week = max(results, key=lambda r: r["matches"])["store_bytes_per_match"] * args.week_matches / 2**30
    kept = RetentionConfig.keep_recent + RetentionConfig.keep_top
    print(f"a week's store at {args.week_matches:,.0f} matches: {week:.2f} GiB; retention keeps ~{kept} "
          "snapshot files (league.retention: keep_recent + keep_top), ~0.5 MiB each in midrange")
    if args.json:
        path = write_record(args.json, "league-scale", argv,
                            {"sizes": results, "update_seconds": args.update_seconds,
                             "week_matches": args.week_matches, "week_store_gib": week})
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
