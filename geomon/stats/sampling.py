"""Nested samples: BLEnD, Gapminder, QUENCH and SAGED draw their prompts' sample here (WorldBench and the kit's
suites still take the front of one fixed shuffle, also nested), so a sample of n per group is the first n of a
seeded order of that group, and growing it to n + k adds k items without changing the n already asked (their
answers stay in the store and are not asked again); shrinking it keeps a subset of them.

The order is each item's hash with the seed and its group, so it does not depend on the sample's size, on the
other groups, or on items added to the release later (an existing item keeps its place among the others).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from typing import TypeVar

Item = TypeVar("Item", bound=Hashable)


def _rank(seed: int, group: Hashable, item: Hashable) -> str:
    return hashlib.sha256(f"{seed}\x1f{group}\x1f{item}".encode()).hexdigest()


def seeded_order(items: Sequence[Item], seed: int = 0, group: Hashable = "") -> list[Item]:
    """``items`` (duplicates dropped) in the seeded order whose prefixes are the samples of ``group``."""
    unique = list(dict.fromkeys(items))
    return sorted(unique, key=lambda item: _rank(seed, group, item))


def nested_sample(items: Sequence[Item], n: int, seed: int = 0, group: Hashable = "") -> list[Item]:
    """The first ``n`` of ``items`` in their seeded order (all of them for n = 0 or n ≥ their number), returned
    in their original order: the sample of n is inside the sample of n + 1."""
    unique = list(dict.fromkeys(items))
    if not n or n >= len(unique):
        return unique
    picked = set(seeded_order(unique, seed, group)[:n])
    return [item for item in unique if item in picked]
