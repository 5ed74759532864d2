"""``league.publish=held`` with ``league.main_exploiter.target=candidate``: the main exploiter attacks the
candidates to publish (snapshots whose gauntlet cleared the guard's bar, each set of weights once), and
the league publishes the one that held its generations longest."""

from __future__ import annotations

import numpy as np
import pytest

from arena.agents.players import resolve_player
from arena.bench.exploitability import main as exploitability_bench
from arena.league import LeagueStore, Player
from arena.league.config import GauntletConfig, LeagueConfig, MainExploiterConfig
from arena.league.matchmaking.exploiters import MainExploiterChooser
from arena.league.model.payoff import PayoffTable
from arena.league.model.players import Pool
from arena.league.model.published import published
from arena.league.model.time_to_exploit import TimeToExploit, beaten_at, held_longest, time_to_exploit
from arena.league.run.guard import best_snapshot
from arena.train import main

FAST = ["env=rpsw", "trainer=quick", "dashboard=false", "trainer.num_envs=32", "trainer.num_threads=1",
        "trainer.torch_threads=1"]


def _snap(index: int, parent: str = "learner") -> Player:
    return Player(f"{parent}:snap-{index:06d}", "snapshot", path=f"s{index}.pt", sha256=f"{index:064d}",
                  step=index * 100, parent=parent)


def _record(target: str, samples: int, exploited_at: int | None = None, snapshot_at: int | None = None,
            generation: str = "main_exploiter-0", since: int = 0, recent: float = 0.5) -> TimeToExploit:
    return TimeToExploit(generation, target, games=(samples - since) // 100, samples=samples, since=since,
                         exploited_at=exploited_at, recent=recent, snapshot_at=snapshot_at)


def test_a_candidate_target_attacks_each_candidate_to_publish_once_across_generations():
    pool = Pool([Player("learner", "learner"), Player("main_exploiter-0", "main_exploiter")])
    candidates: list[str] = []
    chooser = MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0),
                                   target="candidate", candidates=lambda: candidates)
    me = "main_exploiter-0"
    pool.add(_snap(1))
    pool.add(_snap(2))
    assert chooser.frozen_target(me) is None  # no candidate yet: the live learner, as with newest
    candidates.append("learner:snap-000002")  # snapshot 1 did not clear the bar
    assert chooser.frozen_target(me) == "learner:snap-000002"
    assert chooser.choose_many(me, 3) == ["learner:snap-000002"] * 3
    pool.add(_snap(3))  # newer, not a candidate
    pool.add(_snap(1, parent=me))  # it beat its target and restarts: the next generation...
    pool.add(Player("main_exploiter-1", "main_exploiter"))
    nxt = "main_exploiter-1"
    assert chooser.frozen_target(nxt) is None  # ...does not attack snapshot 2 again: it waits
    assert chooser.frozen_target(me) is None  # an old generation trains against nothing
    # target=newest would have sent the new generation to snapshot 3
    newest = MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0),
                                  target="newest")
    assert newest.frozen_target(nxt) == "learner:snap-000003"
    pool.add(_snap(4))
    candidates.append("learner:snap-000004")
    assert chooser.frozen_target(nxt) == "learner:snap-000004"
    pool.add(_snap(5))
    candidates.append("learner:snap-000005")
    assert chooser.frozen_target(nxt) == "learner:snap-000004"  # a newer one does not move it mid-way
    pool.add(_snap(1, parent=nxt))  # its snapshot (gave up, or beat it): on to the newest candidate
    pool.add(Player("main_exploiter-2", "main_exploiter"))
    assert chooser.frozen_target("main_exploiter-2") == "learner:snap-000005"
    with pytest.raises(ValueError, match="target='candidate' needs the league's candidates"):
        MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0), target="candidate")


def test_a_candidate_that_held_a_generation_is_attacked_again_up_to_attacks_generations():
    pool = Pool([Player("learner", "learner"), Player("main_exploiter-0", "main_exploiter")])
    candidates: list[str] = []
    chooser = MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0),
                                   target="candidate", candidates=lambda: candidates, attacks=2, budget=500)
    once = MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0),
                                target="candidate", candidates=lambda: candidates, budget=500)

    def gives_up_or_wins(generation: int, step: int) -> str:
        me = f"main_exploiter-{generation}"
        pool.add(Player(f"{me}:snap-000000", "snapshot", path="e.pt", sha256=f"{generation:064d}",
                        step=step, parent=me))
        pool.add(Player(f"main_exploiter-{generation + 1}", "main_exploiter"))
        return f"main_exploiter-{generation + 1}"

    pool.add(_snap(1))
    candidates.append("learner:snap-000001")
    assert chooser.frozen_target("main_exploiter-0") == "learner:snap-000001"
    pool.add(_snap(2))
    candidates.append("learner:snap-000002")  # a newer candidate comes while snapshot 1 is attacked
    nxt = gives_up_or_wins(0, 500)  # generation 0 gave up at its budget: snapshot 1 held
    assert chooser.frozen_target(nxt) == "learner:snap-000001"  # a second generation attacks it
    assert once.frozen_target(nxt) == "learner:snap-000002"  # attacks=1: on to the newest
    nxt = gives_up_or_wins(1, 700)  # it held the second too: two generations, on to the newest
    assert chooser.frozen_target(nxt) == "learner:snap-000002"
    nxt = gives_up_or_wins(2, 120)  # generation 2 beat snapshot 2 before its budget: not attacked again
    assert chooser.frozen_target(nxt) is None  # no newer candidate: it waits
    pool.add(_snap(3))
    candidates.append("learner:snap-000003")
    assert chooser.frozen_target(nxt) == "learner:snap-000003"
    with pytest.raises(ValueError, match="attacks=2 .* needs target='candidate' \\(not 'newest'\\)"):
        MainExploiterChooser(pool, PayoffTable(), "learner", rng=np.random.default_rng(0), target="newest",
                             attacks=2, budget=500)
    with pytest.raises(ValueError, match="needs league.main_exploiter.target=candidate \\(not 'newest'\\)"):
        LeagueConfig(main_exploiter=MainExploiterConfig(target="newest", attacks=2)).validate()
    with pytest.raises(ValueError, match="league.main_exploiter.attacks=0 must be an integer >= 1"):
        LeagueConfig(main_exploiter=MainExploiterConfig(attacks=0)).validate()


def test_a_snapshot_before_the_step_budget_is_a_defeat_and_one_at_it_is_giving_up():
    assert beaten_at(_record("c", 3000, snapshot_at=2500), budget=5000) == 2500
    assert beaten_at(_record("c", 5000, snapshot_at=5000), budget=5000) is None  # gave up: it held
    assert beaten_at(_record("c", 5000, exploited_at=4000, snapshot_at=5000), budget=5000) == 4000
    assert beaten_at(_record("c", 5000, exploited_at=4000, snapshot_at=3500), budget=5000) == 3500
    assert beaten_at(_record("c", 5000, snapshot_at=5000), budget=None) == 5000


def test_the_candidate_whose_first_defeat_took_its_generations_longest_is_published():
    candidates = ["a", "b", "c", "d"]
    records = [
        _record("a", 3000, snapshot_at=2900),  # beaten at 2,900
        _record("b", 8000, snapshot_at=8000),  # held 8,000 (the budget), then a second generation...
        _record("b", 1500, snapshot_at=1200, generation="main_exploiter-2"),  # ...beat it at 1,200
        _record("c", 10000),  # unbeaten so far, 10,000
        _record("learner", 9000),  # a generation that waited on the live learner: not a candidate
        _record("x", 9000),  # a target that is not a candidate (below the bar)
    ]
    assert held_longest(records, candidates, budget=8000) == "c"
    assert held_longest(records[:2], candidates, budget=8000) == "b"  # held 8,000 against a defeat at 2,900
    # b held a generation 8,000 and fell to the next 1,200 in: 9,200 spent up to its first defeat
    assert held_longest(records[:3], candidates, budget=8000) == "b"
    beaten_then = records[:3] + [_record("b", 9000, generation="main_exploiter-3")]  # after its defeat
    assert held_longest(beaten_then, candidates, budget=8000) == "b"  # ...counts nothing more
    # two generations held a 4,000 each: 8,000, before c's one generation of 7,000
    twice = [_record("a", 4000, snapshot_at=4000), _record("a", 4000, snapshot_at=4000,
                                                           generation="main_exploiter-1"),
             _record("c", 7000)]
    assert held_longest(twice, candidates, budget=4000) == "a"
    # equal samples: unbeaten before beaten, then the newer
    assert held_longest([_record("a", 3000), _record("b", 4000, snapshot_at=3000)], candidates, 8000) == "a"
    assert held_longest([_record("c", 3000), _record("a", 3000)], candidates, 8000) == "c"
    # counted from a generation's first game against its target: one that trained against the live
    # learner until 6,000 and gave up at 8,000 held its target 2,000 samples, not 8,000
    waited = [_record("a", 8000, snapshot_at=8000, since=6000), _record("b", 3000)]
    assert held_longest(waited, candidates, budget=8000) == "b"
    beaten_late = [_record("a", 7000, snapshot_at=6500, since=5000), _record("b", 3000, snapshot_at=1600)]
    assert held_longest(beaten_late, candidates, budget=8000) == "b"  # a fell 1,500 samples in
    # two that held a generation to its budget: the one it scored less against
    at_budget = [_record("a", 8000, snapshot_at=8000, recent=0.23), _record("b", 8000, snapshot_at=8000,
                                                                            recent=0.5)]
    assert held_longest(at_budget, candidates, budget=8000) == "a"
    assert held_longest(records[4:], candidates, budget=8000) is None  # no candidate attacked yet
    assert held_longest(records, [], budget=8000) is None


@pytest.mark.parametrize("attacks", [1, 2])
def test_a_held_league_attacks_its_candidates_and_publishes_the_one_that_held_longest(tmp_path, attacks):
    run_dir = tmp_path / "run"
    budget = 1200
    argv = [*FAST, "+league=robust", f"run_dir={run_dir}", "trainer.total_timesteps=9000",
            "league.snapshot.every_steps=1000", "league.gauntlet.every_steps=0", "league.gauntlet.games=20",
            "league.gauntlet.guard_bar=0.3", "league.publish=held", "league.main_exploiter.num_envs=8",
            "league.main_exploiter.target=candidate", "league.main_exploiter.reset_prob=1",
            "league.matchmaking.mix.learners=0", "league.matchmaking.mix.mirror=0.4",
            f"league.main_exploiter.snapshot.every_steps={budget}",
            "league.main_exploiter.snapshot.min_steps=0", f"league.main_exploiter.attacks={attacks}"]
    assert main(argv) == 0
    with LeagueStore(run_dir / "league.sqlite", create=False) as store:
        players = store.players()
        matches = store.matches()
        gauntlet = store.gauntlet()
        references = sorted({r.reference for r in gauntlet})
    snapshots = [p for p in players if p.kind == "snapshot" and p.parent == "learner"]
    scores = {p.player_id: best_snapshot(gauntlet, [p.player_id], references) for p in snapshots}
    candidates, seen = [], set()
    for p in snapshots:  # the rule, from the store: cleared the bar, each set of weights once
        score = scores[p.player_id]
        if score is not None and score.score >= 0.3 and p.sha256 not in seen:
            candidates.append(p.player_id)
            seen.add(p.sha256)
    assert candidates
    # the exploiter's generations attacked candidates (or waited on the live learner): each one once,
    # or, with attacks=2, again by the next generation when the first held it to its budget
    records = time_to_exploit(players, matches)
    attacked = [r for r in records if r.target != "learner"]
    targets = [r.target for r in attacked]
    assert targets and set(targets) <= set(candidates), (targets, candidates)
    for target in set(targets):
        runs = [i for i, t in enumerate(targets) if t == target]
        assert len(runs) <= attacks and runs == list(range(runs[0], runs[0] + len(runs))), targets
        assert all(beaten_at(attacked[i], budget) is None for i in runs[:-1]), attacked
    if attacks == 2:  # the budget is short enough that a generation holds a candidate here
        assert len(set(targets)) < len(targets), attacked
    # what is published is the rule's choice over the store's matches
    choice = held_longest(records, candidates, budget)
    assert choice is not None
    found = published(run_dir)
    assert [m.player_id for m in found.members] == [choice]
    assert resolve_player(f"league:{run_dir}", "rpsw", (1, 1)) is not None


def test_held_publishing_and_the_candidate_target_need_a_gauntlet_bar_and_a_main_exploiter():
    with pytest.raises(ValueError, match=r"league.publish=held reads the candidates.*guard_bar=None"):
        LeagueConfig(publish="held", main_exploiter=MainExploiterConfig()).validate()
    with pytest.raises(ValueError, match=r"main_exploiter.target=candidate reads the candidates.*games=0"):
        LeagueConfig(main_exploiter=MainExploiterConfig(target="candidate"),
                     gauntlet=GauntletConfig(games=0, guard_bar=0.8)).validate()
    with pytest.raises(ValueError, match="league.publish=held .* has no league.main_exploiter"):
        LeagueConfig(publish="held", gauntlet=GauntletConfig(guard_bar=0.8)).validate()
    LeagueConfig(publish="held", main_exploiter=MainExploiterConfig(target="candidate"),
                 gauntlet=GauntletConfig(guard_bar=0.8)).validate()


def test_the_goofspiel_bench_refuses_a_held_league_by_name(capsys):
    with pytest.raises(SystemExit):
        exploitability_bench(["league.publish=held", "--leagues", "selfplay"])
    assert "league.publish=held is not measured here" in capsys.readouterr().err
