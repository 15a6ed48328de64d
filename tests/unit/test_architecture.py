"""The shape rules of the product code, checked on the source: no giant module, no import cycle, no state in a module.

Each rule is a small scanner over ``ftdesk/`` plus a test that feeds it a bad sample, so a scanner that
stopped seeing anything would fail too.
"""

from __future__ import annotations

import ast
import re
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


# --- reaches into another object's private members -------------------------------------------------------------

MAX_PRIVATE_REACHES = 8
"""Only what a library forces (its state kept in underscored members, no public way to it), each explained."""


def private_reaches(path: Path) -> list[tuple[int, str]]:
    """Return ``(line, expression)`` for each ``x._name`` where ``x`` is not the object itself (self, cls, super())."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
            continue
        found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def _explained(lines: list[str], line: int) -> bool:
    """Say whether a comment on the line or on one of the three lines above it gives a reason."""
    return any("#" in text for text in lines[max(0, line - 4) : line])


def test_private_reaches_are_few_and_each_says_why() -> None:
    reaches = {
        f"{name}:{line}: {text}": _explained(path.read_text(encoding="utf-8").splitlines(), line)
        for name, path in package_modules(PACKAGE).items()
        for line, text in private_reaches(path)
    }
    assert len(reaches) <= MAX_PRIVATE_REACHES, f"reaches into other objects' private members: {sorted(reaches)}"
    assert [where for where, explained in reaches.items() if not explained] == [], "say which library forces it"


def test_the_private_reach_scan_sees_a_reach_and_spares_the_object_itself(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "class A(B):\n"
        "    def f(self, other):\n"
        "        self._mine = other._theirs\n"
        "        super()._setup()\n"
        "        return other.__class__, type(self)._table, cls_ref._x\n"
    )
    assert private_reaches(sample) == [(3, "other._theirs"), (5, "cls_ref._x"), (5, "type(self)._table")]
    assert _explained(["x = 1", "# aiohttp keeps it private", "y = a._b"], 3)
    assert not _explained(["x = 1", "y = a._b"], 2)


# --- the service floor stays grouped ----------------------------------------------------------------------------

MAX_SERVICE_TOP_MODULES = 20
"""Past this the service floor reads as a flat list again; group by job in a subpackage instead."""


def top_modules(folder: Path) -> list[str]:
    """Return the modules directly in a package folder (not its subpackages, not ``__init__``)."""
    return sorted(path.stem for path in folder.glob("*.py") if path.name != "__init__.py")


def test_the_service_floor_has_few_modules_at_its_top() -> None:
    found = top_modules(PACKAGE / "service")
    assert len(found) <= MAX_SERVICE_TOP_MODULES, f"{len(found)} modules at the top of ftdesk/service: {found}"


def test_the_top_module_count_leaves_out_subpackages(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("__init__.py", "a.py", "b.py", "sub/__init__.py", "sub/c.py"):
        (tmp_path / name).write_text("")
    assert top_modules(tmp_path) == ["a", "b"]


# --- composition without late wiring --------------------------------------------------------------------------

COMPOSITION = ("ftdesk/app.py", "ftdesk/service/control.py")
"""The composition root and the control surface: each part is built with what it needs, never patched after."""


def _assigned(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        targets: list[ast.expr] = []
        for target in node.targets:
            targets.extend(target.elts if isinstance(target, ast.Tuple | ast.List) else [target])
        return targets
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def foreign_attribute_sets(path: Path) -> list[str]:
    """Return ``line: target`` for each attribute assigned on anything but the object itself (``self``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for target in _assigned(node):
            if isinstance(target, ast.Attribute) and not (
                isinstance(target.value, ast.Name) and target.value.id == "self"
            ):
                found.append(f"{node.lineno}: {ast.unparse(target)}")
    return found


def test_the_composition_sets_no_attribute_on_another_object() -> None:
    root = PACKAGE.parent
    offenders = [f"{name}:{where}" for name in COMPOSITION for where in foreign_attribute_sets(root / name)]
    assert offenders == [], f"build the part with it instead: {offenders}"


def context_reassignments(path: Path) -> list[str]:
    """Return ``line: target`` for each assignment to a member of a service context (``context.x``, ``ctx.x``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        for target in _assigned(node):
            if not isinstance(target, ast.Attribute):
                continue
            owner = target.value
            named = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if named in ("context", "ctx"):
                found.append(f"{node.lineno}: {ast.unparse(target)}")
    return found


def test_nothing_reassigns_a_member_of_the_service_context() -> None:
    offenders = [
        f"{name}:{where}" for name, path in package_modules(PACKAGE).items() for where in context_reassignments(path)
    ]
    assert offenders == [], f"the context is frozen: change the collaborator (a holder, a switch) instead: {offenders}"


def test_the_service_context_is_frozen() -> None:
    import dataclasses

    from ftdesk.service.context import ServiceContext

    assert ServiceContext.__dataclass_params__.frozen  # type: ignore[attr-defined]
    fields = {field.name for field in dataclasses.fields(ServiceContext)}
    assert "settings" not in fields  # settings change live: they are read through the holder


def test_the_composition_scans_see_late_wiring(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "class Root:\n"
        "    def start(self, orders, run):\n"
        "        self.server = 1\n"
        "        orders.guard = 2\n"
        "        run.context.settings = 3\n"
        "        ctx.live, self.x = 4, 5\n"
        "        run.count += 1\n"
    )
    assert foreign_attribute_sets(sample) == [
        "4: orders.guard",
        "5: run.context.settings",
        "6: ctx.live",
        "7: run.count",
    ]
    assert context_reassignments(sample) == ["5: run.context.settings", "6: ctx.live"]


# --- comments a reader can follow --------------------------------------------------------------------------------

ISSUE_REFERENCE = re.compile(r"\bissues?[ -]#?\d+|\bthe [a-z]+ issue\b|\bissue #\d+", re.IGNORECASE)
"""An issue named in a comment or docstring: the reader of the code cannot see the tracker; say the fact instead."""


def issue_references(path: Path) -> list[str]:
    """Return ``line: text`` for each mention of an issue (by number, or 'the streaming issue')."""
    return [
        f"{number}: {match.group(0)}"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        for match in ISSUE_REFERENCE.finditer(line)
    ]


def test_no_comment_names_an_issue() -> None:
    offenders = [
        f"{name}:{where}" for name, path in package_modules(PACKAGE).items() for where in issue_references(path)
    ]
    assert offenders == []


def test_the_issue_scan_sees_numbers_and_names(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Menu (issue 6), built in the streaming issue."""\n'
        "# see qasync issue #121 and Issue-16\n"
        "x = 1  # an issue of ordering, not a number\n"
    )
    assert issue_references(sample) == [
        "1: issue 6",
        "1: the streaming issue",
        "2: issue #121",
        "2: Issue-16",
    ]


# --- the routes are leaves ----------------------------------------------------------------------------------------

ROUTE_PACKAGE = "ftdesk.service.routes"


def route_importers(graph: dict[str, set[str]]) -> list[str]:
    """Return the modules outside the routes, other than the composition root, that import a route module."""
    return sorted(
        f"{name} imports {imported}"
        for name, imports in graph.items()
        if not name.startswith(ROUTE_PACKAGE) and name != "ftdesk.app"
        for imported in imports
        if imported.startswith(ROUTE_PACKAGE)
    )


def test_only_the_composition_root_imports_route_modules() -> None:
    # The docs builders, the web app and the control surface read endpoint metadata (ENDPOINTS, extra_openapi).
    assert route_importers(import_graph(PACKAGE)) == []


def test_the_route_import_scan_sees_an_importer() -> None:
    graph = {
        "ftdesk.app": {"ftdesk.service.routes"},
        "ftdesk.service.docs.asyncapi": {"ftdesk.service.routes.streaming_ws", "ftdesk.service.push.frames"},
        "ftdesk.service.routes.orders": {"ftdesk.service.routes.common"},
    }
    assert route_importers(graph) == ["ftdesk.service.docs.asyncapi imports ftdesk.service.routes.streaming_ws"]


# --- the architecture document names files that exist ---------------------------------------------------------

ARCHITECTURE_DOC = PACKAGE.parent / "docs" / "architecture.md"
_DOC_PATH = re.compile(r"`([\w./-]+/[\w.-]*)`")


def missing_doc_paths(text: str, root: Path) -> list[str]:
    """Return the backticked paths of a document (``a/b.py``, ``a/b/``) found neither in the repo nor the package."""
    missing = []
    for found in dict.fromkeys(_DOC_PATH.findall(text)):
        path = found.rstrip("/")
        if path.startswith(("/", "http")) or not (path.endswith(".py") or found.endswith("/")):
            continue  # an endpoint or a URL, not a file
        bases = (root, root / "ftdesk", root / "ftdesk" / "service", root / "ftdesk" / "brokers")
        if not any((base / path).exists() for base in bases):
            missing.append(found)
    return missing


def test_the_architecture_document_names_only_files_that_exist() -> None:
    assert missing_doc_paths(ARCHITECTURE_DOC.read_text(encoding="utf-8"), PACKAGE.parent) == []


def test_the_document_path_scan_sees_a_moved_file(tmp_path: Path) -> None:
    (tmp_path / "ftdesk" / "service" / "orders").mkdir(parents=True)
    (tmp_path / "ftdesk" / "service" / "orders" / "desk.py").write_text("")
    text = "`service/orders/desk.py`, `orders/desk.py`, `orders_desk.py`, `service/orders_desk.py`, `/api/v1/x`"
    assert missing_doc_paths(text, tmp_path) == ["service/orders_desk.py"]
