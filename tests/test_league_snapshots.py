"""Snapshot files: atomic immutable writes, sha256 verification, and the snapshot gate."""

import hashlib
import os
import stat

import pytest

from arena.league.model import snapshots
from arena.league.model.snapshots import (
    SnapshotGate,
    SnapshotIntegrityError,
    load_snapshot,
    sha256_file,
    verify_snapshot,
    write_snapshot,
)


def test_write_bytes_returns_sha256_and_leaves_only_a_read_only_file(tmp_path):
    path = tmp_path / "snaps" / "learner-000001.pt"
    digest = write_snapshot(path, b"weights")
    assert digest == hashlib.sha256(b"weights").hexdigest() == sha256_file(path)
    assert path.read_bytes() == b"weights"
    assert os.listdir(path.parent) == [path.name]
    assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    verify_snapshot(path, digest)


def test_state_dict_round_trips_through_torch(tmp_path):
    torch = pytest.importorskip("torch")
    state = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.zeros(3)}
    digest = write_snapshot(tmp_path / "s.pt", state)
    loaded = load_snapshot(tmp_path / "s.pt", digest)
    assert torch.equal(loaded["w"], state["w"]) and torch.equal(loaded["b"], state["b"])
    # The same weights hash the same wherever they are written, so a resumed run can rewrite them.
    assert write_snapshot(tmp_path / "other.pt", state) == digest
    assert write_snapshot(tmp_path / "s.pt", state) == digest


def test_snapshots_are_immutable(tmp_path):
    path = tmp_path / "s.pt"
    digest = write_snapshot(path, b"one")
    assert write_snapshot(path, b"one") == digest  # same content again: no-op (resume)
    with pytest.raises(FileExistsError, match="immutable"):
        write_snapshot(path, b"two")
    assert path.read_bytes() == b"one"
    assert os.listdir(tmp_path) == ["s.pt"]


def test_a_crash_before_the_rename_leaves_no_file(tmp_path, monkeypatch):
    def crash(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(snapshots.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        write_snapshot(tmp_path / "s.pt", b"weights")
    assert os.listdir(tmp_path) == []


def test_corrupted_file_fails_verification_naming_both_hashes(tmp_path):
    path = tmp_path / "s.pt"
    digest = write_snapshot(path, b"weights")
    path.chmod(0o644)
    path.write_bytes(b"weightz")
    with pytest.raises(SnapshotIntegrityError, match=f"recorded {digest}"):
        verify_snapshot(path, digest)
    with pytest.raises(SnapshotIntegrityError):
        load_snapshot(path, digest)
    with pytest.raises(FileNotFoundError):
        verify_snapshot(tmp_path / "missing.pt", digest)


def test_bad_snapshot_data_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="bytes or a state dict"):
        write_snapshot(tmp_path / "s.pt", "text")


def test_gate_every_n_steps():
    gate = SnapshotGate(every_steps=1000)
    assert not gate.should_snapshot(999, None, {})
    assert gate.should_snapshot(1000, None, {})
    assert not gate.should_snapshot(1500, 1000, {})
    assert gate.should_snapshot(2000, 1000, {})
    assert not gate.should_snapshot(2000, 2000, {})


def test_gate_beat_all_needs_every_member_above_threshold_with_enough_games():
    gate = SnapshotGate(beat_all_threshold=0.7, min_games=20)
    assert gate.should_snapshot(10, 0, {"a": (0.8, 20), "b": (0.71, 50)})
    assert not gate.should_snapshot(10, 0, {"a": (0.8, 20), "b": (0.7, 50)})   # not above
    assert not gate.should_snapshot(10, 0, {"a": (0.8, 19), "b": (0.9, 50)})   # too few games
    assert not gate.should_snapshot(10, 0, {})                                 # no evidence
    assert not gate.should_snapshot(10, 10, {"a": (1.0, 100)})                 # same step


def test_gate_either_criterion_fires():
    gate = SnapshotGate(every_steps=1000, beat_all_threshold=0.6, min_games=5)
    assert gate.should_snapshot(100, 0, {"a": (0.9, 10)})
    assert gate.should_snapshot(1100, 100, {"a": (0.1, 10)})
    assert not gate.should_snapshot(200, 100, {"a": (0.5, 10)})


def test_a_learner_judged_on_the_same_games_is_not_frozen_again_within_min_steps():
    gate = SnapshotGate(every_steps=None, beat_all_threshold=0.7, min_games=20, min_steps=1000)
    beaten = {"learner": (0.9, 100)}
    assert gate.should_snapshot(40, None, beaten)  # the first snapshot is not held back
    assert not gate.should_snapshot(41, 40, beaten)
    assert not gate.should_snapshot(1039, 40, beaten)
    assert gate.should_snapshot(1040, 40, beaten)
    assert not gate.should_snapshot(5000, 40, {"learner": (0.6, 100)})  # the wait is not a timer
    timed = SnapshotGate(every_steps=500, beat_all_threshold=0.7, min_games=20, min_steps=1000)
    assert timed.should_snapshot(540, 40, {"learner": (0.1, 100)})  # the timer does not wait


def test_a_main_exploiter_that_goes_on_waits_half_its_snapshot_period_for_its_next_snapshot():
    from arena.league.config import MainExploiterConfig

    config = MainExploiterConfig()
    gate = SnapshotGate.of(config.snapshot)
    beaten = {"learner": (0.9, 100)}
    assert gate.should_snapshot(300_000, None, beaten)
    assert not gate.should_snapshot(300_000 + 32_768, 300_000, beaten)
    assert gate.should_snapshot(300_000 + config.snapshot.every_steps // 2, 300_000, beaten)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "every_steps and/or beat_all_threshold"),
    ({"every_steps": 10, "min_steps": -1}, "min_steps=-1 must be an int >= 0"),
    ({"every_steps": 10, "min_steps": 0.5}, "min_steps=0.5 must be an int >= 0"),
    ({"every_steps": 0}, "every_steps=0 must be a positive int"),
    ({"beat_all_threshold": 1.2}, "beat_all_threshold=1.2 must be in"),
    ({"every_steps": 10, "min_games": -1}, "min_games=-1"),
])
def test_gate_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SnapshotGate(**kwargs)


def test_gate_rejects_bad_win_rates():
    with pytest.raises(ValueError, match="win rate against 'a'"):
        SnapshotGate(beat_all_threshold=0.5).should_snapshot(5, 0, {"a": (1.5, 10)})


def test_another_rank_loads_a_snapshot_only_when_its_bytes_are_the_ones_the_league_recorded(tmp_path):
    import torch

    from arena.agents.policy import Policy
    from arena.league import League, Player
    from arena.league.matchmaking.player_cache import PlayerCache
    from arena.league.run.learner import LeagueMatchmaker, freeze_policy, snapshot_state
    from arena.trainer.opponents import Opponents
    from arena.trainer.snapshot_copies import PlayerFile, SnapshotCopies

    league = League.open(tmp_path)
    league.add_player(Player("learner", "learner"))
    policy = Policy(9, [3], hidden_size=8, lstm_size=8)
    player = freeze_policy(league, tmp_path, "learner", policy, step=10)
    matchmaker = LeagueMatchmaker(league, "learner", chooser=None,  # type: ignore[arg-type]
                                  cache=PlayerCache(league.pool, tmp_path, owner="learner"))
    source = matchmaker.source_of(player.player_id)  # what rank 0 sends the other ranks
    assert source == PlayerFile(str(tmp_path / player.path), player.sha256)
    assert matchmaker.source_of("scripted:cycle") is None

    opponents = Opponents(num_envs=2, team_sizes=(1, 1), game="rpsw")
    copies = SnapshotCopies(capacity=4)
    copies.use(opponents, player.player_id, source)
    assert opponents.has_player(player.player_id)

    # The same file name with other weights (a snapshot replaced behind the league's back): refused.
    file = tmp_path / player.path
    os.chmod(file, 0o644)
    torch.manual_seed(1)
    torch.save(snapshot_state(Policy(9, [3], hidden_size=8, lstm_size=8)), file)
    with pytest.raises(ValueError, match=f"sha256 is [0-9a-f]{{64}}, the league recorded {player.sha256}"):
        SnapshotCopies(capacity=4).use(Opponents(num_envs=2, team_sizes=(1, 1), game="rpsw"),
                                       player.player_id, source)
    league.close()
