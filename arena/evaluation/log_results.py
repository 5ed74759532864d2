"""Evaluation results sent to a metrics logger (``python -m arena.evaluate ... --logger wandb``).

A head-to-head match logs, at step = games played, the scalars ``eval/score`` (A's score),
``eval/score_lo`` / ``eval/score_hi`` (its 95% Wilson interval), ``eval/elo`` with ``eval/elo_lo`` /
``eval/elo_hi``, ``eval/wins`` / ``eval/draws`` / ``eval/losses`` (A's), ``eval/games``,
``eval/games_per_second`` and, with an SPRT, ``eval/sprt_llr``; and a one-row table ``eval/result``.
An Elo of a match won or lost every time is infinite: it is logged as such (null in metrics.jsonl).

A round robin logs the table ``eval/ratings`` (best Elo first), the heatmap ``eval/payoff`` (row
player's score against the column player), the table ``eval/results`` (one row per pairing) and the
scalars ``eval/elo/<player>``, ``eval/games`` and ``eval/games_per_second``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from arena.evaluation.round_robin import RoundRobinResult
from arena.evaluation.runner import MatchResult
from arena.trainer.telemetry.loggers import Logger, MultiLogger, make_logger

RESULT_COLUMNS = ("a", "b", "games", "wins", "draws", "losses", "score", "score_lo", "score_hi", "elo",
                  "elo_lo", "elo_hi", "games_per_second")
RATINGS_COLUMNS = ("rank", "player", "elo", "elo_lo", "elo_hi", "games")
RESULTS_COLUMNS = ("a", "b", "wins", "draws", "losses", "score")
LOGGER_KINDS = ("none", "wandb", "tensorboard")


def default_log_dir() -> Path:
    return Path("runs") / f"evaluate-{time.strftime('%Y%m%d-%H%M%S')}"


def open_logger(kind: str, log_dir: str | os.PathLike[str] | None, *, project: str | None = None,
                name: str | None = None, config: Mapping[str, Any] | None = None) -> MultiLogger:
    """The logger of an evaluation: metrics.jsonl in ``log_dir`` (default ``runs/evaluate-<time>``) plus
    ``kind`` ("wandb" or "tensorboard"); ``project``, ``name`` and ``config`` are W&B's."""
    if kind not in LOGGER_KINDS or kind == "none":
        raise ValueError(f"evaluation logger {kind!r} is not one of wandb, tensorboard")
    if project is not None and kind != "wandb":
        raise ValueError(f"--wandb-project {project!r} applies to --logger wandb, not --logger {kind}")
    options: dict[str, Any] = {}
    if kind == "wandb":
        options = {"project": project or "arena", "name": name, "config": dict(config or {}),
                   "tags": ["evaluate"]}
    return make_logger(kind, Path(log_dir) if log_dir is not None else default_log_dir(), **options)


def match_metrics(result: MatchResult) -> dict[str, float]:
    """The ``eval/*`` scalars of a head-to-head match."""
    score, score_lo, score_hi = result.score()
    elo, elo_lo, elo_hi = result.elo()
    out = {
        "eval/score": score, "eval/score_lo": score_lo, "eval/score_hi": score_hi,
        "eval/elo": elo, "eval/elo_lo": elo_lo, "eval/elo_hi": elo_hi,
        "eval/wins": float(result.wins), "eval/draws": float(result.draws),
        "eval/losses": float(result.losses),
        "eval/games": float(result.games), "eval/games_per_second": result.games_per_second,
    }
    if result.sprt_llr is not None:
        out["eval/sprt_llr"] = float(result.sprt_llr)
    return out


def log_match(log: Logger, result: MatchResult) -> None:
    """A head-to-head result: its scalars and the one-row table ``eval/result``."""
    metrics = match_metrics(result)
    step = result.games
    log.log(metrics, step)
    row = [result.a, result.b, result.games, result.wins, result.draws, result.losses,
           *(metrics[f"eval/{k}"] for k in ("score", "score_lo", "score_hi", "elo", "elo_lo", "elo_hi",
                                             "games_per_second"))]
    log.log_table("eval/result", list(RESULT_COLUMNS), [row], step)


def payoff_matrix(rr: RoundRobinResult, order: list[str]) -> np.ndarray:
    """Row player's score against the column player; NaN on the diagonal and for pairs that never played."""
    matrix = np.full((len(order), len(order)), np.nan)
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            score = rr.score(a, b) if a != b else None
            if score is not None:
                matrix[i, j] = score
    return matrix


def log_round_robin(log: Logger, rr: RoundRobinResult) -> None:
    """A round robin: the ratings table, the payoff heatmap, the pairings table and the Elo scalars."""
    ratings = rr.fit.as_dict()
    order = sorted(rr.players, key=lambda p: -ratings[p][0])
    games = sum(sum(wdl) for wdl in rr.results.values())
    step = games
    metrics = {f"eval/elo/{p}": ratings[p][0] for p in order}
    metrics["eval/games"] = float(games)
    metrics["eval/games_per_second"] = games / rr.elapsed_s if rr.elapsed_s > 0 else float("inf")
    log.log(metrics, step)
    rows = [[rank, p, *ratings[p], rr.games_of(p)] for rank, p in enumerate(order, start=1)]
    log.log_table("eval/ratings", list(RATINGS_COLUMNS), rows, step)
    log.log_heatmap("eval/payoff", order, order, payoff_matrix(rr, order), step,
                    title="Round robin: row player's score against the column player", value_name="score")
    pairings = [[a, b, w, d, l, rr.score(a, b)] for (a, b), (w, d, l) in rr.results.items()]  # noqa: E741
    log.log_table("eval/results", list(RESULTS_COLUMNS), pairings, step)
