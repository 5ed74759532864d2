"""The freestyle pilot (``arena/games/midrange/freestyle.py``): the varied pilot's numbers plus an
after-launch habit, a missile discipline and a defence drawn per match, each flown as drawn in
set-up situations of the compiled core; opt-in to a league's pool, out of the gauntlet."""

from __future__ import annotations

import numpy as np
import pytest

from arena.agents.scripted import REFERENCE_BOTS, SCRIPTED_BOTS, make_scripted
from arena.bench.pilots import play_matches
from arena.games.midrange.bots import VARIED_RANGES
from arena.games.midrange.freestyle import AFTER_LAUNCH, DEFENCES, SALVO_SHARE, FreestylePilot
from arena.league.config import LeagueConfig
from tests.test_held_out_pilots import OWN_MISSILE_AWAY
from tests.test_scripted_pilots import FIRE, KM, RUDDER, STRAIGHT, observe, real_rows

# the heuristic's own numbers, in VARIED_RANGES' order, then full throttle and no patience
HEURISTIC_NUMBERS = [14.0, 8.0, 20.0, 40.0, 6.0, 20.0, 70.0, 2.0, np.inf]


def flown(after: str = "nose", salvo: bool = False) -> FreestylePilot:
    """A freestyle pilot whose row 0 flies the heuristic's numbers with the habits given."""
    pilot = make_scripted("scripted:freestyle", "midrange", seed=0)
    pilot.act(observe(), np.array([0]), np.array([True]))
    pilot.table[0] = [*HEURISTIC_NUMBERS, AFTER_LAUNCH.index(after), float(salvo)]
    return pilot


def act(pilot: FreestylePilot, obs: np.ndarray) -> np.ndarray:
    return pilot.act(obs, np.array([0]), np.array([False]))[0]


def test_the_freestyle_pilot_is_opt_in_for_a_league_and_out_of_the_gauntlet():
    assert "freestyle" in SCRIPTED_BOTS["midrange"]
    assert "freestyle" not in REFERENCE_BOTS["midrange"]
    assert SCRIPTED_BOTS["midrange"][-1] == "freestyle"  # last: the other bots keep their critic heads
    LeagueConfig(scripted=["heuristic", "freestyle"]).validate("midrange")


def test_the_freestyle_pilot_draws_each_habit_in_its_share_beside_the_varied_numbers():
    pilot = make_scripted("scripted:freestyle", "midrange", seed=4)
    obs = np.tile(real_rows(), (32, 1))  # 2048 rows
    pilot.act(obs, np.arange(len(obs)), np.ones(len(obs), dtype=bool))
    column = {name: pilot.table[:, i] for i, name in enumerate(FreestylePilot.COLUMNS)}
    for i, habit in enumerate(AFTER_LAUNCH):
        assert abs((column["after_launch"] == i).mean() - (0.4, 0.3, 0.3)[i]) < 0.05, habit
    assert abs(column["salvo"].mean() - SALVO_SHARE) < 0.05
    drag_at_once = column["drag_time_s"] > 1e6
    never = (column["defend_time_s"] == 0.0) & (column["defend_range_km"] == 0.0)
    assert abs(drag_at_once.mean() - 0.3) < 0.05 and abs(never.mean() - 0.2) < 0.05
    assert not (drag_at_once & never).any()
    for name, (low, high) in VARIED_RANGES.items():
        kept = column[name][~drag_at_once & ~never]
        assert ((kept >= low) & (kept <= high)).all(), name
    assert len(DEFENCES) == 3


def test_after_a_launch_the_freestyle_pilot_keeps_its_nose_cranks_or_turns_its_tail_as_drawn():
    def rudder(after: str, enemy: tuple[float, float], away: bool) -> int:
        missiles = [OWN_MISSILE_AWAY] if away else []
        return int(act(flown(after), observe(enemy=enemy, missiles=missiles))[RUDDER])

    ahead_left = (15 * KM, 8 * KM)  # ~28 deg left of the nose
    behind_left = (-8 * KM, 15 * KM)  # ~118 deg left
    for after in AFTER_LAUNCH:  # no missile of its own in flight: every habit attacks
        assert rudder(after, ahead_left, away=False) > STRAIGHT, after
    assert rudder("nose", ahead_left, away=True) > STRAIGHT  # still at the enemy
    assert rudder("crank", ahead_left, away=True) < STRAIGHT  # 70 deg off: past the nose, to the right
    assert rudder("tail", ahead_left, away=True) < STRAIGHT  # the short way round to put it behind
    assert rudder("crank", behind_left, away=True) > STRAIGHT  # 118 - 70 = 48 deg: still left
    assert rudder("tail", behind_left, away=True) < STRAIGHT


def test_a_salvo_freestyle_pilot_fires_while_its_last_missile_flies_and_the_others_wait():
    with_one_away = observe(enemy=(15 * KM, 0.0), missiles=[OWN_MISSILE_AWAY])
    assert act(flown(salvo=True), with_one_away)[FIRE] == 1
    assert act(flown(salvo=False), with_one_away)[FIRE] == 0
    assert act(flown(salvo=False), observe(enemy=(15 * KM, 0.0)))[FIRE] == 1


@pytest.mark.parametrize(("defence", "rudder"), [("crank_then_drag", "turns"), ("drag", "straight"),
                                                 ("none", "at_enemy")])
def test_the_freestyle_pilot_meets_a_missile_with_the_defence_it_drew(defence, rudder):
    pilot = flown()
    if defence == "drag":
        pilot.table[0, FreestylePilot.COLUMNS.index("drag_time_s")] = 1e9
    if defence == "none":
        pilot.table[0, FreestylePilot.COLUMNS.index("defend_time_s")] = 0.0
        pilot.table[0, FreestylePilot.COLUMNS.index("defend_range_km")] = 0.0
    # a missile 25 km behind, closing at 900 m/s: 28 s to go, inside the heuristic's 40 s to defend
    # and beyond its 20 s to drag; the enemy 20 km ahead-left
    chasing = (1, 0, (-25 * KM, 0.0), (1300.0, 0.0), 8.0)
    action = act(pilot, observe(enemy=(20 * KM, 20 * KM), missiles=[chasing]))
    if rudder == "straight":
        assert action[RUDDER] == STRAIGHT  # the missile already on its tail
    elif rudder == "at_enemy":
        assert action[RUDDER] > STRAIGHT  # ignores it: toward the enemy on its left
    else:
        assert action[RUDDER] != STRAIGHT  # cranks: the threat 70 deg off the nose


def test_the_freestyle_pilot_is_the_same_for_the_same_seed_resumes_and_refuses_a_varied_state():
    obs, rows, starts = real_rows(), np.arange(64), np.ones(64, dtype=bool)
    a, b = (make_scripted("freestyle", "midrange", seed=7) for _ in range(2))
    np.testing.assert_array_equal(a.act(obs, rows, starts), b.act(obs, rows, starts))
    restored = make_scripted("freestyle", "midrange", seed=0)
    restored.load_state_dict(a.state_dict())
    half = np.arange(64) % 2 == 0
    np.testing.assert_array_equal(restored.act(obs, rows, half), a.act(obs, rows, half))
    np.testing.assert_array_equal(restored.table, a.table)
    varied = make_scripted("varied", "midrange", seed=7)
    varied.act(obs, rows, starts)
    with pytest.raises(ValueError, match="11 numbers per row"):
        restored.load_state_dict(varied.state_dict())


def test_the_rules_called_without_act_s_rows_draw_numbers_for_that_call_alone():
    obs = real_rows()
    pilot = make_scripted("freestyle", "midrange", seed=3)
    twin = make_scripted("freestyle", "midrange", seed=3)
    first = pilot._act(obs)  # the rules alone: no row is kept, every habit read from this call's draw
    assert first.shape == (len(obs), 3) and pilot._current is None and len(pilot.table) == 0
    np.testing.assert_array_equal(first, twin._act(obs))
    pilot.act(obs, np.arange(len(obs)), np.ones(len(obs), dtype=bool))  # and act's rows work after it
    assert pilot._current is None and len(pilot.table) == len(obs)


def test_the_freestyle_pilot_plays_whole_matches_the_same_whatever_the_thread_count():
    results = [play_matches(make_scripted("freestyle", "midrange", seed=3),
                            make_scripted("heuristic", "midrange"), 64, seed=5, num_threads=threads)
               for threads in (1, 2)]
    assert results[0] == results[1]
    assert results[0].wins + results[0].draws > 0  # some styles hold their own against the heuristic
