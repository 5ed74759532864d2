"""Where a figure came from: the code (the commit, and a hash of any uncommitted change to it) and the
machine. Bench records (``arena.bench.record``) and ``arena.evaluate --json`` carry it beside their
figures, and every start of a training run appends it to ``RUN_DIR/provenance.json``, so two runs of
one command can be told apart afterwards when their results differ."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from arena.atomic import atomic_path

PROVENANCE_FILE = "provenance.json"  # in a run directory: one entry per start of the run
_REPO = Path(__file__).resolve().parents[1]  # the checkout the package runs from (when it is one)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=_REPO, capture_output=True, text=True, timeout=10).stdout


def provenance() -> dict[str, Any]:
    """``commit``: the short hash of HEAD, ``+dirty`` when tracked files differ from it (None outside
    a git checkout); ``diff_sha256``: with ``+dirty``, the first 12 hex digits of the sha256 of
    ``git diff HEAD``, which tells two dirty trees apart; then the machine (``cpus``, ``cpu``,
    ``platform``, ``python``) and the ``date``."""
    commit = diff_sha = None
    try:  # only the package's own checkout: an installed package has none (its folder may sit in another)
        if not (_REPO / ".git").exists():
            raise FileNotFoundError(_REPO / ".git")
        commit = _git("rev-parse", "--short", "HEAD").strip() or None
        if commit and _git("status", "--porcelain", "--untracked-files=no").strip():
            commit += "+dirty"
            diff_sha = hashlib.sha256(_git("diff", "HEAD").encode()).hexdigest()[:12]
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
    return {"commit": commit, "diff_sha256": diff_sha, "cpus": os.cpu_count(), "cpu": cpu,
            "platform": platform.platform(), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def record_start(run_dir: str | os.PathLike[str], **extra: Any) -> Path:
    """Appends this start's ``provenance()`` (and ``extra``) to ``run_dir/provenance.json`` (a JSON
    list, rewritten atomically); returns the file."""
    path = Path(run_dir) / PROVENANCE_FILE
    starts: list[Any] = []
    if path.exists():
        try:
            loaded = json.loads(path.read_text())
            starts = loaded if isinstance(loaded, list) else [loaded]
        except (OSError, ValueError):  # unreadable: keep it beside, start a new list
            os.replace(path, path.with_suffix(".json.unreadable"))
    starts.append({**provenance(), **extra})
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(starts, indent=2, default=str) + "\n")
    return path


__all__ = ["PROVENANCE_FILE", "provenance", "record_start"]
