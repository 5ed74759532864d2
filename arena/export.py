"""Export a policy as a single decision step that runs outside arena (ONNX or TorchScript).

    python -m arena.export CKPT --format onnx|torchscript [--out PATH]

``CKPT`` is any policy file arena reads: a trainer checkpoint (``checkpoints/trainer.pt``), a league
snapshot (``league/snapshots/<player>.pt``) or a file written by ``save_policy_snapshot``; or
``league:RUN_DIR``, the single network that league publishes (``arena.league.model.published``). The
exported model computes ``Policy.forward_step`` for ``n`` rows (``n`` is free; equal to float32 rounding):

    inputs   obs            float32 [n, obs_dim]            the observation rows, as arena's env gives them
             h, c           float32 [n, lstm_size]          the LSTM state after the row's previous step
             episode_start  bool    [n]                     True: the row starts an episode (state zeroed)
    outputs  logits         float32 [n, sum(action_nvec)]   every head's logits, in action_nvec order
             value          float32 [n]                     the critic's value
             h_out, c_out   float32 [n, lstm_size]          the state to feed back at the row's next step

The description of that contract (sizes, names, head offsets, the game when the file records it,
the source file's sha256) is written next to the model as ``<out>.json``, and also stored inside
it: in the ONNX model's ``metadata_props`` (one entry per key: strings as they are, other values as
JSON, unknown values such as the game of a snapshot left out), in the TorchScript archive as the
extra file ``arena_export.json``.

Every export is checked before it is written: the exported model is run for a few steps and must
give what ``forward_step`` gives. Bad inputs (a missing or damaged file, a missing output directory,
an unknown format, onnx/onnxruntime not installed) exit with code 2 and a message naming them.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from arena.agents.policy import Policy, policy_from_payload, read_torch_file
from arena.atomic import atomic_path
from arena.league.model.published import published
from arena.league.model.snapshots import sha256_file, verify_snapshot
from arena.trainer.checkpoint import CHECKPOINT_FORMAT

logger = logging.getLogger(__name__)

FORMATS = ("onnx", "torchscript")
SUFFIXES = {"onnx": ".onnx", "torchscript": ".torchscript.pt"}
INPUT_NAMES = ("obs", "h", "c", "episode_start")
OUTPUT_NAMES = ("logits", "value", "h_out", "c_out")
METADATA_VERSION = 1
METADATA_FILE = "arena_export.json"  # its name inside a TorchScript archive
ONNX_OPSET = 17  # run by every onnxruntime of the last years
INSTALL_HINT = "install them with: pip install 'arena[export]'"
_CHECK_ROWS, _CHECK_STEPS = 3, 3  # the self-check before writing: rows and steps in sequence
_CHECK_TOLERANCE = 1e-4  # relative to the output's scale (float32, a different kernel order)

Outputs = tuple[Tensor, Tensor, Tensor, Tensor]


class ExportError(ValueError):
    """The export cannot be made (missing package, output directory) or does not match the policy."""


class PolicyStep(nn.Module):
    """``Policy.forward_step`` with plain tensors in and out: the module that is exported.

    ``forward(obs, h, c, episode_start) -> (logits, value, h_out, c_out)``, the heads' logits
    concatenated (``Policy.action_nvec`` gives where each head's block starts).
    """

    def __init__(self, policy: Policy) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, obs: Tensor, h: Tensor, c: Tensor, episode_start: Tensor) -> Outputs:
        logits, value, (h_out, c_out) = self.policy.forward_step(obs, (h, c), episode_start)
        return torch.cat(logits, dim=-1), value, h_out, c_out


@dataclass(frozen=True)
class SourcePolicy:
    """A policy read from a file, with what the file says about where it came from."""

    policy: Policy
    path: Path
    sha256: str
    kind: str  # "trainer checkpoint" or "policy file"
    env: dict[str, Any] | None  # {"game", "team_sizes", "overrides"} when the file records them


@dataclass(frozen=True)
class ExportResult:
    model: Path
    metadata: Path
    info: dict[str, Any]


def read_source(path: str | os.PathLike[str]) -> SourcePolicy:
    """The policy of a trainer checkpoint, league snapshot or policy file (frozen, on the CPU).

    Raises ``FileNotFoundError`` or ``ValueError`` naming the path when it is missing, damaged or
    holds no policy.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"policy file not found: {path}")
    sha256 = sha256_file(path)
    payload = read_torch_file(path, "cpu", what="policy file", error=ValueError)
    policy = policy_from_payload(payload, source=f"policy file {path}")
    policy.eval()
    policy.requires_grad_(False)
    trainer = payload.get("format") == CHECKPOINT_FORMAT
    env = payload.get("env")
    env = dict(env) if isinstance(env, dict) and isinstance(env.get("game"), str) else None
    return SourcePolicy(policy, path, sha256, "trainer checkpoint" if trainer else "policy file", env)


def published_file(run_dir: Path) -> Path:
    """The snapshot file a league publishes (``league:RUN_DIR``), checked against its sha256;
    ``ValueError`` for a mixture, which is not one network."""
    found = published(run_dir)
    if found.is_mixture:
        raise ValueError(f"league:{run_dir} publishes {found.describe()}; an export is one network: export "
                         f"one member's file, e.g. {found.members[0].path}")
    member = found.members[0]
    verify_snapshot(member.path, member.sha256)
    return member.path


def default_out_path(ckpt: str | os.PathLike[str], fmt: str) -> Path:
    """Next to the checkpoint: ``trainer.pt`` -> ``trainer.onnx`` or ``trainer.torchscript.pt``."""
    ckpt = Path(ckpt)
    return ckpt.with_name(ckpt.stem + SUFFIXES[_check_format(fmt)])


def metadata_path(out: str | os.PathLike[str]) -> Path:
    """Where the description of an exported model is written: ``<out>.json``."""
    out = Path(out)
    return out.with_name(out.name + ".json")


def export_metadata(source: SourcePolicy, fmt: str) -> dict[str, Any]:
    """The contract of the exported step (names, shapes, head layout) and its provenance."""
    p = source.policy
    offsets = [0]
    for n in p.action_nvec:
        offsets.append(offsets[-1] + n)
    state = ["n", p.lstm_size]
    env = source.env or {}
    return {
        "arena_export_version": METADATA_VERSION,
        "format": fmt,
        "obs_dim": p.obs_dim,
        "action_nvec": list(p.action_nvec),
        "lstm_size": p.lstm_size,
        "hidden_size": p.hidden_size,
        "encoder_layers": p.encoder_layers,
        "inputs": [
            {"name": "obs", "dtype": "float32", "shape": ["n", p.obs_dim]},
            {"name": "h", "dtype": "float32", "shape": state},
            {"name": "c", "dtype": "float32", "shape": state},
            {"name": "episode_start", "dtype": "bool", "shape": ["n"]},
        ],
        "outputs": [
            {"name": "logits", "dtype": "float32", "shape": ["n", offsets[-1]]},
            {"name": "value", "dtype": "float32", "shape": ["n"]},
            {"name": "h_out", "dtype": "float32", "shape": state},
            {"name": "c_out", "dtype": "float32", "shape": state},
        ],
        "logits_head_offsets": offsets,
        "usage": (
            "one decision for n rows. Start each row with h = c = 0 (or episode_start = true); after "
            "each step feed h_out, c_out back as that row's h, c. Head d's logits are "
            "logits[:, offsets[d]:offsets[d+1]]; sample each head from softmax(logits) or take its argmax."
        ),
        "game": env.get("game"),
        "team_sizes": env.get("team_sizes"),
        "game_overrides": env.get("overrides"),
        "source": {"path": os.path.abspath(source.path), "kind": source.kind, "sha256": source.sha256},
    }


def export_policy(ckpt: str | os.PathLike[str], fmt: str, out: str | os.PathLike[str] | None = None
                  ) -> ExportResult:
    """Exports the policy of ``ckpt`` as ``fmt`` to ``out`` (default: next to ``ckpt``), checks it
    against ``Policy.forward_step``, then writes the model and its ``<out>.json`` atomically."""
    fmt = _check_format(fmt)
    if str(ckpt).startswith("league:"):  # what a league publishes: its newest judged snapshot
        run_dir = Path(str(ckpt).removeprefix("league:"))
        ckpt = published_file(run_dir)
        out = Path(out) if out is not None else run_dir / f"published{SUFFIXES[fmt]}"
    out = Path(out) if out is not None else default_out_path(ckpt, fmt)
    if out.is_dir():
        raise ExportError(f"--out {out} is a directory; give the path of the file to write")
    if not out.parent.is_dir():
        raise ExportError(f"output directory {out.parent} does not exist; create it or choose another --out")
    exporter = _export_onnx if fmt == "onnx" else _export_torchscript
    runner_of = _onnx_runner if fmt == "onnx" else _torchscript_runner
    if fmt == "onnx":
        _require_onnx()
    source = read_source(ckpt)
    info = export_metadata(source, fmt)
    step = PolicyStep(source.policy).eval()
    model = exporter(step, info)
    _check_export(source.policy, runner_of(model), what=f"the {fmt} export of {source.path}")
    meta = metadata_path(out)
    _write_atomic(out, model)
    _write_atomic(meta, (json.dumps(info, indent=2) + "\n").encode())
    logger.info("exported %s (%s) to %s", source.path, fmt, out)
    return ExportResult(out, meta, info)


# ---------------------------------------------------------------------- the two formats


def _traceable(step: PolicyStep) -> tuple[Tensor, ...]:
    """Example inputs to trace ``step`` with, after one call that fills the policy's inference caches
    (the fused LSTM weight): every trace then records the same graph, in which that weight is a constant."""
    example = _example_inputs(step.policy, 2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        step(*example)
    return example


def _example_inputs(policy: Policy, rows: int, generator: torch.Generator) -> tuple[Tensor, ...]:
    obs = torch.randn(rows, policy.obs_dim, generator=generator)
    h = torch.randn(rows, policy.lstm_size, generator=generator)
    c = torch.randn(rows, policy.lstm_size, generator=generator)
    starts = torch.rand(rows, generator=generator) < 0.5
    return obs, h, c, starts


def _export_onnx(step: PolicyStep, info: dict[str, Any]) -> bytes:
    import onnx

    example = _traceable(step)
    buffer = io.BytesIO()
    axes = {name: {0: "n"} for name in INPUT_NAMES + OUTPUT_NAMES}
    with torch.no_grad(), _quiet_deprecations():
        # dynamo=False: the TorchScript-based exporter needs only onnx (the default one needs onnxscript)
        torch.onnx.export(step, example, buffer, dynamo=False, input_names=list(INPUT_NAMES),
                          output_names=list(OUTPUT_NAMES), dynamic_axes=axes, opset_version=ONNX_OPSET)
    model = onnx.load_from_string(buffer.getvalue())
    for key, value in info.items():  # strings as they are, other values as JSON, unknowns (None) left out
        if value is not None:
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value if isinstance(value, str) else json.dumps(value)
    model.producer_name = "arena.export"
    model.doc_string = info["usage"]
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _export_torchscript(step: PolicyStep, info: dict[str, Any]) -> bytes:
    example = _traceable(step)
    with torch.no_grad(), _quiet_deprecations():
        # check_trace=False: export_policy checks the result itself, over several steps and batch sizes
        traced = torch.jit.trace(step, example, check_trace=False)
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer, _extra_files={METADATA_FILE: json.dumps(info, indent=2)})
    return buffer.getvalue()


Runner = Callable[[Sequence[Tensor]], Sequence[Tensor]]


def _onnx_runner(model: bytes) -> Runner:
    import onnxruntime

    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])

    def run(inputs: Sequence[Tensor]) -> list[Tensor]:
        feeds = {name: x.numpy() for name, x in zip(INPUT_NAMES, inputs, strict=True)}
        return [torch.from_numpy(y) for y in session.run(list(OUTPUT_NAMES), feeds)]

    return run


def _torchscript_runner(model: bytes) -> Runner:
    with _quiet_deprecations():
        loaded = torch.jit.load(io.BytesIO(model), map_location="cpu")

    def run(inputs: Sequence[Tensor]) -> Sequence[Tensor]:
        with torch.no_grad():
            return loaded(*inputs)

    return run


def _check_export(policy: Policy, run: Runner, *, what: str) -> None:
    """Runs the export and ``forward_step`` side by side for a few steps, feeding the state back, on
    another number of rows than the export was traced with; raises ``ExportError`` on a mismatch."""
    generator = torch.Generator().manual_seed(1)
    obs, h, c, _ = _example_inputs(policy, _CHECK_ROWS, generator)
    for t in range(_CHECK_STEPS):
        starts = torch.zeros(_CHECK_ROWS, dtype=torch.bool)
        starts[t % _CHECK_ROWS] = True
        with torch.no_grad():
            logits, value, (h_ref, c_ref) = policy.forward_step(obs, (h, c), starts)
        expected = (torch.cat(logits, dim=-1), value, h_ref, c_ref)
        got = run((obs, h, c, starts))
        for name, a, b in zip(OUTPUT_NAMES, got, expected, strict=True):
            if a.shape != b.shape:
                raise ExportError(f"{what} gives {name} of shape {list(a.shape)}, "
                                  f"forward_step {list(b.shape)}")
            error = (a - b).abs().max().item()
            if not error <= _CHECK_TOLERANCE * (1.0 + b.abs().max().item()):
                raise ExportError(f"{what} differs from forward_step by {error:.3g} in {name} at step {t}")
        h, c = h_ref, c_ref
        obs = torch.randn(_CHECK_ROWS, policy.obs_dim, generator=generator)


# ---------------------------------------------------------------------- helpers


def _check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return fmt


def _require_onnx() -> None:
    missing = []
    for name in ("onnx", "onnxruntime"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ExportError(f"ONNX export needs the packages onnx and onnxruntime (missing: "
                          f"{', '.join(missing)}); {INSTALL_HINT}")


@contextmanager
def _quiet_deprecations() -> Iterator[None]:
    """Hides torch's deprecation notices of ``torch.jit`` and of the TorchScript-based ONNX exporter:
    both are what this module uses on purpose (that exporter needs no onnxscript)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        yield


def _write_atomic(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


# ---------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m arena.export",
        description="Export a policy (trainer checkpoint, league snapshot or policy file) as one decision "
        "step: (obs, h, c, episode_start) -> (logits, value, h_out, c_out); a JSON description is "
        "written next to it as <out>.json.",
    )
    p.add_argument("checkpoint", metavar="CKPT", help="trainer checkpoint, league snapshot or policy file, "
                   "or league:RUN_DIR (the league's published network; default --out RUN_DIR/published.onnx)")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt", help="onnx or torchscript")
    p.add_argument("--out", default=None, metavar="PATH",
                   help="file to write (default: next to CKPT, as .onnx or .torchscript.pt)")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on bad arguments (2)
        return int(exc.code or 0)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        result = export_policy(args.checkpoint, args.fmt, args.out)
    except (FileNotFoundError, ValueError) as exc:
        # The first line says what is wrong; torch appends pages of advice to a damaged file's error.
        print(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    info = result.info
    print(f"wrote {result.model} ({info['format']}): obs_dim {info['obs_dim']}, "
          f"actions {info['action_nvec']}, lstm_size {info['lstm_size']}, game {info['game'] or 'unknown'}")
    print(f"wrote {result.metadata} (inputs, outputs and source sha256)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
