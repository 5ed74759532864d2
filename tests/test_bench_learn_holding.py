"""The from-scratch learning check's "does it hold" verdict (issue 11's no-collapse bar)."""

from __future__ import annotations

import json
from pathlib import Path

from arena.bench.learn_scratch import holding
from arena.league.model.store import GauntletRecord


def gauntlet(*wins: int, reference: str = "scripted:heuristic") -> list[GauntletRecord]:
    """One record per snapshot with ``w`` wins and ``200 - w`` losses against ``reference``."""
    return [GauntletRecord(f"learner:snap-{i:06d}", reference, 1000 * i, w, 0, 200 - w)
            for i, w in enumerate(wins)]


def metrics(path: Path, warnings: list[dict[str, float]]) -> Path:
    path.write_text("".join(json.dumps({"step": i, **w}) + "\n" for i, w in enumerate(warnings)))
    return path


def test_a_run_that_reaches_the_bar_and_stays_near_its_best_holds(tmp_path):
    records = gauntlet(0, 40, 170, 168, 172) + gauntlet(0, 0, 0, reference="scripted:random")
    quiet = metrics(tmp_path / "m.jsonl", [{"health/entropy_collapse": 0.0}] * 4)
    h = holding(records, "scripted:heuristic", quiet)
    assert h.first_reach == 2 and h.lowest_after == 168 / 200
    assert abs(h.largest_drop - 2 / 200) < 1e-9 and h.holds


def test_a_drop_below_the_best_or_the_floor_breaks_it():
    assert not holding(gauntlet(170, 158, 170), "scripted:heuristic").holds  # 0.06 below the best
    dropped = holding(gauntlet(180, 150), "scripted:heuristic")
    assert dropped.lowest_after == 0.75 and abs(dropped.largest_drop - 0.15) < 1e-9 and not dropped.holds


def test_a_run_that_never_reaches_the_bar_does_not_hold():
    h = holding(gauntlet(0, 50, 100), "scripted:heuristic")
    assert h.first_reach is None and not h.holds
    assert "no snapshot reached 0.80 (best 0.500)" in h.lines()[0]


def test_health_warnings_count_only_in_the_second_half_of_the_updates(tmp_path):
    early = [{"health/entropy_collapse": 1.0}] * 3 + [{"health/entropy_collapse": 0.0}] * 3
    assert holding(gauntlet(170, 171), "scripted:heuristic", metrics(tmp_path / "a.jsonl", early)).holds
    late = [{"health/entropy_collapse": 0.0}] * 3 + [{"health/high_approx_kl": 1.0}] * 2 + [{}]
    h = holding(gauntlet(170, 171), "scripted:heuristic", metrics(tmp_path / "b.jsonl", late))
    assert h.health == {"high_approx_kl": 2} and not h.holds


def test_the_final_evaluation_plays_the_game_the_run_trained_on(tmp_path):
    """A 2v2 run's newest snapshot is evaluated in 2v2, with the run's own game parameters."""
    from omegaconf import OmegaConf

    from arena.agents.players import resolve_player
    from arena.bench.learn_scratch import _run_game
    from arena.config import compose_run_config
    from arena.evaluation.runner import MatchSettings, play_match

    OmegaConf.save(compose_run_config(["env=midrange_2v2", "env.time_limit_s=30"]), tmp_path / "config.yaml",
                   resolve=True)  # what arena.train writes
    game, team_sizes, overrides = _run_game(tmp_path)
    assert (game, team_sizes, overrides["time_limit_s"]) == ("midrange", (2, 2), 30.0)
    players = [resolve_player(p, game, team_sizes, overrides=overrides)
               for p in ("scripted:heuristic", "scripted:random")]
    settings = MatchSettings(game=game, team_sizes=team_sizes, overrides=overrides, games=2, num_threads=1)
    result = play_match(*players, settings)
    assert result.games == 2 and result.events["fired"][0] > 0


def test_the_curves_title_names_the_seed_and_the_runs_overrides() -> None:
    from arena.bench.learn_scratch import curve_title

    assert "seed 2, trainer=kickstart" in curve_title(2, ["trainer=kickstart"])
    assert "seed 1:" in curve_title(1, [])
