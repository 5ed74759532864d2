"""Crash consistency: periodic checkpoints, a league that agrees with them, one writer per run directory,
clear errors for damaged files (and nothing of the user's touched), all triggered for real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from arena.bench.crash import kill_and_resume
from arena.config import compose_run_config
from arena.league import LEAGUE_DB, League, LeagueStore
from arena.league.model.players import Player
from arena.train import main
from arena.trainer.checkpoint import checkpoints_written, load_checkpoint
from arena.trainer.run_lock import RunDirInUseError, RunLock

ROOT = Path(__file__).resolve().parents[1]
FAST = ["env=rpsw", "trainer=quick", "dashboard=false", "logger=none", "trainer.num_envs=32",
        "trainer.num_threads=1", "trainer.torch_threads=1"]
LEAGUE = [*FAST, "+league=selfplay", "league.snapshot.every_steps=1500", "league.gauntlet.games=0"]
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def league_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished small league run: checkpoint, league store, snapshots."""
    run_dir = tmp_path_factory.mktemp("league") / "run"
    assert main([*LEAGUE, f"run_dir={run_dir}", "trainer.total_timesteps=4000"]) == 0
    return run_dir


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    import shutil

    dest = tmp_path / "run"
    shutil.copytree(run_dir, dest)
    for f in dest.rglob("*"):  # snapshots are read-only; the copy must be writable to be damaged
        if f.is_file():
            f.chmod(0o644)
    return dest


def _store_players(run_dir: Path) -> list[Player]:
    with LeagueStore(run_dir / LEAGUE_DB, create=False) as store:
        return store.players()


# ---------------------------------------------------------------------------------------- checkpoints

def test_the_command_line_checkpoints_every_five_minutes_by_default():
    assert compose_run_config([]).trainer.checkpoint_minutes == 5.0


def test_a_checkpoint_is_written_when_its_minutes_have_passed(tmp_path):
    # 1e-6 minutes have passed by the end of every update: each one writes a checkpoint
    assert main([*FAST, f"run_dir={tmp_path}", "trainer.total_timesteps=3000",
                 "trainer.checkpoint_minutes=0.000001"]) == 0
    payload = load_checkpoint(tmp_path / "checkpoints" / "trainer.pt")
    updates = payload["counters"]["update"]
    assert updates >= 2 and payload["counters"]["checkpoints_written"] == updates + 1  # + the one at exit


def test_checkpoint_minutes_must_not_be_negative(capsys):
    assert main([*FAST, "trainer.checkpoint_minutes=-1", "run_dir=/nonexistent/run"]) == 2
    assert "checkpoint_minutes=-1" in capsys.readouterr().err


def test_exploiters_checkpoint_by_wall_time_too_and_tag_their_matches(tmp_path):
    run_dir = tmp_path / "run"
    argv = [*FAST, "+league=alphastar", f"run_dir={run_dir}", "trainer.total_timesteps=3000",
            "trainer.checkpoint_minutes=0.000001", "league.gauntlet.games=0",
            "league.main_exploiter.num_envs=8", "league.league_exploiter.num_envs=8",
            "league.main_exploiter.snapshot.every_steps=100000", "league.league_exploiter.reset_prob=0.0"]
    assert main(argv) == 0
    for player_id in ("main_exploiter-0", "league_exploiter-0"):
        payload = load_checkpoint(run_dir / "checkpoints" / player_id / "trainer.pt")
        # one after each of its updates, and the one at exit
        assert payload["counters"]["checkpoints_written"] == payload["counters"]["update"] + 1 >= 3, player_id
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        tags = store.match_checkpoints()
        matches = {m.match_id: m for m in store.matches()}
    exploiter_vs_main = [i for i, m in matches.items() if m.team_a == ("main_exploiter-0",)]
    assert exploiter_vs_main
    assert all(set(tags[i]) == {"main_exploiter-0", "learner"} for i in exploiter_vs_main)


def test_a_checkpoint_write_that_hits_the_file_size_limit_leaves_the_previous_checkpoint_loadable(tmp_path):
    """A full disk, for real: RLIMIT_FSIZE makes the write fail half-way (EFBIG)."""
    path = tmp_path / "trainer.pt"
    child = textwrap.dedent(f"""
        import resource, signal, sys, torch
        from arena.trainer.checkpoint import atomic_save
        atomic_save({{"weights": torch.zeros(10)}}, {str(path)!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # fail the write with EFBIG instead of dying
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
        try:
            atomic_save({{"weights": torch.ones(1_000_000)}}, {str(path)!r})
        except OSError as exc:
            print("write failed:", exc.errno)
            sys.exit(0)
        sys.exit("the oversized write did not fail")
    """)
    done = subprocess.run([sys.executable, "-c", child], env=ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "write failed" in done.stdout
    import torch

    assert torch.equal(torch.load(path, weights_only=True)["weights"], torch.zeros(10))
    assert [p.name for p in tmp_path.iterdir()] == ["trainer.pt"]  # no temporary file left behind


# ---------------------------------------------------------------------------------------- the league

def test_every_match_is_tagged_with_the_checkpoints_its_learner_had_written(league_run):
    written = checkpoints_written(league_run / "checkpoints" / "trainer.pt")
    with LeagueStore(league_run / LEAGUE_DB, create=False) as store:
        tags = store.match_checkpoints()
        matches = store.matches()
    assert {m.match_id for m in matches} == set(tags)
    counts = {tag["learner"] for tag in tags.values()}
    assert min(counts) == 0 and max(counts) < written  # a clean exit leaves nothing to roll back
    steps = [m.learner_step for m in matches]
    assert steps == sorted(steps)


def _store_with_tagged_matches(path: Path) -> LeagueStore:
    from arena.league.model.ratings import Ratings

    store = LeagueStore(path)
    store.add_player(Player("learner", "learner"))
    store.add_player(Player("scripted:a", "scripted"))
    store.add_player(Player("snap", "snapshot", path="snap.pt", sha256="0" * 64, step=0, parent="learner"))
    ratings = Ratings()
    plan = [("scripted:a", 1, 0), ("snap", -1, 0), ("learner", 0, 1), ("scripted:a", 1, 1), ("snap", 0, 2),
            ("scripted:a", -1, 2), ("snap", 1, 3)]
    for opponent, outcome, checkpoint in plan:
        new = {} if opponent == "learner" else ratings.rate(["learner"], [opponent], outcome)
        store.record_match(["learner"], [opponent], outcome, ratings=new, checkpoints={"learner": checkpoint},
                           learner_step=checkpoint * 100)
    return store


def test_rollback_removes_the_matches_after_the_checkpoint_and_rerates_nothing_else(tmp_path):
    from arena.league.model.ratings import Ratings

    store = _store_with_tagged_matches(tmp_path / LEAGUE_DB)
    before = store.rating_history()
    league = League(store)
    assert league.rollback("learner", 2) == 3  # the matches tagged 2 and 3
    assert [m.match_id for m in store.matches()] == [1, 2, 3, 4]
    assert store.rating_history() == [r for r in before if r.match_id <= 4]
    assert league.match_count == 4 and league.payoff.games("learner", "snap") == 1
    replay = Ratings()
    for m in store.matches():
        if "learner" not in m.team_b:
            replay.rate(m.team_a, m.team_b, m.outcome)
    got, expected = league.ratings.as_dict(), replay.as_dict()
    assert got.keys() == expected.keys()
    for player_id, rating in got.items():
        assert rating == pytest.approx(expected[player_id])
    assert league.rollback("learner", 2) == 0  # nothing left to roll back
    store.close()


def test_rollback_rerates_the_remaining_matches_after_the_first_removed_one(tmp_path):
    from arena.league.model.ratings import Ratings

    store = _store_with_tagged_matches(tmp_path / LEAGUE_DB)
    # an exploiter's match (not the learner's) between removed ones stays and is re-rated
    store.add_player(Player("main_exploiter-0", "main_exploiter"))
    store.record_match(["main_exploiter-0"], ["snap"], 1, ratings={"main_exploiter-0": (30.0, 7.0),
                                                                   "snap": (20.0, 7.0)},
                       checkpoints={"main_exploiter-0": 0})
    league = League(store)
    assert league.rollback("learner", 1) == 5
    kept = store.matches()
    assert [m.match_id for m in kept] == [1, 2, 8]
    replay = Ratings()
    expected = {}
    for m in kept:
        if not set(m.team_a) & set(m.team_b):
            expected[m.match_id] = replay.rate(m.team_a, m.team_b, m.outcome)
    history = {}
    for row in store.rating_history():
        history.setdefault(row.match_id, {})[row.player_id] = (row.mu, row.sigma)
    assert history.keys() == expected.keys()
    for match_id, rated in expected.items():
        assert history[match_id].keys() == rated.keys()
        for player_id, rating in rated.items():
            assert history[match_id][player_id] == pytest.approx(rating)
    store.close()


def test_kill_anywhere_a_league_run_resumes_consistent_every_time(tmp_path):
    """The short version of ``python -m arena.bench crash --kills 20``: real SIGKILLs, real resumes."""
    reports, final = kill_and_resume(tmp_path / "run", kills=3, seed=1, max_delay_s=3.0)
    assert len(reports) == 4  # 3 kills and the last resume
    # A kill that lands right after a checkpoint leaves nothing to roll back (8 of 20 kills did in one
    # run of the bench): until a resume has had matches to drop, the same run is killed 3 more times,
    # up to 3 more rounds, so that the rollback is exercised whatever the machine's timing.
    for extra_seed in (2, 3, 4):
        if sum(r.rolled_back for r in reports) > 0 or final:
            break
        more, final = kill_and_resume(tmp_path / "run", kills=3, seed=extra_seed, max_delay_s=3.0)
        reports += more
    for report in reports:
        assert report.survived, report.problems
    assert sum(r.rolled_back for r in reports) > 0  # the resumes did have matches to roll back
    assert not final, final


def test_resume_latest_of_a_league_killed_before_its_first_checkpoint_starts_a_fresh_learner(league_run,
                                                                                           tmp_path):
    run_dir = _copy(league_run, tmp_path)
    (run_dir / "checkpoints" / "trainer.pt").unlink()  # as if killed before the first checkpoint
    snapshots = [p for p in _store_players(run_dir) if p.kind == "snapshot"]
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        old_steps = [m.learner_step for m in store.matches()]
    assert main([*LEAGUE, f"run_dir={run_dir}", "trainer.resume=latest", "trainer.total_timesteps=2000"]) == 0
    new_step = load_checkpoint(run_dir / "checkpoints" / "trainer.pt")["counters"]["global_step"]
    assert max(old_steps) > new_step  # the old learner went further than the new one
    assert [p for p in _store_players(run_dir) if p.kind == "snapshot"][: len(snapshots)] == snapshots  # kept
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        matches = store.matches()
    # every match left was played by the new learner: the old one's state is in no checkpoint
    assert matches and all(m.learner_step < new_step for m in matches)
    assert matches[0].match_id > len(old_steps)


def _hold_lock(run_dir: Path) -> subprocess.Popen[str]:
    child = textwrap.dedent(f"""
        import sys, time
        from arena.trainer.run_lock import RunLock
        lock = RunLock({str(run_dir)!r}).acquire()
        print("locked", flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], env=ENV, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_trainer_on_a_run_dir_in_use_is_refused_naming_the_holders_pid(tmp_path, capsys):
    holder = _hold_lock(tmp_path)
    try:
        assert main([*FAST, f"run_dir={tmp_path}", "trainer.total_timesteps=1000"]) == 2
        err = capsys.readouterr().err
        assert f"in use by process {holder.pid}" in err and str(tmp_path) in err
        assert not (tmp_path / "checkpoints").exists()  # it touched nothing
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_left_by_a_killed_run_is_taken_over(tmp_path, caplog):
    holder = _hold_lock(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with caplog.at_level("WARNING"), RunLock(tmp_path):
        with pytest.raises(RunDirInUseError, match=str(os.getpid())):
            RunLock(tmp_path).acquire()  # held by this process now: a second holder is refused
    assert f"process {holder.pid}, which is gone" in caplog.text
    RunLock(tmp_path).acquire().release()  # released: free again


def test_readers_open_the_league_read_only_while_a_run_holds_the_lock(league_run, tmp_path):
    from arena.league.view.plots import show

    run_dir = _copy(league_run, tmp_path)
    files = _tree(run_dir)
    with RunLock(run_dir):
        view = show(run_dir, tmp_path / "plots")
        assert view.rows
        with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
            assert store.match_count() > 0
            with pytest.raises(Exception, match="readonly"):
                store.add_player(Player("intruder", "scripted"))
    assert {k: v for k, v in _tree(run_dir).items() if not k.endswith(("-wal", "-shm"))} == {
        k: v for k, v in files.items() if not k.endswith(("-wal", "-shm"))}


# ---------------------------------------------------------------------------------------- bad files

def _resume(run_dir: Path) -> list[str]:
    return [*LEAGUE, f"run_dir={run_dir}", "trainer.resume=latest", "trainer.total_timesteps=100000"]


def _tree(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name != ".arena.lock"}


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_damaged_checkpoint_is_refused_naming_the_file_and_nothing_is_changed(league_run, tmp_path, capsys,
                                                                                damage):
    run_dir = _copy(league_run, tmp_path)
    checkpoint = run_dir / "checkpoints" / "trainer.pt"
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2] if damage == "truncated" else bytes(b ^ 0x5A for b in data))
    files = _tree(run_dir)
    assert main(_resume(run_dir)) == 2
    err = capsys.readouterr().err
    assert str(checkpoint) in err and "restore it from a backup" in err
    assert _tree(run_dir) == files


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_a_damaged_league_store_is_refused_naming_the_file_and_nothing_is_changed(league_run, tmp_path,
                                                                                  capsys, damage):
    run_dir = _copy(league_run, tmp_path)
    db = run_dir / LEAGUE_DB
    for side in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        side.unlink(missing_ok=True)  # the clean exit checkpointed the WAL into the file
    data = db.read_bytes()
    db.write_bytes(data[:1000] if damage == "truncated" else b"\0" * 100 + data[100:])
    files = _tree(run_dir)
    assert main(_resume(run_dir)) == 2
    err = capsys.readouterr().err
    assert str(db) in err and "restore it from a backup" in err
    assert {k: v for k, v in _tree(run_dir).items() if not k.endswith(("-wal", "-shm"))} == files


@pytest.mark.parametrize("damage", ["changed", "missing"])
def test_a_snapshot_that_no_longer_matches_its_sha256_stops_the_resume_naming_the_file(league_run, tmp_path,
                                                                                      capsys, damage):
    run_dir = _copy(league_run, tmp_path)
    snapshot = next(p for p in _store_players(run_dir) if p.kind == "snapshot")
    path = run_dir / str(snapshot.path)
    if damage == "changed":
        path.write_bytes(path.read_bytes()[:-1] + b"x")
    else:
        path.unlink()
    files = _tree(run_dir)
    assert main(_resume(run_dir)) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "restore that file from a backup" in err
    assert {k: v for k, v in _tree(run_dir).items() if not k.endswith(("-wal", "-shm"))} == {
        k: v for k, v in files.items() if not k.endswith(("-wal", "-shm"))}


# ---------------------------------------------------------------------------------------- file names

def test_snapshot_files_have_portable_names_and_old_colon_names_still_load(league_run, tmp_path):
    from arena.league.matchmaking.player_cache import load_frozen_policy

    snapshots = [p for p in _store_players(league_run) if p.kind == "snapshot"]
    assert snapshots and all(":" not in Path(str(p.path)).name for p in snapshots)
    # a run directory written by an older arena: the file named after the id, colon included
    old_dir = tmp_path / "old"
    (old_dir / "league" / "snapshots").mkdir(parents=True)
    source = league_run / str(snapshots[0].path)
    old_name = Path("league") / "snapshots" / f"{snapshots[0].player_id}.pt"
    (old_dir / old_name).write_bytes(source.read_bytes())
    old = Player(snapshots[0].player_id, "snapshot", path=str(old_name), sha256=snapshots[0].sha256,
                 step=snapshots[0].step, parent="learner")
    assert load_frozen_policy(old_dir, old).spec == load_frozen_policy(league_run, snapshots[0]).spec
