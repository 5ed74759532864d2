"""A league's fixed players: ``league.scripted`` (null: the env preset's ``env.league_bots``, else the
game's reference bots), then the bots a recipe adds for one game (``league.extra_bots``)."""

from __future__ import annotations

import json

import pytest

from arena.agents.scripted import REFERENCE_BOTS
from arena.config import compose_run_config
from arena.league.config import league_config
from arena.league.run.league_run import LeagueRun
from arena.train import run_league_config


def scripted_players(run: LeagueRun) -> list[str]:
    return [p.player_id for p in run.league.pool.of_kind("scripted")]


def test_extra_bots_join_the_leagues_scripted_players_in_their_game_only(tmp_path):
    config = league_config({"extra_bots": {"midrange": ["freestyle"]}}, "midrange")
    assert config.bots("midrange") == [*REFERENCE_BOTS["midrange"], "freestyle"]
    assert config.bots("rpsw") == list(REFERENCE_BOTS["rpsw"])
    run = LeagueRun(config, tmp_path / "midrange", game="midrange")
    try:
        assert scripted_players(run) == [f"scripted:{b}" for b in (*REFERENCE_BOTS["midrange"], "freestyle")]
        stored = json.loads(run.league.store.meta()["league_config"])
        assert stored["extra_bots"] == {"midrange": ["freestyle"]}
    finally:
        run.close()
    run = LeagueRun(config, tmp_path / "rpsw", game="rpsw")
    try:
        assert scripted_players(run) == [f"scripted:{b}" for b in REFERENCE_BOTS["rpsw"]]
    finally:
        run.close()


def test_extra_bots_follow_the_named_or_preset_bots_and_skip_one_already_there():
    adding = "+league.extra_bots={midrange:[freestyle]}"
    two = run_league_config(compose_run_config(["env=midrange_2v2", "+league=selfplay", adding]))
    assert two.bots("midrange") == ["heuristic", "evader", "freestyle"]  # env=midrange_2v2's league_bots
    named = league_config({"scripted": ["scripted:freestyle", "heuristic"],
                           "extra_bots": {"midrange": ["freestyle"]}}, "midrange")
    assert named.bots("midrange") == ["scripted:freestyle", "heuristic"]
    assert league_config({}, "midrange").bots("midrange") == list(REFERENCE_BOTS["midrange"])


@pytest.mark.parametrize(("extra", "message"), [
    ({"midrang": ["freestyle"]}, "league.extra_bots.midrang: unknown game 'midrang'; games: midrange"),
    ({"midrange": ["ace"]}, r"league.extra_bots.midrange names bots \['ace'\].*available: .*freestyle"),
    ({"rpsw": ["freestyle"]}, r"league.extra_bots.rpsw names bots \['freestyle'\].*available: .*constant"),
])
def test_extra_bots_for_an_unknown_game_or_bot_are_refused_naming_what_is_allowed(extra, message):
    with pytest.raises(ValueError, match=message):
        league_config({"extra_bots": extra}, "midrange")
