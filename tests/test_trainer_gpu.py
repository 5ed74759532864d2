"""The GPU path: training with the matches on the GPU (``trainer.device=cuda``, or ``env.device=cuda``),
where the rollout reads the core's device buffers through ``env.tensors()`` and steps with device
actions; evaluation and the simulator bench on the GPU. These need a CUDA build of the core as
``arena._core`` (``.ci/run`` points ``ARENA_CORE_PATH`` at the one it compiles wherever a GPU is
visible) and a GPU, and are skipped elsewhere; on a machine without a GPU only the error for a build
without CUDA runs."""

from __future__ import annotations

import os

import pytest
import torch

from arena import _core
from arena.train import main
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

ON_GPU = bool(getattr(_core, "cuda_built", False)) and torch.cuda.is_available()
if os.environ.get("ARENA_REQUIRE_GPU") == "1" and not ON_GPU:  # .ci/run on a machine with a GPU
    pytest.fail(f"ARENA_REQUIRE_GPU=1 but the GPU tests cannot run: core {_core.__file__} cuda_built="
                f"{getattr(_core, 'cuda_built', False)}, torch.cuda.is_available()="
                f"{torch.cuda.is_available()}", pytrace=False)
needs_gpu = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA build of the core and a GPU")


def trainer(tmp_path, env_device: str) -> PPOTrainer:
    config = TrainerConfig(num_envs=64, rollout_steps=16, bptt_horizon=8, minibatch_size=512, seed=5,
                           device="cuda", total_timesteps=10**9, checkpoint_interval=0,
                           checkpoint_minutes=0.0, checkpoint_dir=str(tmp_path))
    return PPOTrainer(config, PolicyConfig(hidden_size=32, lstm_size=32), game="midrange",
                      env_device=env_device)


@needs_gpu
def test_a_rollout_with_the_matches_on_the_gpu_collects_what_the_cpu_matches_give(tmp_path) -> None:
    # 16 decisions: no match ends, so every spawn comes from reset (bit-identical on GPU and CPU).
    gpu, cpu = trainer(tmp_path, "cuda"), trainer(tmp_path, "cpu")
    for t in (gpu, cpu):
        t.evaluate()
    assert gpu.env.device == "cuda" and gpu.experience.obs.device.type == "cuda"
    assert torch.equal(gpu.experience.obs, cpu.experience.obs)
    assert torch.equal(gpu.experience.actions, cpu.experience.actions)
    assert torch.equal(gpu.experience.rewards, cpu.experience.rewards)
    gpu.train()
    gpu.close()
    cpu.close()


@pytest.mark.skipif(bool(getattr(_core, "cuda_built", False)), reason="this build has CUDA")
def test_env_device_cuda_on_a_build_without_cuda_is_a_clear_error(tmp_path, capsys) -> None:
    assert main(["env.device=cuda", "trainer=quick", "logger=none", "dashboard=false",
                 f"run_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert "no CUDA support" in err and "device='cpu'" in err


@needs_gpu
def test_trainer_device_cuda_alone_steps_the_matches_on_the_gpu_and_reads_their_buffers(tmp_path) -> None:
    from arena.config import compose_run_config
    from arena.train import build_trainer

    cfg = compose_run_config(["trainer=quick", "trainer.device=cuda", "trainer.checkpoint_minutes=0"])
    assert cfg.env.device is None  # nothing but trainer.device names the GPU
    trainer, parts = build_trainer(cfg, tmp_path)
    try:
        assert parts["placement"].env_device == "cuda" and trainer.env.device == "cuda"
        trainer.evaluate()
        obs = trainer.rollout.out.obs
        buffer = trainer.env._core.device_buffers()["obs"].__cuda_array_interface__["data"][0]
        assert obs.device.type == "cuda" and obs.data_ptr() == buffer  # zero-copy: the core's own memory
        assert trainer.experience.obs.device.type == "cuda"
        trainer.train()
    finally:
        trainer.close()


@needs_gpu
def test_evaluate_on_the_gpu_plays_the_games_the_cpu_plays(capsys) -> None:
    import json

    from arena.evaluate import main as evaluate

    results = []
    for device in ("cpu", "cuda"):
        assert evaluate(["scripted:heuristic", "scripted:random", "--games", "64", "--device", device,
                         "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    keys = ("wins", "draws", "losses")
    assert [results[0][k] for k in keys] == [results[1][k] for k in keys]


@needs_gpu
def test_bench_sim_on_the_gpu_prints_its_table() -> None:
    from arena.bench.sim import main as sim

    assert sim(["--device", "cuda", "--cuda-envs", "4096", "--repeats", "1", "--cuda-decisions", "5"]) == 0
