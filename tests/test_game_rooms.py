"""Each game lives in its own rooms, ``arena/games/<name>/`` (Python) and ``arena/native/games/<name>/``
(C++), and the generic modules name no game.

The Python scan reads every module of the package outside the rooms with ``tokenize``: a name, a
string or any other token that holds a game's name fails the test, unless ``ALLOWED`` lists the line
with a reason. Comments and docstrings are prose and may name a game as an example; code may not. The
benches (``arena/bench/``) are studies of particular games and are not scanned. The C++ scan reads
every file of ``arena/native/`` outside its rooms, comments left out: only the registries' lines (an
include of a room, an ``X(...)`` line of ``ARENA_GAMES``) may name a game.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

from arena import games

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "arena"
GAME_NAME = re.compile("|".join(games.GAMES), re.IGNORECASE)
# (module path, the line's code, stripped) -> why a generic module may name a game there
ALLOWED: dict[tuple[str, str], str] = {
    ("arena/games/__init__.py", 'DEFAULT_GAME = "midrange"'): "the registry's default game",
}


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def _generic_modules() -> list[Path]:
    rooms = {PACKAGE_DIR / "games" / name for name in games.GAMES}
    return [path for path in sorted(PACKAGE_DIR.rglob("*.py"))
            if not any(room in path.parents for room in rooms) and PACKAGE_DIR / "bench" not in path.parents]


def game_names_in(path: Path) -> list[tuple[int, str]]:
    """(line, token) of every code token of ``path`` that holds a game's name."""
    source = path.read_text()
    docstrings = _docstring_lines(ast.parse(source))
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            continue
        if token.type == tokenize.STRING and token.start[0] in docstrings:
            continue
        if GAME_NAME.search(token.string):
            found.append((token.start[0], token.string))
    return found


def test_no_generic_module_names_a_game():
    offenders = []
    for path in _generic_modules():
        rel = path.relative_to(PACKAGE_DIR.parent).as_posix()
        lines = path.read_text().splitlines()
        for line, token in game_names_in(path):
            if (rel, lines[line - 1].strip()) not in ALLOWED:
                offenders.append(f"{rel}:{line}: {token[:60]}")
    assert not offenders, "generic modules name a game (move the code into the game's room):\n" + "\n".join(
        offenders)


NATIVE_DIR = PACKAGE_DIR / "native"
# the registries: games.h (the runner's: ARENA_GAMES) and game_bindings.h (the module's)
NATIVE_REGISTRY_LINE = re.compile(r'^#include "games/\w+/\w+\.h"$|^X\(\w+Game, \w+\)\s*\\?$')


def native_game_names(path: Path) -> list[tuple[int, str]]:
    """(line, code) of every line of the C++ file ``path`` whose code (comments removed) names a game,
    registry lines left out."""
    found = []
    in_block = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        code = line
        if in_block:
            if "*/" not in code:
                continue
            code, in_block = code.split("*/", 1)[1], False
        if "/*" in code:
            code, rest = code.split("/*", 1)
            in_block = "*/" not in rest
        code = code.split("//", 1)[0].strip()
        if GAME_NAME.search(code) and not NATIVE_REGISTRY_LINE.match(code):
            found.append((number, code))
    return found


def test_no_generic_file_of_the_core_names_a_game():
    rooms = NATIVE_DIR / "games"
    offenders = [f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: {code}"
                 for path in sorted(NATIVE_DIR.rglob("*")) if path.suffix in (".h", ".cpp", ".cu")
                 and rooms not in path.parents for line, code in native_game_names(path)]
    assert not offenders, "generic core files name a game (move it into arena/native/games/<name>/):\n" + (
        "\n".join(offenders))


def test_the_core_scan_passes_registry_lines_and_comments_only(tmp_path):
    header = tmp_path / "x.h"
    header.write_text('#include "games/rpsw/rpsw.h"\n  X(RpswGame, Rpsw)      \\\n// midrange here\n'
                      "int END = 5;  // rpsw\n/* goofspiel\n midrange */ int a;\n"
                      "void check(const midrange::Params& p);\n")
    assert native_game_names(header) == [(7, "void check(const midrange::Params& p);")]


@pytest.mark.parametrize("name", games.GAMES)
def test_each_game_has_its_room_in_the_core(name):
    room = NATIVE_DIR / "games" / name
    assert room.is_dir() and (room / "binding.h").is_file()
    assert f'#include "games/{name}/binding.h"' in (NATIVE_DIR / "game_bindings.h").read_text()


def test_the_scan_finds_a_game_name_in_code_but_not_in_prose(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Works for midrange too."""\n# rpsw is tiny\nGAME = "goofspiel"\n'
                      "def f():\n    \"\"\"Like midrange.\"\"\"\n    return MidrangeObsLayout\n")
    assert game_names_in(module) == [(3, '"goofspiel"'), (6, "MidrangeObsLayout")]


@pytest.mark.parametrize("name", games.GAMES)
def test_each_game_has_its_room_with_its_spec(name):
    room = PACKAGE_DIR / "games" / name
    assert (room / "__init__.py").is_file() and (room / "game.py").is_file()
    assert importlib.import_module(f"arena.games.{name}.game").SPEC is games.spec(name)
    assert games.spec(name).core_batch is not None


def test_the_allowed_lines_still_exist():
    # an entry whose line is gone would let a new one of the same text pass unseen
    for rel, code in ALLOWED:
        assert code in (PACKAGE_DIR.parent / rel).read_text(), (rel, code)


@pytest.mark.parametrize("name", games.GAMES)
def test_each_games_parameters_are_declared_once_in_the_core(name):
    game = games.spec(name)
    params_class = type(game.core_params(
        {key: p.default for key, p in game.params.items()}, (1, 1)))
    table = {row["name"]: row for row in params_class.TABLE}
    assert list(game.params) == list(table)  # no parameter of the Python side only, none missing
    fresh = params_class()
    for key, param in game.params.items():
        core_value = getattr(fresh, key)
        default = param.choices.index(param.default) if param.choices else param.default
        assert core_value == default, (key, core_value, param.default)  # the C++ initialiser
        row = table[key]
        assert (param.low, param.high, param.doc) == (row["low"], row["high"], row["doc"])
