"""Gymnasium face of one match: a single learner fighter against an opponent policy.

``ArenaSingleAgentEnv`` drives team 0's first fighter; every other fighter (its teammates and
all enemies) is driven by ``opponent``, any callable ``act(obs: float32 [n, obs_dim]) ->
int [n, action_dims]``, or an object with such an ``act`` method (the scripted agents). An ``act``
that takes ``rows`` and ``episode_start`` (arena's ``Agent`` interface: a policy file or an ``sb3:``
model from ``arena.agents.players.load_player(spec, game, num_rows=...)``, with one row per other
fighter) gets them, so it keeps one state per fighter and resets it at each match. With no
opponent given, a seeded uniform-random policy flies them.

Episode semantics:
- reward is the match outcome for the agent's team: +1 win, -1 loss, 0 draw or still running;
- terminated/truncated come from the core (the time limit is a truncation);
- the observation returned with the last step is the real final one (the core's
  ``final_observation``), never the auto-reset spawn;
- in a team game the agent's fighter can die while the match goes on. With ``end_on_death``
  (default) the rest of the match is played out by the opponent policy at once and the step
  that killed the agent returns the outcome as reward with ``terminated=True`` (the agent has
  no decision left, whatever ended the match); otherwise the agent keeps stepping, seeing
  zeros and having no effect, until the match ends;
- an action the game forbids in the agent's state (a Goofspiel card already bid) raises a
  ``ValueError`` naming it (``illegal_action="raise"``, the default), or ends the match as a loss
  (``illegal_action="loss"``: reward -1, ``terminated``, ``info["illegal_action"]``), PettingZoo's
  convention for classic games, under which any action of the space can be sent (Stable-Baselines3's
  ``check_env`` samples them). ``action_masks()`` gives the legal values now (sb3-contrib's
  ``MaskablePPO`` reads it), also in ``info["action_mask"]``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from arena.envs.registry import make
from arena.envs.vector import VectorEnv
from arena.games import DEFAULT_GAME, spec

Policy = Callable[[np.ndarray], np.ndarray]
ILLEGAL_ACTIONS = ("raise", "loss")  # what an action the game forbids does (see the module docstring)


class RandomPolicy:
    """Uniform random actions from a seeded generator: the default opponent. With ``mask`` (obs
    rows -> bool [n, sum(nvec)], the game's legal actions) it draws among the legal values only."""

    def __init__(self, nvec: np.ndarray | list[int], seed: int = 0,
                 mask: Callable[[np.ndarray], np.ndarray | None] | None = None) -> None:
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.rng = np.random.default_rng(seed)
        self.mask = mask

    def reseed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        legal = self.mask(obs) if self.mask is not None else None
        if legal is None:
            return self.rng.integers(0, self.nvec, size=(len(obs), len(self.nvec)), dtype=np.int32)
        actions = np.zeros((len(obs), len(self.nvec)), np.int32)
        for d, block in enumerate(np.split(legal, np.cumsum(self.nvec)[:-1], axis=1)):
            # the k-th legal value, k uniform among the legal ones (a row with none takes 0)
            k = (self.rng.random(len(obs)) * block.sum(axis=1)).astype(np.int64)
            actions[:, d] = np.argmax(block & (np.cumsum(block, axis=1) - 1 == k[:, None]), axis=1)
        return actions


def takes_rows(act: Callable[..., Any]) -> bool:
    """Whether an opponent's ``act`` keeps state per row: it takes ``episode_start`` (arena's ``Agent``
    interface, ``act(obs, rows, episode_start)``, as a loaded checkpoint or an ``sb3:`` model has)."""
    try:
        return "episode_start" in inspect.signature(act).parameters
    except (TypeError, ValueError):
        return False


def action_mask_of(env: VectorEnv, obs: np.ndarray) -> np.ndarray | None:
    """The legal actions of observation rows (int8 [..., sum(nvec)], 1 = legal) where the game has
    a mask, else None. The adapters put it in ``info["action_mask"]``."""
    mask = spec(env.game).mask_of(obs, env.params, env.team_sizes)
    return None if mask is None else mask.astype(np.int8)


def check_single_match(render_mode: str | None, make_kwargs: dict[str, Any]) -> None:
    """The adapters wrap one match and draw nothing: refuse other render modes and num_envs."""
    if render_mode is not None:
        raise ValueError(f"render_mode={render_mode!r} is not supported: allowed None")
    if make_kwargs.get("num_envs", 1) != 1:
        raise ValueError(f"num_envs={make_kwargs['num_envs']!r} is not allowed: this env is one match, use 1")


def noop_action(env: VectorEnv) -> np.ndarray:
    """The action given to rows nobody decides for (dead fighters, a dead agent's row)."""
    return np.array(spec(env.game).noop(env.params), np.int32)


def observation_space_for(env: VectorEnv) -> spaces.Box:
    """The observation Box of one agent of ``env``, with the game's finite per-feature bounds."""
    low, high = spec(env.game).obs_bounds(env.params, env.team_sizes, env.obs_dim)
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    if low.shape != (env.obs_dim,):
        raise RuntimeError(f"observation bounds have {low.shape[0]} features, the core writes {env.obs_dim}")
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


class ArenaSingleAgentEnv(gym.Env[np.ndarray, np.ndarray]):
    """One match of ``game``; the agent flies team 0's first fighter (row 0).

    ``make_kwargs`` go to :func:`arena.make` (``team_sizes``, ``seed``, any game override);
    ``num_envs`` is always 1. The first ``reset()`` without a seed uses ``seed`` (default 0),
    so an unseeded run is reproducible; later resets continue the seeded sequence.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        game: str = DEFAULT_GAME,
        opponent: Policy | None = None,
        *,
        end_on_death: bool = True,
        illegal_action: str = "raise",
        render_mode: str | None = None,
        **make_kwargs: Any,
    ) -> None:
        check_single_match(render_mode, make_kwargs)
        if illegal_action not in ILLEGAL_ACTIONS:
            raise ValueError(f"illegal_action={illegal_action!r} is not allowed: use one of "
                             f"{list(ILLEGAL_ACTIONS)}")
        self.illegal_action = illegal_action
        act = getattr(opponent, "act", opponent)  # a scripted agent, or any callable
        if opponent is not None and not callable(act):
            raise ValueError(
                f"opponent must be a callable obs -> actions (or have .act) or None, got {opponent!r}"
            )
        self.render_mode = render_mode
        self.end_on_death = end_on_death
        self._default_seed = make_kwargs.get("seed", 0)
        self.vector_env = make(game, **{"num_threads": 1, **make_kwargs, "num_envs": 1})
        self.observation_space = observation_space_for(self.vector_env)
        self.action_space = spaces.MultiDiscrete(self.vector_env.action_space.nvec)
        nvec = self.vector_env.action_space.nvec
        # The default opponent is reseeded from the env's generator on every reset.
        game_spec = spec(game)
        self._random_policy = RandomPolicy(
            nvec, self._default_seed,
            mask=lambda o: game_spec.mask_of(o, self.vector_env.params, self.vector_env.team_sizes),
        ) if opponent is None else None
        self.opponent: Any = self._random_policy if opponent is None else opponent
        self._opponent_act: Callable[..., Any] = act if self._random_policy is None else self._random_policy
        self._opponent_rows = np.arange(self.vector_env.num_agents - 1)
        self._opponent_takes_rows = opponent is not None and takes_rows(act)
        self._first_decision = True  # the next step is the match's first (a stateful opponent resets)
        self._actions = np.zeros((self.vector_env.num_agents, len(nvec)), dtype=np.int32)
        self._alive_column = game_spec.alive_column
        self._match_over = True
        self._obs_row = np.zeros(self.observation_space.shape, np.float32)  # the agent's observation now
        # Lets gymnasium (its env checker, vector envs) re-create this env without a registry entry.
        self.spec = EnvSpec(
            id=f"arena/{game}-single-v0",
            entry_point=f"{__name__}:ArenaSingleAgentEnv",
            kwargs={"game": game, "opponent": opponent, "end_on_death": end_on_death,
                    "illegal_action": illegal_action, **make_kwargs},
        )

    def _with_mask(self, info: dict[str, Any], obs_row: np.ndarray) -> dict[str, Any]:
        mask = action_mask_of(self.vector_env, obs_row)
        return info if mask is None else info | {"action_mask": mask}

    # ------------------------------------------------------------------ gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None and self._np_random is None:
            seed = self._default_seed
        super().reset(seed=seed)
        match_seed = int(self.np_random.integers(0, 2**63))
        if self._random_policy is not None:
            self._random_policy.reseed(int(self.np_random.integers(0, 2**63)))
        obs, _ = self.vector_env.reset(match_seed)
        self._match_over = False
        self._first_decision = True
        self._obs_row = obs[0].copy()
        return obs[0].copy(), self._with_mask({"alive": True}, obs[0])

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._match_over:
            raise RuntimeError("the match is over (or was never started): call reset() first")
        self._actions[0] = self._checked_action(action)
        if self.illegal_action == "loss" and not self._legal(self._actions[0]):
            self._match_over = True  # the agent's team loses at once; the next reset starts a new match
            info = {"alive": True, "illegal_action": True, "outcome": 1, "episode_length": None}
            return self._obs_row.copy(), -1.0, True, False, self._with_mask(info, self._obs_row)
        obs, rewards, terminals, truncations, infos = self._step_with_opponent()
        events = {
            name: int(v) for name, v in zip(self.vector_env.event_names, infos["events"][0], strict=True)
        }
        done = bool(infos["done"][0])
        final = infos["final_observation"] if done else obs
        alive = self._alive(final)
        terminated, truncated = bool(terminals[0]), bool(truncations[0])
        if not done and not alive and self.end_on_death:
            while not done:  # the agent is dead: the opponent policy plays the match out
                self._actions[0] = noop_action(self.vector_env)
                obs, rewards, terminals, truncations, infos = self._step_with_opponent()
                done = bool(infos["done"][0])
            final = infos["final_observation"]
            terminated, truncated = True, False
        info: dict[str, Any] = {"alive": alive, "events": events}
        if done:
            self._match_over = True
            info |= {
                "outcome": int(infos["outcome"][0]),
                "end_reason": int(infos["end_reason"][0]),
                "episode_length": int(infos["episode_length"][0]),
            }
        self._obs_row = final[0].copy()
        return final[0].copy(), float(rewards[0]), terminated, truncated, self._with_mask(info, final[0])

    def action_masks(self) -> np.ndarray:
        """The legal values of each action dimension now, concatenated (bool [sum(nvec)]); all True
        where the game has no mask. sb3-contrib's ``MaskablePPO`` calls it."""
        mask = action_mask_of(self.vector_env, self._obs_row[None])
        if mask is None:
            return np.ones(int(self.action_space.nvec.sum()), bool)
        return mask[0].astype(bool)

    def close(self) -> None:
        self.vector_env.close()

    # ------------------------------------------------------------------ helpers

    def _step_with_opponent(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        # A copy: the opponent may keep it or hand it to torch without touching the core's buffer.
        obs = self.vector_env.observations[1:].copy()
        if self._opponent_takes_rows:
            starts = np.full(len(obs), self._first_decision)
            acts = np.asarray(self._opponent_act(obs, self._opponent_rows, starts))
        else:
            acts = np.asarray(self._opponent_act(obs))
        self._first_decision = False
        if acts.shape != self._actions[1:].shape:
            raise ValueError(
                f"opponent returned actions of shape {acts.shape}, expected {self._actions[1:].shape}"
            )
        if acts.dtype.kind not in "iu":
            raise ValueError(f"opponent returned actions of dtype {acts.dtype}, expected integers")
        nvec = self.action_space.nvec
        if (acts < 0).any() or (acts >= nvec).any():
            raise ValueError(f"opponent returned actions outside 0..{nvec - 1}: {acts.tolist()}")
        self._actions[1:] = acts
        return self.vector_env.step(self._actions)

    def _checked_action(self, action: Any) -> np.ndarray:
        a = np.asarray(action)
        nvec = self.action_space.nvec
        if a.shape != nvec.shape or a.dtype.kind not in "iu" or (a < 0).any() or (a >= nvec).any():
            raise ValueError(
                f"action {action!r} is invalid: allowed {len(nvec)} integers with values in 0..{nvec - 1}"
            )
        return a

    def _legal(self, action: np.ndarray) -> bool:
        legal = self.action_masks()
        offsets = np.concatenate([[0], np.cumsum(self.action_space.nvec)[:-1]])
        return bool(legal[offsets + action].all())

    def _alive(self, obs: np.ndarray) -> bool:
        # Midrange writes the fighter's alive flag first in its row (all zeros once dead).
        return bool(obs[0, self._alive_column] > 0.5) if self._alive_column is not None else True
