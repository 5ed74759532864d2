"""PettingZoo face of one match: every fighter is an agent of a ``ParallelEnv``.

Agents are named ``team{t}_{i}`` (``team0_0``, ``team0_1``, ..., ``team1_0``), in row order.
Rewards are the match outcome (+1 win, -1 loss, 0 draw or running) for every agent of a team,
given on the step that ends the match; terminations and truncations come from the core (the
time limit is a truncation). The observation returned with the last step is the real final one
(the core's ``final_observation``), not the auto-reset spawn. When the match ends every agent is
removed; call ``reset()`` for the next one.

Dead fighters in team games (``remove_dead``):
- ``False`` (default): a fighter that dies stays an agent until the match ends, observes all
  zeros, and its actions (optional) are ignored; so every fighter of a team receives the
  team's outcome. ``infos[agent]["alive"]`` tells who is still flying.
- ``True``: a fighter that dies is reported ``terminated`` on that step with its final (zero)
  observation and reward 0 (or the outcome, if the match ended on that step) and is removed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from arena.envs.gymnasium_env import action_mask_of, check_single_match, noop_action, observation_space_for
from arena.envs.registry import make
from arena.games import DEFAULT_GAME, spec

AgentID = str


class ArenaParallelEnv(ParallelEnv[AgentID, np.ndarray, np.ndarray]):
    """One match of ``game`` as a PettingZoo parallel env.

    ``make_kwargs`` go to :func:`arena.make` (``team_sizes``, ``seed``, any game override);
    ``num_envs`` is always 1. ``vector_env`` is the underlying one-env :class:`VectorEnv`.
    """

    metadata: dict[str, Any] = {"name": "arena_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(
        self,
        game: str = DEFAULT_GAME,
        *,
        remove_dead: bool = False,
        render_mode: str | None = None,
        **make_kwargs: Any,
    ) -> None:
        check_single_match(render_mode, make_kwargs)
        self.render_mode = render_mode
        self.remove_dead = remove_dead
        self.vector_env = make(game, **{"num_threads": 1, **make_kwargs, "num_envs": 1})
        self.metadata = {**self.metadata, "name": f"arena_{game}_v0"}
        n0, n1 = self.vector_env.team_sizes
        self.possible_agents: list[AgentID] = [f"team0_{i}" for i in range(n0)] + [
            f"team1_{i}" for i in range(n1)
        ]
        self.agents: list[AgentID] = []
        self._row = {agent: row for row, agent in enumerate(self.possible_agents)}
        box = observation_space_for(self.vector_env)
        nvec = self.vector_env.action_space.nvec
        # One space object per agent, so that seeding one agent's space leaves the others alone.
        self.observation_spaces = {
            a: spaces.Box(box.low, box.high, dtype=np.float32) for a in self.possible_agents
        }
        self.action_spaces = {a: spaces.MultiDiscrete(nvec) for a in self.possible_agents}
        self._nvec = np.asarray(nvec)
        self._actions = np.zeros((len(self.possible_agents), len(nvec)), dtype=np.int32)
        self._alive_column = spec(game).alive_column
        self._alive = np.ones(len(self.possible_agents), dtype=bool)

    def observation_space(self, agent: AgentID) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: AgentID) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    # ------------------------------------------------------------------ PettingZoo API

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[AgentID, np.ndarray], dict[AgentID, dict[str, Any]]]:
        """Starts a new match; the same seed gives the same match."""
        obs, _ = self.vector_env.reset(seed)
        obs = obs.copy()
        self.agents = list(self.possible_agents)
        self._alive = self._alive_rows(obs)
        return (
            {a: obs[self._row[a]] for a in self.agents},
            {a: self._with_mask({"alive": bool(self._alive[self._row[a]])}, obs[self._row[a]])
             for a in self.agents},
        )

    def step(
        self, actions: dict[AgentID, Any]
    ) -> tuple[
        dict[AgentID, np.ndarray],
        dict[AgentID, float],
        dict[AgentID, bool],
        dict[AgentID, bool],
        dict[AgentID, dict[str, Any]],
    ]:
        if not self.agents:
            raise RuntimeError("the match is over (or was never started): call reset() first")
        self._fill_actions(actions)
        obs, rewards, terminals, truncations, infos = self.vector_env.step(self._actions)
        done = bool(infos["done"][0])
        final = (infos["final_observation"] if done else obs).copy()
        alive = self._alive_rows(final)
        end: dict[str, int] = {}
        if done:
            end = {
                "outcome": int(infos["outcome"][0]),
                "end_reason": int(infos["end_reason"][0]),
                "episode_length": int(infos["episode_length"][0]),
            }
        names = self.vector_env.event_names
        obs_out, rew_out, term_out, trunc_out, info_out = {}, {}, {}, {}, {}
        for agent in self.agents:
            row = self._row[agent]
            died = self.remove_dead and not alive[row]
            obs_out[agent] = final[row]
            rew_out[agent] = float(rewards[row])
            term_out[agent] = bool(terminals[row]) or died
            trunc_out[agent] = bool(truncations[row]) and not term_out[agent]
            events = {name: int(v) for name, v in zip(names, infos["events"][row], strict=True)}
            info = {"alive": bool(alive[row]), "events": events, **end}
            info_out[agent] = self._with_mask(info, final[row])
        self._alive = alive
        self.agents = [a for a in self.agents if not (term_out[a] or trunc_out[a])]
        return obs_out, rew_out, term_out, trunc_out, info_out

    def close(self) -> None:
        self.vector_env.close()

    # ------------------------------------------------------------------ helpers

    def _fill_actions(self, actions: dict[AgentID, Any]) -> None:
        if not isinstance(actions, dict):
            raise ValueError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
        unknown = [a for a in actions if a not in self._row]
        if unknown:
            raise ValueError(f"actions for unknown agents {unknown}; agents are {self.possible_agents}")
        self._actions[:] = noop_action(self.vector_env)
        for agent in self.agents:
            row = self._row[agent]
            if agent not in actions:
                if self._alive[row]:
                    raise ValueError(f"no action for {agent!r}: every agent still flying needs one")
                continue  # a dead fighter's action is ignored anyway
            a = np.asarray(actions[agent])
            if (
                a.shape != self._nvec.shape
                or a.dtype.kind not in "iu"
                or (a < 0).any()
                or (a >= self._nvec).any()
            ):
                raise ValueError(
                    f"action {actions[agent]!r} for {agent!r} is invalid: allowed {len(self._nvec)} "
                    f"integers with values in 0..{self._nvec - 1}"
                )
            self._actions[row] = a

    def _with_mask(self, info: dict[str, Any], obs_row: np.ndarray) -> dict[str, Any]:
        mask = action_mask_of(self.vector_env, obs_row)
        return info if mask is None else info | {"action_mask": mask}

    def _alive_rows(self, obs: np.ndarray) -> np.ndarray:
        # e.g. midrange writes each fighter's alive flag in its row (all zeros once dead)
        if self._alive_column is not None:
            return obs[:, self._alive_column] > 0.5
        return np.ones(len(obs), dtype=bool)


def parallel_env(game: str = DEFAULT_GAME, **kwargs: Any) -> ArenaParallelEnv:
    """PettingZoo's conventional constructor name."""
    return ArenaParallelEnv(game, **kwargs)
