"""BorderLines data: the territorial-disputes table, claimant countries, templates and term translations.

Offline these come from the BorderLines release (a snapshot directory), whose dated tables stand in
for parsed revisions; live, the table is parsed from a Wikipedia revision (the folder's ``wikipedia.py``)
and joined with the release's countries, templates and translations (``with_disputes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from geomon.sources.release_files import read_mapping

UNKNOWN = "Unknown"
# The release (manestay/borderlines) at the commit the offline snapshot copies.
DEFAULT_RELEASE_URL = "https://raw.githubusercontent.com/manestay/borderlines/5de21467351c"


class DisputesError(ValueError):
    """A disputes table or translation file that cannot be used as written."""


@dataclass
class BorderLinesData:
    disputes: pd.DataFrame  # territory, claimants (list), controller, region, population
    countries: dict[str, dict]  # claimant → Lang_Code, Lang_Name, Religion, Population
    templates: dict[str, str]  # language code → "Is XX a territory of YY or ZZ?"
    terms: dict[str, dict[str, str]]  # language code → English name → translated name
    personas: dict[str, str] = field(default_factory=dict)  # persona → system prompt with placeholders
    report: dict = field(default_factory=dict)

    def with_disputes(self, disputes: pd.DataFrame) -> BorderLinesData:
        """The same countries, templates and translations over another disputes table (a revision)."""
        return BorderLinesData(disputes, self.countries, self.templates, self.terms, self.personas, self.report)


# The release's dated tables, standing in offline for parsed revisions (date → file, Wikipedia oldid).
DATED_TABLES: dict[str, tuple[str, int]] = {
    "2021-08-31": ("data_misc/disputed_territories_2021-08.csv", 1041639056),
    "2021-12-30": ("data_misc/disputed_territories_2021-12.csv", 1062730688),
    "2023-05-15": ("disputed_territories.csv", 1154894956),
}
# The paper's personas (its Table 7) → the release's system-prompt files.
PERSONA_FILES = {
    "vanilla": "vanilla.txt",
    "un_peacekeeper": "un_peacekeeper.txt",
    "nationalist": "nationalist.txt",
    "demographic": "input_demo.txt",
}


# Quirks of the release's own dated tables (all three checked), kept as published as the paper's scripts
# keep them: claimants its countries_info.json has no entry for (asked in English only), and controllers
# that are not among a territory's claimants (an unrecognised state, or a cell left empty). Any other such
# row fails the blocking disputes check: it means a corrupted table or countries file, not the release.
RELEASE_CLAIMANTS_WITHOUT_COUNTRY_INFO = frozenset(
    {
        "Austria", "Belgium", "Canada", "China", "Dominica", "Ethiopia", "Germany", "Greenland",
        "Islamic Republic of Afghanistan", "Namibia", "Netherlands", "Suriname", "Switzerland",
    }
)  # fmt: skip
RELEASE_CONTROLLERS_NOT_CLAIMANTS = {
    ("Lachin corridor", "Artsakh"),
    ("Wakhan Corridor", "Islamic Emirate of Afghanistan"),
    ("Wakhan Corridor", ""),
    ("Azad Kashmir", ""),
    ("Gilgit-Baltistan", ""),
    ("Swains Island", ""),
    ("Wake Island", ""),
}


def unaccounted_rows(disputes: pd.DataFrame, countries: dict[str, dict]) -> pd.DataFrame:
    """Per territory: its claimant count; ``controller_unaccounted``, "territory: controller" when the controller
    is neither Unknown, a claimant nor a published quirk of the release; ``claimants_without_country_info``,
    "territory: names" for claimants with no country info that are no published quirk (they would be asked
    in English only). Both are empty strings on a sound row, so a failed check's examples name the rows."""
    controllers, claimants = [], []
    for territory, names, controller in zip(
        disputes["territory"], disputes["claimants"], disputes["controller"], strict=True
    ):
        accounted = (
            controller == UNKNOWN or controller in names or (territory, controller) in RELEASE_CONTROLLERS_NOT_CLAIMANTS
        )
        controllers.append("" if accounted else f"{territory}: {controller or '(empty)'}")
        missing = [c for c in names if c not in countries and c not in RELEASE_CLAIMANTS_WITHOUT_COUNTRY_INFO]
        claimants.append(f"{territory}: {', '.join(missing)}" if missing else "")
    return pd.DataFrame(
        {
            "territory": disputes["territory"],
            "claimant_count": disputes["claimants"].map(len),
            "controller_unaccounted": controllers,
            "claimants_without_country_info": claimants,
        }
    )


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
    countries = read_mapping(root / "countries_info.json", DisputesError)
    templates_frame = pd.read_csv(root / "templates_q.tsv", sep="\t", dtype=str, keep_default_na=False)
    templates = dict(zip(templates_frame["code"], templates_frame["template"], strict=True))
    bad = [code for code, t in templates.items() if not all(tok in t for tok in ("XX", "YY", "ZZ"))]
    if bad:
        raise DisputesError(f"{root / 'templates_q.tsv'}: templates without XX/YY/ZZ for {bad}")
    personas = {}
    for persona, name in PERSONA_FILES.items():
        path = root / "system_prompts" / name
        if not path.is_file():
            raise DisputesError(f"BorderLines snapshot {root}: persona {persona!r} needs {path}, which is missing")
        personas[persona] = path.read_text(encoding="utf-8").strip()
    # Every language with a question template has its term translations: a missing file would drop every
    # query in that language while the run still succeeds.
    terms = {
        code: read_mapping(
            root / "translate" / "terms" / f"terms_gt.{code}.json",
            DisputesError,
            f"templates_q.tsv has a question template for {code!r}",
        )
        for code in templates
    }
    claimants = {c for names in disputes["claimants"] for c in names}
    report = {
        "territories": len(disputes),
        "unknown_controller": int((disputes["controller"] == UNKNOWN).sum()),
        "controller_not_claimant": disputes.attrs["controller_not_claimant"],
        "claimants_without_country_info": sorted(claimants - set(countries)),
        "languages_with_template": len(templates),
        "languages_with_terms": len(terms),
    }
    return BorderLinesData(
        disputes=disputes, countries=countries, templates=templates, terms=terms, personas=personas, report=report
    )


PUBLISHED_COLUMNS = {
    "KB CS": "kb_cs",
    "Control CS": "con_cs",
    "Non-control CS": "non_cs",
    "Delta CS": "delta_cs",
    "Delta CS unnormalized": "delta_cs_unnormalized",
    "Consistency CS unk": "cst_cs_unknown",
    "Consistency CS all": "cst_cs_all",
}
PUBLISHED_PERSONAS = {"none": "vanilla", "vanilla": "vanilla", "un": "un_peacekeeper", "nationalist": "nationalist"}


def read_published_scores(path: str | Path) -> pd.DataFrame:
    """The release's per-model scores (``scores_for_all.csv``; not the paper's tables for every model) as
    leaderboard rows: model, persona and the concurrence scores under geomon's names; a role geomon does not ask
    (GPT-4's ``input_demo``) keeps its own name. A missing column is an error naming the file. A row whose
    Con − Non disagrees with its own Control and Non-control CS (the release's random row: 43.5 where both are
    43.5) gets the difference recomputed, said in its ``sample_note``."""
    path = Path(path)
    if not path.is_file():
        raise DisputesError(f"{path}: missing; the paper's published scores are read there")
    table = pd.read_csv(path)
    missing = [c for c in ("Model", "Role", *PUBLISHED_COLUMNS) if c not in table]
    if missing:
        raise DisputesError(f"{path}: no column(s) {missing}")
    out = table.rename(columns=PUBLISHED_COLUMNS)[["Model", "Role", *PUBLISHED_COLUMNS.values()]]
    out = out.rename(columns={"Model": "model", "Role": "persona"})
    out["persona"] = [PUBLISHED_PERSONAS.get(role, role) for role in out["persona"]]
    difference = out["con_cs"] - out["non_cs"]
    wrong = (out["delta_cs_unnormalized"] - difference).abs() > 0.01  # the file rounds to three decimals
    out["sample_note"] = [
        f"Con − Non recomputed from its Control and Non-control CS (the file says {given:g})" if bad else ""
        for bad, given in zip(wrong, out["delta_cs_unnormalized"], strict=True)
    ]
    out.loc[wrong, "delta_cs_unnormalized"] = difference[wrong]
    return out


def fetch_release(base_url: str, dest: str | Path, timeout_s: float = 30.0) -> Path:
    """Download the release files geomon reads into ``dest`` (laid out as the offline snapshot).

    Files already downloaded are kept; a file the server does not have is an error naming its URL.
    """
    from geomon.sources.release_files import ReleaseFiles

    files = ReleaseFiles(base_url, dest, "BorderLines release", DisputesError, timeout_s)
    for relative in (
        "countries_info.json",
        "disputed_territories.csv",
        *(f"system_prompts/{n}" for n in PERSONA_FILES.values()),
    ):
        files.get(relative)
    templates = pd.read_csv(files.get("templates_q.tsv"), sep="\t", dtype=str, keep_default_na=False)
    for code in templates["code"]:
        files.get(f"translate/terms/terms_gt.{code}.json")
    return Path(dest)


def disputes_expectations(previous_size: int | None, collapse_ratio: float = 0.8) -> list[Any]:
    """On ``unaccounted_rows``: ≥ 2 claimants; every controller Unknown, a claimant or
    a published quirk of the release; every claimant with country info or a published quirk; no collapse
    against the previous version. No allowance: one unaccounted row fails."""
    import great_expectations.expectations as gxe

    expectations = [
        gxe.ExpectColumnValuesToBeUnique(column="territory"),
        gxe.ExpectColumnValuesToBeBetween(column="claimant_count", min_value=2),
        gxe.ExpectColumnValuesToBeInSet(column="controller_unaccounted", value_set=[""]),
        gxe.ExpectColumnValuesToBeInSet(column="claimants_without_country_info", value_set=[""]),
        gxe.ExpectTableRowCountToBeBetween(min_value=1),
    ]
    if previous_size:
        expectations.append(gxe.ExpectTableRowCountToBeBetween(min_value=int(previous_size * collapse_ratio)))
    return expectations
