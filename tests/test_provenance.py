"""Where a figure came from: the commit, a hash that tells two dirty trees apart, and the machine, in
bench records, ``arena.evaluate --json`` and every start of a training run (``provenance.json``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import arena.provenance as prov
from arena.provenance import PROVENANCE_FILE, provenance, record_start


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    _git(repo, "add", "code.py")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    monkeypatch.setattr(prov, "_REPO", repo)
    return repo


def test_a_clean_checkout_is_named_by_its_commit_alone(repo):
    record = provenance()
    assert record["commit"] == _git(repo, "rev-parse", "--short", "HEAD").strip()
    assert record["diff_sha256"] is None
    assert record["cpus"] >= 1 and record["cpu"] and record["python"] and record["date"]


def test_two_different_uncommitted_changes_get_different_diff_hashes(repo):
    head = _git(repo, "rev-parse", "--short", "HEAD").strip()
    (repo / "code.py").write_text("x = 2\n")
    first = provenance()
    (repo / "code.py").write_text("x = 3\n")
    second = provenance()
    assert first["commit"] == second["commit"] == f"{head}+dirty"
    assert first["diff_sha256"] and second["diff_sha256"] and first["diff_sha256"] != second["diff_sha256"]
    (repo / "code.py").write_text("x = 2\n")
    assert provenance()["diff_sha256"] == first["diff_sha256"]  # the same change, the same hash


def test_outside_a_checkout_there_is_no_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(prov, "_REPO", tmp_path)
    assert provenance()["commit"] is None


def test_each_start_is_appended_and_an_unreadable_file_is_kept_aside(tmp_path):
    record_start(tmp_path, step=0)
    record_start(tmp_path, step=10, resumed_from="ckpt.pt")
    starts = json.loads((tmp_path / PROVENANCE_FILE).read_text())
    assert [s["step"] for s in starts] == [0, 10] and starts[1]["resumed_from"] == "ckpt.pt"
    (tmp_path / PROVENANCE_FILE).write_text("{not json")
    record_start(tmp_path, step=20)
    assert [s["step"] for s in json.loads((tmp_path / PROVENANCE_FILE).read_text())] == [20]
    assert (tmp_path / "provenance.json.unreadable").read_text() == "{not json"
