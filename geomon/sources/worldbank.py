"""World Bank data: the live API through wbgapi, or the World Bank's own bulk-download CSVs.

Both paths produce the same tidy tables: ``values`` (indicator, iso3, year, value) for countries
only, ``economies`` (iso3, name, region, income_group) and ``indicators`` (indicator, name,
last_updated). Aggregates (World, regions, income groups as rows) are excluded from countries and
counted in ``report``; so are the snapshot's quirks (escaped labels, an economy without an income
group), never silently dropped.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

DEFAULT_API_URL = "https://api.worldbank.org/v2"
WDI_SOURCE_ID = 2

# The 11 indicators of WorldBench's Table 1: code → the phrase a question uses.
# WDI code → the metric as the WorldBench paper words it (Table 1; the paper title-cases it), which is
# what its prompts ask for. The WDI series names stay in ``WorldBankSnapshot.indicators["name"]``.
DEFAULT_INDICATORS: dict[str, str] = {
    "SP.POP.TOTL": "total population",
    "SL.UEM.TOTL.ZS": "unemployment as a percent of the total labor force",
    "SH.STA.MMRT": "maternal mortality ratio as number of deaths per 100,000 live births",
    "SG.GEN.PARL.ZS": "proportion of seats held by women in national parliaments (as a percent)",
    "SE.XPD.TOTL.GD.ZS": "government expenditure on education as a total percent of GDP",
    "EG.ELC.ACCS.ZS": "percent of the total population that has access to electricity",
    "AG.LND.AGRI.ZS": "percent of total land area that is agricultural",
    "EN.ATM.CO2E.PC": "amount of carbon dioxide emissions in metric tonnes per capita",
    "NY.GDP.MKTP.CD": "GDP measured in US dollars",
    "SL.GDP.PCAP.EM.KD": "GDP at purchasing power parity (PPP) per person employed",
    "EG.FEC.RNEW.ZS": "renewable energy consumption as a percent of total final energy consumption",
}

# A value is current within the snapshot's latest three years: a question's ground truth is their mean (the
# WorldBench paper's rule, which the drift probe's questions share), and the coverage check counts the countries
# with one, so the rule is the data's, read by every consumer of it.
GROUND_TRUTH_YEARS = 3


class SnapshotError(ValueError):
    """A World Bank snapshot that cannot be read as written."""


@dataclass
class WorldBankSnapshot:
    values: pd.DataFrame  # indicator, iso3, year, value (countries only)
    economies: pd.DataFrame  # iso3, name, region, income_group (income_group may be missing)
    indicators: pd.DataFrame  # indicator, name, last_updated
    last_updated: str  # the newest "Last Updated Date": the snapshot's version
    source: str
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def latest_year(self) -> int:
        return int(self.values["year"].max())

    @property
    def version(self) -> str:
        return f"wdi-{self.last_updated}-to-{self.latest_year}"

    def latest_years_by_indicator(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.values.groupby("indicator")["year"].max().items()}


def _unescape(label: str) -> str:
    return label.replace("\\&", "&").strip()


def _group_codes(root: Path) -> set[str]:
    """The World Bank's own list of aggregates: every group code in ``many_categories.csv`` (if present)."""
    path = root / "many_categories.csv"
    if not path.is_file():
        return set()
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return {row["GroupCode"].strip() for row in csv.DictReader(handle) if row.get("GroupCode")}


def read_region_and_income(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``region_and_income.csv``: economies with a region are countries; the rest are aggregates.

    A row that has a region but is an aggregate by the World Bank's own economy list (a group code in
    ``many_categories.csv``, or neither an income group nor a lending category, which every country has
    one of) is an error naming the line: a mislabelled aggregate must never become a country.
    """
    if not path.exists():
        raise SnapshotError(f"{path}: missing; a snapshot directory needs region_and_income.csv")
    needed = {"Economy", "Code", "Region", "Income group"}
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise SnapshotError(f"{path}: empty; expected a header with columns {sorted(needed)}") from None
    except pd.errors.ParserError as exc:
        raise SnapshotError(f"{path}: not a readable CSV ({exc})") from None
    if not needed <= set(frame.columns):
        raise SnapshotError(f"{path}: expected columns {sorted(needed)}, found {list(frame.columns)}")
    frame["line"] = frame.index + 2
    frame = frame[frame["Code"].str.strip() != ""]
    if frame.empty:
        raise SnapshotError(f"{path}: no economies below the header")
    codes = frame["Code"].str.strip()
    repeated = frame[codes.duplicated(keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        lines = repeated.loc[repeated["Code"].str.strip() == first["Code"].strip(), "line"].tolist()
        raise SnapshotError(
            f"{path}: economy {first['Code'].strip()} is listed on lines {lines} ({len(repeated)} repeated rows in all)"
        )
    is_country = frame["Region"].str.strip() != ""
    groups = _group_codes(path.parent)
    lending = frame["Lending category"].str.strip() if "Lending category" in frame.columns else ""
    unclassified = (frame["Income group"].str.strip() == "") & (lending == "")
    mislabelled = frame[is_country & (codes.isin(groups) | unclassified)]
    if len(mislabelled):
        row = mislabelled.iloc[0]
        why = (
            "a World Bank aggregate (a group code in many_categories.csv)"
            if row["Code"].strip() in groups
            else "without an income group or a lending category, as only aggregates are"
        )
        raise SnapshotError(
            f"{path} line {row['line']}: {row['Code'].strip()} ({_unescape(row['Economy'])}) has region "
            f"{_unescape(row['Region'])!r} but is {why}; {len(mislabelled)} such row(s)"
        )
    escaped = int(
        frame["Region"].str.contains(r"\\&", regex=True).sum() + frame["Economy"].str.contains(r"\\&", regex=True).sum()
    )
    economies = pd.DataFrame(
        {
            "iso3": codes,
            "name": frame["Economy"].map(_unescape),
            "region": frame["Region"].map(_unescape),
            "income_group": frame["Income group"].map(_unescape).replace("", pd.NA),
        }
    )[is_country.to_numpy()].reset_index(drop=True)
    report = {
        "economies": len(economies),
        "aggregates_excluded": sorted(codes[~is_country]),
        "escaped_labels_fixed": escaped,
        "economies_without_income_group": sorted(economies.loc[economies["income_group"].isna(), "iso3"]),
    }
    return economies, report


API_CSV_COLUMNS = ("Country Name", "Country Code", "Indicator Name", "Indicator Code")


def read_api_csv(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One World Bank bulk "API_" CSV: 4 metadata lines, then one row per economy, one column per year.

    Every problem is an error naming the file, the line and what is wrong: a missing column, a row with
    fewer or more fields than the header (a file cut mid-row), an economy listed twice, a value that is
    not a finite number. ``meta["economies_listed"]`` is every economy code with a row, values or not.
    """
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle)
        meta: dict[str, Any] = {}
        header: list[str] | None = None
        for cells in reader:
            if cells and cells[0] == "Country Name":
                header = cells
                break
            if reader.line_num >= 10:
                break
            if len(cells) >= 2 and cells[0]:
                meta[cells[0]] = cells[1]
        if header is None:
            raise SnapshotError(
                f"{path}: no 'Country Name,Country Code,...' header in the first 10 lines; not a World Bank API_ CSV"
            )
        missing = [c for c in API_CSV_COLUMNS if c not in header]
        if missing:
            raise SnapshotError(f"{path} line {reader.line_num}: the header has no column {', '.join(missing)}")
        rows = [(reader.line_num, cells) for cells in reader if any(c.strip() for c in cells)]
    position = {name: header.index(name) for name in API_CSV_COLUMNS}
    years = [(i, int(c)) for i, c in enumerate(header) if re.fullmatch(r"\d{4}", c)]
    if not years:
        raise SnapshotError(f"{path}: no year columns")
    iso3s, year_values, values, seen, codes = [], [], [], {}, set()
    for line, cells in rows:
        if len(cells) != len(header):
            raise SnapshotError(
                f"{path} line {line}: {len(cells)} fields where the header has {len(header)}; "
                "the file is cut or malformed"
            )
        code = cells[position["Country Code"]].strip()
        if code in seen:
            raise SnapshotError(f"{path} line {line}: economy {code} is listed again (first on line {seen[code]})")
        seen[code] = line
        codes.add(cells[position["Indicator Code"]])
        for i, year in years:
            cell = cells[i].strip()
            if not cell:
                continue
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise SnapshotError(f"{path} line {line}: {code} {year} is {cell[:40]!r}, not a finite number")
            iso3s.append(code)
            year_values.append(year)
            values.append(value)
    if len(codes) != 1:
        raise SnapshotError(f"{path}: expected one indicator per file, found {sorted(codes)}")
    (indicator,) = codes
    out = pd.DataFrame({"indicator": indicator, "iso3": iso3s, "year": year_values, "value": values})
    meta["Indicator Name"] = rows[0][1][position["Indicator Name"]]
    meta["Indicator Code"] = indicator
    meta["economies_listed"] = sorted(seen)
    return out, meta


def resolve_snapshot(path: str | Path) -> Path:
    """A snapshot directory, or the newest of the snapshot directories inside ``path``.

    Offline, a World Bank update arrives as a new directory beside the old ones (``wdi-2023-12``,
    ``wdi-2024-07``, ...): pointing the settings at their parent makes the newest (by name) current.
    """
    root = Path(path)
    if not root.is_dir():
        raise SnapshotError(f"World Bank snapshot {root} is not a directory")
    if (root / "region_and_income.csv").is_file():
        return root
    candidates = sorted(p for p in root.iterdir() if (p / "region_and_income.csv").is_file())
    if not candidates:
        raise SnapshotError(
            f"World Bank snapshot {root}: neither a snapshot (region_and_income.csv) nor a folder of them"
        )
    return candidates[-1]


def release_version(path: str | Path) -> dict[str, Any]:
    """What identifies the World Bank data a snapshot holds, cheaply: the newest "Last Updated Date"
    and the latest year with data per indicator (read from the CSVs without assembling them)."""
    root = resolve_snapshot(path)
    latest: dict[str, int] = {}
    updated: list[str] = []
    for csv_path in sorted(root.glob("*.csv")):
        if csv_path.name in {"region_and_income.csv", "many_categories.csv"}:
            continue
        values, meta = read_api_csv(csv_path)
        latest[meta["Indicator Code"]] = int(values["year"].max())
        updated.append(meta.get("Last Updated Date", ""))
    last_updated = max((d for d in updated if d), default="unknown")
    return {
        "version": f"wdi-{last_updated}-to-{max(latest.values())}",
        "last_updated": last_updated,
        "latest_year_by_indicator": latest,
        "snapshot": str(root),
    }


def read_snapshot(path: str | Path, indicators: list[str] | None = None) -> WorldBankSnapshot:
    """Read a directory of WDI bulk CSVs plus ``region_and_income.csv`` (public, DESIGN.md); ``path`` may
    also be a folder of such directories, the newest of which is read (``resolve_snapshot``)."""
    root = resolve_snapshot(path)
    economies, report = read_region_and_income(root / "region_and_income.csv")
    frames, meta_rows = [], []
    listings: dict[Path, set[str]] = {}
    for csv_path in sorted(root.glob("*.csv")):
        if csv_path.name in {"region_and_income.csv", "many_categories.csv"}:
            continue
        values, meta = read_api_csv(csv_path)
        if indicators is not None and meta["Indicator Code"] not in indicators:
            continue
        listings[csv_path] = set(meta["economies_listed"])
        frames.append(values)
        meta_rows.append(
            {
                "indicator": meta["Indicator Code"],
                "name": meta["Indicator Name"],
                "last_updated": meta.get("Last Updated Date", ""),
                "file": csv_path.name,
            }
        )
    if not frames:
        raise SnapshotError(
            f"World Bank snapshot {root}: no indicator CSVs" + (f" for {indicators}" if indicators else "")
        )
    _check_every_country_listed(listings, economies)
    found = {m["indicator"] for m in meta_rows}
    if indicators is not None and set(indicators) - found:
        raise SnapshotError(f"World Bank snapshot {root}: no file for indicator(s) {sorted(set(indicators) - found)}")
    return _assemble(pd.concat(frames, ignore_index=True), economies, pd.DataFrame(meta_rows), report, source=str(root))


MAX_COUNTRIES_IN_NO_FILE = 5  # WDI has no series at all for a few economies of its own list (Taiwan)


def _check_every_country_listed(listings: dict[Path, set[str]], economies: pd.DataFrame) -> None:
    """The World Bank's bulk files have a row for every economy it publishes, with or without values. A
    country that one file lacks and another lists, or more than a handful lacking from every file, means a
    file cut short at a line boundary, which no field count can see."""
    countries = set(economies["iso3"])
    in_some_file = countries & set().union(*listings.values())
    for path, listed in listings.items():
        absent = sorted(in_some_file - listed)
        if absent:
            shown = ", ".join(absent[:10]) + (", ..." if len(absent) > 10 else "")
            raise SnapshotError(
                f"{path}: no row for {len(absent)} countries that the snapshot's other files list ({shown}); "
                "World Bank bulk files list every economy, so this file looks cut short"
            )
    in_no_file = sorted(countries - in_some_file)
    if len(in_no_file) > MAX_COUNTRIES_IN_NO_FILE:
        raise SnapshotError(
            f"{sorted(p.name for p in listings)}: no row for {len(in_no_file)} of the {len(countries)} countries in "
            f"region_and_income.csv ({', '.join(in_no_file[:10])}, ...); the files look cut short"
        )


def _assemble(
    values: pd.DataFrame, economies: pd.DataFrame, indicators: pd.DataFrame, report: dict[str, Any], source: str
) -> WorldBankSnapshot:
    countries = set(economies["iso3"])
    in_data = set(values["iso3"])
    report = dict(report)
    report["codes_in_data_not_countries"] = len(in_data - countries)
    # Rows that are not a country's value are left out, counted by reason and listed, never dropped silently.
    no_code = values["iso3"].fillna("").astype(str).str.strip() == ""
    not_country = ~values["iso3"].isin(countries) & ~no_code
    report["rows_left_out"] = {
        "without a country code": int(no_code.sum()),
        "aggregate or other non-country code": int(not_country.sum()),
    }
    report["non_country_codes"] = sorted(set(values.loc[not_country, "iso3"].astype(str)))
    report["countries_without_any_value"] = sorted(countries - in_data)
    values = values[values["iso3"].isin(countries)].sort_values(["indicator", "iso3", "year"]).reset_index(drop=True)
    report["values"] = len(values)
    report["values_per_indicator"] = {k: int(v) for k, v in values.groupby("indicator").size().items()}
    last_updated = max((d for d in indicators["last_updated"] if d), default="unknown")
    return WorldBankSnapshot(
        values=values,
        economies=economies,
        indicators=indicators.reset_index(drop=True),
        last_updated=last_updated,
        source=source,
        report=report,
    )


# --- live API ------------------------------------------------------------------------------------


def _configure_wbgapi(base_url: str) -> Any:
    import wbgapi

    wbgapi.endpoint = base_url.rstrip("/")
    return wbgapi


def fetch_last_updated(base_url: str = DEFAULT_API_URL) -> str:
    """The WDI source's "last updated" date, as the API reports it."""
    wb = _configure_wbgapi(base_url)
    row = wb.get(f"sources/{WDI_SOURCE_ID}")
    if not row or "lastupdated" not in row:
        raise SnapshotError(f"{base_url}: sources/{WDI_SOURCE_ID} has no 'lastupdated' field")
    return str(row["lastupdated"])


def live_release_version(base_url: str = DEFAULT_API_URL) -> dict[str, Any]:
    """The live counterpart of ``release_version``: the WDI source's "last updated" date."""
    last_updated = fetch_last_updated(base_url)
    return {"version": f"wdi-{last_updated}", "last_updated": last_updated, "source": base_url}


def fetch_live(
    base_url: str = DEFAULT_API_URL,
    indicators: list[str] | None = None,
    first_year: int = 2000,
    last_year: int | None = None,
) -> WorldBankSnapshot:
    """Fetch indicators for all economies plus region/income metadata from the World Bank API."""
    wb = _configure_wbgapi(base_url)
    codes = list(indicators or DEFAULT_INDICATORS)
    last_year = last_year or pd.Timestamp.now().year
    rows = list(wb.fetch("country"))
    if not rows:
        raise SnapshotError(f"{base_url}: the country list is empty")
    is_country = [r["region"]["value"].strip() != "Aggregates" for r in rows]
    economies = pd.DataFrame(
        {
            "iso3": [r["id"] for r in rows],
            "name": [r["name"] for r in rows],
            "region": [r["region"]["value"].strip() for r in rows],
            "income_group": [(r["incomeLevel"]["value"] or "").strip() for r in rows],
        }
    )
    aggregates = sorted(economies.loc[[not c for c in is_country], "iso3"])
    economies = economies[is_country].reset_index(drop=True)
    unclassified = economies["income_group"].isin(["", "Not classified"])
    economies["income_group"] = economies["income_group"].mask(unclassified, pd.NA)
    report = {
        "economies": len(economies),
        "aggregates_excluded": aggregates,
        "escaped_labels_fixed": 0,
        "economies_without_income_group": sorted(economies.loc[unclassified.to_numpy(), "iso3"]),
    }
    last_updated = fetch_last_updated(base_url)
    frames, meta_rows = [], []
    for code in codes:
        data = list(
            wb.fetch(f"country/all/indicator/{code}", {"date": f"{first_year}:{last_year}", "source": WDI_SOURCE_ID})
        )
        if not data:
            raise SnapshotError(f"{base_url}: indicator {code} returned no rows")
        frame = pd.DataFrame(
            {
                "indicator": code,
                "iso3": [d.get("countryiso3code") or d["country"]["id"] for d in data],
                "year": [int(d["date"]) for d in data],
                "value": [d["value"] for d in data],
            }
        ).dropna(subset=["value"])
        frame["value"] = frame["value"].astype(float)
        frames.append(frame)
        meta_rows.append(
            {
                "indicator": code,
                "name": data[0]["indicator"]["value"],
                "last_updated": last_updated,
                "file": f"{base_url}/country/all/indicator/{code}",
            }
        )
    return _assemble(pd.concat(frames, ignore_index=True), economies, pd.DataFrame(meta_rows), report, source=base_url)
