"""Kickstarting: a scripted teacher's actions pull the learner while the annealed weight lasts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import arena
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.kickstart import Kickstart, KickstartSchedule, legal_labels
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

ROCK = 0


def trainer(**overrides) -> PPOTrainer:
    values = dict(
        num_envs=64, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=16,
        rollout_steps=16, minibatch_size=512, update_epochs=4, learning_rate=3e-3, anneal_lr=False,
        ent_coef=0.01, seed=3,
    )
    values.update(overrides)
    return PPOTrainer(
        TrainerConfig(**values), PolicyConfig(hidden_size=32, lstm_size=32), game="rpsw",
        matchmaker=FixedMix("scripted:random"),
    )


def rock_probability(t: PPOTrainer) -> float:
    exp = t.experience
    with torch.no_grad():
        logits, _ = t.policy.forward_sequence(
            exp.row_major(exp.obs), (exp.state_h[0], exp.state_c[0]), exp.row_major(exp.episode_starts)
        )
    probs = torch.softmax(logits[0], dim=-1)[exp.row_major(exp.learner_mask)].mean(dim=0)
    return float(probs[ROCK])


def train(t: PPOTrainer, updates: int) -> list[dict[str, float]]:
    out = []
    for _ in range(updates):
        t.evaluate()
        out.append(t.train())
    return out


def test_the_weight_falls_linearly_to_zero_at_the_last_kickstart_step() -> None:
    schedule = KickstartSchedule("scripted:heuristic", coef=2.0, steps=1000)
    assert schedule.coef_at(0) == 2.0
    assert schedule.coef_at(250) == pytest.approx(1.5)
    assert schedule.coef_at(1000) == 0.0
    assert schedule.coef_at(5000) == 0.0


def test_with_an_end_weight_the_pull_falls_to_it_and_stays_for_the_rest_of_the_run() -> None:
    schedule = KickstartSchedule("scripted:heuristic", coef=1.0, steps=1000, coef_end=0.2)
    assert schedule.coef_at(0) == 1.0
    assert schedule.coef_at(500) == pytest.approx(0.6)
    assert schedule.coef_at(1000) == pytest.approx(0.2)
    assert schedule.coef_at(10**9) == pytest.approx(0.2)


def test_a_teacher_kept_at_an_end_weight_still_labels_and_pulls_after_its_steps() -> None:
    samples_per_update = 64 * 16
    t = trainer(kickstart_teacher="scripted:constant", kickstart_coef=1.0, kickstart_steps=samples_per_update,
                kickstart_coef_end=0.5)
    later = train(t, 4)[-1]
    assert later["kickstart_coef"] == 0.5
    assert later["kickstart_loss"] > 0.0
    t.close()


def test_a_teacher_pulls_the_learner_to_its_throw_and_the_reward_takes_over_after() -> None:
    # Rock is the dominated throw of rpsw: the reward alone drives it out (see test_trainer_learning),
    # so a learner throwing rock most of the time is the teacher's doing.
    samples_per_update = 64 * 16  # learner rows (team 0 of 64 envs) x rollout steps
    t = trainer(
        kickstart_teacher="scripted:constant", kickstart_coef=1.0, kickstart_steps=10 * samples_per_update
    )
    losses = train(t, 8)
    assert rock_probability(t) > 0.8
    assert losses[-1]["kickstart_loss"] < 0.5 * losses[0]["kickstart_loss"]
    assert losses[0]["kickstart_coef"] == 1.0
    train(t, 2)  # the weight reaches 0 after update 10: from there only the reward counts
    final = train(t, 40)
    assert final[-1]["kickstart_coef"] == 0.0
    assert "kickstart_loss" not in final[-1]
    assert rock_probability(t) < 0.1
    t.close()


def test_without_a_teacher_the_losses_are_exactly_those_of_plain_ppo() -> None:
    a, b = trainer(), trainer(kickstart_teacher="scripted:constant", kickstart_coef=0.0, kickstart_steps=10)
    la, lb = train(a, 2), train(b, 2)
    assert [x["policy_loss"] for x in la] == [x["policy_loss"] for x in lb]
    a.close()
    b.close()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"kickstart_teacher": "runs/a.pt", "kickstart_steps": 10}, "scripted bot"),
        ({"kickstart_teacher": "scripted:heuristic", "kickstart_steps": 0}, "kickstart_steps > 0"),
        ({"kickstart_teacher": "scripted:heuristic", "kickstart_steps": 10, "kickstart_coef": -1.0},
         "kickstart_coef"),
        ({"kickstart_teacher": "scripted:heuristic", "kickstart_steps": 10,
          "kickstart_coef_end": float("nan")},
         "kickstart_coef_end"),
    ],
)
def test_a_bad_kickstart_setting_is_named(overrides, message) -> None:
    with pytest.raises(ValueError, match=message):
        TrainerConfig(**overrides).validate()


def test_a_teacher_of_another_game_is_refused_naming_the_bots_of_this_one() -> None:
    with pytest.raises(ValueError, match="unknown scripted player 'scripted:heuristic' for game 'rpsw'"):
        trainer(kickstart_teacher="scripted:heuristic", kickstart_steps=10)


def test_a_resumed_kickstarted_run_continues_with_the_same_losses(tmp_path) -> None:
    # A teacher that draws random actions: its labels must follow the update number, not the process.
    settings = dict(kickstart_teacher="scripted:random", kickstart_steps=10**5, checkpoint_dir=str(tmp_path))
    first = trainer(**settings)
    train(first, 2)
    path = first.save()
    keys = ("policy_loss", "value_loss", "entropy", "kickstart_loss", "kickstart_coef")
    continued = [tuple(x[k] for k in keys) for x in train(first, 2)]
    resumed = PPOTrainer.resume(path, matchmaker=FixedMix("scripted:random"))
    assert [tuple(x[k] for k in keys) for x in train(resumed, 2)] == continued
    first.close()
    resumed.close()


def test_the_kickstart_preset_names_the_heuristic_teacher_and_a_misspelt_key_is_listed() -> None:
    from arena.config import compose_run_config

    cfg = compose_run_config(["trainer=kickstart"])
    assert cfg.trainer.kickstart_teacher == "scripted:heuristic"
    assert cfg.trainer.kickstart_steps > 0
    with pytest.raises(Exception, match="kickstart_teacher"):
        compose_run_config(["trainer=kickstart", "trainer.kickstart_teachr=scripted:random"])


def test_a_teachers_fire_with_nothing_to_launch_is_read_as_hold_and_nothing_else_changes() -> None:
    # The learner gives an illegal action probability 0, so its cross-entropy toward one would be
    # unbounded: the label becomes the head's first legal value. Midrange masks only "fire".
    env = arena.make("midrange", num_envs=32, num_threads=1, seed=5)
    rng = np.random.default_rng(0)
    obs = []
    for _ in range(40):
        a = np.stack([rng.integers(0, k, env.num_agents) for k in (5, 3, 2)], axis=1).astype(np.int32)
        env.step(a)
        obs.append(env.observations.copy())
    obs = torch.from_numpy(np.stack(obs))
    kick = Kickstart(KickstartSchedule("scripted:random", 1.0, 100), "midrange", (1, 1), env.params, seed=1)
    raw = torch.from_numpy(kick._teacher(7).act(obs.reshape(-1, env.obs_dim).numpy()).astype(np.int64))
    labels = kick.labels(obs, 7).reshape(-1, 3)
    can_fire = obs.reshape(-1, env.obs_dim)[:, -1] > 0.5
    assert bool(((raw[:, 2] == 1) & ~can_fire).any()) and bool(((raw[:, 2] == 1) & can_fire).any())
    assert torch.equal(labels[:, 2], raw[:, 2] * can_fire)
    assert torch.equal(labels[:, :2], raw[:, :2])


def test_a_teachers_labels_on_a_zeroed_row_are_kept_as_the_learners_mask_keeps_none() -> None:
    # A shot-down fighter's row is all zeros: no flag set, so no mask (masked_logits), and the
    # teacher's label stands; a flagged row still has its illegal fire read as hold.
    actions = np.array([[3, 2, 1], [3, 2, 1]])
    legal = np.zeros((2, 10), dtype=bool)
    legal[1, :9] = True  # a live row where fire is illegal
    assert legal_labels(actions, legal, [5, 3, 2]).tolist() == [[3, 2, 1], [3, 2, 0]]
