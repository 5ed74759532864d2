"""Kill anywhere: ``python -m arena.bench crash --kills 20``.

Runs a real ``python -m arena.train +league=selfplay`` (rpsw, small batches, a checkpoint by wall time
every update, which carries the matches in flight, frequent snapshots and gauntlets, so that a random
moment falls in a store commit, a snapshot write, a checkpoint write or a gauntlet as often as in a
rollout), kills it with SIGKILL at a random moment
after it has made progress, and resumes it with ``trainer.resume=latest``, ``--kills`` times; then lets
a last resume run to its end. After every kill it checks the invariant of the README's reliability
section on the files the killed run left:

- ``PRAGMA integrity_check`` is ok;
- every snapshot player's file exists and matches its sha256, except those retention retired
  (``league.retention``, set to keep 3 recent and 1 best, so it retires at almost every snapshot): a
  retired one's file may outlive a kill between the store's commit and the deletion, and the next
  resume deletes it; after the last resume, which ends normally, none is left;
- the matches the previous resume had to roll back (played by the learner after the checkpoint it
  resumed from) are gone, and every other match committed before that resume is still there;
- the ratings are exactly what replaying the remaining matches from the start gives.

It prints one line per kill and how many were survived; exit status 0 only when all were.
"""

from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from arena.bench.record import write_record
from arena.league.model.ratings import TwoTeamRatings
from arena.league.model.snapshots import sha256_file
from arena.league.model.store import LEAGUE_DB, META_RATINGS, LeagueStore
from arena.trainer.checkpoint import checkpoints_written, load_checkpoint

RUN = ["env=rpsw", "trainer=quick", "+league=selfplay", "dashboard=false", "logger=none",
       "trainer.num_envs=32", "trainer.num_threads=1", "trainer.torch_threads=1",
       "trainer.checkpoint_minutes=0.0001", "league.snapshot.every_steps=1500",
       "league.gauntlet.every_steps=0", "league.gauntlet.games=8",
       # retention retires a snapshot at almost every new one, so kills land inside retirements too
       "league.retention.keep_recent=3", "league.retention.keep_top=1"]
PROGRESS_TIMEOUT_S = 120.0


@dataclass
class KillReport:
    """One kill: when it landed (seconds after the resumed run's first new match), what the store
    held, and the invariant's violations (empty: survived)."""

    kill: int
    delay_s: float
    matches: int
    snapshots: int
    rolled_back: int
    problems: list[str] = field(default_factory=list)

    @property
    def survived(self) -> bool:
        return not self.problems


def _connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def match_ids(db: Path) -> set[int]:
    if not db.is_file():
        return set()
    with _connect(db) as conn:
        return {int(r[0]) for r in conn.execute("SELECT id FROM matches")}


def pending_rollback(run_dir: Path) -> set[int]:
    """The matches a resume of ``run_dir`` must drop: the learner's, tagged with its checkpoint count
    on disk or more (every one of them when there is no checkpoint)."""
    db, checkpoint = run_dir / LEAGUE_DB, run_dir / "checkpoints" / "trainer.pt"
    if not db.is_file():
        return set()
    written = checkpoints_written(checkpoint) if checkpoint.is_file() else 0
    with _connect(db) as conn:
        return {int(r[0]) for r in conn.execute(
            "SELECT match_id FROM match_learners WHERE player_id = 'learner' AND checkpoint >= ?",
            (written,))}


def check_league(run_dir: Path, *, leftovers_allowed: bool = True) -> list[str]:
    """The static half of the invariant: integrity, snapshot files (a retired snapshot's file only
    with ``leftovers_allowed``: a kill between retirement's two steps), ratings equal to a replay."""
    db = run_dir / LEAGUE_DB
    problems = []
    with _connect(db) as conn:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        players = conn.execute("SELECT id, path, sha256 FROM players WHERE kind = 'snapshot'").fetchall()
    with LeagueStore(db, read_only=True) as store:
        retired = store.retired()
    if integrity != "ok":
        problems.append(f"integrity_check: {integrity}")
    for player_id, path, sha in players:
        file = run_dir / path
        if player_id in retired:
            if file.exists() and not leftovers_allowed:
                problems.append(f"retired snapshot {player_id}: its file {file} is still there")
            continue
        if not file.is_file():
            problems.append(f"snapshot {player_id}: {file} is missing")
        elif sha256_file(file) != sha:
            problems.append(f"snapshot {player_id}: {file} does not match its sha256")
    with LeagueStore(db, create=False) as store:
        ratings = TwoTeamRatings(**json.loads(store.meta()[META_RATINGS]))
        rows: dict[int, dict[str, tuple[float, float]]] = {}
        for row in store.rating_history():
            rows.setdefault(row.match_id, {})[row.player_id] = (row.mu, row.sigma)
        for m in store.matches():
            if set(m.team_a) & set(m.team_b):
                if m.match_id in rows:
                    problems.append(f"mirror match {m.match_id} has ratings")
                continue
            replayed = ratings.rate(m.team_a, m.team_b, m.outcome)
            stored = rows.get(m.match_id, {})
            if stored.keys() != replayed.keys() or any(
                    not np.allclose(stored[p], replayed[p], rtol=1e-12, atol=0) for p in replayed):
                problems.append(f"ratings of match {m.match_id} differ from a replay of the matches")
                break
    return problems


def _train(run_dir: Path, log: Path, resume: bool, extra: list[str]) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "arena.train", *RUN, f"run_dir={run_dir}", *extra]
    if resume:
        argv.append("trainer.resume=latest")
    out = open(log, "ab")  # noqa: SIM115 (the child writes it; closed with the process)
    try:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    finally:
        out.close()


def _wait_for_new_match(db: Path, known: set[int], proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the run has committed a match it did not hold before (so its resume and rollback are
    done): then a kill lands in the middle of training."""
    deadline = time.monotonic() + PROGRESS_TIMEOUT_S
    top = max(known, default=0)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text()[-3000:]
            raise RuntimeError(f"training exited ({proc.returncode}) before a kill:\n{tail}")
        if db.is_file():
            try:
                with _connect(db) as conn:
                    newest = conn.execute("SELECT MAX(id) FROM matches").fetchone()[0]
            except sqlite3.OperationalError:  # the schema is not there yet
                newest = None
            if newest is not None and newest > top:
                return
        time.sleep(0.05)
    raise RuntimeError(f"no new match within {PROGRESS_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


def kill_and_resume(run_dir: Path, kills: int, *, seed: int = 0, max_delay_s: float = 4.0,
                    extra: list[str] | None = None, log: Path | None = None,
                    on_kill: object = None) -> tuple[list[KillReport], list[str]]:
    """Kills a league run ``kills`` times at random moments and resumes it each time; then a last resume
    trains 2000 more samples to the end. Returns the kill reports and the final run's problems (a
    nonzero exit included). A report's ``rolled_back`` counts the matches the resume before it had to
    drop; the last resume's count is the final report's, with ``kill`` = ``kills``."""
    rng = np.random.default_rng(seed)
    run_dir, extra = Path(run_dir), list(extra or [])
    db = run_dir / LEAGUE_DB
    log = log or run_dir.parent / f"{run_dir.name}.log"
    reports: list[KillReport] = []
    for k in range(kills):
        before = match_ids(db)
        doomed = pending_rollback(run_dir)
        proc = _train(run_dir, log, resume=db.is_file(), extra=[*extra, "trainer.total_timesteps=1000000000"])
        delay = float(rng.uniform(0.0, max_delay_s))
        try:
            _wait_for_new_match(db, before, proc, log)
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        after = match_ids(db)
        problems = check_league(run_dir)
        if after & doomed:
            problems.append(f"{len(after & doomed)} matches played after the resumed checkpoint "
                            f"survived the resume")
        lost = (before - doomed) - after
        if lost:
            problems.append(f"{len(lost)} committed matches between existing players were lost")
        with _connect(db) as conn:
            snapshots = conn.execute("SELECT COUNT(*) FROM players WHERE kind = 'snapshot'").fetchone()[0]
        report = KillReport(k, delay, len(after), int(snapshots), len(doomed & before), problems)
        reports.append(report)
        if callable(on_kill):
            on_kill(report)

    before, doomed = match_ids(db), pending_rollback(run_dir)
    last = KillReport(kills, 0.0, len(before), reports[-1].snapshots if reports else 0, len(doomed & before))
    checkpoint = run_dir / "checkpoints" / "trainer.pt"
    step = int(load_checkpoint(checkpoint)["counters"]["global_step"]) if checkpoint.is_file() else 0
    proc = _train(run_dir, log, resume=True, extra=[*extra, f"trainer.total_timesteps={step + 2000}"])
    final: list[str] = []
    if proc.wait(timeout=600) != 0:
        final.append(f"the last resume exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
    else:
        after = match_ids(db)
        final += check_league(run_dir, leftovers_allowed=False)
        if after & doomed:
            final.append("matches played after the resumed checkpoint survived the last resume")
        if (before - doomed) - after:
            final.append("committed matches were lost by the last resume")
    last.problems = list(final)
    return [*reports, last], final


def crash_figures(reports: list[KillReport], final: list[str], seconds: float) -> dict:
    """The record's figures: every kill's row, the final resume's verdict, the survivors and the time."""
    return {"kills": [{"kill": r.kill + 1, "at_s": r.delay_s, "matches": r.matches, "snapshots": r.snapshots,
                       "rolled_back": r.rolled_back, "survived": r.survived, "problems": list(r.problems)}
                      for r in reports],
            "final_resume": "ok" if not final else list(final),
            "survived": sum(r.survived for r in reports), "of": len(reports), "seconds": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench crash", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs, each followed by a resume")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument("--max-delay", type=float, default=4.0,
                        help="a kill lands up to this many seconds after the resumed run's first new match")
    parser.add_argument("--run-dir", default=None, help="run directory (default: a temporary one)")
    parser.add_argument("--json", default=None, metavar="PATH", help="write a JSON record of its figures")
    parser.add_argument("overrides", nargs="*", help="extra hydra overrides for the run")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.kills < 1:
        parser.error(f"--kills {args.kills} must be >= 1")
    with tempfile.TemporaryDirectory(prefix="arena-crash-") as tmp:
        run_dir = Path(args.run_dir) if args.run_dir else Path(tmp) / "run"
        print(f"kill anywhere: {args.kills} SIGKILLs of python -m arena.train {' '.join(RUN)} "
              f"run_dir={run_dir}")
        print(f"{'kill':>4} {'at (s)':>7} {'matches':>8} {'snapshots':>9} {'rolled back':>11}  invariant")

        def show(r: KillReport) -> None:
            verdict = "ok" if r.survived else "; ".join(r.problems)
            print(f"{r.kill + 1:>4} {r.delay_s:>7.2f} {r.matches:>8} {r.snapshots:>9} {r.rolled_back:>11}  "
                  f"{verdict}", flush=True)

        start = time.perf_counter()
        reports, final = kill_and_resume(run_dir, args.kills, seed=args.seed, max_delay_s=args.max_delay,
                                         extra=list(args.overrides), log=Path(tmp) / "train.log",
                                         on_kill=show)
        reports = reports[:-1]  # the last one is the final resume's
        survived = sum(r.survived for r in reports)
        print(f"final resume to the end: {'ok' if not final else '; '.join(final)}")
        seconds = time.perf_counter() - start
        print(f"survived {survived} of {len(reports)} kills ({seconds:.0f} s)")
        if args.json:
            print(f"wrote {write_record(args.json, 'crash', argv, crash_figures(reports, final, seconds))}")
        return 0 if survived == len(reports) and not final else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
