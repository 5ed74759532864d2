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

Metric names are matched exactly, as the last part of a path (``losses/approx_kl``) or by their
Stable-Baselines3 name (``train/approx_kl``, ``train/clip_fraction``, ``train/entropy_loss`` (minus
the entropy), ...; see ``arena.trainer.telemetry.metric_names``).

The thresholds and the logging interval are set in the run config's ``health`` block
(``HealthConfig``), e.g. ``python -m arena.train health.max_approx_kl=0.1 health.every_updates=20``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from arena.trainer.telemetry.metric_names import arena_value

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


@dataclass
class HealthConfig:
    """The ``health`` block of the run config: the thresholds of ``HealthThresholds`` and how often a
    warning of each kind is logged (every ``every_updates`` updates at most; the dashboard and the
    ``health/<kind>`` metrics show every update's warnings)."""

    max_approx_kl: float = HealthThresholds.max_approx_kl
    max_clipfrac: float = HealthThresholds.max_clipfrac
    min_explained_variance: float = HealthThresholds.min_explained_variance
    entropy_collapse_ratio: float = HealthThresholds.entropy_collapse_ratio
    entropy_collapse_window: float = HealthThresholds.entropy_collapse_window
    every_updates: int = 100

    def validate(self) -> HealthConfig:
        """Itself, or a ValueError naming the bad value and what is allowed."""
        for f in fields(HealthThresholds):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"health.{f.name}={value!r} must be a finite number")
        for name in ("entropy_collapse_ratio", "entropy_collapse_window"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"health.{name}={getattr(self, name)!r} must be between 0 and 1")
        if isinstance(self.every_updates, bool) or not isinstance(self.every_updates, int) \
                or self.every_updates < 1:
            raise ValueError(f"health.every_updates={self.every_updates!r} must be an integer >= 1")
        return self

    def thresholds(self) -> HealthThresholds:
        return HealthThresholds(**{f.name: float(getattr(self, f.name)) for f in fields(HealthThresholds)})


@dataclass(frozen=True)
class HealthWarning:
    kind: HealthKind
    message: str
    value: float
    threshold: float


def find_metric(metrics: Mapping[str, Any], name: str) -> float | None:
    """``metrics[name]``, else the value of a key ending in ``/name``, else the value under its SB3 name
    (``train/clip_fraction`` for ``clipfrac``, minus ``train/entropy_loss`` for ``entropy``); None when
    absent."""
    return arena_value(metrics, name)


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

    @classmethod
    def from_config(cls, config: HealthConfig | Mapping[str, Any] | None = None,
                    log: logging.Logger | None = None) -> HealthMonitor:
        """A monitor with the thresholds of the run config's ``health`` block (a ``HealthConfig``, a
        mapping or an OmegaConf node of its keys; None: the defaults). Unknown keys are an error."""
        if config is None:
            config = HealthConfig()
        elif not isinstance(config, HealthConfig):
            values = _plain(config)
            allowed = [f.name for f in fields(HealthConfig)]
            unknown = sorted(set(values) - set(allowed))
            if unknown:
                names = ", ".join(map(repr, unknown))
                raise ValueError(f"health has no {names}; valid keys: {', '.join(allowed)}")
            config = HealthConfig(**values)
        config.validate()
        return cls(config.thresholds(), every_updates=config.every_updates, log=log)

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


def _plain(config: Any) -> dict[str, Any]:
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover - hydra brings omegaconf
        return dict(config)
    return dict(OmegaConf.to_container(config, resolve=True)) if OmegaConf.is_config(config) else dict(config)


def health_metrics(warnings: list[HealthWarning]) -> dict[str, float]:
    """``health/<kind>``: 1.0 for each kind raised this update, 0.0 otherwise (for the loggers)."""
    raised = {w.kind for w in warnings}
    return {f"health/{kind.value}": float(kind in raised) for kind in HealthKind}
