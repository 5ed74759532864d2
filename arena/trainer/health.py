"""Training health: the PPO warning signs practitioners look for in the update metrics.

Rules (thresholds in ``HealthThresholds``):
- ``nan_loss``: any of policy_loss, value_loss, entropy, approx_kl, loss is NaN or inf.
- ``high_approx_kl``: approx_kl > 0.05, the policy moved too far in one update.
- ``high_clipfrac``: clipfrac > 0.5, most samples hit the clip range.
- ``negative_explained_variance``: explained_variance < 0, the value function predicts the returns
  worse than their mean would; ``low_explained_variance``: 0 <= explained_variance < 0.3 (normal in
  the first updates, a problem if it lasts).
- ``entropy_collapse``: while training progress is below ``entropy_collapse_window`` (25%), the
  entropy fell below ``entropy_collapse_ratio`` (25%) of its value at the first update: the policy
  became nearly deterministic before it had time to learn.

Metric names are matched exactly or as the last part of a path (``losses/approx_kl``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

logger = logging.getLogger(__name__)

LOSS_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "loss")


class HealthKind(StrEnum):
    NAN_LOSS = "nan_loss"
    HIGH_APPROX_KL = "high_approx_kl"
    HIGH_CLIPFRAC = "high_clipfrac"
    NEGATIVE_EXPLAINED_VARIANCE = "negative_explained_variance"
    LOW_EXPLAINED_VARIANCE = "low_explained_variance"
    ENTROPY_COLLAPSE = "entropy_collapse"


@dataclass(frozen=True)
class HealthThresholds:
    max_approx_kl: float = 0.05
    max_clipfrac: float = 0.5
    min_explained_variance: float = 0.3
    entropy_collapse_ratio: float = 0.25  # entropy below this fraction of its initial value ...
    entropy_collapse_window: float = 0.25  # ... before this fraction of training is a collapse


@dataclass(frozen=True)
class HealthWarning:
    kind: HealthKind
    message: str
    value: float
    threshold: float


def find_metric(metrics: Mapping[str, Any], name: str) -> float | None:
    """``metrics[name]``, else the value of a key ending in ``/name``; None when absent."""
    if name in metrics:
        return float(metrics[name])
    suffix = "/" + name
    for key, value in metrics.items():
        if key.endswith(suffix):
            return float(value)
    return None


def check_health(
    metrics: Mapping[str, Any],
    progress: float,
    initial_entropy: float | None,
    thresholds: HealthThresholds | None = None,
) -> list[HealthWarning]:
    """The health warnings of one update's metrics; ``progress`` is the fraction of training done."""
    t = thresholds or HealthThresholds()
    found = {key: find_metric(metrics, key) for key in (*LOSS_KEYS, "clipfrac", "explained_variance")}
    warnings: list[HealthWarning] = []

    bad = [key for key in LOSS_KEYS if found[key] is not None and not math.isfinite(found[key])]
    if bad:
        values = ", ".join(f"{key}={found[key]}" for key in bad)
        warnings.append(
            HealthWarning(
                HealthKind.NAN_LOSS,
                f"non-finite losses ({values}): training has diverged; lower the learning rate, check "
                "rewards and observations for NaN/inf",
                math.nan,
                math.nan,
            )
        )

    kl = found["approx_kl"]
    if kl is not None and kl > t.max_approx_kl:
        warnings.append(
            HealthWarning(
                HealthKind.HIGH_APPROX_KL,
                f"approx_kl {kl:.3g} > {t.max_approx_kl:g}: updates move the policy too far; lower the "
                "learning rate or update epochs, or set a target_kl",
                kl,
                t.max_approx_kl,
            )
        )

    clipfrac = found["clipfrac"]
    if clipfrac is not None and clipfrac > t.max_clipfrac:
        warnings.append(
            HealthWarning(
                HealthKind.HIGH_CLIPFRAC,
                f"clipfrac {clipfrac:.2f} > {t.max_clipfrac:g}: most samples hit the clip range; "
                "updates are too large",
                clipfrac,
                t.max_clipfrac,
            )
        )

    ev = found["explained_variance"]
    if ev is not None and ev < 0:
        warnings.append(
            HealthWarning(
                HealthKind.NEGATIVE_EXPLAINED_VARIANCE,
                f"explained_variance {ev:.2f} < 0: the value function predicts returns worse than their "
                "mean; check reward scale and the value loss",
                ev,
                0.0,
            )
        )
    elif ev is not None and ev < t.min_explained_variance:
        warnings.append(
            HealthWarning(
                HealthKind.LOW_EXPLAINED_VARIANCE,
                f"explained_variance {ev:.2f} < {t.min_explained_variance:g}: the value function explains "
                "little of the returns (normal only in the first updates)",
                ev,
                t.min_explained_variance,
            )
        )

    entropy = found["entropy"]
    if (
        entropy is not None
        and initial_entropy is not None
        and math.isfinite(entropy)
        and math.isfinite(initial_entropy)
        and initial_entropy > 0
        and progress < t.entropy_collapse_window
        and entropy < t.entropy_collapse_ratio * initial_entropy
    ):
        warnings.append(
            HealthWarning(
                HealthKind.ENTROPY_COLLAPSE,
                f"entropy {entropy:.3g} fell below {t.entropy_collapse_ratio:.0%} of its initial "
                f"{initial_entropy:.3g} at {progress:.0%} of training: the policy turned deterministic "
                "early; raise the entropy coefficient or lower the learning rate",
                entropy,
                t.entropy_collapse_ratio * initial_entropy,
            )
        )
    return warnings


class HealthMonitor:
    """Checks every update and logs each kind of warning at most once per ``every_updates`` updates.

    The entropy of the first update with a finite entropy is the reference for collapse; keep it
    across a resume with ``state_dict``/``load_state_dict``.
    """

    def __init__(
        self,
        thresholds: HealthThresholds | None = None,
        every_updates: int = 100,
        log: logging.Logger | None = None,
    ) -> None:
        if every_updates < 1:
            raise ValueError(f"every_updates must be >= 1, got {every_updates}")
        self.thresholds = thresholds or HealthThresholds()
        self.every_updates = every_updates
        self.log = log or logger
        self.initial_entropy: float | None = None
        self.updates = 0
        self._last_logged: dict[HealthKind, int] = {}

    def update(self, metrics: Mapping[str, Any], progress: float) -> list[HealthWarning]:
        """This update's warnings (all of them, for the dashboard); logs the ones not logged lately."""
        self.updates += 1
        if self.initial_entropy is None:
            entropy = find_metric(metrics, "entropy")
            if entropy is not None and math.isfinite(entropy):
                self.initial_entropy = entropy
        warnings = check_health(metrics, progress, self.initial_entropy, self.thresholds)
        for warning in warnings:
            last = self._last_logged.get(warning.kind)
            if last is None or self.updates - last >= self.every_updates:
                self._last_logged[warning.kind] = self.updates
                self.log.warning("training health: %s", warning.message)
        return warnings

    def state_dict(self) -> dict[str, Any]:
        return {"initial_entropy": self.initial_entropy, "updates": self.updates}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.initial_entropy = state["initial_entropy"]
        self.updates = int(state["updates"])


def health_metrics(warnings: list[HealthWarning]) -> dict[str, float]:
    """``health/<kind>``: 1.0 for each kind raised this update, 0.0 otherwise (for the loggers)."""
    raised = {w.kind for w in warnings}
    return {f"health/{kind.value}": float(kind in raised) for kind in HealthKind}
