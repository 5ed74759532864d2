"""Where a run's matches step (``arena/trainer/placement.py``): env.device follows trainer.device
unless named, and the run says where each part is when they differ."""

from __future__ import annotations

import pytest
import torch

from arena.config import compose_run_config
from arena.train import main
from arena.trainer.placement import placement


def test_the_matches_follow_the_policy_onto_the_gpu_when_the_core_is_a_cuda_build():
    where = placement("cuda", None, has_cuda_core=True)
    assert where.env_device == "cuda" and where.trainer_device == "cuda"
    assert any("matches step on the GPU" in note for note in where.notes)


def test_with_a_cpu_only_core_the_policy_trains_on_the_gpu_and_the_run_says_the_matches_stay_on_the_cpu():
    where = placement("cuda", None, has_cuda_core=False)
    assert where.env_device == "cpu"
    assert len(where.notes) == 1 and "CPU threads" in where.notes[0] and "ARENA_CUDA=ON" in where.notes[0]


def test_env_device_overrides_the_trainer_and_says_so():
    assert placement("cuda", "cpu", has_cuda_core=True).env_device == "cpu"
    assert "overrides trainer.device=cuda" in placement("cuda", "cpu", has_cuda_core=True).notes[0]
    assert placement("cpu", None).env_device == "cpu" and placement("cpu", None).notes == ()
    assert placement("cpu", "cpu").notes == ()


@pytest.mark.parametrize(("trainer", "env", "match"), [
    ("gpu", None, "trainer.device='gpu' is not allowed"),
    ("cpu", "tpu", "env.device='tpu' is not allowed: use one of cpu, cuda or null"),
])
def test_an_unknown_device_is_refused_by_name(trainer, env, match):
    with pytest.raises(ValueError, match=match):
        placement(trainer, env)


def test_the_run_config_leaves_env_device_unset_so_it_follows_the_trainer():
    assert compose_run_config([]).env.device is None
    assert compose_run_config(["env.device=cpu"]).env.device == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_trainer_device_cuda_without_a_gpu_is_a_clear_error(tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert main(["trainer.device=cuda", "trainer=quick", "dashboard=false", f"run_dir={run_dir}"]) == 2
    err = capsys.readouterr().err
    assert "trainer.device='cuda'" in err and "no usable GPU" in err and "trainer.device=cpu" in err
