"""``python -m arena.bench gpu``: its dry run (the same code on the CPU at tiny sizes) finishes with
every part's figures in its record; without a GPU the real run refuses and says why."""

from __future__ import annotations

import json

import pytest
import torch

from arena import _core
from arena.bench.gpu import main


def test_the_dry_run_measures_every_part_and_writes_its_record(tmp_path, capsys):
    assert main(["--dry-run", "--minutes", "1.5", "--run-dir", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "gpu.json").read_text())
    assert record["bench"] == "gpu" and record["dry_run"] is True and record["commit"]
    assert [p["game"] for p in record["parity"]] == ["1v1", "4v4"]
    assert all(p["identical"] and p["matches_ended"] > 0 for p in record["parity"])
    sizes = {(g, n) for g in ("1v1", "4v4") for n in (64, 256)}
    assert {(r["game"], r["envs"]) for r in record["physics"]} == sizes
    assert all(r["physics_steps_per_s"] > 0 for r in record["physics"])
    assert [r["trainer"] for r in record["training"]] == ["default", "gpu"]
    assert all(r["SPS"] > 0 for r in record["training"])
    league = record["league"]
    assert league["returncode"] == 0 and league["gauntlet"], league
    assert all(0.0 <= g["score"] <= 1.0 and g["games"] == 16 for g in league["gauntlet"])
    assert league["final_score"] == league["gauntlet"][-1]["score"]
    assert record["memory"]["peak_rss_bytes"] > 0
    out = capsys.readouterr().out
    assert "1. parity" in out and "5. memory" in out and "identical" in out


@pytest.mark.skipif(bool(getattr(_core, "cuda_built", False)) and torch.cuda.is_available(),
                    reason="this machine can run the real bench")
def test_without_a_cuda_core_and_a_gpu_the_real_run_refuses_and_names_the_dry_run(tmp_path, capsys):
    assert main(["--run-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--dry-run" in err and ("without CUDA" in err or "no usable GPU" in err)
