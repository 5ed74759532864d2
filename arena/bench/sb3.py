"""``python -m arena.bench sb3``: Stable-Baselines3 on arena's batched ``VecEnv`` against SB3's own
``SubprocVecEnv`` over the single-match adapter, in one run.

Both give SB3 the same ``--envs`` matches of ``--game`` against the default random opponent:
``ArenaVecEnv`` (one process, one core call per step) and ``SubprocVecEnv`` of ``ArenaSingleAgentEnv``
(one process per match, SB3's usual way to run several). For each it measures the env alone (random
actions, steps/s summed over the envs) and SB3 ``PPO.learn`` (``--steps`` timesteps, timesteps/s),
and prints the ratios. Writes ``sb3.json`` in ``--run-dir``.

    python -m arena.bench sb3                                  # midrange 1v1, 8 envs
    python -m arena.bench sb3 --game rpsw --envs 16 --steps 8192
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from arena.bench.record import write_record
from arena.envs.gymnasium_env import ArenaSingleAgentEnv
from arena.envs.sb3_vec_env import ArenaVecEnv


def _make_single(game: str, seed: int) -> Any:
    def make() -> Any:
        return ArenaSingleAgentEnv(game, seed=seed)

    return make


def build(kind: str, game: str, envs: int) -> Any:
    from stable_baselines3.common.vec_env import SubprocVecEnv

    if kind == "arena":
        return ArenaVecEnv(game, num_envs=envs, seed=0)
    return SubprocVecEnv([_make_single(game, seed) for seed in range(envs)], start_method="spawn")


def env_sps(env: Any, steps: int) -> float:
    """Env steps per second (summed over the envs) with random actions, after a warm-up step."""
    rng = np.random.default_rng(0)
    nvec = env.action_space.nvec
    env.reset()
    env.step(rng.integers(0, nvec, size=(env.num_envs, len(nvec))))
    start = time.perf_counter()
    for _ in range(steps):
        env.step(rng.integers(0, nvec, size=(env.num_envs, len(nvec))))
    return steps * env.num_envs / (time.perf_counter() - start)


def learn_sps(env: Any, timesteps: int) -> float:
    """SB3 PPO timesteps per second over ``timesteps`` of ``learn`` (rollouts and updates)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import Logger

    model = PPO("MlpPolicy", env, n_steps=128, batch_size=256, n_epochs=2, seed=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default makes a folder in /tmp
    start = time.perf_counter()
    model.learn(timesteps)
    return model.num_timesteps / (time.perf_counter() - start)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena.bench sb3", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="midrange")
    parser.add_argument("--envs", type=int, default=8, help="matches side by side")
    parser.add_argument("--env-steps", type=int, default=500,
                        help="random steps of each env for the env figure")
    parser.add_argument("--steps", type=int, default=16384, help="PPO.learn timesteps for the learn figure")
    parser.add_argument("--run-dir", default=None, help="where sb3.json goes (default runs/bench-sb3-<time>)")
    args = parser.parse_args(argv)
    if args.envs < 1 or args.env_steps < 1 or args.steps < 1:
        parser.error("--envs, --env-steps and --steps must be at least 1")
    import torch

    torch.set_num_threads(1)  # SB3's networks are small; the comparison is the env side
    figures: dict[str, dict[str, float]] = {}
    for kind in ("arena", "subproc"):
        env = build(kind, args.game, args.envs)
        try:
            figures[kind] = {"env_steps_per_s": round(env_sps(env, args.env_steps), 1),
                             "learn_timesteps_per_s": round(learn_sps(env, args.steps), 1)}
        finally:
            env.close()
        print(f"{kind:8} env {figures[kind]['env_steps_per_s']:12,.0f} steps/s   "
              f"PPO.learn {figures[kind]['learn_timesteps_per_s']:10,.0f} timesteps/s", flush=True)
    ratios = {key: round(figures["arena"][key] / figures["subproc"][key], 2) for key in figures["arena"]}
    print(f"ArenaVecEnv / SubprocVecEnv: env {ratios['env_steps_per_s']:.2f}x, "
          f"PPO.learn {ratios['learn_timesteps_per_s']:.2f}x ({args.game}, {args.envs} envs)")
    run_dir = Path(args.run_dir or f"runs/bench-sb3-{time.strftime('%Y%m%d-%H%M%S')}")
    record = write_record(run_dir / "sb3.json", "sb3", argv,
                          {"game": args.game, "envs": args.envs, "env_steps": args.env_steps,
                           "learn_steps": args.steps, **figures, "ratio_arena_over_subproc": ratios})
    print(f"record: {record}")
    return 0
