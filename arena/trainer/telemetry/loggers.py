"""Where metrics go: a JSONL file always, plus Weights & Biases or TensorBoard when asked.

``make_logger(kind, run_dir, **cfg)`` returns a ``MultiLogger`` of the JSONL logger and the chosen
one. W&B runs offline by itself when no API key is available (no ``WANDB_API_KEY`` and no netrc
login), and never prompts for a login. wandb and tensorboard are imported only when used.

What each logger does with each kind of record:

=================  ======================  ==============================  ===========================
method             JSONL (run_dir)         W&B                             TensorBoard
=================  ======================  ==============================  ===========================
log                metrics.jsonl           scalars against global_step     scalars
log_table          tables.jsonl            wandb.Table                     markdown text
log_image          images/, images.jsonl   wandb.Image                     image
log_line_series    tables.jsonl (long)     one line chart, all series      nothing (see the scalars)
log_heatmap        tables.jsonl (long)     heatmap chart over a Table      nothing (see the image)
log_video          media.jsonl (the path)  wandb.Video                     nothing
log_snapshot       nothing                 a model artifact, when          nothing
                                           ``log_snapshots`` is on
=================  ======================  ==============================  ===========================
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import netrc
import os
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import numpy as np

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]
ImageLike = PathLike | np.ndarray
# {series name: (xs, ys)}: e.g. each player's rating against the learner's steps
Series = Mapping[str, tuple[Sequence[float], Sequence[float]]]
RESERVED_KEYS = ("step", "wall_time")
VIDEO_FORMATS = ("gif", "mp4", "webm", "ogg")


def _as_float(key: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"metric {key!r} must be a number, got {type(value).__name__}: {value!r}") from None


def _json_value(value: Any) -> Any:
    """JSON-safe scalar: numpy scalars to Python, NaN/inf to null (strict JSON)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "image"


def _image_array(image: ImageLike) -> np.ndarray:
    """An image as an array (H, W) or (H, W, C); files are read with Pillow."""
    if isinstance(image, np.ndarray):
        array = image
    else:
        try:
            from PIL import Image
        except ImportError as exc:  # pragma: no cover - pillow comes with matplotlib/wandb
            raise RuntimeError("reading an image file needs Pillow: pip install pillow") from exc
        with Image.open(image) as img:
            array = np.asarray(img.convert("RGBA" if img.mode in ("RGBA", "LA", "P") else "RGB"))
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (1, 3, 4)):
        raise ValueError(f"an image must have shape (H, W) or (H, W, 1|3|4), got {array.shape}")
    return array


def _video_path(path: PathLike) -> Path:
    """An existing video file of a format W&B plays, or a ValueError/FileNotFoundError naming it."""
    path = Path(path)
    if path.suffix.lower().lstrip(".") not in VIDEO_FORMATS:
        raise ValueError(f"video {str(path)!r} must be a {', '.join(VIDEO_FORMATS)} file")
    if not path.is_file():
        raise FileNotFoundError(f"video file {path} does not exist")
    return path


def series_rows(series: Series) -> list[list[Any]]:
    """``series`` in long form: one ``[x, name, y]`` row per point (non-finite points dropped)."""
    rows = []
    for name, (xs, ys) in series.items():
        if len(xs) != len(ys):
            raise ValueError(f"series {name!r} has {len(xs)} x values but {len(ys)} y values")
        for x, y in zip(xs, ys, strict=True):
            if math.isfinite(float(x)) and math.isfinite(float(y)):
                rows.append([float(x), str(name), float(y)])
    return rows


def heatmap_rows(rows: Sequence[str], columns: Sequence[str], values: Any) -> list[list[Any]]:
    """The cells of a heatmap as ``[row, column, value]``; NaN cells (no data) are left out."""
    matrix = np.asarray(values, dtype=float)
    if matrix.shape != (len(rows), len(columns)):
        raise ValueError(f"heatmap values have shape {matrix.shape}, expected ({len(rows)}, {len(columns)}) "
                         "for its rows and columns")
    return [[str(r), str(c), float(matrix[i, j])] for i, r in enumerate(rows) for j, c in enumerate(columns)
            if math.isfinite(matrix[i, j])]


class Logger:
    """Base and interface of metric loggers. Every method is a no-op here."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        """Scalars at global step ``step``."""

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], step: int) -> None:
        """A table (e.g. a leaderboard): ``rows`` of values in the order of ``columns``."""

    def log_image(self, name: str, image: ImageLike, step: int) -> None:
        """An image file or array (H, W[, C]) (e.g. a payoff heatmap)."""

    def log_line_series(self, name: str, series: Series, step: int, *, title: str = "",
                        xname: str = "step") -> None:
        """Several curves in one chart (e.g. every player's rating): ``{name: (xs, ys)}``. Each call
        gives the whole curves so far; a chart shows the latest call."""

    def log_heatmap(self, name: str, rows: Sequence[str], columns: Sequence[str], values: Any, step: int,
                    *, title: str = "", value_name: str = "value") -> None:
        """A matrix (e.g. the payoff table) of ``len(rows) x len(columns)`` values; NaN: no data."""

    def log_video(self, name: str, path: PathLike, step: int, caption: str | None = None) -> None:
        """A video file (GIF, MP4, WebM or Ogg), e.g. a match replay."""

    def log_snapshot(self, player_id: str, path: PathLike, step: int,
                     metadata: Mapping[str, Any] | None = None) -> None:
        """A league snapshot file; only loggers told to keep files (W&B with ``log_snapshots``) do."""

    def close(self) -> None:
        """Flushes and releases resources; safe to call twice."""

    def __enter__(self) -> Logger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NoneLogger(Logger):
    """Logs nothing (evaluation, tests)."""


class JsonlLogger(Logger):
    """Appends one JSON object per ``log`` call to ``run_dir/metrics.jsonl``, flushed per line.

    A line is ``{"step": ..., "wall_time": ..., <metric>: <value>, ...}``; NaN and inf are written as
    null. Tables go to ``tables.jsonl`` (line series and heatmaps too, one row per point or cell), images
    to ``images/`` (listed in ``images.jsonl``) and the paths of videos to ``media.jsonl``.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / "metrics.jsonl"
        self._files: dict[str, IO[str]] = {}
        self._closed = False

    def _write(self, filename: str, record: Mapping[str, Any]) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} for {self.run_dir} is closed")
        file = self._files.get(filename)
        if file is None:
            file = self._files[filename] = open(self.run_dir / filename, "a", encoding="utf-8")
        file.write(json.dumps(record, allow_nan=False) + "\n")
        file.flush()

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        record: dict[str, Any] = {"step": int(step), "wall_time": time.time()}
        for key, value in metrics.items():
            if key in RESERVED_KEYS:
                raise ValueError(f"metric name {key!r} is reserved in metrics.jsonl; rename it")
            record[key] = _json_value(_as_float(key, value))
        self._write("metrics.jsonl", record)

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], step: int) -> None:
        data = [[_json_value(v) for v in row] for row in rows]
        self._write("tables.jsonl", {"step": int(step), "name": name, "columns": list(columns), "rows": data})

    def log_image(self, name: str, image: ImageLike, step: int) -> None:
        if isinstance(image, np.ndarray):
            folder = self.run_dir / "images"
            folder.mkdir(exist_ok=True)
            path = folder / f"{_safe_name(name)}-{int(step)}.npy"
            np.save(path, _image_array(image))
        else:
            path = Path(image)
        self._write("images.jsonl", {"step": int(step), "name": name, "path": str(path)})

    def log_line_series(self, name: str, series: Series, step: int, *, title: str = "",
                        xname: str = "step") -> None:
        self.log_table(name, [xname, "series", "y"], series_rows(series), step)

    def log_heatmap(self, name: str, rows: Sequence[str], columns: Sequence[str], values: Any, step: int,
                    *, title: str = "", value_name: str = "value") -> None:
        self.log_table(name, ["row", "column", value_name], heatmap_rows(rows, columns, values), step)

    def log_video(self, name: str, path: PathLike, step: int, caption: str | None = None) -> None:
        record = {"step": int(step), "name": name, "kind": "video", "path": str(_video_path(path))}
        self._write("media.jsonl", record | ({"caption": caption} if caption else {}))

    def close(self) -> None:
        self._closed = True
        for file in self._files.values():
            file.close()
        self._files.clear()


# ---------------------------------------------------------------------- Weights & Biases


def wandb_has_credentials(environ: Mapping[str, str] | None = None) -> bool:
    """Whether W&B could log in without asking: an API key in the environment or a netrc entry."""
    environ = os.environ if environ is None else environ
    if environ.get("WANDB_API_KEY", "").strip():
        return True
    host = urlparse(environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    path = Path(environ["NETRC"]) if environ.get("NETRC") else Path.home() / ".netrc"
    try:
        return path.is_file() and netrc.netrc(str(path)).authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


def resolve_wandb_mode(mode: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The W&B mode to use: ``mode``, else ``WANDB_MODE``, else online with credentials or offline.

    Online without credentials would prompt for a login, so it falls back to offline with a warning.
    """
    environ = os.environ if environ is None else environ
    chosen = mode or environ.get("WANDB_MODE") or None
    if chosen in ("dryrun",):
        chosen = "offline"
    if chosen not in (None, "online", "offline", "disabled"):
        raise ValueError(f"wandb mode {chosen!r} is not allowed: use 'online', 'offline' or 'disabled'")
    has_key = wandb_has_credentials(environ)
    if chosen is None:
        return "online" if has_key else "offline"
    if chosen == "online" and not has_key:
        logger.warning("W&B mode 'online' asked for but no API key or netrc login found: logging offline")
        return "offline"
    return chosen


class WandbLogger(Logger):
    """Logs to a W&B run whose files live under ``run_dir/wandb``; offline when there is no API key.

    Metrics are plotted against ``global_step`` (a W&B step metric), so logs at an earlier step
    (e.g. from the league) are never dropped. ``console="off"`` because the dashboard owns the
    terminal; ``settings`` adds any other ``wandb.Settings`` field. ``log_snapshots`` keeps every
    league snapshot file as a W&B model artifact (off by default: they add up).

    Line series are W&B's ``line_series`` chart and heatmaps a custom chart on W&B's heatmap preset
    (``wandb/confusion_matrix/v1``) over a ``wandb.Table`` of (row, column, value), so the numbers
    stay in the run as a table (``<name>_table``) beside the chart.
    """

    def __init__(
        self,
        project: str = "arena",
        entity: str | None = None,
        name: str | None = None,
        tags: Sequence[str] | None = None,
        run_dir: str | os.PathLike[str] = ".",
        config: Mapping[str, Any] | None = None,
        mode: str | None = None,
        group: str | None = None,
        console: str = "off",
        settings: Mapping[str, Any] | None = None,
        log_snapshots: bool = False,
    ) -> None:
        import wandb

        if not isinstance(log_snapshots, bool):
            raise ValueError(f"log_snapshots={log_snapshots!r} must be true or false")
        self._wandb = wandb
        self.log_snapshots = log_snapshots
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.mode = resolve_wandb_mode(mode)
        options = {"silent": True, "console": console, **dict(_plain(settings) or {})}
        init_args = {
            "project": project,
            "entity": entity,
            "name": name,
            "group": group,
            "tags": list(tags) if tags else None,
            "dir": str(self.run_dir),
            "config": _plain(config),
            "reinit": "create_new",
        }
        try:
            self._run = wandb.init(mode=self.mode, settings=wandb.Settings(**options), **init_args)
        except Exception as exc:
            if self.mode != "online":
                raise
            # an unreachable server must not stop training: keep the run offline, sync it later
            logger.warning("W&B online init failed (%s: %s); logging offline", type(exc).__name__, exc)
            self.mode = "offline"
            self._run = wandb.init(mode=self.mode, settings=wandb.Settings(**options), **init_args)
        self._run.define_metric("global_step")
        self._run.define_metric("*", step_metric="global_step")
        self._closed = False

    @property
    def run_path(self) -> Path:
        """The run's folder (``run_dir/wandb/offline-run-...`` or ``run-...``)."""
        return Path(self._run.dir).parent

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        record = {key: _as_float(key, value) for key, value in metrics.items()}
        record["global_step"] = int(step)
        self._run.log(record)

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], step: int) -> None:
        data = [[_json_value(v) for v in row] for row in rows]
        table = self._wandb.Table(columns=list(columns), data=data)
        self._run.log({name: table, "global_step": int(step)})

    def log_image(self, name: str, image: ImageLike, step: int) -> None:
        source = image if isinstance(image, np.ndarray) else str(image)
        self._run.log({name: self._wandb.Image(source), "global_step": int(step)})

    def log_line_series(self, name: str, series: Series, step: int, *, title: str = "",
                        xname: str = "step") -> None:
        keys: list[str] = []
        xs: list[list[float]] = []
        ys: list[list[float]] = []
        for key, points in series.items():
            rows = series_rows({key: points})
            if rows:  # an empty series would break wandb's chart
                keys.append(str(key))
                xs.append([x for x, _, _ in rows])
                ys.append([y for _, _, y in rows])
        if not keys:
            return
        chart = self._wandb.plot.line_series(xs=xs, ys=ys, keys=keys, title=title or name, xname=xname)
        self._run.log({name: chart, "global_step": int(step)})

    def log_heatmap(self, name: str, rows: Sequence[str], columns: Sequence[str], values: Any, step: int,
                    *, title: str = "", value_name: str = "value") -> None:
        cells = heatmap_rows(rows, columns, values)
        table = self._wandb.Table(columns=["row", "column", value_name], data=cells)
        chart = self._wandb.plot_table(
            vega_spec_name="wandb/confusion_matrix/v1", data_table=table,
            fields={"Actual": "row", "Predicted": "column", "nPredictions": value_name},
            string_fields={"title": title or name})
        self._run.log({name: chart, "global_step": int(step)})

    def log_video(self, name: str, path: PathLike, step: int, caption: str | None = None) -> None:
        video = _video_path(path)
        media = self._wandb.Video(str(video), caption=caption, format=video.suffix.lower().lstrip("."))
        self._run.log({name: media, "global_step": int(step)})

    def log_snapshot(self, player_id: str, path: PathLike, step: int,
                     metadata: Mapping[str, Any] | None = None) -> None:
        if not self.log_snapshots:
            return
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"snapshot file {path} of {player_id!r} does not exist")
        artifact = self._wandb.Artifact(
            name=artifact_name(player_id), type="model",
            description=f"league snapshot {player_id} at learner step {int(step)}",
            metadata={"player_id": player_id, "step": int(step), **dict(metadata or {})})
        artifact.add_file(str(path), name=path.name)
        self._run.log_artifact(artifact, aliases=["latest", f"step-{int(step)}"])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._run.finish()


def artifact_name(player_id: str) -> str:
    """A W&B artifact name for a player id (letters, digits, ``-``, ``_`` and ``.`` only), e.g.
    ``learner:snap-000003`` -> ``learner-snap-000003``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", player_id).strip("-.") or "snapshot"


def _plain(value: Any) -> Any:
    """OmegaConf containers to plain Python (hydra configs arrive as DictConfig)."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # pragma: no cover
        return value
    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


# ---------------------------------------------------------------------- TensorBoard


class TensorBoardLogger(Logger):
    """Scalars, tables (as markdown text) and images in ``run_dir/tensorboard``."""

    def __init__(self, run_dir: str | os.PathLike[str], flush_secs: int = 30) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = Path(run_dir) / "tensorboard"
        self._writer = SummaryWriter(log_dir=str(self.log_dir), flush_secs=flush_secs)

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        for key, value in metrics.items():
            self._writer.add_scalar(key, _as_float(key, value), int(step))

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], step: int) -> None:
        lines = ["| " + " | ".join(map(str, columns)) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(str(_json_value(v)) for v in row) + " |" for row in rows]
        self._writer.add_text(name, "\n".join(lines), int(step))

    def log_image(self, name: str, image: ImageLike, step: int) -> None:
        array = _image_array(image)
        if array.ndim == 3 and array.shape[2] == 1:
            array = array[:, :, 0]
        self._writer.add_image(name, array, int(step), dataformats="HW" if array.ndim == 2 else "HWC")

    def close(self) -> None:
        self._writer.close()


# ---------------------------------------------------------------------- composition


class MultiLogger(Logger):
    """Sends everything to each of ``loggers``; ``close`` closes all even if one fails."""

    def __init__(self, loggers: Sequence[Logger]) -> None:
        self.loggers = list(loggers)

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        for each in self.loggers:
            each.log(metrics, step)

    def log_table(self, name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], step: int) -> None:
        for each in self.loggers:
            each.log_table(name, columns, rows, step)

    def log_image(self, name: str, image: ImageLike, step: int) -> None:
        for each in self.loggers:
            each.log_image(name, image, step)

    def log_line_series(self, name: str, series: Series, step: int, *, title: str = "",
                        xname: str = "step") -> None:
        for each in self.loggers:
            each.log_line_series(name, series, step, title=title, xname=xname)

    def log_heatmap(self, name: str, rows: Sequence[str], columns: Sequence[str], values: Any, step: int,
                    *, title: str = "", value_name: str = "value") -> None:
        for each in self.loggers:
            each.log_heatmap(name, rows, columns, values, step, title=title, value_name=value_name)

    def log_video(self, name: str, path: PathLike, step: int, caption: str | None = None) -> None:
        for each in self.loggers:
            each.log_video(name, path, step, caption)

    def log_snapshot(self, player_id: str, path: PathLike, step: int,
                     metadata: Mapping[str, Any] | None = None) -> None:
        for each in self.loggers:
            each.log_snapshot(player_id, path, step, metadata)

    def close(self) -> None:
        errors: list[Exception] = []
        for each in self.loggers:
            try:
                each.close()
            except Exception as exc:  # close the others first, then report
                logger.exception("closing %s failed", type(each).__name__)
                errors.append(exc)
        if errors:
            raise errors[0]


LOGGER_KINDS: dict[str, type[Logger] | None] = {
    "none": None,
    "wandb": WandbLogger,
    "tensorboard": TensorBoardLogger,
}


def make_logger(kind: str, run_dir: str | os.PathLike[str], **cfg: Any) -> MultiLogger:
    """The JSONL logger of ``run_dir`` plus the logger ``kind`` ("none", "wandb", "tensorboard")
    built with ``cfg`` (e.g. project, entity, name, tags, config, mode for wandb)."""
    if kind not in LOGGER_KINDS:
        raise ValueError(f"unknown logger kind {kind!r}; allowed: {', '.join(LOGGER_KINDS)}")
    cls = LOGGER_KINDS[kind]
    accepted = [] if cls is None else [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    accepted = [p for p in accepted if p != "run_dir"]
    unknown = sorted(set(cfg) - set(accepted))
    if unknown:
        allowed = ", ".join(accepted) or "nothing"
        raise ValueError(f"logger {kind!r} does not take {', '.join(unknown)}; accepted: {allowed}")
    loggers: list[Logger] = [JsonlLogger(run_dir)]
    if cls is not None:
        try:
            loggers.append(cls(run_dir=run_dir, **{k: _plain(v) for k, v in cfg.items()}))
        except Exception:
            loggers[0].close()
            raise
    return MultiLogger(loggers)
