"""Training can keep a replay of its gauntlet games: ``league.gauntlet.replays: N`` saves the first N games
of every new snapshot against each reference as ``RUN_DIR/replays/<snapshot>-vs-<ref>.npz``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from arena.agents.players import game_spaces
from arena.agents.policy import Policy
from arena.league.config import league_config
from arena.league.run.gauntlet import Gauntlet
from arena.replay.file import load_replay
from arena.replay.simulate import check_replay

CLOSE = {"time_limit_s": 60, "spawn_distance_min_m": 15000, "spawn_distance_max_m": 20000}


@pytest.fixture
def snapshot_file(tmp_path, one_torch_thread):
    torch.manual_seed(0)
    spaces = game_spaces("midrange", (1, 1), CLOSE)
    policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden_size=8, lstm_size=8)
    path = tmp_path / "learner_snap-000003.pt"
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    return path


def test_a_gauntlet_saves_its_first_games_against_each_reference(snapshot_file, tmp_path):
    replays = tmp_path / "run" / "replays"
    gauntlet = Gauntlet(["scripted:heuristic", "scripted:evader"], 4, game="midrange", team_sizes=(1, 1),
                        overrides=CLOSE, seed=5, num_threads=1, replays=2, replay_dir=replays)
    records = gauntlet.play("learner:snap-000003", snapshot_file, learner_step=300)
    assert [r.games for r in records] == [4, 4]
    assert sorted(p.name for p in replays.iterdir()) == [
        "learner_snap-000003-vs-evader-2.npz", "learner_snap-000003-vs-evader.npz",
        "learner_snap-000003-vs-heuristic-2.npz", "learner_snap-000003-vs-heuristic.npz"]
    replay = load_replay(replays / "learner_snap-000003-vs-heuristic.npz")
    assert replay.players[0].name == str(snapshot_file) and replay.players[1].name == "scripted:heuristic"
    assert replay.extra == {"snapshot": "learner:snap-000003", "reference": "scripted:heuristic"}
    assert replay.game_number == 0 and replay.evaluation_seed == 5
    check_replay(replay)


def test_without_replays_a_gauntlet_writes_no_file(snapshot_file, tmp_path):
    gauntlet = Gauntlet(["scripted:evader"], 2, game="midrange", team_sizes=(1, 1), overrides=CLOSE,
                        num_threads=1, replay_dir=tmp_path / "replays")
    gauntlet.play("learner:snap-000003", snapshot_file, learner_step=1)
    assert not (tmp_path / "replays").exists()


def test_gauntlet_replay_settings_are_checked_by_name(tmp_path):
    with pytest.raises(ValueError, match="replays=5 must be an integer in \\[0, games=4\\]"):
        Gauntlet(["scripted:evader"], 4, game="midrange", team_sizes=(1, 1), replays=5, replay_dir=tmp_path)
    with pytest.raises(ValueError, match="replay_dir"):
        Gauntlet(["scripted:evader"], 4, game="midrange", team_sizes=(1, 1), replays=1)
    with pytest.raises(ValueError, match="not 'rpsw'"):
        Gauntlet(["scripted:random"], 4, game="rpsw", team_sizes=(1, 1), replays=1, replay_dir=tmp_path)


def test_the_league_config_takes_a_replay_count_and_refuses_bad_ones():
    assert league_config({}).gauntlet.replays == 0
    assert league_config({"gauntlet": {"replays": 1}}, "midrange").gauntlet.replays == 1
    with pytest.raises(ValueError, match="league.gauntlet.replays=-1"):
        league_config({"gauntlet": {"replays": -1}})
    with pytest.raises(ValueError, match="league.gauntlet.replays=300 must be an integer in \\[0, "
                                         "league.gauntlet.games=200\\]"):
        league_config({"gauntlet": {"replays": 300}})
    with pytest.raises(ValueError, match="not 'rpsw'"):
        league_config({"gauntlet": {"replays": 1}}, "rpsw")
    with pytest.raises(Exception, match="replay_count"):  # a misspelt key is still refused
        league_config({"gauntlet": {"replay_count": 1}})


def test_a_league_run_with_gauntlet_replays_saves_them_and_logs_each_as_a_video(tmp_path):
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "arena.train", "trainer=quick", "dashboard=false", "logger=none",
            "trainer.num_envs=16", "trainer.num_threads=1", "trainer.torch_threads=1",
            "trainer.total_timesteps=3000", "+league=selfplay", "league.snapshot.every_steps=1000",
            "league.gauntlet.games=2", "league.gauntlet.every_steps=0", "league.gauntlet.replays=1",
            "env.time_limit_s=40", f"run_dir={run_dir}"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    replays = sorted((run_dir / "replays").glob("*.npz"))
    references = ("random", "heuristic", "evader")
    assert {p.name.split("-vs-")[1].removesuffix(".npz") for p in replays} == set(references)
    assert all(p.with_suffix(".gif").is_file() for p in replays)
    media = [json.loads(line) for line in (run_dir / "media.jsonl").read_text().splitlines()]
    assert sorted(m["path"] for m in media) == sorted(str(p.with_suffix(".gif")) for p in replays)
    assert {m["name"] for m in media} == {f"replay/{r}" for r in references}
    check_replay(load_replay(replays[0]))
