"""``python -m arena.evaluate A B --logger wandb``: the match's score, interval, Elo, W/D/L and speed in
an offline W&B run (no account), read back; and the logger options checked before any game is played."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import torch
from wandb_run_reader import isolate_wandb, offline_run

from arena.evaluate import main as evaluate
from arena.evaluation.log_results import RESULT_COLUMNS

MATCH = ["scripted:random", "scripted:cycle", "--game", "rpsw", "--games", "40", "--threads", "1",
         "--no-progress"]


@pytest.fixture(scope="module")
def logged_match(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("wandb_evaluate")
    out = io.StringIO()
    threads = torch.get_num_threads()  # arena.evaluate sets its own
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        isolate_wandb(mp, tmp / "home")
        try:
            code = evaluate([*MATCH, "--sprt", "-50", "50", "--logger", "wandb", "--wandb-project",
                             "arena-test", "--log-dir", str(tmp / "eval"), "--json"])
        finally:
            torch.set_num_threads(threads)
    assert code == 0
    return json.loads(out.getvalue()), offline_run(tmp / "eval"), tmp / "eval"


def test_the_match_result_is_logged_as_scalars(logged_match):
    result, run, _ = logged_match
    (row,) = run.rows_with("eval/score")
    assert row["global_step"] == result["games"]
    assert (row["eval/wins"], row["eval/draws"], row["eval/losses"]) == (
        result["wins"], result["draws"], result["losses"])
    assert row["eval/games"] == result["games"] > 0
    assert [row["eval/score"], row["eval/score_lo"], row["eval/score_hi"]] == pytest.approx(
        [result["score"], *result["score_ci95"]])
    assert [row["eval/elo"], row["eval/elo_lo"], row["eval/elo_hi"]] == pytest.approx(
        [result["elo"], *result["elo_ci95"]])
    assert row["eval/games_per_second"] == pytest.approx(result["games_per_second"])
    assert row["eval/sprt_llr"] == pytest.approx(result["sprt"]["llr"])


def test_the_match_result_is_also_one_row_of_a_table(logged_match):
    result, run, _ = logged_match
    table = run.table("eval/result")
    assert table["columns"] == list(RESULT_COLUMNS)
    (row,) = table["data"]
    assert row[:6] == [result["a"], result["b"], result["games"], result["wins"], result["draws"],
                       result["losses"]]
    assert row[6] == pytest.approx(result["score"])


def test_the_wandb_run_is_named_after_the_match_and_keeps_the_settings(logged_match):
    _, run, log_dir = logged_match
    assert run.config["players"] == ["scripted:random", "scripted:cycle"]
    assert run.config["game"] == "rpsw" and run.config["games"] == 40
    assert (log_dir / "metrics.jsonl").is_file()  # the JSONL copy beside the W&B run


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--wandb-project", "p"], "--wandb-project and --log-dir need --logger wandb or tensorboard"),
        (["--log-dir", "x"], "--wandb-project and --log-dir need --logger wandb or tensorboard"),
        (["--logger", "tensorboard", "--wandb-project", "p"], "--wandb-project applies to --logger wandb"),
    ],
)
def test_logger_options_that_do_not_fit_fail_before_any_game(options, message, tmp_path, capsys):
    assert evaluate([*MATCH, *options]) == 2
    err = capsys.readouterr()
    assert message in err.err and err.out == ""  # no result: nothing was played
    assert not (tmp_path / "x").exists()


def test_an_unknown_logger_is_refused_naming_the_choices(capsys):
    assert evaluate([*MATCH, "--logger", "mlflow"]) == 2
    assert "choose from 'none', 'wandb', 'tensorboard'" in capsys.readouterr().err
