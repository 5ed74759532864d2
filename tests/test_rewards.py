"""Reward terms and their composition: what a config builds, what each term pays, what fails loudly."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

import arena
from arena.games.midrange.obs import FIGHTER, MISSILE, SELF, MidrangeObsLayout
from arena.games.midrange.rewards import Boundary, Closing, Energy, MissileClosing, Pointing, Survival
from arena.rewards import CompositeReward, Reward, RewardError, StepBatch, build_reward, builtin_terms
from arena.rewards.terms import Outcome

BUILTIN_TERMS = builtin_terms()

CLOSE_FIGHT = {"time_limit_s": 20.0, "spawn_distance_min_m": 4000.0, "spawn_distance_max_m": 6000.0}
ALL_BUILTINS = {name: {"_target_": name} for name in BUILTIN_TERMS if name != "event"}


def random_actions(env: arena.VectorEnv, rng: np.random.Generator) -> np.ndarray:
    nvec = env.action_space.nvec
    return np.stack([rng.integers(0, n, env.num_agents) for n in nvec], axis=1).astype(np.int32)


def rollout(env: arena.VectorEnv, steps: int, seed: int = 0):
    """Yields (StepBatch, infos) for ``steps`` random decisions."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed)
    for _ in range(steps):
        actions = random_actions(env, rng)
        before = obs.copy()
        obs, rewards, terminals, truncations, infos = env.step(actions)
        yield StepBatch.from_env(env, before, actions, obs, rewards, terminals, truncations, infos), infos


def midrange_batch(obs_before: np.ndarray, obs_after: np.ndarray, done: bool = False) -> StepBatch:
    rows = obs_before.shape[0]
    return StepBatch(
        obs_before=obs_before,
        obs_after=obs_after,
        actions=np.zeros((rows, 3), np.int32),
        events=np.zeros((rows, 6), np.int32),
        event_names=("fired", "hits", "kills", "was_hit", "died", "left_arena"),
        outcome_reward=np.zeros(rows, np.float32),
        terminals=np.full(rows, done),
        truncations=np.zeros(rows, bool),
        done_rows=np.full(rows, done),
        team_of_row=np.arange(rows) % 2,
        game="midrange",
        team_sizes=(1, 1),
        params={"tracked_missiles": 4},
    )


def fighter_obs(
    rows: int = 1,
    *,
    alive: float = 1.0,
    boundary_10km: float = 5.0,
    enemy_range_10km: float = 2.0,
    enemy_bearing_cos: float = 1.0,
) -> np.ndarray:
    layout = MidrangeObsLayout((1, 1), 4)
    obs = np.zeros((rows, layout.obs_dim), np.float32)
    obs[:, SELF.index("alive")] = alive
    obs[:, SELF.index("boundary")] = boundary_10km
    enemy = layout.enemies(obs)
    enemy[:, 0, FIGHTER.index("present")] = 1.0
    enemy[:, 0, FIGHTER.index("alive")] = 1.0
    enemy[:, 0, FIGHTER.index("range")] = enemy_range_10km
    enemy[:, 0, FIGHTER.index("bearing_cos")] = enemy_bearing_cos
    return obs


# ---------------------------------------------------------------------- shaping never changes outcomes


def test_outcome_term_equals_the_core_reward_and_shaping_leaves_env_results_untouched():
    shaped_env = arena.make("midrange", num_envs=4, num_threads=1, **CLOSE_FIGHT)
    plain_env = arena.make("midrange", num_envs=4, num_threads=1, **CLOSE_FIGHT)
    terms = {"outcome": {"_target_": "outcome", "weight": 1.0}} | ALL_BUILTINS
    reward = build_reward(terms, discount=(0.99, False))
    plain = rollout(plain_env, 110)
    ended = 0
    for batch, infos in rollout(shaped_env, 110):
        total, parts = reward(batch)
        np.testing.assert_array_equal(Outcome()(batch), batch.outcome_reward)
        np.testing.assert_array_equal(parts["outcome"], batch.outcome_reward)
        np.testing.assert_allclose(total, sum(parts.values()), rtol=1e-6, atol=1e-6)
        reference, ref_infos = next(plain)
        for field in ("outcome_reward", "terminals", "truncations", "obs_after", "events"):
            np.testing.assert_array_equal(getattr(batch, field), getattr(reference, field))
        np.testing.assert_array_equal(infos["outcome"], ref_infos["outcome"])
        ended += int(infos["done"].sum())
    assert ended > 0, "the rollout should finish some matches"


def test_terms_cannot_write_into_the_env_buffers():
    env = arena.make("midrange", num_envs=2, num_threads=1)
    batch, _ = next(rollout(env, 1))
    with pytest.raises(ValueError, match="read-only"):
        batch.obs_after[0, 0] = 5.0


def test_final_observation_is_the_obs_after_for_rows_of_ended_matches():
    env = arena.make("midrange", num_envs=4, num_threads=1, **CLOSE_FIGHT)
    for batch, infos in rollout(env, 110):
        if infos["done"].any():
            rows = batch.done_rows
            np.testing.assert_array_equal(batch.obs_after[rows], infos["final_observation"][rows])
            return
    pytest.fail("no match ended")


# ---------------------------------------------------------------------- built-in terms


def test_event_terms_count_this_decisions_events_with_costs_negative():
    env = arena.make("midrange", num_envs=4, num_threads=1, **CLOSE_FIGHT)
    reward = build_reward({n: {"_target_": n} for n in ("kill", "hit", "death", "missile_fired")})
    col = {name: i for i, name in enumerate(env.event_names)}
    for batch, _ in rollout(env, 60):
        _, parts = reward(batch)
        np.testing.assert_array_equal(parts["kill"], batch.events[:, col["kills"]])
        np.testing.assert_array_equal(parts["hit"], batch.events[:, col["hits"]])
        np.testing.assert_array_equal(parts["death"], -batch.events[:, col["died"]])
        np.testing.assert_array_equal(parts["missile_fired"], -batch.events[:, col["fired"]])


def test_missed_and_evaded_terms_score_the_shooter_minus_and_the_target_plus_per_missile_run_out():
    env = arena.make("midrange", num_envs=4, num_threads=1, **{**CLOSE_FIGHT, "missile_max_time_s": 4.0})
    reward = build_reward({n: {"_target_": n} for n in ("missile_missed", "missile_evaded")})
    col = {name: i for i, name in enumerate(env.event_names)}
    ran_out = 0
    for batch, _ in rollout(env, 120):
        _, parts = reward(batch)
        np.testing.assert_array_equal(parts["missile_missed"], -batch.events[:, col["missed"]])
        np.testing.assert_array_equal(parts["missile_evaded"], batch.events[:, col["evaded"]])
        ran_out += int(batch.events[:, col["missed"]].sum())
        # zero-sum in 1v1: every missile that runs out is one side's miss and the other's evasion
        assert parts["missile_missed"].sum() + parts["missile_evaded"].sum() == 0
    assert ran_out > 0, "no missile ran out: the test did not exercise the terms"


def test_generic_event_term_works_for_the_tiny_game():
    env = arena.make("rpsw", num_envs=3, num_threads=1)
    reward = build_reward({"won": {"_target_": "event", "event": "round_won", "weight": 0.5}})
    batch, _ = next(rollout(env, 1))
    _, parts = reward(batch)
    np.testing.assert_array_equal(parts["won"], 0.5 * batch.events[:, 0])


def test_survival_pays_alive_fighters_only():
    obs = np.concatenate([fighter_obs(alive=1.0), fighter_obs(alive=0.0)])
    np.testing.assert_array_equal(Survival()(midrange_batch(obs, obs)), [1.0, 0.0])


def test_pointing_rewards_turning_the_nose_onto_the_enemy():
    tail_on, nose_on = fighter_obs(enemy_bearing_cos=-1.0), fighter_obs(enemy_bearing_cos=1.0)
    term = Pointing(gamma=1.0)
    assert term(midrange_batch(tail_on, nose_on))[0] == pytest.approx(2.0)
    assert term(midrange_batch(nose_on, tail_on))[0] == pytest.approx(-2.0)


def test_zero_sum_pointing_is_my_pointing_minus_the_enemys_pointing_at_me():
    obs = fighter_obs(enemy_bearing_cos=1.0)
    MidrangeObsLayout((1, 1), 4).enemies(obs)[:, 0, FIGHTER.index("aspect_cos")] = -1.0  # its tail
    term = Pointing(gamma=1.0, zero_sum=True)
    assert term.potential(midrange_batch(obs, obs), obs)[0] == pytest.approx(2.0)
    assert Pointing(gamma=1.0).potential(midrange_batch(obs, obs), obs)[0] == pytest.approx(1.0)
    with pytest.raises(RewardError, match="zero_sum"):
        Pointing(zero_sum="yes")


def test_energy_rewards_gaining_speed_and_zero_sum_energy_is_my_speed_minus_the_enemys():
    slow, fast = fighter_obs(), fighter_obs()
    slow[:, SELF.index("speed")], fast[:, SELF.index("speed")] = 0.6, 1.1
    assert Energy(gamma=1.0)(midrange_batch(slow, fast))[0] == pytest.approx(0.5)
    assert Energy(gamma=1.0)(midrange_batch(fast, slow))[0] == pytest.approx(-0.5)
    MidrangeObsLayout((1, 1), 4).enemies(fast)[:, 0, FIGHTER.index("speed")] = 0.8
    term = Energy(gamma=1.0, zero_sum=True)
    assert term.potential(midrange_batch(fast, fast), fast)[0] == pytest.approx(0.3)
    dead_enemy = fast.copy()
    MidrangeObsLayout((1, 1), 4).enemies(dead_enemy)[:, 0, FIGHTER.index("alive")] = 0.0
    assert term.potential(midrange_batch(dead_enemy, dead_enemy), dead_enemy)[0] == 0.0
    with pytest.raises(RewardError, match="zero_sum"):
        Energy(zero_sum=1)


def test_closing_rewards_reducing_range_to_the_nearest_enemy():
    far, near = fighter_obs(enemy_range_10km=3.0), fighter_obs(enemy_range_10km=2.5)
    assert Closing(gamma=1.0)(midrange_batch(far, near))[0] == pytest.approx(0.5)


def with_missile(obs: np.ndarray, block: str, slot: int, closing_kms: float) -> np.ndarray:
    """``obs`` with missile ``slot`` of ``block`` ("threats" or "own_missiles") present and closing."""
    obs = obs.copy()
    view = getattr(MidrangeObsLayout((1, 1), 4), block)(obs)
    view[:, slot, MISSILE.index("present")] = 1.0
    view[:, slot, MISSILE.index("closing")] = closing_kms
    return obs


def test_missile_closing_potential_is_my_missiles_closing_minus_the_threats_closing():
    obs = with_missile(with_missile(fighter_obs(), "own_missiles", 0, 0.8), "threats", 1, 0.5)
    obs = with_missile(obs, "threats", 2, -0.3)  # opening: counts as 0, not as a gain
    term = MissileClosing(gamma=1.0)
    assert term.potential(midrange_batch(obs, obs), obs)[0] == pytest.approx(0.3)
    # turning tail: the threat closes at 0.2 instead of 0.5, worth +0.3
    tail = with_missile(with_missile(fighter_obs(), "own_missiles", 0, 0.8), "threats", 1, 0.2)
    assert term(midrange_batch(obs, tail))[0] == pytest.approx(0.3)
    dead = with_missile(fighter_obs(alive=0.0), "own_missiles", 0, 0.8)
    assert term.potential(midrange_batch(dead, dead), dead)[0] == 0.0


@pytest.mark.parametrize("term", [MissileClosing(gamma=0.99), Pointing(gamma=0.99, zero_sum=True),
                                  Energy(gamma=0.99, zero_sum=True)],
                         ids=["missile_closing", "pointing_zero_sum", "energy_zero_sum"])
def test_zero_sum_shaping_pays_one_side_of_a_duel_what_the_other_loses(term):
    env = arena.make("midrange", num_envs=4, num_threads=1, **{**CLOSE_FIGHT, "missile_max_time_s": 8.0})
    seen = 0.0
    for batch, _ in rollout(env, 150, seed=5):
        shaped = term(batch).reshape(-1, 2)
        np.testing.assert_allclose(shaped.sum(axis=1), 0.0, atol=1e-5)
        seen += float(np.abs(shaped).sum())
    assert seen > 1.0, "nothing moved the potential: the test did not exercise the term"


def test_potential_shaping_telescopes_over_an_episode_to_minus_the_start_potential():
    """Potential-based shaping adds the same constant -phi(s0) to every policy's return (gamma = 1)."""
    env = arena.make("midrange", num_envs=4, num_threads=1, time_limit_s=6.0)
    terms = {"pointing": Pointing(gamma=1.0), "closing": Closing(gamma=1.0)}
    start_obs = env.reset(3)[0].copy()
    first = {
        name: term.potential(midrange_batch(start_obs, start_obs), start_obs) for name, term in terms.items()
    }
    sums = {name: np.zeros(env.num_agents) for name in terms}
    running = np.ones(env.num_agents, bool)  # rows still in their first episode
    for batch, _ in rollout(env, 31, seed=3):
        for name, term in terms.items():
            sums[name] += np.where(running, term(batch), 0.0)
        running &= ~batch.done_rows
        if not running.any():
            break
    else:
        pytest.fail("the time limit should end every match")
    for name in terms:
        np.testing.assert_allclose(sums[name], -first[name], atol=1e-4)


def test_shaping_potential_is_zero_after_a_match_ends_unless_truncations_are_bootstrapped():
    before, after = fighter_obs(enemy_bearing_cos=0.0), fighter_obs(enemy_bearing_cos=1.0)
    ended = midrange_batch(before, after, done=True)
    assert Pointing(gamma=1.0)(ended)[0] == pytest.approx(0.0)
    truncated = dataclasses.replace(ended, terminals=np.zeros(1, bool), truncations=np.ones(1, bool))
    assert Pointing(gamma=1.0, bootstrap_truncation=True)(truncated)[0] == pytest.approx(1.0)
    assert Pointing(gamma=1.0, bootstrap_truncation=True)(ended)[0] == pytest.approx(0.0)


def test_boundary_penalises_only_near_the_edge():
    obs = np.concatenate(
        [fighter_obs(boundary_10km=2.0), fighter_obs(boundary_10km=0.25), fighter_obs(boundary_10km=0.0)]
    )
    np.testing.assert_allclose(Boundary(margin_m=5000.0)(midrange_batch(obs, obs)), [0.0, -0.5, -1.0])


@pytest.mark.parametrize("target", ["survival", "pointing", "closing", "boundary"])
def test_midrange_observation_terms_refuse_other_games_clearly(target):
    env = arena.make("rpsw", num_envs=2, num_threads=1)
    reward = build_reward({"shaping": {"_target_": target}})
    batch, _ = next(rollout(env, 1))
    with pytest.raises(RewardError, match=r"'shaping'.*midrange.*'rpsw'"):
        reward(batch)


def test_event_terms_name_the_missing_event_for_other_games():
    env = arena.make("rpsw", num_envs=2, num_threads=1)
    batch, _ = next(rollout(env, 1))
    with pytest.raises(RewardError, match=r"'kill'.*'kills'.*round_won"):
        build_reward({"kill": {"_target_": "kill"}})(batch)


# ---------------------------------------------------------------------- composition


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(
        textwrap.dedent("""
        import numpy as np
        from arena.rewards import Reward

        class Speedy(Reward):
            def __init__(self, bonus: float = 1.0, *, per_row: bool = False):
                self.bonus = bonus

            def __call__(self, batch):
                return np.full(batch.num_rows, self.bonus, dtype=np.float64)

        class Counter(Reward):
            '''Per-row state: decisions since the episode started.'''
            def __init__(self):
                self.count = None

            def __call__(self, batch):
                if self.count is None:
                    self.count = np.zeros(batch.num_rows, np.float32)
                self.count += 1
                return self.count.copy()

            def reset(self, done_rows):
                self.count[done_rows] = 0

        class WrongShape(Reward):
            def __call__(self, batch):
                return np.zeros(batch.num_rows + 1, np.float32)

        class Strings(Reward):
            def __call__(self, batch):
                return np.array(["a"] * batch.num_rows)

        class NotFinite(Reward):
            def __call__(self, batch):
                out = np.zeros(batch.num_rows, np.float32)
                out[1] = np.nan
                return out

        class NotAReward:
            pass
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_rewards"


def small_batch(rows: int = 4) -> StepBatch:
    obs = fighter_obs(rows)
    return midrange_batch(obs, obs)


def test_user_rewards_load_by_dotted_path_and_are_weighted(user_module):
    reward = build_reward(
        {
            "speedy": {"_target_": f"{user_module}.Speedy", "weight": 0.5, "bonus": 3.0},
            "outcome": {"_target_": "arena.rewards.terms.Outcome", "weight": 2.0},
        }
    )
    total, parts = reward(small_batch())
    assert parts["speedy"].dtype == np.float32
    np.testing.assert_array_equal(parts["speedy"], 1.5)
    np.testing.assert_array_equal(total, 1.5)


def test_reset_clears_per_row_state_of_stateful_terms(user_module):
    reward = build_reward({"count": {"_target_": f"{user_module}.Counter"}})
    batch = small_batch()
    reward(batch)
    reward(batch)
    reward.reset(np.array([True, False, True, False]))
    np.testing.assert_array_equal(reward(batch)[0], [1, 3, 1, 3])


def test_omegaconf_configs_are_accepted():
    from omegaconf import OmegaConf

    cfg = OmegaConf.create(
        {"boundary": {"_target_": "arena.games.midrange.rewards.Boundary", "weight": 0.1, "margin_m": 2000}}
    )
    reward = build_reward(cfg)
    assert isinstance(reward, CompositeReward)
    assert reward.weights == {"boundary": 0.1}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"_target_": "no_such_pkg.Thing"}, r"'bad'.*cannot import module 'no_such_pkg'"),
        ({"_target_": "my_rewards.Missing"}, r"'bad'.*has no class 'Missing'"),
        ({"_target_": "my_rewards.NotAReward"}, r"'bad'.*not a subclass of arena.rewards.Reward"),
        ({"_target_": "kil"}, r"'bad'.*unknown built-in term 'kil'.*kill"),
        ({"_target_": "my_rewards.Speedy", "bonsu": 1}, r"'bad'.*bonsu.*accepted arguments: bonus, per_row"),
        ({"_target_": "boundary", "margin_m": -1.0}, r"'bad'.*margin_m must be a positive"),
        ({"_target_": "outcome", "weight": float("nan")}, r"'bad'.*weight must be a finite number"),
        ({"_target_": "outcome", "weight": "1"}, r"'bad'.*weight must be a finite number"),
        ({"weight": 1.0}, r"'bad'.*_target_"),
    ],
)
def test_config_errors_name_the_term_and_say_what_is_wrong(user_module, entry, message):
    with pytest.raises(RewardError, match=message):
        build_reward({"bad": entry})


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        ("WrongShape", r"'bad'.*shape \(5,\); expected \(4,\)"),
        ("Strings", r"'bad'.*dtype <U1.*cannot be cast"),
        ("NotFinite", r"'bad'.*1 NaN/inf values \(first at row 1"),
    ],
)
def test_unusable_term_values_fail_naming_the_term(user_module, cls, message):
    reward = build_reward({"bad": {"_target_": f"{user_module}.{cls}"}})
    with pytest.raises(RewardError, match=message):
        reward(small_batch())


def test_a_reward_base_subclass_without_call_says_what_to_implement():
    class Empty(Reward):
        pass

    with pytest.raises(NotImplementedError, match=r"__call__\(batch\)"):
        CompositeReward({"empty": (1.0, Empty())})(small_batch())


def test_shaping_takes_the_trainers_discount_and_truncation_handling():
    reward = build_reward({"pointing": {"_target_": "pointing"}}, discount=(0.995, True))
    term = reward.terms["pointing"][1]
    assert (term.gamma, term.bootstrap_truncation) == (0.995, True)
    same = build_reward({"pointing": {"_target_": "pointing", "gamma": 0.995}}, discount=(0.995, True))
    assert same.terms["pointing"][1].gamma == 0.995


@pytest.mark.parametrize("entry", [{"gamma": 0.99}, {"bootstrap_truncation": False}])
def test_shaping_with_another_discount_than_the_trainers_is_refused(entry):
    with pytest.raises(RewardError, match=r"'pointing'.*differs from the trainer's"):
        build_reward({"pointing": {"_target_": "pointing", **entry}}, discount=(0.995, True))


def test_shaping_without_a_discount_refuses_to_run():
    obs = fighter_obs()
    with pytest.raises(RewardError, match="gamma is unset"):
        build_reward({"pointing": {"_target_": "pointing"}})(midrange_batch(obs, obs))


def test_a_stalemate_costs_both_sides_and_a_decided_match_costs_nothing():
    obs = np.concatenate([fighter_obs(), fighter_obs(), fighter_obs(), fighter_obs()])
    draw = dataclasses.replace(midrange_batch(obs, obs, done=True))
    won = dataclasses.replace(draw, outcome_reward=np.array([1, -1, 1, -1], np.float32))
    running = midrange_batch(obs, obs, done=False)
    term = BUILTIN_TERMS["stalemate"]()
    np.testing.assert_array_equal(term(draw), [-1, -1, -1, -1])
    np.testing.assert_array_equal(term(won), [0, 0, 0, 0])
    np.testing.assert_array_equal(term(running), [0, 0, 0, 0])


def test_an_annealed_weight_moves_linearly_to_its_end_then_stays():
    reward = build_reward({
        "outcome": {"_target_": "outcome"},
        "kill": {"_target_": "kill", "weight": 0.5, "anneal_steps": 1000},
        "death": {"_target_": "death", "weight": 0.0, "weight_end": 1.0, "anneal_steps": 100},
    })
    assert reward.weights == {"outcome": 1.0, "kill": 0.5, "death": 0.0}
    reward.set_step(500)
    assert reward.weights == pytest.approx({"outcome": 1.0, "kill": 0.25, "death": 1.0})
    reward.set_step(5000)
    assert reward.weights == pytest.approx({"outcome": 1.0, "kill": 0.0, "death": 1.0})


@pytest.mark.parametrize(("extra", "message"), [
    ({"anneal_steps": 0}, "anneal_steps=0 must be an integer >= 1"),
    ({"weight_end": 0.5}, "weight_end=0.5 needs anneal_steps"),
    ({"anneal_steps": 10, "weight_end": float("nan")}, "weight must be a finite number"),
])
def test_bad_weight_schedules_are_refused_by_name(extra, message):
    with pytest.raises(RewardError, match=message):
        build_reward({"kill": {"_target_": "kill", **extra}})
