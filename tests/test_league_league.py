"""The League facade: write-through to the store and exact resume from a run directory."""

import pytest

from arena.league.matchmaking.pfsp import Matchmaker
from arena.league.model.league import League
from arena.league.model.players import Player, snapshot_id
from arena.league.model.snapshots import SnapshotGate


def populate(league: League) -> None:
    league.add_player(Player("learner", "learner"))
    league.add_player(Player("scripted:random", "scripted"))
    league.add_player(Player(snapshot_id("learner", 0), "snapshot", path="s0.pt", sha256="cd" * 32, step=500,
                             parent="learner"))
    results = ["win", "win", "draw", "loss", "win"]
    for i, outcome in enumerate(results):
        league.record_match(["learner"], ["scripted:random"], outcome, length=50, learner_step=100 * i)
        league.record_match(["learner"], [snapshot_id("learner", 0)], outcome, learner_step=100 * i)
    league.record_match(["learner"], ["learner"], "win", learner_step=600)  # mirror self-play


def test_resume_rebuilds_the_same_league(tmp_path):
    league = League.open(tmp_path, decay=0.95, ratings_config={"draw_probability": 0.2})
    populate(league)
    before = (league.ratings.as_dict(), league.payoff.wdl("learner", "scripted:random"), league.match_count)
    league.close()

    resumed = League.open(tmp_path)  # settings come back from the store's meta table
    assert resumed.payoff.decay == 0.95
    assert resumed.ratings.env.draw_probability == 0.2
    assert resumed.pool.ids == ["learner", "scripted:random", snapshot_id("learner", 0)]
    assert resumed.ratings.as_dict() == before[0]
    assert resumed.payoff.wdl("learner", "scripted:random") == pytest.approx(before[1])
    assert resumed.match_count == before[2] == 11
    resumed.close()


def test_mirror_matches_are_stored_but_not_rated(tmp_path):
    league = League.open(tmp_path)
    league.add_player(Player("learner", "learner"))
    league.record_match(["learner"], ["learner"], "win")
    assert "learner" not in league.ratings
    assert league.store.match_count() == 1
    league.close()


def test_league_feeds_matchmaker_and_snapshot_gate(tmp_path):
    league = League.open(tmp_path)
    populate(league)
    rates = league.win_rates_vs_pool("learner")
    assert set(rates) == {"scripted:random", snapshot_id("learner", 0)}
    assert rates["scripted:random"] == (pytest.approx(3.5 / 5), 5.0)
    gate = SnapshotGate(beat_all_threshold=0.6, min_games=5)
    assert gate.should_snapshot(1000, league.last_snapshot_step("learner"), rates)
    mm = Matchmaker(league.pool, league.payoff, {"pfsp": 0.8, "scripted": 0.2}, seed=0)
    assert set(mm.choose_many("learner", 50)) <= {"scripted:random", snapshot_id("learner", 0)}
    league.close()


def test_unknown_players_are_rejected_before_anything_is_written(tmp_path):
    league = League.open(tmp_path)
    league.add_player(Player("learner", "learner"))
    with pytest.raises(ValueError, match="unknown player 'ghost'"):
        league.record_match(["learner"], ["ghost"], "win")
    assert league.store.match_count() == 0
    league.close()
