"""World Bank data: the live API through wbgapi, or the World Bank's own bulk-download CSVs.

Both paths produce the same tidy tables: ``values`` (indicator, iso3, year, value) for countries
only, ``economies`` (iso3, name, region, income_group) and ``indicators`` (indicator, name,
last_updated). Aggregates (World, regions, income groups as rows) are excluded from countries and
counted in ``report``; so are the snapshot's quirks (escaped labels, an economy without an income
group), never silently dropped.
"""

from __future__ import annotations

import csv
import io
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


def read_region_and_income(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``region_and_income.csv``: economies with a region are countries; the rest are aggregates."""
    if not path.exists():
        raise SnapshotError(f"{path}: missing; a snapshot directory needs region_and_income.csv")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    needed = {"Economy", "Code", "Region", "Income group"}
    if not needed <= set(frame.columns):
        raise SnapshotError(f"{path}: expected columns {sorted(needed)}, found {list(frame.columns)}")
    frame = frame[frame["Code"].str.strip() != ""]
    escaped = int(
        frame["Region"].str.contains(r"\\&", regex=True).sum() + frame["Economy"].str.contains(r"\\&", regex=True).sum()
    )
    is_country = frame["Region"].str.strip() != ""
    economies = pd.DataFrame(
        {
            "iso3": frame["Code"].str.strip(),
            "name": frame["Economy"].map(_unescape),
            "region": frame["Region"].map(_unescape),
            "income_group": frame["Income group"].map(_unescape).replace("", pd.NA),
        }
    )[is_country.to_numpy()].reset_index(drop=True)
    report = {
        "economies": len(economies),
        "aggregates_excluded": sorted(frame.loc[~is_country, "Code"].str.strip()),
        "escaped_labels_fixed": escaped,
        "economies_without_income_group": sorted(economies.loc[economies["income_group"].isna(), "iso3"]),
    }
    return economies, report


def read_api_csv(path: Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """One World Bank bulk "API_" CSV: 4 metadata lines, then one row per economy, one column per year."""
    text = path.read_text(encoding="utf-8-sig")
    lines = text.splitlines()
    meta: dict[str, str] = {}
    header_at = None
    for i, line in enumerate(lines[:10]):
        cells = next(csv.reader([line])) if line.strip() else []
        if cells[:2] == ["Country Name", "Country Code"]:
            header_at = i
            break
        if len(cells) >= 2 and cells[0]:
            meta[cells[0]] = cells[1]
    if header_at is None:
        raise SnapshotError(
            f"{path}: no 'Country Name,Country Code,...' header in the first 10 lines; not a World Bank API_ CSV"
        )
    wide = pd.read_csv(io.StringIO("\n".join(lines[header_at:])), dtype=str, keep_default_na=False)
    wide = wide.loc[:, ~wide.columns.str.startswith("Unnamed")]
    year_cols = [c for c in wide.columns if re.fullmatch(r"\d{4}", c)]
    if not year_cols:
        raise SnapshotError(f"{path}: no year columns")
    codes = wide["Indicator Code"].unique()
    if len(codes) != 1:
        raise SnapshotError(f"{path}: expected one indicator per file, found {list(codes)}")
    tidy = wide.melt(id_vars=["Country Code"], value_vars=year_cols, var_name="year", value_name="value")
    tidy = tidy[tidy["value"].str.strip() != ""]
    try:
        values = pd.to_numeric(tidy["value"])
    except ValueError as exc:
        raise SnapshotError(f"{path}: non-numeric value: {exc}") from exc
    out = pd.DataFrame(
        {
            "indicator": codes[0],
            "iso3": tidy["Country Code"].to_numpy(),
            "year": tidy["year"].astype(int).to_numpy(),
            "value": values.astype(float).to_numpy(),
        }
    )
    meta["Indicator Name"] = str(wide["Indicator Name"].iloc[0])
    meta["Indicator Code"] = str(codes[0])
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
    for csv_path in sorted(root.glob("*.csv")):
        if csv_path.name in {"region_and_income.csv", "many_categories.csv"}:
            continue
        values, meta = read_api_csv(csv_path)
        if indicators is not None and meta["Indicator Code"] not in indicators:
            continue
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
    found = {m["indicator"] for m in meta_rows}
    if indicators is not None and set(indicators) - found:
        raise SnapshotError(f"World Bank snapshot {root}: no file for indicator(s) {sorted(set(indicators) - found)}")
    return _assemble(pd.concat(frames, ignore_index=True), economies, pd.DataFrame(meta_rows), report, source=str(root))


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
