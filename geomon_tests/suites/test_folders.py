"""A benchmark is a folder: everything of one bundled suite lives in ``geomon/suites/<name>/`` and no other code of
geomon names it, so a seventh benchmark is one new folder and touches nothing else. The test reads every module
outside a suite's folder and lists what names the suite there: an import of a module called after it, an
identifier with its name as a word (``worldbench_prompts``, ``GapminderData``), or a string that is not prose (a
docstring) with its name as a word (``"gapminder"``, ``"history/gapminder_import"``). Comments and docstrings may
name any benchmark."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from geomon_tests import snapshot

PACKAGE = Path(__file__).resolve().parents[2] / "geomon"
BUNDLED = snapshot.expected()["suites"]  # the bundled suites, as the reviewed snapshot records them


def _words(identifier: str) -> set[str]:
    """``GapminderData`` → {gapminder, data}; ``worldbench_prompts`` → {worldbench, prompts}."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", identifier)
    return {word.lower() for word in spaced.split("_") if word}


def _docstrings(tree: ast.AST) -> set[int]:
    """The string constants that are prose: module, class and function docstrings, and the attribute docstrings
    that follow an assignment."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            found.update(
                id(statement.value)
                for statement in body
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            )
    return found


def names_of(suite: str, source: str) -> list[str]:
    """Where ``source`` (a module's text) names ``suite``: ``line: how``, in line order."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    as_word = re.compile(rf"(?<![a-z0-9]){re.escape(suite)}(?![a-z0-9])", re.IGNORECASE)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if isinstance(node, ast.ImportFrom):
                modules += [f"{node.module}.{a.name}" for a in node.names]
            found.update(f"{node.lineno}: import {m}" for m in modules if suite in m.split("."))
        elif isinstance(node, ast.Name | ast.Attribute | ast.FunctionDef | ast.ClassDef | ast.arg | ast.keyword):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None)
            name = name or getattr(node, "arg", None)
            if name and suite in _words(name):
                found.add(f"{node.lineno}: {name}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in prose
            and as_word.search(node.value.replace("_", " "))
        ):
            found.add(f"{node.lineno}: {node.value[:60]!r}")
    return sorted(found, key=lambda line: int(line.split(":")[0]))


def _outside(suite: str) -> dict[str, list[str]]:
    """Every module of geomon outside ``suites/<suite>/`` that names the suite, with where."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if not where.startswith(f"suites/{suite}/"):
            lines = names_of(suite, path.read_text(encoding="utf-8"))
            if lines:
                found[where] = lines
    return found


def test_every_bundled_suite_is_a_folder():
    assert [name for name in BUNDLED if not (PACKAGE / "suites" / name / "__init__.py").is_file()] == []
    assert sorted(path.stem for path in (PACKAGE / "suites").glob("*.py") if path.stem in BUNDLED) == []


def test_no_code_outside_a_suites_folder_names_it():
    """For each bundled suite, the modules outside its folder that name it, with where: none. What the platform needs
    of a benchmark it asks its ``Suite`` for (its settings section, revisions, drift probe, importers)."""
    named = {name: _outside(name) for name in BUNDLED}
    assert {name: files for name, files in named.items() if files} == {}


def test_the_scan_finds_each_way_of_naming_a_suite():
    """What the scan counts, and what it leaves alone (prose), on one made-up module."""
    source = '''"""Toybench's docstring may name toybench."""
from geomon.suites.toybench.prompts import build
import geomon.sources.toybench
# a comment may name toybench
KEY = ["history", "toybench_import"]
def toybench_runs(settings):
    """Its docstring may name toybench too."""
    return settings.toybench, ToybenchData, f"{settings}:toybench", "toybenches", "blend"
'''
    assert [line.split(":")[0] for line in names_of("toybench", source)] == ["2", "2", "3", "5", "6", "8", "8", "8"]
    assert names_of("toybench", '"""toybench"""\n# toybench\nx = "toybenches"\n') == []
