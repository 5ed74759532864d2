"""The typed seam between a ``VectorEnv`` and the core's batch (``arena/envs/core_batch.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import arena
from arena.envs.core_batch import CoreBatch, HostBuffers
from arena.games import GAMES, spec

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "arena"


@pytest.mark.parametrize("game", GAMES)
def test_every_games_core_batch_has_the_face_the_vector_env_needs(game):
    env = arena.make(game, num_envs=3)
    try:
        assert isinstance(env._core, spec(game).core_batch)
        assert isinstance(env._core, CoreBatch)
    finally:
        env.close()


@pytest.mark.parametrize("game", GAMES)
def test_the_host_buffers_are_the_arrays_a_step_writes(game):
    env = arena.make(game, num_envs=3, seed=1)
    try:
        host = env.host
        assert isinstance(host, HostBuffers)
        actions = np.zeros((env.num_agents, len(env.action_space.nvec)), dtype=np.int32)
        obs, rewards, terminals, truncations, infos = env.step(actions)
        assert obs is host.obs and rewards is host.rewards and terminals is host.terminals
        assert truncations is host.truncations and infos["events"] is host.events
        assert infos["done"] is host.done and infos["outcome"] is host.outcome
    finally:
        env.close()


def _reaches_into_core(path: Path) -> list[int]:
    """Lines of ``path`` that read a ``_core`` attribute of an object (``env._core``); importing the
    module ``arena._core`` itself is no reach past the seam."""
    tree = ast.parse(path.read_text())
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "_core"]


def test_the_trainer_evaluation_league_and_agents_never_reach_past_the_env_into_its_core():
    offenders = [f"{path.relative_to(PACKAGE_DIR.parent)}:{line}"
                 for package in ("trainer", "evaluation", "league", "agents", "replay", "rewards")
                 for path in sorted((PACKAGE_DIR / package).rglob("*.py"))
                 for line in _reaches_into_core(path)]
    assert not offenders, f"use the env's public buffers (env.host, env.tensors()): {offenders}"


def test_the_scan_sees_a_reach_into_the_core(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from arena import _core\nseed = _core.env_seed(1, 2)\nevents = env._core.events\n")
    assert _reaches_into_core(module) == [3]
