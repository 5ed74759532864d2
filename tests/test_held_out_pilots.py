"""The held-out midrange pilots (``arena/games/midrange/strangers.py``): each flies the habit it is
named for, in set-up situations of the compiled core, and none of them is in a league's pool or
gauntlet unless asked for."""

from __future__ import annotations

import numpy as np
import pytest

from arena.agents.scripted import REFERENCE_BOTS, SCRIPTED_BOTS, make_scripted
from arena.games.midrange.strangers import STRANGERS, stranger
from arena.league.config import LeagueConfig
from tests.test_scripted_pilots import FIRE, KM, RUDDER, STRAIGHT, THROTTLE, observe

OWN_MISSILE_AWAY = (0, 1, (2 * KM, 0.0), (1100.0, 0.0), 2.0)  # mine, 2 s out, boosting at the enemy


def test_held_out_pilots_can_be_named_but_are_in_no_default_pool_or_gauntlet():
    assert set(STRANGERS) <= set(SCRIPTED_BOTS["midrange"])
    assert not set(STRANGERS) & set(REFERENCE_BOTS["midrange"])
    assert LeagueConfig().scripted is None  # null: the reference bots alone
    for name in STRANGERS:
        assert make_scripted(f"scripted:{name}", "midrange").name == name


def test_an_unknown_held_out_pilot_is_refused_with_the_names_allowed():
    with pytest.raises(ValueError, match="sniper, salvo, rusher"):
        stranger("ace")


def test_the_sniper_fires_from_further_out_than_the_heuristic():
    head_on = observe(enemy=(25 * KM, 0.0))  # closing at 800 m/s: heuristic range ~20 km
    assert stranger("sniper").act(head_on)[0, FIRE] == 1
    assert make_scripted("heuristic", "midrange").act(head_on)[0, FIRE] == 0


def test_the_sniper_turns_its_tail_to_the_enemy_once_its_missile_is_away():
    pilot = stranger("sniper")
    attacking = pilot.act(observe(enemy=(20 * KM, 2 * KM)))[0]
    scooting = pilot.act(observe(enemy=(20 * KM, 2 * KM), missiles=[OWN_MISSILE_AWAY]))[0]
    assert attacking[RUDDER] > STRAIGHT  # toward the enemy, on its left
    assert scooting[RUDDER] < STRAIGHT  # the short way round to put it behind: right
    assert scooting[FIRE] == 0


def test_the_salvo_fires_again_while_its_last_missile_is_still_flying():
    with_one_away = observe(enemy=(15 * KM, 0.0), missiles=[OWN_MISSILE_AWAY])
    assert stranger("salvo").act(with_one_away)[0, FIRE] == 1
    assert make_scripted("heuristic", "midrange").act(with_one_away)[0, FIRE] == 0


def test_the_salvo_holds_fire_beyond_24_km_and_during_cooldown():
    pilot = stranger("salvo")
    assert pilot.act(observe(enemy=(23 * KM, 0.0)))[0, FIRE] == 1
    assert pilot.act(observe(enemy=(26 * KM, 0.0)))[0, FIRE] == 0
    assert pilot.act(observe(enemy=(23 * KM, 0.0), cooldown=0.3))[0, FIRE] == 0


def test_the_rusher_ignores_a_missile_and_holds_fire_until_6_km():
    pilot = stranger("rusher")
    threat = (1, 0, (3 * KM, 1.5 * KM), (-900.0, -450.0), 5.0)  # close, coming at me from the left
    action = pilot.act(observe(enemy=(10 * KM, 0.0), missiles=[threat]))[0]
    assert action[RUDDER] == STRAIGHT and action[THROTTLE] == 2  # still straight at the enemy
    assert action[FIRE] == 0
    assert pilot.act(observe(enemy=(5 * KM, 0.0)))[0, FIRE] == 1


@pytest.mark.parametrize("name", STRANGERS)
def test_held_out_pilots_drag_or_ignore_a_close_threat_as_their_style_says(name):
    chasing = (1, 0, (-4 * KM, 0.0), (900.0, 0.0), 8.0)  # on my tail, closing
    action = stranger(name).act(observe(enemy=(-20 * KM, 20 * KM), missiles=[chasing]))[0]
    if name == "rusher":
        assert action[RUDDER] > STRAIGHT  # turns toward the enemy behind on its left, threat or not
    else:
        assert action[RUDDER] == STRAIGHT  # keeps the missile on its tail


@pytest.mark.parametrize("name", STRANGERS)
def test_held_out_pilots_decide_each_row_alone(name):
    rows = np.concatenate([observe(enemy=(8 * KM, 0.5 * KM)), observe(enemy=(25 * KM, -3 * KM)),
                           observe(enemy=(10 * KM, 0.0), missiles=[OWN_MISSILE_AWAY])])
    pilot = stranger(name)
    together = pilot.act(rows)
    alone = np.concatenate([pilot.act(rows[i : i + 1]) for i in range(len(rows))])
    np.testing.assert_array_equal(together, alone)
