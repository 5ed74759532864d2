"""Files the user asked for appear whole or not at all (written beside the target, then renamed), and
the sha256 that proves a file is the one recorded."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yields a temporary path beside ``path`` (same suffix); once the block succeeds the file is
    flushed to disk, made world-readable (0644) and renamed over ``path``; if it fails, the temporary
    file is removed. (Checkpoints and snapshots have their own writers, which also fsync the folder.)"""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class SnapshotIntegrityError(ValueError):
    """A snapshot file's content does not match the sha256 the league recorded for it."""


def verify_sha256(path: str | os.PathLike[str], sha256: str, *, what: str, advice: str = "") -> None:
    """Raises ``SnapshotIntegrityError`` naming ``what``, the path and both hashes (then ``advice``)
    unless the file's sha256 is ``sha256``."""
    actual = sha256_file(path)
    if actual != sha256:
        tail = f"; {advice}" if advice else ""
        raise SnapshotIntegrityError(f"{what} {path} is corrupted or was replaced: its sha256 is {actual}, "
                                     f"the league recorded {sha256}{tail}")
