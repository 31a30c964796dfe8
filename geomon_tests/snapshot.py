"""The code location's shape in one reviewed file: every registered suite in run order, every asset key
(with its partitions; each model's own asset and its check apart, one per configured model), asset check, job,
sensor and schedule. Tests compare the definitions with it, so a new suite edits no test: regenerate the file
(``make snapshots``, i.e. ``python -m geomon_tests.snapshot``) and review its diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"


def _partitions(definition: Any) -> str:
    if definition is None:
        return ""
    dimensions = getattr(definition, "partitions_defs", None)
    if dimensions:
        return " × ".join(f"{d.name}:{d.partitions_def.name}" for d in dimensions)
    return getattr(definition, "name", None) or type(definition).__name__


def current() -> dict[str, Any]:
    """What the registry and the Definitions hold now (the bundled suites only: run it with no suite_dirs)."""
    from geomon.definitions import defs
    from geomon.defs.monitoring import MODELS_GROUP
    from geomon.suites import registry

    graph = defs.resolve_asset_graph()
    return {
        "suites": list(registry.suites()),
        # each model's own asset and check (defs/models.py) are the settings' list of models, not the code's shape
        "assets": {
            key.to_user_string(): _partitions(graph.get(key).partitions_def)
            for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string())
            if key.path[0] != MODELS_GROUP
        },
        "asset_checks": sorted(
            f"{k.asset_key.to_user_string()}:{k.name}"
            for k in graph.asset_check_keys
            if k.asset_key.path[0] != MODELS_GROUP
        ),
        "jobs": sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__")),
        "sensors": sorted(s.name for s in defs.sensors),
        "schedules": sorted(s.name for s in defs.schedules),
    }


def expected() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def main() -> None:
    SNAPSHOT.write_text(json.dumps(current(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    main()
