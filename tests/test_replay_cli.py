"""`python -m arena.evaluate A B --replays DIR` saves chosen games; `python -m arena.replay FILE` draws one
(GIF through imageio, MP4 only with imageio-ffmpeg) and checks it against the core."""

from __future__ import annotations

import hashlib
import importlib.util
import json

import imageio.v3 as iio
import numpy as np
import pytest
import torch

from arena.agents.players import game_spaces
from arena.agents.policy import Policy
from arena.evaluate import main as evaluate
from arena.replay.__main__ import main as replay_cli
from arena.replay.animate import animation_frames, write_animation
from arena.replay.file import load_replay

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CLOSE = ["--set", "time_limit_s=120", "--seed", "1", "--set", "spawn_distance_min_m=15000", "--set",
         "spawn_distance_max_m=20000", "--threads", "1"]


@pytest.fixture(scope="module")
def replay_dir(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("replays")
    argv = ["scripted:heuristic_6km", "scripted:random", "--games", "12", "--envs", "6", *CLOSE,
            "--replays", str(out), "--replay-games", "3", "--json"]
    assert evaluate(argv) == 0
    return out


def test_evaluate_saves_the_chosen_number_of_replays_named_by_game_and_result(replay_dir):
    names = sorted(p.name for p in replay_dir.iterdir())
    assert len(names) == 3 and [n[:6] for n in names] == ["g00000", "g00001", "g00002"]
    for name in names:
        replay = load_replay(replay_dir / name)
        assert name == f"g{replay.game_number:05d}-{replay.result_word}.npz"
        assert [p.name for p in replay.players] == ["scripted:heuristic_6km", "scripted:random"]


def test_json_output_lists_the_replay_files(tmp_path, capsys):
    argv = ["scripted:random", "scripted:heuristic_6km", "--games", "4", *CLOSE, "--replays", str(tmp_path),
            "--replay-which", "losses", "--json"]
    assert evaluate(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["replays"] and all(p.endswith("-loss.npz") for p in out["replays"])
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted(out["replays"])


def test_a_policy_players_file_is_named_with_its_sha256(tmp_path):
    torch.manual_seed(0)
    spaces = game_spaces("midrange")
    policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden_size=8, lstm_size=8)
    path = tmp_path / "net.pt"
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    out = tmp_path / "replays"
    assert evaluate([str(path), "scripted:heuristic", "--games", "2", *CLOSE, "--replays", str(out)]) == 0
    replay = load_replay(next(out.iterdir()))
    assert replay.players[0].name == str(path)
    assert replay.players[0].sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert replay.players[1].sha256 is None


@pytest.mark.parametrize(("extra", "message"), [
    (["--replay-games", "3"], "need --replays"),
    (["--replays", "{tmp}", "--replay-which", "all", "--replay-games", "3"], "does not apply"),
    (["--replays", "{tmp}", "--replay-games", "0"], "at least 1"),
    (["--replays", "{tmp}", "--game", "rpsw"], "not rpsw"),
    (["--replays", "{tmp}/file.txt"], "not a directory"),
])
def test_bad_replay_options_exit_with_code_2_naming_them(extra, message, tmp_path, capsys):
    (tmp_path / "file.txt").write_text("x")
    argv = ["scripted:random", "scripted:random", "--games", "2", *[a.format(tmp=tmp_path) for a in extra]]
    assert evaluate(argv) == 2
    assert message in capsys.readouterr().err


def test_replays_are_refused_for_a_round_robin(tmp_path, capsys):
    assert evaluate(["--league", str(tmp_path), "--replays", str(tmp_path)]) == 2
    assert "head-to-head" in capsys.readouterr().err


def test_the_gif_has_one_frame_per_stride_and_shows_the_game_moving(replay_dir, tmp_path):
    replay = load_replay(sorted(replay_dir.iterdir())[0])
    path = write_animation(replay, tmp_path / "game.gif", fps=10, stride=7, size=160)
    frames = iio.imread(path, index=None)
    assert frames.shape == (len(animation_frames(replay.length, 7)), 160, 160, 3)
    assert animation_frames(replay.length, 7)[-1] == replay.length - 1
    changed = (frames[0] != frames[-1]).any(axis=-1).sum()
    assert changed > 200  # the fighters moved, trails grew, the end was marked
    assert len({frames[k].tobytes() for k in range(len(frames))}) == len(frames)  # each frame differs


def test_replay_cli_summarises_checks_and_writes_a_gif_and_a_viewer(replay_dir, tmp_path, capsys):
    file = sorted(replay_dir.iterdir())[1]
    gif, html = tmp_path / "a.gif", tmp_path / "a.html"
    assert replay_cli([str(file), "--check", "--gif", str(gif), "--html", str(html), "--stride", "20",
                       "--size", "128"]) == 0
    out = capsys.readouterr().out
    assert "scripted:heuristic_6km" in out and "bit for bit" in out
    assert iio.imread(gif, index=None).shape[1:] == (128, 128, 3)
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert oct(gif.stat().st_mode & 0o777) == "0o644"


def test_mp4_without_imageio_ffmpeg_is_a_clear_error(replay_dir, tmp_path, capsys, monkeypatch):
    find_spec = importlib.util.find_spec  # imageio-ffmpeg is hidden, whether it is installed or not
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "imageio_ffmpeg" else find_spec(name, *args))
    file = sorted(replay_dir.iterdir())[0]
    assert replay_cli([str(file), "--mp4", str(tmp_path / "a.mp4")]) == 2
    assert "imageio-ffmpeg" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None, reason="needs imageio-ffmpeg")
def test_mp4_holds_every_decision(replay_dir, tmp_path):
    replay = load_replay(sorted(replay_dir.iterdir())[0])
    path = write_animation(replay, tmp_path / "a.mp4", fps=25, size=128)
    frames = iio.imread(path, index=None)
    assert len(frames) == replay.length and not np.array_equal(frames[0], frames[-1])


@pytest.mark.parametrize(("args", "message"), [
    (["{tmp}/missing.npz"], "not found"),
    (["{tmp}/x.txt"], "not a replay file"),
    (["{file}", "--gif", "{tmp}/a.png"], "must end in .gif"),
    (["{file}", "--html", "{tmp}/a.txt"], "must end in .html"),
    (["{file}", "--gif", "{tmp}/a.gif", "--fps", "0"], "fps=0"),
])
def test_replay_cli_errors_exit_with_code_2(args, message, replay_dir, tmp_path, capsys):
    (tmp_path / "x.txt").write_text("hello")
    file = sorted(replay_dir.iterdir())[0]
    assert replay_cli([a.format(tmp=tmp_path, file=file) for a in args]) == 2
    assert message in capsys.readouterr().err
