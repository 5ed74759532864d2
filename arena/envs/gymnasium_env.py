"""Gymnasium face of one match: a single learner fighter against an opponent policy.

``ArenaSingleAgentEnv`` drives team 0's first fighter; every other fighter (its teammates and
all enemies) is driven by ``opponent``, any callable ``act(obs: float32 [n, obs_dim]) ->
int [n, action_dims]``, or an object with such an ``act`` method (the scripted agents). With no
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
  zeros and having no effect, until the match ends.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from arena.envs.midrange_obs import FIGHTER, MISSILE, RANGE_SCALE_M, SELF, SPEED_SCALE_MS, MidrangeObsLayout
from arena.envs.registry import make
from arena.envs.vector import VectorEnv

Policy = Callable[[np.ndarray], np.ndarray]
# Straight, idle, no fire: what a row without a decision maker is given (a dead fighter ignores it).
MIDRANGE_NOOP = (2, 0, 0)


class RandomPolicy:
    """Uniform random actions from a seeded generator: the default opponent."""

    def __init__(self, nvec: np.ndarray | list[int], seed: int = 0) -> None:
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, self.nvec, size=(len(obs), len(self.nvec)), dtype=np.int32)


def check_single_match(render_mode: str | None, make_kwargs: dict[str, Any]) -> None:
    """The adapters wrap one match and draw nothing: refuse other render modes and num_envs."""
    if render_mode is not None:
        raise ValueError(f"render_mode={render_mode!r} is not supported: allowed None")
    if make_kwargs.get("num_envs", 1) != 1:
        raise ValueError(f"num_envs={make_kwargs['num_envs']!r} is not allowed: this env is one match, use 1")


def noop_action(env: VectorEnv) -> np.ndarray:
    """The action given to rows nobody decides for (dead fighters, a dead agent's row)."""
    return np.array(MIDRANGE_NOOP if env.game == "midrange" else [0] * len(env.action_space.nvec), np.int32)


def observation_space_for(env: VectorEnv) -> spaces.Box:
    """The observation Box of one agent of ``env``, with finite per-feature bounds where known."""
    if env.game == "midrange":
        low, high = _midrange_bounds(env.params, env.team_sizes)
    elif env.game == "rpsw":  # one-hot throws, fractions and a score lead in [-1, 1]
        low, high = -np.ones(env.obs_dim), np.ones(env.obs_dim)
    else:
        low, high = np.full(env.obs_dim, -np.inf), np.full(env.obs_dim, np.inf)
    if low.shape != (env.obs_dim,):
        raise RuntimeError(f"observation bounds have {low.shape[0]} features, the core writes {env.obs_dim}")
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def _midrange_bounds(p: dict[str, Any], team_sizes: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Bounds implied by the game model: flags in [0, 1], sines and cosines in [-1, 1], and
    magnitudes bounded by the arena and the terminal speeds (with a safety factor of 2 on
    speeds, which semi-implicit Euler and turns can exceed slightly)."""
    fighter_speed = 2.0 * max(p["spawn_speed"], p["fighter_vt"] * math.sqrt(p["fighter_thrust_g"]))
    missile_speed = 2.0 * max(fighter_speed, p["missile_vt"] * math.sqrt(p["missile_thrust_g"]))
    radius = p["arena_radius_m"]
    missile_reach = 2.0 * radius + p["missile_max_time_s"] * missile_speed
    unit, signed = (0.0, 1.0), (-1.0, 1.0)
    self_bounds = dict.fromkeys(SELF, unit) | {
        "speed": (0.0, fighter_speed / p["fighter_vt"]),
        "centre_sin": signed,
        "centre_cos": signed,
        "boundary": (0.0, radius / RANGE_SCALE_M),
    }
    closing = 2.0 * fighter_speed / SPEED_SCALE_MS
    fighter_bounds = dict.fromkeys(FIGHTER, signed) | {
        "present": unit,
        "alive": unit,
        "range": (0.0, 2.0 * radius / RANGE_SCALE_M),
        "closing": (-closing, closing),
        "speed": (0.0, fighter_speed / p["fighter_vt"]),
    }
    closing = (missile_speed + fighter_speed) / SPEED_SCALE_MS
    missile_bounds = dict.fromkeys(MISSILE, signed) | {
        "present": unit,
        "range": (0.0, missile_reach / RANGE_SCALE_M),
        "speed": (0.0, missile_speed / SPEED_SCALE_MS),
        "closing": (-closing, closing),
        "tof": unit,
    }
    layout = MidrangeObsLayout(team_sizes, int(p["tracked_missiles"]))
    blocks = (
        [self_bounds]
        + [fighter_bounds] * (2 * layout.max_team - 1)
        + [missile_bounds] * (2 * layout.tracked_missiles)
    )
    bounds = np.array([b for block in blocks for b in block.values()], dtype=np.float64).reshape(-1, 2)
    return bounds[:, 0], bounds[:, 1]


class ArenaSingleAgentEnv(gym.Env[np.ndarray, np.ndarray]):
    """One match of ``game``; the agent flies team 0's first fighter (row 0).

    ``make_kwargs`` go to :func:`arena.make` (``team_sizes``, ``seed``, any game override);
    ``num_envs`` is always 1. The first ``reset()`` without a seed uses ``seed`` (default 0),
    so an unseeded run is reproducible; later resets continue the seeded sequence.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        game: str = "midrange",
        opponent: Policy | None = None,
        *,
        end_on_death: bool = True,
        render_mode: str | None = None,
        **make_kwargs: Any,
    ) -> None:
        check_single_match(render_mode, make_kwargs)
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
        self._random_policy = RandomPolicy(nvec, self._default_seed) if opponent is None else None
        self.opponent: Any = self._random_policy if opponent is None else opponent
        self._opponent_act: Policy = self._random_policy if self._random_policy is not None else act
        self._actions = np.zeros((self.vector_env.num_agents, len(nvec)), dtype=np.int32)
        self._tracks_alive = game == "midrange"
        self._match_over = True
        # Lets gymnasium (its env checker, vector envs) re-create this env without a registry entry.
        self.spec = EnvSpec(
            id=f"arena/{game}-single-v0",
            entry_point=f"{__name__}:ArenaSingleAgentEnv",
            kwargs={"game": game, "opponent": opponent, "end_on_death": end_on_death, **make_kwargs},
        )

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
        return obs[0].copy(), {"alive": True}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._match_over:
            raise RuntimeError("the match is over (or was never started): call reset() first")
        self._actions[0] = self._checked_action(action)
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
        return final[0].copy(), float(rewards[0]), terminated, truncated, info

    def close(self) -> None:
        self.vector_env.close()

    # ------------------------------------------------------------------ helpers

    def _step_with_opponent(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        # A copy: the opponent may keep it or hand it to torch without touching the core's buffer.
        acts = np.asarray(self._opponent_act(self.vector_env.observations[1:].copy()))
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

    def _alive(self, obs: np.ndarray) -> bool:
        # Midrange writes the fighter's alive flag first in its row (all zeros once dead).
        return bool(obs[0, SELF.index("alive")] > 0.5) if self._tracks_alive else True
