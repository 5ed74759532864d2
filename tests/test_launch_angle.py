"""The enemy a launch locks, read from the observation (MidrangeObsLayout.launch_target), and what
reads it: the launch_angle reward term and the shot geometry of an evaluation (ShotRecorder)."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.evaluation.pairing import layout_of
from arena.games.midrange.obs import FIGHTER, MidrangeObsLayout
from arena.games.midrange.rewards import LaunchAngle
from arena.games.midrange.shots import ShotRecorder
from arena.rewards import RewardError, StepBatch, build_reward
from tests.test_env_physics import blank_state, put_fighter
from tests.test_rewards import fighter_obs, midrange_batch

SPEED = 300.0


def two_enemies_world(near_deg: float, far_deg: float):
    """A 2v2 env: fighter 0 at the origin flying +x; enemy 2 at 8 km, ``near_deg`` off its nose (left),
    enemy 3 at 15 km, ``far_deg`` off its nose (right); the ally, fighter 1, 3 km behind. Returns the
    env and the observation of that state."""
    env = arena.make("midrange", num_envs=1, num_threads=1, team_sizes=(2, 2))
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, SPEED, 0.0)
    put_fighter(ws, 1, -3000.0, 0.0, SPEED, 0.0)
    for i, (range_m, deg) in ((2, (8000.0, near_deg)), (3, (15000.0, -far_deg))):
        a = np.radians(deg)
        put_fighter(ws, i, range_m * np.cos(a), range_m * np.sin(a), -SPEED, 0.0)
    obs = np.array(env.set_world_state(ws))
    return env, obs


def test_a_launch_locks_the_enemy_closest_to_the_nose_not_the_nearest_and_the_observation_names_it():
    env, obs = two_enemies_world(near_deg=40.0, far_deg=5.0)
    layout = MidrangeObsLayout((2, 2), int(env.params["tracked_missiles"]))
    assert layout.enemies(obs)[0, 0, FIGHTER.index("range")] == pytest.approx(0.8, abs=1e-3), "nearest first"
    target, found = layout.launch_target(obs[:1], float(env.params["launch_cone_deg"]))
    assert found[0] and target[0, FIGHTER.index("range")] == pytest.approx(1.5, abs=1e-3)
    assert np.degrees(np.arccos(target[0, FIGHTER.index("bearing_cos")])) == pytest.approx(5.0, abs=0.1)

    actions = np.array([[2, 2, 1], [2, 2, 0], [2, 2, 0], [2, 2, 0]], np.int32)  # only fighter 0 fires
    before = obs.copy()
    after, rewards, terminals, truncations, infos = env.step(actions)
    ws = env.world_state()
    assert ws["missile_active"][0, 0] and ws["missile_target"][0, 0] == 3, "the core locked the far enemy"

    batch = StepBatch.from_env(env, before, actions, after, rewards, terminals, truncations, infos)
    price = LaunchAngle()(batch)
    assert price[0] == pytest.approx(-5.0 / 60.0, abs=2e-3)
    np.testing.assert_array_equal(price[1:], 0.0)


def test_with_no_enemy_in_the_cone_nothing_is_locked():
    env, obs = two_enemies_world(near_deg=70.0, far_deg=80.0)
    layout = MidrangeObsLayout((2, 2), int(env.params["tracked_missiles"]))
    _, found = layout.launch_target(obs, float(env.params["launch_cone_deg"]))
    assert not found[0]


@pytest.mark.parametrize("off_deg, cone_deg, expected", [(0.0, None, 0.0), (30.0, None, -0.5),
                                                         (59.0, None, -59.0 / 60.0), (30.0, 20.0, -1.0)])
def test_launch_angle_charges_the_locked_enemys_angle_over_the_cone_and_only_on_a_launch(off_deg, cone_deg,
                                                                                        expected):
    obs = fighter_obs(2, enemy_bearing_cos=float(np.cos(np.radians(off_deg))))
    batch = midrange_batch(obs, obs)
    batch.events[0, batch.event_names.index("fired")] = 1  # row 0 launched, row 1 did not
    price = LaunchAngle(cone_deg=cone_deg)(batch)
    assert price[0] == pytest.approx(expected, abs=1e-4)
    assert price[1] == 0.0


def test_launch_angle_is_a_reward_term_by_name_and_refuses_a_bad_cone_by_name():
    terms = {"launch_angle": {"_target_": "launch_angle", "weight": 0.5}}
    reward = build_reward(terms, discount=(0.995, False))
    obs = fighter_obs(1, enemy_bearing_cos=float(np.cos(np.radians(12.0))))
    batch = midrange_batch(obs, obs)
    batch.events[0, batch.event_names.index("fired")] = 1
    total, parts = reward(batch)
    assert total[0] == pytest.approx(-0.5 * 12.0 / 60.0, abs=1e-4) and "launch_angle" in parts
    for bad in (0.0, -5.0, float("nan"), "wide", True):
        with pytest.raises(RewardError, match="cone_deg"):
            LaunchAngle(cone_deg=bad)


def test_shot_geometry_in_team_games_is_that_of_the_locked_enemy_not_the_nearest():
    # two envs in the state of two_enemies_world (a paired evaluation's layout: A drives team 0 in env 0
    # and team 1 in env 1); fighter 0 fires in both, at the enemy 15 km out 5 degrees off its nose,
    # while the nearest enemy is 8 km out, 40 degrees off
    env = arena.make("midrange", num_envs=2, num_threads=1, team_sizes=(2, 2))
    one, _ = two_enemies_world(near_deg=40.0, far_deg=5.0)
    ws = {key: np.concatenate([value, value]) for key, value in one.world_state().items()}
    env.set_world_state(ws)
    recorder = ShotRecorder()
    recorder.start(env, layout_of(2, np.array([0, 0, 1, 1]), seed=0), None, None, None)
    actions = np.tile(np.array([[2, 2, 1], [2, 2, 0], [2, 2, 0], [2, 2, 0]], np.int32), (2, 1))
    _, _, _, _, infos = env.step(actions)
    recorder.step(env, actions, infos, np.ones(2, bool))
    for side in recorder.summary():
        assert side.shots == 1
        assert side.percentiles["range"][1] == pytest.approx(15.0, abs=0.05)
        assert side.percentiles["off the nose"][1] == pytest.approx(5.0, abs=0.1)
