"""`python -m arena.bench sim` runs both workloads end to end and prints every figure (tiny sizes;
no timing is asserted)."""

from __future__ import annotations

import re

import numpy as np

from arena.bench import sim


def test_the_sim_benchmark_prints_both_workloads_for_both_games_and_thread_counts(capsys):
    assert sim.main(["--envs", "16", "--decisions", "4", "--repeats", "3", "--reference-envs", "8",
                     "--reference-decisions", "2"]) == 0
    out = capsys.readouterr().out
    assert "workload: random actions" in out and "workload: heuristic pilots" in out
    rows = re.findall(r"^(1v1|4v4) +([12]) +[0-9.]+ M", out, flags=re.MULTILINE)
    assert sorted(rows) == sorted([(g, t) for g in ("1v1", "4v4") for t in ("1", "2")] * 2)
    assert out.count("numpy reference:") == 4


def test_the_pilot_tape_is_a_fight_that_every_core_replays_alike():
    # The heuristic pilots fire in the recorded matches, and cores of 1 and 2 threads replaying
    # the tape are in the same state after each turn: the 1- and 2-thread figures time the same work.
    tape = sim.pilot_tape((1, 1), 6, sim.WARMUP + 60)
    assert all(a.dtype == np.int32 and a.shape == (12, 3) for a in tape)
    cores = [sim.CoreRunner((1, 1), 6, threads, 30, tape) for threads in (1, 2)]
    for _ in range(2):
        for core in cores:
            core.turn()
        worlds = [core.env.world_state() for core in cores]
        for key in worlds[0]:
            np.testing.assert_array_equal(worlds[0][key], worlds[1][key], err_msg=key)
    assert (worlds[0]["fighter_missiles"] < 6).any(), "the heuristic pilots fired no missile in 100 decisions"
