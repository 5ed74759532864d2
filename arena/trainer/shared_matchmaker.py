"""One matchmaker for all the ranks of a data-parallel run: rank 0 decides, every rank plays.

Each rank's ``Opponents`` asks its ``SharedMatchmaker`` for the next opponents of its finished envs at
every half-step (with none finished too: the question is a collective, asked in step by every rank).
The finished envs (as run-wide env ids), their outcomes and match lengths are gathered to rank 0,
which asks the run's one real matchmaker (a ``FixedMix``, or the league's) as a one-process run
would, and broadcasts the picks. A player that is new to the run comes with where to load it from (a
snapshot file), so each rank builds its own frozen copy; ranks other than 0 keep at most ``capacity``
such players loaded and reload an evicted one when it is picked again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from arena.trainer.distributed import Collective, Shard
from arena.trainer.events import MatchesEnded, Matchmaker
from arena.trainer.snapshot_copies import PlayerFile, SnapshotCopies

logger = logging.getLogger(__name__)


class SharedMatchmaker:
    """A rank's matchmaker: ``MatchesEnded`` (this rank's envs) -> player ids; ``inner`` (rank 0's)
    hears the run's event (run-wide env ids) and decides."""

    collective = True  # Opponents asks at every half-step, finished envs or not

    def __init__(
        self,
        collective: Collective,
        shard: Shard,
        inner: Matchmaker | None,
        *,
        source_of: Callable[[str], PlayerFile | None] | None = None,
        capacity: int = 64,
    ) -> None:
        """``inner``: the run's matchmaker on rank 0 (ignored elsewhere). ``source_of(player_id)``
        (rank 0): the file other ranks load a player from, with its sha256, or None for the ids
        ``Opponents`` builds itself (``mirror``, ``scripted:NAME``, ``checkpoint:PATH``)."""
        if collective.is_main and inner is None:
            raise ValueError("rank 0 of a data-parallel run needs the run's matchmaker")
        self.collective_group, self.shard = collective, shard
        self.inner = inner if collective.is_main else None
        self.source_of = source_of if source_of is not None else getattr(self.inner, "source_of", None)
        self.copies = SnapshotCopies(capacity)  # players loaded from files (other ranks)
        self.names: list[str] = []  # every player id sent so far, by code
        self.sources: dict[str, PlayerFile] = {}  # of the players loaded from files
        self.opponents: Any = None

    def bind(self, opponents: Any) -> None:
        self.opponents = opponents
        if self.inner is not None and callable(getattr(self.inner, "bind", None)):
            self.inner.bind(opponents)

    def __call__(self, event: MatchesEnded) -> list[str]:
        shard, group = self.shard, self.collective_group
        env_ids = np.asarray(event.env_ids, dtype=np.int64)
        k = len(env_ids)
        message = np.full((3, shard.num_envs), -1, dtype=np.int64)
        message[0, :k] = env_ids + shard.env_offset
        message[1, :k] = np.asarray(event.outcomes, dtype=np.int64)
        message[2, :k] = np.rint(np.asarray(event.lengths)).astype(np.int64)
        import torch

        every = group.cat(torch.from_numpy(message).unsqueeze(0)).numpy()  # [ranks, 3, n]
        codes = np.full(shard.world * shard.num_envs, -1, dtype=np.int64)
        new: list[tuple[str, PlayerFile | None]] = []
        if group.is_main:
            asked = every[:, 0, :] >= 0
            ids, results, lengths = every[:, 0, :][asked], every[:, 1, :][asked], every[:, 2, :][asked]
            run_event = MatchesEnded(ids, results.astype(np.int8), lengths.astype(np.float64),
                                     event.learner_step)
            picks = list(self.inner(run_event)) if len(ids) else []  # type: ignore[misc]
            index = {name: i for i, name in enumerate(self.names)}
            picked = np.empty(len(picks), dtype=np.int64)
            for j, name in enumerate(picks):
                if name not in index:
                    index[name] = len(self.names)
                    self.names.append(name)
                    new.append((name, self.source_of(name) if self.source_of is not None else None))
                picked[j] = index[name]
            codes[np.flatnonzero(asked.reshape(-1))] = picked
        header = np.array([len(new)], dtype=np.int64)
        sent = group.broadcast_array(np.concatenate([header, codes]))
        if sent[0] > 0:
            new = group.from_main(new)
            if not group.is_main:
                self.names.extend(name for name, _ in new)
                self.sources.update({name: src for name, src in new if src is not None})
        mine = sent[1:].reshape(shard.world, shard.num_envs)[shard.rank, :k]
        picks = [self.names[c] for c in mine.tolist()]
        if not group.is_main:
            self._load(picks)
        return picks

    def restore(self, names: list[str]) -> None:
        """Collective, before a resumed rank sets its assignment: ``names`` is the run's whole saved
        assignment (the same on every rank, read from the same checkpoint); every rank learns rank
        0's sources of the ids new to it, and loads the players its own envs need."""
        group = self.collective_group
        new = None
        if group.is_main:
            todo = [n for n in dict.fromkeys(names) if n not in self.names]
            new = [(n, self.source_of(n) if self.source_of is not None else None) for n in todo]
        new = group.from_main(new)
        self.names.extend(name for name, _ in new)
        if not group.is_main:
            self.sources.update({name: src for name, src in new if src is not None})
            shard = self.shard
            self._load(list(names[shard.env_offset : shard.env_offset + shard.num_envs]))

    def _load(self, picks: list[str]) -> None:
        """Builds this rank's copy of every picked player loaded from a file, evicting the oldest
        unassigned ones beyond ``capacity``."""
        for name in dict.fromkeys(picks):
            if name in self.sources:
                self.copies.use(self.opponents, name, self.sources[name])
        self.copies.trim(self.opponents, lambda: set(self.opponents.assignment()) | set(picks))

    # ------------------------------------------------------------------ checkpoints (rank 0's)

    def state_dict(self) -> dict[str, Any]:
        if self.inner is not None and callable(getattr(self.inner, "state_dict", None)):
            return self.inner.state_dict()  # type: ignore[attr-defined]
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.inner is not None and callable(getattr(self.inner, "load_state_dict", None)):
            self.inner.load_state_dict(state)  # type: ignore[attr-defined]
