"""Rollout bookkeeping: segments and LSTM states replay exactly, who is in the batch, opponents, rewards."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.trainer.checkpoint import save_policy_snapshot
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.events import MatchesEnded
from arena.trainer.opponents import FixedMix
from arena.trainer.ppo import PPOTrainer

SMALL_POLICY = PolicyConfig(hidden_size=16, lstm_size=16)


def rpsw_trainer(matchmaker=None, **overrides) -> PPOTrainer:
    values = dict(
        num_envs=16, num_threads=1, torch_threads=1, total_timesteps=100_000, bptt_horizon=8,
        rollout_steps=24, minibatch_size=24 * 32, update_epochs=1, seed=3,
    )
    values.update(overrides)
    return PPOTrainer(TrainerConfig(**values), SMALL_POLICY, game="rpsw", matchmaker=matchmaker)


def scramble(policy: torch.nn.Module) -> None:
    """Weights large enough that the LSTM state visibly changes the action distribution."""
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for p in policy.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)


def replayed_logprobs(trainer: PPOTrainer, zero_states: bool = False) -> torch.Tensor:
    exp = trainer.experience
    ids = torch.arange(exp.num_segments)
    mb = exp.gather(ids, torch.zeros_like(exp.values), torch.zeros_like(exp.values))
    state = (torch.zeros_like(mb.state[0]), torch.zeros_like(mb.state[1])) if zero_states else mb.state
    with torch.no_grad():
        logits, _ = trainer.policy.forward_sequence(mb.obs, state, mb.episode_starts)
        replayed = trainer.policy.log_prob(logits, mb.actions)  # [segments, horizon]
    # segment id = block * rows + row: back to the buffer's step-major [T, rows]
    by_block = replayed.view(exp.segments_per_row, exp.rows, exp.horizon).transpose(1, 2)
    return by_block.reshape(exp.steps, exp.rows)


def mixed_matchmaker() -> FixedMix:
    return FixedMix({"mirror": 1.0, "scripted:random": 1.0}, redraw=True, seed=5)


def test_training_replays_exactly_the_log_probs_the_rollout_computed() -> None:
    trainer = rpsw_trainer(mixed_matchmaker())
    scramble(trainer.policy)
    trainer.evaluate()
    exp = trainer.experience
    starts = exp.episode_starts.view(exp.segments_per_row, exp.horizon, exp.rows)
    assert starts[:, 1:].any(), "episodes must start inside segments for this test"
    mask = exp.learner_mask
    error = (replayed_logprobs(trainer) - exp.logprobs).abs()[mask].max()
    assert float(error) < 1e-5
    # the check has teeth: without the stored segment-start states the replay differs
    wrong = (replayed_logprobs(trainer, zero_states=True) - exp.logprobs).abs()[mask].max()
    assert float(wrong) > 1e-3
    # train() measures the same thing on its first minibatch (here: the whole batch)
    assert trainer.train()["replay_logprob_error"] < 1e-5
    trainer.evaluate()  # the second rollout continues from the LSTM states the first one left
    assert float((replayed_logprobs(trainer) - exp.logprobs).abs()[exp.learner_mask].max()) < 1e-5
    trainer.close()


@pytest.mark.parametrize("frozen", [False, True])
def test_overlapped_and_sequential_rollouts_collect_identical_experience(tmp_path, frozen) -> None:
    # With a frozen policy in the mix (frozen=True), the opponents act once a step on both halves
    # while the learner acts half by half: still the experience of one piece.
    matchmaker = mixed_matchmaker
    if frozen:
        from arena.agents.policy import Policy

        spec = rpsw_trainer(FixedMix("mirror")).policy.spec
        torch.manual_seed(11)
        opponent = Policy(**spec)
        scramble(opponent)
        path = tmp_path / "frozen.pt"
        torch.save({"policy_spec": spec, "policy": opponent.state_dict()}, path)

        def matchmaker() -> FixedMix:
            return FixedMix({"mirror": 1.0, "scripted:random": 1.0, f"checkpoint:{path}": 2.0}, redraw=True,
                            seed=5)
    trainers = [rpsw_trainer(matchmaker(), overlap=flag) for flag in (True, False)]
    assert len(trainers[0].rollout.halves) == 2 and len(trainers[1].rollout.halves) == 1
    for trainer in trainers:
        scramble(trainer.policy)
        trainer.evaluate()
        trainer.evaluate()  # a second rollout: opponents reassigned over the first
    a, b = (t.experience for t in trainers)
    assert frozen == any(p.startswith("checkpoint:") for p in trainers[0].opponents.assignment())
    for name in ("obs", "actions", "logprobs", "values", "rewards", "terminals", "episode_starts",
                 "learner_mask", "state_h", "next_value"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name), msg=name)
    for trainer in trainers:
        trainer.close()


def test_mirror_play_puts_team_1_rows_in_the_batch_and_scripted_play_does_not() -> None:
    mirror = rpsw_trainer(FixedMix("mirror"))
    scripted = rpsw_trainer(FixedMix("scripted:random"))
    for trainer in (mirror, scripted):
        trainer.evaluate()
    team1 = torch.from_numpy(mirror.env.team_of_row == 1)
    assert bool(mirror.experience.learner_mask.all())
    assert not bool(scripted.experience.learner_mask[:, team1].any())
    assert bool(scripted.experience.learner_mask[:, ~team1].all())
    assert mirror.global_step == 2 * scripted.global_step == 32 * 24
    assert len(scripted.experience.learner_segments()) == 16 * 3
    metrics = scripted.mean_and_log()
    assert "win_rate/scripted:random" in metrics and "win_rate/mirror" not in metrics
    assert "win_rate/mirror" in mirror.mean_and_log()
    for trainer in (mirror, scripted):
        trainer.close()


class RecordingMatchmaker:
    """Alternates each env between mirror and the cycle bot at every episode end."""

    def __init__(self) -> None:
        self.calls: list[MatchesEnded] = []
        self.flip: dict[int, bool] = {}

    def __call__(self, event: MatchesEnded) -> list[str]:
        self.calls.append(event)
        out = []
        for e in event.env_ids.tolist():
            self.flip[e] = not self.flip.get(e, e % 2 == 0)
            out.append("mirror" if self.flip[e] else "scripted:cycle")
        return out


def test_the_opponent_of_an_env_changes_only_at_its_episode_ends() -> None:
    matchmaker = RecordingMatchmaker()
    trainer = rpsw_trainer(matchmaker)
    assert len(matchmaker.calls) == 1 and not matchmaker.calls[0].ended.any()  # the first assignment
    trainer.evaluate()
    exp = trainer.experience
    team1 = trainer.env.team_of_row == 1
    mask = exp.row_major(exp.learner_mask)[team1].numpy()
    starts = exp.row_major(exp.episode_starts)[team1].numpy()
    changed = mask[:, 1:] != mask[:, :-1]
    assert changed.any()
    assert not (changed & ~starts[:, 1:]).any()
    # the matchmaker was asked exactly for the envs that finished, with their outcomes
    ends = exp.row_major(exp.terminals | exp.truncations)[torch.from_numpy(team1)].numpy()
    asked = sum(len(event.env_ids) for event in matchmaker.calls[1:])
    assert asked == int(ends.sum())
    assert all(event.ended.all() for event in matchmaker.calls[1:])
    assert all(set(event.outcomes.tolist()) <= {0, 1, 2} for event in matchmaker.calls[1:])
    # ...how long each match lasted (rpsw: always its rounds), and at which learner step
    rounds = trainer.env.params["rounds"]
    assert all((event.lengths == rounds).all() for event in matchmaker.calls[1:])
    assert all(event.learner_step == 0 for event in matchmaker.calls)  # within the first rollout
    metrics = trainer.mean_and_log()
    assert {"win_rate/mirror", "win_rate/scripted:cycle"} <= set(metrics)
    trainer.train()  # a batch mixing learner and opponent steps trains
    trainer.close()


def test_a_frozen_checkpoint_opponent_plays_team_1_and_stays_out_of_the_batch(tmp_path) -> None:
    torch.manual_seed(0)
    source = rpsw_trainer()
    path = save_policy_snapshot(source.policy, tmp_path / "frozen.pt")
    source.close()
    trainer = rpsw_trainer(FixedMix({f"checkpoint:{path}": 1.0, "mirror": 1.0}, seed=1))
    trainer.evaluate()
    frozen_envs = [i for i, p in enumerate(trainer.opponents.assignment()) if p != "mirror"]
    assert frozen_envs
    rows = [e * 2 + 1 for e in frozen_envs]
    assert not bool(trainer.experience.learner_mask[:, rows].any())
    assert f"win_rate/checkpoint:{path}" in trainer.mean_and_log()
    trainer.close()


def test_an_unknown_player_id_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown player id 'nobody'"):
        rpsw_trainer(FixedMix("nobody"))


class DoubleOutcome:
    """A reward function with two terms, recording its resets."""

    def __init__(self) -> None:
        self.resets: list[np.ndarray] = []

    def __call__(self, batch):
        won = batch.events[:, batch.event_names.index("round_won")].astype(np.float32)
        terms = {"outcome": batch.outcome_reward * 2.0, "round_won": won * 0.1}
        return terms["outcome"] + terms["round_won"], terms

    def reset(self, done_rows: np.ndarray) -> None:
        self.resets.append(done_rows.copy())


def test_a_reward_function_sets_the_training_reward_and_its_terms_are_logged() -> None:
    reward = DoubleOutcome()
    trainer = PPOTrainer(
        TrainerConfig(num_envs=8, num_threads=1, torch_threads=1, bptt_horizon=9, rollout_steps=18,
                      minibatch_size=18 * 16),
        SMALL_POLICY, game="rpsw", reward_fn=reward, matchmaker=FixedMix("scripted:cycle"),
    )
    trainer.evaluate()
    exp = trainer.experience
    tenths = set(torch.unique((exp.rewards * 10).round()).tolist())
    assert tenths <= {-20.0, -19.0, 0.0, 1.0, 19.0, 20.0, 21.0} and 1.0 in tenths  # 2 * outcome + .1 * won
    assert tenths & {-20.0, -19.0, 19.0, 20.0, 21.0}
    assert len(reward.resets) >= 18
    ends = (exp.terminals | exp.truncations)
    assert [bool(r.any()) for r in reward.resets[-18:]] == ends.any(1).tolist()
    metrics = trainer.mean_and_log()
    assert "reward/outcome" in metrics and "reward/round_won" in metrics
    trainer.close()


def test_a_truncated_episode_bootstraps_from_the_value_of_its_final_observation() -> None:
    trainer = PPOTrainer(
        TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, bptt_horizon=8, rollout_steps=16,
                      minibatch_size=64),
        SMALL_POLICY, game="midrange", env_overrides={"time_limit_s": 2.0},  # 10 decisions
    )
    scramble(trainer.policy)
    trainer.evaluate()
    exp = trainer.experience
    assert exp.truncations.any()
    assert bool((exp.final_values[exp.truncations] != 0).all())
    assert bool((exp.final_values[~exp.truncations] == 0).all())
    trainer.close()


def test_without_truncation_bootstrapping_a_time_limit_ends_the_return_like_a_terminal(monkeypatch) -> None:
    """trainer.bootstrap_truncation=false: no final-observation values are computed, and the
    advantage of the last step of a timed-out match is its reward minus its value, as at a terminal."""
    trainer = PPOTrainer(
        TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, bptt_horizon=8, rollout_steps=16,
                      minibatch_size=64, bootstrap_truncation=False, gae_lambda=1.0),
        SMALL_POLICY, game="midrange", env_overrides={"time_limit_s": 2.0},  # 10 decisions
    )
    scramble(trainer.policy)
    trainer.evaluate()
    exp = trainer.experience
    assert exp.truncations.any() and bool((exp.final_values == 0).all())
    import arena.trainer.ppo as ppo

    seen, original = {}, ppo.compute_gae

    def capture(*args, **kwargs):
        seen["args"] = args
        return original(*args, **kwargs)

    monkeypatch.setattr(ppo, "compute_gae", capture)
    trainer.train()
    terminals, truncations = seen["args"][2], seen["args"][3]
    assert bool(terminals[exp.truncations.t()].all()) and not truncations.any()
    trainer.close()


def test_a_scheduled_reward_is_told_the_sample_count_before_each_rollout() -> None:
    class Recorder(DoubleOutcome):
        def __init__(self) -> None:
            super().__init__()
            self.steps: list[int] = []

        def set_step(self, step: int) -> None:
            self.steps.append(step)

    reward = Recorder()
    trainer = PPOTrainer(
        TrainerConfig(num_envs=8, num_threads=1, torch_threads=1, bptt_horizon=9, rollout_steps=18,
                      minibatch_size=18 * 16),
        SMALL_POLICY, game="rpsw", reward_fn=reward, matchmaker=FixedMix("scripted:cycle"),
    )
    for _ in range(3):
        trainer.evaluate()
    assert reward.steps == [0, 144, 288]
    trainer.close()


def test_the_games_events_per_learner_fighter_and_match_are_logged() -> None:
    """In mirror play both fighters are the learner, so every hit one scores the other takes."""
    config = TrainerConfig(num_envs=32, num_threads=1, torch_threads=1, total_timesteps=100_000,
                           bptt_horizon=8, rollout_steps=48, minibatch_size=48 * 64, update_epochs=1, seed=4)
    trainer = PPOTrainer(config, SMALL_POLICY, game="midrange", env_overrides={"time_limit_s": 20.0},
                         matchmaker=FixedMix({"mirror": 1.0}))
    for _ in range(3):
        trainer.evaluate()
    metrics = trainer.mean_and_log()
    trainer.close()
    assert metrics["episodes"] > 0
    events = {k.removeprefix("match/"): v for k, v in metrics.items() if k.startswith("match/")}
    assert set(events) == {"fired", "hits", "kills", "was_hit", "died", "left_arena", "missed", "evaded"}
    # (no per-slot keys in 1v1: match/fighter<i>/... is for team games)
    assert events["fired"] > 0  # a fresh policy fires half the time
    assert events["hits"] == pytest.approx(events["was_hit"])
    assert events["missed"] == pytest.approx(events["evaded"])
    assert events["fired"] >= events["hits"] + events["missed"]  # the rest were in flight at the end


def test_a_team_games_events_are_logged_per_fighter_slot_too() -> None:
    """2v2 mirror play: every slot is the learner's; the slots' means average to the fighters' mean."""
    config = TrainerConfig(num_envs=16, num_threads=1, torch_threads=1, total_timesteps=100_000,
                           bptt_horizon=8, rollout_steps=48, minibatch_size=48 * 64, update_epochs=1, seed=4)
    trainer = PPOTrainer(config, SMALL_POLICY, game="midrange", team_sizes=(2, 2),
                         env_overrides={"time_limit_s": 20.0}, matchmaker=FixedMix({"mirror": 1.0}))
    for _ in range(3):
        trainer.evaluate()
    metrics = trainer.mean_and_log()
    trainer.close()
    slots = {k for k in metrics if k.startswith("match/fighter")}
    names = ("fired", "hits", "kills", "was_hit", "died", "left_arena", "missed", "evaded")
    assert slots == {f"match/fighter{i}/{name}" for i in range(4) for name in names}
    mean = sum(metrics[f"match/fighter{i}/fired"] for i in range(4)) / 4  # every slot ends every match
    assert metrics["match/fired"] == pytest.approx(mean)
    assert metrics["match/fighter0/fired"] > 0


def test_overlap_auto_splits_the_envs_unless_frozen_policies_can_be_opponents(tmp_path) -> None:
    # auto: halves for the learner itself and scripted bots; one piece when a frozen policy can play
    # (a checkpoint here; a league's matchmaker too), so each frozen player's weights are read once a
    # step. An explicit true or false is obeyed.
    from arena.agents.policy import Policy

    bots = rpsw_trainer(mixed_matchmaker())
    assert bots.config.overlap == "auto" and len(bots.rollout.halves) == 2
    path = tmp_path / "frozen.pt"
    torch.save({"policy_spec": bots.policy.spec, "policy": Policy(**bots.policy.spec).state_dict()}, path)
    frozen_mix = FixedMix({"mirror": 1.0, f"checkpoint:{path}": 1.0}, redraw=True, seed=5)
    assert len(rpsw_trainer(frozen_mix).rollout.halves) == 1
    from arena.league.config import league_config
    from arena.league.run.league_run import LeagueRun

    league = LeagueRun(league_config({"name": "selfplay"}), tmp_path / "league", game="rpsw")
    try:
        assert len(rpsw_trainer(league.matchmaker()).rollout.halves) == 1
    finally:
        league.close()
    assert len(rpsw_trainer(frozen_mix, overlap=True).rollout.halves) == 2
    assert len(rpsw_trainer(mixed_matchmaker(), overlap=False).rollout.halves) == 1
