"""Scripted players: what the heuristic pilot does in set-up situations, that it beats the random
pilot, and that the rpsw bots throw what they promise."""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.agents.scripted import SCRIPTED_BOTS, ScriptedAgent, make_scripted
from arena.bench.pilots import play_matches, wilson_interval
from arena.games.midrange.bots import VARIED_RANGES, HeuristicPilot, HeuristicTuning, RandomPilot
from arena.games.rpsw.bots import (
    BiasedThrower,
    ConstantThrower,
    CounterThrower,
    CycleThrower,
    RandomThrower,
)

RUDDER, THROTTLE, FIRE = 0, 1, 2
STRAIGHT = 2  # rudder index of 0; higher turns left, lower turns right
KM = 1000.0


def observe(
    me=(0.0, 0.0),
    heading=(1.0, 0.0),
    enemy=(10 * KM, 0.0),
    enemy_heading=(-1.0, 0.0),
    missiles=(),
    cooldown=0.0,
    missiles_left=6,
) -> np.ndarray:
    """Observation row of fighter 0 (team 0) in a 1v1 world set up by hand.

    ``missiles``: (owner, target, position, velocity, time of flight) of active missiles.
    """
    env = arena.make("midrange", num_envs=1, num_threads=1, seed=0)
    ws = env.world_state()
    for i, (pos, head) in enumerate(((me, heading), (enemy, enemy_heading))):
        ws["fighter_x"][0, i], ws["fighter_y"][0, i] = pos
        ws["fighter_vx"][0, i], ws["fighter_vy"][0, i] = 400.0 * np.asarray(head) / np.hypot(*head)
        ws["fighter_alive"][0, i] = True
    ws["fighter_cooldown"][0, 0] = cooldown
    ws["fighter_missiles"][0, 0] = missiles_left
    ws["missile_active"][0, :] = False
    for slot, (owner, target, pos, vel, tof) in enumerate(missiles):
        k = owner * env.params["missiles_per_fighter"] + slot
        ws["missile_x"][0, k], ws["missile_y"][0, k] = pos
        ws["missile_vx"][0, k], ws["missile_vy"][0, k] = vel
        ws["missile_tof"][0, k] = tof
        ws["missile_owner"][0, k], ws["missile_target"][0, k] = owner, target
        ws["missile_active"][0, k] = True
    return env.set_world_state(ws)[:1].copy()


@pytest.fixture(scope="module")
def pilot() -> HeuristicPilot:
    return HeuristicPilot()


# ---------------------------------------------------------------- heuristic pilot: manoeuvres


@pytest.mark.parametrize(("enemy_y", "turns_left"), [(5 * KM, True), (-5 * KM, False)])
def test_heuristic_turns_toward_an_enemy_to_its_side(pilot, enemy_y, turns_left):
    action = pilot.act(observe(enemy=(10 * KM, enemy_y)))[0]
    assert (action[RUDDER] > STRAIGHT) == turns_left
    assert action[RUDDER] != STRAIGHT


def test_heuristic_flies_straight_at_full_throttle_toward_an_enemy_dead_ahead(pilot):
    action = pilot.act(observe(enemy=(30 * KM, 0.0)))[0]
    assert action[RUDDER] == STRAIGHT
    assert action[THROTTLE] == 2


@pytest.mark.parametrize(("side", "turns_left"), [(1.0, False), (-1.0, True)])
def test_heuristic_turns_away_from_a_close_missile_coming_at_it(pilot, side, turns_left):
    pos = np.array([3 * KM, side * 1.5 * KM])
    vel = -1000.0 * pos / np.hypot(*pos)  # straight at me
    action = pilot.act(observe(missiles=[(1, 0, tuple(pos), tuple(vel), 5.0)]))[0]
    assert (action[RUDDER] > STRAIGHT) == turns_left
    assert action[RUDDER] != STRAIGHT


def test_heuristic_keeps_a_chasing_missile_on_its_tail_instead_of_turning_to_the_enemy(pilot):
    chasing = (1, 0, (-4 * KM, 0.0), (900.0, 0.0), 8.0)
    action = pilot.act(observe(enemy=(-20 * KM, 20 * KM), missiles=[chasing]))[0]
    assert action[RUDDER] == STRAIGHT
    assert action[FIRE] == 0


def test_heuristic_ignores_a_missile_far_away_and_attacks(pilot):
    far = (1, 0, (40 * KM, 10 * KM), (-300.0, 0.0), 40.0)  # slow, 41 km out: no threat yet
    action = pilot.act(observe(me=(-10 * KM, 0.0), enemy=(0.0, 5 * KM), missiles=[far]))[0]
    assert action[RUDDER] > STRAIGHT  # toward the enemy on its left


def test_heuristic_turns_toward_the_centre_rather_than_chase_along_the_arena_edge(pilot):
    # 3 km from the edge, flying along it; the enemy is slightly right (further out).
    action = pilot.act(observe(me=(57 * KM, 0.0), heading=(0.0, 1.0), enemy=(58 * KM, 10 * KM)))[0]
    assert action[RUDDER] > STRAIGHT  # left, toward the centre


# ---------------------------------------------------------------- heuristic pilot: firing


def test_heuristic_fires_at_a_close_enemy_ahead(pilot):
    assert pilot.act(observe(enemy=(8 * KM, 0.5 * KM)))[0, FIRE] == 1


@pytest.mark.parametrize(
    "enemy",
    [(-8 * KM, 0.0), (0.0, 8 * KM), (50 * KM, 0.0)],
    ids=["behind", "abeam", "far ahead"],
)
def test_heuristic_holds_fire_when_the_enemy_is_behind_abeam_or_far(pilot, enemy):
    me = (-25 * KM, 0.0)
    target = (me[0] + enemy[0], enemy[1])
    assert pilot.act(observe(me=me, enemy=target))[0, FIRE] == 0


def test_heuristic_holds_fire_while_its_own_missile_is_still_flying_at_the_target(pilot):
    own = (0, 1, (3 * KM, 0.0), (1200.0, 0.0), 3.0)
    assert pilot.act(observe(enemy=(8 * KM, 0.0), missiles=[own]))[0, FIRE] == 0


def test_heuristic_holds_fire_during_cooldown_and_with_no_missiles_left(pilot):
    assert pilot.act(observe(enemy=(8 * KM, 0.0), cooldown=0.3))[0, FIRE] == 0
    assert pilot.act(observe(enemy=(8 * KM, 0.0), missiles_left=0))[0, FIRE] == 0


# ---------------------------------------------------------------- interface


def test_heuristic_decides_each_row_alone_whatever_the_order_of_rows():
    env = arena.make("midrange", num_envs=64, num_threads=1, seed=4, team_sizes=(2, 3))
    rng = np.random.default_rng(0)
    pilot = HeuristicPilot(team_sizes=(2, 3))
    obs = env.observations
    for _ in range(40):  # get missiles into the air
        obs, *_ = env.step(pilot.act(obs))
    order = rng.permutation(len(obs))
    actions = pilot.act(obs)
    assert actions.dtype == np.int32 and actions.shape == (len(obs), 3)
    np.testing.assert_array_equal(pilot.act(obs[order]), actions[order])
    np.testing.assert_array_equal(pilot.act(obs[:0]), np.zeros((0, 3), dtype=np.int32))


@pytest.mark.parametrize(("team_sizes", "tracked_missiles"), [((1, 1), 0), ((1, 3), 1), ((4, 4), 8)], ids=str)
def test_heuristic_plays_every_layout_from_1v1_to_4v4(team_sizes, tracked_missiles):
    env = arena.make(
        "midrange", num_envs=8, num_threads=1, team_sizes=team_sizes, tracked_missiles=tracked_missiles
    )
    pilot = HeuristicPilot(team_sizes=team_sizes, tracked_missiles=tracked_missiles)
    obs = env.observations
    for _ in range(100):
        actions = pilot.act(obs)
        assert ((actions >= 0) & (actions < env.action_space.nvec)).all()
        obs, *_ = env.step(actions)


def test_pilots_reject_observations_of_another_layout():
    with pytest.raises(ValueError, match="shape"):
        HeuristicPilot(team_sizes=(1, 1)).act(np.zeros((3, 10), dtype=np.float32))


def test_random_pilot_actions_are_in_range_and_reproducible_per_seed():
    obs = np.zeros((1000, RandomPilot().obs_dim), dtype=np.float32)
    a, b, c = (RandomPilot(seed=s).act(obs) for s in (7, 7, 8))
    assert a.dtype == np.int32 and a.shape == (1000, 3)
    assert (a >= 0).all() and (a.max(axis=0) == [4, 2, 1]).all()
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


def test_heuristic_beats_the_random_pilot_in_most_matches():
    results = play_matches(HeuristicPilot(), RandomPilot(seed=1), 200, seed=11, num_threads=1)
    assert results.games == 200
    assert results.win_rate > 0.8, results


@pytest.mark.parametrize("team_sizes", [(2, 2), (4, 4)])
def test_heuristic_team_beats_a_random_team(team_sizes):
    results = play_matches(
        HeuristicPilot(team_sizes=team_sizes),
        RandomPilot(team_sizes=team_sizes, seed=2),
        20,
        seed=5,
        team_sizes=team_sizes,
        num_threads=1,
    )
    assert results.win_rate > 0.8, results


def test_wilson_interval_holds_the_observed_rate_and_stays_in_unit_range():
    assert wilson_interval(0, 50)[0] == pytest.approx(0.0)
    assert wilson_interval(50, 50)[1] == pytest.approx(1.0)
    low, high = wilson_interval(900, 1000)
    assert low < 0.9 < high and high - low < 0.05


# ---------------------------------------------------------------- registry


def test_every_listed_bot_can_be_made_and_acts_on_its_game():
    for game, names in SCRIPTED_BOTS.items():
        env = arena.make(game, num_envs=4, num_threads=1, team_sizes=(2, 2) if game == "midrange" else (1, 1))
        for name in names:
            bot = make_scripted(f"scripted:{name}", game, team_sizes=env.team_sizes)
            assert isinstance(bot, ScriptedAgent) and bot.game == game and bot.name == name
            actions = bot.act(env.observations)
            assert actions.shape == (env.num_agents, len(env.action_space.nvec))
            assert ((actions >= 0) & (actions < env.action_space.nvec)).all()


def test_unknown_bot_or_game_is_refused_with_the_choices_listed():
    with pytest.raises(ValueError, match="heuristic"):
        make_scripted("ace", "midrange")
    with pytest.raises(ValueError, match="cycle"):
        make_scripted("heuristic", "rpsw")
    with pytest.raises(ValueError, match="midrange"):
        make_scripted("random", "chess")


# ---------------------------------------------------------------- rpsw bots


def test_rpsw_bots_throw_valid_actions_and_random_ones_are_reproducible():
    env = arena.make("rpsw", num_envs=200, num_threads=1)
    obs = env.observations
    bots = (RandomThrower(3), BiasedThrower(seed=3), CycleThrower(), ConstantThrower("well"))
    bots += (CounterThrower(),)
    for bot in bots:
        actions = bot.act(obs)
        assert actions.dtype == np.int32 and actions.shape == (400, 1)
        assert ((actions >= 0) & (actions < 4)).all()
    np.testing.assert_array_equal(RandomThrower(3).act(obs), RandomThrower(3).act(obs))
    assert set(np.unique(RandomThrower(3).act(obs))) == {0, 1, 2, 3}


def test_cycle_bot_cycles_rock_paper_scissors_well_and_restarts_each_match():
    env = arena.make("rpsw", num_envs=3, num_threads=1)
    cycle, other = CycleThrower(), RandomThrower(0)
    obs, _ = env.reset(0)
    throws = []
    for _ in range(2 * 9):
        actions = np.concatenate([cycle.act(obs[0::2]), other.act(obs[1::2])], axis=1).reshape(-1, 1)
        throws.append(actions[0::2, 0].copy())
        obs, *_ = env.step(actions)
    expected = [0, 1, 2, 3, 0, 1, 2, 3, 0] * 2  # 9 rounds a match
    np.testing.assert_array_equal(np.stack(throws), np.repeat(np.array(expected)[:, None], 3, axis=1))


def test_counter_bot_throws_what_beats_the_opponents_last_throw():
    obs = np.zeros((5, 11), dtype=np.float32)
    obs[np.arange(4), np.arange(4)] = 1.0  # opponent threw rock, paper, scissors, well; row 4: first round
    obs[4, 10] = 1.0
    np.testing.assert_array_equal(CounterThrower().act(obs)[:, 0], [1, 2, 3, 1, 1])


def test_biased_bot_follows_its_probabilities():
    actions = BiasedThrower((0.7, 0.1, 0.1, 0.1), seed=0).act(np.zeros((4000, 11), dtype=np.float32))
    assert abs((actions == 0).mean() - 0.7) < 0.03
    with pytest.raises(ValueError):
        BiasedThrower((1.0, -1.0, 0.0, 0.0))


def test_the_evader_flies_and_defends_like_the_heuristic_but_never_fires(pilot):
    evader = make_scripted("scripted:evader", "midrange")
    shot = observe(enemy=(8 * KM, 0.5 * KM))
    assert pilot.act(shot)[0, FIRE] == 1 and evader.act(shot)[0, FIRE] == 0
    np.testing.assert_array_equal(evader.act(shot)[:, :FIRE], pilot.act(shot)[:, :FIRE])
    threatened = observe(missiles=[(1, 0, (3 * KM, 1.5 * KM), (-900.0, -450.0), 5.0)])
    np.testing.assert_array_equal(evader.act(threatened)[:, :FIRE], pilot.act(threatened)[:, :FIRE])


@pytest.mark.parametrize("km", [6, 10, 14])
def test_a_ladder_pilot_fires_only_inside_its_range_whatever_the_closing_speed(pilot, km):
    ladder = make_scripted(f"scripted:heuristic_{km}km", "midrange")
    inside, outside = observe(enemy=((km - 1) * KM, 0.0)), observe(enemy=((km + 2) * KM, 0.0))
    assert ladder.act(inside)[0, FIRE] == 1 and ladder.act(outside)[0, FIRE] == 0
    # the heuristic itself reaches further head-on (14 km plus 8 km per km/s of closing: 800 m/s here)
    assert pilot.act(observe(enemy=(19 * KM, 0.0)))[0, FIRE] == 1
    threatened = observe(missiles=[(1, 0, (3 * KM, 1.5 * KM), (-900.0, -450.0), 5.0)])
    np.testing.assert_array_equal(ladder.act(threatened)[:, :FIRE], pilot.act(threatened)[:, :FIRE])


def test_between_heuristic_pilots_the_one_that_fires_from_further_out_wins():
    """What makes the ladder a curriculum: the pilot shot at first turns to defend and does not fire back."""
    further, closer = (make_scripted(f"heuristic_{km}km", "midrange") for km in (10, 6))
    results = play_matches(further, closer, 64, seed=3, num_threads=1)
    assert results.win_rate > 0.9, results


# ---------------------------------------------------------------- varied pilot


def real_rows(n: int = 64, seed: int = 5) -> np.ndarray:
    """Observation rows of real 1v1 midrange matches some way in (missiles flying, fighters turning)."""
    env = arena.make("midrange", num_envs=n // 2, num_threads=1, seed=seed)
    obs, _ = env.reset(seed)
    heuristic = HeuristicPilot()
    for _ in range(60):
        obs, *_ = env.step(heuristic.act(obs))
    return obs.copy()


def test_the_varied_pilot_draws_new_numbers_only_when_a_rows_match_starts():
    varied = make_scripted("scripted:varied", "midrange", seed=1)
    obs, rows = real_rows(), np.arange(64)
    varied.act(obs, rows, np.ones(64, dtype=bool))
    first = varied.table.copy()
    for name, (low, high) in VARIED_RANGES.items():
        column = first[:, list(VARIED_RANGES).index(name)]
        assert ((column >= low) & (column <= high)).all() and column.std() > 0.1 * (high - low), name
    varied.act(obs, rows, np.zeros(64, dtype=bool))
    np.testing.assert_array_equal(varied.table, first)
    starts = np.zeros(64, dtype=bool)
    starts[[3, 40]] = True
    varied.act(obs, rows, starts)
    changed = (varied.table != first).any(axis=1)
    assert changed.tolist() == starts.tolist()


def test_the_varied_pilot_is_the_same_for_the_same_seed_and_resumes_from_its_state():
    obs, rows, starts = real_rows(), np.arange(64), np.ones(64, dtype=bool)
    a, b = (make_scripted("varied", "midrange", seed=7) for _ in range(2))
    np.testing.assert_array_equal(a.act(obs, rows, starts), b.act(obs, rows, starts))
    other = make_scripted("varied", "midrange", seed=8)
    other.act(obs, rows, starts)
    assert not np.array_equal(other.table, a.table)
    restored = make_scripted("varied", "midrange", seed=0)
    restored.load_state_dict(a.state_dict())
    half = np.arange(64) % 2 == 0
    np.testing.assert_array_equal(restored.act(obs, rows, half), a.act(obs, rows, half))
    np.testing.assert_array_equal(restored.table, a.table)
    with pytest.raises(ValueError, match="rows"):
        a.act(obs, rows[:10], starts)


def test_the_varied_pilot_flies_each_row_by_its_own_numbers():
    """Every row acts as a heuristic pilot tuned with that row's numbers would (throttle and the
    patient's held fire apart), so one batch holds many styles."""
    varied = make_scripted("varied", "midrange", seed=2)
    obs, rows = real_rows(), np.arange(64)
    actions = varied.act(obs, rows, np.ones(64, dtype=bool))
    columns = list(VARIED_RANGES)
    time_left = obs[:, 7]
    for row in range(64):
        numbers = varied.table[row]
        tuning = HeuristicTuning(**{k: float(numbers[i]) for i, k in enumerate(columns)})
        tuned = HeuristicPilot(tuning=tuning)
        alone = tuned.act(obs[row:row + 1])[0]
        assert actions[row, RUDDER] == alone[RUDDER], row
        assert actions[row, THROTTLE] == numbers[len(columns)]
        holds = time_left[row] > numbers[len(columns) + 1]
        assert actions[row, FIRE] == (0 if holds else alone[FIRE]), row
    assert len(np.unique(actions[:, THROTTLE])) == 2


def test_a_patient_varied_pilot_holds_fire_until_its_part_of_the_time_limit_is_over():
    varied = make_scripted("varied", "midrange", seed=0)
    shot = observe(enemy=(5 * KM, 0.0))
    assert shot[0, 7] > 0.95  # the match has just started
    varied.act(shot, np.array([0]), np.array([True]))
    varied.table[0, :len(VARIED_RANGES)] = [20.0, 0.0, 20.0, 40.0, 6.0, 20.0, 70.0]
    varied.table[0, len(VARIED_RANGES) + 1] = 0.5
    assert varied.act(shot, np.array([0]), np.array([False]))[0, FIRE] == 0
    late = shot.copy()
    late[0, 7] = 0.4
    assert varied.act(late, np.array([0]), np.array([False]))[0, FIRE] == 1
