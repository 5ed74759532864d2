"""Goofspiel: the compiled core against OpenSpiel's goofspiel and against its NumPy reference, the
legal-action mask (core, policy, bots, adapters), and the game's place in the contract."""

from __future__ import annotations

import re

import numpy as np
import pyspiel  # open_spiel, a dev dependency: the peer implementation this file checks against
import pytest
import torch

import arena
from arena.agents.policy import Policy
from arena.agents.scripted import make_scripted
from arena.envs.gymnasium_env import ArenaSingleAgentEnv
from arena.envs.outcomes import Outcome
from arena.envs.pettingzoo_env import parallel_env
from arena.games import GAMES, spec
from arena.games.goofspiel.game import GoofspielReference


def random_legal_bids(rng: np.random.Generator, obs: np.ndarray, n: int) -> np.ndarray:
    """One uniformly drawn card from each row's hand (the first n observation values)."""
    hand = obs[:, :n] > 0.5
    scores = np.where(hand, rng.random(hand.shape), -1.0)
    return scores.argmax(axis=1).astype(np.int32)[:, None]


def _points(state: object) -> list[int]:
    return [int(x) for x in re.search(r"Points: (\d+) (\d+)", str(state)).groups()]


@pytest.mark.parametrize("order", ["descending", "random"])
@pytest.mark.parametrize("num_cards", [4, 13])
def test_goofspiel_plays_like_openspiel_on_random_bids(order: str, num_cards: int) -> None:
    """Thousands of games of random legal bids, played by the core and by OpenSpiel's goofspiel
    (the prize draws of ``random`` replayed into OpenSpiel's chance nodes): the same legal actions
    at every decision, and the same points, returns and winner at the end. OpenSpiel plays the
    forced last bid itself; arena asks for it (one legal action)."""
    games = 1000 if num_cards == 13 else 2000
    env = arena.make("goofspiel", num_envs=games, num_cards=num_cards, points_order=order, seed=7)
    game = pyspiel.load_game("goofspiel", {"num_cards": num_cards, "points_order": order,
                                           "returns_type": "win_loss"})
    states = [game.new_initial_state() for _ in range(games)]
    rng = np.random.default_rng(3)
    n = num_cards
    obs = env.observations.copy()
    for turn in range(n):
        mine, theirs = obs[0::2], obs[1::2]
        for e, state in enumerate(states):
            if state.is_chance_node():  # the prize arena turned up
                prize = int(np.argmax(mine[e, 2 * n:3 * n]))
                assert prize in dict(state.chance_outcomes()), (e, turn, prize)
                state.apply_action(prize)
            if turn < n - 1:
                assert state.legal_actions(0) == list(np.flatnonzero(mine[e, :n] > 0.5)), (e, turn)
                assert state.legal_actions(1) == list(np.flatnonzero(theirs[e, :n] > 0.5)), (e, turn)
        bids = random_legal_bids(rng, obs, n)
        obs, rewards, terminals, _, infos = env.step(bids)
        obs = obs.copy()
        if turn < n - 1:
            pairs = bids.reshape(games, 2)
            for e, state in enumerate(states):
                state.apply_actions([int(pairs[e, 0]), int(pairs[e, 1])])
    assert infos["done"].all()
    final = infos["final_observation"]
    total = n * (n + 1) // 2
    for e, state in enumerate(states):
        assert state.is_terminal(), e
        points = np.rint(final[2 * e, [4 * n, 4 * n + 1]] * total).astype(int).tolist()
        assert points == _points(state), e
        assert [rewards[2 * e], rewards[2 * e + 1]] == state.returns(), e
        winner = {(1.0, -1.0): Outcome.TEAM0, (-1.0, 1.0): Outcome.TEAM1, (0.0, 0.0): Outcome.DRAW}
        assert infos["outcome"][e] == winner[tuple(state.returns())], e


@pytest.mark.parametrize("order", ["descending", "random"])
def test_reference_matches_the_core_bit_for_bit(order: str) -> None:
    envs, n = 64, 6
    core = arena.make("goofspiel", num_envs=envs, num_cards=n, points_order=order, seed=11, num_threads=2)
    ref = GoofspielReference(num_cards=n, points_order=order, num_envs=envs)
    np.testing.assert_array_equal(ref.reset(11), core.observations)
    rng = np.random.default_rng(0)
    for _ in range(3 * n + 1):  # through several auto-resets
        bids = random_legal_bids(rng, core.observations, n)
        got = core.step(bids)
        want = ref.step(bids)
        for name, value in zip(("obs", "rewards", "terminals", "truncations"), got[:4], strict=True):
            np.testing.assert_array_equal(want[name], value, err_msg=name)
        for name in ("events", "outcome", "end_reason", "done"):
            np.testing.assert_array_equal(want[name], got[4][name], err_msg=name)
        done = got[4]["done"]
        rows = np.repeat(done, 2)
        np.testing.assert_array_equal(want["final_obs"][rows], got[4]["final_observation"][rows])
        np.testing.assert_array_equal(want["episode_length"][done], got[4]["episode_length"][done])


def test_random_order_is_the_same_whatever_the_thread_count() -> None:
    def play(threads: int) -> np.ndarray:
        env = arena.make("goofspiel", num_envs=257, points_order="random", seed=5, num_threads=threads)
        rng, seen = np.random.default_rng(1), []
        for _ in range(20):
            seen.append(env.step(random_legal_bids(rng, env.observations, 13))[0].copy())
        return np.stack(seen)

    np.testing.assert_array_equal(play(1), play(2))


def test_an_illegal_bid_is_a_clear_value_error() -> None:
    env = arena.make("goofspiel", num_envs=2, num_cards=4)
    env.step(np.array([[3], [0], [1], [1]], np.int32))
    with pytest.raises(ValueError, match=r"action 3 at row 0 \(env 0, agent 0\) is illegal.*allowed 0 1 2"):
        env.step(np.array([[3], [1], [0], [0]], np.int32))
    with pytest.raises(ValueError, match="out of range: allowed 0..3"):
        env.step(np.array([[4], [1], [0], [0]], np.int32))


def test_parameters_are_checked_by_name() -> None:
    allowed = "points_order='ascending' is not allowed: use one of descending, random"
    with pytest.raises(ValueError, match=allowed):
        arena.make("goofspiel", points_order="ascending")
    with pytest.raises(ValueError, match=r"num_cards=31 is out of range: allowed \[1, 30\]"):
        arena.make("goofspiel", num_cards=31)
    with pytest.raises(ValueError, match="not allowed for goofspiel: it is a 1v1 game"):
        arena.make("goofspiel", team_sizes=(2, 2))


def test_bots_bid_legally_and_outbid_beats_match_prize() -> None:
    n, envs = 13, 50
    env = arena.make("goofspiel", num_envs=envs, num_cards=n)
    bots = {name: make_scripted(f"scripted:{name}", "goofspiel", params=env.params, seed=2)
            for name in spec("goofspiel").bots}
    assert set(bots) == {"random", "match_prize", "outbid"}
    for name, bot in bots.items():  # against itself, every decision legal (the core would refuse)
        for _ in range(n):
            env.step(bot.act(env.observations))
        assert env.step(bot.act(env.observations))[4]["episode_length"].max() == n or name
    env = arena.make("goofspiel", num_envs=envs, num_cards=n)
    for _ in range(n):
        obs = env.observations
        actions = np.concatenate([bots["outbid"].act(obs[0::2]), bots["match_prize"].act(obs[1::2])], axis=1)
        _, _, _, _, infos = env.step(actions.reshape(-1, 1))
    assert (infos["outcome"] == Outcome.TEAM0).all()  # every prize but the highest goes to outbid


def test_policy_gives_illegal_bids_probability_zero() -> None:
    env = arena.make("goofspiel", num_envs=8, num_cards=5)
    start, stop = spec("goofspiel").action_mask(env.params, env.team_sizes)
    policy = Policy(env.obs_dim, [5], 16, 16, action_mask=(start, stop))
    assert Policy(**policy.spec).action_mask == (0, 5)
    env.step(np.array([[4], [0]] * 8, np.int32))  # row 0 spent card 5, row 1 card 1
    obs = torch.from_numpy(env.observations.copy())
    logits, _, _ = policy.forward_step(obs, policy.initial_state(16), torch.ones(16, dtype=torch.bool))
    probs = torch.softmax(logits[0], dim=-1)
    assert probs[0::2, 4].max().item() == 0.0 and probs[1::2, 0].max().item() == 0.0
    assert torch.isfinite(policy.entropy(logits)).all()
    for _ in range(20):
        actions = policy.sample_actions(logits)[0].numpy()
        assert (obs.numpy()[np.arange(16), actions[:, 0]] > 0.5).all()
    with pytest.raises(ValueError, match="action_mask must be the observation columns"):
        Policy(env.obs_dim, [5], action_mask=(0, 4))


def test_adapters_give_the_action_mask_and_a_legal_random_opponent() -> None:
    single = ArenaSingleAgentEnv("goofspiel", num_cards=4)
    obs, info = single.reset(seed=0)
    assert info["action_mask"].tolist() == [1, 1, 1, 1]
    for _ in range(4):  # the default random opponent bids legally, or the core would refuse
        legal = np.flatnonzero(info["action_mask"])
        obs, reward, terminated, truncated, info = single.step(np.array([legal[0]]))
    assert terminated and reward in (-1.0, 0.0, 1.0)
    multi = parallel_env("goofspiel", num_cards=4)
    _, infos = multi.reset(seed=1)
    actions = {agent: np.array([3]) for agent in multi.agents}
    _, _, _, _, infos = multi.step(actions)
    assert all(info["action_mask"].tolist() == [1, 1, 1, 0] for info in infos.values())


def test_goofspiel_is_registered_by_its_spec() -> None:
    assert "goofspiel" in GAMES and arena.envs.GAMES == GAMES
    game = spec("goofspiel")
    assert game.reference() is GoofspielReference
    low, high = game.obs_bounds({"num_cards": 4}, (1, 1), 19)
    env = arena.make("goofspiel", num_envs=4, num_cards=4)
    assert (env.observations >= low).all() and (env.observations <= high).all()


def test_sampling_never_draws_an_illegal_bid_when_rounding_overshoots() -> None:
    """These five legal logits' probabilities sum to 1 - 1.8e-7 in float32: a uniform number above
    that passes every legal value, and must not land on the masked ones after them."""
    policy = Policy(9, [7], 4, 4, action_mask=(0, 7))
    legal = [-1.123426079750061, -1.0727804899215698, -1.1709321737289429, -0.42007651925086975,
             -2.371429681777954]
    obs = torch.tensor([[1.0] * 5 + [0.0] * 4])
    logits = policy.mask_logits(torch.tensor([legal + [5.0, 5.0]]), obs)
    assert policy.heads.log_softmax(logits).exp().cumsum(-1)[0, 0, -1].item() < 1.0 - 2.0**-24
    actions, _ = policy.sample_actions([logits], noise=torch.full((1, 1), 1.0 - 2.0**-24))
    assert actions.tolist() == [[4]]
