"""The gauntlet: every new snapshot plays fixed reference players, on a scale that does not drift.

TrueSkill ratings are relative to a pool that keeps changing, so a collapse can hide in them: when
every player gets worse together, ratings barely move. A score against fixed references (by
default the game's reference bots, optionally named checkpoints) does not drift: snapshot 40 scoring
0.3 against the heuristic pilot where snapshot 30 scored 0.9 is a collapse, whatever the ratings
say. Every snapshot plays the same side-swapped, seed-paired games (the same seed, so the same
spawns: differences between snapshots come from the players), batched in the core by
``arena.evaluation``. Results go to the league store (``gauntlet`` table), the logs
(``gauntlet/<reference>``), the dashboard and ``python -m arena.league show``. With ``replays=N``
(``league.gauntlet.replays``) the first N games against each reference are saved as replay files,
``<replay_dir>/<snapshot>-vs-<reference>.npz`` (``-2``, ``-3``, ... after the first; see ``arena.replay``).
In an NvM game (``env.team_sizes=[2,1]``) the snapshot plays each reference on both sides, as every
evaluation does, and each side's games get their own row too (``side_name``: ``scripted:heuristic@2v1``
as the pair, ``@1v2`` as the single fighter); the guard still judges by the side-swapped rows.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.agents.players import game_spaces, resolve_player
from arena.evaluation.pairing import PlayedMatch
from arena.evaluation.runner import MatchSettings, play_match
from arena.league.model.store import GauntletRecord
from arena.league.run.learner import snapshot_file_name
from arena.league.view.metric_names import metric_name
from arena.replay.file import REPLAY_GAMES, save_replay
from arena.replay.record import ReplayRecorder

logger = logging.getLogger(__name__)


class Gauntlet:
    """Plays a snapshot file against every reference and returns the records (not yet stored)."""

    def __init__(
        self,
        references: Sequence[str],
        games: int,
        *,
        game: str,
        team_sizes: tuple[int, int],
        overrides: Mapping[str, Any] | None = None,
        seed: int = 12345,
        num_threads: int | None = None,
        replays: int = 0,
        replay_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if games < 1:
            raise ValueError(f"gauntlet games={games!r} must be >= 1")
        if isinstance(replays, bool) or not isinstance(replays, int) or not 0 <= replays <= games:
            raise ValueError(f"gauntlet replays={replays!r} must be an integer in [0, games={games}]")
        if replays:
            if game not in REPLAY_GAMES:
                raise ValueError(f"gauntlet replays record {list(REPLAY_GAMES)} games, not {game!r}")
            if replay_dir is None:
                raise ValueError("gauntlet replays need a replay_dir")
        self.replays = replays
        self.replay_dir = None if replay_dir is None else Path(replay_dir)
        self.saved: list[tuple[str, Path, Any]] = []  # (reference, file, Replay) saved since last taken
        self.games, self.game, self.team_sizes = int(games), game, tuple(team_sizes)
        self.overrides = dict(overrides or {})
        self.seed, self.num_threads = int(seed), num_threads
        self.spaces = game_spaces(game, self.team_sizes, self.overrides)
        # Resolved now: a reference that does not exist or fit the game fails at start-up, by name.
        self.references = {spec: resolve_player(spec, game, self.team_sizes, spaces=self.spaces)
                           for spec in references}

    def play(
        self, player_id: str, path: str | os.PathLike[str], learner_step: int | None
    ) -> list[GauntletRecord]:
        player = resolve_player(os.fspath(path), self.game, self.team_sizes, spaces=self.spaces)
        settings = MatchSettings(game=self.game, team_sizes=self.team_sizes, games=self.games,
                                 num_envs=self.games, seed=self.seed, num_threads=self.num_threads,
                                 overrides=self.overrides)
        records = []
        for spec, reference in self.references.items():
            recorder = self._recorder()
            result = play_match(player, reference, settings, recorder=recorder)
            if recorder is not None:
                self._save_replays(recorder.replays(result.matches), player_id, spec)
            played = [GauntletRecord(player_id, spec, learner_step, result.wins, result.draws, result.losses)]
            if self.team_sizes[0] != self.team_sizes[1]:  # NvM: each side on its own row too
                played += side_records(player_id, spec, learner_step, result.matches, self.team_sizes)
            records += played
            for record in played:
                score, lo, hi = record.score()
                logger.info("gauntlet %s vs %s: %d/%d/%d, score %.3f [%.3f, %.3f]", player_id,
                            record.reference, record.wins, record.draws, record.losses, score, lo, hi)
        return records

    def _recorder(self) -> Any:
        if not self.replays:
            return None

        return ReplayRecorder("first", self.replays)

    def _save_replays(self, replays: Sequence[Any], player_id: str, reference: str) -> None:
        assert self.replay_dir is not None
        snapshot = snapshot_file_name(player_id).removesuffix(".pt")
        stem = f"{snapshot}-vs-{metric_name(reference).removeprefix('gauntlet/')}"
        for i, replay in enumerate(replays):
            replay.extra["snapshot"], replay.extra["reference"] = player_id, reference
            path = save_replay(replay, self.replay_dir / f"{stem}{'' if i == 0 else f'-{i + 1}'}.npz")
            self.saved.append((reference, path, replay))
            logger.info("gauntlet replay %s", path)

    def take_saved(self) -> list[tuple[str, Path, Any]]:
        """(reference, replay file, ``Replay``) of every replay saved since the last call."""
        saved, self.saved = self.saved, []
        return saved


def side_name(reference: str, team_sizes: tuple[int, int], team: int) -> str:
    """The gauntlet row of a snapshot's games on one side of an NvM match: ``<reference>@<mine>v<theirs>``
    (``scripted:heuristic@2v1``: the snapshot flew the pair, the heuristic the single fighter)."""
    return f"{reference}@{team_sizes[team]}v{team_sizes[1 - team]}"


def side_records(player_id: str, reference: str, learner_step: int | None, matches: Sequence[PlayedMatch],
                 team_sizes: tuple[int, int]) -> list[GauntletRecord]:
    """The snapshot's W/D/L on each side of an NvM gauntlet (team 0's games, then team 1's); the guard
    judges by the side-swapped record of both, these are for the logs, the dashboard and ``league show``."""
    out = []
    for team in (0, 1):
        outcomes = [m.a_outcome for m in matches if m.a_team == team]
        out.append(GauntletRecord(player_id, side_name(reference, team_sizes, team), learner_step,
                                  outcomes.count(1), outcomes.count(0), outcomes.count(-1)))
    return out


def gauntlet_metrics(records: Sequence[GauntletRecord]) -> dict[str, float]:
    """``gauntlet/<reference>`` (score) with ``_lo`` / ``_hi`` (95% Wilson interval) per record."""
    out: dict[str, float] = {}
    for record in records:
        score, lo, hi = record.score()
        name = metric_name(record.reference)
        out[name], out[f"{name}_lo"], out[f"{name}_hi"] = score, lo, hi
    return out
