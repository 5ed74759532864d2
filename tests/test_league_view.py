"""`python -m arena.league show RUN_DIR`: leaderboard in the terminal and PNGs on disk."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.league.config import league_config
from arena.league.model.league import League
from arena.league.model.players import Player, snapshot_id
from arena.league.timing import LeagueTimer
from arena.league.view.plots import PAYOFF_PNG, RATING_CURVES_PNG, player_records
from arena.league.view.training_views import PAYOFF_IMAGE, LeagueViews
from arena.trainer.telemetry.loggers import NoneLogger

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
    assert f"published policy: learner:snap-000000 of {run_dir}" in result.stdout.replace("\n", "")
    for name in (RATING_CURVES_PNG, PAYOFF_PNG):
        png = out / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert str(png) in result.stdout.replace("\n", "")


def test_show_says_a_league_without_a_snapshot_publishes_nothing_yet(tmp_path):
    league = League.open(tmp_path)
    league.add_player(Player("learner", "learner"))
    league.add_player(Player("scripted:random", "scripted"))
    league.record_match(["learner"], ["scripted:random"], "win", learner_step=0)
    league.close()
    result = run_show(str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "published policy: none yet" in result.stdout and "train it until its first snapshot" in (
        result.stdout.replace("\n", ""))


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


def test_a_bounded_view_keeps_every_reference_the_learners_newest_snapshots_and_the_best_rated():
    from arena.league.view.plots import RECENT_SNAPSHOTS, shown_players

    players = [Player("learner", "learner"), Player("scripted:random", "scripted"),
               Player("main_exploiter", "main_exploiter")]
    snaps = [Player(snapshot_id("learner", i), "snapshot", path=f"{i}.pt", sha256="ab" * 32, step=i,
                    parent="learner") for i in range(100)]
    players += snaps
    # the leaderboard's order: the oldest snapshots rated best, the references last
    order = [p.player_id for p in snaps] + ["learner", "scripted:random", "main_exploiter"]
    shown = shown_players(order, players, "learner", 20)
    assert len(shown) == 20 and shown == [p for p in order if p in set(shown)]  # the leaderboard's order
    assert {"learner", "scripted:random", "main_exploiter"} <= set(shown)
    assert {p.player_id for p in snaps[-RECENT_SNAPSHOTS:]} <= set(shown)
    best = [p.player_id for p in snaps[:20 - 3 - RECENT_SNAPSHOTS]]
    assert set(shown) == {"learner", "scripted:random", "main_exploiter", *best,
                          *(p.player_id for p in snaps[-RECENT_SNAPSHOTS:])}
    assert shown_players(order[:15], players, "learner", 20) == order[:15]  # small pools whole


def test_show_draws_the_leagues_bounded_set_and_every_player_with_all(tmp_path):
    from arena.league.view.plots import show

    run_dir = tmp_path / "run"
    league = League.open(run_dir)
    league.add_player(Player("learner", "learner"))
    league.add_player(Player("scripted:random", "scripted"))
    for i in range(40):
        snap = snapshot_id("learner", i)
        league.add_player(Player(snap, "snapshot", path=f"{i}.pt", sha256="cd" * 32, step=i,
                                 parent="learner"))
        league.record_match(["learner"], [snap], ["win", "loss"][i % 2], learner_step=i)
    league.store.set_meta("league_config", {"view_players": 12, "learner_id": "learner"})
    league.close()
    bounded = show(run_dir, tmp_path / "a")
    assert len(bounded.rows) == 12 and {"learner", "scripted:random"} <= {r.player_id for r in bounded.rows}
    assert len(show(run_dir, tmp_path / "b", all_players=True).rows) == 42
    result = run_show(str(run_dir), "--all", "--out", str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr
    assert snapshot_id("learner", 0) in result.stdout and snapshot_id("learner", 39) in result.stdout


class CountingLogger(NoneLogger):
    """Counts the heatmap charts and payoff PNGs a league run's views log."""

    def __init__(self) -> None:
        self.charts: list[int] = []
        self.images: list[int] = []

    def log_heatmap(self, name, rows, columns, values, step, **kwargs) -> None:
        self.charts.append(step)

    def log_image(self, name, image, step) -> None:
        assert Path(image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        self.images.append(step)


def test_training_views_draw_the_payoff_png_once_per_image_interval_and_when_forced(tmp_path):
    fill_run(tmp_path)
    config = league_config({"log_interval": 2, "image_interval": 6})
    league = League.open(tmp_path)
    views = LeagueViews(league, tmp_path, config, "learner", LeagueTimer())
    log = CountingLogger()
    try:
        for updates in range(1, 15):  # views at updates 2, 4, ..., 14
            views.log(log, updates, updates)
        views.log(log, 15, 15, force=True)  # the run's last views
    finally:
        league.close()
    assert log.charts == [2, 4, 6, 8, 10, 12, 14, 15]  # the chart's data at every view
    assert log.images == [2, 8, 14, 15]  # the PNG at the first view, every 6 updates after, and forced
    assert (tmp_path / PAYOFF_IMAGE).is_file()


def test_league_image_interval_must_be_a_positive_integer():
    with pytest.raises(ValueError, match=r"league.image_interval=0 must be an integer >= 1"):
        league_config({"image_interval": 0})
