"""BorderLines data: the territorial-disputes table, claimant countries, templates and term translations.

Offline these come from the BorderLines release (a snapshot directory); the live path (Wikipedia's
revisions of "List of territorial disputes" through the MediaWiki API) is not built yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

UNKNOWN = "Unknown"


class DisputesError(ValueError):
    """A disputes table or translation file that cannot be used as written."""


@dataclass
class BorderLinesData:
    disputes: pd.DataFrame  # territory, claimants (list), controller, region, population
    countries: dict[str, dict]  # claimant → Lang_Code, Lang_Name, Religion, Population
    templates: dict[str, str]  # language code → "Is XX a territory of YY or ZZ?"
    terms: dict[str, dict[str, str]]  # language code → English name → translated name
    report: dict = field(default_factory=dict)


def read_disputes(path: str | Path) -> pd.DataFrame:
    """A disputes table (CSV: Territory, Claimants `;`-separated, Controller or Unknown, Region, ...).

    Every row must name at least two claimants, else it is an error naming the row (never a silently
    shorter table). A controller that is not among the claimants (the 2023-05 table has "Artsakh" for
    the Lachin corridor) is kept as published and listed in ``attrs["controller_not_claimant"]``.
    """
    path = Path(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    needed = {"Territory", "Claimants", "Controller", "Region"}
    if not needed <= set(frame.columns):
        raise DisputesError(f"{path}: expected columns {sorted(needed)}, found {list(frame.columns)}")
    claimants = frame["Claimants"].map(lambda s: [c.strip() for c in s.split(";") if c.strip()])
    problems, outside = [], []
    for i, (territory, names, controller) in enumerate(
        zip(frame["Territory"], claimants, frame["Controller"], strict=True)
    ):
        if len(names) < 2:
            problems.append(f"row {i + 2} ({territory}): fewer than two claimants {names}")
        elif controller != UNKNOWN and controller not in names:
            outside.append(territory)
    if problems:
        raise DisputesError(f"{path}: " + "; ".join(problems[:10]) + (" ..." if len(problems) > 10 else ""))
    population = pd.to_numeric(frame.get("Population", pd.Series(dtype=str)).replace("N/A", ""), errors="coerce")
    disputes = pd.DataFrame(
        {
            "territory": frame["Territory"].str.strip(),
            "claimants": claimants,
            "controller": frame["Controller"].str.strip(),
            "region": frame["Region"].str.strip(),
            "population": population,
        }
    )
    disputes.attrs["controller_not_claimant"] = outside
    return disputes


def read_snapshot(root: str | Path, table: str | Path | None = None) -> BorderLinesData:
    """The BorderLines release directory; ``table`` picks another dated disputes table."""
    root = Path(root)
    if not root.is_dir():
        raise DisputesError(f"BorderLines snapshot {root} is not a directory")
    disputes = read_disputes(table or root / "disputed_territories.csv")
    countries = json.loads((root / "countries_info.json").read_text(encoding="utf-8"))
    templates_frame = pd.read_csv(root / "templates_q.tsv", sep="\t", dtype=str, keep_default_na=False)
    templates = dict(zip(templates_frame["code"], templates_frame["template"], strict=True))
    bad = [code for code, t in templates.items() if not all(tok in t for tok in ("XX", "YY", "ZZ"))]
    if bad:
        raise DisputesError(f"{root / 'templates_q.tsv'}: templates without XX/YY/ZZ for {bad}")
    terms = {}
    for path in sorted((root / "translate" / "terms").glob("terms_gt.*.json")):
        terms[path.name.split(".")[1]] = json.loads(path.read_text(encoding="utf-8"))
    claimants = {c for names in disputes["claimants"] for c in names}
    report = {
        "territories": len(disputes),
        "unknown_controller": int((disputes["controller"] == UNKNOWN).sum()),
        "controller_not_claimant": disputes.attrs["controller_not_claimant"],
        "claimants_without_country_info": sorted(claimants - set(countries)),
        "languages_with_template": len(templates),
        "languages_with_terms": len(terms),
    }
    return BorderLinesData(disputes=disputes, countries=countries, templates=templates, terms=terms, report=report)
