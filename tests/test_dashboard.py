"""The training dashboard (plain lines off a terminal, a rich view on one) and the health checks it shows."""

from __future__ import annotations

import io
import logging
import math

import pytest
from rich.console import Console

from arena.trainer.telemetry.dashboard import Dashboard
from arena.trainer.telemetry.health import (
    HealthKind,
    HealthMonitor,
    HealthThresholds,
    check_health,
    health_metrics,
)

HEALTHY = {
    "policy_loss": -0.012,
    "value_loss": 0.31,
    "entropy": 3.2,
    "approx_kl": 0.01,
    "clipfrac": 0.1,
    "explained_variance": 0.8,
}
METRICS = {
    "SPS": 45678.0,
    "episode_return": 0.52,
    "episode_length": 310.0,
    "win_rate/scripted_ace": 0.61,
    "draw_rate/scripted_ace": 0.09,
    "loss_rate/scripted_ace": 0.30,
    "win_rate/snapshot_7": 0.45,
    "draw_rate/snapshot_7": 0.10,
    "loss_rate/snapshot_7": 0.45,
    **HEALTHY,
    "learning_rate": 3e-4,
    "time/sim": 1.5,
    "time/inference": 1.0,
    "time/learn": 2.0,
    "time/other": 0.5,
    "league/rating": 27.25,
    "league/mix/snapshot_7": 0.7,
    "league/mix/scripted_ace": 0.3,
}


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def kinds(warnings):
    return {w.kind for w in warnings}


# ---------------------------------------------------------------------- dashboard


def test_off_a_terminal_each_update_is_one_plain_line_with_sps_and_win_rates():
    stream = io.StringIO()
    with Dashboard(total_steps=1_000_000, stream=stream) as dashboard:
        dashboard.update(METRICS, step=250_000)
        dashboard.update(METRICS | {"SPS": 50000.0}, step=500_000)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "step 250,000/1,000,000 (25.0%)" in lines[0]
    assert "SPS 45,678" in lines[0]
    assert "vs scripted_ace W/D/L 0.61/0.09/0.30" in lines[0]
    assert "vs snapshot_7 W/D/L 0.45/0.10/0.45" in lines[0]
    assert "ETA 0:00:10" in lines[1]  # 500k steps left at 50k SPS
    assert "rating 27.2" in lines[0] and "mix snapshot_7 70%" in lines[0]
    assert "\x1b[" not in stream.getvalue()  # no terminal escape codes in logs


def test_sps_is_measured_from_steps_when_the_trainer_does_not_report_it(monkeypatch):
    clock = iter([0.0, 10.0, 12.0])
    monkeypatch.setattr("arena.trainer.telemetry.dashboard.time.perf_counter", lambda: next(clock))
    stream = io.StringIO()
    dashboard = Dashboard(total_steps=100_000, stream=stream)
    dashboard.update({}, step=1000)
    dashboard.update({}, step=5000)
    assert dashboard.sps == pytest.approx(2000.0)
    assert "SPS 2,000" in stream.getvalue().splitlines()[-1]


def test_health_warnings_appear_in_plain_lines():
    stream = io.StringIO()
    warnings = check_health(HEALTHY | {"approx_kl": 0.2}, progress=0.5, initial_entropy=3.2)
    Dashboard(total_steps=10, stream=stream).update(METRICS, step=5, warnings=warnings)
    assert "HEALTH high_approx_kl" in stream.getvalue()


def test_a_disabled_dashboard_writes_nothing():
    stream = FakeTerminal()
    with Dashboard(total_steps=10, enabled=False, stream=stream) as dashboard:
        dashboard.update(METRICS, step=5)
    assert stream.getvalue() == ""


def test_the_rich_view_shows_the_key_numbers_and_highlights_health_warnings():
    dashboard = Dashboard(total_steps=1_000_000, stream=io.StringIO())
    warnings = check_health(HEALTHY | {"approx_kl": 0.09}, progress=0.5, initial_entropy=3.2)
    dashboard.update(METRICS | {"approx_kl": 0.09}, step=250_000, warnings=warnings)
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=160).print(dashboard.renderable())
    plain = Console(file=io.StringIO(), width=160)
    with plain.capture() as capture:
        plain.print(dashboard.renderable())
    text = capture.get()
    for expected in ("250,000 / 1,000,000", "45,678", "scripted_ace", "0.61", "0.09", "0.30",
                     "snapshot_7", "policy_loss", "-0.012", "explained_variance", "0.8", "3.00e-04",
                     "sim", "learn", "40%", "27.25", "70%", "high_approx_kl", "0.52", "310"):  # fmt: skip
        assert expected in text, expected
    assert "\x1b[1;31m" in out.getvalue()  # the flagged value is drawn bold red


def test_on_a_terminal_the_live_view_draws_into_the_stream():
    stream = FakeTerminal()
    with Dashboard(total_steps=1000, stream=stream, refresh_per_second=50) as dashboard:
        assert dashboard.live_mode
        dashboard.update(METRICS, step=500)
    assert "45,678" in stream.getvalue()
    assert "scripted_ace" in stream.getvalue()


def test_the_rich_view_builds_before_any_update_and_with_partial_metrics():
    dashboard = Dashboard(total_steps=100, stream=io.StringIO())
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    console.print(dashboard.renderable())
    dashboard.update({"episode_return": float("nan")}, step=1)
    console.print(dashboard.renderable())


# ---------------------------------------------------------------------- health


def test_healthy_metrics_raise_no_warning():
    assert check_health(HEALTHY, progress=0.1, initial_entropy=3.3) == []


@pytest.mark.parametrize(
    ("change", "kind"),
    [
        ({"approx_kl": 0.051}, HealthKind.HIGH_APPROX_KL),
        ({"clipfrac": 0.6}, HealthKind.HIGH_CLIPFRAC),
        ({"explained_variance": 0.2}, HealthKind.LOW_EXPLAINED_VARIANCE),
        ({"explained_variance": -0.4}, HealthKind.NEGATIVE_EXPLAINED_VARIANCE),
        ({"value_loss": math.nan}, HealthKind.NAN_LOSS),
        ({"policy_loss": math.inf}, HealthKind.NAN_LOSS),
    ],
)
def test_each_warning_sign_raises_its_own_kind(change, kind):
    warnings = check_health(HEALTHY | change, progress=0.5, initial_entropy=3.2)
    assert kinds(warnings) == {kind}
    assert warnings[0].message


def test_negative_explained_variance_is_not_also_reported_as_low():
    warnings = check_health(HEALTHY | {"explained_variance": -0.1}, progress=0.5, initial_entropy=3.2)
    assert kinds(warnings) == {HealthKind.NEGATIVE_EXPLAINED_VARIANCE}


def test_entropy_collapse_is_flagged_only_early_in_training():
    collapsed = HEALTHY | {"entropy": 0.5}  # below 25% of the initial 3.2
    assert kinds(check_health(collapsed, progress=0.1, initial_entropy=3.2)) == {HealthKind.ENTROPY_COLLAPSE}
    assert check_health(collapsed, progress=0.6, initial_entropy=3.2) == []  # late: converging is fine
    assert check_health(collapsed, progress=0.1, initial_entropy=None) == []
    loose = HealthThresholds(entropy_collapse_ratio=0.1)
    assert check_health(collapsed, progress=0.1, initial_entropy=3.2, thresholds=loose) == []


def test_metric_names_with_a_path_prefix_are_recognised():
    warnings = check_health({"losses/approx_kl": 0.3}, progress=0.5, initial_entropy=None)
    assert kinds(warnings) == {HealthKind.HIGH_APPROX_KL}


def test_the_monitor_logs_each_kind_once_per_window_of_updates(caplog):
    monitor = HealthMonitor(every_updates=10)
    bad = HEALTHY | {"approx_kl": 0.2}
    with caplog.at_level(logging.WARNING, logger="arena.trainer.telemetry.health"):
        for _ in range(25):
            assert kinds(monitor.update(bad, progress=0.5)) == {HealthKind.HIGH_APPROX_KL}
    logged = [r for r in caplog.records if "approx_kl" in r.getMessage()]
    assert len(logged) == 3  # updates 1, 11 and 21


def test_the_monitor_takes_the_first_entropy_as_reference_and_resumes_it():
    monitor = HealthMonitor()
    monitor.update(HEALTHY | {"entropy": 4.0}, progress=0.0)
    restored = HealthMonitor()
    restored.load_state_dict(monitor.state_dict())
    warnings = restored.update(HEALTHY | {"entropy": 0.9}, progress=0.05)
    assert kinds(warnings) == {HealthKind.ENTROPY_COLLAPSE}
    assert health_metrics(warnings)["health/entropy_collapse"] == 1.0
    assert health_metrics(warnings)["health/high_approx_kl"] == 0.0
