"""PSRO's meta-game: its Nash mixture, its growth with each snapshot, and a league that trains on it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena.league.__main__ import main as show_league
from arena.league.model.meta import META_KEY, MetaGame, nash

# a small, fast league run on rock-paper-scissors with a wall (one thread, a fixed seed)
RPSW = ["env=rpsw", "trainer=quick", "dashboard=false", "logger=none", "trainer.num_envs=32",
        "trainer.num_threads=1", "trainer.torch_threads=1", "trainer.seed=1"]


def test_the_nash_of_rock_paper_scissors_is_uniform():
    scores = np.array([[0.5, 0.0, 1.0], [1.0, 0.5, 0.0], [0.0, 1.0, 0.5]])  # row's score vs column
    assert nash(scores) == pytest.approx([1 / 3] * 3, abs=0.01)


def test_a_dominated_member_gets_no_weight_and_a_dominant_one_all():
    scores = np.array([[0.5, 0.8, 0.9], [0.2, 0.5, 0.6], [0.1, 0.4, 0.5]])
    assert nash(scores) == pytest.approx([1.0, 0.0, 0.0], abs=1e-6)


def test_the_meta_game_grows_one_row_at_a_time_and_round_trips_through_the_store_meta():
    game = MetaGame()
    game.add("a", [])
    game.add("b", [0.0])  # b loses every game to a
    game.add("c", [1.0, 0.3])
    assert game.scores[0, 1] == 1.0 and game.scores[2, 1] == 0.3 and game.scores[1, 2] == pytest.approx(0.7)
    assert np.allclose(game.scores + game.scores.T, 1.0)
    again = MetaGame.from_meta({META_KEY: json.dumps(game.to_meta())})
    assert again.players == ["a", "b", "c"] and np.allclose(again.scores, game.scores)
    assert sum(game.strategy().values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one score per member"):
        game.add("d", [0.5])
    assert MetaGame.from_meta({}).players == []


def test_a_psro_league_trains_against_and_publishes_its_meta_strategy_and_show_names_it(tmp_path, capsys):
    from arena.league.model.published import published
    from arena.league.model.store import LEAGUE_DB, LeagueStore
    from arena.train import main as train

    run_dir = tmp_path / "psro"
    assert train(["env=goofspiel", "env.num_cards=3", "+league=psro", f"run_dir={run_dir}", "dashboard=false",
                  "trainer=quick", "trainer.total_timesteps=40000", "league.snapshot.every_steps=8000",
                  "league.meta_games=40", "league.gauntlet.games=0"]) == 0
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        meta = store.meta()
        snapshots = [p.player_id for p in store.players() if p.kind == "snapshot"]
        opponents = {m.team_b[0] for m in store.matches()}
    game = MetaGame.from_meta(meta)
    assert game.players == snapshots and len(snapshots) >= 3
    strategy = game.strategy()
    found = published(run_dir)
    assert {m.player_id: m.weight for m in found.members} == pytest.approx(strategy)
    assert opponents <= {"learner", *snapshots}  # mirror before the first snapshot, then the meta-game
    assert show_league(["show", str(run_dir), "--out", str(tmp_path / "plots")]) == 0
    assert f"published policy: {found.describe()}" in capsys.readouterr().out.replace("\n", "")


def test_with_meta_exploiters_the_exploiters_snapshots_join_the_meta_game_and_the_published_nash(tmp_path):
    from arena.league.model.published import published
    from arena.league.model.store import LEAGUE_DB, LeagueStore
    from arena.train import main as train

    run_dir = tmp_path / "psro-exploiters"
    assert train([*RPSW, "+league=robust", f"run_dir={run_dir}", "trainer.total_timesteps=6000",
                  "league.snapshot.every_steps=1500",
                  "league.main_exploiter.num_envs=8", "league.main_exploiter.snapshot.every_steps=500",
                  "league.main_exploiter.snapshot.min_steps=0", "league.gauntlet.games=10",
                  "league.publish=nash", "league.meta_exploiters=true", "league.meta_games=20"]) == 0
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        meta = store.meta()
        snapshots = [p for p in store.players() if p.kind == "snapshot"]
    game = MetaGame.from_meta(meta)
    exploiters = [p.player_id for p in snapshots if p.parent != "learner"]
    assert exploiters and all(p.startswith("main_exploiter") for p in exploiters)
    # every snapshot, the learner's and the exploiter's, joined in the order it was taken
    assert game.players == [p.player_id for p in snapshots]
    assert np.allclose(game.scores + game.scores.T, 1.0)
    strategy = game.strategy()
    assert {m.player_id: m.weight for m in published(run_dir).members} == pytest.approx(strategy)


def test_meta_exploiters_needs_a_meta_game_and_an_exploiter():
    from arena.league.config import LeagueConfig, MainExploiterConfig

    with pytest.raises(ValueError, match="league.meta_exploiters=true adds the exploiters' snapshots"):
        LeagueConfig(main_exploiter=MainExploiterConfig(), meta_exploiters=True).validate()
    with pytest.raises(ValueError, match="league.meta_exploiters=true needs an exploiter"):
        LeagueConfig(publish="nash", meta_exploiters=True).validate()
    with pytest.raises(ValueError, match="league.meta_exploiters='yes' must be true or false"):
        LeagueConfig(publish="nash", meta_exploiters="yes").validate()  # type: ignore[arg-type]
    assert LeagueConfig(publish="nash", main_exploiter=MainExploiterConfig(), meta_exploiters=True).validate()


def test_with_a_meta_bar_only_snapshots_whose_gauntlet_clears_it_join_the_meta_game(tmp_path):
    from arena.league.model.store import LEAGUE_DB, LeagueStore
    from arena.league.run.guard import best_snapshot
    from arena.train import main as train

    run_dir = tmp_path / "psro-bar"
    assert train([*RPSW, "+league=psro", f"run_dir={run_dir}", "trainer.total_timesteps=8000",
                  "league.snapshot.every_steps=1000",
                  "league.gauntlet.games=20", "league.gauntlet.every_steps=0",
                  "league.gauntlet.players=[scripted:constant,scripted:cycle]", "league.meta_games=20",
                  "league.meta_bar=0.69"]) == 0
    with LeagueStore(run_dir / LEAGUE_DB, read_only=True) as store:
        game = MetaGame.from_meta(store.meta())
        records = store.gauntlet()
        snapshots = [p.player_id for p in store.players() if p.kind == "snapshot"]
    refs = ["scripted:constant", "scripted:cycle"]
    scores = {s: best_snapshot(records, [s], refs).score for s in snapshots}  # every one was gauntleted
    cleared = [s for s in snapshots if scores[s] >= 0.69]
    assert game.players == cleared
    # this seed's snapshots score 0.65-0.70 against the worse of the two throwers: the bar keeps the
    # early ones out and lets the later ones in
    assert cleared and len(cleared) < len(snapshots)


def test_the_meta_bar_is_checked():
    from arena.league.config import GauntletConfig, LeagueConfig

    with pytest.raises(ValueError, match=r"league.meta_bar=1.5 must be a number in \(0, 1\]"):
        LeagueConfig(publish="nash", meta_bar=1.5).validate()
    with pytest.raises(ValueError, match="league.meta_bar=0.8 filters PSRO's meta-game"):
        LeagueConfig(meta_bar=0.8).validate()
    with pytest.raises(ValueError, match="league.gauntlet.games=0 turns the gauntlet off"):
        LeagueConfig(publish="nash", meta_bar=0.8, gauntlet=GauntletConfig(games=0)).validate()
    assert LeagueConfig(publish="nash", meta_bar=0.8).validate()
