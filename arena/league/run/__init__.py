"""A league wired into a training run: ``LeagueRun`` (``league_run``) and the collaborators it owns: the
guard with the gauntlet's schedule (``guard``, ``gauntlet``), the snapshot schedule and what is published
(``schedule``), the exploiters (``exploiter_trainers``, and ``exploiter_ranks`` under torchrun), and the
learners' link to their trainers (``learner``). The top room of the league: it may import every other."""
