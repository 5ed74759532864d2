"""A checkpoint whose per-opponent critic knew other opponent classes than this trainer's.

With ``agent.critic_per_opponent`` the critic has one value head per class of opponent
(``arena.trainer.opponents.opponent_value_classes``: mirror, frozen policies, then each scripted bot of
the game). A game that gains a bot gains a head, so a run written before cannot be loaded head for
head. Its heads are moved by name instead: each class the file knew keeps its head (the weights, and
Adam's moments of them), a class it did not know starts from this trainer's fresh head with zero
moments, and a class this trainer no longer has is dropped. The rest of the network, and of the
optimizer, is the file's unchanged.

A checkpoint records its classes (``value_classes``). One written before they were recorded is taken
to hold the first ``value_heads`` of today's classes: since the per-opponent critic came, every bot
has been added at the end of its game's list (``freestyle``, midrange's 13th class, the first).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

logger = logging.getLogger(__name__)

#: the policy's parameters with one row per value head (``Policy.critic``, ``Policy.team_critic``)
HEAD_PARAMETERS = ("critic.weight", "critic.bias", "team_critic.weight")


def file_value_classes(payload: Mapping[str, Any], classes: Sequence[str]) -> list[str] | None:
    """The classes a checkpoint's heads stand for, in head order: its own record, else the first
    ``value_heads`` of ``classes`` (this trainer's); None when it has one head (no per-opponent critic)
    or more heads than ``classes`` without a record of them."""
    recorded = payload.get("value_classes")
    if recorded is not None:
        return [str(c) for c in recorded]
    heads = int(payload["policy_spec"].get("value_heads", 1))
    if heads == 1 or heads > len(classes):
        return None
    return list(classes[:heads])


def same_but_heads(file_spec: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Whether two policy specs are the same network but maybe for the number of value heads, both
    with more than one (a per-opponent critic on each side)."""
    rest = {k: v for k, v in file_spec.items() if k != "value_heads"}
    return (rest == {k: v for k, v in spec.items() if k != "value_heads"}
            and int(file_spec.get("value_heads", 1)) > 1 and int(spec.get("value_heads", 1)) > 1)


def _moved(rows: Tensor, fresh: Tensor, old: Sequence[str], new: Sequence[str]) -> Tensor:
    """``rows`` (one per class of ``old``) in ``new``'s order; a class ``old`` lacks takes ``fresh``'s."""
    out = fresh.detach().clone().to(rows.device, rows.dtype)
    for i, name in enumerate(new):
        if name in old:
            out[i] = rows[old.index(name)]
    return out


def move_heads(weights: Mapping[str, Tensor], fresh: Mapping[str, Tensor], old: Sequence[str],
               new: Sequence[str]) -> dict[str, Tensor]:
    """A policy state dict whose heads were ``old``'s, with them moved to ``new``'s classes (a new
    class takes ``fresh``'s head: this trainer's own weights)."""
    return {k: _moved(v, fresh[k], old, new) if k in HEAD_PARAMETERS else v for k, v in weights.items()}


def move_adam_heads(state: Mapping[str, Any], names: Sequence[str], old: Sequence[str],
                    new: Sequence[str]) -> dict[str, Any]:
    """Adam's state dict with the head parameters' moments moved likewise (a new head's are zero).
    ``names``: the policy's parameter names in the optimizer's order (``named_parameters``)."""
    per_param = {}
    for index, param_state in state["state"].items():
        name = names[int(index)]
        if name in HEAD_PARAMETERS:
            param_state = {k: _moved(v, torch.zeros((len(new), *v.shape[1:]), dtype=v.dtype), old, new)
                           if k in ("exp_avg", "exp_avg_sq") else v for k, v in param_state.items()}
        per_param[index] = param_state
    return {"state": per_param, "param_groups": state["param_groups"]}


def adapt_checkpoint(payload: Mapping[str, Any], old: Sequence[str], new: Sequence[str],
                     fresh: Mapping[str, Tensor], names: Sequence[str]) -> dict[str, Any]:
    """The checkpoint ``payload`` (heads of ``old``) with its policy, optimizer and magnet moved to
    ``new``'s classes, and its policy spec this trainer's head count; logged."""
    added = [c for c in new if c not in old]
    dropped = [c for c in old if c not in new]
    logger.warning("the checkpoint's critic has a head per opponent class of its time (%d); this trainer's "
                   "has %d: heads moved by class, new %s start fresh%s", len(old), len(new),
                   added or "none", f", {dropped} dropped" if dropped else "")
    out = dict(payload)
    out["policy"] = move_heads(payload["policy"], fresh, old, new)
    out["optimizer"] = move_adam_heads(payload["optimizer"], names, old, new)
    if "magnet" in payload:
        out["magnet"] = move_heads(payload["magnet"], fresh, old, new)
    out["policy_spec"] = {**payload["policy_spec"], "value_heads": len(new)}
    out["value_classes"] = list(new)
    return out
