"""Figures written to files: pyplot without a window, and one way to save and close a figure.

The league's plots (``arena.league.view.plots``) and the benches' curves draw with these, so every
PNG is laid out, saved at the same resolution and released the same way. matplotlib is imported
when a figure is drawn, not when this module is.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend: files only, never a window."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | os.PathLike[str], dpi: int = 120) -> Path:
    """Lays ``fig`` out, writes it to ``path`` (its folder made if missing) and closes it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path
