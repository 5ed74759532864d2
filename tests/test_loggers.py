"""Metric loggers: the JSONL file always, W&B offline without an API key, TensorBoard event files."""

from __future__ import annotations

import inspect
import ipaddress
import json
import socket

import numpy as np
import pytest
from wandb_run_reader import isolate_wandb, offline_run

from arena.trainer.telemetry.loggers import (
    JsonlLogger,
    Logger,
    MultiLogger,
    NoneLogger,
    WandbLogger,
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
    isolate_wandb(monkeypatch, home)
    return home


def guard_network(monkeypatch):
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


@pytest.fixture
def no_internet(monkeypatch):
    guard_network(monkeypatch)


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


@pytest.fixture(scope="module")
def wandb_run(tmp_path_factory):
    """One offline W&B run (no key, no netrc, no network) that received every kind of record; read back."""
    tmp = tmp_path_factory.mktemp("wandb")
    with pytest.MonkeyPatch.context() as mp:
        isolate_wandb(mp, tmp / "home")
        guard_network(mp)
        run_dir = tmp / "run"
        gif = tiny_gif(tmp / "replay.gif")
        snapshot = tmp / "learner_snap-000001.pt"
        snapshot.write_bytes(b"frozen weights")
        log = make_logger(
            "wandb", run_dir, project="arena-test", name="t", tags=["test"], config={"lr": 3e-4},
            settings={"x_disable_stats": True}, log_snapshots=True,
        )  # fmt: skip
        wandb_logger = log.loggers[1]
        log.log(METRICS, step=10)
        log.log({"SPS": 2.0, "elo": float("inf")}, step=20)
        log.log_table("league/leaderboard", ["player", "rating"], [["learner", 25.0], ["bot", 20.5]], step=20)
        log.log_image("league/payoff", np.random.default_rng(0).random((8, 8, 3)), step=20)
        log.log_line_series("league/rating_curves", SERIES, step=20, title="ratings", xname="learner step")
        log.log_heatmap("league/payoff_heatmap", PLAYERS, PLAYERS, PAYOFF, step=20, value_name="score")
        log.log_video("replays/match", gif, step=30, caption="learner vs bot")
        log.log_snapshot("learner:snap-000001", snapshot, step=30, metadata={"sha256": "ab" * 32})
        log.close()
    return wandb_logger, run_dir, offline_run(run_dir)


def tiny_gif(path):
    import imageio.v2 as imageio

    imageio.mimsave(path, [np.full((8, 8, 3), 60 * i, np.uint8) for i in range(4)], duration=0.1)
    return path


PLAYERS = ["learner", "bot", "snap"]
PAYOFF = np.array([[0.5, 0.75, np.nan], [0.25, np.nan, 0.4], [np.nan, 0.6, np.nan]])
SERIES = {"learner": ([0.0, 100.0, 200.0], [1.0, 5.5, 9.25]), "bot": ([0.0, 200.0], [3.0, 2.5])}


def test_wandb_without_a_key_writes_an_offline_run_under_run_dir(wandb_run):
    wandb_logger, run_dir, run = wandb_run
    assert wandb_logger.mode == "offline"
    assert wandb_logger.run_path == run.folder and run.folder.parent == run_dir / "wandb"
    assert read_jsonl(run_dir / "metrics.jsonl")[0]["SPS"] == 12345.0  # the JSONL logger beside it
    assert run.config["lr"] == 3e-4


def test_wandb_scalars_are_logged_against_global_step_with_their_values(wandb_run):
    run = wandb_run[2]
    first, second = run.rows_with("SPS")
    assert first["global_step"] == 10 and second["global_step"] == 20
    for key, value in METRICS.items():
        assert first[key] == pytest.approx(float(value))
    assert second["SPS"] == 2.0 and second["elo"] == float("inf")
    assert run.config["_wandb/visualize/league/rating_curves"]  # a chart, not a scalar panel


def test_wandb_tables_hold_the_logged_rows(wandb_run):
    run = wandb_run[2]
    table = run.table("league/leaderboard")
    assert table["columns"] == ["player", "rating"]
    assert table["data"] == [["learner", 25.0], ["bot", 20.5]]
    assert run.values("league/payoff/_type") == ["image-file"]


def test_wandb_line_series_is_one_chart_of_every_series(wandb_run):
    run = wandb_run[2]
    chart = run.config["_wandb/visualize/league/rating_curves"]["panel_config"]
    assert chart["panelDefId"] == "wandb/lineseries/v0"
    assert chart["stringSettings"] == {"title": "ratings", "xname": "learner step"}
    table = run.table("league/rating_curves_table")
    assert table["columns"] == ["step", "lineKey", "lineVal"]
    got: dict[str, list] = {}
    for x, key, y in table["data"]:
        got.setdefault(key, []).append((x, y))
    assert got == {key: list(zip(xs, ys, strict=True)) for key, (xs, ys) in SERIES.items()}


def test_wandb_heatmap_is_a_chart_over_a_table_of_every_cell_with_data(wandb_run):
    run = wandb_run[2]
    chart = run.config["_wandb/visualize/league/payoff_heatmap"]["panel_config"]
    assert chart["panelDefId"] == "wandb/confusion_matrix/v1"
    assert chart["fieldSettings"] == {"Actual": "row", "Predicted": "column", "nPredictions": "score"}
    table = run.table("league/payoff_heatmap_table")
    assert table["columns"] == ["row", "column", "score"]
    expected = [[r, c, PAYOFF[i, j]] for i, r in enumerate(PLAYERS) for j, c in enumerate(PLAYERS)
                if np.isfinite(PAYOFF[i, j])]
    assert table["data"] == expected  # the cells without games are left out, not zeros


def test_wandb_video_is_the_gif_file_as_media(wandb_run):
    run = wandb_run[2]
    (row,) = run.rows_with("replays/match/_type")
    assert row["replays/match/_type"] == "video-file" and row["global_step"] == 30
    assert row["replays/match/caption"] == "learner vs bot"
    stored = run.folder / "files" / row["replays/match/path"]
    assert stored.suffix == ".gif" and stored.read_bytes()[:6] == b"GIF89a"


def test_wandb_snapshot_is_a_model_artifact_when_log_snapshots_is_on(wandb_run):
    run = wandb_run[2]
    (artifact,) = [a for a in run.artifacts if a.type == "model"]
    assert artifact.name == "learner-snap-000001"
    assert set(artifact.aliases) == {"latest", "step-30"}
    metadata = json.loads(artifact.metadata)
    assert metadata == {"player_id": "learner:snap-000001", "step": 30, "sha256": "ab" * 32}
    assert [(c.path, c.size) for c in artifact.manifest.contents] == [("learner_snap-000001.pt", 14)]


def test_a_missing_or_unplayable_video_fails_naming_the_file(tmp_path):
    with JsonlLogger(tmp_path) as log:
        with pytest.raises(FileNotFoundError, match="nope.gif"):
            log.log_video("replay", tmp_path / "nope.gif", 1)
        (tmp_path / "replay.avi").write_bytes(b"x")
        with pytest.raises(ValueError, match=r"replay.avi.*gif, mp4, webm, ogg"):
            log.log_video("replay", tmp_path / "replay.avi", 1)


def test_jsonl_keeps_line_series_heatmaps_and_video_paths(tmp_path):
    gif = tiny_gif(tmp_path / "replay.gif")
    with JsonlLogger(tmp_path) as log:
        log.log_line_series("ratings", SERIES, 5, xname="learner step")
        log.log_heatmap("payoff", PLAYERS, PLAYERS, PAYOFF, 5, value_name="score")
        log.log_video("replay", gif, 6)
    series, heatmap = read_jsonl(tmp_path / "tables.jsonl")
    assert series["columns"] == ["learner step", "series", "y"]
    expected = [[x, key, y] for key, (xs, ys) in SERIES.items() for x, y in zip(xs, ys, strict=True)]
    assert series["rows"] == expected
    assert heatmap["columns"] == ["row", "column", "score"] and len(heatmap["rows"]) == 5
    assert ["learner", "bot", 0.75] in heatmap["rows"]
    (video,) = read_jsonl(tmp_path / "media.jsonl")
    assert video == {"step": 6, "name": "replay", "kind": "video", "path": str(gif)}


def test_a_heatmap_of_the_wrong_shape_or_a_ragged_series_is_refused(tmp_path):
    with JsonlLogger(tmp_path) as log:
        with pytest.raises(ValueError, match=r"shape \(2, 2\), expected \(3, 3\)"):
            log.log_heatmap("payoff", PLAYERS, PLAYERS, np.zeros((2, 2)), 1)
        with pytest.raises(ValueError, match="series 'a' has 2 x values but 1 y values"):
            log.log_line_series("ratings", {"a": ([0, 1], [2])}, 1)


def test_snapshot_artifacts_are_off_unless_asked_and_the_flag_must_be_a_boolean(tmp_path, no_wandb_login):
    with pytest.raises(ValueError, match="log_snapshots='yes' must be true or false"):
        make_logger("wandb", tmp_path, log_snapshots="yes")
    assert inspect.signature(WandbLogger).parameters["log_snapshots"].default is False


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
