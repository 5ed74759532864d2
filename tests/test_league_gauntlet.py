"""The gauntlet: every new snapshot plays fixed references; results are stored, logged and drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from arena.agents.players import game_spaces
from arena.agents.policy import Policy
from arena.league import LEAGUE_DB, LeagueStore, Player
from arena.league.__main__ import main as league_cli
from arena.league.model.store import GauntletRecord
from arena.league.run.gauntlet import Gauntlet, gauntlet_metrics
from arena.league.view.metric_names import metric_name
from arena.train import main
from arena.trainer.telemetry.dashboard import Dashboard

FAST = [
    "env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=32", "trainer.num_threads=1",
    "trainer.torch_threads=1",
]
RPSW_BOTS = ("random", "cycle", "biased", "constant", "counter")


@pytest.fixture(scope="module")
def league_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("gauntlet") / "run"
    argv = [*FAST, "+league=selfplay", f"run_dir={run_dir}", "trainer.total_timesteps=4000",
            "league.snapshot.every_steps=1500", "league.gauntlet.games=40", "league.gauntlet.every_steps=0"]
    assert main(argv) == 0
    return run_dir


def test_every_snapshot_plays_every_scripted_bot_of_the_game(league_run):
    with LeagueStore(league_run / LEAGUE_DB, create=False) as store:
        snapshots = [p for p in store.players() if p.kind == "snapshot"]
        records = store.gauntlet()
    assert len(snapshots) >= 2
    played = {(r.player_id, r.reference) for r in records}
    assert played == {(s.player_id, f"scripted:{bot}") for s in snapshots for bot in RPSW_BOTS}
    assert all(r.games == 40 for r in records)
    assert {r.learner_step for r in records} == {s.step for s in snapshots}


def test_gauntlets_are_spaced_by_every_steps_samples(tmp_path):
    run_dir = tmp_path / "run"
    argv = [*FAST, "+league=selfplay", f"run_dir={run_dir}", "trainer.total_timesteps=9000",
            "league.snapshot.every_steps=1000", "league.snapshot.beat_all_threshold=null",
            "league.gauntlet.games=10", "league.gauntlet.every_steps=3000"]
    assert main(argv) == 0
    with LeagueStore(run_dir / LEAGUE_DB, create=False) as store:
        snapshot_steps = [p.step for p in store.players() if p.kind == "snapshot"]
        played = sorted({r.learner_step for r in store.gauntlet()})
    assert played[0] == snapshot_steps[0] and len(played) < len(snapshot_steps)
    assert all(b - a >= 3000 for a, b in zip(played, played[1:], strict=False))
    assert all(any(s - p < 3000 for p in played if p <= s) for s in snapshot_steps)  # none skipped too long


def test_gauntlet_scores_are_logged_once_per_snapshot_with_their_interval(league_run):
    lines = [json.loads(line) for line in (league_run / "metrics.jsonl").read_text().splitlines()]
    logged = [m for m in lines if "gauntlet/heuristic" in m or "gauntlet/counter" in m]
    with LeagueStore(league_run / LEAGUE_DB, create=False) as store:
        snapshots = len([p for p in store.players() if p.kind == "snapshot"])
    assert len(logged) == snapshots
    for m in logged:
        for bot in RPSW_BOTS:
            assert m[f"gauntlet/{bot}_lo"] <= m[f"gauntlet/{bot}"] <= m[f"gauntlet/{bot}_hi"]


def test_league_show_prints_the_gauntlet_and_draws_strength_over_time(league_run, tmp_path, capsys):
    assert league_cli(["show", str(league_run), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Gauntlet" in out and "scripted:counter" in out
    image = tmp_path / "league_gauntlet.png"
    assert image.is_file() and image.stat().st_size > 10_000


def test_a_gauntlet_against_a_named_checkpoint_and_a_bot(tmp_path):
    torch.manual_seed(0)
    spaces = game_spaces("rpsw")
    files = []
    for k in range(2):
        policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden_size=8, lstm_size=8)
        torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, tmp_path / f"p{k}.pt")
        files.append(tmp_path / f"p{k}.pt")
    gauntlet = Gauntlet([str(files[1]), "scripted:constant"], 20, game="rpsw", team_sizes=(1, 1), seed=3)
    records = gauntlet.play("snap-0", files[0], learner_step=7)
    assert [r.reference for r in records] == [str(files[1]), "scripted:constant"]
    assert all(r.games == 20 and r.learner_step == 7 for r in records)
    assert gauntlet.play("snap-0", files[0], learner_step=7) == records  # same seed, same games
    metrics = gauntlet_metrics(records)
    assert set(metrics) == {"gauntlet/p1", "gauntlet/p1_lo", "gauntlet/p1_hi", "gauntlet/constant",
                            "gauntlet/constant_lo", "gauntlet/constant_hi"}


def test_an_nvm_gauntlet_gives_each_side_its_own_row_beside_the_side_swapped_one(tmp_path):
    sizes = (2, 1)
    spaces = game_spaces("midrange", sizes)
    torch.manual_seed(0)
    policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden_size=8, lstm_size=8)
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, tmp_path / "p.pt")
    gauntlet = Gauntlet(["scripted:heuristic"], 8, game="midrange", team_sizes=sizes, seed=3,
                        overrides={"time_limit_s": 60.0})
    both, pair, single = gauntlet.play("snap-0", tmp_path / "p.pt", learner_step=1)
    assert (both.reference, pair.reference, single.reference) == (
        "scripted:heuristic", "scripted:heuristic@2v1", "scripted:heuristic@1v2")
    assert pair.games == single.games == 4  # half the side-swapped games each
    for count in ("wins", "draws", "losses"):
        assert getattr(pair, count) + getattr(single, count) == getattr(both, count)
    assert set(gauntlet_metrics([pair])) == {"gauntlet/heuristic@2v1", "gauntlet/heuristic@2v1_lo",
                                             "gauntlet/heuristic@2v1_hi"}


def test_an_unknown_reference_fails_at_start_up_by_name():
    with pytest.raises(ValueError, match="scripted:nobody"):
        Gauntlet(["scripted:nobody"], 10, game="rpsw", team_sizes=(1, 1))


def test_gauntlet_results_survive_reopening_the_store_and_need_a_known_player(tmp_path):
    with LeagueStore(tmp_path / LEAGUE_DB) as store:
        store.add_player(Player("snap-0", "snapshot", path="s.pt", sha256="0" * 64, step=5, parent="learner"))
        store.record_gauntlet(GauntletRecord("snap-0", "scripted:heuristic", 5, 30, 10, 60))
        with pytest.raises(ValueError, match="unknown player 'snap-9'"):
            store.record_gauntlet(GauntletRecord("snap-9", "scripted:heuristic", 5, 1, 0, 0))
    with LeagueStore(tmp_path / LEAGUE_DB, create=False) as store:
        (record,) = store.gauntlet()
    assert (record.player_id, record.wins, record.draws, record.losses) == ("snap-0", 30, 10, 60)
    score, lo, hi = record.score()
    assert score == pytest.approx(0.35) and lo < score < hi


def test_metric_names_are_short():
    assert metric_name("scripted:heuristic") == "gauntlet/heuristic"
    assert metric_name("runs/x/league/snapshots/learner-3.pt") == "gauntlet/learner-3"


def test_the_dashboard_keeps_the_newest_gauntlet_until_the_next_snapshot():
    import io

    board = Dashboard(total_steps=100, stream=io.StringIO())
    board.update({"SPS": 1.0, "gauntlet/heuristic": 0.8, "gauntlet/heuristic_lo": 0.7,
                  "gauntlet/heuristic_hi": 0.9}, step=10)
    board.update({"SPS": 1.0}, step=20)
    assert board.gauntlet == {"heuristic": (0.8, 0.7, 0.9)}
    assert "gauntlet heuristic 0.80 [0.70, 0.90]" in board.plain_line()
