"""Goofspiel, the simultaneous-move bidding card game (``arena/native/games/goofspiel/goofspiel.h``):
its spec, its NumPy reference and its scripted bots.

Each player holds the cards 1..N (``num_cards``); N prize cards are turned up one at a time
(``points_order``: highest first, or drawn at random), both players bid a card from their hand at
once, the higher bid takes the prize's points (a tie discards them) and both bids are spent. After
N rounds the player with more points wins. Action ``d`` bids the card worth ``d + 1``; the first N
observation values are the player's hand, which is also the legal-action mask. The rules are
those of OpenSpiel's ``goofspiel`` (``returns_type=win_loss``, bids revealed),
``tests/test_goofspiel.py`` plays both on the same bids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from arena import _core
from arena.agents.scripted import ScriptedAgent
from arena.envs.outcomes import EndReason, Outcome
from arena.envs.reference import END_NONE, END_ROUNDS, EnvOutputs, env_seed, mix64, rng_uniform
from arena.games.spec import GameSpec, Param, core_param_table

MAX_CARDS = int(_core.GOOFSPIEL_MAX_CARDS)
EVENTS = ("prizes_won", "prizes_lost", "prizes_tied")
# declared once in C++ (GoofspielGame::params, arena/native/games/goofspiel/goofspiel.h)
PARAMS: dict[str, Param] = core_param_table(_core.GoofspielParams)
POINTS_ORDERS = PARAMS["points_order"].choices  # the names of the core's codes 0, 1, ...


def obs_dim(num_cards: int) -> int:
    """Own hand, the opponent's hand, the prize up, the deck (N each), two scores and the round."""
    return 4 * num_cards + 3


def observe(hands: np.ndarray, deck: np.ndarray, prize: int, points: np.ndarray, rounds: int) -> np.ndarray:
    """The observations [2, 4N + 3] of both players (goofspiel.h's ``observe``): ``hands`` bool
    [2, N], ``deck`` bool [N] the prizes not yet turned up, ``prize`` the 0-based prize up (-1 after
    the last round), ``points`` [2], ``rounds`` played so far."""
    n = hands.shape[1]
    total = np.float32(n * (n + 1) // 2)
    obs = np.zeros((2, obs_dim(n)), np.float32)
    for i in range(2):
        obs[i, :n] = hands[i]
        obs[i, n:2 * n] = hands[1 - i]
        if prize >= 0:
            obs[i, 2 * n + prize] = 1.0
        obs[i, 3 * n:4 * n] = deck
        obs[i, 4 * n] = np.float32(points[i]) / total
        obs[i, 4 * n + 1] = np.float32(points[1 - i]) / total
        obs[i, 4 * n + 2] = np.float32(rounds) / np.float32(n)
    return obs


def core_params(values: dict[str, Any], team_sizes: tuple[int, int]) -> Any:
    order = values["points_order"]
    if order not in POINTS_ORDERS:
        raise ValueError(f"points_order={order!r} is not allowed: use one of {', '.join(POINTS_ORDERS)}")
    params = _core.GoofspielParams()
    params.num_cards = int(values["num_cards"])
    params.points_order = POINTS_ORDERS.index(order)
    return params


def obs_bounds(values: Mapping[str, Any], team_sizes: tuple[int, int], dim: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Flags, one-hots and fractions: every feature in [0, 1]."""
    return np.zeros(dim), np.ones(dim)


# ---------------------------------------------------------------- the NumPy reference


class GoofspielReference(EnvOutputs):
    """``num_envs`` matches, the operation-for-operation twin of goofspiel.h (same face as
    ``_core.GoofspielBatch``: output buffers as attributes, auto-reset); rows are
    ``env * 2 + player``. Written for reading: one env at a time."""

    def __init__(self, num_cards: int = 13, points_order: str = "descending", num_envs: int = 1) -> None:
        self.n = int(num_cards)
        self.random_order = POINTS_ORDERS.index(points_order) == 1
        self.num_envs = num_envs
        self.agents_per_env = 2
        self.obs_dim = obs_dim(self.n)
        self.round = np.zeros(num_envs, np.int32)
        self.prize = np.zeros(num_envs, np.int32)
        self.hand = np.zeros((num_envs, 2, self.n), bool)
        self.deck = np.zeros((num_envs, self.n), bool)  # prize cards not yet turned up
        self.points = np.zeros((num_envs, 2), np.int32)
        self.rng = [0] * num_envs
        self.allocate_outputs(num_envs, self.agents_per_env, self.obs_dim, len(EVENTS))

    def reset(self, seed: int = 0) -> np.ndarray:
        for e in range(self.num_envs):
            self.rng[e] = mix64(env_seed(seed, e))
            self._reset(e)
        self.clear_outputs()
        self.obs[:] = self._observe_all()
        return self.obs.copy()

    def step(self, actions: np.ndarray) -> dict[str, np.ndarray]:
        bids = np.asarray(actions).reshape(self.num_envs, 2)
        self.events[:] = 0
        for e in range(self.num_envs):
            self._step(e, int(bids[e, 0]), int(bids[e, 1]))
        self.obs[:] = self._observe_all()
        return {name: getattr(self, name).copy() for name in (
            "obs", "rewards", "terminals", "truncations", "events", "outcome", "end_reason",
            "episode_length", "done", "final_obs")}

    def _draw_prize(self, e: int) -> None:
        left = np.flatnonzero(self.deck[e])
        if self.random_order:
            self.rng[e], u = rng_uniform(self.rng[e])
            card = int(left[min(int(u * len(left)), len(left) - 1)])
        else:
            card = int(left[-1])
        self.prize[e] = card
        self.deck[e, card] = False

    def _reset(self, e: int) -> None:
        self.round[e] = 0
        self.hand[e] = True
        self.deck[e] = True
        self.points[e] = 0
        self._draw_prize(e)

    def _step(self, e: int, b0: int, b1: int) -> None:
        if not (self.hand[e, 0, b0] and self.hand[e, 1, b1]):
            raise ValueError(f"env {e}: bids {b0}, {b1} are not both in the hands")
        self.hand[e, 0, b0] = self.hand[e, 1, b1] = False
        won = 0 if b0 > b1 else (1 if b1 > b0 else -1)
        rows = slice(2 * e, 2 * e + 2)
        if won >= 0:
            self.points[e, won] += self.prize[e] + 1
            self.events[2 * e + won, 0] = 1
            self.events[2 * e + 1 - won, 1] = 1
        else:
            self.events[rows, 2] = 1
        self.round[e] += 1
        done = self.round[e] >= self.n
        if done:
            self.prize[e] = -1
        else:
            self._draw_prize(e)
        p0, p1 = self.points[e]
        winner = Outcome.TEAM0 if p0 > p1 else Outcome.TEAM1 if p1 > p0 else Outcome.DRAW
        outcome = winner if done else Outcome.NONE
        self.outcome[e] = outcome
        self.end_reason[e] = END_ROUNDS if done else END_NONE
        self.done[e] = done
        decisive = outcome in (Outcome.TEAM0, Outcome.TEAM1)
        self.rewards[rows] = [(1.0 if outcome == i else -1.0) if decisive else 0.0 for i in range(2)]
        self.terminals[rows] = done
        self.truncations[rows] = False
        if done:
            self.episode_length[e] = self.round[e]
            self.final_obs[rows] = self._observe(e)
            self._reset(e)

    def _observe(self, e: int) -> np.ndarray:
        return observe(self.hand[e], self.deck[e], int(self.prize[e]), self.points[e], int(self.round[e]))

    def _observe_all(self) -> np.ndarray:
        return np.concatenate([self._observe(e) for e in range(self.num_envs)]) if self.num_envs else self.obs


# ---------------------------------------------------------------- scripted bots


class GoofspielBot(ScriptedAgent):
    """A bidder that reads its hand and the prize from the observation and bids legally."""

    game = "goofspiel"

    def __init__(self, num_cards: int) -> None:
        super().__init__(obs_dim(num_cards), (num_cards,))
        self.n = num_cards

    def hand(self, obs: np.ndarray) -> np.ndarray:
        return obs[:, :self.n] > 0.5

    def prize(self, obs: np.ndarray) -> np.ndarray:
        """The 0-based value of the prize up per row (-1 once the game is over)."""
        up = obs[:, 2 * self.n:3 * self.n] > 0.5
        return np.where(up.any(axis=1), up.argmax(axis=1), -1)

    def lowest(self, obs: np.ndarray) -> np.ndarray:
        return self.hand(obs).argmax(axis=1)


class RandomBidder(GoofspielBot):
    """A card drawn uniformly from the hand."""

    name = "random"

    def __init__(self, num_cards: int, seed: int = 0) -> None:
        super().__init__(num_cards)
        self.rng = np.random.default_rng(seed)

    def _act(self, obs: np.ndarray) -> np.ndarray:
        hand = self.hand(obs)
        k = (self.rng.random(len(obs)) * hand.sum(axis=1)).astype(np.int64)
        order = np.cumsum(hand, axis=1) - 1  # rank of each held card among the held ones
        bid = np.argmax(hand & (order == k[:, None]), axis=1)
        return bid[:, None]


class MatchPrize(GoofspielBot):
    """Bids the card equal to the prize (always in the hand: each card matches one prize)."""

    name = "match_prize"

    def _act(self, obs: np.ndarray) -> np.ndarray:
        prize = self.prize(obs)
        held = self.hand(obs)[np.arange(len(obs)), np.maximum(prize, 0)] & (prize >= 0)
        return np.where(held, prize, self.lowest(obs))[:, None]


class Outbid(GoofspielBot):
    """Bids one card above the prize when it holds it, else throws away its lowest card: it beats
    ``match_prize`` on every prize but the highest."""

    name = "outbid"

    def _act(self, obs: np.ndarray) -> np.ndarray:
        above = self.prize(obs) + 1
        rows = np.arange(len(obs))
        held = (above < self.n) & self.hand(obs)[rows, np.minimum(above, self.n - 1)]
        return np.where(held, above, self.lowest(obs))[:, None]


def _bot(cls: type[GoofspielBot]):  # noqa: ANN202 - a BotFactory
    def build(team_sizes: tuple[int, int], values: Mapping[str, Any], seed: int) -> GoofspielBot:
        num_cards = int(values.get("num_cards", PARAMS["num_cards"].default))
        return cls(num_cards, seed) if cls is RandomBidder else cls(num_cards)

    return build


SPEC = GameSpec(
    name="goofspiel",
    summary="Goofspiel: bid cards for prizes, simultaneously",
    params=PARAMS,
    core_params=core_params,
    events=EVENTS,
    end_reasons=(EndReason.ROUNDS,),
    bots={"random": _bot(RandomBidder), "match_prize": _bot(MatchPrize), "outbid": _bot(Outbid)},
    reference_bots=("random", "match_prize", "outbid"),
    obs_bounds=obs_bounds,
    noop=lambda values: (0,),
    reference=lambda: GoofspielReference,
    presets=("goofspiel",),
    action_mask=lambda values, team_sizes: (0, int(values["num_cards"])),
    core_batch=_core.GoofspielBatch,
)
