"""The import graph of the ``arena`` package, read from its source with ``ast``.

Two rules (docs/architecture.md, "Who imports whom"): the modules of the package import each other
without a cycle, and no function imports an ``arena`` module to dodge one (a function-level import of
an ``arena`` module is allowed only where ``FUNCTION_LEVEL_ARENA_IMPORTS`` names it, with a reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "arena"
# Compiled modules of the package: leaves of the graph (they import nothing of arena's).
EXTENSION_MODULES = ("arena._core",)

# (importing module, imported module) -> why the import is made when the function runs. Empty: every
# arena module is imported at module level (a lookup by name, ``importlib.import_module``, is no
# import statement and is not counted: the game registry and the bench's commands find modules so).
FUNCTION_LEVEL_ARENA_IMPORTS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, not ``.__init__``)."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _module_names() -> set[str]:
    return set(_modules()) | set(EXTENSION_MODULES)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it loads: its top level and the ``try``, ``with``, ``if`` and
    class bodies in it, but no function's body and no ``if TYPE_CHECKING:`` block."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return found


def _function_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports made inside a function's body (at any depth)."""
    found = []
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            for node in ast.walk(function):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found.append(node)
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The package's modules an import statement loads (the deepest named module of each name;
    ``from pkg import name`` counts ``pkg.name`` where that is a module, else ``pkg``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return {name for name in names if name in modules}
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source not in modules:
        return set()
    targets = set()
    for alias in node.names:
        submodule = f"{source}.{alias.name}"
        targets.add(submodule if submodule in modules else source)
    return targets


def _contains(package: str, module: str) -> bool:
    return module == package or module.startswith(package + ".")


def _graph() -> tuple[dict[str, set[str]], dict[str, list[tuple[str, int]]]]:
    """Module-level import edges, and function-level imports of the package's modules (target, line)."""
    modules = _modules()
    names = _module_names()
    edges: dict[str, set[str]] = {name: set() for name in EXTENSION_MODULES}
    in_functions: dict[str, list[tuple[str, int]]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        edges[module] = set()
        for node in _module_level_imports(tree):
            for target in _targets(module, is_package, node, names):
                edges[module].add(target)
                # Loading a.b.c first runs the packages a and a.b; those that contain the importing
                # module are loaded before it anyway, the others are edges of their own.
                parts = target.split(".")
                for depth in range(1, len(parts)):
                    package = ".".join(parts[:depth])
                    if not _contains(package, module):
                        edges[module].add(package)
        for node in _function_level_imports(tree):
            for target in _targets(module, is_package, node, names):
                in_functions.setdefault(module, []).append((target, node.lineno))
        edges[module].discard(module)
    return edges, in_functions


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module (Tarjan), as a path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            connect(node)

    cycles = []
    for component in components:
        members = set(component)
        start = min(component)
        # Shortest path from start back to start inside the component (breadth first).
        previous: dict[str, str] = {}
        frontier = [start]
        found = None
        while frontier and found is None:
            following = []
            for node in frontier:
                for nxt in sorted(edges[node] & members):
                    if nxt == start:
                        found = node
                        break
                    if nxt not in previous:
                        previous[nxt] = node
                        following.append(nxt)
                if found is not None:
                    break
            frontier = following
        path = [start]
        node = found
        while node is not None and node != start:
            path.insert(1, node)
            node = previous.get(node)
        cycles.append([*path, start] + ([f"(component: {', '.join(sorted(component))})"]))
    return cycles


def test_the_scan_sees_the_package_and_its_imports():
    edges, _ = _graph()
    assert "arena.trainer.ppo" in edges
    assert "arena.agents.policy" in edges["arena.trainer.ppo"]


def test_the_package_has_no_import_cycles():
    edges, _ = _graph()
    cycles = _cycles(edges)
    assert not cycles, "import cycles among arena's modules:\n" + "\n".join(
        " -> ".join(cycle) for cycle in cycles
    )


def test_functions_import_arena_modules_only_where_the_allow_list_says_why():
    _, in_functions = _graph()
    unexplained = sorted(
        f"{module}:{line} imports {target}"
        for module, found in in_functions.items()
        for target, line in found
        if (module, target) not in FUNCTION_LEVEL_ARENA_IMPORTS
    )
    assert not unexplained, "function-level imports of arena modules:\n" + "\n".join(unexplained)


def test_a_cycle_is_reported_as_the_path_that_closes_it():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycles = _cycles(edges)
    assert len(cycles) == 1
    assert cycles[0][:4] == ["a", "b", "c", "a"]


# The league's rooms, lowest first (docs/architecture.md, "The league's rooms"): a room imports only the
# rooms of its own layer or below. timing and config are single modules the rooms above the model read.
LEAGUE_LAYERS = (
    ("arena.league.model",),
    ("arena.league.timing", "arena.league.matchmaking"),
    ("arena.league.config",),
    ("arena.league.view",),
    ("arena.league.run",),
)


def _league_layer(module: str) -> int | None:
    for depth, rooms in enumerate(LEAGUE_LAYERS):
        if any(_contains(room, module) for room in rooms):
            return depth
    return None


def league_layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Edges from a league room to a room of a higher layer."""
    found = []
    for module, targets in sorted(edges.items()):
        here = _league_layer(module)
        if here is None:
            continue
        found += [f"{module} imports {target}" for target in sorted(targets)
                  if (there := _league_layer(target)) is not None and there > here]
    return found


def test_each_league_room_imports_only_the_rooms_below_it():
    edges, _ = _graph()
    assert any(m.startswith("arena.league.run.") for m in edges), "the scan sees the league's rooms"
    violations = league_layer_violations(edges)
    assert not violations, "league rooms importing upwards:\n" + "\n".join(violations)


def test_a_league_room_importing_upwards_is_reported():
    edges = {"arena.league.model.payoff": {"arena.league.run.guard"},
             "arena.league.run.guard": {"arena.league.model.payoff"}}
    assert league_layer_violations(edges) == ["arena.league.model.payoff imports arena.league.run.guard"]


def test_the_trainer_core_does_not_import_its_telemetry_back():
    """Telemetry (loggers, dashboard, health) reads the PPO core's metrics; the core may hand them
    over, but telemetry never imports the core's modules."""
    edges, _ = _graph()
    upward = sorted(f"{m} imports {t}" for m, targets in edges.items()
                    if _contains("arena.trainer.telemetry", m)
                    for t in targets
                    if _contains("arena.trainer", t) and not _contains("arena.trainer.telemetry", t))
    assert not upward, "\n".join(upward)
