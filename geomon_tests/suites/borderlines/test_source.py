"""BorderLines' source (``suites/borderlines/source.py``): the real release's tables read whole, the release fetched
over HTTP (a loopback server serving its files) and read like the snapshot, its broken files named, the disputes
table's checks (the release's own quirks pass, anything else fails), the paper's published scores as rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from geomon import quality
from geomon.suites.borderlines.source import (
    DisputesError,
    disputes_expectations,
    fetch_release,
    read_disputes,
    read_snapshot,
    unaccounted_rows,
)
from geomon_tests.conftest import SHARED
from geomon_tests.loopback import file_server

ROOT = SHARED / "snapshots" / "borderlines"


def test_release_tables_are_read_whole(data):
    assert data.report["territories"] == 251 and data.report["unknown_controller"] == 90
    assert data.report["controller_not_claimant"] == ["Lachin corridor"]  # kept as published, reported
    assert data.report["claimants_without_country_info"] == ["Suriname"]
    assert len(data.templates) == 49 and len(data.terms) == 49
    assert len(read_disputes(ROOT / "data_misc" / "disputed_territories_2021-08.csv")) == 225


def test_a_table_with_a_single_claimant_is_an_error(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Territory,Claimants,Controller,Region\nX,Only,Only,Asia\n")
    with pytest.raises(DisputesError, match=r"row 2 \(X\): fewer than two claimants"):
        read_disputes(path)


def test_fetch_release_then_read_it_like_the_snapshot(tmp_path):
    with file_server(ROOT) as url:
        fetched = fetch_release(url, tmp_path / "release")
    data = read_snapshot(fetched)
    assert (
        len(data.templates) == 49
        and len(data.terms) == 49
        and set(data.personas)
        == {
            "vanilla",
            "un_peacekeeper",
            "nationalist",
            "demographic",
        }
    )
    assert data.report == read_snapshot(ROOT).report


def test_a_missing_release_file_names_its_url(tmp_path):
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "countries_info.json").write_text("{}")
    with file_server(partial) as url, pytest.raises(DisputesError, match=r"disputed_territories.csv: HTTP 404"):
        fetch_release(url, tmp_path / "release")


def test_a_deleted_or_broken_translation_file_is_an_error_naming_it(tmp_path):
    copy = Path(shutil.copytree(ROOT, tmp_path / "release"))
    (copy / "translate" / "terms" / "terms_gt.ja.json").unlink()
    with pytest.raises(
        DisputesError, match=r"terms_gt.ja.json: missing; templates_q.tsv has a question template for 'ja'"
    ):
        read_snapshot(copy)
    (copy / "translate" / "terms" / "terms_gt.ja.json").write_text('{"Senkaku Islands": ')
    with pytest.raises(DisputesError, match=r"terms_gt.ja.json: not readable JSON"):
        read_snapshot(copy)
    (copy / "translate" / "terms" / "terms_gt.ja.json").write_text("[]")
    with pytest.raises(DisputesError, match=r"terms_gt.ja.json: expected a mapping"):
        read_snapshot(copy)
    (copy / "countries_info.json").unlink()
    with pytest.raises(DisputesError, match=r"countries_info.json: missing"):
        read_snapshot(copy)


def test_disputes_tables_and_collapse_between_revisions():
    countries = read_snapshot(ROOT).countries
    for table in (
        "disputed_territories.csv",
        *(f"data_misc/disputed_territories_{v}.csv" for v in ("2021-08", "2021-12")),
    ):
        frame = unaccounted_rows(read_disputes(ROOT / table), countries)  # the release's own quirks pass
        assert quality.validate(frame, "disputes", disputes_expectations(previous_size=225)).success, table
    frame = unaccounted_rows(read_disputes(ROOT / "disputed_territories.csv"), countries)
    collapsed = quality.validate(frame.head(40), "disputes", disputes_expectations(previous_size=251))
    assert not collapsed.success and collapsed.failures[0]["expectation"] == "expect_table_row_count_to_be_between"
    assert collapsed.failures[0]["observed"] == "40"


def test_an_unknown_claimant_or_a_controller_outside_the_claimants_fails_without_allowance():
    data = read_snapshot(ROOT)
    disputes = data.disputes.copy()
    crimea = disputes.index[disputes["territory"] == "Crimea"][0]
    disputes.at[crimea, "controller"] = "Atlantis"  # one row in 251: under the old 1 % allowance
    kuril = disputes.index[disputes["territory"] == "Kuril/Chishima Islands"][0]
    disputes.at[kuril, "claimants"] = ["Japan", "Russsia"]
    report = quality.validate(unaccounted_rows(disputes, data.countries), "disputes", disputes_expectations(None))
    failed = {f["column"]: f["examples"] for f in report.failures}
    assert failed == {
        "controller_unaccounted": ["Kuril/Chishima Islands: Russia", "Crimea: Atlantis"],
        "claimants_without_country_info": ["Kuril/Chishima Islands: Russsia"],
    }
