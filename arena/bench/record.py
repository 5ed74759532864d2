"""A bench's JSON record: the command, the commit, the machine and the date beside its figures, so a
results page can copy its numbers from the file the run wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from arena.provenance import provenance


def write_record(path: str | os.PathLike[str], bench: str, argv: list[str], figures: dict[str, Any]) -> Path:
    """Writes ``{bench, command, **provenance(), **figures}`` as JSON to ``path`` (``arena.provenance``)."""
    record = {"bench": bench, "command": " ".join(["python -m arena.bench", bench, *argv]),
              **provenance(), **figures}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, default=str) + "\n")
    return path

