"""How a midrange match ends: outcome, end_reason, rewards, terminal vs truncation, episode
length, and the auto-reset that follows (final_observation is the end state, obs a fresh spawn).

Env 0 is driven to its end through ``set_world_state``; env 1 keeps its seeded spawn and must be
unaffected.
"""

from __future__ import annotations

import numpy as np
import pytest

import arena
from arena.envs import EndReason, Outcome
from arena.games.midrange.obs import SELF

ALIVE, TIME_LEFT = SELF.index("alive"), SELF.index("time_left")
STRAIGHT_IDLE = (2, 0, 0)


def make_env(team_sizes=(1, 1), **overrides) -> arena.VectorEnv:
    return arena.make("midrange", num_envs=2, num_threads=1, team_sizes=team_sizes, seed=5, **overrides)


def passive(env: arena.VectorEnv) -> np.ndarray:
    a = np.empty((env.num_agents, 3), dtype=np.int32)
    a[:] = STRAIGHT_IDLE
    return a


def env0_state(env: arena.VectorEnv, decisions: int = 7) -> dict[str, np.ndarray]:
    """Env 0: fighters in a line 10 km apart along y, flying +x, no missile; env 1 untouched."""
    ws = env.world_state()
    f = env.agents_per_env
    ws["fighter_x"][0] = 0.0
    ws["fighter_y"][0] = np.arange(f) * 10000.0 - 20000.0
    ws["fighter_vx"][0], ws["fighter_vy"][0] = 300.0, 0.0
    ws["fighter_alive"][0] = True
    ws["missile_active"][0] = False
    ws["decisions"][0] = decisions
    ws["physics_steps"][0] = decisions * env.params["frame_skip"]
    return ws


def missile_on(ws: dict, env: arena.VectorEnv, owner: int, target: int) -> None:
    """A missile 50 m behind ``target``: it hits in the first physics step."""
    k = owner * env.params["missiles_per_fighter"]
    ws["missile_x"][0, k] = ws["fighter_x"][0, target] - 50.0
    ws["missile_y"][0, k] = ws["fighter_y"][0, target]
    ws["missile_vx"][0, k], ws["missile_vy"][0, k] = 300.0, 0.0
    ws["missile_tof"][0, k] = 1.0
    ws["missile_owner"][0, k], ws["missile_target"][0, k] = owner, target
    ws["missile_active"][0, k] = True
    ws["fighter_missiles"][0, owner] -= 1


def assert_env0_restarted_and_env1_untouched(env: arena.VectorEnv, obs, infos, env1_decisions: int) -> None:
    rows = env.agents_per_env
    assert infos["done"][0] and not infos["done"][1]
    ws = env.world_state()
    assert ws["decisions"][0] == 0 and ws["physics_steps"][0] == 0, "env 0 was reset"
    assert ws["fighter_alive"][0].all() and (ws["fighter_missiles"][0] == 6).all()
    assert not ws["missile_active"][0].any()
    assert (obs[:rows, ALIVE] == 1.0).all() and (obs[:rows, TIME_LEFT] == 1.0).all(), "obs is a fresh spawn"
    assert not np.array_equal(obs[:rows], infos["final_observation"][:rows])
    assert ws["decisions"][1] == env1_decisions


@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 2), (1, 3)])
@pytest.mark.parametrize("winner", [0, 1])
def test_eliminating_the_other_team_wins_with_plus_one_and_minus_one_per_row(winner, team_sizes):
    env = make_env(team_sizes)
    n0 = team_sizes[0]
    team_of_slot = np.array([0] * n0 + [1] * team_sizes[1])
    ws = env0_state(env, decisions=7)
    losers = np.flatnonzero(team_of_slot != winner)
    missile_on(ws, env, owner=0 if winner == 0 else n0, target=int(losers[0]))
    ws["fighter_alive"][0, losers[1:]] = False  # the last loser standing is hit
    env.set_world_state(ws)
    env1_decisions = int(ws["decisions"][1])
    obs, rewards, terminals, truncations, infos = env.step(passive(env))
    rows = env.agents_per_env
    assert infos["outcome"][0] == (Outcome.TEAM0 if winner == 0 else Outcome.TEAM1)
    assert infos["end_reason"][0] == EndReason.ELIMINATION
    assert infos["episode_length"][0] == 8
    np.testing.assert_array_equal(rewards[:rows], np.where(team_of_slot == winner, 1.0, -1.0))
    assert terminals[:rows].all() and not truncations[:rows].any()
    assert infos["events"][losers[0], 4] == 1  # died
    final = infos["final_observation"][:rows]
    assert not final[losers].any(), "the eliminated observe zeros"
    assert (final[team_of_slot == winner, ALIVE] == 1.0).all()
    assert (final[team_of_slot == winner, TIME_LEFT] < 1.0).all(), "the end state, not a spawn"
    assert_env0_restarted_and_env1_untouched(env, obs, infos, env1_decisions + 1)
    assert infos["outcome"][1] == Outcome.NONE and rewards[rows:].sum() == 0 and not terminals[rows:].any()


def test_both_teams_destroyed_in_the_same_step_is_a_draw():
    env = make_env()
    ws = env0_state(env, decisions=3)
    missile_on(ws, env, owner=0, target=1)
    missile_on(ws, env, owner=1, target=0)
    env.set_world_state(ws)
    obs, rewards, terminals, truncations, infos = env.step(passive(env))
    assert infos["outcome"][0] == Outcome.DRAW
    assert infos["end_reason"][0] == EndReason.MUTUAL
    assert infos["episode_length"][0] == 4
    assert (rewards[:2] == 0).all() and terminals[:2].all() and not truncations[:2].any()
    assert not infos["final_observation"][:2].any()
    assert_env0_restarted_and_env1_untouched(env, obs, infos, int(ws["decisions"][1]) + 1)


def test_no_missiles_left_and_none_in_flight_is_a_terminal_draw():
    env = make_env()
    ws = env0_state(env, decisions=20)
    ws["fighter_missiles"][0] = 0
    env.set_world_state(ws)
    obs, rewards, terminals, truncations, infos = env.step(passive(env))
    assert infos["outcome"][0] == Outcome.DRAW
    assert infos["end_reason"][0] == EndReason.NO_MISSILES
    assert infos["episode_length"][0] == 21
    assert (rewards[:2] == 0).all() and terminals[:2].all() and not truncations[:2].any()
    assert (infos["final_observation"][:2, ALIVE] == 1.0).all()
    assert_env0_restarted_and_env1_untouched(env, obs, infos, int(ws["decisions"][1]) + 1)


def test_a_missile_still_in_flight_keeps_an_unarmed_match_going_until_it_dies():
    env = make_env()
    ws = env0_state(env, decisions=0)
    missile_on(ws, env, owner=0, target=1)
    k = 0
    ws["missile_x"][0, k] -= 30000.0  # far behind: it cannot reach its target
    ws["missile_tof"][0, k] = 59.75  # dies of old age within the second decision (0.2 s each)
    ws["fighter_missiles"][0] = 0
    env.set_world_state(ws)
    _, _, terminals, _, infos = env.step(passive(env))
    assert not infos["done"][0] and env.world_state()["missile_active"][0, k]
    _, _, terminals, _, infos = env.step(passive(env))
    assert infos["done"][0] and infos["end_reason"][0] == EndReason.NO_MISSILES
    assert infos["episode_length"][0] == 2 and terminals[:2].all()


def test_the_time_limit_is_a_draw_by_truncation_not_a_terminal():
    env = make_env(time_limit_s=2.0)  # 120 physics steps: 10 decisions of 12
    for k in range(1, 10):
        _, _, terminals, truncations, infos = env.step(passive(env))
        assert not infos["done"].any() and not terminals.any() and not truncations.any(), k
    obs, rewards, terminals, truncations, infos = env.step(passive(env))
    assert infos["done"].all()
    assert (infos["outcome"] == Outcome.DRAW).all()
    assert (infos["end_reason"] == EndReason.TIME_LIMIT).all()
    assert (infos["episode_length"] == 10).all()
    assert truncations.all() and not terminals.any() and (rewards == 0).all()
    assert (infos["final_observation"][:, TIME_LEFT] == 0.0).all()
    assert (infos["final_observation"][:, ALIVE] == 1.0).all()
    assert (obs[:, TIME_LEFT] == 1.0).all()
    assert (env.world_state()["physics_steps"] == 0).all()


def test_the_time_limit_cuts_the_last_decision_short_when_it_is_not_a_multiple_of_frame_skip():
    env = make_env(time_limit_s=1.1)  # 66 physics steps: 5 full decisions, then 6 steps
    for _ in range(5):
        _, _, _, _, infos = env.step(passive(env))
        assert not infos["done"].any()
    assert (env.world_state()["physics_steps"] == 60).all()
    _, _, _, truncations, infos = env.step(passive(env))
    assert infos["done"].all() and (infos["episode_length"] == 6).all() and truncations.all()


def test_an_auto_reset_match_plays_on_from_its_new_spawn():
    env = make_env(time_limit_s=1.0)  # 5 decisions per match
    for _ in range(5):
        _, _, _, _, infos = env.step(passive(env))
    assert infos["done"].all()
    for _ in range(4):
        _, _, _, _, infos = env.step(passive(env))
        assert not infos["done"].any() and (infos["outcome"] == Outcome.NONE).all()
        assert (infos["end_reason"] == EndReason.NONE).all()
    _, _, _, _, infos = env.step(passive(env))
    assert infos["done"].all() and (infos["episode_length"] == 5).all()


def test_leaving_the_arena_alone_loses_a_duel():
    env = make_env(frame_skip=1)
    ws = env0_state(env)
    ws["fighter_x"][0, 0] = 60000.0 - 2.0
    env.set_world_state(ws)
    _, rewards, terminals, _, infos = env.step(passive(env))
    assert infos["outcome"][0] == Outcome.TEAM1 and infos["end_reason"][0] == EndReason.ELIMINATION
    assert list(infos["events"][0]) == [0, 0, 0, 0, 1, 1, 0, 0]
    assert list(rewards[:2]) == [-1.0, 1.0] and terminals[:2].all()
