"""Training with the matches on the GPU (``env.device=cuda``): the rollout reads the core's device
buffers through ``env.tensors()`` and steps with device actions. These need a CUDA build of the core
as ``arena._core`` (``ARENA_CORE_PATH``) and a GPU, and are skipped elsewhere; on this project's CI
machine only the error for a build without CUDA runs."""

from __future__ import annotations

import pytest
import torch

from arena import _core
from arena.train import main
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

ON_GPU = bool(getattr(_core, "cuda_built", False)) and torch.cuda.is_available()
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
