"""The manual runs: every ```python block of README.md and docs/ executes, and every
``python -m arena...`` line of their ```bash blocks parses.

A hand-written runner rather than pytest-markdown-docs: it needs no plugin in the test environment,
and the command lines need arena-specific checks a generic runner cannot do (hydra overrides composed
with ``arena.config.compose_run_config``, each module's own argparse parser). A block that is not meant
to run on its own (a fragment, or one that needs files a run writes) is marked with the HTML comment
``<!-- docs-test: skip -->`` on the line before its fence.

Command lines: ``python -m arena.train ...`` (and ``torchrun ... -m arena.train ...``) compose the
run config from the line's overrides (a sweep, ``-m``, goes through ``arena.train.main`` with
``--cfg``); any other module's ``main`` runs with the line's arguments until its parser has parsed
them, and stops there (nothing trains, nothing is read). ``python -m arena.bench learn`` also composes
the overrides it hands to ``arena.train``.
"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_MARK = "<!-- docs-test: skip -->"
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: bool

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a markdown file, with the skip mark of the line before each."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        previous = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        found.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:j]), previous == SKIP_MARK))
        i = j + 1
    return found


ALL_BLOCKS = [b for p in markdown_files() for b in blocks(p)]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "python"]


def command_lines() -> list[tuple[str, str]]:
    """``(where, line)`` for every ``-m arena...`` command of the bash blocks, continuations joined."""
    out = []
    for block in ALL_BLOCKS:
        if block.lang not in ("bash", "sh", "shell", "console") or block.skip:
            continue
        joined = block.text.replace("\\\n", " ")
        for offset, line in enumerate(joined.splitlines()):
            if re.search(r"-m arena\b", line):
                out.append((f"{block.id}+{offset + 1}", line))
    return out


COMMANDS = command_lines()


def test_found_the_blocks() -> None:
    assert len(PYTHON_BLOCKS) >= 3
    assert len(COMMANDS) >= 40
    assert any(b.path.name == "README.md" and "python -m pytest tests" in b.text for b in ALL_BLOCKS)


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.id for b in PYTHON_BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.skip:
        pytest.skip("marked <!-- docs-test: skip -->")
    monkeypatch.chdir(tmp_path)  # files a block writes (match.png) land here
    exec(compile(block.text, block.id, "exec"), {"__name__": "docs_block"})  # noqa: S102


class Parsed(BaseException):  # noqa: N818 - a signal, not an error; BaseException: no `except Exception` eats it
    def __init__(self, namespace: argparse.Namespace) -> None:
        self.namespace = namespace


def _stop_after_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("parse_args", "parse_intermixed_args"):
        original = getattr(argparse.ArgumentParser, name)

        def parse(self, args=None, namespace=None, _original=original):  # noqa: ANN001, ANN202
            raise Parsed(_original(self, args, namespace))

        monkeypatch.setattr(argparse.ArgumentParser, name, parse)


def split_command(line: str) -> tuple[str, list[str]]:
    """The module and arguments of the ``-m arena...`` command on a shell line."""
    for part in re.split(r"&&|;", line):
        tokens = [t for t in shlex.split(part, comments=True) if t != "..."]
        for i, token in enumerate(tokens[:-1]):
            if token == "-m" and tokens[i + 1].startswith("arena"):
                return tokens[i + 1], tokens[i + 2:]
    raise AssertionError(f"no -m arena... command in {line!r}")


MAINS = {"arena.league": "arena.league.__main__", "arena.replay": "arena.replay.__main__",
         "arena.bench": "arena.bench.__main__"}


@pytest.mark.parametrize(("where", "line"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_command_line_parses(where: str, line: str, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    from arena.config import compose_run_config

    module, args = split_command(line)
    if module == "arena.train":
        if "-m" in args or "--multirun" in args:
            from arena.train import main

            assert main([*args, "--cfg"]) == 0, capsys.readouterr()
        else:
            compose_run_config([a for a in args if a != "--cfg"])
        return
    if module == "arena.bench" and not args:
        return  # prints the list of benches
    _stop_after_parsing(monkeypatch)
    main = importlib.import_module(MAINS.get(module, module)).main
    with pytest.raises(Parsed) as parsed:
        status = main(args)
        pytest.fail(f"{where}: {line!r} did not parse (exit {status}): {capsys.readouterr().err}")
    if module == "arena.bench" and args[0] == "learn":
        from arena.bench.learn import DEFAULTS

        ns = parsed.value.namespace
        base = ["+league=selfplay"] if ns.from_scratch else list(DEFAULTS)
        compose_run_config([*base, *ns.overrides])
