"""The house has layers, and imports run one way: down. A module imports only from its own layer or the
layers below it (docs/architecture.md draws them), and no two modules import each other, directly or round a
circle — deferred imports inside functions included: a circle deferred is still a circle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "geomon"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
LONG = 600  # lines: a longer module is named in docs/architecture.md with the reason it is one room

# Bottom to top: each layer may import the ones before it.
LAYERS = [
    {"untrusted", "parsing", "stats"},  # values, statistics and text: no I/O, no model
    {"engine"},  # talking to models, the response store
    {"sources", "embeddings"},  # the data several benchmarks share; sentence embeddings
    {"report", "quality", "jury"},  # what suites use: the report's parts and pages, data-quality checks, the jury
    # The benchmarks, each a folder suites/<name>/ whose every module (its source reader and report page too) is in
    # this layer, by its path; their declarations and the registry.
    {"suites"},
    {"monitor"},  # the metric history, verdicts over it, imports, drift, alerts
    {"plan", "config"},  # what a run will ask; the settings
    {"defs", "definitions", "cli"},  # the Dagster layer and the command line: wiring only
]


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else module
    return next(i for i, names in enumerate(LAYERS) if top in names)


def _imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if name == "geomon":
            continue
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "geomon":
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("geomon."))
        out[name] = found
    known = set(out)
    return {name: {t for t in targets if t in known and t != name} for name, targets in out.items()}


def test_every_module_has_a_layer():
    assert [m for m in _imports() if not any(m.split(".")[1] in names for names in LAYERS)] == []


def test_imports_run_down_the_layers():
    upward = [
        f"{module} -> {target}"
        for module, targets in _imports().items()
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_no_import_circles():
    graph = _imports()
    state: dict[str, int] = {}
    circles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*path[path.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def _long_files_named() -> dict[str, str]:
    """docs/architecture.md's table of files over ``LONG`` lines: path under geomon/ → its reason."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("### Files over 600 lines", 1)[1].split("\n#", 1)[0]
    return {m[1]: m[2].strip() for m in re.finditer(r"^\| `([^`]+\.py)` \|(.*)\|\s*$", section, re.M)}


def test_a_file_over_600_lines_is_named_with_its_reason():
    """No module in geomon/ grows past 600 lines unnoticed: each longer one has a row with a reason in
    docs/architecture.md's table, and each row names a file that is still that long (a split file's row goes)."""
    lengths = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    named = _long_files_named()
    assert sorted(path for path, lines in lengths.items() if lines > LONG and not named.get(path)) == []
    assert sorted(path for path in named if lengths.get(path, 0) <= LONG) == []
