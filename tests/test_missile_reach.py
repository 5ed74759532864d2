"""A missile's reach (arena/games/midrange/missile_reach.py) and the shaping term built on it (missile_reach).

The reach is checked twice: against a fine numerical integration of its own 1-D model, and against
the compiled core, where a missile fired at a target that flees straight away hits from just inside
its reach and misses from just outside.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import arena
from arena.games.midrange.missile_reach import MissileModel
from arena.games.midrange.obs import FIGHTER, MISSILE, SELF, MidrangeObsLayout
from arena.games.midrange.rewards import MissileReach
from arena.rewards import RewardError
from tests.test_env_physics import blank_state, put_fighter
from tests.test_rewards import CLOSE_FIGHT, fighter_obs, midrange_batch, rollout


def integrated_reach(model: MissileModel, speed: float, tof: float, flee: float, dt: float = 0.002) -> float:
    """The greatest gain on a target fleeing at ``flee``, by explicit Euler steps of dt s."""
    v, t, gained, best = speed, tof, 0.0, 0.0
    while t < model.max_time_s:
        thrust = model.thrust_g * model.g if t < model.burn_s else 0.0
        v += (thrust - model.cd0 * v * v) * dt
        t += dt
        if t >= model.burn_s and v < model.min_speed:
            break
        gained += (v - flee) * dt
        best = max(best, gained)
    return best


@pytest.mark.parametrize(
    "speed, tof, flee",
    list(itertools.product((250.0, 300.0, 450.0, 1200.0), (0.0, 5.0, 10.0, 30.0), (0.0, 300.0, 490.0))),
)
def test_reach_is_the_closed_form_of_the_missiles_flight_against_a_fleeing_target(speed, tof, flee):
    model = MissileModel()
    expected = integrated_reach(model, speed, tof, flee)
    assert float(model.reach(speed, tof, flee)) == pytest.approx(expected, abs=30.0)


def test_reach_shrinks_as_the_target_runs_faster_and_as_the_missile_ages():
    model = MissileModel()
    flee = np.linspace(0.0, 600.0, 13)
    assert np.all(np.diff(model.reach(300.0, 0.0, flee)) < 0)
    tof = np.linspace(10.0, 59.0, 12)  # coasting, with the speed the missile has at each age
    ages = model.reach(800.0, tof, 300.0)
    assert np.all(np.diff(ages) <= 0) and ages[-1] < ages[0]


def test_a_burnt_out_missile_slower_than_its_minimum_speed_or_out_of_time_has_no_reach():
    model = MissileModel()
    assert model.reach(150.0, 20.0, 0.0) == 0.0
    assert model.reach(900.0, 60.0, 0.0) == 0.0
    assert model.reach(150.0, 2.0, 0.0) > 10_000.0, "a slow missile still boosting is alive"


def test_the_model_reads_the_games_parameters():
    slow = MissileModel.from_params({"missile_thrust_g": 5.0, "missile_max_time_s": 30.0, "frame_skip": 6})
    assert (slow.thrust_g, slow.max_time_s, slow.burn_s) == (5.0, 30.0, 10.0)
    assert slow.reach(300.0, 0.0, 300.0) < MissileModel().reach(300.0, 0.0, 300.0)


@pytest.mark.parametrize("margin_m, hits", [(-1500.0, True), (1500.0, False)])
def test_in_the_core_a_missile_fired_inside_its_reach_at_a_fleeing_target_hits_outside_misses(margin_m, hits):
    """Both fighters fly along +x at the speed of half throttle (where thrust equals drag), the shooter
    behind; the target keeps fleeing straight away. The launch range is the reach plus ``margin_m``."""
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=6, arena_radius_m=1e7)
    cruise = float(np.sqrt(0.5 * 1.5 * 9.8 / (9.8 / 400.0**2)))  # half throttle: 1.5 g / 2 = Cd0 v^2
    launch_range = float(MissileModel().reach(cruise, 0.0, cruise)) + margin_m
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, cruise, 0.0)  # the shooter
    put_fighter(ws, 1, launch_range, 0.0, cruise, 0.0)  # the target, straight ahead, fleeing
    env.set_world_state(ws)
    act = np.array([[2, 1, 1], [2, 1, 0]], np.int32)  # straight, half throttle; only the shooter fires
    hit = False
    for step in range(700):  # 70 s: longer than any missile lives
        _, _, terminals, _, infos = env.step(act)
        act[0, 2] = 0
        hit |= bool(infos["events"][0, env.event_names.index("hits")])
        if step == 0:
            assert env.world_state()["missile_active"][0].any(), "the launch happened"
        if terminals.any():
            break
    assert hit == hits


def missile_obs(range_10km: float, speed_kms: float, block: str = "own_missiles", enemy_speed: float = 0.75,
                my_speed: float = 0.75) -> np.ndarray:
    """A 1v1 observation with one missile (age 0) in ``block`` and both fighters at the given speed/VT."""
    layout = MidrangeObsLayout((1, 1), 4)
    obs = fighter_obs()
    obs[:, SELF.index("speed")] = my_speed
    layout.enemies(obs)[:, 0, FIGHTER.index("speed")] = enemy_speed
    missile = getattr(layout, block)(obs)[:, 0]
    missile[:, MISSILE.index("present")] = 1.0
    missile[:, MISSILE.index("range")] = range_10km
    missile[:, MISSILE.index("speed")] = speed_kms
    return obs


def test_missile_reach_potential_pays_a_launch_inside_the_reach_and_charges_one_outside():
    term = MissileReach(gamma=1.0)
    reach_km = float(MissileModel().reach(300.0, 0.0, 300.0)) / 1000.0  # enemy at 0.75 VT = 300 m/s
    inside = missile_obs((reach_km - 5.0) / 10.0, 0.3)
    outside = missile_obs((reach_km + 5.0) / 10.0, 0.3)
    none = fighter_obs()
    assert term(midrange_batch(none, inside))[0] == pytest.approx(0.5, abs=1e-3)
    assert term(midrange_batch(none, outside))[0] == pytest.approx(-0.5, abs=1e-3)
    far = missile_obs((reach_km + 40.0) / 10.0, 0.3)
    assert term(midrange_batch(none, far))[0] == pytest.approx(-1.0), "each missile counts at most 1"
    # a threat counts the other way, with my own speed as the flight: running faster takes it out of reach
    threat = missile_obs((reach_km - 2.0) / 10.0, 0.3, block="threats")
    faster = missile_obs((reach_km - 2.0) / 10.0, 0.3, block="threats", my_speed=1.0)
    assert term.potential(midrange_batch(threat, threat), threat)[0] == pytest.approx(-0.2, abs=1e-3)
    assert term(midrange_batch(threat, faster))[0] > 0.2


def test_missile_reach_with_max_margin_zero_charges_only_shots_out_of_reach():
    term = MissileReach(gamma=1.0, max_margin=0.0)
    reach_km = float(MissileModel().reach(300.0, 0.0, 300.0)) / 1000.0
    none = fighter_obs()
    for inside_km in (1.0, 5.0, 12.0):  # closer inside the reach is worth no more
        assert term(midrange_batch(none, missile_obs((reach_km - inside_km) / 10.0, 0.3)))[0] == 0.0
    out_of_reach = missile_obs((reach_km + 5.0) / 10.0, 0.3)
    assert term(midrange_batch(none, out_of_reach))[0] == pytest.approx(-0.5, abs=1e-3)
    threat = missile_obs((reach_km + 5.0) / 10.0, 0.3, block="threats")
    assert term.potential(midrange_batch(threat, threat), threat)[0] == pytest.approx(0.5, abs=1e-3)
    for bad in (-0.1, 1.5, "1"):
        with pytest.raises(RewardError, match="max_margin"):
            MissileReach(max_margin=bad)


def test_missile_reach_is_zero_sum_in_a_duel_of_the_compiled_core():
    term = MissileReach(gamma=0.99)
    env = arena.make("midrange", num_envs=4, num_threads=1, **{**CLOSE_FIGHT, "missile_max_time_s": 8.0})
    seen = 0.0
    for batch, _ in rollout(env, 150, seed=5):
        shaped = term(batch).reshape(-1, 2)
        np.testing.assert_allclose(shaped.sum(axis=1), 0.0, atol=1e-5)
        seen += float(np.abs(shaped).sum())
    assert seen > 1.0, "nothing moved the potential: the test did not exercise the term"


def test_room_is_the_distance_to_the_arenas_edge_along_a_line():
    from arena.games.midrange.missile_reach import room

    radius = 60000.0
    assert room(0.0, 0.0, 0.6, 0.8, radius) == pytest.approx(radius)
    assert room(59000.0, 0.0, 1.0, 0.0, radius) == pytest.approx(1000.0)  # straight out
    assert room(59000.0, 0.0, -1.0, 0.0, radius) == pytest.approx(119000.0)  # across the circle
    assert room(59000.0, 0.0, 0.0, 1.0, radius) == pytest.approx(np.sqrt(radius**2 - 59000.0**2))
    assert room(61000.0, 0.0, 1.0, 0.0, radius) == 0.0  # outside: none


def test_reach_before_the_edge_is_the_running_reach_far_from_it_and_the_whole_flight_at_it():
    model = MissileModel()
    running, still = float(model.reach(300.0, 0.0, 300.0)), float(model.reach(300.0, 0.0, 0.0))
    assert still > running > 0.0
    assert float(model.reach_before_edge(300.0, 0.0, 300.0, 1e6)) == pytest.approx(running)
    assert float(model.reach_before_edge(300.0, 0.0, 300.0, 0.0)) == pytest.approx(still)
    expected = max(running, still - 5000.0)
    assert float(model.reach_before_edge(300.0, 0.0, 300.0, 5000.0)) == pytest.approx(expected)


def edge_obs(range_10km: float, block: str, boundary_10km: float, centre_cos: float) -> np.ndarray:
    """``missile_obs`` with me ``boundary_10km`` from the edge, the centre dead ahead (``centre_cos``
    1) or dead astern (-1), and the missile and the enemy dead ahead."""
    obs = missile_obs(range_10km, 0.3, block=block)
    obs[:, SELF.index("boundary")] = boundary_10km
    obs[:, SELF.index("centre_cos")] = centre_cos
    getattr(MidrangeObsLayout((1, 1), 4), block)(obs)[:, 0, MISSILE.index("bearing_cos")] = 1.0
    return obs


def test_missile_reach_with_edge_counts_a_threat_that_i_can_only_run_from_toward_the_edge_as_inside():
    plain, edge = MissileReach(gamma=1.0, max_margin=0.0), MissileReach(gamma=1.0, max_margin=0.0, edge=True)
    out_of_reach = (float(MissileModel().reach(300.0, 0.0, 300.0)) + 5000.0) / 1e4  # fleeing at 0.75 VT
    # the threat ahead, the centre ahead: running from it means running for the edge 2 km behind me
    cornered = edge_obs(out_of_reach, "threats", 0.2, 1.0)
    assert plain.potential(midrange_batch(cornered, cornered), cornered)[0] == pytest.approx(0.5, abs=1e-3)
    assert edge.potential(midrange_batch(cornered, cornered), cornered)[0] == 0.0
    # the same threat with the centre behind me: 118 km to run, as in an open sky
    open_sky = edge_obs(out_of_reach, "threats", 0.2, -1.0)
    assert edge.potential(midrange_batch(open_sky, open_sky), open_sky)[0] == pytest.approx(0.5, abs=1e-3)
    # my own missile at an enemy with its back to the edge: the enemy 25 km ahead, 2 km from the edge
    # (the centre behind me, 27 km from the edge), the missile 5 km out of its running reach, ~3 km
    # ahead of me
    own = edge_obs(out_of_reach, "own_missiles", 2.7, -1.0)
    MidrangeObsLayout((1, 1), 4).enemies(own)[:, 0, FIGHTER.index("range")] = 2.5
    assert plain.potential(midrange_batch(own, own), own)[0] < -0.4
    assert edge.potential(midrange_batch(own, own), own)[0] == 0.0
    with pytest.raises(RewardError, match="edge"):
        MissileReach(edge="yes")


def test_missile_reach_with_edge_is_zero_sum_in_a_duel_of_the_compiled_core_up_to_the_missiles_line():
    """A threat's line is exact; my missile's is worked out from float32 observations, so the two
    sides' potentials cancel to rounding on almost every row."""
    term, open_sky = MissileReach(gamma=0.99, edge=True), MissileReach(gamma=0.99)
    # a small arena, where the edge is near enough to matter
    env = arena.make("midrange", num_envs=4, num_threads=1,
                     **{**CLOSE_FIGHT, "missile_max_time_s": 8.0, "arena_radius_m": 4000.0})
    rows = near = moved = 0
    for batch, _ in rollout(env, 150, seed=5):
        shaped = term(batch)
        near += int((np.abs(shaped.reshape(-1, 2).sum(axis=1)) < 1e-3).sum())
        rows += len(shaped) // 2
        moved += int((np.abs(shaped - open_sky(batch)) > 1e-3).sum())
    assert moved > 0.1 * rows, "the edge changed nothing: the test did not exercise it"
    assert near >= 0.99 * rows, (near, rows)
