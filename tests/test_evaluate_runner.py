"""Head-to-head matches: honest scores, side-swapped seed-paired games, fixed quotas, SPRT early stops."""

from collections import Counter

import numpy as np
import pytest

import arena
from arena.agents.players import resolve_player
from arena.evaluation.pairing import paired_layout
from arena.evaluation.report import format_match
from arena.evaluation.runner import MatchSettings, SprtSettings, play_match


def play(a, b, game="rpsw", **settings):
    overrides = settings.get("overrides", {})
    team_sizes = settings.get("team_sizes", (1, 1))
    players = [resolve_player(p, game, team_sizes, overrides=overrides) for p in (a, b)]
    return play_match(*players, MatchSettings(game=game, num_threads=1, **settings))


def test_a_bot_against_itself_scores_about_half():
    result = play("scripted:random", "scripted:random", games=400, num_envs=40)
    assert result.games == 400
    score, lo, hi = result.score()
    assert lo < 0.5 < hi and hi - lo < 0.15
    elo, elo_lo, elo_hi = result.elo()
    assert elo_lo < 0 < elo_hi


def test_heuristic_pilot_beats_the_random_pilot():
    result = play("scripted:heuristic", "scripted:random", game="midrange", games=16, num_envs=16)
    score, lo, _ = result.score()
    assert result.games == 16 and score > 0.8 and lo > 0.5


def test_the_games_events_are_counted_per_match_for_each_side():
    result = play("scripted:heuristic", "scripted:random", game="midrange", games=16, num_envs=16)
    ev = result.events
    assert set(ev) == {"fired", "hits", "kills", "was_hit", "died", "left_arena", "missed", "evaded"}
    assert ev["fired"][0] > 0 and ev["fired"][1] > 0  # both shoot
    assert ev["hits"][0] == pytest.approx(ev["was_hit"][1])
    assert ev["hits"][1] == pytest.approx(ev["was_hit"][0])
    assert ev["missed"][0] == pytest.approx(ev["evaded"][1])
    assert ev["kills"][0] == pytest.approx(ev["died"][1] - ev["left_arena"][1])
    # the heuristic wins most games, nearly all by shooting the random pilot down
    assert ev["kills"][0] > 0.5 and result.as_dict()["events_per_match"]["kills"]["a"] == ev["kills"][0]
    rounds = play("scripted:counter", "scripted:random", games=8, num_envs=8).events
    assert rounds["round_won"][0] == pytest.approx(rounds["round_lost"][1])


def test_every_game_is_played_from_both_sides_and_scored_from_a():
    # counter beats constant (rock) every round from either side: A's wins prove both mappings right.
    strong = play("scripted:counter", "scripted:constant", games=20, num_envs=10)
    assert (strong.wins, strong.draws, strong.losses) == (20, 0, 0)
    assert Counter(m.a_team for m in strong.matches) == {0: 10, 1: 10}
    assert all(m.a_team == m.env % 2 for m in strong.matches)
    weak = play("scripted:constant", "scripted:counter", games=20, num_envs=10)
    assert (weak.wins, weak.draws, weak.losses) == (0, 0, 20)


def test_both_envs_of_a_pair_start_every_match_from_the_same_spawn():
    env = arena.make("midrange", num_envs=6, num_threads=1, time_limit_s=4.0)
    layout = paired_layout(env, seed=3)
    assert all(env.team_of_row[r] == layout.env_of_row[r] % 2 for r in layout.a_rows)
    assert all(env.team_of_row[r] != layout.env_of_row[r] % 2 for r in layout.b_rows)
    env.reset_envs(layout.env_seeds)
    first = env.world_state()
    spawns = {e: [first["fighter_x"][e].copy()] for e in range(6)}  # fighter x of each match's spawn
    rng = np.random.default_rng(0)
    for _ in range(3 * 20 + 5):  # 4 s of game time is 20 decisions: three matches per env
        _, _, _, _, infos = env.step(rng.integers(0, [5, 3, 2], size=(env.num_agents, 3)))
        state = env.world_state()  # finished envs already hold their next spawn
        for e in np.flatnonzero(infos["done"]):
            spawns[e].append(state["fighter_x"][e].copy())
    for pair in range(3):
        left, right = spawns[2 * pair], spawns[2 * pair + 1]
        assert len(left) >= 3 and len(right) >= 3
        for a, b in zip(left, right, strict=False):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(spawns[0][0], spawns[2][0])  # pairs differ from each other


def test_each_env_plays_a_fixed_quota_and_odd_requests_round_up_to_pairs():
    result = play("scripted:random", "scripted:cycle", games=31, num_envs=8)
    assert result.games == 32
    per_env = Counter(m.env for m in result.matches)
    assert per_env == dict.fromkeys(range(8), 4)
    assert sorted(m.index for m in result.matches if m.env == 5) == [0, 1, 2, 3]


def test_sprt_stops_early_on_a_lopsided_match():
    test = SprtSettings(elo0=0, elo1=50)
    result = play("scripted:counter", "scripted:constant", games=2000, num_envs=32, sprt=test)
    assert result.sprt_verdict == "H1" and result.stopped_early
    assert result.games < 100 and result.games % 2 == 0
    assert result.sprt_llr > 2.9
    losing = play("scripted:constant", "scripted:counter", games=2000, num_envs=32, sprt=test)
    assert losing.sprt_verdict == "H0" and losing.games < 100


def test_sprt_counts_pair_games_in_a_fixed_order_not_in_finishing_order():
    test = SprtSettings(elo0=0, elo1=50)
    result = play("scripted:heuristic", "scripted:random", game="midrange", games=400, num_envs=16, sprt=test)
    assert result.stopped_early
    pairs_counted = result.games // 2
    expected = [(k, pair) for k in range(25) for pair in range(8)][:pairs_counted]  # round-major
    counted = sorted({(m.index, m.env // 2) for m in result.matches})
    assert counted == sorted(expected)


def test_team_games_and_game_settings_work_alike():
    teams = play("scripted:heuristic", "scripted:random", game="midrange", games=8, num_envs=8,
                 team_sizes=(2, 2), overrides={"time_limit_s": 60.0})
    assert teams.games == 8 and teams.score()[0] > 0.5
    short = play("scripted:random", "scripted:random", games=10, overrides={"rounds": 3})
    assert {m.length for m in short.matches} == {3}


def test_a_team_games_events_are_counted_per_fighter_and_who_died_first():
    result = play("scripted:heuristic", "scripted:evader", game="midrange", games=12, num_envs=12,
                  team_sizes=(2, 2), overrides={"time_limit_s": 120.0})
    a, b = result.fighters
    assert len(a) == len(b) == 2  # two places a side
    for side, k in ((a, 0), (b, 1)):
        for name, (per_a, per_b) in result.events.items():
            assert sum(f[name] for f in side) == pytest.approx((per_a, per_b)[k])  # the places add up
    assert all(f["fired"] == 0 for f in b)  # evaders never fire
    assert all(f["fired"] > 0 for f in a)
    # of a side's (at most two) losses in a match, one or both (in the same step) died first
    died_b = result.events["died"][1]
    assert died_b > 0 and died_b / 2 <= sum(f["died_first"] for f in b) <= died_b
    assert sum(f["died_first"] for f in a) <= result.events["died"][0]
    text = format_match(result)
    assert "fighter" in text and "scripted:evader #1:" in text and "died_first" in text
    assert result.as_dict()["events_per_fighter"]["b"][0]["fired"] == 0


def test_in_nvm_each_place_counts_only_the_matches_it_played():
    result = play("scripted:heuristic", "scripted:random", game="midrange", games=8, num_envs=8,
                  team_sizes=(2, 1), overrides={"time_limit_s": 60.0})
    a, b = result.fighters
    assert len(a) == len(b) == 2  # A and B each play the pair in half the games
    fired = result.events["fired"][0]
    # the pair's second fighter played half the matches: its per-match figure counts only those
    assert a[0]["fired"] + a[1]["fired"] / 2 == pytest.approx(fired)


def test_sprt_settings_need_elo1_above_elo0():
    with pytest.raises(ValueError, match="elo1 > elo0"):
        SprtSettings(elo0=10, elo1=0)
