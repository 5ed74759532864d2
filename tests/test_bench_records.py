"""The JSON records of the benches a results page cites (docs/results/): each writes its command line,
commit, machine and date beside every figure it printed (``arena/bench/record.py``). The benches
that run in seconds at tiny settings run here; the long ones (``learn --from-scratch``, ``crash``)
have their record-building function tested directly."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from arena.league.model.store import GauntletRecord

MACHINE_KEYS = {"bench", "command", "commit", "cpus", "cpu", "date"}


def read(path: Path, bench: str) -> dict:
    record = json.loads(path.read_text())
    assert MACHINE_KEYS <= set(record), record
    assert record["bench"] == bench and record["command"].startswith(f"python -m arena.bench {bench} ")
    assert "--json" in record["command"]
    return record


@pytest.mark.usefixtures("one_torch_thread")
def test_bank_writes_its_cases(tmp_path: Path) -> None:
    from arena.bench.bank import main

    out = tmp_path / "bank.json"
    assert main(["--players", "4", "--rows", "16", "--reps", "1", "--turns", "1", "--json", str(out)]) == 0
    record = read(out, "bank")
    assert set(record["cases"]) == {"even", "two favourites"}
    for case in record["cases"].values():
        assert case["one_pass_ms"] > 0 and case["planned_ms"] > 0 and case["speedup"] > 0 and case["passes"]


def test_evaluate_writes_the_pairings_and_the_round_robin(tmp_path: Path) -> None:
    from arena.bench.evaluate import main

    pairs = tmp_path / "evaluate.json"
    assert main(["--games", "2", "--envs", "2", "--hidden", "8", "--json", str(pairs)]) == 0
    record = read(pairs, "evaluate")
    assert set(record["pairings"]) == {"heuristic vs random", "policy vs policy (LSTM)"}
    assert all(p["games_per_second"] > 0 and p["games"] == 2 for p in record["pairings"].values())

    rr = tmp_path / "rr.json"
    assert main(["--round-robin", "3", "--games-per-pair", "2", "--envs", "2", "--hidden", "8",
                 "--json", str(rr)]) == 0
    record = read(rr, "evaluate")
    assert record["round_robin"] == 3 and record["pairings"] == 3 and record["games"] == 6
    assert set(record["games_per_second"]) == {"one pairing at a time", "side by side, a pass per player",
                                               "side by side, one grouped pass"}
    assert set(record["grouped_speedup"]) == {"one pairing at a time", "side by side, a pass per player"}


def test_train_writes_its_modes(tmp_path: Path) -> None:
    from arena.bench.train_sps import main

    out = tmp_path / "train.json"
    assert main(["--num-envs", "32", "--updates", "1", "--warmup", "0", "--mode", "sequential",
                 "--minibatch-size", "512", "--json", str(out)]) == 0
    record = read(out, "train")
    assert set(record["modes"]) == {"sequential"} and record["modes"]["sequential"]["SPS"] > 0
    assert record["bare_torch_samples_per_s"] > 0 and record["scaled_anchor_ratio"] > 0


def test_train_league_pool_writes_both_rates_and_their_ratios(tmp_path: Path) -> None:
    from arena.bench.train_sps import main

    out = tmp_path / "pool.json"
    assert main(["--league-pool", "2", "--num-envs", "32", "--rounds", "1", "--turn", "1", "--warmup", "0",
                 "--pool-dir", str(tmp_path / "pool"), "--json", str(out)]) == 0
    record = read(out, "train")
    assert "--league-pool 2" in record["command"]
    assert record["league"] == "selfplay" and record["pool"] == 2
    assert record["league_sps"] > 0 and record["mirror_sps"] > 0
    assert record["learner_sample_ratio"] == pytest.approx(record["league_sps"] / record["mirror_sps"])
    assert record["agent_step_ratio"] > 0 and record["resident_mib"] > 0
    assert record["distinct_frozen_players_per_step"] == pytest.approx(2.0)


def test_ddp_writes_both_rates_and_the_differences(tmp_path: Path) -> None:
    from arena.bench.ddp import main

    out = tmp_path / "ddp.json"
    assert main(["--game", "rpsw", "--envs", "16", "--updates", "2", "--json", str(out)]) == 0
    record = read(out, "ddp")
    assert record["one_rank_sps"] > 0 and record["two_ranks_sps"] > 0
    assert record["learner_samples"][0] == record["learner_samples"][1]
    assert record["max_difference_last_update"] < 1e-3


def test_crash_figures_hold_every_kill_and_the_verdict() -> None:
    from arena.bench.crash import KillReport, crash_figures

    reports = [KillReport(0, 1.5, 100, 3, 0), KillReport(1, 2.0, 180, 5, 64, problems=["lost a match"])]
    figures = crash_figures(reports, [], 12.0)
    assert figures["survived"] == 1 and figures["of"] == 2 and figures["final_resume"] == "ok"
    assert figures["kills"][1] == {"kill": 2, "at_s": 2.0, "matches": 180, "snapshots": 5, "rolled_back": 64,
                                   "survived": False, "problems": ["lost a match"]}
    assert crash_figures(reports, ["bad"], 1.0)["final_resume"] == ["bad"]


def test_crash_parses_json() -> None:
    import arena.bench.crash as crash

    with pytest.raises(SystemExit):  # --kills 0 is refused after the record's option parsed
        crash.main(["--kills", "0", "--json", "x.json"])


def test_learn_from_scratch_figures_hold_the_gauntlet_the_guard_and_the_final_games() -> None:
    from arena.bench.learn_scratch import scratch_figures

    start = 1000.0
    records = [GauntletRecord("learner:snap-000001", "scripted:heuristic", 4_000_000, 100, 20, 80,
                              created_at=start + 90.0)]
    args = argparse.Namespace(minutes=30.0, seed=1, overrides=["trainer=kickstart"])
    final = {"wins": 900, "draws": 50, "losses": 50, "score": 0.925}
    figures = scratch_figures(records, start, args, ["holds: yes"], 2, 1, final)
    row = figures["gauntlet"][0]
    assert row["minute"] == pytest.approx(1.5) and row["step"] == 4_000_000
    assert (row["wins"], row["draws"], row["losses"]) == (100, 20, 80) and row["score"] == pytest.approx(0.55)
    assert row["lo"] < 0.55 < row["hi"]
    assert figures["guard"] == {"rejections": 2, "restores": 1} and figures["holding"] == ["holds: yes"]
    assert figures["final_games"] == final and figures["overrides"] == ["trainer=kickstart"]
