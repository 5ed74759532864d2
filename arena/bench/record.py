"""A bench's JSON record: the command, the commit, the machine and the date beside its figures, so a
results page can copy its numbers from the file the run wrote."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """The commit (short hash, ``+dirty`` when the tree has changes) and the machine."""
    commit = None
    here = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if commit and dirty:
            commit += "+dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"commit": commit, "cpus": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def write_record(path: str | os.PathLike[str], bench: str, argv: list[str], figures: dict[str, Any]) -> Path:
    """Writes ``{bench, command, commit, machine, date, **figures}`` as JSON to ``path``."""
    record = {"bench": bench, "command": " ".join(["python -m arena.bench", bench, *argv]),
              **machine(), **figures}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return path

