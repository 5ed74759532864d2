"""Snapshot files (frozen learners) and the gate that decides when to take one.

A snapshot file is immutable: written once, atomically (temp file in the same directory, fsync,
os.replace, fsync of the directory), made read-only, and identified by its sha256, which the league
store records so that a later load can prove it reads the very weights that were rated.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from arena.atomic import SnapshotIntegrityError as SnapshotIntegrityError  # the league names it here too
from arena.atomic import sha256_file, verify_sha256
from arena.league.model.players import Player

RESTORE_ADVICE = ("restore that file from a backup: arena writes a snapshot once and never changes it, and "
                  "the league cannot play or rate this player until its file is back (arena changed nothing)")


def write_snapshot(path: str | os.PathLike[str], data: bytes | Mapping[str, Any]) -> str:
    """Write an immutable snapshot atomically and return its sha256.

    data is raw bytes or a torch state dict (any object `torch.save` accepts as a mapping). A reader
    sees either no file or the complete file, never a partial one. Writing the same content to an
    existing snapshot path is a no-op (so a resumed run can repeat it); different content fails.
    """
    path = Path(path)
    if isinstance(data, Mapping):
        payload = _torch_bytes(data)
    elif isinstance(data, bytes | bytearray | memoryview):
        payload = bytes(data)
    else:
        raise ValueError(f"snapshot data must be bytes or a state dict (mapping), not {type(data).__name__}")
    digest = hashlib.sha256(payload).hexdigest()
    if path.exists():
        existing = sha256_file(path)
        if existing != digest:
            raise FileExistsError(
                f"snapshot {path} already exists with sha256 {existing}; snapshots are immutable "
                f"and the new content has sha256 {digest}"
            )
        return digest
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
        _fsync_dir(directory)
        return digest
    finally:
        tmp.unlink(missing_ok=True)


def _torch_bytes(state: Mapping[str, Any]) -> bytes:
    # Serialise in memory: torch.save to a path names the archive after the file, so the temp file's
    # random name would leak into the bytes and the same weights would hash differently.
    import torch  # only writers of state dicts need torch

    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    return buffer.getvalue()


def verify_snapshot(path: str | os.PathLike[str], sha256: str) -> None:
    """Raise SnapshotIntegrityError unless the file's sha256 is `sha256` (FileNotFoundError if missing)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"snapshot file {path} does not exist (the league recorded sha256 {sha256}); "
                                f"{RESTORE_ADVICE}")
    verify_sha256(path, sha256, what="snapshot", advice=RESTORE_ADVICE)


def file_stat(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(size, mtime_ns) of a file: what the store remembers of a snapshot whose sha256 was checked."""
    st = os.stat(path)
    return int(st.st_size), int(st.st_mtime_ns)


def verify_snapshots(run_dir: str | os.PathLike[str], players: Iterable[Player],
                     known: Mapping[str, tuple[int, int]], *,
                     verify_all: bool = False) -> dict[str, tuple[int, int]]:
    """Checks the snapshot files of ``players``: a file whose (size, mtime_ns) is the one in ``known``
    (recorded when it was last hashed) is taken as checked; any other is hashed against its sha256
    (every one with ``verify_all``). Raises as ``verify_snapshot`` does; returns the stats of the files
    it hashed, for the store to remember (``LeagueStore.set_file_stats``)."""
    checked: dict[str, tuple[int, int]] = {}
    for player in players:
        if player.sha256 is None:
            continue
        path = snapshot_file(run_dir, player)
        if not path.is_file():
            verify_snapshot(path, player.sha256)  # raises, naming the file
        stat = file_stat(path)
        if not verify_all and known.get(player.player_id) == stat:
            continue
        verify_snapshot(path, player.sha256)
        checked[player.player_id] = stat
    return checked


def load_snapshot(path: str | os.PathLike[str], sha256: str, map_location: str = "cpu") -> Any:
    """Verify a snapshot against its sha256, then load it with torch (weights only, no pickled code)."""
    verify_snapshot(path, sha256)
    import torch

    return torch.load(path, map_location=map_location, weights_only=True)


class SnapshotGate:
    """Decides when the learner is frozen into a new snapshot.

    Either criterion (or both) may be set:
    - every_steps: at least this many learner steps since the last snapshot (since step 0 if none);
    - beat_all_threshold: the learner's score against every pool member is above the threshold, with
      at least min_games against each (an empty pool gives no evidence, so never triggers this).
    Never fires twice at the same step (step must be past last_snapshot_step); beat_all_threshold
    never fires within min_steps learner steps of the last snapshot (the first one is not held back;
    every_steps is not held back either). A learner's own snapshots join the pool it is judged
    against with no games, which holds its next one back until it has played them; a learner judged
    against others only (a main exploiter, ``vs_kinds: [learner]``) that goes on after a snapshot
    would otherwise be due again at its very next update, on the same evidence. AlphaStar's
    exploiters wait half their snapshot period (min_steps) in the same way.
    """

    def __init__(
        self, every_steps: int | None = None, beat_all_threshold: float | None = None, min_games: int = 0,
        min_steps: int = 0,
    ) -> None:
        if every_steps is None and beat_all_threshold is None:
            raise ValueError("SnapshotGate needs every_steps and/or beat_all_threshold; both are None")
        if every_steps is not None and (isinstance(every_steps, bool) or not isinstance(every_steps, int)
                                        or every_steps <= 0):
            raise ValueError(f"every_steps={every_steps!r} must be a positive int or None")
        if beat_all_threshold is not None and not (
            isinstance(beat_all_threshold, int | float) and 0.0 <= beat_all_threshold < 1.0
        ):
            raise ValueError(f"beat_all_threshold={beat_all_threshold!r} must be in [0, 1) or None")
        if not (isinstance(min_games, int | float) and math.isfinite(min_games) and min_games >= 0):
            raise ValueError(f"min_games={min_games!r} must be >= 0")
        if isinstance(min_steps, bool) or not isinstance(min_steps, int) or min_steps < 0:
            raise ValueError(f"min_steps={min_steps!r} must be an int >= 0")
        self.every_steps = every_steps
        self.beat_all_threshold = beat_all_threshold
        self.min_games = min_games
        self.min_steps = min_steps

    @classmethod
    def of(cls, config: Any) -> SnapshotGate:
        """The gate a ``SnapshotConfig`` (``every_steps``, ``beat_all_threshold``, ``min_games``,
        ``min_steps``) describes."""
        return cls(config.every_steps, config.beat_all_threshold, config.min_games, config.min_steps)

    def should_snapshot(
        self,
        step: int,
        last_snapshot_step: int | None,
        win_rates_vs_pool: Mapping[str, tuple[float, float]] | Iterable[tuple[str, tuple[float, float]]],
    ) -> bool:
        """True when a snapshot is due; win_rates_vs_pool maps opponent id -> (score, games), or gives
        those pairs one at a time (read only as far as needed)."""
        if step < 0:
            raise ValueError(f"step {step} must be >= 0")
        last = 0 if last_snapshot_step is None else last_snapshot_step
        if last_snapshot_step is not None and step <= last_snapshot_step:
            return False
        if self.every_steps is not None and step - last >= self.every_steps:
            return True
        if last_snapshot_step is not None and step - last_snapshot_step < self.min_steps:
            return False  # the score is still the evidence the last snapshot was taken on
        return self.beat_all_threshold is not None and self._beats_all(win_rates_vs_pool)

    def beats(self, win_rates: Mapping[str, tuple[float, float]]
              | Iterable[tuple[str, tuple[float, float]]]) -> bool:
        """Whether the scores clear ``beat_all_threshold`` with ``min_games`` each, whatever the step:
        the verdict the gate's threshold gives (False without a threshold or without scores)."""
        return self.beat_all_threshold is not None and self._beats_all(win_rates)

    def _beats_all(self, win_rates_vs_pool: Mapping[str, tuple[float, float]]
                   | Iterable[tuple[str, tuple[float, float]]]) -> bool:
        items = win_rates_vs_pool.items() if isinstance(win_rates_vs_pool, Mapping) else win_rates_vs_pool
        seen = False
        for opponent, (score, games) in items:
            seen = True
            if not (0.0 <= score <= 1.0) or games < 0:
                raise ValueError(
                    f"win rate against {opponent!r} is ({score!r}, {games!r}); "
                    "need score in [0, 1] and games >= 0"
                )
            if games < self.min_games or score <= self.beat_all_threshold:
                return False
        return seen  # an empty pool gives no evidence


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every platform allows opening a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def snapshot_file(run_dir: str | os.PathLike[str], player: Player) -> Path:
    """The file of a snapshot player: its stored path, relative to the run directory unless absolute."""
    if player.path is None:
        raise ValueError(f"player {player.player_id!r} ({player.kind}) has no snapshot file")
    path = Path(player.path)
    return path if path.is_absolute() else Path(run_dir) / path
