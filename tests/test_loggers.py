"""Metric loggers: the JSONL file always, W&B offline without an API key, TensorBoard event files."""

from __future__ import annotations

import ipaddress
import json
import socket

import numpy as np
import pytest

from arena.trainer.loggers import (
    JsonlLogger,
    Logger,
    MultiLogger,
    NoneLogger,
    make_logger,
    resolve_wandb_mode,
    wandb_has_credentials,
)

METRICS = {"SPS": 12345.0, "policy_loss": -0.01, "win_rate/bot": np.float32(0.75), "entropy": 3}


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def no_wandb_login(tmp_path, monkeypatch):
    """A machine with no W&B key, no netrc and W&B's own folders kept inside tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("WANDB_API_KEY", "WANDB_MODE", "NETRC", "WANDB_BASE_URL", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home / "wandb-config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(home / "wandb-cache"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(home / "wandb-data"))
    return home


@pytest.fixture
def no_internet(monkeypatch):
    """Any connection from this process to a non-loopback address fails the test."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = host == "localhost"
            if not loopback:
                raise AssertionError(f"network access to {address!r} during a test")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


# ---------------------------------------------------------------------- JSONL


def test_jsonl_lines_parse_and_hold_every_metric_flushed_as_they_are_logged(tmp_path):
    log = JsonlLogger(tmp_path)
    log.log(METRICS, step=100)
    log.log({"SPS": 2.0, "value_loss": float("nan")}, step=200)
    lines = read_jsonl(tmp_path / "metrics.jsonl")  # read before close: flushed per line
    assert [line["step"] for line in lines] == [100, 200]
    for key, value in METRICS.items():
        assert lines[0][key] == pytest.approx(float(value))
    assert lines[1]["value_loss"] is None  # NaN is written as null: strict JSON
    log.close()


def test_jsonl_appends_to_an_existing_file_so_a_resumed_run_keeps_its_history(tmp_path):
    with JsonlLogger(tmp_path) as log:
        log.log({"a": 1.0}, 1)
    with JsonlLogger(tmp_path) as log:
        log.log({"a": 2.0}, 2)
    assert [line["a"] for line in read_jsonl(tmp_path / "metrics.jsonl")] == [1.0, 2.0]


def test_jsonl_records_tables_and_images(tmp_path):
    with JsonlLogger(tmp_path) as log:
        log.log_table("leaderboard", ["player", "rating"], [["learner", np.float64(25.5)], ["bot", 20]], 7)
        log.log_image("payoff", np.zeros((4, 4, 3), np.uint8), 7)
    (table,) = read_jsonl(tmp_path / "tables.jsonl")
    assert table == {"step": 7, "name": "leaderboard", "columns": ["player", "rating"],
                     "rows": [["learner", 25.5], ["bot", 20]]}  # fmt: skip
    (image,) = read_jsonl(tmp_path / "images.jsonl")
    assert np.load(image["path"]).shape == (4, 4, 3)


def test_non_numeric_metrics_fail_naming_the_key(tmp_path):
    with JsonlLogger(tmp_path) as log, pytest.raises(TypeError, match="'opponent'"):
        log.log({"opponent": "bot"}, 1)


# ---------------------------------------------------------------------- make_logger


def test_make_logger_always_includes_the_jsonl_logger(tmp_path):
    log = make_logger("none", tmp_path)
    assert isinstance(log, MultiLogger)
    assert [type(each) for each in log.loggers] == [JsonlLogger]
    log.log({"a": 1.0}, 1)
    log.close()
    assert read_jsonl(tmp_path / "metrics.jsonl")[0]["a"] == 1.0


def test_make_logger_rejects_unknown_kinds_and_options_listing_the_allowed_ones(tmp_path):
    with pytest.raises(ValueError, match="allowed: none, wandb, tensorboard"):
        make_logger("mlflow", tmp_path)
    with pytest.raises(ValueError, match=r"does not take projet; accepted: project, entity"):
        make_logger("wandb", tmp_path, projet="x")


def test_none_logger_accepts_everything_and_writes_nothing(tmp_path):
    log: Logger = NoneLogger()
    log.log({"a": 1.0}, 1)
    log.log_table("t", ["a"], [[1]], 1)
    log.log_image("i", np.zeros((2, 2)), 1)
    log.close()
    assert list(tmp_path.iterdir()) == []


def test_multi_logger_closes_every_logger_even_when_one_fails(tmp_path):
    class Broken(Logger):
        def close(self) -> None:
            raise OSError("disk full")

    jsonl = JsonlLogger(tmp_path)
    with pytest.raises(OSError, match="disk full"):
        MultiLogger([Broken(), jsonl]).close()
    with pytest.raises(RuntimeError, match="closed"):
        jsonl.log({"a": 1.0}, 1)


# ---------------------------------------------------------------------- W&B


def test_wandb_mode_is_offline_without_a_key_or_netrc_login(no_wandb_login):
    assert not wandb_has_credentials()
    assert resolve_wandb_mode(None) == "offline"
    assert resolve_wandb_mode("online") == "offline"  # never prompts for a login
    assert resolve_wandb_mode("disabled") == "disabled"


def test_wandb_mode_is_online_with_a_key_or_a_netrc_login(no_wandb_login):
    assert resolve_wandb_mode(None, {"WANDB_API_KEY": "x" * 40}) == "online"
    netrc_file = no_wandb_login / ".netrc"
    netrc_file.write_text("machine api.wandb.ai\n  login user\n  password " + "x" * 40 + "\n")
    netrc_file.chmod(0o600)
    assert resolve_wandb_mode(None) == "online"
    assert resolve_wandb_mode(None, {"WANDB_MODE": "offline"}) == "offline"


def test_wandb_without_a_key_writes_an_offline_run_under_run_dir(tmp_path, no_wandb_login, no_internet):
    run_dir = tmp_path / "run"
    log = make_logger(
        "wandb", run_dir, project="arena-test", name="t", tags=["test"], config={"lr": 3e-4},
        settings={"x_disable_stats": True},
    )  # fmt: skip
    wandb_logger = log.loggers[1]
    assert wandb_logger.mode == "offline"
    log.log(METRICS, step=10)
    log.log_table("leaderboard", ["player", "rating"], [["learner", 25.0]], step=10)
    log.log_image("payoff", np.random.default_rng(0).random((8, 8, 3)), step=10)
    log.close()
    (run_folder,) = (run_dir / "wandb").glob("offline-run-*")
    assert wandb_logger.run_path == run_folder
    assert list(run_folder.glob("run-*.wandb")), "the offline run's data file"
    assert read_jsonl(run_dir / "metrics.jsonl")[0]["SPS"] == 12345.0


# ---------------------------------------------------------------------- TensorBoard


def test_tensorboard_writes_an_event_file_with_scalars_tables_and_images(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    log = make_logger("tensorboard", tmp_path)
    log.log(METRICS, step=5)
    log.log_table("leaderboard", ["player", "rating"], [["learner", 25.0]], step=5)
    log.log_image("payoff", np.zeros((4, 4)), step=5)
    log.close()
    (event_file,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    events = EventAccumulator(str(event_file.parent))
    events.Reload()
    assert {"SPS", "policy_loss", "win_rate/bot", "entropy"} <= set(events.Tags()["scalars"])
    assert events.Scalars("SPS")[0].step == 5
    assert "payoff" in events.Tags()["images"]
