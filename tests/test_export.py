"""Exported policies (ONNX, TorchScript) compute what ``Policy.forward_step`` computes, step after step."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

from arena.agents.policy import Policy
from arena.export import INPUT_NAMES, METADATA_FILE, OUTPUT_NAMES, main
from arena.league.model.snapshots import write_snapshot
from arena.trainer.checkpoint import save_policy_snapshot
from arena.trainer.config import PolicyConfig, TrainerConfig
from arena.trainer.ppo import PPOTrainer

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")

NVEC = [3, 5, 2]
OBS_DIM, LSTM = 7, 8
ROWS = 4
# Episode starts of each step: none, one row mid-sequence, every row, two rows.
STARTS = [[False] * 4, [False, True, False, False], [True] * 4, [True, False, False, True]]


@pytest.fixture
def policy() -> Policy:
    torch.manual_seed(0)
    p = Policy(OBS_DIM, NVEC, hidden_size=16, lstm_size=LSTM)
    with torch.no_grad():  # a fresh actor's logits are ~0.01: give them a scale a mismatch would show at
        p.actor.weight.normal_()
        p.actor.bias.normal_()
    return p.eval().requires_grad_(False)


@pytest.fixture
def policy_file(tmp_path, policy) -> Path:
    return save_policy_snapshot(policy, tmp_path / "policy.pt")


def reference_steps(policy: Policy) -> list[tuple[dict[str, np.ndarray], list[np.ndarray]]]:
    """(inputs, expected outputs) of each step of STARTS, the state fed back from step to step."""
    gen = torch.Generator().manual_seed(3)
    h = torch.randn(ROWS, LSTM, generator=gen)
    c = torch.randn(ROWS, LSTM, generator=gen)
    steps = []
    for starts in STARTS:
        obs = torch.randn(ROWS, OBS_DIM, generator=gen)
        start = torch.tensor(starts)
        with torch.no_grad():
            logits, value, (h_next, c_next) = policy.forward_step(obs, (h, c), start)
        inputs = {"obs": obs.numpy(), "h": h.numpy(), "c": c.numpy(), "episode_start": start.numpy()}
        steps.append((inputs, [torch.cat(logits, -1).numpy(), value.numpy(), h_next.numpy(), c_next.numpy()]))
        h, c = h_next, c_next
    return steps


def run_steps(run, steps) -> None:
    """Feeds the export its own h_out, c_out and checks every output against forward_step's."""
    h, c = steps[0][0]["h"], steps[0][0]["c"]
    for t, (inputs, expected) in enumerate(steps):
        got = run({**inputs, "h": h, "c": c})
        for name, a, b in zip(OUTPUT_NAMES, got, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"{name} at step {t}")
        h, c = got[2], got[3]


def test_onnx_export_gives_forward_steps_logits_value_and_state_over_steps_fed_back(
        tmp_path, policy, policy_file, one_torch_thread) -> None:
    out = tmp_path / "policy.onnx"
    assert main([str(policy_file), "--format", "onnx", "--out", str(out)]) == 0
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == list(INPUT_NAMES)
    assert [o.name for o in session.get_outputs()] == list(OUTPUT_NAMES)
    props = {p.key for p in onnx.load(str(out)).metadata_props}
    assert {"obs_dim", "action_nvec", "lstm_size", "source"} <= props and "game" not in props  # unknown
    run_steps(lambda feeds: session.run(list(OUTPUT_NAMES), feeds), reference_steps(policy))


def test_torchscript_export_loaded_with_jit_load_gives_forward_steps_outputs_over_steps(
        tmp_path, policy, policy_file, one_torch_thread) -> None:
    out = tmp_path / "policy.torchscript.pt"
    assert main([str(policy_file), "--format", "torchscript", "--out", str(out)]) == 0
    loaded = torch.jit.load(str(out))

    def run(feeds):
        with torch.no_grad():
            return [y.numpy() for y in loaded(*(torch.from_numpy(feeds[k]) for k in INPUT_NAMES))]

    run_steps(run, reference_steps(policy))


def test_torchscript_export_runs_in_a_process_that_never_imports_arena(tmp_path, policy, policy_file) -> None:
    out = tmp_path / "policy.torchscript.pt"
    done = subprocess.run([sys.executable, "-m", "arena.export", str(policy_file), "--format", "torchscript",
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    steps = reference_steps(policy)
    np.savez(tmp_path / "inputs.npz", **{f"{k}{t}": v for t, (inputs, _) in enumerate(steps)
                                          for k, v in inputs.items()})
    script = f"""
import sys, numpy as np, torch
m = torch.jit.load({str(out)!r})
x = np.load({str(tmp_path / "inputs.npz")!r})
h, c, outs = torch.from_numpy(x["h0"]), torch.from_numpy(x["c0"]), {{}}
for t in range({len(steps)}):
    obs, start = torch.from_numpy(x[f"obs{{t}}"]), torch.from_numpy(x[f"episode_start{{t}}"])
    logits, value, h, c = m(obs, h, c, start)
    outs.update({{f"logits{{t}}": logits.numpy(), f"value{{t}}": value.numpy(), f"h{{t}}": h.numpy()}})
np.savez({str(tmp_path / "outputs.npz")!r}, **outs)
assert not [name for name in sys.modules if name.split(".")[0] == "arena"]
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = np.load(tmp_path / "outputs.npz")
    for t, (_, (logits, value, h, _c)) in enumerate(steps):
        np.testing.assert_allclose(got[f"logits{t}"], logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[f"value{t}"], value, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[f"h{t}"], h, rtol=1e-5, atol=1e-5)


def test_a_trainer_checkpoint_exports_with_its_game_sizes_and_sha256_in_the_metadata(
        tmp_path, one_torch_thread) -> None:
    config = TrainerConfig(num_envs=2, num_threads=1, torch_threads=1, total_timesteps=1000, bptt_horizon=4,
                           rollout_steps=8, minibatch_size=16, checkpoint_dir=str(tmp_path / "checkpoints"))
    trainer = PPOTrainer(config, PolicyConfig(hidden_size=16, lstm_size=12), game="rpsw")
    try:
        ckpt = trainer.save()
        obs_dim, nvec = trainer.env.obs_dim, [int(n) for n in trainer.env.action_space.nvec]
    finally:
        trainer.close()
    assert main([str(ckpt), "--format", "onnx"]) == 0  # default: next to the checkpoint
    out = Path(ckpt).with_name("trainer.onnx")
    sidecar = json.loads(out.with_name("trainer.onnx.json").read_text())
    props = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    inside = {k: v if isinstance(sidecar.get(k), str) else json.loads(v) for k, v in props.items()}
    assert inside == sidecar
    sha = hashlib.sha256(Path(ckpt).read_bytes()).hexdigest()
    for meta in (sidecar, inside):
        assert meta["game"] == "rpsw" and meta["team_sizes"] == [1, 1]
        assert meta["obs_dim"] == obs_dim and meta["action_nvec"] == nvec and meta["lstm_size"] == 12
        assert meta["source"] == {"path": str(ckpt), "kind": "trainer checkpoint", "sha256": sha}
        assert [i["name"] for i in meta["inputs"]] == list(INPUT_NAMES)
        assert [o["name"] for o in meta["outputs"]] == list(OUTPUT_NAMES)
        assert meta["outputs"][0]["shape"] == ["n", sum(nvec)]
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].shape == ["n", obs_dim]


def test_a_league_snapshot_exports_next_to_itself_with_the_description_inside_and_beside(
        tmp_path, policy, one_torch_thread) -> None:
    state = {"policy_spec": policy.spec, "policy": policy.state_dict()}
    snapshot = tmp_path / "league" / "snapshots" / "learner_snap-000001.pt"
    digest = write_snapshot(snapshot, state)  # the league's writer: read-only, identified by sha256
    assert main([str(snapshot), "--format", "torchscript"]) == 0
    out = snapshot.with_name("learner_snap-000001.torchscript.pt")
    inside = {METADATA_FILE: ""}
    torch.jit.load(str(out), _extra_files=inside)
    beside = json.loads(Path(str(out) + ".json").read_text())
    assert json.loads(inside[METADATA_FILE]) == beside
    assert beside["source"] == {"path": str(snapshot), "kind": "policy file", "sha256": digest}
    assert beside["game"] is None and beside["format"] == "torchscript"
    assert beside["logits_head_offsets"] == [0, 3, 8, 10]


def write_corrupt(path: Path) -> Path:
    path.write_bytes(b"PK\x03\x04 not really a torch archive")
    return path


def write_not_a_policy(path: Path) -> Path:
    torch.save({"weights": torch.zeros(3)}, path)
    return path


@pytest.mark.parametrize(("make", "fmt", "out", "message"), [
    (None, "onnx", None, "policy file not found"),
    (write_corrupt, "onnx", None, "is corrupted or not a torch file"),
    (write_not_a_policy, "torchscript", None, "is not a policy file"),
    ("policy", "onnx", "no/such/dir/policy.onnx", "does not exist"),
    ("policy", "tflite", None, "invalid choice: 'tflite'"),
], ids=["missing", "corrupt", "not-a-policy", "no-output-dir", "unknown-format"])
def test_bad_input_exits_2_with_a_message_naming_it_and_writes_nothing(
        tmp_path, policy, capsys, make, fmt, out, message) -> None:
    src = tmp_path / "in.pt"
    if make == "policy":
        save_policy_snapshot(policy, src)
    elif make is not None:
        make(src)
    before = sorted(os.listdir(tmp_path))
    args = [str(src), "--format", fmt] + ([] if out is None else ["--out", str(tmp_path / out)])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    if out is not None:
        assert str(tmp_path / "no/such/dir") in err
    elif make is None:
        assert str(src) in err
    assert sorted(os.listdir(tmp_path)) == before


def test_onnx_export_without_onnx_installed_says_how_to_install_it(tmp_path, policy_file) -> None:
    script = ("import sys; sys.modules['onnx'] = None; from arena.export import main; "
              f"sys.exit(main([{str(policy_file)!r}, '--format', 'onnx']))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "missing: onnx" in done.stderr and "pip install 'arena[export]'" in done.stderr
    assert not policy_file.with_suffix(".onnx").exists()
