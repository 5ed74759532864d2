"""Data-parallel training over ``torch.distributed``: which share of the run this process holds, and
the few collectives the trainer needs. See docs/scaling.md.

Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment) every rank runs the same trainer on its
own block of the run's envs: ``trainer.num_envs`` is the run's total and rank ``r`` of ``W`` steps
envs ``[r * B / W, (r + 1) * B / W)``, seeded as those envs are in a one-process run (the env seed
of env ``e`` depends on ``e``, not on the rank). Sampling noise is drawn for every row of the run
at each step from one generator that every rank holds, and each rank keeps its own rows; minibatches
are cut from the run's whole list of segments, and each rank trains on the ones it holds. The
gradients are averaged by ``DistributedDataParallel``, every mean in the loss is global, so the
parameters after an update equal a one-process run's with the same seeds, to float rounding.

The backend is gloo on CPU and NCCL on CUDA; the rendezvous is torchrun's (``MASTER_ADDR`` ...).
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Shard:
    """Rank ``rank`` of ``world`` holds envs ``[env_offset, env_offset + num_envs)`` of ``total_envs``."""

    rank: int
    world: int
    env_offset: int
    num_envs: int
    total_envs: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def of(cls, rank: int, world: int, total_envs: int) -> Shard:
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"rank {rank} of world size {world}: need 0 <= rank < world_size")
        if total_envs % world:
            raise ValueError(f"trainer.num_envs={total_envs} (the run's total) must be a multiple of the "
                             f"number of ranks ({world}): each rank steps num_envs / ranks envs")
        share = total_envs // world
        return cls(rank, world, rank * share, share, total_envs)


def launched_by_torchrun() -> bool:
    """True in a process that torchrun (or another launcher) started as one of several ranks."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def local_world_size() -> int:
    """Ranks on this machine (``LOCAL_WORLD_SIZE``, set by torchrun), 1 outside a launcher."""
    return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1"))))


class Collective:
    """The process group of a data-parallel run and the trainer's collectives over it.

    ``Collective.join(device)`` initialises the default group from torchrun's environment (gloo on
    CPU, NCCL on CUDA) unless one exists; tests may build one with ``init_process_group`` and pass it
    through ``Collective()``. Every method is a collective: every rank must call it, in the same order.

    ``group``: a subgroup (``dist.new_group``) to work over instead of the whole run; ``rank`` and
    ``world`` are then this process's rank in it and its size, and rank 0 is its first member (global
    rank ``src``). Only members of the group may build or use it.
    """

    def __init__(self, device: torch.device | str = "cpu", group: Any = None) -> None:
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("Collective() needs an initialised torch.distributed process group")
        self.group = group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        if self.rank < 0:
            raise ValueError(f"global rank {dist.get_rank()} is not a member of the process group given")
        # broadcasts name their source by its global rank
        self.src = 0 if group is None else dist.get_global_rank(group, 0)
        self.backend = dist.get_backend(group)
        # NCCL reduces CUDA tensors only; gloo CPU ones.
        self.device = torch.device(device) if self.backend == "nccl" else torch.device("cpu")

    @classmethod
    def join(cls, device: str = "cpu", timeout_minutes: float = 30.0) -> Collective:
        if not dist.is_initialized():
            backend = "nccl" if device == "cuda" else "gloo"
            if device == "cuda":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group(backend, timeout=datetime.timedelta(minutes=timeout_minutes))
            logger.info("rank %d of %d joined the process group (%s)", dist.get_rank(),
                        dist.get_world_size(), backend)
        return cls(device)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def shard(self, total_envs: int) -> Shard:
        return Shard.of(self.rank, self.world, total_envs)

    # ------------------------------------------------------------------ tensors

    def sum(self, values: Tensor) -> Tensor:
        """The sum over ranks of ``values`` (any shape), as a tensor on ``values``' device."""
        out = values.detach().to(self.device, copy=True)
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=self.group)
        return out.to(values.device)

    def max(self, values: Tensor) -> Tensor:
        out = values.detach().to(self.device, copy=True)
        dist.all_reduce(out, op=dist.ReduceOp.MAX, group=self.group)
        return out.to(values.device)

    def sum_floats(self, values: Sequence[float]) -> list[float]:
        return self.sum(torch.tensor(list(values), dtype=torch.float64)).tolist()

    def cat(self, local: Tensor, dim: int = 0) -> Tensor:
        """Every rank's ``local`` concatenated along ``dim`` in rank order (equal shapes)."""
        src = local.detach().to(self.device).contiguous()
        parts = [torch.empty_like(src) for _ in range(self.world)]
        dist.all_gather(parts, src, group=self.group)
        return torch.cat(parts, dim=dim).to(local.device)

    def broadcast_array(self, array: np.ndarray) -> np.ndarray:
        """Rank 0's ``array`` (same shape and dtype on every rank)."""
        tensor = torch.from_numpy(np.ascontiguousarray(array)).to(self.device)
        dist.broadcast(tensor, src=self.src, group=self.group)
        return tensor.cpu().numpy()

    # ------------------------------------------------------------------ objects

    def all_objects(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` (picklable, trusted: they come from this run's own ranks), in rank order."""
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj, group=self.group)
        return out

    def from_main(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank."""
        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=self.src, group=self.group)
        return box[0]

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def close(self, wait: bool = True) -> None:
        """Leaves the process group, with ``wait`` once every rank is done (a rank tearing its
        connections down while another still reads from them can abort the other); without, at once
        (after an error, when the other ranks may never get here: torchrun stops them). A subgroup's
        collective leaves nothing: the whole run's does."""
        if dist.is_initialized() and self.group is None:
            if wait:
                dist.barrier()
                _all_through_barrier(self.rank, self.world)
            dist.destroy_process_group()


def _all_through_barrier(rank: int, world: int) -> None:
    """Returns once every rank is through the closing barrier. A rank returns from a barrier while
    its last message may still be on its way to another rank, and tearing the connections down then
    aborts that rank (gloo: "terminate called without an active exception"). Each rank marks its
    return in the run's rendezvous store and waits for every mark: after that no barrier message is
    in flight. A store whose host already left (every rank was through by then) is not an error."""
    from torch.distributed import distributed_c10d

    try:
        store = distributed_c10d._get_default_store()
        store.set(f"arena/closing/{rank}", "1")
        store.wait([f"arena/closing/{r}" for r in range(world)], timedelta(seconds=60))
    except Exception as exc:  # the store's host left once every mark was set, or it is unreachable
        logger.debug("closing the process group: %s", exc)
