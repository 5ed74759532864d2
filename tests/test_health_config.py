"""Health thresholds from the run config, and the Stable-Baselines3 metric names beside arena's own."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from arena.config import compose_run_config
from arena.trainer.telemetry.health import HealthConfig, HealthKind, HealthMonitor, check_health, find_metric
from arena.trainer.telemetry.metric_names import SB3_NAMES, sb3_metrics

HEALTHY = {
    "policy_loss": -0.012,
    "value_loss": 0.31,
    "entropy": 3.2,
    "approx_kl": 0.01,
    "clipfrac": 0.1,
    "explained_variance": 0.8,
    "loss": 0.2,
}


def kinds(warnings):
    return {w.kind for w in warnings}


def sb3_only(metrics):
    """The same update under SB3's names only (no arena name left)."""
    return sb3_metrics(metrics)


# ---------------------------------------------------------------------- SB3 names


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"approx_kl": 0.08}, HealthKind.HIGH_APPROX_KL),
        ({"clipfrac": 0.6}, HealthKind.HIGH_CLIPFRAC),
        ({"explained_variance": 0.2}, HealthKind.LOW_EXPLAINED_VARIANCE),
        ({"explained_variance": -0.4}, HealthKind.NEGATIVE_EXPLAINED_VARIANCE),
        ({"value_loss": math.nan}, HealthKind.NAN_LOSS),
        ({"loss": math.inf}, HealthKind.NAN_LOSS),
    ],
)
def test_health_checks_read_the_sb3_names_as_they_read_arena_names(change, kind):
    metrics = sb3_only(HEALTHY | change)
    assert not set(HEALTHY) & set(metrics)
    assert kinds(check_health(metrics, progress=0.5, initial_entropy=3.2)) == {kind}
    assert check_health(sb3_only(HEALTHY), progress=0.5, initial_entropy=3.2) == []


def test_the_entropy_is_minus_sb3s_entropy_loss_and_collapses_alike():
    monitor = HealthMonitor()
    monitor.update(sb3_only(HEALTHY | {"entropy": 4.0}), progress=0.0)
    assert monitor.initial_entropy == 4.0
    warnings = monitor.update(sb3_only(HEALTHY | {"entropy": 0.9}), progress=0.05)
    assert kinds(warnings) == {HealthKind.ENTROPY_COLLAPSE}


def test_sb3_values_convert_back_with_their_factor_never_as_a_path_suffix():
    metrics = {"train/value_loss": 0.62, "train/entropy_loss": -3.0, "train/loss": 0.5}
    assert find_metric(metrics, "value_loss") == pytest.approx(0.31)  # SB3's is the plain MSE
    assert find_metric(metrics, "entropy") == 3.0
    assert find_metric(metrics, "loss") == 0.5
    assert find_metric({"losses/value_loss": 0.2, "train/value_loss": 9.0}, "value_loss") == 0.2
    assert find_metric({"approx_kl": 0.01, "train/approx_kl": 0.5}, "approx_kl") == 0.01  # arena's first


def test_every_sb3_name_is_derived_from_the_arena_metric_it_names():
    metrics = {arena: float(i + 1) for i, (arena, _) in enumerate(SB3_NAMES.values())}
    named = sb3_metrics(metrics)
    assert set(named) == set(SB3_NAMES)
    assert named["train/entropy_loss"] == -metrics["entropy"]
    assert named["train/value_loss"] == 2 * metrics["value_loss"]
    assert named["time/fps"] == metrics["SPS"] and named["rollout/ep_rew_mean"] == metrics["episode_return"]
    assert sb3_metrics({"SPS": 5.0}) == {"time/fps": 5.0}  # only what is there


# ---------------------------------------------------------------------- thresholds from the config


def test_health_thresholds_from_the_run_config_change_what_fires():
    update = HEALTHY | {"approx_kl": 0.08, "clipfrac": 0.2}
    default = HealthMonitor.from_config(compose_run_config([]).health)
    assert kinds(default.update(update, progress=0.5)) == {HealthKind.HIGH_APPROX_KL}
    cfg = compose_run_config(
        ["health.max_approx_kl=0.1", "health.max_clipfrac=0.15", "health.every_updates=7"])
    tuned = HealthMonitor.from_config(cfg.health)
    assert kinds(tuned.update(update, progress=0.5)) == {HealthKind.HIGH_CLIPFRAC}
    assert tuned.every_updates == 7 and tuned.thresholds.max_approx_kl == 0.1


def test_the_default_health_config_is_the_default_thresholds():
    monitor = HealthMonitor.from_config(compose_run_config([]).health)
    assert monitor.thresholds == HealthMonitor().thresholds and monitor.every_updates == 100
    assert HealthMonitor.from_config(None).thresholds == HealthConfig().thresholds()


def test_an_unknown_health_key_is_refused_naming_the_valid_ones():
    expected = r"unknown config key 'health.max_kl'.*valid keys there: .*max_approx_kl"
    with pytest.raises(ValueError, match=expected):
        compose_run_config(["health.max_kl=0.1"])
    with pytest.raises(ValueError, match=r"health has no 'max_kl'; valid keys: max_approx_kl"):
        HealthMonitor.from_config({"max_kl": 0.1})


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("health.entropy_collapse_ratio=1.5", r"health.entropy_collapse_ratio=1.5 must be between 0 and 1"),
        ("health.every_updates=0", r"health.every_updates=0 must be an integer >= 1"),
        ("health.max_approx_kl=nan", r"health.max_approx_kl=nan must be a finite number"),
    ],
)
def test_a_bad_health_value_is_refused_naming_it(override, message):
    with pytest.raises(ValueError, match=message):
        HealthMonitor.from_config(compose_run_config([override]).health)


# ---------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("sb3_names")
    run_dir = tmp / "run"
    argv = [sys.executable, "-m", "arena.train", "env=rpsw", "trainer=quick", "dashboard=false",
            "trainer.total_timesteps=2000", "trainer.num_envs=32", "trainer.num_threads=1",
            "trainer.torch_threads=1", "logger=none", f"run_dir={run_dir}"]
    done = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_sb3_names_are_in_metrics_jsonl_beside_arena_names(tiny_run):
    last = tiny_run[-1]
    for name in ("train/approx_kl", "train/clip_fraction", "train/explained_variance", "train/entropy_loss",
                 "rollout/ep_rew_mean", "time/fps"):
        assert name in last, name
    assert last["train/approx_kl"] == last["approx_kl"]
    assert last["train/clip_fraction"] == last["clipfrac"]
    assert last["train/explained_variance"] == last["explained_variance"]
    assert last["train/entropy_loss"] == -last["entropy"] < 0
    assert last["train/value_loss"] == pytest.approx(2 * last["value_loss"])
    assert last["rollout/ep_rew_mean"] == last["episode_return"]
    assert last["time/fps"] == last["SPS"] > 0


def test_a_health_threshold_set_on_the_command_line_reaches_the_run(tmp_path):
    run_dir = tmp_path / "run"
    argv = [sys.executable, "-m", "arena.train", "env=rpsw", "trainer=quick", "dashboard=false",
            "trainer.total_timesteps=2000", "trainer.num_envs=32", "trainer.num_threads=1",
            "trainer.torch_threads=1", "logger=none", f"run_dir={run_dir}",
            "health.min_explained_variance=1.0", "health.every_updates=1"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    updates = [line for line in lines if line.get("explained_variance") is not None]
    assert updates, "no update was logged"
    # explained variance is always below 1: with the threshold at 1 a warning fires at every update
    fired = [line.get("health/low_explained_variance", 0.0)
             + line.get("health/negative_explained_variance", 0.0) for line in updates]
    assert all(f >= 1.0 for f in fired), fired
