"""Stable-Baselines3's ``VecEnv`` over arena's batched core: N matches stepped by one call, in one process.

``ArenaVecEnv(game, num_envs, opponent)`` is what SB3 calls a vectorised environment: SB3's ``PPO``,
``A2C``, sb3-contrib's ``RecurrentPPO`` and ``MaskablePPO`` take it as they take a ``DummyVecEnv`` or
``SubprocVecEnv``. Env ``i`` is one match; the agent flies team 0's first fighter of each, and every
other fighter (teammates and enemies) is flown by ``opponent``: an arena agent (``act(obs, rows,
episode_start)``, e.g. ``arena.agents.players.load_player("sb3:model.zip", game, num_rows=N)`` with N
the other fighters of all matches, ``num_envs * (fighters per match - 1)``), any callable
``obs [n, d] -> actions [n, dims]``, or, by default, a seeded random policy that draws among the legal
actions. All opponents' rows act in one call per step.

Each step follows SB3's contract: a finished match returns ``done`` with its last observation in
``info["terminal_observation"]`` (``TimeLimit.truncated`` when the time limit ended it) and the next
match's first observation in its place, as the core resets it at once. The reward is the agent's
team's outcome (+1 win, -1 loss) at the match's last step, or, with ``reward=``, arena's own reward
terms: a mapping of terms as in ``configs/reward/`` (e.g. ``{"outcome": {"_target_": "outcome"},
"kill": {"_target_": "kill", "weight": 0.5}}``, built with ``arena.rewards.build_reward``) or any
callable ``StepBatch -> rewards [rows]`` (or ``(rewards, parts)``), seeing every row of the step.
In a team game a fallen agent's row reads zeros and its actions are ignored until its match ends.
``env_method("action_masks")`` gives each match's legal actions (``MaskablePPO``). Wrap it in SB3's
``VecMonitor`` for episode statistics.
SB3 must be installed (``pip install stable-baselines3``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from arena.envs.gymnasium_env import (
    RandomPolicy,
    action_mask_of,
    noop_action,
    observation_space_for,
    takes_rows,
)
from arena.envs.registry import make
from arena.games import DEFAULT_GAME, spec
from arena.rewards import StepBatch, build_reward


class ArenaVecEnv(VecEnv):
    """``num_envs`` matches of ``game`` as one SB3 ``VecEnv`` (see the module docstring); ``make_kwargs``
    go to ``arena.make`` (``team_sizes``, ``num_threads``, any game setting)."""

    def __init__(self, game: str = DEFAULT_GAME, num_envs: int = 8, opponent: Any = None, *, seed: int = 0,
                 reward: Mapping[str, Any] | Callable[[StepBatch], Any] | None = None,
                 **make_kwargs: Any) -> None:
        self.game = game
        self.reward = build_reward(reward) if isinstance(reward, Mapping) else reward
        if self.reward is not None and not callable(self.reward):
            raise ValueError(f"reward must be a mapping of reward terms, a callable StepBatch -> rewards or "
                             f"None (the outcome), got {reward!r}")
        self.vector_env = make(game, num_envs=num_envs, seed=seed, **make_kwargs)
        env = self.vector_env
        self.agents_per_env = sum(env.team_sizes)
        self.agent_rows = np.arange(num_envs) * self.agents_per_env
        self.opponent_rows = np.setdiff1d(np.arange(env.num_agents), self.agent_rows)
        nvec = env.action_space.nvec
        found = spec(game)
        if opponent is None:
            opponent = RandomPolicy(nvec, seed + 1,
                                    mask=lambda o: found.mask_of(o, env.params, env.team_sizes))
        act = getattr(opponent, "act", opponent)
        if not callable(act):
            raise ValueError(f"opponent must be an arena agent, a callable obs -> actions or None, got "
                             f"{opponent!r}")
        self.opponent, self._opponent_act = opponent, act
        self._opponent_rows_aware = takes_rows(act)
        self._opponent_index = np.arange(len(self.opponent_rows))
        self._actions = np.tile(noop_action(env), (env.num_agents, 1)).astype(np.int32)
        self._starts = np.ones(num_envs, bool)  # the match of each env begins with the next step
        self._pending: np.ndarray | None = None
        self._seed: int | None = None
        self.render_mode = None  # it draws nothing
        super().__init__(num_envs, observation_space_for(env), spaces.MultiDiscrete(nvec))

    # ------------------------------------------------------------------ VecEnv API

    def reset(self) -> np.ndarray:
        obs, _ = self.vector_env.reset(self._seed)
        self._seed = None
        self._starts[:] = True
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs[self.agent_rows].copy()

    def step_async(self, actions: np.ndarray) -> None:
        a = np.asarray(actions)
        nvec = self.action_space.nvec
        if a.shape == (self.num_envs,) and len(nvec) == 1:
            a = a[:, None]
        if a.shape != (self.num_envs, len(nvec)) or a.dtype.kind not in "iu":
            raise ValueError(f"actions of shape {a.shape} and dtype {a.dtype}: allowed integers of shape "
                             f"({self.num_envs}, {len(nvec)}) with values in 0..{nvec - 1}")
        self._pending = a

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._pending is None:
            raise RuntimeError("step_wait() without step_async()")
        env = self.vector_env
        self._actions[self.agent_rows] = self._pending
        self._pending = None
        obs = env.observations
        rows = self.opponent_rows
        if len(rows):
            own = obs[rows].copy()
            if self._opponent_rows_aware:  # its state rows: 0 .. len(opponent_rows) - 1, in row order
                starts = np.repeat(self._starts, self.agents_per_env)[rows]
                acts = self._opponent_act(own, self._opponent_index, starts)
            else:
                acts = self._opponent_act(own)
            self._actions[rows] = np.asarray(acts, np.int32).reshape(len(rows), -1)
        before = obs.copy() if self.reward is not None else None
        obs, rewards, terminals, truncations, infos = env.step(self._actions)
        if before is not None:
            batch = StepBatch.from_env(env, before, self._actions.copy(), obs, rewards, terminals,
                                       truncations, infos)
            found = self.reward(batch)
            rewards = np.asarray(found[0] if isinstance(found, tuple) else found, np.float32)
        done = np.asarray(infos["done"], bool)  # per env
        self._starts[:] = done
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            final = infos["final_observation"]
            for i in np.flatnonzero(done).tolist():
                row = int(self.agent_rows[i])
                out[i] = {"terminal_observation": final[row].copy(),
                          "TimeLimit.truncated": bool(truncations[row]) and not bool(terminals[row]),
                          "outcome": int(infos["outcome"][i]),  # arena.envs.Outcome: 0 the agent's team won
                          "episode_length": int(infos["episode_length"][i])}
        return obs[self.agent_rows].copy(), rewards[self.agent_rows].astype(np.float32), done, out

    def close(self) -> None:
        self.vector_env.close()

    def seed(self, seed: int | None = None) -> Sequence[None | int]:
        """The next ``reset`` starts every match from ``seed`` (arena seeds each env's stream from it)."""
        self._seed = seed
        return [seed] * self.num_envs

    def action_masks(self) -> np.ndarray:
        """Each match's legal actions now (bool [num_envs, sum(nvec)]; all True without a game mask)."""
        mask = action_mask_of(self.vector_env, self.vector_env.observations[self.agent_rows])
        if mask is None:
            return np.ones((self.num_envs, int(self.action_space.nvec.sum())), bool)
        return mask.astype(bool)

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None,
                   **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._indices(indices)]
        method = getattr(self, method_name)
        return [method(*method_args, **method_kwargs)] * len(self._indices(indices))

    def env_is_wrapped(self, wrapper_class: Any, indices: Any = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def _indices(self, indices: Any) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices)
