"""The torch face of a VectorEnv: ``tensors()``, ``step_envs_tensor`` and ``sync_host``.

On the CPU (the "CPU twin" of the CUDA path) ``tensors()`` are zero-copy views of the numpy buffers
and ``step_envs_tensor`` steps exactly as ``step_envs`` does. The CUDA path itself is tested in
tests/test_cuda_build.py (it needs a CUDA build and a GPU).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arena
from arena.envs.vector import OUTPUT_NAMES, EnvTensors

GAME = {"time_limit_s": 20.0}  # short matches: many auto-resets in a few hundred decisions


def random_actions(rng: np.random.Generator, env: arena.VectorEnv) -> np.ndarray:
    columns = [rng.integers(0, n, env.num_agents) for n in env.action_space.nvec]
    return np.stack(columns, axis=1).astype(np.int32)


def test_tensors_are_zero_copy_views_of_the_numpy_buffers_and_cached():
    env = arena.make("midrange", num_envs=5, num_threads=1, team_sizes=(2, 1), seed=3)
    t = env.tensors()
    assert isinstance(t, EnvTensors) and env.tensors() is t
    for name in OUTPUT_NAMES:
        tensor, array = getattr(t, name), getattr(env._core, name)
        assert tensor.device.type == "cpu"
        assert tensor.data_ptr() == array.ctypes.data, name
        assert tuple(tensor.shape) == array.shape, name
        assert tensor.numpy().dtype == array.dtype, name
    assert t.obs.dtype == torch.float32 and t.done.dtype == torch.bool and t.outcome.dtype == torch.int8


def test_tensors_follow_the_steps():
    env = arena.make("midrange", num_envs=4, num_threads=1, seed=1, **GAME)
    t = env.tensors()
    rng = np.random.default_rng(0)
    for _ in range(60):
        obs, rewards, terminals, truncations, infos = env.step(random_actions(rng, env))
        np.testing.assert_array_equal(t.obs.numpy(), obs)
        np.testing.assert_array_equal(t.rewards.numpy(), rewards)
        np.testing.assert_array_equal(t.done.numpy(), infos["done"])
        np.testing.assert_array_equal(t.final_obs.numpy(), infos["final_observation"])


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("team_sizes", [(1, 1), (2, 2)])
def test_step_envs_tensor_gives_the_bits_of_step_envs_over_many_steps_with_auto_reset(dtype, team_sizes):
    numpy_env = arena.make("midrange", num_envs=7, num_threads=2, team_sizes=team_sizes, seed=11, **GAME)
    torch_env = arena.make("midrange", num_envs=7, num_threads=2, team_sizes=team_sizes, seed=11, **GAME)
    rng = np.random.default_rng(5)
    ended = 0
    for step in range(250):
        acts = random_actions(rng, numpy_env)
        # Halves and the whole batch, as the double-buffered rollout steps them.
        ranges = [(0, 3), (3, 7)] if step % 2 else [(0, 7)]
        for begin, end in ranges:
            numpy_env.step_envs(acts, begin, end)
            torch_env.step_envs_tensor(torch.from_numpy(acts).to(dtype), begin, end)
        t = torch_env.tensors()
        for name in OUTPUT_NAMES:
            np.testing.assert_array_equal(getattr(t, name).numpy(), getattr(numpy_env._core, name),
                                          err_msg=f"{name} at step {step}")
        ended += int(numpy_env._core.done.sum())
    assert ended > 10, "the run crossed many match ends and auto-resets"
    for key, value in numpy_env.world_state().items():
        np.testing.assert_array_equal(torch_env.world_state()[key], value, err_msg=key)


def test_step_envs_tensor_reads_only_the_rows_of_its_range():
    env = arena.make("midrange", num_envs=3, num_threads=1)
    acts = torch.zeros((env.num_agents, 3), dtype=torch.int32)
    acts[5, 0] = 99  # env 2
    env.step_envs_tensor(acts, 0, 2)
    with pytest.raises(ValueError, match=r"action 99 at row 5, dimension 0 is out of range: allowed 0\.\.4"):
        env.step_envs_tensor(acts, 0, 3)


@pytest.fixture
def env():
    return arena.make("midrange", num_envs=2, num_threads=1)


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        (lambda: torch.zeros((3, 3), dtype=torch.int32), r"shape \(3, 3\): allowed \(4, 3\)"),
        (lambda: torch.zeros((4,), dtype=torch.int32), r"shape \(4,\): allowed \(4, 3\)"),
        (lambda: torch.zeros((4, 3)), r"dtype torch.float32: allowed torch.int32 or torch.int64"),
        (lambda: torch.zeros((4, 3), dtype=torch.uint8), r"dtype torch.uint8"),
        (lambda: torch.zeros((4, 3), dtype=torch.bool), r"dtype torch.bool"),
        (lambda: np.zeros((4, 3), dtype=np.int32), r"must be a torch.Tensor .* got ndarray"),
        (lambda: torch.full((4, 3), -1, dtype=torch.int32),
         r"action -1 at row 0, dimension 0 .* allowed 0\.\.4"),
        (lambda: torch.tensor([[0, 0, 0]] * 3 + [[0, 0, 2]], dtype=torch.int32),
         r"action 2 at row 3, dimension 2 is out of range: allowed 0\.\.1"),
        # An int64 past int32 must not wrap into range when it is narrowed.
        (lambda: torch.tensor([[2**32 + 1, 0, 0]] + [[0, 0, 0]] * 3, dtype=torch.int64),
         r"action 4294967297 at row 0, dimension 0 is out of range: allowed 0\.\.4"),
        (lambda: torch.tensor([[0, 3, 0]] + [[0, 0, 0]] * 3, dtype=torch.int64),
         r"action 3 at row 0, dimension 1 is out of range: allowed 0\.\.2"),
    ],
)
def test_bad_action_tensors_are_refused_naming_the_bad_value(env, actions, message):
    before = env.world_state()
    with pytest.raises(ValueError, match=message):
        env.step_envs_tensor(actions(), 0, env.num_envs)
    for key, value in env.world_state().items():
        np.testing.assert_array_equal(value, before[key], err_msg=f"{key} changed by a refused step")


def test_an_action_tensor_on_another_device_is_refused(env):
    meta = torch.zeros((4, 3), dtype=torch.int32, device="meta")
    with pytest.raises(ValueError, match=r"actions are on device 'meta': allowed this env's device 'cpu'"):
        env.step_envs_tensor(meta, 0, env.num_envs)


@pytest.mark.parametrize(("begin", "end"), [(-1, 2), (0, 3), (2, 1), (0.5, 2), (True, 2)])
def test_bad_env_ranges_are_refused(env, begin, end):
    with pytest.raises(ValueError, match=r"env range|not an env index"):
        env.step_envs_tensor(torch.zeros((4, 3), dtype=torch.int32), begin, end)
    with pytest.raises(ValueError, match=r"env range|not an env index"):
        env.sync_host(begin, end)


def test_sync_host_is_a_no_op_on_the_cpu(env):
    obs = env.observations.copy()
    env.sync_host()
    env.sync_host(0, 1)
    np.testing.assert_array_equal(env.observations, obs)


def test_the_cpu_core_has_no_device_buffers_and_says_so(env):
    with pytest.raises(RuntimeError, match=r"only a batch made with device='cuda' has them.*numpy buffers"):
        env._core.device_buffers()
    with pytest.raises(RuntimeError, match=r"step_device.*device='cuda'"):
        env._core.step_device(1, 0, env.num_envs)


def test_rpsw_steps_through_tensors_too():
    a = arena.make("rpsw", num_envs=3, num_threads=1, seed=2)
    b = arena.make("rpsw", num_envs=3, num_threads=1, seed=2)
    rng = np.random.default_rng(1)
    for _ in range(30):
        acts = rng.integers(0, 3, (6, 1)).astype(np.int32)
        a.step_envs(acts, 0, 3)
        b.step_envs_tensor(torch.from_numpy(acts), 0, 3)
        for name in OUTPUT_NAMES:
            np.testing.assert_array_equal(getattr(b.tensors(), name).numpy(), getattr(a._core, name),
                                          err_msg=name)


def test_arena_envs_imports_without_torch():
    # tensors() and step_envs_tensor import torch when called: the env package must not need it.
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None; import arena; "
            "env = arena.make('rpsw', num_envs=2); env.step([[0], [1], [2], [0]]); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_the_gpu_sim_bench_times_device_actions_and_exits_2_without_a_gpu(capsys):
    from arena import _core
    from arena.bench import sim

    rate, best = sim.device_rate((1, 1), 16, "cpu", decisions=2, repeats=2, fire_prob=0.5, threads=1)
    assert 0 < rate <= best
    if _core.cuda_built and torch.cuda.is_available():
        pytest.skip("a CUDA core and a GPU are here: the GPU bench would run")
    assert sim.main(["--device", "cuda", "--cuda-envs", "16"]) == 2
    assert capsys.readouterr().err.startswith("error: --device cuda: ")
