"""The architecture's dependency rules, checked on the source so a violation fails the build."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ftdesk"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules() -> list[tuple[str, Path]]:
    result = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).with_suffix("")
        result.append((".".join(relative.parts), path))
    return result


def test_only_the_gui_package_imports_qt() -> None:
    offenders = [
        f"{name} imports {imported}"
        for name, path in modules()
        if not name.startswith("ftdesk.gui")
        for imported in imports_of(path)
        if imported.split(".")[0] in {"PySide6", "qasync", "shiboken6"}
    ]
    assert offenders == []


def test_the_scan_sees_qt_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from PySide6.QtWidgets import QApplication\nimport qasync\n")
    assert imports_of(sample) == {"PySide6.QtWidgets", "qasync"}


GUI_MAY_IMPORT = ("ftdesk.service.control", "ftdesk.domain", "ftdesk.gui")
"""The desktop app reaches the service through its control surface alone, plus domain records and itself."""


def gui_import_offenders(name: str, imports: set[str]) -> list[str]:
    """Return the imports from ftdesk that a module of the GUI package may not have."""
    if not name.startswith("ftdesk.gui"):
        return []
    return sorted(
        imported
        for imported in imports
        if imported.split(".")[0] == "ftdesk"
        and not any(imported == allowed or imported.startswith(allowed + ".") for allowed in GUI_MAY_IMPORT)
    )


def test_the_gui_reaches_the_service_only_through_its_control_surface() -> None:
    offenders = [
        f"{name} imports {imported}"
        for name, path in modules()
        for imported in gui_import_offenders(name, imports_of(path))
    ]
    assert offenders == []


def test_the_gui_scan_flags_a_reach_past_the_control_surface(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from ftdesk import __version__\n"
        "from ftdesk.service.session import SessionManager\n"
        "import ftdesk.streaming.hub\n"
        "from ftdesk.service.control import ServiceControl\n"
        "from ftdesk.service.controller import Nothing\n"
        "from ftdesk.domain.session import SessionState\n"
        "from ftdesk.gui.bridge import ServiceBridge\n"
    )
    assert gui_import_offenders("ftdesk.gui.sample", imports_of(sample)) == [
        "ftdesk",
        "ftdesk.service.controller",
        "ftdesk.service.session",
        "ftdesk.streaming.hub",
    ]
    assert gui_import_offenders("ftdesk.service.sample", imports_of(sample)) == []


def live_switch_assignments(path: Path) -> list[int]:
    """Return the lines that switch live trading: ``<...>live.enabled = ...`` or a call of ``<...>live.set(...)``."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set":
            owner = node.func.value
            if (isinstance(owner, ast.Attribute) and owner.attr in ("live", "_live")) or (
                isinstance(owner, ast.Name) and owner.id == "live"
            ):
                lines.append(node.lineno)
            continue
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "enabled"):
                continue
            owner = target.value
            if (isinstance(owner, ast.Attribute) and owner.attr == "live") or (
                isinstance(owner, ast.Name) and owner.id == "live"
            ):
                lines.append(node.lineno)
    return sorted(lines)


LIVE_SWITCHERS = frozenset({"ftdesk.service.control", "ftdesk.service.safety.sweep"})
"""The control surface (on only when not halted, with its source) and the kill switch (off, source halt)."""


def test_only_the_control_surface_and_the_kill_switch_switch_live_trading() -> None:
    offenders = [
        f"{name}:{line}"
        for name, path in modules()
        if name not in LIVE_SWITCHERS
        for line in live_switch_assignments(path)
    ]
    assert offenders == []


def test_the_live_switch_scan_sees_an_assignment(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "runtime.live.enabled = True\nlive.enabled = False\nself.enabled = True\nlive.other = 1\n"
        "context.live.set(True, 'x')\nself._live.set(False, 'halt')\nevent.set()\n"
    )
    assert live_switch_assignments(sample) == [1, 2, 5, 6]


def _violations(rule) -> list[str]:
    return [
        f"{name} imports {imported}"
        for name, path in modules()
        for imported in imports_of(path)
        if imported.startswith("ftdesk") and rule(name, imported)
    ]


def test_domain_depends_on_nothing_else_in_ftdesk() -> None:
    assert _violations(lambda name, imp: name.startswith("ftdesk.domain") and not imp.startswith("ftdesk.domain")) == []


def test_broker_protocols_depend_only_on_the_domain() -> None:
    protocols = ("ftdesk.brokers.base", "ftdesk.brokers.capabilities")
    rule = lambda name, imp: name in protocols and not imp.startswith(("ftdesk.domain", *protocols))  # noqa: E731
    assert _violations(rule) == []


def test_service_and_streaming_never_import_a_concrete_broker_or_the_gui() -> None:
    def rule(name: str, imported: str) -> bool:
        layer = name.startswith(("ftdesk.service", "ftdesk.streaming"))
        concrete = imported.startswith(("ftdesk.brokers.paper", "ftdesk.brokers.fidelity", "ftdesk.gui", "ftdesk.app"))
        return layer and concrete

    assert _violations(rule) == []


def test_brokers_never_import_the_service_streaming_or_gui_layers() -> None:
    def rule(name: str, imported: str) -> bool:
        return name.startswith("ftdesk.brokers") and imported.startswith(
            ("ftdesk.service", "ftdesk.streaming", "ftdesk.gui", "ftdesk.app")
        )

    assert _violations(rule) == []


def _in(module: str, package: str) -> bool:
    """Return whether a module is the package or inside it (``ftdesk.brokers.paper_on_fidelity`` is not in paper)."""
    return module == package or module.startswith(package + ".")


PAPER, FIDELITY, PAPER_ON_FIDELITY = (
    "ftdesk.brokers.paper",
    "ftdesk.brokers.fidelity",
    "ftdesk.brokers.paper_on_fidelity",
)


def test_paper_and_fidelity_do_not_import_each_other() -> None:
    def rule(name: str, imported: str) -> bool:
        return (_in(name, PAPER) and _in(imported, FIDELITY)) or (_in(name, FIDELITY) and _in(imported, PAPER))

    assert _violations(rule) == []


def test_only_the_composition_root_builds_paper_on_fidelity_and_neither_brokerage_knows_of_it() -> None:
    """Paper on Fidelity's market sits above both brokerages: they never import it; only app.py assembles it."""

    def rule(name: str, imported: str) -> bool:
        return _in(imported, PAPER_ON_FIDELITY) and not _in(name, PAPER_ON_FIDELITY) and name != "ftdesk.app"

    assert _violations(rule) == []


def test_the_package_scan_tells_paper_from_paper_on_fidelity() -> None:
    assert _in("ftdesk.brokers.paper.broker", PAPER) and _in("ftdesk.brokers.paper", PAPER)
    assert not _in("ftdesk.brokers.paper_on_fidelity.market", PAPER)


ROUTE_BROKER_IMPORTS_ALLOWED = "ftdesk.brokers.capabilities"
"""Route modules take broker capabilities from here; from ``ftdesk.brokers.base`` only the stream vocabulary."""


def route_broker_offenders(source: str) -> list[str]:
    """Return what a route module imports from ``ftdesk.brokers`` beyond the group protocols (sorted)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.startswith("ftdesk.brokers"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            module = node.module
            if module == ROUTE_BROKER_IMPORTS_ALLOWED:
                continue
            if module == "ftdesk" and any(alias.name == "brokers" for alias in node.names):
                found.append("ftdesk.brokers")
            elif module.startswith("ftdesk.brokers"):
                found.extend(
                    f"{module}.{alias.name}"
                    for alias in node.names
                    if module != "ftdesk.brokers.base" or alias.name in ("Broker", "*")
                )
    return sorted(found)


def test_routes_depend_on_broker_capability_groups_never_on_a_whole_or_concrete_broker() -> None:
    offenders = [
        f"{name} imports {imported}"
        for name, path in modules()
        if name.startswith("ftdesk.service.routes")
        for imported in route_broker_offenders(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_route_scan_flags_a_whole_or_concrete_broker() -> None:
    sample = (
        "from ftdesk.brokers.capabilities import AccountsApi, OrdersApi\n"
        "from ftdesk.brokers.base import Broker, book_key\n"
        "from ftdesk.brokers.paper.broker import PaperBroker\n"
        "import ftdesk.brokers.fidelity.broker\n"
        "from ftdesk import brokers\n"
        "from ftdesk.domain.accounts import Account\n"
    )
    assert route_broker_offenders(sample) == [
        "ftdesk.brokers",
        "ftdesk.brokers.base.Broker",
        "ftdesk.brokers.fidelity.broker",
        "ftdesk.brokers.paper.broker.PaperBroker",
    ]
    assert route_broker_offenders("from ftdesk.brokers.capabilities import ResearchApi\n") == []
