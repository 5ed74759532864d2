"""The vector env: N matches of one game, stepped in C++, seen through zero-copy numpy buffers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

logger = logging.getLogger(__name__)


class VectorEnv:
    """N two-team matches of one game, batched in the native core.

    Rows are agents: ``row = env * agents_per_env + slot``, slots ``0..n0-1`` are team 0 and
    ``n0..n0+n1-1`` team 1. ``step`` returns the core's own buffers, rewritten in place on the
    next step (zero-copy): copy what you keep. Finished envs are reset automatically; their final
    observation is in ``infos["final_observation"]`` for the rows of envs with ``infos["done"]``.
    """

    def __init__(
        self,
        game: str,
        core: Any,
        *,
        team_sizes: tuple[int, int],
        params: dict[str, Any],
        seed: int,
        event_names: tuple[str, ...],
    ) -> None:
        self.game = game
        self._core = core
        self.params = dict(params)
        self.team_sizes = team_sizes
        self.num_envs: int = core.num_envs
        self.agents_per_env: int = core.agents_per_env
        self.num_agents: int = self.num_envs * self.agents_per_env
        self.obs_dim: int = core.obs_dim
        self.num_threads: int = core.num_threads
        self.device = "cuda" if core.on_cuda else "cpu"
        self.event_names = event_names
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(self.obs_dim,), dtype=np.float32)
        self.action_space = spaces.MultiDiscrete(np.asarray(core.action_nvec, dtype=np.int64))
        self._nvec = np.asarray(core.action_nvec, dtype=np.int64)
        team_of_slot = np.array([0] * team_sizes[0] + [1] * team_sizes[1], dtype=np.int8)
        self.team_of_row: np.ndarray = np.tile(team_of_slot, self.num_envs)
        self._seed_rng = np.random.default_rng(seed)
        self._seed = seed
        self._closed = False
        self._was_reset = False

    # ------------------------------------------------------------------ buffers

    @property
    def observations(self) -> np.ndarray:
        return self._core.obs

    def _infos(self) -> dict[str, np.ndarray]:
        c = self._core
        return {
            "done": c.done,
            "outcome": c.outcome,
            "end_reason": c.end_reason,
            "episode_length": c.episode_length,
            "final_observation": c.final_obs,
            "events": c.events,
        }

    # ------------------------------------------------------------------ API

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Starts a new match in every env. Same seed, same matches, whatever the thread count."""
        self._check_open()
        if seed is None:
            seed = self._seed if not self._was_reset else int(self._seed_rng.integers(0, 2**63))
        elif isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
        self._core.reset(int(seed) & 0xFFFFFFFFFFFFFFFF)
        self._was_reset = True
        return self._core.obs, self._infos()

    def reset_envs(self, seeds: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Starts a new match in every env, env e seeded with ``seeds[e]``: envs given the same
        seed get the same spawn (used for seed-paired evaluation)."""
        self._check_open()
        try:
            seeds = np.asarray(seeds)
        except (ValueError, TypeError) as err:
            raise ValueError(f"seeds must be {self.num_envs} non-negative integers: {err}") from None
        if seeds.shape != (self.num_envs,) or seeds.dtype.kind not in "iu" or (seeds < 0).any():
            raise ValueError(f"seeds must be {self.num_envs} non-negative integers, got {seeds!r}")
        self._core.reset_envs(seeds.astype(np.uint64))
        self._was_reset = True
        return self._core.obs, self._infos()

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """One decision in every env: ``(obs, rewards, terminals, truncations, infos)``.

        The built-in reward is the match outcome per row: +1 win, -1 loss, 0 otherwise.
        """
        self.step_envs(actions, 0, self.num_envs)
        c = self._core
        return c.obs, c.rewards, c.terminals, c.truncations, self._infos()

    def step_envs(self, actions: Any, begin: int, end: int) -> None:
        """Steps only envs ``[begin, end)`` (their rows of ``actions`` are read). The GIL is
        released while C++ steps, so a Python thread can compute actions for other envs meanwhile."""
        self._check_open()
        for name, value in (("begin", begin), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ValueError(
                    f"{name}={value!r} is not an env index: allowed integers in [0, {self.num_envs}]"
                )
        if not 0 <= begin <= end <= self.num_envs:
            raise ValueError(
                f"env range [{begin}, {end}) is outside [0, {self.num_envs}): allowed "
                f"0 <= begin <= end <= {self.num_envs}"
            )
        a = self._as_actions(actions)
        if not self._was_reset:
            self.reset()
        self._core.step(a, int(begin), int(end))

    def env_state(self) -> bytes:
        """The whole state of every env (the world, its counters and each env's spawn generator) as
        opaque bytes of this build of the core: ``set_env_state`` of an env with the same game,
        parameters and number of envs continues every match exactly. What trainer checkpoints hold.
        (Compare states with ``world_state()``: the bytes include struct padding, which may differ.)"""
        self._check_open()
        return bytes(self._core.state_bytes())

    def set_env_state(self, data: bytes) -> np.ndarray:
        """Restores ``env_state()``; returns the new obs. A blob of another size is refused; on games
        with checked world states the restored world passes the same checks as ``set_world_state``
        (else the previous state is put back and the ``ValueError`` raised)."""
        self._check_open()
        if not isinstance(data, bytes | bytearray):
            raise ValueError(f"env state must be bytes (from env_state()), not {type(data).__name__}")
        before = self._core.state_bytes()
        self._core.set_state_bytes(bytes(data))
        if hasattr(self._core, "set_world_state"):
            try:  # the field checks; the round trip leaves every field (and the generators) as given
                self._core.set_world_state(self._core.world_state())
            except ValueError:
                self._core.set_state_bytes(before)
                raise
        self._was_reset = True
        return self._core.obs

    def world_state(self) -> dict[str, np.ndarray]:
        """Raw state of every env (positions, velocities, alive flags, missiles), as copies."""
        self._check_open()
        return self._core.world_state()

    def set_world_state(self, state: dict[str, np.ndarray]) -> np.ndarray:
        """Replaces the state of every env (keys as in ``world_state()``); returns the new obs."""
        self._check_open()
        if not hasattr(self._core, "set_world_state"):
            raise NotImplementedError(f"game {self.game!r} does not support set_world_state")
        if not isinstance(state, Mapping):
            raise ValueError(
                f"state must be a dict of arrays keyed as world_state() returns, got {type(state).__name__}"
            )
        self._core.set_world_state(dict(state))  # the core checks every field, naming a bad one
        self._was_reset = True
        return self._core.obs

    def set_params(self, **overrides: Any) -> None:
        """Changes game parameters of every env between steps, e.g. a curriculum's spawn distances.

        Matches in flight continue under the new values; spawn settings apply from each env's next
        reset. Parameters that shape the buffers (team sizes, missiles per fighter, tracked
        missiles) cannot change.
        """
        self._check_open()
        if not hasattr(self._core, "set_params"):
            raise NotImplementedError(f"game {self.game!r} does not support set_params")
        from arena.envs.registry import build_params

        values, params = build_params(self.game, self.team_sizes, {**self.params, **overrides})
        self._core.set_params(params)
        self.params = values

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"VectorEnv(game={self.game!r}, num_envs={self.num_envs}, team_sizes={self.team_sizes}, "
            f"num_threads={self.num_threads}, device={self.device!r})"
        )

    # ------------------------------------------------------------------ validation

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this env is closed")

    def _as_actions(self, actions: Any) -> np.ndarray:
        if hasattr(actions, "detach"):  # a torch tensor
            actions = actions.detach().cpu().numpy()
        rows, dims = self.num_agents, len(self._nvec)
        try:
            a = np.asarray(actions)
        except (ValueError, TypeError) as err:  # ragged nesting, objects numpy cannot take
            raise ValueError(
                f"actions must be an array of shape ({rows}, {dims}) of integers: {err}"
            ) from None
        if a.shape == (rows,) and dims == 1:
            a = a.reshape(rows, 1)
        if a.shape != (rows, dims):
            raise ValueError(f"actions must have shape ({rows}, {dims}), got {a.shape}")
        if a.dtype == np.int32 and a.flags.c_contiguous:
            return a  # the core checks every value's range itself
        if a.dtype.kind == "f":
            bad = ~np.isfinite(a)
            if bad.any():
                r, d = np.argwhere(bad)[0]
                raise ValueError(f"actions contain NaN or inf (first at row {r}, dimension {d})")
            if (a != np.round(a)).any():
                raise ValueError("actions must be integers (MultiDiscrete), got non-integral floats")
        elif a.dtype.kind not in "iub":
            raise ValueError(f"actions must be integers, got dtype {a.dtype}")
        low, high = a.min(axis=0), a.max(axis=0)
        for d in range(dims):
            if low[d] < 0 or high[d] >= self._nvec[d]:
                value = low[d] if low[d] < 0 else high[d]
                raise ValueError(
                    f"action {value} in dimension {d} is out of range: allowed 0..{self._nvec[d] - 1}"
                )
        out = self._core.actions
        np.copyto(out, a, casting="unsafe")
        return out
