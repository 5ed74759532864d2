"""The PettingZoo and Gymnasium faces of one match: the library API checkers, outcome rewards,
real final observations, dead fighters, and opponents."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test, parallel_seed_test

import arena
from arena.envs import EndReason, Outcome
from arena.envs.gymnasium_env import ArenaSingleAgentEnv, RandomPolicy, observation_space_for
from arena.envs.pettingzoo_env import ArenaParallelEnv

SHORT = {"time_limit_s": 30.0}  # random play ends well inside the API testers' cycle budgets


def passive(obs: np.ndarray) -> np.ndarray:
    """An opponent that flies straight, idle, and never fires."""
    return np.tile(np.array([2, 0, 0], dtype=np.int32), (len(obs), 1))


def stage_hits(env: arena.VectorEnv, hits: list[tuple[int, int, float]]) -> dict[str, np.ndarray]:
    """Fighters in a line 10 km apart flying +x; for each (owner, target, gap) a missile ``gap`` m
    behind the target (50 m: it hits in the first physics step). Returns the state it set."""
    ws = env.world_state()
    f = env.agents_per_env
    ws["fighter_x"][0], ws["fighter_y"][0] = 0.0, np.arange(f) * 10000.0
    ws["fighter_vx"][0], ws["fighter_vy"][0] = 300.0, 0.0
    ws["missile_active"][0] = False
    for owner, target, gap in hits:
        k = owner * env.params["missiles_per_fighter"]
        ws["missile_x"][0, k], ws["missile_y"][0, k] = -gap, ws["fighter_y"][0, target]
        ws["missile_vx"][0, k], ws["missile_vy"][0, k], ws["missile_tof"][0, k] = 300.0, 0.0, 1.0
        ws["missile_owner"][0, k], ws["missile_target"][0, k], ws["missile_active"][0, k] = (
            owner,
            target,
            True,
        )
    env.set_world_state(ws)
    return ws


def final_observation_of(ws: dict[str, np.ndarray], actions: np.ndarray, **make_kwargs) -> np.ndarray:
    """What the core itself reports as final observation from state ``ws`` after ``actions``."""
    raw = arena.make("midrange", num_envs=1, num_threads=1, **make_kwargs)
    raw.set_world_state(ws)
    _, _, _, _, infos = raw.step(actions)
    assert infos["done"][0]
    return infos["final_observation"].copy()


# ---------------------------------------------------------------- spaces


@pytest.mark.parametrize("kwargs", [{}, {"team_sizes": (1, 3), "tracked_missiles": 8}])
def test_observations_of_random_play_stay_inside_the_declared_bounds(kwargs):
    env = arena.make("midrange", num_envs=16, num_threads=2, seed=1, time_limit_s=40.0, **kwargs)
    box = observation_space_for(env)
    assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        obs, _, _, _, infos = env.step(rng.integers(0, [5, 3, 2], size=(env.num_agents, 3)))
        rows = np.repeat(infos["done"], env.agents_per_env)
        for o in (obs, infos["final_observation"][rows]):
            assert ((o >= box.low) & (o <= box.high)).all()
        ends += int(infos["done"].sum())
    assert ends >= 16


# ---------------------------------------------------------------- PettingZoo


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("remove_dead", [False, True])
@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 2), (1, 3)])
def test_parallel_env_passes_the_pettingzoo_api_and_seed_tests(team_sizes, remove_dead):
    def env_fn() -> ArenaParallelEnv:
        return ArenaParallelEnv("midrange", team_sizes=team_sizes, remove_dead=remove_dead, **SHORT)

    parallel_api_test(env_fn(), num_cycles=400)
    parallel_seed_test(env_fn, num_cycles=400)


@pytest.mark.filterwarnings("error")
def test_parallel_env_serves_any_game_of_the_core():
    parallel_api_test(ArenaParallelEnv("rpsw", rounds=5), num_cycles=50)


def test_agents_are_named_by_team_and_slot_with_stable_spaces():
    env = ArenaParallelEnv("midrange", team_sizes=(2, 3))
    assert env.possible_agents == ["team0_0", "team0_1", "team1_0", "team1_1", "team1_2"]
    obs, infos = env.reset(seed=1)
    assert env.agents == env.possible_agents and set(obs) == set(infos) == set(env.agents)
    for agent in env.agents:
        assert env.observation_space(agent) is env.observation_space(agent)
        assert env.observation_space(agent).shape == (env.vector_env.obs_dim,)
        assert obs[agent] in env.observation_space(agent)
        assert list(env.action_space(agent).nvec) == [5, 3, 2]
    assert env.action_space("team0_0") is not env.action_space("team0_1"), "seeded independently"


def test_parallel_match_end_returns_the_real_final_observation_and_outcome_rewards():
    env = ArenaParallelEnv("midrange", seed=0)
    env.reset(seed=3)
    ws = stage_hits(env.vector_env, [(0, 1, 50.0)])
    expected = final_observation_of(ws, np.array([[2, 0, 0], [2, 0, 0]], np.int32))
    obs, rewards, terms, truncs, infos = env.step({"team0_0": [2, 0, 0], "team1_0": [2, 0, 0]})
    np.testing.assert_array_equal(obs["team0_0"], expected[0])
    np.testing.assert_array_equal(obs["team1_0"], expected[1])
    assert not np.array_equal(obs["team0_0"], env.vector_env.observations[0]), "not the auto-reset spawn"
    assert rewards == {"team0_0": 1.0, "team1_0": -1.0}
    assert all(terms.values()) and not any(truncs.values())
    assert (
        infos["team0_0"]["outcome"] == Outcome.TEAM0
        and infos["team0_0"]["end_reason"] == EndReason.ELIMINATION
    )
    assert infos["team1_0"]["events"]["died"] == 1 and infos["team0_0"]["events"]["kills"] == 1
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    env.reset()
    assert env.agents == env.possible_agents


def test_parallel_time_limit_truncates_every_agent():
    env = ArenaParallelEnv("midrange", team_sizes=(2, 2), time_limit_s=1.0)  # 5 decisions
    env.reset(seed=0)
    for _ in range(5):
        _, rewards, terms, truncs, infos = env.step({a: [2, 1, 0] for a in env.agents})
    assert all(truncs.values()) and not any(terms.values()) and set(rewards.values()) == {0.0}
    assert infos["team1_1"]["end_reason"] == EndReason.TIME_LIMIT and env.agents == []


@pytest.mark.parametrize("remove_dead", [False, True])
def test_a_dead_fighter_in_a_team_game_stays_or_leaves_as_configured(remove_dead):
    env = ArenaParallelEnv("midrange", team_sizes=(2, 2), remove_dead=remove_dead)
    env.reset(seed=0)
    stage_hits(env.vector_env, [(0, 2, 50.0)])
    obs, rewards, terms, truncs, infos = env.step({a: [2, 1, 0] for a in env.agents})
    assert not obs["team1_0"].any() and infos["team1_0"]["alive"] is False
    assert rewards["team1_0"] == 0.0 and terms["team1_0"] is remove_dead and not truncs["team1_0"]
    assert not any(terms[a] for a in ("team0_0", "team0_1", "team1_1"))
    expected = ["team0_0", "team0_1", "team1_1"] if remove_dead else env.possible_agents
    assert env.agents == expected
    # the dead fighter's action may be left out: it would be ignored anyway
    obs, _, terms, _, infos = env.step({a: [2, 1, 0] for a in ("team0_0", "team0_1", "team1_1")})
    assert set(obs) == set(expected)
    assert infos["team1_1"]["alive"] is True


def test_parallel_actions_are_checked_per_agent():
    env = ArenaParallelEnv("midrange")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="no action for 'team1_0'"):
        env.step({"team0_0": [2, 1, 0]})
    with pytest.raises(ValueError, match="unknown agents.*'team2_0'"):
        env.step({"team0_0": [2, 1, 0], "team1_0": [2, 1, 0], "team2_0": [2, 1, 0]})
    with pytest.raises(ValueError, match=r"action \[2, 3, 0\] for 'team1_0' is invalid.*0\.\.\[4 2 1\]"):
        env.step({"team0_0": [2, 1, 0], "team1_0": [2, 3, 0]})
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step({"team0_0": [2, 1, 0], "team1_0": [2, 1, 0]})


# ---------------------------------------------------------------- Gymnasium


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    "kwargs", [{}, {"team_sizes": (2, 2)}, {"team_sizes": (1, 3), "opponent": passive}, {"game": "rpsw"}]
)
def test_single_agent_env_passes_the_gymnasium_env_checker_without_warnings(kwargs):
    env = ArenaSingleAgentEnv(**kwargs)
    check_env(env.unwrapped)
    assert isinstance(gym.make(env.spec).unwrapped, ArenaSingleAgentEnv)


@pytest.mark.parametrize("agent_wins", [True, False])
def test_single_agent_reward_is_the_outcome_with_the_real_final_observation(agent_wins):
    env = ArenaSingleAgentEnv(opponent=passive)
    env.reset(seed=2)
    ws = stage_hits(env.vector_env, [(0, 1, 50.0)] if agent_wins else [(1, 0, 50.0)])
    expected = final_observation_of(ws, np.array([[4, 2, 0], [2, 0, 0]], np.int32))
    obs, reward, terminated, truncated, info = env.step(np.array([4, 2, 0]))
    np.testing.assert_array_equal(obs, expected[0])
    assert obs.any() == agent_wins, "the loser observes zeros, the winner its last state"
    assert reward == (1.0 if agent_wins else -1.0)
    assert terminated is True and truncated is False
    assert info["outcome"] == (Outcome.TEAM0 if agent_wins else Outcome.TEAM1)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([2, 1, 0]))


def test_single_agent_time_limit_is_a_truncation_with_zero_reward():
    env = ArenaSingleAgentEnv(opponent=passive, time_limit_s=1.0)
    env.reset(seed=0)
    results = [env.step(np.array([2, 1, 0])) for _ in range(5)]
    assert [r[3] for r in results] == [False] * 4 + [True]
    _, reward, terminated, _, info = results[-1]
    assert reward == 0.0 and terminated is False and info["end_reason"] == EndReason.TIME_LIMIT


def test_the_opponent_flies_every_other_fighter_from_their_observations():
    seen = []

    def turn_left(obs: np.ndarray) -> np.ndarray:
        seen.append((obs.shape, obs.dtype, np.shares_memory(obs, env.vector_env.observations)))
        return np.tile(np.array([4, 2, 0], dtype=np.int32), (len(obs), 1))

    env = ArenaSingleAgentEnv(opponent=turn_left, team_sizes=(2, 2))
    env.reset(seed=0)
    before = env.vector_env.world_state()
    env.step(np.array([2, 1, 0]))
    after = env.vector_env.world_state()
    assert seen == [((3, env.vector_env.obs_dim), np.float32, False)]
    cross = (
        before["fighter_vx"][0] * after["fighter_vy"][0] - before["fighter_vy"][0] * after["fighter_vx"][0]
    )
    assert cross[0] == pytest.approx(0.0, abs=1e-9), "the agent flew straight"
    assert (cross[1:] > 0).all(), "the opponent's fighters turned left"


def test_an_object_with_an_act_method_can_be_the_opponent():
    class Pilot:  # the scripted agents' shape: act(obs) -> actions
        def act(self, obs: np.ndarray) -> np.ndarray:
            return passive(obs)

    env = ArenaSingleAgentEnv(opponent=Pilot(), time_limit_s=1.0)
    env.reset(seed=0)
    assert [env.step(np.array([2, 1, 0]))[3] for _ in range(5)] == [False] * 4 + [True]


def test_the_default_random_opponent_is_seeded_by_reset():
    def trajectory(seed: int) -> np.ndarray:
        env = ArenaSingleAgentEnv(team_sizes=(2, 2))
        assert isinstance(env.opponent, RandomPolicy)
        env.reset(seed=seed)
        return np.stack([env.step(np.array([2, 1, 0]))[0] for _ in range(20)])

    np.testing.assert_array_equal(trajectory(4), trajectory(4))
    assert not np.array_equal(trajectory(4), trajectory(5))


def test_an_unseeded_first_reset_uses_the_constructor_seed():
    a, b = ArenaSingleAgentEnv(seed=8), ArenaSingleAgentEnv(seed=8)
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])
    np.testing.assert_array_equal(a.reset()[0], b.reset()[0])


@pytest.mark.parametrize("end_on_death", [True, False])
def test_when_the_agent_dies_in_a_team_game_the_match_still_decides_its_reward(end_on_death):
    # the agent (row 0) is hit at once; its teammate (row 1) is hit about 3 s later
    env = ArenaSingleAgentEnv(opponent=passive, team_sizes=(2, 2), end_on_death=end_on_death)
    env.reset(seed=0)
    stage_hits(env.vector_env, [(2, 0, 50.0), (3, 1, 500.0)])
    obs, reward, terminated, truncated, info = env.step(np.array([2, 1, 0]))
    assert not obs.any() and info["alive"] is False and info["events"]["died"] == 1
    if not end_on_death:
        assert (reward, terminated, truncated) == (0.0, False, False)
        while not (terminated or truncated):
            obs, reward, terminated, truncated, info = env.step(np.array([2, 1, 0]))
    assert reward == -1.0 and terminated is True and truncated is False
    assert info["end_reason"] == EndReason.ELIMINATION and info["episode_length"] > 1


def test_single_agent_rejects_bad_actions_and_bad_opponents():
    env = ArenaSingleAgentEnv(opponent=passive)
    env.reset(seed=0)
    for bad in ([2, 1], [5, 1, 0], [2.5, 1, 0], [-1, 0, 0]):
        with pytest.raises(ValueError, match=r"action .* is invalid: allowed 3 integers"):
            env.step(np.array(bad))
    broken = ArenaSingleAgentEnv(opponent=lambda obs: np.zeros((len(obs) + 1, 3), np.int32))
    broken.reset(seed=0)
    with pytest.raises(ValueError, match=r"opponent returned actions of shape \(2, 3\), expected \(1, 3\)"):
        broken.step(np.array([2, 1, 0]))
    with pytest.raises(ValueError, match="num_envs"):
        ArenaSingleAgentEnv(num_envs=4)
    env.close()
    with pytest.raises(RuntimeError, match="closed"):
        env.step(np.array([2, 1, 0]))
