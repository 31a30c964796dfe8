"""World Bank data: the real WDI snapshot, and wbgapi against a loopback server speaking the API's JSON."""

from __future__ import annotations

import csv
import io
import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from geomon.sources import worldbank
from geomon.sources.worldbank import SnapshotError, read_snapshot
from geomon_tests.loopback import JSONHandler, serve


def test_real_snapshot_is_read_whole(snapshot):
    assert snapshot.last_updated == "2023-12-18"
    assert snapshot.latest_year == 2022
    assert len(snapshot.economies) == 218
    assert len(snapshot.report["aggregates_excluded"]) == 48
    assert "WLD" in snapshot.report["aggregates_excluded"] and "WLD" not in set(snapshot.economies["iso3"])
    # Quirks are fixed and reported, not dropped.
    assert snapshot.report["economies_without_income_group"] == ["VEN"]
    assert "VEN" in set(snapshot.economies["iso3"])
    assert snapshot.report["escaped_labels_fixed"] > 0
    assert not snapshot.economies["region"].str.contains(r"\\", regex=False).any()
    assert "Europe & Central Asia" in set(snapshot.economies["region"])
    assert len(snapshot.indicators) == 11
    assert set(snapshot.indicators["indicator"]) == set(worldbank.DEFAULT_INDICATORS)
    che_pop = snapshot.values.query("indicator == 'SP.POP.TOTL' and iso3 == 'CHE' and year == 2022")["value"]
    assert che_pop.iloc[0] == pytest.approx(8_775_760, rel=0.01)
    assert set(snapshot.values["iso3"]) <= set(snapshot.economies["iso3"])
    # The aggregates' rows are left out, counted and listed by code.
    left_out = snapshot.report["rows_left_out"]
    assert left_out["aggregate or other non-country code"] > 0 and left_out["without a country code"] == 0
    assert "WLD" in snapshot.report["non_country_codes"]


def test_indicator_subset(wdi_snapshot_dir):
    snap = read_snapshot(wdi_snapshot_dir, ["SP.POP.TOTL"])
    assert set(snap.values["indicator"]) == {"SP.POP.TOTL"}
    with pytest.raises(SnapshotError, match=r"NOT.AN.INDICATOR"):
        read_snapshot(wdi_snapshot_dir, ["SP.POP.TOTL", "NOT.AN.INDICATOR"])


def test_malformed_snapshot_errors_name_the_file(tmp_path, wdi_snapshot_dir):
    with pytest.raises(SnapshotError, match=r"not a directory"):
        read_snapshot(tmp_path / "missing")
    with pytest.raises(SnapshotError, match=r"region_and_income.csv"):
        read_snapshot(tmp_path)
    (tmp_path / "region_and_income.csv").write_text((wdi_snapshot_dir / "region_and_income.csv").read_text())
    (tmp_path / "broken.csv").write_text("just,some\nrandom,csv\n")
    with pytest.raises(SnapshotError, match=r"broken.csv.*header"):
        read_snapshot(tmp_path)


# --- the live path through wbgapi, against a loopback World Bank API ------------------------------


def _api_rows(snapshot_dir, codes: list[str]) -> tuple[list[dict], dict[str, list[dict]]]:
    """Country and indicator records in the API's JSON shape, built from the real snapshot files."""
    regions = pd.read_csv(snapshot_dir / "region_and_income.csv", dtype=str, keep_default_na=False)
    countries = []
    for rec in regions.itertuples():
        if not rec.Code:
            continue
        is_agg = not rec.Region
        countries.append(
            {
                "id": rec.Code,
                "iso2Code": "",
                "name": rec.Economy.replace("\\&", "&"),
                "region": {
                    "id": "NA" if is_agg else "R",
                    "value": "Aggregates" if is_agg else rec.Region.replace("\\&", "&"),
                },
                "incomeLevel": {
                    "id": "NA",
                    "value": "Aggregates" if is_agg else (rec._4.replace("\\&", "&") or "Not classified"),
                },
            }
        )
    indicator_rows: dict[str, list[dict]] = {}
    for path in snapshot_dir.glob("*.csv"):
        if path.name in {"region_and_income.csv", "many_categories.csv"}:
            continue
        values, meta = worldbank.read_api_csv(path)
        if meta["Indicator Code"] not in codes:
            continue
        values = values[values["year"] >= 2010]
        indicator_rows[meta["Indicator Code"]] = [
            {
                "indicator": {"id": r.indicator, "value": meta["Indicator Name"]},
                "country": {"id": r.iso3, "value": ""},
                "countryiso3code": r.iso3,
                "date": str(r.year),
                "value": r.value,
                "unit": "",
                "obs_status": "",
                "decimal": 0,
            }
            for r in values.itertuples()
        ]
    return countries, indicator_rows


class WorldBankHandler(JSONHandler):
    """The World Bank API v2's JSON pages: [header with paging, records]."""

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        data = self.state
        data["requests"].append(self.path)
        parts = url.path.strip("/").split("/")  # v2/en/...
        if parts[2:] == ["sources", "2"]:
            records = [{"id": "2", "lastupdated": data["last_updated"], "name": "World Development Indicators"}]
        elif parts[2:] == ["country"]:
            records = data["countries"]
        elif parts[2:4] == ["country", "all"] and parts[4] == "indicator":
            records = data["indicators"].get(parts[5])
            if records is None:
                return self.send_json(
                    [
                        {
                            "message": [
                                {
                                    "id": "120",
                                    "key": "Invalid value",
                                    "value": "The provided parameter value is not valid",
                                }
                            ]
                        }
                    ]
                )
        else:
            self.send_error(404)
            return
        per_page, page = int(query.get("per_page", 50)), int(query.get("page", 1))
        chunk = records[(page - 1) * per_page : page * per_page]
        pages = max(1, -(-len(records) // per_page))
        self.send_json(
            [
                {
                    "page": page,
                    "pages": pages,
                    "per_page": per_page,
                    "total": len(records),
                    "lastupdated": data["last_updated"],
                },
                chunk,
            ]
        )


@pytest.fixture
def world_bank_api(wdi_snapshot_dir) -> Iterator[tuple[str, dict]]:
    countries, indicators = _api_rows(wdi_snapshot_dir, ["SP.POP.TOTL", "SL.UEM.TOTL.ZS"])
    data = {"countries": countries, "indicators": indicators, "last_updated": "2023-12-18", "requests": []}
    with serve(WorldBankHandler, data) as url:
        yield f"{url}/v2", data


def test_live_fetch_through_wbgapi_matches_the_snapshot(world_bank_api, wdi_snapshot_dir):
    url, data = world_bank_api
    live = worldbank.fetch_live(url, ["SP.POP.TOTL", "SL.UEM.TOTL.ZS"], first_year=2010, last_year=2022)
    offline = read_snapshot(wdi_snapshot_dir, ["SP.POP.TOTL", "SL.UEM.TOTL.ZS"])
    assert live.last_updated == "2023-12-18"
    assert set(live.economies["iso3"]) == set(offline.economies["iso3"])
    assert live.report["economies_without_income_group"] == ["VEN"]
    assert len(live.report["aggregates_excluded"]) == 48
    recent = offline.values[offline.values["year"] >= 2010].reset_index(drop=True)
    pd.testing.assert_frame_equal(live.values, recent, check_dtype=False)
    # Paging really happened: population alone is more than one 1000-row page.
    assert sum("indicator/SP.POP.TOTL" in r for r in data["requests"]) > 1


def test_live_fetch_reports_the_new_last_updated_date(world_bank_api):
    url, data = world_bank_api
    data["last_updated"] = "2024-07-01"
    assert worldbank.fetch_last_updated(url) == "2024-07-01"


def test_live_fetch_of_an_unknown_indicator_is_a_clear_error(world_bank_api):
    url, _ = world_bank_api
    import wbgapi

    with pytest.raises(wbgapi.APIError, match=r"Invalid value"):
        worldbank.fetch_live(url, ["NOT.AN.INDICATOR"])


# --- corrupted copies of the real snapshot: every problem is an error naming the file and the line --------


def _copy(wdi_snapshot_dir, tmp_path):
    import shutil

    return Path(shutil.copytree(wdi_snapshot_dir, tmp_path / "wdi"))


def _edit_lines(path: Path, edit) -> None:
    lines = path.read_text(encoding="utf-8-sig").splitlines(keepends=True)
    path.write_text("".join(edit(lines)), encoding="utf-8")


def _line_of(lines: list[str], code: str) -> int:
    return next(i for i, line in enumerate(lines) if f',"{code}",' in line)


def _set_cell(line: str, column: int, value: str) -> str:
    cells = next(csv.reader([line]))
    cells[column] = value
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(cells)
    return out.getvalue()


def test_a_duplicated_economy_row_is_an_error_not_an_average(wdi_snapshot_dir, tmp_path):
    root = _copy(wdi_snapshot_dir, tmp_path)
    _edit_lines(root / "population.csv", lambda lines: [*lines, lines[_line_of(lines, "FRA")]])
    with pytest.raises(SnapshotError, match=r"population.csv line \d+: economy FRA is listed again \(first on line"):
        read_snapshot(root)


@pytest.mark.parametrize("bad", ["inf", "-inf", "nan", "1e999", "12x"])
def test_a_value_that_is_not_a_finite_number_names_file_line_and_year(wdi_snapshot_dir, tmp_path, bad):
    root = _copy(wdi_snapshot_dir, tmp_path)
    header = next(csv.reader([(root / "population.csv").read_text(encoding="utf-8-sig").splitlines()[4]]))
    year_2020 = header.index("2020")

    def corrupt(lines):
        at = _line_of(lines, "FRA")
        lines[at] = _set_cell(lines[at], year_2020, bad)
        return lines

    _edit_lines(root / "population.csv", corrupt)
    with pytest.raises(SnapshotError, match=rf"population.csv line \d+: FRA 2020 is '{re.escape(bad)}', not a finite"):
        read_snapshot(root)


def test_an_aggregate_labelled_with_a_region_is_refused(wdi_snapshot_dir, tmp_path):
    root = _copy(wdi_snapshot_dir, tmp_path)
    _edit_lines(
        root / "region_and_income.csv",
        lambda lines: [
            line.replace("European Union,EUU,,", "European Union,EUU,Europe \\& Central Asia,").replace(
                "Sub-Saharan Africa,SSF,,", "Sub-Saharan Africa,SSF,Sub-Saharan Africa,"
            )
            for line in lines
        ],
    )
    with pytest.raises(
        SnapshotError, match=r"region_and_income.csv line 234: EUU \(European Union\) has region .* aggregate.*2 such"
    ):
        read_snapshot(root)
    # Without the group list, the economy list's own rule still tells: aggregates have no income group
    # and no lending category, every country has one of them.
    (root / "many_categories.csv").unlink()
    with pytest.raises(SnapshotError, match=r"EUU .* without an income group or a lending category"):
        read_snapshot(root)


def test_a_file_cut_at_a_line_boundary_fails_loudly(wdi_snapshot_dir, tmp_path):
    root = _copy(wdi_snapshot_dir, tmp_path)
    _edit_lines(root / "unemployment.csv", lambda lines: lines[:-80])
    with pytest.raises(
        SnapshotError,
        match=r"unemployment.csv: no row for \d+ countries that the snapshot.s other files list .*cut short",
    ):
        read_snapshot(root)


def test_a_file_cut_mid_row_names_the_line(wdi_snapshot_dir, tmp_path):
    root = _copy(wdi_snapshot_dir, tmp_path)
    text = (root / "population.csv").read_text(encoding="utf-8-sig")
    (root / "population.csv").write_text(text[: len(text) - 700], encoding="utf-8")
    with pytest.raises(SnapshotError, match=r"population.csv line \d+: \d+ fields where the header has \d+"):
        read_snapshot(root)


def test_a_missing_column_or_an_empty_economy_list_is_named(wdi_snapshot_dir, tmp_path):
    root = _copy(wdi_snapshot_dir, tmp_path)
    _edit_lines(
        root / "population.csv",
        lambda lines: [line.replace('"Indicator Code",', '"Code of the indicator",', 1) for line in lines],
    )
    with pytest.raises(SnapshotError, match=r"population.csv line 5: the header has no column Indicator Code"):
        read_snapshot(root)
    (root / "region_and_income.csv").write_text("")
    with pytest.raises(SnapshotError, match=r"region_and_income.csv: empty"):
        read_snapshot(root)
    (root / "region_and_income.csv").write_text("Economy,Code,Region,Income group,Lending category,\n")
    with pytest.raises(SnapshotError, match=r"region_and_income.csv: no economies"):
        read_snapshot(root)
