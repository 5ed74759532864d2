"""Reads an offline W&B run back (test helper): the records of its ``run-<id>.wandb`` file; and
``isolate_wandb``, a machine without a W&B login whose W&B folders are the test's own.

The file is W&B's transaction log: a 7-byte header (``:W&B``, a magic number, a version), then
LevelDB-log-style 32 KiB blocks of chunks (4-byte CRC, 2-byte length, 1-byte type: full, first,
middle, last), each record a ``wandb.proto`` ``Record``. Offline runs write no wandb-summary.json, so
this is what tells what a run logged.
"""

from __future__ import annotations

import json
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

_BLOCK = 32 * 1024
_HEADER = 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def records(path: Path) -> Iterator[wandb_internal_pb2.Record]:
    data = path.read_bytes()
    if data[:4] != b":W&B":
        raise ValueError(f"{path} is not a W&B run file (header {data[:4]!r})")
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # a block's tail too short for a chunk header is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + _HEADER])
        if kind == 0:  # zero padding to the end of the block
            pos += left
            continue
        pending += data[pos + _HEADER:pos + _HEADER + length]
        pos += _HEADER + length
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def isolate_wandb(monkeypatch: Any, home: Path) -> dict[str, str]:
    """No W&B key, no netrc login (``HOME`` is ``home``) and W&B's config, cache and data folders under
    ``home``; returns the environment for a subprocess."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for var in ("WANDB_API_KEY", "WANDB_MODE", "NETRC", "WANDB_BASE_URL", "WANDB_DIR"):
        monkeypatch.delenv(var, raising=False)
    for folder in ("config", "cache", "data"):
        monkeypatch.setenv(f"WANDB_{folder.upper()}_DIR", str(home / f"wandb-{folder}"))
    return dict(os.environ)


def _key(item: Any) -> str:
    return item.key or "/".join(item.nested_key)


@dataclass
class OfflineRun:
    folder: Path
    history: list[dict[str, Any]]  # one dict per logged row: key -> value (tables as their JSON refs)
    config: dict[str, Any]  # the config updates, merged (nested keys joined by "/")
    artifacts: list[Any]  # the ArtifactRecord protos

    def rows_with(self, key: str) -> list[dict[str, Any]]:
        return [row for row in self.history if key in row]

    def values(self, key: str) -> list[Any]:
        return [row[key] for row in self.rows_with(key)]

    def table(self, key: str, row: int = -1) -> dict[str, Any]:
        """The JSON of the table logged under ``key`` (a chart's table is under ``<key>_table``) at its
        ``row``-th log: {"columns": [...], "data": [[...], ...]}."""
        path = self.values(f"{key}/path")[row]
        return json.loads((self.folder / "files" / path).read_text())


def finished_records(path: Path, wait_s: float = 60.0) -> list[wandb_internal_pb2.Record]:
    """The records of a finished run. ``run.finish()`` returns before W&B's service has written the
    whole file, so this reads again until the run's exit record is there (or ``wait_s`` passed)."""
    deadline = time.monotonic() + wait_s
    while True:
        found = list(records(path))
        if found and found[-1].WhichOneof("record_type") == "exit":
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} has no exit record after {wait_s:g} s: the run did not finish")
        time.sleep(0.1)


def read_run(folder: Path) -> OfflineRun:
    (path,) = folder.glob("run-*.wandb")
    history, config, artifacts = [], {}, []
    for record in finished_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "history":
            history.append({_key(item): json.loads(item.value_json) for item in record.history.item})
        elif kind in ("config", "run"):  # the run record carries the config given to wandb.init
            for item in (record.config if kind == "config" else record.run.config).update:
                config[_key(item)] = json.loads(item.value_json)
        elif kind == "artifact":
            artifacts.append(record.artifact)
    return OfflineRun(folder, history, config, artifacts)


def offline_run(run_dir: Path) -> OfflineRun:
    """The one offline run under ``run_dir/wandb``."""
    (folder,) = (run_dir / "wandb").glob("offline-run-*")
    return read_run(folder)
