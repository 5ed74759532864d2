"""Where a run's parts live: the matches (the core's env batch) and the policy.

``trainer.device`` says where the policy trains. ``env.device`` says where the matches step; left
unset (``null``, the default) it follows ``trainer.device`` wherever it can: with
``trainer.device=cuda`` the matches step on the GPU when the installed core is a CUDA build
(``ARENA_CUDA=ON pip install .``), and on the CPU threads otherwise. ``env.device=cpu`` or ``cuda``
overrides that. ``placement`` returns the choice and the sentences the run logs at start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arena import _core

ENV_DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class Placement:
    """The devices of a run and what the run says about them at start."""

    trainer_device: str
    env_device: str
    notes: tuple[str, ...] = field(default=())


def core_has_cuda() -> bool:
    """Whether the installed core (``arena._core``) was built with CUDA."""
    return bool(getattr(_core, "cuda_built", False))


def placement(trainer_device: str, env_device: str | None, has_cuda_core: bool | None = None) -> Placement:
    """The env's device for ``trainer.device`` and ``env.device`` (None: follow the trainer), with the
    notes a run logs: where the matches step when that is not where the policy is, and why."""
    if trainer_device not in ENV_DEVICES:
        raise ValueError(f"trainer.device={trainer_device!r} is not allowed: use one of "
                         f"{', '.join(ENV_DEVICES)}")
    if env_device is not None and env_device not in ENV_DEVICES:
        raise ValueError(f"env.device={env_device!r} is not allowed: use one of {', '.join(ENV_DEVICES)} "
                         "or null (follow trainer.device)")
    if env_device is not None:
        notes = ()
        if env_device != trainer_device:
            notes = (f"env.device={env_device} overrides trainer.device={trainer_device}: the matches step "
                     f"on the {_where(env_device)}, the policy trains on the {_where(trainer_device)}",)
        return Placement(trainer_device, env_device, notes)
    if trainer_device == "cpu":
        return Placement("cpu", "cpu")
    if has_cuda_core is None:
        has_cuda_core = core_has_cuda()
    if has_cuda_core:
        return Placement("cuda", "cuda", ("trainer.device=cuda: the matches step on the GPU (the core is "
                                          "a CUDA build), the policy trains there too",))
    return Placement("cuda", "cpu", (
        "trainer.device=cuda with a core built without CUDA: the policy trains on the GPU, the matches "
        "step on the CPU threads, and every step's observations and actions cross between them "
        "(ARENA_CUDA=ON pip install . builds the CUDA core)",))


def _where(device: str) -> str:
    return "GPU" if device == "cuda" else "CPU threads"
