"""Shot geometry of a midrange evaluation: where each side fired from, and how many shots hit."""

import json

import pytest

from arena.agents.players import resolve_player
from arena.evaluate import main
from arena.evaluation.runner import MatchSettings, play_match
from arena.games.midrange.shots import ShotRecorder
from arena.replay.record import ReplayRecorder


def play(a, b, games=16, recorder=None):
    players = [resolve_player(p, "midrange") for p in (a, b)]
    settings = MatchSettings(game="midrange", games=games, num_envs=games, num_threads=1, seed=3)
    return play_match(*players, settings, recorder=recorder)


def test_shots_are_counted_with_the_games_fired_and_hits_events():
    shots = ShotRecorder()
    result = play("scripted:heuristic", "scripted:random", recorder=shots)
    mine, theirs = shots.summary()
    assert mine.shots == pytest.approx(result.events["fired"][0] * result.games)
    assert theirs.shots == pytest.approx(result.events["fired"][1] * result.games)
    assert mine.hits == pytest.approx(result.events["hits"][0] * result.games) and mine.hits > 0


def test_a_close_nose_on_shot_is_seen_as_one_and_hits_a_target_that_turns_away():
    # heuristic_10km fires inside 10 km within 20 degrees of its nose, at full throttle; the evader
    # never fires and drags the missile, which still hits (one shot, one kill, in every game)
    shots = ShotRecorder()
    result = play("scripted:heuristic_10km", "scripted:evader", recorder=shots)
    mine, theirs = shots.summary()
    assert result.wins == result.games and theirs.shots == 0 and theirs.percentiles == {}
    assert mine.shots == mine.hits == result.games and mine.hit_rate == 1.0
    range_km, off_nose, speed = (mine.percentiles[k] for k in ("range", "off the nose", "own speed"))
    assert 1.0 < range_km[0] and range_km[2] < 10.0
    assert off_nose[2] < 20.0
    assert speed[0] > 0.9  # at full throttle: around the fighter's top speed, ~1.2 VT


def test_shots_and_replays_can_watch_the_same_evaluation(tmp_path):
    shots, replays = ShotRecorder(), ReplayRecorder("first", 2)
    result = play("scripted:heuristic", "scripted:heuristic", games=4, recorder=[replays, shots])
    assert len(replays.replays(result.matches)) == 2
    assert shots.summary()[0].shots == pytest.approx(result.events["fired"][0] * result.games)


def test_shots_in_a_game_without_missiles_are_refused_by_name(capsys):
    players = [resolve_player("scripted:random", "rpsw") for _ in range(2)]
    with pytest.raises(ValueError, match="midrange"):
        play_match(*players, MatchSettings(game="rpsw", games=2, num_envs=2, num_threads=1),
                   recorder=ShotRecorder())
    assert main(["scripted:random", "scripted:random", "--game", "rpsw", "--shots", "--no-progress"]) == 2
    assert "--shots" in capsys.readouterr().err


def test_evaluate_shots_prints_and_writes_json_for_both_sides(capsys):
    argv = ["scripted:heuristic_10km", "scripted:evader", "--games", "4", "--envs", "4", "--threads", "1",
            "--no-progress", "--shots"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "scripted:heuristic_10km: 4 shots, 4 hits (100.0%)" in out and "off the nose (deg)" in out
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["shots"]["a"]["shots"] == 4
    decisions = data["shots"]["a"]["decisions"]
    assert data["shots"]["b"] == {"shots": 0, "hits": 0, "percentiles": {}, "decisions": decisions,
                                  "dry_fires": 0}


def test_fire_picked_with_nothing_launched_is_counted_per_alive_decision():
    # the random bot picks fire with probability 1/2 at every decision; only a few of its picks can
    # launch (6 missiles, a cooldown, the cone), the rest are dry. The heuristic and the evader pick
    # fire only where it launches, or never.
    shots = ShotRecorder()
    play("scripted:random", "scripted:heuristic", recorder=shots)
    rand, heuristic = shots.summary()
    assert rand.decisions == heuristic.decisions > 1000
    picks = rand.dry_fires + rand.shots
    assert abs(picks - rand.decisions / 2) < 5 * (rand.decisions / 4) ** 0.5
    assert rand.dry_fires > 10 * rand.shots and rand.dry_fire_rate == rand.dry_fires / rand.decisions
    assert heuristic.dry_fires == 0 and heuristic.shots > 0
    assert any("fire picked with nothing launched" in line for line in rand.lines("random"))
    shots = ShotRecorder()
    play("scripted:heuristic_10km", "scripted:evader", recorder=shots)
    assert [s.dry_fires for s in shots.summary()] == [0, 0]
