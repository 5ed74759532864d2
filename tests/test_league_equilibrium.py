"""+league=equilibrium: regularised mirror self-play that publishes the average of its last snapshots."""

from __future__ import annotations

import numpy as np

from arena.agents.policy import load_policy
from arena.config import compose_run_config
from arena.games.goofspiel.exploitability import GoofspielTree, exploitability, mixture_probs, policy_probs
from arena.league.model.published import published


def test_the_equilibrium_league_brings_its_regularised_trainer_unless_the_command_names_one():
    cfg = compose_run_config(["env=goofspiel", "+league=equilibrium"])
    assert cfg.trainer.ent_coef == 0.3 and cfg.trainer.ent_coef_end == 0.1
    assert cfg.trainer.norm_adv is False
    assert cfg.league.publish == "mixture" and cfg.league.matchmaking.mix.mirror == 1.0
    assert cfg.league.matchmaking.mix.scripted == 0.0 and cfg.league.matchmaking.mix.pfsp == 0.0
    named = compose_run_config(["env=goofspiel", "+league=equilibrium", "trainer=quick"])
    assert named.trainer.ent_coef_end is None and named.trainer.num_envs == 64


def test_the_equilibrium_league_publishes_a_goofspiel_mixture_a_best_response_barely_beats(tmp_path):
    from arena.train import main as train

    run_dir = tmp_path / "eq"
    assert train(["env=goofspiel", "env.num_cards=3", "env.points_order=random", "+league=equilibrium",
                  f"run_dir={run_dir}", "dashboard=false", "trainer.seed=1", "trainer.num_envs=256",
                  "trainer.total_timesteps=400000", "league.snapshot.every_steps=40000",
                  "league.gauntlet.games=0"]) == 0
    found = published(run_dir)
    assert found.is_mixture and len(found.members) == 8
    tree = GoofspielTree.build(3, "random")
    probs = [policy_probs(load_policy(m.path), tree) for m in found.members]
    mixed = exploitability(tree, mixture_probs(probs, [m.weight for m in found.members], tree))
    hands = tree.hands.astype(np.float64)
    uniform = exploitability(tree, hands / hands.sum(axis=2, keepdims=True))
    assert mixed < 0.25 < 0.5 * uniform, (mixed, uniform)
