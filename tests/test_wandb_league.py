"""What a league training run and a league round robin show in W&B, read back from the offline runs:
one chart of every player's rating, the payoff heatmap, the leaderboard, the gauntlet scores, the SB3
metric names, snapshot artifacts when asked, and ``arena.evaluate --league ... --logger wandb``."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from wandb_run_reader import OfflineRun, isolate_wandb, offline_run

from arena.evaluate import main as evaluate
from arena.league.config import league_config
from arena.league.model.store import LEAGUE_DB, META_DECAY, LeagueStore
from arena.league.run.league_run import LeagueRun
from arena.league.view.metric_names import metric_name
from arena.league.view.plots import RECENT_SNAPSHOTS, RatingCurves, leaderboard_rows
from arena.league.view.training_views import LEADERBOARD_COLUMNS
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer
from arena.trainer.telemetry.loggers import artifact_name, make_logger

LEAGUE_RUN = [
    "env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=32", "trainer.num_threads=1",
    "trainer.torch_threads=1", "trainer.total_timesteps=4000", "+league=selfplay",
    "league.snapshot.every_steps=1500", "league.log_interval=2", "league.gauntlet.games=4",
    "league.gauntlet.every_steps=0", "logger=wandb", "logger.project=arena-test",
]


@pytest.fixture(scope="module")
def league(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, OfflineRun, OfflineRun, dict]:
    """A selfplay league trained with ``logger=wandb`` (no W&B account), then its round robin evaluated
    with ``--logger wandb``: (run dir, the training's W&B run, the round robin's, its --json output)."""
    tmp = tmp_path_factory.mktemp("wandb_league")
    run_dir = tmp / "run"
    with pytest.MonkeyPatch.context() as mp:
        env = isolate_wandb(mp, tmp / "home")
        done = subprocess.run([sys.executable, "-m", "arena.train", *LEAGUE_RUN, f"run_dir={run_dir}"],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out = io.StringIO()
        threads = torch.get_num_threads()
        try:
            with contextlib.redirect_stdout(out):
                code = evaluate(["--league", str(run_dir), "--game", "rpsw", "--games-per-pair", "4",
                                 "--threads", "1", "--logger", "wandb", "--wandb-project", "arena-test",
                                 "--log-dir", str(tmp / "eval"), "--json"])
        finally:
            torch.set_num_threads(threads)
        assert code == 0
    return run_dir, offline_run(run_dir), offline_run(tmp / "eval"), json.loads(out.getvalue())


def final_leaderboard(run_dir: Path) -> dict[str, float]:
    """{player: conservative rating} as the league store holds them at the end of the run."""
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        state = store.load(float(json.loads(store.meta()[META_DECAY])))
    return {row.player_id: row.conservative for row in leaderboard_rows(state)}


def test_one_chart_holds_every_players_rating_curve_with_the_leagues_values(league):
    run_dir, run, _, _ = league
    chart = run.config["_wandb/visualize/league/rating_curves"]["panel_config"]
    assert chart["panelDefId"] == "wandb/lineseries/v0" and chart["stringSettings"]["xname"] == "learner step"
    curves: dict[str, list[tuple[float, float]]] = {}
    for x, player, y in run.table("league/rating_curves_table")["data"]:
        curves.setdefault(player, []).append((x, y))
    final = final_leaderboard(run_dir)
    assert set(curves) == set(final) and any(p.startswith("learner:snap-") for p in curves)
    last_step = run.values("global_step")[-1]
    for player, points in curves.items():
        assert [x for x, _ in points] == sorted(x for x, _ in points)
        assert points[-1] == (last_step, pytest.approx(final[player]))
    # every per-player scalar the league logged is a point of its curve
    scalars = [(row["global_step"], key.removeprefix("league/rating/"), value)
               for row in run.history for key, value in row.items() if key.startswith("league/rating/")]
    assert scalars
    for step, player, value in scalars:
        assert (step, pytest.approx(value)) in curves[player]


def test_the_payoff_heatmap_table_holds_the_leagues_payoff_matrix(league):
    run_dir, run, _, _ = league
    chart = run.config["_wandb/visualize/league/payoff_heatmap"]["panel_config"]
    assert chart["panelDefId"] == "wandb/confusion_matrix/v1"
    assert chart["fieldSettings"] == {"Actual": "row", "Predicted": "column", "nPredictions": "score"}
    table = run.table("league/payoff_heatmap_table")
    assert table["columns"] == ["row", "column", "score"]
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        state = store.load(float(json.loads(store.meta()[META_DECAY])))
    order = [p.player_id for p in state.players]
    matrix = state.payoff.matrix(order)
    expected = {(a, b): matrix[i, j] for i, a in enumerate(order) for j, b in enumerate(order)
                if matrix[i, j] == matrix[i, j]}  # not NaN: they played
    got = {(a, b): score for a, b, score in table["data"]}
    assert got.keys() == expected.keys() and len(got) > len(order)
    for cell, score in expected.items():
        assert got[cell] == pytest.approx(score), cell
    assert run.values("league/payoff/_type")[-1] == "image-file"  # the PNG stays beside it


def test_the_leaderboard_table_lists_every_player_best_first(league):
    run_dir, run, _, _ = league
    table = run.table("league/leaderboard")
    assert table["columns"] == list(LEADERBOARD_COLUMNS)
    final = final_leaderboard(run_dir)
    conservative = {row[1]: row[5] for row in table["data"]}
    assert conservative == pytest.approx(final)
    assert [row[5] for row in table["data"]] == sorted(conservative.values(), reverse=True)


def test_gauntlet_scores_and_their_intervals_reach_wandb_as_scalars(league):
    run_dir, run, _, _ = league
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        records = store.gauntlet()
    assert records
    for record in records:
        name = metric_name(record.reference)
        (row,) = [r for r in run.rows_with(name) if r["global_step"] == record.learner_step]
        score, lo, hi = record.score()
        assert (row[name], row[f"{name}_lo"], row[f"{name}_hi"]) == pytest.approx((score, lo, hi))
        assert lo <= score <= hi


def test_sb3_metric_names_reach_wandb_beside_arena_names(league):
    _, run, _, _ = league
    rows = run.rows_with("train/approx_kl")
    assert rows
    for row in rows:
        assert row["train/approx_kl"] == row["approx_kl"] and row["train/clip_fraction"] == row["clipfrac"]
        assert row["train/entropy_loss"] == -row["entropy"] and row["time/fps"] == row["SPS"]
        assert row["rollout/ep_rew_mean"] == row["episode_return"]


def test_snapshot_files_are_not_uploaded_unless_asked(league):
    _, run, _, _ = league
    assert not [a for a in run.artifacts if a.type == "model"]


def test_the_round_robin_logs_its_ratings_table_payoff_heatmap_and_elo_scalars(league):
    _, _, run, result = league
    elo = {player: value["elo"] for player, value in result["elo"].items()}
    ratings = run.table("eval/ratings")
    assert ratings["columns"] == ["rank", "player", "elo", "elo_lo", "elo_hi", "games"]
    assert {row[1]: row[2] for row in ratings["data"]} == pytest.approx(elo)
    assert [row[2] for row in ratings["data"]] == sorted(elo.values(), reverse=True)
    (scalars,) = run.rows_with("eval/games")
    assert {p: scalars[f"eval/elo/{p}"] for p in elo} == pytest.approx(elo)
    assert scalars["eval/games"] == sum(r["wins"] + r["draws"] + r["losses"] for r in result["results"])
    heatmap = run.config["_wandb/visualize/eval/payoff"]["panel_config"]
    assert heatmap["panelDefId"] == "wandb/confusion_matrix/v1"
    cells = {(a, b): score for a, b, score in run.table("eval/payoff_table")["data"]}
    for r in result["results"]:
        assert cells[(r["a"], r["b"])] == pytest.approx(r["score"])
        assert cells[(r["b"], r["a"])] == pytest.approx(1.0 - r["score"])
    assert len(cells) == 2 * len(result["results"])  # no diagonal, nothing made up


# ---------------------------------------------------------------------- snapshot artifacts


def test_with_log_snapshots_each_new_league_snapshot_is_a_model_artifact(tmp_path, monkeypatch,
                                                                         one_torch_thread):
    isolate_wandb(monkeypatch, tmp_path / "home")
    config = league_config({"snapshot": {"every_steps": 1}, "gauntlet": {"games": 0}, "log_interval": 1})
    league_run = LeagueRun(config, tmp_path, game="rpsw")
    trainer = PPOTrainer(
        TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
                      rollout_steps=16, minibatch_size=64, seed=1, checkpoint_dir=str(tmp_path / "ckpt")),
        PolicyConfig(hidden_size=8, lstm_size=8), game="rpsw", matchmaker=league_run.matchmaker())
    try:
        league_run.attach(trainer)
        with make_logger("wandb", tmp_path / "log", project="arena-test", log_snapshots=True,
                         settings={"x_disable_stats": True}) as log:
            for _ in range(2):
                trainer.evaluate()
                trainer.train()
                trainer.mean_and_log()
                league_run.log_views(log, trainer.global_step)
        snapshots = league_run.league.pool.snapshots()
    finally:
        trainer.close()
        league_run.close()
    assert len(snapshots) == 2
    artifacts = {a.name: a for a in offline_run(tmp_path / "log").artifacts if a.type == "model"}
    assert set(artifacts) == {artifact_name(s.player_id) for s in snapshots}
    for snap in snapshots:
        artifact = artifacts[artifact_name(snap.player_id)]
        metadata = json.loads(artifact.metadata)
        assert metadata == {"player_id": snap.player_id, "step": snap.step, "parent": "learner",
                            "sha256": snap.sha256}
        assert f"step-{snap.step}" in artifact.aliases
        (content,) = artifact.manifest.contents
        assert content.size == (tmp_path / snap.path).stat().st_size


def test_the_rating_chart_is_thinned_evenly_keeping_each_curves_ends():
    n = RatingCurves.CURVE_CAP - 1
    curves = RatingCurves({p: (list(range(n)), [float(k) * (i + 1) for k in range(n)])
                           for i, p in enumerate(("learner", "scripted:random", "learner:snap-000000"))})
    curves.add(n, {"learner": -1.0, "scripted:random": 0.0, "learner:snap-000001": 2.0})  # one just joined
    assert "learner:snap-000000" not in curves.curves  # out of the shown set: its curve goes
    series = curves.series(max_points=300)
    assert sum(len(xs) for xs, _ in series.values()) <= 300
    learner_xs, learner_ys = series["learner"]
    assert (learner_xs[0], learner_ys[0]) == (0, 0.0) and (learner_xs[-1], learner_ys[-1]) == (n, -1.0)
    gaps = {b - a for a, b in zip(learner_xs[:-1], learner_xs[1:], strict=True)}
    assert max(gaps) - min(gaps) <= 2  # evenly spread
    assert series["learner:snap-000001"] == ([float(n)], [2.0])


def test_a_rating_curve_past_its_cap_is_halved_in_place_keeping_its_ends():
    curves = RatingCurves()
    for step in range(5 * RatingCurves.CURVE_CAP):
        curves.add(step, {"learner": float(step)})
    xs, ys = curves.curves["learner"]
    assert len(xs) <= RatingCurves.CURVE_CAP + 1
    assert (xs[0], xs[-1]) == (0.0, 5 * RatingCurves.CURVE_CAP - 1.0) and xs == ys
    assert all(a < b for a, b in zip(xs[:-1], xs[1:], strict=True))
    assert xs[-2] >= 5 * RatingCurves.CURVE_CAP - 1 - RatingCurves.CURVE_CAP  # the recent part stays fine


def test_a_league_larger_than_view_players_logs_only_its_bounded_set(tmp_path, monkeypatch):
    """Per-player keys, the leaderboard and the payoff heatmap hold the league's bounded set
    (``league.view_players``), not the whole pool; the store keeps every player."""
    from arena.league.view.plots import shown_players

    run_dir = tmp_path / "run"
    env = isolate_wandb(monkeypatch, tmp_path / "home")
    args = [a for a in LEAGUE_RUN if not a.startswith(("trainer.total_timesteps", "league.snapshot."))]
    args += ["trainer.total_timesteps=24000", "league.snapshot.every_steps=1000", "league.view_players=12"]
    done = subprocess.run([sys.executable, "-m", "arena.train", *args, f"run_dir={run_dir}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = offline_run(run_dir)
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        state = store.load(float(json.loads(store.meta()[META_DECAY])))
    order = [row.player_id for row in leaderboard_rows(state)]
    shown = shown_players(order, state.players, "learner", 12)
    assert len(order) > len(shown) >= 12  # the league outgrew its views
    leaderboard = run.table("league/leaderboard")
    assert [row[1] for row in leaderboard["data"]] == shown
    assert {cell[0] for cell in run.table("league/payoff_heatmap_table")["data"]} <= set(shown)
    for row in run.history:
        keys = [k for k in row if k.startswith("league/rating/")]
        assert len(keys) <= len(shown)
        snapshot_mix = [k for k in row if k.startswith("league/mix/") and ":snap-" in k]
        assert len(snapshot_mix) <= RECENT_SNAPSHOTS  # the rest as league/mix/older_snapshots
    for name in ("league/leaderboard", "league/payoff_heatmap_table"):
        assert len(run.table(name)["data"]) <= 10_000
