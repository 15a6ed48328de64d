"""The shape rules of the product code, checked on the source: no giant module, no import cycle, no state in a module.

Each rule is a small scanner over ``ftdesk/`` plus a test that feeds it a bad sample, so a scanner that
stopped seeing anything would fail too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ftdesk"

MAX_MODULE_LINES = 600
"""Past this a module almost always holds two jobs; split it along them."""


def package_modules(package: Path) -> dict[str, Path]:
    """Return every module of a package by dotted name (a package by its own name, not ``__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


# --- size ------------------------------------------------------------------------------------------------


def oversized_modules(package: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """Return ``name (N lines)`` for each module longer than ``limit`` lines, longest first."""
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in package_modules(package).items()
    }
    return [f"{name} ({lines} lines)" for name, lines in sorted(sizes.items(), key=lambda kv: -kv[1]) if lines > limit]


def test_no_module_of_the_product_is_over_600_lines() -> None:
    offenders = oversized_modules(PACKAGE)
    assert offenders == [], f"split these along their jobs (at most {MAX_MODULE_LINES} lines): {offenders}"


def test_the_size_scan_flags_a_long_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "short.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (package / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert oversized_modules(package) == [f"pkg.long ({MAX_MODULE_LINES + 1} lines)"]


# --- import cycles -------------------------------------------------------------------------------------------


def import_graph(package: Path) -> dict[str, set[str]]:
    """Return, for each module of the package, the modules of the package it imports.

    Every import counts: at module level, inside a function (often a cycle only deferred) and under
    ``TYPE_CHECKING`` (two modules that need each other's types are one job split in two). ``from a import b``
    counts as importing the module ``a.b`` when there is one, else ``a``. Parent packages an import runs on
    the way are left out: a package's ``__init__`` importing its own modules is no cycle.
    """
    modules = package_modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names
                ]
            else:
                continue
            graph[name].update(target for target in targets if target in modules and target != name)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan), each sorted, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        # Iterative: a deep import chain must not hit the recursion limit.
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(cycles)


def test_no_import_cycle_among_the_modules_of_the_product() -> None:
    cycles = import_cycles(import_graph(PACKAGE))
    assert cycles == [], f"modules that import each other, directly or round a loop: {cycles}"


def test_the_cycle_scan_follows_function_level_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg import a\n")  # a package importing its module: no cycle
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("def later():\n    from ..c import value\n    return value\n")
    (package / "c.py").write_text("from pkg import a\nvalue = 1\n")
    (package / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n"
    )  # for type checkers only, still a cycle
    (package / "e.py").write_text("from pkg import d\n")
    graph = import_graph(package)
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.d"] == {"pkg.e"}
    assert import_cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"], ["pkg.d", "pkg.e"]]


# --- module-level mutable state ------------------------------------------------------------------------------

MUTABLE_FACTORIES = frozenset(
    {
        "dict",
        "list",
        "set",
        "bytearray",
        "defaultdict",
        "OrderedDict",
        "Counter",
        "ChainMap",
        "deque",
        "WeakKeyDictionary",
        "WeakValueDictionary",
        "WeakSet",
        "count",
        "cycle",
        "Queue",
        "Event",
        "Lock",
    }
)
"""Calls whose result changes in place: containers, counters, weak maps, synchronisation objects."""


def _is_mutable(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        called = value.func
        name = called.id if isinstance(called, ast.Name) else called.attr if isinstance(called, ast.Attribute) else ""
        return name in MUTABLE_FACTORIES
    return False


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Yield the statements that run at import: the module's, and those in its top-level if/try blocks."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _module_statements(statement.body)
            yield from _module_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody):
                yield from _module_statements(block)
            for handler in statement.handlers:
                yield from _module_statements(handler.body)
        else:
            yield statement


def module_state(path: Path) -> list[str]:
    """Return ``line: name`` for each module-level name bound to something that changes in place.

    Strict on purpose: a constant table is a ``MappingProxyType``, a tuple or a frozenset, so that nothing
    can turn it into state later; ``__all__`` is a tuple.
    """
    found: list[str] = []
    for statement in _module_statements(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        if _is_mutable(value):
            found.extend(f"{statement.lineno}: {ast.unparse(target)}" for target in targets)
    return found


def test_no_module_of_the_product_keeps_mutable_state() -> None:
    offenders = [f"{name}:{where}" for name, path in package_modules(PACKAGE).items() for where in module_state(path)]
    assert offenders == [], (
        "module-level mutable containers (make constant tables MappingProxyType/tuple/frozenset, "
        f"and give state an owner): {offenders}"
    )


def test_the_state_scan_flags_containers_and_spares_constants(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import itertools, weakref\n"
        "from types import MappingProxyType\n"
        "LIMIT = 10\n"
        "NAMES = ('a', 'b')\n"
        "CODES = frozenset({'x'})\n"
        "TABLE = MappingProxyType({'a': 1})\n"
        "_cache = weakref.WeakKeyDictionary()\n"
        "TABLE_AS_DICT = {'a': 1}\n"
        "if LIMIT:\n"
        "    pending: list[int] = []\n"
        "ids = itertools.count()\n"
        "def f():\n"
        "    local = []\n"
        "    return local\n"
        "class C:\n"
        "    shared = {}\n"
    )
    assert module_state(sample) == ["7: _cache", "8: TABLE_AS_DICT", "10: pending", "11: ids"]
