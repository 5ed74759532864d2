"""The terminal view of training: a rich live dashboard on a terminal, plain lines otherwise.

The dashboard is the one thing that owns the terminal. It reads the metric dict the trainer logs:
``SPS``, ``episode_return``, ``episode_length``, ``win_rate/<opponent>``, ``draw_rate/<opponent>``,
``loss_rate/<opponent>``, the PPO losses, ``time/sim``, ``time/inference``, ``time/learn``,
``time/other`` (seconds per update or fractions), ``league/rating``, ``league/mix/<player>`` and
``gauntlet/<reference>`` (with ``_lo`` / ``_hi``: the newest snapshot's score against a fixed
reference, kept on screen until the next snapshot's).
Keys are matched exactly or as the last part of a path (``losses/approx_kl``). Missing keys are
simply not shown.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from arena.trainer.telemetry.health import HealthKind, HealthWarning, find_metric

LOSSES = (
    ("policy_loss", "pl"),
    ("value_loss", "vl"),
    ("entropy", "ent"),
    ("approx_kl", "kl"),
    ("clipfrac", "clip"),
    ("explained_variance", "ev"),
    ("learning_rate", "lr"),
)
TIME_PARTS = (("sim", "sim"), ("inference", "inf"), ("learn", "learn"), ("other", "other"))
RATE_KEY = re.compile(r"(?:^|/)(win|draw|loss)_rate/(.+)$")
MIX_KEY = re.compile(r"(?:^|/)league/mix/(.+)$")
LEAGUE_KEY = re.compile(r"(?:^|/)league/([^/]+)$")
GAUNTLET_KEY = re.compile(r"(?:^|/)gauntlet/([^/]+?)(_lo|_hi)?$")
SEVERE = {HealthKind.NAN_LOSS, HealthKind.NEGATIVE_EXPLAINED_VARIANCE, HealthKind.ENTROPY_COLLAPSE}


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}g}"


def _duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{days}d {clock}" if days else clock


def opponent_rates(metrics: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """{opponent: {"win": .., "draw": .., "loss": ..}} from ``<kind>_rate/<opponent>`` keys."""
    rates: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        match = RATE_KEY.search(key)
        if match:
            rates.setdefault(match.group(2), {})[match.group(1)] = float(value)
    return dict(sorted(rates.items()))


def league_values(metrics: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """(opponent mix {player: share}, other league scalars {name: value}, rating first)."""
    mix: dict[str, float] = {}
    other: dict[str, float] = {}
    for key, value in metrics.items():
        if match := MIX_KEY.search(key):
            mix[match.group(1)] = float(value)
        elif match := LEAGUE_KEY.search(key):
            other[match.group(1)] = float(value)
    ordered = dict(sorted(other.items(), key=lambda kv: (kv[0] != "rating", kv[0])))
    return dict(sorted(mix.items(), key=lambda kv: -kv[1])), ordered


def gauntlet_values(metrics: Mapping[str, float]) -> dict[str, tuple[float, float, float]]:
    """{reference: (score, lower, upper)} from ``gauntlet/<reference>[_lo|_hi]`` keys."""
    parts: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        if match := GAUNTLET_KEY.search(key):
            parts.setdefault(match.group(1), {})[match.group(2) or ""] = float(value)
    nan = float("nan")
    return {ref: (p[""], p.get("_lo", nan), p.get("_hi", nan)) for ref, p in sorted(parts.items()) if "" in p}


def time_split(metrics: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """{part: (value, share of the total)} for the ``time/<part>`` keys present."""
    values = {part: find_metric(metrics, f"time/{part}") for part, _ in TIME_PARTS}
    present = {part: v for part, v in values.items() if v is not None and math.isfinite(v)}
    total = sum(present.values())
    return {part: (v, v / total if total > 0 else 0.0) for part, v in present.items()}


class Dashboard:
    """Live training view. Use as a context manager; call ``update`` after each logged update.

    On a terminal it draws a rich live view; on anything else (a file, a pipe, CI) it writes one plain
    line per update to ``stream``; with ``enabled=False`` it shows nothing.
    """

    def __init__(
        self,
        total_steps: int,
        enabled: bool = True,
        stream: IO[str] | None = None,
        title: str = "arena",
        refresh_per_second: float = 2.0,
    ) -> None:
        self.total_steps = int(total_steps)
        self.enabled = enabled
        self.stream: IO[str] = stream if stream is not None else sys.stdout
        self.title = title
        self.refresh_per_second = refresh_per_second
        self.live_mode = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self.metrics: dict[str, float] = {}
        self.step = 0
        self.sps: float | None = None
        self.warnings: list[HealthWarning] = []
        self.gauntlet: dict[str, tuple[float, float, float]] = {}  # the newest snapshot's scores
        self._started = time.perf_counter()
        self._last: tuple[int, float] | None = None
        self._live: Live | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Dashboard:
        self._started = time.perf_counter()
        if self.live_mode:
            console = Console(file=self.stream)
            self._live = Live(self.renderable(), console=console, refresh_per_second=self.refresh_per_second)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self.renderable(), refresh=True)
            self._live.stop()
            self._live = None

    # ------------------------------------------------------------------ updates

    def update(self, metrics: Mapping[str, Any], step: int, warnings: Sequence[HealthWarning] = ()) -> None:
        """Shows the metrics of the update that reached global step ``step``."""
        if not self.enabled:
            return
        now = time.perf_counter()
        self.metrics = {key: float(value) for key, value in metrics.items()}
        self.step = int(step)
        self.warnings = list(warnings)
        self.gauntlet.update(gauntlet_values(self.metrics))
        reported = find_metric(self.metrics, "SPS")
        if reported is None:
            reported = find_metric(self.metrics, "sps")
        if reported is not None:
            self.sps = reported
        elif self._last is not None and now > self._last[1]:
            self.sps = (self.step - self._last[0]) / (now - self._last[1])
        self._last = (self.step, now)
        if self._live is not None:
            self._live.update(self.renderable())
        elif not self.live_mode:
            self.stream.write(self.plain_line() + "\n")
            self.stream.flush()

    @property
    def progress(self) -> float:
        return min(1.0, self.step / self.total_steps) if self.total_steps > 0 else 0.0

    @property
    def eta_seconds(self) -> float | None:
        if not self.sps or self.sps <= 0:
            return None
        return max(0, self.total_steps - self.step) / self.sps

    # ------------------------------------------------------------------ plain lines

    def plain_line(self) -> str:
        m = self.metrics
        parts = [
            f"step {self.step:,}/{self.total_steps:,} ({self.progress:.1%})",
            f"SPS {self.sps:,.0f}" if self.sps is not None else "SPS -",
            f"ETA {_duration(self.eta_seconds)}",
        ]
        episode = [
            f"{label} {_num(value)}"
            for label, value in (
                ("return", find_metric(m, "episode_return")),
                ("len", find_metric(m, "episode_length")),
            )
            if value is not None
        ]
        if episode:
            parts.append(" ".join(episode))
        for opponent, rates in opponent_rates(m).items():
            wdl = "/".join(f"{rates[k]:.2f}" if k in rates else "-" for k in ("win", "draw", "loss"))
            parts.append(f"vs {opponent} W/D/L {wdl}")
        losses = [f"{short} {_num(v)}" for key, short in LOSSES if (v := find_metric(m, key)) is not None]
        if losses:
            parts.append(" ".join(losses))
        split = time_split(m)
        if split:
            shares = dict(TIME_PARTS)
            parts.append("time " + " ".join(f"{shares[p]} {share:.0%}" for p, (_, share) in split.items()))
        mix, league = league_values(m)
        if league:
            parts.append(" ".join(f"{name} {_num(value, 4)}" for name, value in league.items()))
        if mix:
            parts.append("mix " + " ".join(f"{player} {share:.0%}" for player, share in mix.items()))
        if self.gauntlet:
            parts.append("gauntlet " + " ".join(f"{ref} {score:.2f} [{lo:.2f}, {hi:.2f}]"
                                                for ref, (score, lo, hi) in self.gauntlet.items()))
        if self.warnings:
            parts.append("HEALTH " + ", ".join(w.kind.value for w in self.warnings))
        return " | ".join(parts)

    # ------------------------------------------------------------------ rich view

    def renderable(self) -> RenderableType:
        """The rich view of the latest update (what the live display draws)."""
        panels: list[RenderableType] = [
            self._episode_panel(),
            self._opponents_panel(),
            self._losses_panel(),
            self._time_panel(),
            self._league_panel(),
            self._gauntlet_panel(),
        ]
        grid = Table.grid(expand=True, padding=(0, 1))
        for _ in range(3):
            grid.add_column(ratio=1)
        shown = [p for p in panels if p is not None]
        for i in range(0, len(shown), 3):
            row = shown[i : i + 3]
            grid.add_row(*row, *([""] * (3 - len(row))))
        items: list[RenderableType] = [self._header(), grid]
        if self.warnings:
            items.append(self._warnings_panel())
        return Group(*items)

    def _header(self) -> RenderableType:
        elapsed = time.perf_counter() - self._started
        sps = f"{self.sps:,.0f}" if self.sps is not None else "-"
        head = Table.grid(expand=True, padding=(0, 2))
        head.add_column(no_wrap=True)
        head.add_column(ratio=1)
        head.add_column(no_wrap=True)
        head.add_row(
            Text(f"step {self.step:,} / {self.total_steps:,}", style="bold"),
            ProgressBar(total=1.0, completed=self.progress),
            Text(
                f"{self.progress:.1%}  SPS {sps}  ETA {_duration(self.eta_seconds)}  "
                f"elapsed {_duration(elapsed)}"
            ),
        )
        return Panel(head, title=self.title, title_align="left", border_style="cyan")

    @staticmethod
    def _kv_table() -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="dim")
        table.add_column(justify="right")
        return table

    def _episode_panel(self) -> RenderableType:
        table = self._kv_table()
        table.add_row("return", _num(find_metric(self.metrics, "episode_return")))
        table.add_row("length", _num(find_metric(self.metrics, "episode_length")))
        return Panel(table, title="episodes", title_align="left")

    def _opponents_panel(self) -> RenderableType | None:
        rates = opponent_rates(self.metrics)
        if not rates:
            return None
        table = Table(box=None, padding=(0, 1), show_edge=False)
        table.add_column("opponent")
        for kind, style in (("win", "green"), ("draw", "yellow"), ("loss", "red")):
            table.add_column(kind, justify="right", style=style)
        for opponent, r in rates.items():
            table.add_row(opponent, *(f"{r[k]:.2f}" if k in r else "-" for k in ("win", "draw", "loss")))
        return Panel(table, title="win / draw / loss", title_align="left")

    def _losses_panel(self) -> RenderableType:
        table = self._kv_table()
        flagged = {
            HealthKind.HIGH_APPROX_KL: "approx_kl",
            HealthKind.HIGH_CLIPFRAC: "clipfrac",
            HealthKind.LOW_EXPLAINED_VARIANCE: "explained_variance",
            HealthKind.NEGATIVE_EXPLAINED_VARIANCE: "explained_variance",
            HealthKind.ENTROPY_COLLAPSE: "entropy",
        }
        bad = {flagged[w.kind] for w in self.warnings if w.kind in flagged}
        for key, _ in LOSSES:
            value = find_metric(self.metrics, key)
            text = Text(_num(value), style="bold red" if key in bad else "")
            table.add_row(key, text)
        return Panel(table, title="losses", title_align="left")

    def _time_panel(self) -> RenderableType | None:
        split = time_split(self.metrics)
        if not split:
            return None
        fractions = sum(v for v, _ in split.values()) <= 1.0 + 1e-6
        table = Table.grid(padding=(0, 1))
        table.add_column(style="dim")
        table.add_column(justify="right")
        table.add_column(width=12)
        for part, (value, share) in split.items():
            shown = f"{share:.0%}" if fractions else f"{_num(value)}s {share:.0%}"
            table.add_row(part, shown, ProgressBar(total=1.0, completed=share, width=12))
        return Panel(table, title="time per update", title_align="left")

    def _league_panel(self) -> RenderableType | None:
        mix, league = league_values(self.metrics)
        if not mix and not league:
            return None
        table = self._kv_table()
        for name, value in league.items():
            table.add_row(name, Text(_num(value, 4), style="bold" if name == "rating" else ""))
        if mix:
            table.add_row("opponent mix", "")
            for player, share in mix.items():
                table.add_row(f"  {player}", f"{share:.0%}")
        return Panel(table, title="league", title_align="left")

    def _gauntlet_panel(self) -> RenderableType | None:
        if not self.gauntlet:
            return None
        table = Table(box=None, padding=(0, 1), show_edge=False)
        table.add_column("vs")
        table.add_column("score", justify="right", style="bold")
        table.add_column("95% interval", justify="right", style="dim")
        for ref, (score, lo, hi) in self.gauntlet.items():
            table.add_row(ref, f"{score:.2f}", f"[{lo:.2f}, {hi:.2f}]")
        return Panel(table, title="gauntlet (newest snapshot)", title_align="left")

    def _warnings_panel(self) -> RenderableType:
        lines = Text()
        for i, warning in enumerate(self.warnings):
            style = "bold red" if warning.kind in SEVERE else "bold yellow"
            lines.append(("\n" if i else "") + f"{warning.kind.value}: ", style=style)
            lines.append(warning.message)
        return Panel(lines, title="health", title_align="left", border_style="red")
