"""Replays recorded from inside a head-to-head evaluation: which games are kept, the file format, and the
compiled core playing every recorded game again bit for bit."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import arena
from arena.agents.players import game_spaces, resolve_player
from arena.evaluation.runner import MatchResult, MatchSettings, SprtSettings, play_match
from arena.replay.file import (
    FRAME_FIELDS,
    Replay,
    load_replay,
    replay_file_name,
    save_replay,
)
from arena.replay.record import ReplayRecorder
from arena.replay.simulate import ReplayMismatchError, check_replay, resimulate

# Close spawns and a short time limit: games end by kills within seconds of game time.
CLOSE = {"time_limit_s": 120, "spawn_distance_min_m": 15000, "spawn_distance_max_m": 20000}


def play(a: str, b: str, recorder: ReplayRecorder | None, *, games: int = 8, envs: int = 4, seed: int = 1,
         team_sizes: tuple[int, int] = (1, 1), sprt: SprtSettings | None = None) -> MatchResult:
    settings = MatchSettings(game="midrange", team_sizes=team_sizes, games=games, num_envs=envs, seed=seed,
                             num_threads=1, overrides=CLOSE, sprt=sprt)
    spaces = game_spaces("midrange", team_sizes, CLOSE)
    pa, pb = (resolve_player(f"scripted:{p}", "midrange", team_sizes, spaces=spaces) for p in (a, b))
    return play_match(pa, pb, settings, recorder=recorder)


@pytest.fixture(scope="module")
def every_game() -> tuple[MatchResult, list[Replay]]:
    """Two rounds of 4 envs of 2v2 (so the second game of each env too), every game recorded."""
    recorder = ReplayRecorder("all")
    result = play("heuristic_6km", "random", recorder, team_sizes=(2, 2))
    return result, recorder.replays(result.matches)


def test_every_recorded_game_is_played_again_bit_for_bit_by_the_core(every_game):
    result, replays = every_game
    assert len(replays) == len(result.matches) == 8
    assert {r.match_index for r in replays} == {0, 1}  # an env's later game too, not only its first
    for replay in replays:
        again = check_replay(replay)
        for name in FRAME_FIELDS:
            assert again.frames[name].tobytes() == replay.frames[name].tobytes()
        assert np.array_equal(again.events, replay.events)
        assert (again.outcome, again.end_reason) == (replay.outcome, replay.end_reason)


def test_recorded_games_hold_launches_kills_and_the_counted_results(every_game):
    result, replays = every_game
    for replay, match in zip(replays, result.matches, strict=True):
        assert (replay.env_index, replay.match_index) == (match.env, match.index)
        assert replay.a_outcome == match.a_outcome and replay.length == match.length
        assert replay.a_team == match.a_team
    fired = sum(int(r.events[:, :, r.event_names.index("fired")].sum()) for r in replays)
    kills = sum(int(r.events[:, :, r.event_names.index("kills")].sum()) for r in replays)
    assert fired > 0 and kills > 0
    assert any(r.frames["missile_active"].any() for r in replays)


def test_the_first_game_of_an_env_starts_from_its_seed_alone(every_game):
    _, replays = every_game
    first = [r for r in replays if r.match_index == 0]
    assert first
    for replay in first:
        env = arena.make("midrange", num_envs=1, num_threads=1, team_sizes=replay.team_sizes, **replay.params)
        env.reset_envs(np.array([replay.seed], dtype=np.uint64))
        spawn = env.world_state()
        for key, value in replay.initial_state.items():
            assert spawn[key][0].tobytes() == value.tobytes(), key


def test_a_changed_action_is_caught_by_the_check(every_game):
    _, replays = every_game
    replay = replays[0]
    t = replay.length // 2
    actions = replay.actions.copy()
    actions[t, 0, 0] = (actions[t, 0, 0] + 2) % 5  # another rudder for fighter 0
    tampered = Replay(**{**replay.__dict__, "actions": actions})
    with pytest.raises(ReplayMismatchError, match=rf"decision {t + 1}: fighter_"):
        check_replay(tampered)


def test_a_replay_round_trips_through_its_file(every_game, tmp_path):
    _, replays = every_game
    replay = replays[3]
    path = save_replay(replay, tmp_path / replay_file_name(replay))
    assert path.name == f"g00003-{replay.result_word}.npz"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind
    back = load_replay(path)
    assert back.meta() == replay.meta()
    for name in FRAME_FIELDS:
        assert back.frames[name].tobytes() == replay.frames[name].tobytes()
    assert back.actions.tobytes() == replay.actions.tobytes()
    assert back.events.tobytes() == replay.events.tobytes()
    assert {k: v.tobytes() for k, v in back.initial_state.items()} == {
        k: v.tobytes() for k, v in replay.initial_state.items()}
    check_replay(back)
    meta = back.meta()
    assert meta["players"][0] == {"side": "A", "name": "scripted:heuristic_6km", "sha256": None}
    assert meta["params"]["time_limit_s"] == 120 and meta["team_sizes"] == [2, 2]
    assert meta["event_names"][:2] == ["fired", "hits"]


def test_first_keeps_the_first_games_in_counting_order():
    recorder = ReplayRecorder("first", 3)
    result = play("heuristic_6km", "random", recorder, games=12, envs=6)
    chosen = recorder.replays(result.matches)
    assert [r.game_number for r in chosen] == [0, 1, 2]
    assert [(r.env_index, r.match_index) for r in chosen] == [(m.env, m.index) for m in result.matches[:3]]


@pytest.mark.parametrize(("which", "wanted"), [("losses", -1), ("wins", 1)])
def test_wins_and_losses_are_the_first_such_games_from_a_side(which, wanted):
    recorder = ReplayRecorder(which, 2)
    result = play("heuristic_6km", "random", recorder, games=12, envs=12)
    expected = [i for i, m in enumerate(result.matches) if m.a_outcome == wanted][:2]
    assert len(expected) == 2  # the pairing has both kinds of result
    chosen = recorder.replays(result.matches)
    assert [r.game_number for r in chosen] == expected
    assert all(r.a_outcome == wanted for r in chosen)
    check_replay(chosen[-1])


def test_recording_changes_no_result():
    plain = play("heuristic_6km", "random", None, games=12, envs=12)
    recorded = play("heuristic_6km", "random", ReplayRecorder("all"), games=12, envs=12)
    assert recorded.matches == plain.matches


def test_after_an_sprt_stop_only_the_counted_games_are_replays():
    recorder = ReplayRecorder("all")
    result = play("heuristic_6km", "heuristic_14km", recorder, games=200, envs=8,
                  sprt=SprtSettings(-50.0, 50.0))
    assert result.stopped_early
    chosen = recorder.replays(result.matches)
    assert [(r.env_index, r.match_index) for r in chosen] == [(m.env, m.index) for m in result.matches]


def test_resimulating_a_cut_replay_says_the_game_did_not_end(every_game):
    _, replays = every_game
    replay = replays[0]
    cut = Replay(**{**replay.__dict__, "actions": replay.actions[:-1], "events": replay.events[:-1],
                    "frames": {k: v[:-1] for k, v in replay.frames.items()}})
    with pytest.raises(ReplayMismatchError, match="did not end"):
        resimulate(cut)


def test_bad_recorder_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="'some'.*first"):
        ReplayRecorder("some")
    with pytest.raises(ValueError, match="games=0"):
        ReplayRecorder("first", 0)
    settings = MatchSettings(game="rpsw", games=2, num_threads=1)
    spaces = game_spaces("rpsw")
    bot = resolve_player("scripted:random", "rpsw", spaces=spaces)
    with pytest.raises(ValueError, match="rpsw"):
        play_match(bot, bot, settings, recorder=ReplayRecorder())


def test_damaged_or_foreign_files_are_refused_by_name(every_game, tmp_path):
    _, replays = every_game
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        load_replay(tmp_path / "nowhere.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="junk.npz is not a replay file"):
        load_replay(junk)
    good = save_replay(replays[0], tmp_path / "good.npz")
    with np.load(good) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    for change, message in (({"version": 99}, "version 99 is not supported"),
                            ({"format": "other"}, "not an arena-replay file"),
                            ({"outcome": 7}, "outcome=7")):
        bad = tmp_path / "bad.npz"
        np.savez(bad, **{**arrays, "meta": np.array(json.dumps({**meta, **change}))})
        with pytest.raises(ValueError, match=message):
            load_replay(bad)
    short = tmp_path / "short.npz"
    np.savez(short, **{**arrays, "fighter_x": arrays["fighter_x"][:-1]})
    with pytest.raises(ValueError, match="'fighter_x' has shape"):
        load_replay(short)
    with zipfile.ZipFile(good) as z:
        assert "meta.npy" in z.namelist()
