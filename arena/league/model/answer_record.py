"""The record of a league's answer (``league.answer``, ``arena.league.run.answer``) in its store's meta.

When a main exploiter first beats a candidate to publish, the league writes which candidate, which
exploiter snapshot beat it, and the main learner's step and checkpoint count then (meta key
``ANSWER_KEY``). A resumed run reads it to answer again; ``python -m arena.league show`` prints it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

ANSWER_KEY = "answer"  # store meta: {"candidate", "exploiter", "step", "checkpoints"}


@dataclass(frozen=True)
class AnswerRecord:
    candidate: str  # the beaten candidate, whose weights the learner went back to
    exploiter: str  # the exploiter snapshot that beat it
    step: int  # the main learner's step at the switch
    checkpoints: int  # the checkpoints the main learner had written by then

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return (f"answering since the learner's step {self.step:,}: {self.exploiter} beat the candidate "
                f"{self.candidate}")


def answer_record(meta: Mapping[str, str]) -> AnswerRecord | None:
    """The answer a league's store records, or None where the learner has not switched."""
    if ANSWER_KEY not in meta:
        return None
    value = json.loads(meta[ANSWER_KEY])
    return AnswerRecord(str(value["candidate"]), str(value["exploiter"]), int(value["step"]),
                        int(value["checkpoints"]))
