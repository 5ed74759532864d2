"""Stable-Baselines3 as a real client: its env checker on the Gymnasium adapter, SB3 and sb3-contrib
models trained through arena's batched ``VecEnv``, and their zips playing as arena players
(``sb3:PATH.zip``) in evaluation, the gauntlet and a trainer's opponents."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO, RecurrentPPO  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_checker import check_env  # noqa: E402
from stable_baselines3.common.vec_env import VecMonitor  # noqa: E402

from arena.agents.players import load_player, resolve_player  # noqa: E402
from arena.agents.policy import Policy  # noqa: E402
from arena.agents.scripted import make_scripted  # noqa: E402
from arena.envs.gymnasium_env import ArenaSingleAgentEnv  # noqa: E402
from arena.envs.sb3_vec_env import ArenaVecEnv  # noqa: E402
from arena.evaluate import main as evaluate_main  # noqa: E402
from arena.evaluation.runner import MatchSettings, play_match  # noqa: E402
from arena.league.run.gauntlet import Gauntlet  # noqa: E402
from arena.trainer.config import PolicyConfig, TrainerConfig  # noqa: E402
from arena.trainer.opponents import FixedMix  # noqa: E402
from arena.trainer.ppo import PPOTrainer  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL_NET = {"net_arch": {"pi": [32], "vf": [32]}}


def _checked(env) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, warn=True)
    messages = [str(w.message) for w in caught if "stable_baselines3" in str(w.filename)]
    assert not messages, messages


def _saved_policy(tmp_path: Path, game: str) -> str:
    """An arena policy file (untrained) of the game's spaces, as a checkpoint opponent."""
    from arena.agents.players import game_spaces

    spaces = game_spaces(game)
    policy = Policy(spaces.obs_dim, list(spaces.action_nvec), hidden_size=16, lstm_size=16)
    path = tmp_path / f"{game}-policy.pt"
    torch.save({"policy_spec": policy.spec, "policy": policy.state_dict()}, path)
    return str(path)


def test_sb3s_env_checker_passes_on_every_game_and_opponent_kind(tmp_path):
    _checked(ArenaSingleAgentEnv("midrange", opponent=make_scripted("heuristic", "midrange")))
    checkpoint = load_player(_saved_policy(tmp_path, "midrange"), "midrange", num_rows=1)
    _checked(ArenaSingleAgentEnv("midrange", opponent=checkpoint))
    _checked(ArenaSingleAgentEnv("rpsw"))
    # Goofspiel forbids a card already bid: with illegal_action="loss" any action of the space is
    # allowed (the checker samples them), and action_masks() says which are legal for MaskablePPO.
    _checked(ArenaSingleAgentEnv("goofspiel", illegal_action="loss"))


def test_an_illegal_bid_loses_the_match_at_once_or_raises_by_name():
    env = ArenaSingleAgentEnv("goofspiel", illegal_action="loss", num_cards=4)
    env.reset(seed=0)
    card = int(np.flatnonzero(env.action_masks())[0])
    env.step(np.array([card]))
    assert not env.action_masks()[card]  # that card is spent
    obs, reward, terminated, truncated, info = env.step(np.array([card]))
    assert (reward, terminated, truncated) == (-1.0, True, False) and info["illegal_action"] is True
    strict = ArenaSingleAgentEnv("goofspiel", num_cards=4)
    strict.reset(seed=0)
    strict.step(np.array([card]))
    with pytest.raises(ValueError, match="illegal"):
        strict.step(np.array([card]))
    with pytest.raises(ValueError, match="illegal_action='lose' is not allowed"):
        ArenaSingleAgentEnv("goofspiel", illegal_action="lose")


def test_maskable_ppo_trains_on_goofspiel_without_ever_bidding_a_spent_card():
    # illegal_action="raise": one illegal bid would stop training with a ValueError.
    single = ArenaSingleAgentEnv("goofspiel", num_cards=4)
    MaskablePPO("MlpPolicy", single, n_steps=64, batch_size=64, n_epochs=1, seed=0,
                policy_kwargs=SMALL_NET).learn(256)
    batched = ArenaVecEnv("goofspiel", num_envs=8, num_cards=4, num_threads=1)
    model = MaskablePPO("MlpPolicy", batched, n_steps=32, batch_size=128, n_epochs=1, seed=0,
                        policy_kwargs=SMALL_NET)
    model.learn(512)
    assert model.num_timesteps >= 512


def test_the_vec_env_hands_sb3_the_final_observation_and_the_next_matchs_first(tmp_path):
    env = ArenaVecEnv("rpsw", num_envs=4, seed=3, num_threads=1)
    obs = env.reset()
    assert obs.shape == (4, env.observation_space.shape[0]) and env.observation_space.contains(obs[0])
    rng = np.random.default_rng(0)
    done_seen = 0
    for _ in range(200):
        env.step_async(rng.integers(0, env.action_space.nvec, size=(4, len(env.action_space.nvec))))
        obs, rewards, dones, infos = env.step_wait()
        for i in np.flatnonzero(dones):
            done_seen += 1
            info = infos[i]
            assert rewards[i] == {0: 1.0, 1: -1.0, 2: 0.0}[info["outcome"]]
            assert info["terminal_observation"].shape == obs[i].shape
            assert not np.array_equal(info["terminal_observation"], obs[i])  # a new match began
        assert np.all(rewards[~dones] == 0.0)
    assert done_seen >= 4
    with pytest.raises(ValueError, match=r"actions of shape \(3, 1\)"):
        env.step_async(np.zeros((3, 1), np.int64))
    env.close()


def _score(spec: str, game: str, games: int, seed: int = 5, **overrides) -> float:
    player = resolve_player(spec, game, overrides=overrides)
    other = resolve_player("scripted:random", game, overrides=overrides)
    result = play_match(player, other, MatchSettings(game=game, games=games, seed=seed, overrides=overrides))
    return result.score()[1]  # the lower end of the 95% interval


def test_sb3_ppo_trained_through_the_batched_vec_env_beats_the_random_thrower_in_rpsw(tmp_path):
    env = VecMonitor(ArenaVecEnv("rpsw", num_envs=16, seed=1, num_threads=1))
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=256, seed=0, policy_kwargs=SMALL_NET)
    model.learn(16_000)
    model.save(tmp_path / "rpsw.zip")
    assert _score(f"sb3:{tmp_path / 'rpsw.zip'}", "rpsw", games=400) > 0.5


SHORT_MIDRANGE = {"time_limit_s": 30.0, "spawn_distance_min_m": 4000.0, "spawn_distance_max_m": 6000.0}


REWARD_TERMS = {"outcome": {"_target_": "outcome"}, "kill": {"_target_": "kill", "weight": 0.5},
                "death": {"_target_": "death", "weight": 0.5}}


def test_recurrent_ppo_learns_midrange_through_the_vec_env_and_beats_the_random_pilot_as_an_arena_player(
        tmp_path):
    env = VecMonitor(ArenaVecEnv("midrange", num_envs=16, seed=1, num_threads=1, reward=REWARD_TERMS,
                                 **SHORT_MIDRANGE))
    model = RecurrentPPO("MlpLstmPolicy", env, n_steps=64, batch_size=256, n_epochs=4, learning_rate=1e-3,
                         seed=0, policy_kwargs={"lstm_hidden_size": 32, "net_arch": {"pi": [64], "vf": [64]}})

    def score() -> tuple[float, float, float]:
        model.save(tmp_path / "midrange.zip")
        player = resolve_player(f"sb3:{tmp_path / 'midrange.zip'}", "midrange", overrides=SHORT_MIDRANGE)
        other = resolve_player("scripted:random", "midrange", overrides=SHORT_MIDRANGE)
        settings = MatchSettings(game="midrange", games=200, seed=5, overrides=SHORT_MIDRANGE)
        return play_match(player, other, settings).score()

    before = score()  # an untrained LSTM policy: about even with the random pilot
    scores = []
    for _ in range(3):  # PPO's score is noisy from one rollout to the next: the best of three checkpoints
        model.learn(25_600, reset_num_timesteps=False)
        scores.append(score())
    assert len(model.ep_info_buffer) > 0  # matches ended and were scored
    best = max(scores)
    # a rising score, played as an sb3: player: the two 95% intervals do not overlap
    assert best[1] > before[2] and best[0] > 0.6, (before, scores)


def test_the_vec_envs_reward_terms_are_arenas_own_on_the_agents_rows():
    plain = ArenaVecEnv("midrange", num_envs=4, seed=7, num_threads=1, **SHORT_MIDRANGE)
    shaped = ArenaVecEnv("midrange", num_envs=4, seed=7, num_threads=1, reward=REWARD_TERMS, **SHORT_MIDRANGE)
    plain.reset(), shaped.reset()
    rng = np.random.default_rng(1)
    kills = 0
    for _ in range(400):
        actions = rng.integers(0, plain.action_space.nvec, size=(4, 3))
        plain.step_async(actions), shaped.step_async(actions)
        _, outcome, dones, _ = plain.step_wait()
        _, total, dones2, infos = shaped.step_wait()
        np.testing.assert_array_equal(dones, dones2)  # the same matches, step by step
        # outcome (+-1) plus half a point per kill and minus half per death, on the agent's row
        np.testing.assert_allclose(np.sign(total[dones]), np.sign(outcome[dones]))
        kills += int((np.abs(total - outcome) > 0).sum())
    assert kills > 0
    with pytest.raises(ValueError, match="reward must be a mapping"):
        ArenaVecEnv("rpsw", num_envs=2, reward=3)


def _rpsw_model(tmp_path: Path, recurrent: bool = False) -> Path:
    env = ArenaVecEnv("rpsw", num_envs=4, seed=0, num_threads=1)
    if recurrent:
        model = RecurrentPPO("MlpLstmPolicy", env, n_steps=16, batch_size=64, seed=0,
                             policy_kwargs={"lstm_hidden_size": 8, **SMALL_NET})
    else:
        model = PPO("MlpPolicy", env, n_steps=16, batch_size=64, seed=0, policy_kwargs=SMALL_NET)
    path = tmp_path / ("recurrent.zip" if recurrent else "ppo.zip")
    model.save(path)
    return path


def test_an_sb3_model_plays_in_evaluate_the_gauntlet_and_a_trainers_opponents(tmp_path, capsys):
    path = _rpsw_model(tmp_path)
    assert evaluate_main([f"sb3:{path}", "scripted:random", "--game", "rpsw", "--games", "20"]) == 0
    assert f"sb3:{path} vs scripted:random" in capsys.readouterr().out
    gauntlet = Gauntlet([f"sb3:{path}"], 10, game="rpsw", team_sizes=(1, 1))
    policy = _saved_policy(tmp_path, "rpsw")
    (record,) = gauntlet.play("learner:snap-000000", policy, 0)
    assert record.reference == f"sb3:{path}" and record.wins + record.draws + record.losses == 10
    config = TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, total_timesteps=10**6, rollout_steps=8,
                           bptt_horizon=8, minibatch_size=32, seed=0, checkpoint_dir=str(tmp_path / "ck"))
    trainer = PPOTrainer(config, PolicyConfig(hidden_size=8, lstm_size=8), game="rpsw",
                         matchmaker=FixedMix({f"sb3:{path}": 1.0}))
    try:
        trainer.evaluate()
        trainer.train()
        metrics = trainer.mean_and_log()
        assert trainer.opponents.assignment() == [f"sb3:{path}"] * 4
        assert np.isfinite(metrics["policy_loss"])
    finally:
        trainer.close()


def test_a_recurrent_sb3_player_keeps_one_lstm_state_per_row(tmp_path):
    path = _rpsw_model(tmp_path, recurrent=True)
    resolved = resolve_player(f"sb3:{path}", "rpsw")
    together = resolved.make_agent(4, deterministic=True)
    apart = [resolved.make_agent(1, deterministic=True) for _ in range(4)]
    env = ArenaVecEnv("rpsw", num_envs=4, seed=2, num_threads=1)
    obs = env.reset()
    starts = np.ones(4, bool)
    for _ in range(12):
        order = np.random.default_rng(len(obs)).permutation(4)  # rows in any order, any subset
        acts = together.act(obs[order], order, starts[order])[np.argsort(order)]
        alone = np.concatenate([agent.act(obs[i:i + 1], np.array([0]), starts[i:i + 1])
                                for i, agent in enumerate(apart)])
        np.testing.assert_array_equal(acts, alone)
        env.step_async(acts)
        obs, _, dones, _ = env.step_wait()
        starts = dones


def test_a_file_that_is_not_an_sb3_model_or_does_not_fit_the_game_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="bad.zip is not a Stable-Baselines3 model"):
        resolve_player(f"sb3:{bad}", "rpsw")
    with pytest.raises(FileNotFoundError, match="missing.zip"):
        resolve_player(f"sb3:{tmp_path / 'missing.zip'}", "rpsw")
    path = _rpsw_model(tmp_path)
    with pytest.raises(ValueError, match="does not fit"):
        resolve_player(f"sb3:{path}", "midrange")


def test_an_sb3_model_is_a_fixed_player_of_a_league(tmp_path):
    from arena.league.config import league_config
    from arena.league.run.league_run import LeagueRun

    path = _rpsw_model(tmp_path)
    spec = f"sb3:{path}"
    config = league_config({"scripted": ["random", spec],
                            "matchmaking": {"mix": {"mirror": 0.0, "pfsp": 0.0, "scripted": 1.0}},
                            "gauntlet": {"games": 0}}, "rpsw")
    run = LeagueRun(config, tmp_path / "league", game="rpsw")
    trainer_config = TrainerConfig(num_envs=8, num_threads=1, torch_threads=1, total_timesteps=10**6,
                                   rollout_steps=16, bptt_horizon=8, minibatch_size=64, seed=0,
                                   checkpoint_dir=str(tmp_path / "ck"))
    trainer = PPOTrainer(trainer_config, PolicyConfig(hidden_size=8, lstm_size=8), game="rpsw",
                         matchmaker=run.matchmaker())
    try:
        run.attach(trainer)
        for _ in range(3):
            trainer.evaluate()
            trainer.train()
            trainer.mean_and_log()
        assert run.league.pool.get(spec).kind == "scripted"
        assert run.league.payoff.games(run.learner_id, spec) > 0  # its matches were recorded
    finally:
        trainer.close()
        run.close()
    with pytest.raises(ValueError, match="whose files do not exist"):
        league_config({"scripted": [f"sb3:{tmp_path / 'nope.zip'}"]}, "rpsw")
