"""The split of targets in a team game (MidrangeObsLayout.assigned_enemy): each enemy is left to the
friendly fighter nearest it. The heuristic pilot attacks by it, and the pointing shaping can point by it
(``target: assigned``) instead of at each fighter's own nearest enemy."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.games.midrange.obs import FIGHTER, MidrangeObsLayout
from arena.games.midrange.rewards import Pointing
from arena.rewards import RewardError, StepBatch, build_reward
from tests.test_env_physics import blank_state, put_fighter

SPEED = 300.0
RANGE = FIGHTER.index("range")


def split_world():
    """A 2v2 env, everyone flying +x: fighter 0 at the origin; its ally, fighter 1, at (8, 3) km; enemy 2
    at (8, 0) km, fighter 0's nearest (8 km) but 3 km from the ally; enemy 3 at (0, -11) km, 11 km from
    fighter 0 and 16.1 km from the ally. Returns the env, its layout and the state's observation."""
    env = arena.make("midrange", num_envs=1, num_threads=1, team_sizes=(2, 2))
    ws = blank_state(env)
    for i, (x, y) in enumerate(((0.0, 0.0), (8000.0, 3000.0), (8000.0, 0.0), (0.0, -11000.0))):
        put_fighter(ws, i, x, y, SPEED, 0.0)
    obs = np.array(env.set_world_state(ws))
    return env, MidrangeObsLayout((2, 2), int(env.params["tracked_missiles"])), obs


def test_each_enemy_is_left_to_the_friendly_fighter_nearest_it_not_to_everyone_whose_nearest_it_is():
    _, layout, obs = split_world()
    enemies = layout.enemies(obs)
    pick = layout.assigned_enemy(obs)
    assert enemies[0, 0, RANGE] == pytest.approx(0.8, abs=1e-3), "fighter 0's nearest is enemy 2"
    assert enemies[0, pick[0], RANGE] == pytest.approx(1.1, abs=1e-3), "but enemy 2 is the ally's: 0 takes 3"
    assert enemies[1, pick[1], RANGE] == pytest.approx(0.3, abs=1e-3), "the ally takes enemy 2"
    # The other side: both of ours are nearest to enemy 2, which takes its own nearest of them (the
    # ally, 3 km); enemy 3 is nearest to neither and takes its own nearest (fighter 0, 11 km).
    assert enemies[2, pick[2], RANGE] == pytest.approx(0.3, abs=1e-3)
    assert enemies[3, pick[3], RANGE] == pytest.approx(1.1, abs=1e-3)


def test_a_fighter_nearest_to_no_enemy_takes_its_own_nearest_and_with_no_enemy_alive_none():
    env, layout, _ = split_world()
    ws = blank_state(env)
    # fighter 0 far behind its ally, which is nearer to both enemies
    for i, (x, y) in enumerate(((-20000.0, 0.0), (0.0, 0.0), (5000.0, 1000.0), (6000.0, -1000.0))):
        put_fighter(ws, i, x, y, SPEED, 0.0)
    obs = np.array(env.set_world_state(ws))
    pick = layout.assigned_enemy(obs)
    enemies = layout.enemies(obs)
    assert pick[0] == 0 and enemies[0, 0, RANGE] == pytest.approx(np.hypot(25.0, 1.0) / 10, abs=1e-3)
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, SPEED, 0.0)
    put_fighter(ws, 1, 1000.0, 0.0, SPEED, 0.0)
    obs = np.array(env.set_world_state(ws))
    np.testing.assert_array_equal(layout.assigned_enemy(obs)[:2], -1)


def test_pointing_at_the_assigned_enemy_credits_the_split_and_in_1v1_equals_the_nearest():
    env, _, obs = split_world()
    actions = np.full((4, 3), (2, 2, 0), np.int32)
    after, rewards, terminals, truncations, infos = env.step(actions)
    batch = StepBatch.from_env(env, obs, actions, after, rewards, terminals, truncations, infos)
    nearest = Pointing(gamma=1.0, bootstrap_truncation=False).potential(batch, obs)
    assigned = Pointing(gamma=1.0, bootstrap_truncation=False, target="assigned").potential(batch, obs)
    assert nearest[0] == pytest.approx(1.0, abs=1e-3), "enemy 2 is dead ahead"
    assert assigned[0] == pytest.approx(0.0, abs=1e-3), "enemy 3 is 90 degrees to the right"
    assert assigned[1] == pytest.approx(nearest[1]), "the ally's assigned enemy is its nearest"

    env1 = arena.make("midrange", num_envs=8, num_threads=1, seed=4)
    obs1 = np.array(env1.reset()[0])
    actions1 = np.zeros((len(obs1), 3), np.int32)
    after1, *rest = env1.step(actions1)
    batch1 = StepBatch.from_env(env1, obs1, actions1, after1, *rest)
    for zero_sum in (False, True):
        terms = [Pointing(gamma=0.99, bootstrap_truncation=False, zero_sum=zero_sum, target=t) for t in
                 Pointing.TARGETS]
        np.testing.assert_array_equal(terms[0](batch1), terms[1](batch1))


def test_an_unknown_pointing_target_is_refused_by_name():
    with pytest.raises(RewardError, match=r"target='nose'.*\['nearest', 'assigned'\]"):
        build_reward({"pointing": {"_target_": "pointing", "target": "nose"}}, discount=(0.99, False))
