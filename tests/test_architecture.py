"""The shape of the code: imports point down the layers, nothing imports in a circle, no module
grows past 600 lines. Read from the source with `ast` (imports inside functions count), so a
shortcut added anywhere fails here before it becomes the next review's finding.

docs/architecture.md describes the layers; this test is their definition."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("config", "registry", "mcp_endpoint", "api", "oauth", "webhooks")
MAX_LINES = 600

# registry/, bottom up: a module may import its own room and rooms of lower layers only.
REGISTRY_LAYERS = (
    ("errors", "signals", "conf", "formats"),
    ("storage",),
    ("models",),
    ("kinds", "audit", "changes", "roles", "outbox", "refusals"),
    ("authoring",),
    ("serving",),
    ("release",),
    ("portable",),
    ("mail",),
    ("admin", "templatetags", "management", "apps", "migrations"),
)
# mcp_endpoint/, bottom up: wire (JSON-RPC, versions, shapes, sessions) -> notify (the hub) ->
# handlers (one adapter per method) -> dispatch (the validation ladder, both wires) -> transport.
ENDPOINT_LAYERS = (
    ("__init__", "settings", "models", "migrations", "wire"),
    ("notify",),
    ("handlers",),
    ("dispatch",),
    ("transport",),
    ("routing", "apps", "management"),
)
# The only endpoint modules that name the registry: its read seams.
ENDPOINT_SEAMS = ("mcp_endpoint.handlers.reads", "mcp_endpoint.notify.reads")
# The project's apps, bottom up (config, the project package, is above all of them).
PACKAGE_LAYERS = (("registry",), ("oauth", "webhooks"), ("api", "mcp_endpoint"), ("config",))


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


@cache
def graph() -> dict[str, set[str]]:
    """module -> the first-party modules it imports (anywhere in its body)."""
    modules = _modules()

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in modules:
                return ".".join(parts[:end])
        return None

    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        if "migrations" in name.split("."):
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(filter(None, (resolve(alias.name) for alias in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                for alias in node.names:
                    target = resolve(f"{base}.{alias.name}") or resolve(base)
                    if target:
                        found.add(target)
        found.discard(name)
        edges[name] = found
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _layer_of(layers: tuple[tuple[str, ...], ...], room: str) -> int:
    for number, rooms in enumerate(layers):
        if room in rooms:
            return number
    raise AssertionError(f"{room!r} is in no layer: add it to the layers in tests/test_architecture.py")


def test_no_module_imports_another_in_a_circle():
    assert _cycles(graph()) == []


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.parametrize("package, layers", [("registry", REGISTRY_LAYERS), ("mcp_endpoint", ENDPOINT_LAYERS)])
def test_imports_point_down_the_layers_of_each_app(package, layers):
    upward = []
    for module, targets in graph().items():
        if module.split(".")[0] != package:
            continue
        for target in targets:
            if target.split(".")[0] == package and _layer_of(layers, _room(target)) > _layer_of(layers, _room(module)):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_endpoint_reaches_the_registry_through_its_read_seams_only():
    outside = sorted(f"{module} -> {target}" for module, targets in graph().items()
                     if module.startswith("mcp_endpoint") and module not in ENDPOINT_SEAMS
                     for target in targets if target.startswith("registry"))
    assert outside == []


def test_apps_import_only_apps_below_them():
    upward = []
    for module, targets in graph().items():
        package = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other != package and _layer_of(PACKAGE_LAYERS, other) >= _layer_of(PACKAGE_LAYERS, package):
                upward.append(f"{module} -> {target}")
    assert upward == []


@pytest.mark.parametrize("folder", [*PACKAGES, "bench"])
def test_no_source_module_is_longer_than_600_lines(folder):
    long = [f"{path.relative_to(ROOT)}: {count}" for path in sorted((ROOT / folder).rglob("*.py"))
            if "migrations" not in path.parts and (count := len(path.read_text().splitlines())) > MAX_LINES]
    assert long == []


def test_registry_keeps_at_most_12_modules_at_its_top_level():
    top = sorted(path.name for path in (ROOT / "registry").glob("*.py"))
    assert len(top) <= 12, top


def test_no_module_reads_the_private_state_of_djangos_transactions():
    """What lives as long as a transaction lives in a recording scope (`registry.changes.scope_memo`),
    never in a walk of `connection.run_on_commit` or `savepoint_ids`, which Django may change in any
    release."""
    private = ("run_on_commit", "savepoint_ids", "savepoint_state")
    found = [f"{path.relative_to(ROOT)}: {name}" for folder in PACKAGES
             for path in sorted((ROOT / folder).rglob("*.py")) if "migrations" not in path.parts
             for name in private if name in path.read_text()]
    assert found == []


def test_label_rows_leave_archived_entries_out_through_their_queryset_alone():
    """Which label rows are served (those of unarchived entries) is `LabelQuerySet.of_unarchived_entries`:
    a filter across the relation (`entry__archived_at`) reads every entry's row, draft and all."""
    found = [str(path.relative_to(ROOT)) for folder in PACKAGES
             for path in sorted((ROOT / folder).rglob("*.py")) if "migrations" not in path.parts
             if "entry__archived_at" in path.read_text()]
    assert found == []


# Rules with one definition: the names that decide them, and the only modules that may use them.
# A second module deciding the same thing (say, which clients a rollout reaches) fails here.
ONE_PLACE = {
    # Whether a client is in a rollout's share: asked through registry.serving.viewer (served_item,
    # in_bucket), never again beside it.
    "gets_candidate": ("registry/formats/buckets.py", "registry/serving/viewer.py"),
    # Whether a rollout row runs on the item an entry is served as: the catalog and its check.
    "rollout_applies": ("registry/serving/items.py", "registry/serving/catalogs.py",
                        "registry/serving/consistency.py"),
}


def _names_used(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names


@pytest.mark.parametrize("name", sorted(ONE_PLACE))
def test_a_rule_with_one_definition_is_used_only_where_it_is_defined(name):
    users = sorted(str(path.relative_to(ROOT)) for folder in (*PACKAGES, "bench")
                   for path in sorted((ROOT / folder).rglob("*.py"))
                   if "migrations" not in path.parts and name in _names_used(path))
    assert users == sorted(ONE_PLACE[name])
