"""One writer per run directory: ``RUN_DIR/.arena.lock``, held with ``flock`` for the life of a run.

Two trainers writing one run directory spoil it (their checkpoints overwrite each other and their
matches mix in one league). ``RunLock`` takes an exclusive, non-blocking ``flock`` on the lock file
and writes its holder (pid, host, start time) into it. A second ``arena.train`` on the directory
fails at once with an error naming the holder's pid. The kernel drops the lock when its process
dies, however it dies (SIGKILL included), so a lock file left by a killed run is stale: the next run
takes it over and says so. Readers (``arena.league show``, ``arena.evaluate --league``) never take
the lock; the league store is SQLite in WAL mode, which lets them read while the run writes.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

LOCK_NAME = ".arena.lock"


class RunDirInUseError(RuntimeError):
    """Another live process holds the run directory."""


class RunLock:
    """Exclusive lock of a run directory; ``with RunLock(run_dir):`` or ``acquire()`` / ``release()``."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / LOCK_NAME
        self._file: IO[str] | None = None

    def acquire(self) -> RunLock:
        import fcntl  # POSIX only: the module must import everywhere, the lock is taken on Linux

        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held open for the run's life)
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(f)
            f.close()
            raise RunDirInUseError(
                f"run directory {self.path.parent} is in use by process {holder.get('pid', '?')} "
                f"(on {holder.get('host', '?')}, since {holder.get('started', '?')}): stop that run, or "
                f"give this one another run_dir=..."
            ) from None
        stale = _read_holder(f)
        if stale.get("pid") is not None:
            logger.warning("%s: taking over the lock of process %s, which is gone (a run that was killed)",
                           self.path, stale["pid"])
        f.seek(0)
        f.truncate()
        json.dump({"pid": os.getpid(), "host": socket.gethostname(),
                   "started": time.strftime("%Y-%m-%d %H:%M:%S")}, f)
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        """Unlocks; the file stays (emptied), so a reader never mistakes it for a live holder."""
        if self._file is None:
            return
        import fcntl

        f, self._file = self._file, None
        f.seek(0)
        f.truncate()
        f.flush()
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        f.close()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _read_holder(f: IO[str]) -> dict[str, Any]:
    f.seek(0)
    try:
        holder = json.loads(f.read() or "{}")
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}
