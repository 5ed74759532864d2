"""The answer: once a main exploiter beats a candidate to publish, the main learner learns to beat it.

A league's main exploiter (``target: candidate``) attacks what the league could publish. When a
generation beats a candidate (its snapshot gate's threshold against it, ``SnapshotGate.beats``), the
league has found a hole, and ``league.answer`` (``AnswerConfig``) makes the main learner close it:

- its weights go back to the beaten candidate's (``restore``, through ``Guard.restore_to``): the
  candidate cleared the gauntlet's bar, while the learner may since have drifted;
- from then on, to the end of the run, its opponents come from ``answer.mix``: by default half the
  exploiters' snapshots by PFSP (those that beat candidates, and those that held their target to
  their step budget, which PFSP weighs less once the learner beats them) and half the bots by PFSP
  (the ones it still loses to), with no mirror play and no PFSP over its own snapshots;
- its kickstarting teacher is paused (``PPOTrainer.pause_kickstart``) unless ``answer.teacher``.

Its snapshots go on as before: the gauntlet judges them, those that clear the bar are candidates,
and the main exploiter's next generation attacks the newest. A defeat of one of them adds another
exploiter snapshot to PFSP's pool, so the learner answers it as well; the restore happens once,
at the first defeat. ``league.publish: held`` (``+league=answer``'s) then publishes the candidate
that held its generation longest; ``unbeaten``, the newest candidate still standing.

Why (docs/results/exploitability.md, the fine-tune outside the league): a beaten candidate
fine-tuned against its exploiter and the heuristic, half and half (``trainer.init``), learnt the
exploiter's answer and kept the heuristic (on one seed of two it also held the outside attacker
far lower than its source), while in the league's own mix, where the exploiters' snapshots were
a third of the learner's matches beside mirror play, its own snapshots and its teacher, the
learner never learnt their answer.

The switch is recorded in the league store's meta (``arena.league.model.answer_record``: the
candidate, the exploiter's snapshot, the learner's step and checkpoint count), so a resumed run
answers again: the mix and the pause are applied at ``attach``, and a resume from a checkpoint
written before the switch restores the candidate's weights again.
"""

from __future__ import annotations

import logging

from arena.league.config import AnswerConfig
from arena.league.matchmaking.pfsp import Matchmaker
from arena.league.model.answer_record import ANSWER_KEY, AnswerRecord, answer_record
from arena.league.model.league import League
from arena.league.run.guard import Guard
from arena.league.run.learner import LeagueLearner

logger = logging.getLogger(__name__)

METRIC = "league/answering"  # 1 once the learner answers its exploiters


class Answer:
    """The main learner's switch to answering its exploiters (the module docstring). ``LeagueRun``
    owns one when ``league.answer`` is set: ``resume`` at ``attach``, ``begin`` when a main exploiter
    beats a candidate."""

    def __init__(self, league: League, config: AnswerConfig, guard: Guard) -> None:
        self.league, self.config, self.guard = league, config, guard
        self.state: AnswerRecord | None = answer_record(league.store.meta())

    @property
    def active(self) -> bool:
        return self.state is not None

    def resume(self, main: LeagueLearner, learner_checkpoints: int) -> None:
        """At ``attach``: a run that had switched answers again; weights from a checkpoint written
        before the switch go back to the candidate's once more."""
        if self.state is None:
            return
        if self.config.restore and learner_checkpoints <= self.state.checkpoints:
            self.guard.restore_to(main, self.state.candidate)
            logger.info("answer: the learner resumes from a checkpoint written before the switch; its "
                        "weights are %s's again", self.state.candidate)
        self._apply(main)

    def begin(self, main: LeagueLearner, exploiter_snapshot: str, candidate: str) -> bool:
        """A main exploiter's snapshot ``exploiter_snapshot`` beat ``candidate``: the learner starts
        answering (the first time; later defeats only grow PFSP's pool). Returns whether it started."""
        if self.state is not None:
            return False
        state = AnswerRecord(candidate, exploiter_snapshot, int(main.step), int(main.checkpoints))
        self.league.store.set_metas({ANSWER_KEY: state.as_meta()})
        self.state = state
        if self.config.restore:
            self.guard.restore_to(main, candidate)
        self._apply(main)
        logger.warning("answer: %s beat the candidate %s; at step %d the learner %s and from now on plays "
                       "%s%s", exploiter_snapshot, candidate, main.step,
                       f"goes back to {candidate}'s weights" if self.config.restore else "keeps its weights",
                       self.config.mix.as_dict(), "" if self.config.teacher else " without its teacher")
        return True

    def _apply(self, main: LeagueLearner) -> None:
        chooser = main.matchmaker.chooser
        if not isinstance(chooser, Matchmaker):
            raise TypeError(f"league.answer changes the main learner's matchmaking mix; its chooser is a "
                            f"{type(chooser).__name__}, not a league Matchmaker")
        chooser.set_mix(self.config.mix.as_dict())  # candidates are cached per source: none is stale
        if not self.config.teacher:
            pause = getattr(main.trainer, "pause_kickstart", None)
            if callable(pause):
                pause(True)

    def metrics(self) -> dict[str, float]:
        return {METRIC: float(self.active)}
