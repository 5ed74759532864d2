"""``kill PID`` (SIGTERM) stops a run as Ctrl-C does: a background job has SIGINT ignored."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.stop_signal import DUPLICATE_S, sigterm_stops_as_ctrl_c


@pytest.fixture
def default_sigterm():
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_the_first_sigterm_in_the_block_raises_keyboard_interrupt_and_its_duplicate_is_ignored(
        default_sigterm):
    with sigterm_stops_as_ctrl_c() as installed:
        assert installed
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode; never reached
        os.kill(os.getpid(), signal.SIGTERM)  # as coreutils' timeout sends it again to the group
        time.sleep(0.05)  # still alive: the same request, not a second one
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


STOPPING = """
import sys, time
from arena.stop_signal import DUPLICATE_S, sigterm_stops_as_ctrl_c
with sigterm_stops_as_ctrl_c():
    try:
        print("ready", flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        print("stopping", flush=True)
        time.sleep(float(sys.argv[1]))  # the checkpoint being written
        print("saved", flush=True)
"""


@pytest.mark.parametrize("gap, saved", [(0.3, True), (DUPLICATE_S + 0.5, False)])
def test_a_second_sigterm_ends_the_stop_only_when_it_is_a_second_request(tmp_path, gap, saved):
    log = tmp_path / "out.txt"

    def wait_for(word: str) -> None:
        deadline = time.monotonic() + 60
        while word not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)

    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-c", STOPPING, str(DUPLICATE_S + 2.0)], stdout=out,
                                   stderr=subprocess.STDOUT, preexec_fn=_as_a_background_job)
        try:
            wait_for("ready")
            process.send_signal(signal.SIGTERM)
            time.sleep(gap)  # the second signal: a duplicate (timeout's) or a user's second kill
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        finally:
            process.kill()
    assert "stopping" in log.read_text()
    assert ("saved" in log.read_text()) is saved, log.read_text()
    assert process.returncode == (0 if saved else -signal.SIGTERM)


@pytest.mark.skipif(shutil.which("timeout") is None, reason="coreutils' timeout is not installed")
def test_a_run_under_coreutils_timeout_writes_its_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    command = ["timeout", "20", sys.executable, "-m", "arena.train", "env=rpsw", "trainer=quick",
               "dashboard=false", "logger=none", f"run_dir={run_dir}",
               "trainer.total_timesteps=1_000_000_000", "trainer.checkpoint_minutes=0"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    out = done.stdout + done.stderr
    assert done.returncode == 124, out[-3000:]  # timeout's own status: it stopped the run
    assert "interrupted at step" in out and "stopped:" in out, out[-3000:]
    assert (run_dir / "checkpoints" / "trainer.pt").is_file()  # no periodic one: written at the stop


def test_a_sigterm_handler_someone_else_set_is_left_alone(default_sigterm):
    heard = []
    signal.signal(signal.SIGTERM, lambda signum, frame: heard.append(signum))
    with sigterm_stops_as_ctrl_c() as installed:
        assert not installed
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
    assert heard == [signal.SIGTERM]


def _as_a_background_job() -> None:
    """A shell's ``command &``: SIGINT ignored; SIGTERM at its default."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_until(command: list[str], cwd: Path, ready, timeout_s: float = 180.0) -> tuple[int, str]:
    """Starts ``command`` as a background job, sends SIGTERM once ``ready(output)`` holds, and returns
    its exit status and output."""
    log = cwd / "out.txt"
    with open(log, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   preexec_fn=_as_a_background_job)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and process.poll() is None and not ready(log.read_text()):
                time.sleep(0.1)
            assert process.poll() is None, log.read_text()[-3000:]
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=timeout_s)
        finally:
            process.kill()
    return process.returncode, log.read_text()


def test_kill_pid_on_a_background_training_run_writes_its_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "arena.train", "env=rpsw", "trainer=quick", "dashboard=false",
               "logger=none", f"run_dir={run_dir}", "trainer.total_timesteps=1_000_000_000",
               "trainer.checkpoint_minutes=0"]
    metrics = run_dir / "metrics.jsonl"
    logged = lambda _: metrics.is_file() and bool(metrics.read_text().strip())  # noqa: E731
    code, out = _run_until(command, tmp_path, logged)
    assert code == 0, out[-3000:]
    assert "interrupted at step" in out
    assert (run_dir / "checkpoints" / "trainer.pt").is_file()  # no periodic one: written at the stop


def test_kill_pid_on_a_background_attack_measures_its_best_weights_and_writes_the_record(tmp_path):
    run_dir = tmp_path / "attack"
    command = [sys.executable, "-m", "arena.bench", "exploit", "scripted:constant", "--env", "rpsw",
               "--minutes", "60", "--eval-every", "0.02", "--final-games", "200", "--run-dir", str(run_dir),
               "trainer=quick", "trainer.total_timesteps=1_000_000_000", "trainer.checkpoint_minutes=0"]
    # the score at minute 0 and one after training
    code, out = _run_until(command, tmp_path, lambda text: text.count("[0.") + text.count("[1.") >= 2)
    assert code == 0, out[-3000:]
    assert "interrupted: measuring the best weights so far" in out
    record = json.loads((run_dir / "exploit.json").read_text())
    assert record["final"]["games"] == 200 and len(record["curve"]) >= 2
    assert (run_dir / "attacker_best.pt").is_file()
