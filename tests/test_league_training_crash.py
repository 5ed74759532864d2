"""A league run killed with SIGKILL resumes with the league exactly as it was committed, less the
matches played by a learner state that no checkpoint holds (rolled back, the rest re-rated)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.league import LEAGUE_DB, League, LeagueStore, PayoffTable, sha256_file, snapshot_id
from arena.league.model.ratings import TwoTeamRatings
from arena.league.model.store import META_DECAY, META_RATINGS
from arena.train import main
from arena.trainer.checkpoint import checkpoints_written, load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
RUN = [
    "env=rpsw", "trainer=quick", "+league=selfplay", "dashboard=false", "trainer.num_envs=32",
    "trainer.num_threads=1", "trainer.torch_threads=1", "trainer.checkpoint_interval=1000",
    "league.snapshot.every_steps=1500",
]


def _read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def _tables(db: Path) -> dict[str, list[tuple]]:
    with _read_only(db) as conn:
        return {
            "players": conn.execute("SELECT id, kind, path, sha256, step, parent FROM players ORDER BY rowid")
            .fetchall(),
            "matches": conn.execute("SELECT * FROM matches ORDER BY id").fetchall(),
            "ratings": conn.execute("SELECT * FROM ratings ORDER BY match_id, player_id").fetchall(),
        }


def _integrity(db: Path) -> str:
    with _read_only(db) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def _wait_for_progress(db: Path, checkpoint: Path, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"training exited early ({proc.returncode}):\n{log.read_text()[-3000:]}")
        if db.is_file() and checkpoint.is_file():
            try:
                with _read_only(db) as conn:
                    matches = conn.execute("SELECT COUNT(*) FROM matches").fetchone()[0]
                    snaps = conn.execute("SELECT COUNT(*) FROM players WHERE kind = 'snapshot'").fetchone()[0]
            except sqlite3.OperationalError:  # the schema is not there yet
                matches = snaps = 0
            if matches >= 300 and snaps >= 2:
                return
        time.sleep(0.2)
    pytest.fail(f"no progress before the deadline:\n{log.read_text()[-3000:]}")


def _replayed(store: LeagueStore) -> tuple[TwoTeamRatings, PayoffTable]:
    """Ratings and payoff rebuilt from nothing but the match history, checking every rating row."""
    meta = store.meta()
    ratings = TwoTeamRatings(**json.loads(meta[META_RATINGS]))  # what training rates with
    payoff = PayoffTable(float(json.loads(meta[META_DECAY])))
    rows: dict[int, dict[str, tuple[float, float]]] = {}
    for row in store.rating_history():
        rows.setdefault(row.match_id, {})[row.player_id] = (row.mu, row.sigma)
    for m in store.matches():
        payoff.record_teams(m.team_a, m.team_b, m.outcome)
        if set(m.team_a) & set(m.team_b):
            assert m.match_id not in rows  # mirror matches are not rated
            continue
        assert ratings.rate(m.team_a, m.team_b, m.outcome) == rows[m.match_id], m.match_id
    return ratings, payoff


def test_a_league_run_killed_with_sigkill_resumes_from_what_the_store_committed_up_to_its_checkpoint(
        tmp_path):
    run_dir = tmp_path / "run"
    db, checkpoint = run_dir / LEAGUE_DB, run_dir / "checkpoints" / "trainer.pt"
    log = tmp_path / "train.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "arena.train", *RUN, f"run_dir={run_dir}",
            "trainer.total_timesteps=100000000"]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_for_progress(db, checkpoint, proc, log)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    # What the killed run committed: a consistent store, snapshot files that match their hashes.
    assert _integrity(db) == "ok"
    before = _tables(db)
    for player_id, kind, path, sha, _, _ in before["players"]:
        if kind == "snapshot":
            assert sha256_file(run_dir / path) == sha, player_id
    with LeagueStore(db, create=False) as store:
        committed_ratings, committed_payoff = _replayed(store)
    league = League.open(run_dir)  # what the resumed run loads
    try:
        assert league.match_count == len(before["matches"])
        assert league.ratings.as_dict() == committed_ratings.as_dict()
        for a, b in committed_payoff.pairs():
            assert league.payoff.wdl(a, b) == pytest.approx(committed_payoff.wdl(a, b), abs=1e-9)
    finally:
        league.close()

    # Resume for a few thousand more samples: a checkpoint every update (>= 1000 samples) means the store
    # is at most one update ahead of it, so 4000 more samples pass the next snapshot step.
    step = int(load_checkpoint(checkpoint)["counters"]["global_step"])
    resume = [*RUN, f"run_dir={run_dir}", "trainer.resume=latest", f"trainer.total_timesteps={step + 4000}"]
    # The matches the learner played after writing that checkpoint were played by a state the resumed
    # run does not have: they are rolled back, everything before them stays as it was.
    written = checkpoints_written(checkpoint)
    with _read_only(db) as conn:
        lost = {r[0] for r in conn.execute(
            "SELECT match_id FROM match_learners WHERE player_id = 'learner' AND checkpoint >= ?",
            (written,))}
        tagged = conn.execute("SELECT COUNT(DISTINCT match_id) FROM match_learners").fetchone()[0]
    assert tagged == len(before["matches"])  # every match carries its learner's checkpoint count
    first_lost = min(lost, default=before["matches"][-1][0] + 1)
    assert all(m[0] >= first_lost for m in before["matches"] if m[0] in lost)
    assert main(resume) == 0

    assert _integrity(db) == "ok"
    after = _tables(db)
    assert after["players"][: len(before["players"])] == before["players"]
    kept = [m for m in before["matches"] if m[0] not in lost]
    assert after["matches"][: len(kept)] == kept
    def ratings_before_first_lost(rows: list[tuple]) -> list[tuple]:
        return [r for r in rows if r[0] < first_lost]

    assert ratings_before_first_lost(after["ratings"]) == ratings_before_first_lost(before["ratings"])
    old_ids = [m[0] for m in before["matches"]]
    new_ids = [m[0] for m in after["matches"][len(kept):]]
    assert new_ids and new_ids == list(range(old_ids[-1] + 1, old_ids[-1] + 1 + len(new_ids)))
    old_snapshots = sum(kind == "snapshot" for _, kind, *_ in before["players"])
    new_snapshots = [pid for pid, kind, *_ in after["players"][len(before["players"]):] if kind == "snapshot"]
    assert new_snapshots and new_snapshots[0] == snapshot_id("learner", old_snapshots)
    with LeagueStore(db, create=False) as store:
        _replayed(store)  # every rating after the resume continues from the committed ones
    resumed = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert resumed[-1]["league/matches"] == len(after["matches"])
