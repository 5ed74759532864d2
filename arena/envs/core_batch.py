"""What a ``VectorEnv`` needs from the core's batch of one game, and what it shows of its buffers.

Every game's batch class in ``arena._core`` (``GameSpec.core_batch``) has this face: the pybind11
module builds them all from one template (``arena/native/binding_common.h``). ``CoreBatch`` types the
seam so that the hottest path, the rollout, is checked against it; ``HostBuffers`` is the part a
caller beside the env may read, through ``VectorEnv.host``: the numpy output buffers, written in
place by every step (on the CPU they are where the core writes; on CUDA, page-locked mirrors
brought up to date by ``sync_host``). ``tests/test_core_batch.py`` checks each game's batch against
both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class HostBuffers(Protocol):
    """The core's output buffers on the host; shapes and dtypes as ``arena.envs.vector.EnvTensors``."""

    obs: np.ndarray
    final_obs: np.ndarray
    rewards: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray
    events: np.ndarray
    done: np.ndarray
    outcome: np.ndarray
    end_reason: np.ndarray
    episode_length: np.ndarray


@runtime_checkable
class CoreBatch(HostBuffers, Protocol):
    """One game's batch of ``num_envs`` matches in the core (``_core.<Game>Batch``)."""

    num_envs: int
    agents_per_env: int
    obs_dim: int
    num_threads: int
    on_cuda: bool
    action_nvec: Sequence[int]
    actions: np.ndarray  # the int32 [rows, action_dims] buffer ``step`` may be given

    def reset(self, seed: int) -> None: ...

    def reset_envs(self, seeds: np.ndarray) -> None: ...

    def step(self, actions: np.ndarray, begin: int, end: int) -> None: ...

    def step_device(self, actions_ptr: int, begin: int, end: int) -> None: ...

    def sync_host(self, begin: int, end: int) -> None: ...

    def device_buffers(self) -> Mapping[str, Any]: ...

    def state_bytes(self) -> bytes: ...

    def set_state_bytes(self, data: bytes) -> None: ...

    # Optional, where the game has them (``VectorEnv`` asks with ``hasattr``): ``world_state()``,
    # ``set_world_state(state)``, ``set_params(params)``.
