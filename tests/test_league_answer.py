"""``league.answer``: once a main exploiter beats a candidate to publish, the main learner goes back to
that candidate's weights and answers the exploiters, half its matches against their snapshots and
half against the bots, without its teacher (arena/league/run/answer.py); ``league.publish=unbeaten``
publishes the newest candidate no generation has beaten."""

from __future__ import annotations

import json

import pytest
import torch
from omegaconf import OmegaConf

from arena.config import compose_run_config
from arena.games.rpsw.bots import THROWS
from arena.league import LeagueStore
from arena.league.__main__ import main as league_cli
from arena.league.config import AnswerConfig, GauntletConfig, LeagueConfig, MainExploiterConfig, league_config
from arena.league.model.answer_record import AnswerRecord, answer_record
from arena.league.model.published import published
from arena.league.model.time_to_exploit import TimeToExploit, newest_unbeaten, time_to_exploit
from arena.league.run.answer import METRIC
from arena.league.run.guard import best_snapshot
from arena.league.run.league_run import LeagueRun
from arena.train import main
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SMALL = PolicyConfig(hidden_size=8, lstm_size=8)
# The learner plays the constant bot (always rock); every update is due a snapshot and a gauntlet whose
# bar (0.5) a learner throwing paper clears. The main exploiter attacks candidates.
ANSWERING = {"matchmaking": {"mix": {"mirror": 0.5, "pfsp": 0.0, "scripted": 0.5}},
             "scripted": ["constant"], "snapshot": {"every_steps": 1, "beat_all_threshold": None},
             "gauntlet": {"players": ["scripted:constant"], "games": 40, "every_steps": 0, "guard_bar": 0.5},
             "main_exploiter": {"num_envs": 2, "target": "candidate", "wait": "rest"},
             "answer": {"enabled": True}}

ANSWER_SOURCES = ["pfsp_scripted", "pfsp_exploiters"]  # the default answer.mix, in SOURCES order


def _record(target: str, samples: int, snapshot_at: int | None = None) -> TimeToExploit:
    return TimeToExploit("main_exploiter-0", target, games=samples // 100, samples=samples, since=0,
                         exploited_at=None, recent=0.5, snapshot_at=snapshot_at)


def test_unbeaten_publishes_the_newest_candidate_no_generation_beat_else_the_one_that_held_longest():
    candidates = ["a", "b", "c"]
    assert newest_unbeaten([_record("a", 3000, snapshot_at=2000)], candidates, budget=5000) == "c"
    # c beaten, b never attacked: b stands
    assert newest_unbeaten([_record("a", 3000, snapshot_at=2000), _record("c", 900, snapshot_at=800)],
                           candidates, budget=5000) == "b"
    # a snapshot at the step budget is a generation giving up: c still stands
    assert newest_unbeaten([_record("c", 5000, snapshot_at=5000)], candidates, budget=5000) == "c"
    # every one beaten: the one whose defeat came latest (held_longest)
    beaten = [_record("a", 3000, snapshot_at=2000), _record("b", 900, snapshot_at=800),
              _record("c", 1500, snapshot_at=1200)]
    assert newest_unbeaten(beaten, candidates, budget=5000) == "a"
    assert newest_unbeaten([], [], budget=5000) is None


def test_an_answer_needs_a_main_exploiter_attacking_candidates_and_a_mix_that_sums_to_one():
    bar = GauntletConfig(guard_bar=0.8)
    with pytest.raises(ValueError, match="league.answer.enabled=true .* not no main exploiter"):
        league_config({"answer": {"enabled": True}, "gauntlet": {"guard_bar": 0.8}})
    with pytest.raises(ValueError, match="needs league.main_exploiter with target=candidate, not target=new"):
        league_config({"answer": {"enabled": True}, "main_exploiter": {"target": "newest"}})
    with pytest.raises(ValueError, match=r"league.answer.mix .* must hold probabilities >= 0 that sum to 1"):
        league_config({"answer": {"enabled": True, "mix": {"scripted": 0.7}},
                       "main_exploiter": {"target": "candidate"}, "gauntlet": {"guard_bar": 0.8}})
    with pytest.raises(ValueError, match="league.answer.teacher='no' must be true or false"):
        LeagueConfig(answer=AnswerConfig(teacher="no")).validate()
    with pytest.raises(ValueError, match="not supported with league.exploiter_ranks=true"):
        LeagueConfig(answer=AnswerConfig(enabled=True), exploiter_ranks=True, gauntlet=bar,
                     main_exploiter=MainExploiterConfig(target="candidate")).validate()
    LeagueConfig(answer=AnswerConfig(enabled=True), gauntlet=bar,
                 main_exploiter=MainExploiterConfig(target="candidate")).validate()


def always(policy, throw: str) -> None:
    with torch.no_grad():
        policy.actor.weight.zero_()
        policy.actor.bias.fill_(-30.0)
        policy.actor.bias[THROWS.index(throw)] = 30.0


def weights_of(policy) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in policy.state_dict().items()}


def open_run(tmp_path, learner_checkpoints: int = 0) -> tuple[LeagueRun, PPOTrainer]:
    run = LeagueRun(league_config(json.loads(json.dumps(ANSWERING))), tmp_path, game="rpsw",
                    learner_checkpoints=learner_checkpoints)
    config = TrainerConfig(num_envs=4, num_threads=1, torch_threads=1, total_timesteps=10**6, bptt_horizon=8,
                           rollout_steps=16, minibatch_size=64, seed=1,
                           checkpoint_dir=str(tmp_path / "checkpoints"), kickstart_teacher="scripted:counter",
                           kickstart_steps=10**6)
    trainer = PPOTrainer(config, SMALL, game="rpsw", matchmaker=run.matchmaker())
    run.attach(trainer)
    return run, trainer


def test_the_learner_goes_back_to_the_beaten_candidate_and_answers_without_its_teacher(tmp_path):
    run, trainer = open_run(tmp_path)
    always(trainer.policy, "paper")  # beats the constant rock: the snapshot clears the bar
    trainer.evaluate()
    metrics = trainer.mean_and_log()
    candidate = run.league.pool.latest_snapshot(parent="learner").player_id
    assert run.guard.candidates("learner") == [candidate]
    assert metrics[METRIC] == 0.0
    candidate_weights = weights_of(trainer.policy)
    always(trainer.policy, "scissors")  # the learner drifts; then an exploiter beats the candidate
    trainer.optimizer.state[next(iter(trainer.policy.parameters()))]["exp_avg"] = torch.ones(1)
    assert run.answer is not None and not trainer.kickstart_paused
    assert run.answer.begin(run.main, "main_exploiter-0:snap-000000", candidate)
    now = weights_of(trainer.policy)
    assert all(torch.equal(now[k], candidate_weights[k]) for k in now)
    assert not trainer.optimizer.state
    assert trainer.kickstart_paused
    chooser = run.main.matchmaker.chooser
    assert chooser.sources == ANSWER_SOURCES
    assert answer_record(run.league.store.meta()) == AnswerRecord(
        candidate, "main_exploiter-0:snap-000000", run.main.step, 0)
    # a second defeat changes nothing: the restore happens once
    always(trainer.policy, "rock")
    assert not run.answer.begin(run.main, "main_exploiter-1:snap-000000", candidate)
    assert trainer.policy.actor.bias[THROWS.index("rock")] == 30.0
    trainer.evaluate()
    assert trainer.train()["kickstart_coef"] == 0.0  # the teacher's loss is off
    metrics = trainer.mean_and_log()
    assert metrics[METRIC] == 1.0
    trainer.close()
    run.close()

    # a resume from a checkpoint written before the switch goes back to the candidate again
    run, trainer = open_run(tmp_path, learner_checkpoints=0)
    now = weights_of(trainer.policy)
    assert all(torch.equal(now[k], candidate_weights[k]) for k in now)
    assert trainer.kickstart_paused and run.main.matchmaker.chooser.sources == ANSWER_SOURCES
    trainer.close()
    run.close()
    # one from after it keeps its weights and answers on
    run, trainer = open_run(tmp_path, learner_checkpoints=1)
    now = weights_of(trainer.policy)
    assert not all(torch.equal(now[k], candidate_weights[k]) for k in now)
    assert trainer.kickstart_paused and run.main.matchmaker.chooser.sources == ANSWER_SOURCES
    trainer.close()
    run.close()


FAST = ["env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=32", "trainer.num_threads=1",
        "trainer.torch_threads=1"]


def test_a_league_whose_exploiter_beats_a_candidate_answers_it_and_publishes_the_newest_unbeaten(tmp_path,
                                                                                                 capsys):
    run_dir = tmp_path / "run"
    budget = 6000
    # the exploiter's gate: a score above 0.4 over 20 games is a defeat (rpsw's quick learner rarely
    # reaches 0.7 in this budget)
    argv = [*FAST, "+league=robust", f"run_dir={run_dir}", "trainer.total_timesteps=12000",
            "league.snapshot.every_steps=1000", "league.gauntlet.every_steps=0", "league.gauntlet.games=20",
            "league.gauntlet.guard_bar=0.3", "league.publish=unbeaten", "league.main_exploiter.num_envs=16",
            "league.main_exploiter.target=candidate", "league.main_exploiter.reset_prob=1",
            "league.matchmaking.mix.learners=0", "league.matchmaking.mix.mirror=0.4",
            f"league.main_exploiter.snapshot.every_steps={budget}",
            "league.main_exploiter.snapshot.min_steps=0",
            "league.main_exploiter.snapshot.beat_all_threshold=0.4", "league.answer.enabled=true"]
    assert main(argv) == 0
    with LeagueStore(run_dir / "league.sqlite", create=False) as store:
        players = {p.player_id: p for p in store.players()}
        matches = store.matches()
        gauntlet = store.gauntlet()
        meta = store.meta()
    switch = answer_record(meta)
    assert switch is not None
    assert players[switch.candidate].parent == "learner"
    assert players[switch.exploiter].parent.startswith("main_exploiter-")
    references = sorted({r.reference for r in gauntlet})
    score = best_snapshot(gauntlet, [switch.candidate], references)
    assert score is not None and score.score >= 0.3  # a candidate to publish
    # the learner's own games after the switch: the exploiters' snapshots and the bots, nothing else
    kinds_after = set()
    for m in matches:
        if tuple(m.team_a) == ("learner",) and (m.learner_step or 0) > switch.step + 1000:
            (opponent,) = m.team_b
            player = players[opponent]
            kinds_after.add("scripted" if player.kind == "scripted" else players[player.parent].kind)
    assert kinds_after <= {"scripted", "main_exploiter"} and "main_exploiter" in kinds_after, kinds_after
    # published: the rule over the store
    candidates, seen = [], set()
    for p in players.values():
        if p.kind == "snapshot" and p.parent == "learner":
            s = best_snapshot(gauntlet, [p.player_id], references)
            if s is not None and s.score >= 0.3 and p.sha256 not in seen:
                candidates.append(p.player_id)
                seen.add(p.sha256)
    choice = newest_unbeaten(time_to_exploit(players.values(), matches), candidates, budget)
    assert [m.player_id for m in published(run_dir).members] == [choice]
    # league show says when and why the learner switched
    assert league_cli(["show", str(run_dir), "--out", str(tmp_path / "views")]) == 0
    assert f"{switch.exploiter} beat the candidate {switch.candidate}" in capsys.readouterr().out


# Trial AT's league settings (docs/results/exploitability.md): trial AS's, given on the command line over
# +league=robust, with publish=held and 12M-sample generations
TRIAL_AT = ["league.exploiter_reward=game", "league.main_exploiter.reset_prob=1",
            "league.main_exploiter.snapshot.every_steps=12000000", "league.matchmaking.mix.learners=0",
            "league.matchmaking.mix.mirror=0.2", "league.matchmaking.mix.pfsp=0.2",
            "league.matchmaking.mix.pfsp_exploiters=0.3", "league.snapshot.every_steps=2000000",
            "league.main_exploiter.target=candidate", "league.publish=held", "league.answer.enabled=true",
            "league.main_exploiter.start_score=0.8", "league.main_exploiter.wait=rest"]


def test_the_answer_preset_is_the_league_recipe_of_trial_at():
    preset = OmegaConf.to_container(compose_run_config(["+league=answer"]).league, resolve=True)
    explicit = OmegaConf.to_container(compose_run_config(["+league=robust", *TRIAL_AT]).league, resolve=True)
    assert preset.pop("name") == "answer"
    explicit.pop("name")
    assert preset == explicit
    assert league_config(preset, "midrange").answer.enabled
