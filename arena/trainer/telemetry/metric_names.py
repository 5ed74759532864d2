"""Stable-Baselines3's names for the trainer's metrics, logged beside arena's own names.

A dashboard or a script written for SB3 runs (``train/approx_kl``, ``rollout/ep_rew_mean``, ...) reads
an arena run unchanged, and the health checks accept either name (``arena_value``). Each SB3 name is
``factor * <arena metric>``:

============================  ======================  ======  ==========================================
SB3 name                      arena name              factor  note
============================  ======================  ======  ==========================================
train/approx_kl               approx_kl               1       the same estimator, mean((r - 1) - log r)
train/clip_fraction           clipfrac                1       share of samples outside the clip range
train/explained_variance      explained_variance      1
train/entropy_loss            entropy                 -1      SB3 logs minus the mean entropy
train/policy_gradient_loss    policy_loss             1       the clipped surrogate loss
train/value_loss              value_loss              2       SB3: mean squared error; arena: half of it
train/loss                    loss                    1       the total loss the optimiser minimised
train/learning_rate           learning_rate           1
rollout/ep_rew_mean           episode_return          1       arena: episodes ended since the last log;
                                                              SB3: the last 100 episodes
rollout/ep_len_mean           episode_length          1       (same window difference)
time/fps                      SPS                     1       arena: since the last log; SB3: since start
============================  ======================  ======  ==========================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# SB3 name -> (arena name, factor): the SB3 value is factor * the arena value.
SB3_NAMES: dict[str, tuple[str, float]] = {
    "train/approx_kl": ("approx_kl", 1.0),
    "train/clip_fraction": ("clipfrac", 1.0),
    "train/explained_variance": ("explained_variance", 1.0),
    "train/entropy_loss": ("entropy", -1.0),
    "train/policy_gradient_loss": ("policy_loss", 1.0),
    "train/value_loss": ("value_loss", 2.0),
    "train/loss": ("loss", 1.0),
    "train/learning_rate": ("learning_rate", 1.0),
    "rollout/ep_rew_mean": ("episode_return", 1.0),
    "rollout/ep_len_mean": ("episode_length", 1.0),
    "time/fps": ("SPS", 1.0),
}
ARENA_TO_SB3: dict[str, tuple[str, float]] = {arena: (sb3, f) for sb3, (arena, f) in SB3_NAMES.items()}


def sb3_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The SB3-named copies of the arena metrics present in ``metrics`` (exact arena names only)."""
    return {sb3: factor * float(metrics[arena]) for sb3, (arena, factor) in SB3_NAMES.items()
            if arena in metrics}


def arena_value(metrics: Mapping[str, Any], name: str) -> float | None:
    """The value of arena metric ``name``: ``metrics[name]``, else a key ending in ``/name`` (e.g.
    ``losses/approx_kl``), else its SB3 name converted back (``-train/entropy_loss`` for ``entropy``);
    None when none is there."""
    if name in metrics:
        return float(metrics[name])
    suffix = "/" + name
    for key, value in metrics.items():
        if key.endswith(suffix) and key not in SB3_NAMES:
            return float(value)
    if name in ARENA_TO_SB3:
        sb3, factor = ARENA_TO_SB3[name]
        if sb3 in metrics:
            return float(metrics[sb3]) / factor
    return None
