"""MkDocs hooks: the reference pages are generated from the code when the site is built, so they cannot
drift from it — the CLI's help, every suite the registry finds, every suite's settings section and the release
decision's (``verdicts:``)."""

from __future__ import annotations

import dataclasses
import io
import typing
from contextlib import redirect_stdout
from typing import Any


def _cli() -> str:
    import argparse

    from geomon.cli import build_parser

    parser = build_parser()
    parts = ["```text", parser.format_help().rstrip(), "```"]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                parts += [f"\n### `geomon {name}`\n", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(parts)


def _suites() -> str:
    from geomon.suites.registry import suite, suites

    rows = ["| suite | title | spec | headline metrics | `geomon run` options | Dagster half |", "| --- | --- | --- | --- | --- | --- |"]
    for name, info in suites().items():
        heads = "<br>".join(f"`{h.metric}`" + (f" ({h.breakdown})" if h.breakdown else "") for h in info.headlines)
        opts = "<br>".join(f"`{o.flag}` (default {o.default})" for o in info.options) or "—"
        half = "declared `PIPELINE`, built by the factory" if suite(name).pipeline is not None else f"`geomon/defs/{name}/`"
        rows.append(f"| `{name}` | {info.title} | {info.spec} | {heads} | {opts} | {half} |")
    return "\n".join(rows)


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return field.default_factory()  # type: ignore[misc]
    return "(required)"


def _settings() -> str:
    from geomon.suites.registry import suites

    parts = []
    for name, info in suites().items():
        if info.settings is None:
            continue
        hints = typing.get_type_hints(info.settings)
        parts += [f"\n### `{name}:`\n", info.settings.__doc__ or "", "", "| key | type | default |", "| --- | --- | --- |"]
        for field in dataclasses.fields(info.settings):
            hint = str(hints[field.name]).replace("typing.", "").replace("pathlib.", "")
            parts.append(f"| `{field.name}` | `{hint}` | `{_default(field)!r}` |")
        parts.append(f"\nEnvironment: `GEOMON_{name.upper()}_<KEY>` overrides a text or path key.")
    return "\n".join(parts)


def _verdicts() -> str:
    """``verdicts:``: every field of ``VerdictSettings`` with its type and default, and the comment that says what
    it is (the lines above it in the dataclass)."""
    import inspect

    from geomon.stats.verdicts import VerdictSettings

    source = inspect.getsource(VerdictSettings).splitlines()
    hints = typing.get_type_hints(VerdictSettings)
    rows = ["| key | type | default | what it is |", "| --- | --- | --- | --- |"]
    for field in dataclasses.fields(VerdictSettings):
        at = next(i for i, line in enumerate(source) if line.strip().startswith(f"{field.name}:"))
        above = []
        while source[at - 1].strip().startswith("#"):
            at -= 1
            above.insert(0, source[at].strip().lstrip("# "))
        hint = str(hints[field.name]).replace("typing.", "")
        rows.append(f"| `{field.name}` | `{hint}` | `{_default(field)!r}` | {' '.join(above)} |")
    return "\n".join([VerdictSettings.__doc__ or "", "", *rows])


def _environment() -> str:
    import geomon.config

    doc = geomon.config.__doc__ or ""
    return doc.split("secrets come from:", 1)[-1].strip().replace("``", "`")


GENERATED = {
    "<!-- geomon:cli -->": _cli,
    "<!-- geomon:suites -->": _suites,
    "<!-- geomon:settings -->": _settings,
    "<!-- geomon:environment -->": _environment,
    "<!-- geomon:verdicts -->": _verdicts,
}


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    for marker, render in GENERATED.items():
        if marker in markdown:
            with redirect_stdout(io.StringIO()):
                markdown = markdown.replace(marker, render())
    return markdown
