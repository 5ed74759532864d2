"""Checkpoint files: written atomically, read with ``torch.load(weights_only=True)``, clear errors.

A write goes to a temporary file in the destination's directory, is flushed and fsynced, then
``os.replace``d over the destination (and the directory fsynced): a crash at any moment leaves
either the old file or the new one, never a torn one. Everything stored is tensors or plain Python
types (RNG states included), so loading never needs to unpickle arbitrary objects.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from arena.agents.policy import Policy, read_torch_file

CHECKPOINT_FORMAT = "arena-trainer-checkpoint"
CHECKPOINT_VERSION = 1
REQUIRED_KEYS = ("format", "version", "config", "policy_spec", "policy", "optimizer", "rng", "counters")


CHECKPOINT_ADVICE = ("arena left the file as it is: restore it from a backup, or resume from another "
                     "checkpoint file (trainer.resume=PATH)")


class CheckpointError(ValueError):
    """A checkpoint file exists but cannot be used; the message names the file."""


def atomic_save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """``torch.save(obj)`` to ``path`` atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not supported on every platform
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def load_checkpoint(path: str | os.PathLike[str], map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Reads a trainer checkpoint; ``FileNotFoundError`` or ``CheckpointError`` name ``path``."""
    path = os.fspath(path)
    payload = read_torch_file(path, map_location, what="checkpoint", error=CheckpointError,
                              advice=CHECKPOINT_ADVICE)
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path} is not an arena trainer checkpoint (no format {CHECKPOINT_FORMAT!r})")
    missing = [k for k in REQUIRED_KEYS if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {path} is incomplete: missing {missing}")
    if payload["version"] != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has version {payload['version']}; "
            f"this arena reads version {CHECKPOINT_VERSION}"
        )
    return payload


def checkpoints_written(path: str | os.PathLike[str]) -> int:
    """How many checkpoints the trainer had written when it wrote ``path`` (this one included)."""
    counters = load_checkpoint(path)["counters"]
    return int(counters.get("checkpoints_written", 1))


def save_policy_snapshot(policy: Policy, path: str | os.PathLike[str]) -> Path:
    """Writes only the policy (``policy_spec`` and weights), e.g. a league snapshot; ``load_policy``
    reads it back."""
    state = {k: v.detach().cpu().clone() for k, v in policy.state_dict().items()}
    return atomic_save({"policy_spec": policy.spec, "policy": state}, path)
