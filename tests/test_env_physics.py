"""Midrange physics through the compiled core, against the game model of docs/midrange.md.

Entities are placed with ``set_world_state`` and read back with ``world_state``; env 0 is used.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import arena

G = 9.8
DT = 1.0 / 60.0
STRAIGHT, LEFT, RIGHT = 2, 4, 0  # rudder indices: u = 0, +1 (left), -1 (right)


def blank_state(env: arena.VectorEnv) -> dict[str, np.ndarray]:
    """A world state with every fighter dead at the origin and no missile in flight."""
    ws = env.world_state()
    for key in ws:
        ws[key][...] = 0
    ws["missile_owner"][...] = -1
    ws["missile_target"][...] = -1
    ws["fighter_missiles"][...] = env.params["missiles_per_fighter"]
    return ws


def put_fighter(ws: dict, i: int, x: float, y: float, vx: float, vy: float, env: int = 0) -> None:
    for key, value in zip(("x", "y", "vx", "vy"), (x, y, vx, vy), strict=True):
        ws[f"fighter_{key}"][env, i] = value
    ws["fighter_alive"][env, i] = True


def put_missile(
    ws: dict, k: int, x: float, y: float, vx: float, vy: float, owner: int, target: int, tof: float = 0.0,
    env: int = 0,
) -> None:
    for key, value in zip(("x", "y", "vx", "vy", "tof"), (x, y, vx, vy, tof), strict=True):
        ws[f"missile_{key}"][env, k] = value
    ws["missile_owner"][env, k], ws["missile_target"][env, k] = owner, target
    ws["missile_active"][env, k] = True


def actions(env: arena.VectorEnv, rudder: int = STRAIGHT, throttle: int = 2, fire: int = 0) -> np.ndarray:
    a = np.empty((env.num_agents, 3), dtype=np.int32)
    a[:] = (rudder, throttle, fire)
    return a


def only_row0_fires(env: arena.VectorEnv, throttle: int = 2) -> np.ndarray:
    a = actions(env, throttle=throttle)
    a[0, 2] = 1
    return a


def velocity(ws: dict, i: int, kind: str = "fighter") -> np.ndarray:
    return np.array([ws[f"{kind}_vx"][0, i], ws[f"{kind}_vy"][0, i]])


def speed(ws: dict, i: int, kind: str = "fighter") -> float:
    return float(np.hypot(*velocity(ws, i, kind)))


def integrate(pos, vel, u: float, thrust: float, vt: float, rmin: float, ld: float, max_g: float):
    """One semi-implicit Euler step of the docs/midrange.md point mass (the test's own model)."""
    cd0 = G / vt**2
    k = 1.0 / (4.0 * cd0 * ld**2)
    v2 = float(vel @ vel)
    ue = float(np.clip(u, -max_g * G * rmin / v2, max_g * G * rmin / v2))
    a_par = thrust - (cd0 + k * (abs(ue) / rmin) ** 2) * v2
    a_perp = v2 * ue / rmin
    h = vel / math.sqrt(v2)
    new_vel = vel + (a_par * h + a_perp * np.array([-h[1], h[0]])) * DT
    return pos + new_vel * DT, new_vel


def two_parallel_fighters(**overrides) -> tuple[arena.VectorEnv, dict]:
    """1v1 flying side by side along +x, 30 km apart (nobody in anybody's launch cone)."""
    env = arena.make("midrange", num_envs=1, num_threads=1, arena_radius_m=1e6, **overrides)
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, 300.0, 0.0)
    put_fighter(ws, 1, 0.0, 30000.0, 300.0, 0.0)
    env.set_world_state(ws)
    return env, ws


# ---------------------------------------------------------------- fighter flight


@pytest.mark.parametrize("thrust_g", [1.0, 1.5])
def test_full_throttle_straight_flight_reaches_the_terminal_speed_vt_sqrt_thrust(thrust_g):
    env, _ = two_parallel_fighters(frame_skip=60, fighter_thrust_g=thrust_g)
    v_term = 400.0 * math.sqrt(thrust_g)
    speeds = []
    for _ in range(150):  # 150 s of game time, about 8 time constants
        env.step(actions(env, throttle=2))
        speeds.append(speed(env.world_state(), 0))
    assert np.all(np.diff(speeds) > 0), "accelerates monotonically towards v_term"
    assert max(speeds) <= v_term * (1 + 1e-9)
    assert speeds[-1] == pytest.approx(v_term, rel=0.005)


def test_zero_throttle_decelerates_along_the_parasitic_drag_law():
    env, _ = two_parallel_fighters(frame_skip=60)
    speeds = []
    for _ in range(10):
        env.step(actions(env, throttle=0))
        speeds.append(speed(env.world_state(), 0))
    assert np.all(np.diff(speeds) < 0)
    # dv/dt = -Cd0 v^2  =>  v(t) = v0 / (1 + Cd0 v0 t)
    assert speeds[-1] == pytest.approx(300.0 / (1 + G / 400.0**2 * 300.0 * 10.0), rel=0.005)


@pytest.mark.parametrize("v0, g_limited", [(200.0, False), (300.0, True)])
def test_full_rudder_turn_pulls_v2_over_rmin_but_never_more_than_max_g(v0, g_limited):
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=1, team_sizes=(1, 1))
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, v0, 0.0)
    put_fighter(ws, 1, 0.0, 30000.0, 300.0, 0.0)
    env.set_world_state(ws)
    before = velocity(ws, 0)
    env.step(actions(env, rudder=LEFT, throttle=1))
    after = velocity(env.world_state(), 0)
    h = before / np.linalg.norm(before)
    accel = (after - before) / DT
    a_perp = h[0] * accel[1] - h[1] * accel[0]  # positive: towards the left
    a_par = float(h @ accel)
    assert a_perp > 0, "positive rudder turns left (counter-clockwise)"
    assert a_perp <= 9.0 * G * (1 + 1e-9)
    expected_perp = 9.0 * G if g_limited else v0**2 / 1000.0
    assert a_perp == pytest.approx(expected_perp, rel=1e-6)
    # induced drag uses the same (g-limited) control: cl = u_eff / Rmin, k = 1 / (4 Cd0 LD^2)
    cd0 = G / 400.0**2
    cl = expected_perp / v0**2
    expected_par = 0.5 * 1.5 * G - (cd0 + cl**2 / (4 * cd0 * 25.0)) * v0**2
    assert a_par == pytest.approx(expected_par, rel=1e-6)


@pytest.mark.parametrize("rudder, sign", [(LEFT, 1.0), (RIGHT, -1.0)])
def test_a_sustained_full_rudder_turn_stays_under_max_g_and_turns_the_commanded_way(rudder, sign):
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=1)
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, 450.0, 0.0)  # fast: the g limit binds
    put_fighter(ws, 1, 0.0, 30000.0, 300.0, 0.0)
    env.set_world_state(ws)
    prev = velocity(ws, 0)
    for _ in range(120):
        env.step(actions(env, rudder=rudder, throttle=2))
        cur = velocity(env.world_state(), 0)
        h = prev / np.linalg.norm(prev)
        accel = (cur - prev) / DT
        lateral = h[0] * accel[1] - h[1] * accel[0]
        assert sign * lateral > 0
        assert abs(lateral) <= 9.0 * G * (1 + 1e-9)
        prev = cur


# ---------------------------------------------------------------- missiles


def chase_state(env: arena.VectorEnv, missile_speed: float = 300.0) -> dict:
    """A missile 100 km behind its target on the same line: line-of-sight rate zero, no hit."""
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, 300.0, 0.0)  # the target, team 0
    put_fighter(ws, 1, 0.0, 50000.0, 300.0, 0.0)  # the shooter, team 1
    ws["fighter_missiles"][0, 1] -= 1
    slot = env.params["missiles_per_fighter"]  # fighter 1's first slot
    put_missile(ws, slot, -100000.0, 0.0, missile_speed, 0.0, owner=1, target=0)
    env.set_world_state(ws)
    return ws


def test_missile_boosts_for_10_s_then_decays_and_dies_at_60_s():
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=6, arena_radius_m=1e6)
    slot = env.params["missiles_per_fighter"]
    chase_state(env)
    speeds, tofs, active = [], [], []
    for _ in range(605):  # 60.5 s in steps of 0.1 s
        env.step(actions(env, throttle=0))
        ws = env.world_state()
        speeds.append(speed(ws, slot, "missile"))
        tofs.append(ws["missile_tof"][0, slot])
        active.append(bool(ws["missile_active"][0, slot]))
    speeds, tofs, active = np.array(speeds), np.array(tofs), np.array(active)
    boost = tofs < 10.0 - 1e-6
    assert np.all(np.diff(speeds[boost]) > 0), "speed rises while the motor burns"
    coasting = (tofs > 10.0 + 0.1) & active
    assert np.all(np.diff(speeds[coasting]) < 0), "speed decays after burnout"
    assert speeds[coasting].min() > 200.0, "this missile is still fast when its time runs out"
    assert active[tofs < 60.0 - DT].all()
    assert not active[tofs >= 60.0 + DT].any(), "a missile dies after 60 s of flight"


def test_a_missile_flies_exactly_max_time_over_dt_physics_steps():
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=1, arena_radius_m=1e6)
    slot = env.params["missiles_per_fighter"]
    chase_state(env)
    for _ in range(3599):
        env.step(actions(env, throttle=0))
    assert env.world_state()["missile_active"][0, slot]
    env.step(actions(env, throttle=0))
    assert not env.world_state()["missile_active"][0, slot], "60 s / (1/60 s) = 3600 physics steps"


def test_a_burnt_out_missile_dies_below_200_m_s_but_a_slow_boosting_one_lives():
    env = arena.make(
        "midrange", num_envs=1, num_threads=1, frame_skip=1, arena_radius_m=1e6, missile_max_time_s=600.0
    )
    slot = env.params["missiles_per_fighter"]
    chase_state(env, missile_speed=150.0)
    env.step(actions(env, throttle=0))
    assert env.world_state()["missile_active"][0, slot], "below 200 m/s during boost is fine"
    last_speed = None
    for _ in range(200 * 60):
        env.step(actions(env, throttle=0))
        ws = env.world_state()
        if not ws["missile_active"][0, slot]:
            break
        last_speed = speed(ws, slot, "missile")
    assert not ws["missile_active"][0, slot]
    assert ws["missile_tof"][0, slot] > 10.0
    assert last_speed >= 200.0 > speed(ws, slot, "missile")


@pytest.mark.parametrize("num_envs", [1, 16])
def test_a_missile_that_runs_out_counts_missed_for_its_owner_and_evaded_for_its_target(num_envs):
    # num_envs=16 steps in SIMD lanes, 1 one env at a time: both paths count the same.
    env = arena.make("midrange", num_envs=num_envs, num_threads=1, frame_skip=6, arena_radius_m=1e6)
    ws = blank_state(env)
    slot = env.params["missiles_per_fighter"]  # fighter 1's first slot
    for e in range(num_envs):  # every env the chase of chase_state()
        put_fighter(ws, 0, 0.0, 0.0, 300.0, 0.0, env=e)  # the target
        put_fighter(ws, 1, 0.0, 50000.0, 300.0, 0.0, env=e)  # the shooter
        put_missile(ws, slot, -100000.0, 0.0, 300.0, 0.0, owner=1, target=0, env=e)
    env.set_world_state(ws)
    totals = np.zeros((num_envs * 2, len(env.event_names)), np.int64)
    for _ in range(601):  # 60.1 s: the missile times out, 100 km short of its target
        _, _, _, _, infos = env.step(actions(env, throttle=0))
        totals += infos["events"]
    missed, evaded = env.event_names.index("missed"), env.event_names.index("evaded")
    assert (totals[1::2, missed] == 1).all() and (totals[0::2, evaded] == 1).all()
    assert totals[0::2, missed].sum() == 0 and totals[1::2, evaded].sum() == 0
    assert totals[:, env.event_names.index("hits")].sum() == 0


@pytest.mark.parametrize("miss_distance, kills", [(40.0, True), (120.0, False)])
def test_a_missile_that_crosses_within_100_m_between_two_samples_still_kills(miss_distance, kills):
    # dt = 0.1 s and a 2000 m/s crossing: 200 m per step, so neither endpoint is within 100 m.
    env = arena.make(
        "midrange", num_envs=1, num_threads=1, team_sizes=(1, 2), frame_skip=1, dt=0.1, nav_gain=0.0
    )
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, -30000.0, 300.0, 0.0)  # the shooter
    put_fighter(ws, 1, 0.0, 0.0, -300.0, 0.0)  # the target
    put_fighter(ws, 2, 0.0, 30000.0, 300.0, 0.0)  # keeps team 1 alive, so the match goes on
    put_missile(ws, 0, -100.0, miss_distance, 1700.0, 0.0, owner=0, target=1)
    env.set_world_state(ws)
    _, _, _, _, infos = env.step(actions(env, throttle=0))
    after = env.world_state()
    start_gap = math.hypot(-100.0, miss_distance)
    end_gap = math.hypot(
        after["missile_x"][0, 0] - after["fighter_x"][0, 1],
        after["missile_y"][0, 0] - after["fighter_y"][0, 1],
    )
    assert start_gap > 100.0 and end_gap > 100.0, "the test really is about the swept check"
    assert not infos["done"][0]
    events = infos["events"]
    assert events[0, 2] == int(kills) and events[0, 1] == int(kills)  # shooter: kills, hits
    assert events[1, 4] == int(kills) and events[1, 3] == int(kills)  # target: died, was_hit
    assert after["fighter_alive"][0, 1] == (not kills)
    assert after["missile_active"][0, 0] == (not kills)


# ---------------------------------------------------------------- launch rules


def shooter_and_enemies(team_sizes, enemies, **overrides) -> arena.VectorEnv:
    """Fighter 0 at the origin flying +x at 300 m/s; enemies at (bearing_deg, range_m), flying +x."""
    env = arena.make("midrange", num_envs=1, num_threads=1, team_sizes=team_sizes, **overrides)
    ws = blank_state(env)
    put_fighter(ws, 0, 0.0, 0.0, 300.0, 0.0)
    for j, (bearing, rng) in enumerate(enemies, start=team_sizes[0]):
        b = math.radians(bearing)
        put_fighter(ws, j, rng * math.cos(b), rng * math.sin(b), 300.0, 0.0)
    env.set_world_state(ws)
    return env


@pytest.mark.parametrize("bearing_deg, fires", [(0.0, True), (-59.0, True), (61.0, False), (90.0, False)])
def test_fire_launches_only_at_an_enemy_inside_the_60_degree_cone(bearing_deg, fires):
    env = shooter_and_enemies((1, 1), [(bearing_deg, 15000.0)])
    _, _, _, _, infos = env.step(only_row0_fires(env, throttle=1))
    ws = env.world_state()
    assert infos["events"][0, 0] == int(fires)
    assert ws["missile_active"][0].sum() == int(fires)
    assert ws["fighter_missiles"][0, 0] == 6 - int(fires), "no missile is spent without a target"


@pytest.mark.parametrize("near_index", [1, 2])
def test_missile_locks_onto_the_enemy_with_the_smallest_off_boresight_angle(near_index):
    # the enemy at 10 deg is farther than the one at 30 deg, and sits at either index
    enemies = [(30.0, 5000.0), (10.0, 20000.0)] if near_index == 2 else [(10.0, 20000.0), (30.0, 5000.0)]
    env = shooter_and_enemies((1, 2), enemies)
    env.step(only_row0_fires(env, throttle=1))
    ws = env.world_state()
    assert ws["missile_active"][0, 0] and ws["missile_owner"][0, 0] == 0
    assert ws["missile_target"][0, 0] == near_index


def test_missile_appears_20_m_ahead_with_the_shooters_velocity():
    env = arena.make("midrange", num_envs=1, num_threads=1, frame_skip=1)
    heading = math.radians(37.0)
    h = np.array([math.cos(heading), math.sin(heading)])
    ws = blank_state(env)
    put_fighter(ws, 0, 1000.0, -2000.0, *(300.0 * h))
    put_fighter(ws, 1, *(np.array([1000.0, -2000.0]) + 15000.0 * h), *(300.0 * h))  # dead ahead, parallel
    env.set_world_state(ws)
    env.step(only_row0_fires(env))
    after = env.world_state()
    # launch state, then one physics step with no turn (line-of-sight rate zero) at 15 g of thrust
    pos, vel = integrate(
        np.array([1000.0, -2000.0]) + 20.0 * h, 300.0 * h, 0.0, 15.0 * G, 400.0, 1000.0, 2.0, 30.0
    )
    assert after["missile_x"][0, 0] == pytest.approx(pos[0], abs=1e-6)
    assert after["missile_y"][0, 0] == pytest.approx(pos[1], abs=1e-6)
    assert velocity(after, 0, "missile") == pytest.approx(vel, abs=1e-9)
    assert after["missile_tof"][0, 0] == pytest.approx(DT)


def test_a_second_launch_waits_for_the_0_5_s_cooldown():
    env = shooter_and_enemies((1, 1), [(0.0, 20000.0)], frame_skip=6)  # 0.1 s per decision
    fired = []
    for _ in range(12):
        _, _, _, _, infos = env.step(only_row0_fires(env))
        fired.append(int(infos["events"][0, 0]))
        if len(fired) == 1:
            assert env.world_state()["fighter_cooldown"][0, 0] == pytest.approx(0.4)
    assert fired == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]
    ws = env.world_state()
    assert ws["fighter_missiles"][0, 0] == 3
    assert list(ws["missile_active"][0, :6]) == [True, True, True, False, False, False], "k-th launch, slot k"


@pytest.mark.parametrize("bearing_deg, fires", [(0.0, True), (-59.0, True), (61.0, False), (90.0, False)])
def test_the_observations_fire_flag_says_whether_fire_would_launch(bearing_deg, fires):
    env = shooter_and_enemies((1, 1), [(bearing_deg, 15000.0)])
    legal = env.observations[:, -10:]
    assert legal[0].tolist() == [1.0] * 9 + [float(fires)], "rudder, throttle and hold are always legal"
    _, _, _, _, infos = env.step(only_row0_fires(env, throttle=1))
    assert infos["events"][0, 0] == int(fires)
    assert env.observations[0, -1] == 0.0, "after a launch: cooldown; without one: no enemy in the cone"


@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 2)])
def test_in_random_matches_fire_launches_exactly_where_the_flag_said_it_would(team_sizes):
    # Fighters that always press fire: every missile spent, cooldowns, enemies in and out of the
    # cone, the dead. A launch happens exactly in the rows whose observation flagged fire legal.
    env = arena.make("midrange", num_envs=64, num_threads=2, seed=3, team_sizes=team_sizes)
    rng = np.random.default_rng(0)
    launched = refused = 0
    for _ in range(300):
        flag, alive = env.observations[:, -1].copy(), env.observations[:, 0] > 0
        a = actions(env, fire=1)
        a[:, 0] = rng.integers(0, 5, env.num_agents)
        _, _, _, _, infos = env.step(a)
        np.testing.assert_array_equal(infos["events"][:, 0], flag)
        launched += int(flag.sum())
        refused += int((alive & (flag == 0)).sum())
    assert launched > 100 and refused > 1000, (launched, refused)


# ---------------------------------------------------------------- arena, spawn, time


def test_a_fighter_that_leaves_the_arena_is_destroyed():
    env = arena.make("midrange", num_envs=1, num_threads=1, team_sizes=(2, 1), frame_skip=1)
    ws = blank_state(env)
    put_fighter(ws, 0, 60000.0 - 2.0, 0.0, 300.0, 0.0)  # 5 m per step: out in the first one
    put_fighter(ws, 1, 0.0, 0.0, 300.0, 0.0)
    put_fighter(ws, 2, -20000.0, 0.0, 300.0, 0.0)
    env.set_world_state(ws)
    obs, _, _, _, infos = env.step(actions(env))
    assert list(infos["events"][0]) == [0, 0, 0, 0, 1, 1, 0, 0]  # died, left_arena
    assert not infos["done"][0]
    assert not env.world_state()["fighter_alive"][0, 0]
    assert not obs[0].any(), "a dead fighter observes zeros"


@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 2), (4, 4), (1, 3)])
def test_seeded_spawns_face_each_other_20_to_40_km_apart_in_2_km_formations(team_sizes):
    env = arena.make("midrange", num_envs=128, num_threads=1, team_sizes=team_sizes, seed=11)
    ws = env.world_state()
    pos = np.stack([ws["fighter_x"], ws["fighter_y"]], axis=-1)  # [E, F, 2]
    vel = np.stack([ws["fighter_vx"], ws["fighter_vy"]], axis=-1)
    n0 = team_sizes[0]
    c0, c1 = pos[:, :n0].mean(axis=1), pos[:, n0:].mean(axis=1)
    dist = np.linalg.norm(c1 - c0, axis=1)
    assert dist.min() >= 20000.0 - 1e-6 and dist.max() <= 40000.0 + 1e-6
    assert dist.max() - dist.min() > 15000.0, "distances are drawn, not fixed"
    axis = (c1 - c0) / dist[:, None]
    np.testing.assert_allclose(np.linalg.norm(vel, axis=-1), 300.0)
    off = []
    for team, (lo, hi), towards in ((0, (0, n0), axis), (1, (n0, None), -axis)):
        cos = np.einsum("efk,ek->ef", vel[:, lo:hi], towards) / 300.0
        off.append(np.degrees(np.arccos(np.clip(cos, -1, 1))))
        rel = pos[:, lo:hi] - (c0 if team == 0 else c1)[:, None]
        lateral = np.einsum("efk,ek->ef", rel, np.stack([-axis[:, 1], axis[:, 0]], axis=1))
        along = np.einsum("efk,ek->ef", rel, axis)
        np.testing.assert_allclose(along, 0.0, atol=1e-6)
        np.testing.assert_allclose(np.diff(np.sort(lateral, axis=1), axis=1), 2000.0, rtol=1e-9)
    off = np.concatenate(off, axis=1)
    assert off.max() <= 30.0 + 1e-6 and off.max() > 25.0
    assert ws["fighter_alive"].all() and (ws["fighter_missiles"] == 6).all()
    assert len(np.unique(dist)) == len(dist), "every env has its own spawn"


@pytest.mark.parametrize("frame_skip", [1, 5, 12])
def test_one_decision_advances_frame_skip_physics_steps(frame_skip):
    env = arena.make("midrange", num_envs=3, num_threads=1, frame_skip=frame_skip)
    for k in (1, 2):
        env.step(actions(env))
        ws = env.world_state()
        assert list(ws["physics_steps"]) == [k * frame_skip] * 3
        assert list(ws["decisions"]) == [k] * 3


def test_mirrored_fighters_see_identical_observations():
    # the original model built P2's observation from P1's bearing; both must see the same here
    env = arena.make("midrange", num_envs=1, num_threads=1)
    ws = blank_state(env)
    put_fighter(ws, 0, -10000.0, 2000.0, 250.0, 30.0)
    put_fighter(ws, 1, 10000.0, -2000.0, -250.0, -30.0)
    put_missile(ws, 0, -9000.0, 1500.0, 400.0, 80.0, owner=0, target=1, tof=3.0)
    put_missile(ws, 6, 9000.0, -1500.0, -400.0, -80.0, owner=1, target=0, tof=3.0)
    ws["fighter_missiles"][0] = 5
    obs = env.set_world_state(ws)
    assert obs[0].any()
    np.testing.assert_array_equal(obs[0], obs[1])
