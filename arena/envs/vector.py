"""The vector env: N matches of one game, stepped in C++, seen through zero-copy numpy buffers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from arena.envs.core_batch import CoreBatch, HostBuffers
from arena.games import spec

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# The output buffers of the core, in the order EnvTensors lists them.
OUTPUT_NAMES = ("obs", "final_obs", "rewards", "terminals", "truncations", "events", "done", "outcome",
                "end_reason", "episode_length")


@dataclass(frozen=True)
class EnvTensors:
    """The output buffers of a ``VectorEnv`` as torch tensors on ``env.device``, zero-copy.

    On the CPU they are ``torch.from_numpy`` views of the numpy buffers; on CUDA they are the core's
    device buffers themselves (through ``__cuda_array_interface__``). Either way the core rewrites
    them in place at every step: clone what you keep. Shapes: ``obs``, ``final_obs`` [rows, obs_dim]
    float32; ``rewards`` [rows] float32; ``terminals``, ``truncations`` [rows] bool; ``events``
    [rows, num_events] int32; ``done`` [envs] bool; ``outcome``, ``end_reason`` [envs] int8;
    ``episode_length`` [envs] int32.
    """

    obs: torch.Tensor
    final_obs: torch.Tensor
    rewards: torch.Tensor
    terminals: torch.Tensor
    truncations: torch.Tensor
    events: torch.Tensor
    done: torch.Tensor
    outcome: torch.Tensor
    end_reason: torch.Tensor
    episode_length: torch.Tensor


class VectorEnv:
    """N two-team matches of one game, batched in the native core.

    Rows are agents: ``row = env * agents_per_env + slot``, slots ``0..n0-1`` are team 0 and
    ``n0..n0+n1-1`` team 1. ``step`` returns the core's own buffers, rewritten in place on the
    next step (zero-copy): copy what you keep. Finished envs are reset automatically; their final
    observation is in ``infos["final_observation"]`` for the rows of envs with ``infos["done"]``.

    On ``device="cuda"`` the matches are stepped on the GPU and their outputs stay there:
    ``tensors()`` gives them to torch without a copy and ``step_envs_tensor`` takes actions already
    on the GPU. The numpy face (``step``, ``step_envs``, ``observations``, ``reset``, ...) keeps
    working: it copies the outputs into page-locked host mirrors (``sync_host``) when it is used.
    """

    def __init__(
        self,
        game: str,
        core: CoreBatch,
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
        # each row's place in its own team (0 = the first of its team's formation)
        self.place_of_row: np.ndarray = np.tile(np.r_[np.arange(team_sizes[0]), np.arange(team_sizes[1])],
                                                self.num_envs)
        self._seed_rng = np.random.default_rng(seed)
        self._seed = seed
        self._closed = False
        self._was_reset = False
        self._tensors: EnvTensors | None = None
        # Envs [lo, hi) whose outputs on the device are newer than the numpy buffers (CUDA only).
        self._stale: tuple[int, int] | None = None
        self._last_actions: Any = None
        self._nvec_t: Any = None

    # ------------------------------------------------------------------ buffers

    @property
    def host(self) -> HostBuffers:
        """The numpy output buffers, brought up to date (on CUDA: copied from the device if a step
        left them behind). The same arrays on every call, rewritten in place by each step: read
        them right after a step, copy what you keep."""
        self._sync_stale()
        return self._core

    @property
    def observations(self) -> np.ndarray:
        self._sync_stale()
        return self._core.obs

    def _infos(self) -> dict[str, np.ndarray]:
        self._sync_stale()
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
        infos = self._infos()  # on CUDA: brings the numpy buffers up to date first
        return self._core.obs, infos

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
        infos = self._infos()  # on CUDA: brings the numpy buffers up to date first
        return self._core.obs, infos

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """One decision in every env: ``(obs, rewards, terminals, truncations, infos)``.

        The built-in reward is the match outcome per row: +1 win, -1 loss, 0 otherwise.
        """
        self.step_envs(actions, 0, self.num_envs)
        infos = self._infos()
        c = self._core
        return c.obs, c.rewards, c.terminals, c.truncations, infos

    def step_envs(self, actions: Any, begin: int, end: int) -> None:
        """Steps only envs ``[begin, end)`` (their rows of ``actions`` are read). The GIL is
        released while C++ steps, so a Python thread can compute actions for other envs meanwhile.

        This is the host's way in: on CUDA the actions are copied up and the outputs of the range
        copied back into the numpy buffers. Actions already on the GPU go to ``step_envs_tensor``."""
        self._check_open()
        self._check_range(begin, end)
        a = self._as_actions(actions)
        if not self._was_reset:
            self.reset()
        self._core.step(a, int(begin), int(end))
        if self.device == "cuda":
            self._mark_stale(int(begin), int(end))
            self.sync_host(int(begin), int(end))

    def step_envs_tensor(self, actions: torch.Tensor, begin: int, end: int, *, check: bool = True) -> None:
        """Steps envs ``[begin, end)`` with actions in a torch tensor on ``env.device``: int32 (int64
        is converted) of shape ``[num_agents, action_dims]``; only the rows of the range are read.

        On CUDA the core reads the tensor's device memory (no host copy) and the outputs stay on the
        device (``tensors()``; the numpy buffers follow on ``sync_host`` or any numpy-facing call).
        The step is queued on the legacy default stream, which is torch's default stream: it runs
        after the torch work queued there, and torch work queued after it sees its outputs. Actions
        out of range are refused with the ``ValueError`` of ``step_envs``; on CUDA that check waits
        for the GPU once per call. ``check=False`` skips it on CUDA (no wait: the step is only
        queued) for callers whose actions are in range by construction, e.g. sampled from the
        policy's heads or a tape checked once; an out-of-range value then gives undefined results.
        (int64 actions are always checked: they are narrowed to int32 first.)
        On the CPU this is ``step_envs`` on a zero-copy numpy view, and the core always checks."""
        import torch

        self._check_open()
        self._check_range(begin, end)
        a = self._as_action_tensor(actions, int(begin), int(end))
        if not self._was_reset:
            self.reset()
        if self.device == "cpu":
            self._core.step(a.numpy(), int(begin), int(end))  # the core checks every value
            return
        if check and actions.dtype == torch.int32:  # int64 ones were checked before they were narrowed
            self._check_action_values(a, int(begin), int(end))
        self._mark_stale(int(begin), int(end))
        self._core.step_device(a.data_ptr(), int(begin), int(end))
        self._last_actions = a  # a converted copy may still be read by the step: kept until the next

    def sync_host(self, begin: int = 0, end: int | None = None) -> None:
        """Copies the outputs of envs ``[begin, end)`` (default: all) from the GPU into the numpy
        buffers, page-locked on the first call, after the steps queued before it. Nothing to do on
        the CPU, where the numpy buffers are where the core writes."""
        self._check_open()
        end = self.num_envs if end is None else end
        self._check_range(begin, end)
        if self.device == "cpu":
            return
        self._core.sync_host(int(begin), int(end))
        if self._stale is not None and begin <= self._stale[0] and self._stale[1] <= end:
            self._stale = None

    def tensors(self) -> EnvTensors:
        """The output buffers as torch tensors on ``env.device``, without a copy (see
        ``EnvTensors``). The same tensors on every call; the core rewrites them at every step."""
        self._check_open()
        if self._tensors is None:
            import torch

            if self.device == "cpu":
                views = {name: torch.from_numpy(getattr(self._core, name)) for name in OUTPUT_NAMES}
            else:
                buffers = self._core.device_buffers()
                views = {name: torch.as_tensor(buffers[name], device="cuda") for name in OUTPUT_NAMES}
            self._tensors = EnvTensors(**views)
        return self._tensors

    def _mark_stale(self, begin: int, end: int) -> None:
        if begin < end:
            lo, hi = self._stale if self._stale is not None else (begin, end)
            self._stale = (min(lo, begin), max(hi, end))

    def _sync_stale(self) -> None:
        if self._stale is not None and not self._closed:
            self.sync_host(*self._stale)

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
        return self.observations

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
        return self.observations

    def set_params(self, **overrides: Any) -> None:
        """Changes game parameters of every env between steps, e.g. a curriculum's spawn distances.

        Matches in flight continue under the new values; spawn settings apply from each env's next
        reset. Parameters that shape the buffers (team sizes, missiles per fighter, tracked
        missiles) cannot change.
        """
        self._check_open()
        if not hasattr(self._core, "set_params"):
            raise NotImplementedError(f"game {self.game!r} does not support set_params")
        values, params = spec(self.game).validate({**self.params, **overrides}, self.team_sizes)
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

    def _check_range(self, begin: Any, end: Any) -> None:
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

    def _as_action_tensor(self, actions: Any, begin: int, end: int) -> torch.Tensor:
        """``actions`` as a C-contiguous int32 tensor on this env's device, or a ValueError naming
        what is wrong with it (int64 values of envs [begin, end) are range-checked before they are
        narrowed, so that none wraps into range)."""
        import torch

        rows, dims = self.num_agents, len(self._nvec)
        if not isinstance(actions, torch.Tensor):
            raise ValueError(
                f"actions must be a torch.Tensor of shape ({rows}, {dims}) on {self.device!r}, got "
                f"{type(actions).__name__}: numpy actions go to step_envs"
            )
        if actions.device.type != self.device:
            raise ValueError(
                f"actions are on device {str(actions.device)!r}: allowed this env's device {self.device!r}"
            )
        if actions.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"actions have dtype {actions.dtype}: allowed torch.int32 or torch.int64")
        if tuple(actions.shape) != (rows, dims):
            raise ValueError(f"actions have shape {tuple(actions.shape)}: allowed ({rows}, {dims})")
        a = actions.detach()
        if a.dtype == torch.int64:
            self._check_action_values(a, begin, end)
            a = a.to(torch.int32)
        return a.contiguous()

    def _check_action_values(self, a: torch.Tensor, begin: int, end: int) -> None:
        """The core's range check of ``step``, for actions on the GPU: one reduction, one wait."""
        import torch

        if self._nvec_t is None or self._nvec_t.device != a.device:
            self._nvec_t = torch.as_tensor(self._nvec, dtype=torch.int32, device=a.device)
        part = a[begin * self.agents_per_env : end * self.agents_per_env]
        bad = (part < 0) | (part >= self._nvec_t)  # int64 compares exactly with the int32 limits
        if not bool(bad.any()):
            return
        r, d = (int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(
            f"action {int(part[r, d])} at row {begin * self.agents_per_env + r}, dimension {d} is out of "
            f"range: allowed 0..{int(self._nvec[d]) - 1}"
        )

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
