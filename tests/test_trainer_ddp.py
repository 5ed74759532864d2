"""Data-parallel training: two CPU ranks with a real gloo process group train the run a single process
trains. Rollouts are identical (envs seeded by their index in the run, sampling noise drawn for every
row of the run at each step), minibatches are cut from the run's segments, every mean is global and
DDP averages the gradients, so the parameters after K updates match to float rounding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arena.bench.ddp import max_difference, run
from arena.trainer.distributed import Shard

# Float rounding differs between one process and two ranks (the all-reduce sums in another order), and
# Adam divides by the gradient's running RMS, which magnifies it where a gradient is near zero: 1.3e-5
# after these 24 steps on an AMD EPYC VM (under 1e-5 on Intel). Without the all-reduce (the trainer's
# DDP wrapper removed) each of the five tests here that compares parameters fails, 5e-3 to 1.6e-2
# apart: over 100x this.
TOLERANCE = 5e-5


def spec(tmp_path: Path, updates: int = 3, **trainer: object) -> dict:
    return {
        "game": "midrange", "team_sizes": [1, 1], "updates": updates,
        "trainer": {"num_envs": 16, "rollout_steps": 32, "bptt_horizon": 8, "minibatch_size": 128,
                    "update_epochs": 2, "seed": 3, "total_timesteps": 10**9, "checkpoint_interval": 0,
                    "checkpoint_minutes": 0.0, "checkpoint_dir": str(tmp_path), **trainer},
        "policy": {"hidden_size": 32, "lstm_size": 32},
    }


def assert_same_run(one: tuple[dict, dict], two: tuple[dict, dict]) -> None:
    (params_1, figures_1), (params_2, figures_2) = one, two
    assert figures_1["global_step"] == figures_2["global_step"]
    assert max_difference(params_1, params_2) < TOLERANCE
    for a, b in zip(figures_1["losses"], figures_2["losses"], strict=True):
        for key in ("policy_loss", "value_loss", "entropy", "approx_kl"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key


def test_two_gloo_ranks_of_half_the_envs_learn_the_parameters_of_one_process(tmp_path: Path) -> None:
    s = spec(tmp_path)
    one = run(1, s, str(tmp_path))
    two = run(2, s, str(tmp_path))
    assert_same_run(one, two)
    # and the run really learnt something: the parameters moved from their initial values
    initial = run(1, spec(tmp_path, updates=0), str(tmp_path / "initial"))[0]
    assert max_difference(initial, one[0]) > 1e-3


def test_two_ranks_train_a_2v2_team_critic_as_one_process_does(tmp_path: Path) -> None:
    s = {**spec(tmp_path), "team_sizes": [2, 2],
         "policy": {"hidden_size": 32, "lstm_size": 32, "team_critic": True}}
    one = run(1, s, str(tmp_path))
    two = run(2, s, str(tmp_path))
    assert_same_run(one, two)
    assert float(one[0]["team_critic.weight"].abs().max()) > 0  # the team critic learnt


def test_rank_zero_matchmaking_gives_every_rank_the_opponents_one_process_would(tmp_path: Path) -> None:
    # The heuristic pilot in the mix: each rank's finished envs go to rank 0's FixedMix, which draws
    # as a single process's does when the envs are asked in the same order (one half: overlap off).
    s = spec(tmp_path, overlap=False)
    s["opponents"] = ["mirror", "scripted:heuristic"]
    assert_same_run(run(1, s, str(tmp_path)), run(2, s, str(tmp_path)))


def test_a_restore_on_rank_zero_reaches_every_rank_before_the_next_rollout(tmp_path: Path) -> None:
    # The league's guard restores the learner on rank 0 only; the other ranks must take the same
    # weights (and clear Adam's moments) before they step or learn again, or DDP would average the
    # gradients of two different policies.
    s = spec(tmp_path, updates=3)
    s["restore_at"] = 1
    one, two = run(1, s, str(tmp_path / "one")), run(2, s, str(tmp_path / "two"))
    assert_same_run(one, two)
    unrestored = run(1, spec(tmp_path, updates=3), str(tmp_path / "plain"))[0]
    assert max_difference(unrestored, one[0]) > 1e-3  # the restore changed the run


def test_a_two_rank_checkpoint_resumes_exactly_on_one_rank_or_two(tmp_path: Path) -> None:
    # A run that writes a checkpoint after update 2 (its matches restart there) and goes on, against
    # its checkpoint resumed: by 2 ranks, and by 1 (the envs re-sharded).
    uninterrupted = spec(tmp_path, updates=3)
    uninterrupted.update(save=str(tmp_path / "one-rank.pt"), save_at=2)
    whole = run(1, uninterrupted, str(tmp_path / "whole"))
    first = spec(tmp_path, updates=2)
    first["save"] = str(tmp_path / "two-rank.pt")
    run(2, first, str(tmp_path / "first"))
    for world in (1, 2):
        rest = spec(tmp_path, updates=1)
        rest["resume"] = str(tmp_path / "two-rank.pt")
        resumed = run(world, rest, str(tmp_path / f"rest-{world}"))
        assert resumed[1]["global_step"] == whole[1]["global_step"]
        assert max_difference(resumed[0], whole[0]) < TOLERANCE


def test_the_run_total_of_envs_must_split_evenly_among_the_ranks() -> None:
    assert Shard.of(1, 4, 1024) == Shard(1, 4, 256, 256, 1024)
    with pytest.raises(ValueError, match="num_envs=10 .* multiple of the number of ranks \\(4\\)"):
        Shard.of(0, 4, 10)


def test_torchrun_two_ranks_train_a_selfplay_league_with_rank_zero_holding_the_run(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "arena.train", "+league=selfplay", "trainer=quick", "trainer.total_timesteps=40000",
           "league.snapshot.every_steps=8000", "league.gauntlet.games=4", f"run_dir={run_dir}",
           "dashboard=false", "logger=none"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    updates = [r for r in records if "update" in r]
    assert [r["update"] for r in updates] == list(range(1, len(updates) + 1))  # one writer: rank 0
    assert updates[-1]["global_step"] >= 40000
    import sqlite3

    with sqlite3.connect(run_dir / "league.sqlite") as db:
        snapshots = [r[0] for r in db.execute("select id from players where kind = 'snapshot'")]
        opponents = [r[0] for r in db.execute("select team_b from matches")]
    assert len(snapshots) >= 2
    # matches of both ranks' envs reached rank 0's league, snapshots among the opponents
    assert len(opponents) >= 20 and any("snap" in o for o in opponents)
    assert np.isfinite(updates[-1]["policy_loss"])
