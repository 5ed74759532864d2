"""`python -m arena.league show RUN_DIR`: leaderboard in the terminal and PNGs on disk."""

import os
import subprocess
import sys
from pathlib import Path

from arena.league.league import League
from arena.league.players import Player, snapshot_id
from arena.league.view import PAYOFF_PNG, RATING_CURVES_PNG, player_records

REPO = Path(__file__).resolve().parents[1]


def run_show(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "arena.league", "show", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def fill_run(run_dir: Path) -> list[str]:
    league = League.open(run_dir)
    ids = ["learner", "scripted:heuristic", "scripted:random", snapshot_id("learner", 0)]
    league.add_player(Player(ids[0], "learner"))
    league.add_player(Player(ids[1], "scripted"))
    league.add_player(Player(ids[2], "scripted"))
    league.add_player(Player(ids[3], "snapshot", path="s.pt", sha256="ef" * 32, step=100, parent="learner"))
    for i in range(12):
        outcome = ["win", "draw", "loss", "win"][i % 4]
        league.record_match(["learner"], [ids[1 + i % 3]], outcome, learner_step=i)
    league.record_match([ids[1]], [ids[2]], "win", learner_step=12)
    league.close()
    return ids


def test_show_prints_the_leaderboard_and_writes_pngs(tmp_path):
    run_dir, out = tmp_path / "run", tmp_path / "plots"
    ids = fill_run(run_dir)
    result = run_show(str(run_dir), "--out", str(out), "--x", "step")
    assert result.returncode == 0, result.stderr
    for player_id in ids:
        assert player_id in result.stdout
    for name in (RATING_CURVES_PNG, PAYOFF_PNG):
        png = out / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(png) in result.stdout.replace("\n", "")


def test_show_without_a_league_store_fails_clearly(tmp_path):
    result = run_show(str(tmp_path))
    assert result.returncode == 2
    assert "no league store" in result.stderr


def test_player_records_count_each_side_and_skip_mirror_matches(tmp_path):
    fill_run(tmp_path)
    league = League.open(tmp_path)
    league.record_match(["learner"], ["learner"], "win")
    records = player_records(league.store.matches())
    league.close()
    assert records["learner"] == (6, 3, 3)  # win, draw, loss, win three times; the mirror win is skipped
    # heuristic met the learner at i = 0, 3, 6, 9 (learner: win, win, loss, draw), then beat random
    assert records["scripted:heuristic"] == (2, 1, 2)
    # random met the learner at i = 1, 4, 7, 10 (learner: draw, win, win, loss), then lost to heuristic
    assert records["scripted:random"] == (1, 1, 3)
