"""Retention (league.retention): a long league keeps a bounded set of snapshot files, retires the rest
crash-consistently, and never loses a retired player's history; snapshot files are hashed once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from arena.agents.policy import Policy
from arena.league import League, Player
from arena.league.config import RetentionConfig, league_config
from arena.league.model.snapshots import (
    SnapshotIntegrityError,
    file_stat,
    snapshot_file,
    verify_snapshots,
    write_snapshot,
)
from arena.league.run.league_run import LeagueRun
from arena.league.run.learner import freeze_policy
from arena.league.run.retention import cap_files, finish_retirement, retire_snapshots
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

REPO = Path(__file__).resolve().parents[1]


def _snapshot(league: League, run_dir: Path, index: int, parent: str = "learner") -> Player:
    player_id = f"{parent}:snap-{index:06d}"
    relative = Path("league") / "snapshots" / f"{player_id.replace(':', '_')}.pt"
    sha = write_snapshot(run_dir / relative, os.urandom(64) + bytes([index % 256]))
    return league.add_player(Player(player_id, "snapshot", path=str(relative), sha256=sha, step=index,
                                    parent=parent))


def _league_with_snapshots(run_dir: Path, n: int) -> League:
    league = League.open(run_dir)
    league.add_player(Player("learner", "learner"))
    league.add_player(Player("scripted:a", "scripted"))
    for i in range(n):
        _snapshot(league, run_dir, i)
    rng = np.random.default_rng(0)
    with league.store.batch():
        for _ in range(400):
            opponent = f"learner:snap-{int(rng.integers(n)):06d}"
            league.record_match(["learner"], [opponent], int(rng.integers(-1, 2)))
    return league


def test_retention_keeps_the_newest_the_best_and_the_protected_and_retires_the_rest(tmp_path):
    league = _league_with_snapshots(tmp_path, 12)
    snaps = [p.player_id for p in league.pool.snapshots()]
    best = max(snaps, key=league.ratings.conservative)
    history_before = {r for r in league.store.rating_history()}
    matches_before = league.store.matches()
    retired = retire_snapshots(league, tmp_path, RetentionConfig(keep_recent=3, keep_top=1),
                               protected=[snaps[0]])
    kept = set(snaps[-3:]) | {best, snaps[0]}
    assert set(retired) == set(snaps) - kept
    for player_id in snaps:
        exists = snapshot_file(tmp_path, league.pool.get(player_id)).exists()
        assert exists == (player_id in kept), player_id
    assert {p.player_id for p in league.pool.snapshots()} == kept  # out of the opponent pool
    assert league.store.retired() == set(retired)
    # nothing of their history is lost
    assert {r for r in league.store.rating_history()} == history_before
    assert league.store.matches() == matches_before
    assert league.pool.count_snapshots("learner") == 12
    league.close()
    reopened = League.open(tmp_path)
    assert {p.player_id for p in reopened.pool.snapshots()} == kept
    assert all(p in reopened.pool for p in retired)  # still known by id
    reopened.close()


def test_a_new_snapshot_never_takes_a_retired_ones_index(tmp_path):
    run = LeagueRun(league_config({"retention": {"keep_recent": 1, "keep_top": 0}}), tmp_path, game="rpsw")
    policy = Policy(obs_dim=4, action_nvec=[3], hidden_size=8, lstm_size=8)
    for step in range(4):
        freeze_policy(run.league, tmp_path, "learner", policy, step=step)
        run.retain()
    assert [p.player_id for p in run.league.pool.snapshots()] == ["learner:snap-000003"]
    assert sorted(os.listdir(tmp_path / "league" / "snapshots")) == ["learner_snap-000003.pt"]
    run.close()


def test_disabled_retention_keeps_everything(tmp_path):
    league = _league_with_snapshots(tmp_path, 6)
    assert retire_snapshots(league, tmp_path, RetentionConfig(enabled=False, keep_recent=1, keep_top=0)) == []
    assert len(league.pool.snapshots()) == 6
    league.close()


def test_files_beyond_a_cap_go_oldest_first_with_their_siblings(tmp_path):
    for i in range(5):
        (tmp_path / f"r{i}.npz").write_bytes(b"x")
        (tmp_path / f"r{i}.gif").write_bytes(b"g")
        os.utime(tmp_path / f"r{i}.npz", ns=(10**9 * (i + 1), 10**9 * (i + 1)))
    assert cap_files(tmp_path, ("*.npz", "*.gif"), 2) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r3.gif", "r3.npz", "r4.gif", "r4.npz"]
    assert cap_files(tmp_path / "missing", ("*.npz",), 2) == 0


def test_retention_config_names_bad_values():
    with pytest.raises(ValueError, match="league.retention.keep_top=-1"):
        league_config({"retention": {"keep_top": -1}})
    with pytest.raises(ValueError, match="keep_recent=0"):
        league_config({"retention": {"keep_recent": 0}})


CHILD = '''
import os, sys
from pathlib import Path
from arena.agents.policy import Policy
from arena.league import League, Player
from arena.league.config import RetentionConfig
from arena.league.model.snapshots import write_snapshot
from arena.league.run.retention import retire_snapshots

run_dir = Path(sys.argv[1])
league = League.open(run_dir)
league.add_player(Player("learner", "learner"))
index = league.pool.count_snapshots("learner")
config = RetentionConfig(keep_recent=4, keep_top=0)
while True:
    player_id = f"learner:snap-{index:06d}"
    relative = Path("league") / "snapshots" / f"{player_id.replace(':', '_')}.pt"
    path = run_dir / relative
    if path.exists():  # a file a killed child wrote but never registered
        path.unlink()
    sha = write_snapshot(path, os.urandom(256))
    league.add_player(Player(player_id, "snapshot", path=str(relative), sha256=sha, step=index,
                             parent="learner"))
    retire_snapshots(league, run_dir, config)
    print(index, flush=True)
    index += 1
'''


def test_store_and_files_agree_after_a_sigkill_at_any_point_of_retirement(tmp_path):
    rng = np.random.default_rng(1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            for _ in range(int(rng.integers(3, 9))):
                assert proc.stdout.readline(), proc.stderr.read()
            time.sleep(float(rng.uniform(0.0, 0.02)))  # anywhere inside the next retirement
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        league = League.open(tmp_path)
        finish_retirement(league, tmp_path)
        files = {p.name for p in (tmp_path / "league" / "snapshots").glob("*.pt")}
        registered = {snapshot_file(tmp_path, p).name: p.player_id for p in league.pool.snapshots()}
        for p in league.pool.retired:
            assert snapshot_file(tmp_path, league.pool.get(p)).name not in files  # retired: file gone
        assert set(registered) <= files  # every snapshot in the pool has its file
        assert len(files - set(registered)) <= 1  # at most one written but never registered (replaced)
        league.close()


def test_a_file_is_hashed_again_only_when_its_size_or_mtime_changed(tmp_path):
    league = _league_with_snapshots(tmp_path, 3)
    players = league.pool.snapshots()
    first = verify_snapshots(tmp_path, players, {})
    assert set(first) == {p.player_id for p in players}
    assert verify_snapshots(tmp_path, players, first) == {}  # unchanged: nothing hashed
    path = snapshot_file(tmp_path, players[1])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # same size, restored mtime: only a full check sees it
    stat = os.stat(path)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert file_stat(path) == first[players[1].player_id]
    assert verify_snapshots(tmp_path, players, first) == {}
    with pytest.raises(SnapshotIntegrityError, match="corrupted"):
        verify_snapshots(tmp_path, players, first, verify_all=True)
    path.write_bytes(bytes(data) + b"!")  # a changed size is always hashed
    with pytest.raises(SnapshotIntegrityError, match="corrupted"):
        verify_snapshots(tmp_path, players, first)
    league.close()


def test_view_players_is_capped_by_wandbs_table_rows():
    with pytest.raises(ValueError, match="league.view_players=101 must be at most 100"):
        league_config({"view_players": 101})
    assert league_config({"view_players": 100}).view_players == 100


def test_the_opponent_mix_logs_a_bounded_set_of_keys_however_large_the_pool(tmp_path):
    mix = {"mirror": 0.0, "pfsp": 0.0, "uniform": 1.0, "scripted": 0.0}
    run = LeagueRun(league_config({"matchmaking": {"mix": mix}}), tmp_path, game="rpsw")
    config = TrainerConfig(num_envs=32, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
                           rollout_steps=48, minibatch_size=48 * 4, seed=1,
                           checkpoint_dir=str(tmp_path / "checkpoints"))
    trainer = PPOTrainer(config, PolicyConfig(hidden_size=8, lstm_size=8), game="rpsw",
                         matchmaker=run.matchmaker())
    run.attach(trainer)
    for k in range(20):
        freeze_policy(run.league, tmp_path, "learner", trainer.policy, step=k + 1)
    trainer.evaluate()
    out = run.metrics()
    keys = [k for k in out if k.startswith("league/mix/")]
    snapshot_keys = [k for k in keys if ":snap-" in k]
    assert len(snapshot_keys) <= 8 and "league/mix/older_snapshots" in keys
    assert sum(out[k] for k in keys) == pytest.approx(1.0)
    trainer.close()
    run.close()
