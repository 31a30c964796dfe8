"""A workaround for one Dagster 1.13 defect, applied when the Dagster layer is imported.

``DagsterInstance.__enter__`` makes the instance's definitions-state storage the process's current one (a
context variable), and ``__exit__`` never resets it. The storage holds only a weak reference to its instance:
once that instance is garbage-collected, the next ``Definitions`` built in the process (every
``dg.materialize``, every stage of ``geomon run``) fails with "Attempted to resolve undefined DagsterInstance
weakref" — when depends on the collector (seen once in CI, in a test that ran after another had closed an
instance). A storage whose instance is gone is treated as no storage, which is what Dagster does outside any
instance.
"""

from typing import Any

from dagster._core.storage.defs_state.base import DefsStateStorage

_dagster_get = DefsStateStorage.get.__func__  # type: ignore[attr-defined]


def _live_storage(cls: Any) -> DefsStateStorage | None:
    storage = _dagster_get(cls)
    reference = getattr(storage, "_instance_weakref", None)
    if reference is not None and reference() is None:
        return None
    return storage


if not getattr(DefsStateStorage.get, "_geomon_live_only", False):
    _live_storage._geomon_live_only = True  # type: ignore[attr-defined]
    DefsStateStorage.get = classmethod(_live_storage)  # type: ignore[method-assign, assignment]
