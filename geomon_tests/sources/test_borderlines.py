"""BorderLines' source (``sources/borderlines.py``): the release fetched over HTTP (a loopback server serving the
release's files) and read like the snapshot, its broken files named, the paper's published scores as rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from geomon.sources.borderlines import DisputesError, fetch_release, read_snapshot
from geomon_tests.conftest import SHARED
from geomon_tests.loopback import file_server

ROOT = SHARED / "snapshots" / "borderlines"


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


def test_the_papers_published_scores_as_leaderboard_rows():
    """The release's scores_for_all.csv under geomon's names, shown beside geomon's rows as published."""
    from geomon.defs.leaderboard import ORIGIN, SAMPLE_NOTE, with_published
    from geomon.sources.borderlines import read_published_scores

    rows = read_published_scores(SHARED / "reference" / "borderlines" / "all_results" / "scores_for_all.csv")
    gpt4 = rows[rows["model"] == "gpt4"].set_index("persona")
    assert set(gpt4.index) == {"vanilla", "un_peacekeeper", "nationalist", "input_demo"}
    assert round(float(rows.set_index("model").loc["bloom_560m", "kb_cs"]), 3) == 60.494
    board = with_published(pd.DataFrame({"model": ["m"], "kb_cs": [50.0]}), rows)
    assert list(board[ORIGIN].unique()) == ["geomon", "published"]
    assert board.loc[board[ORIGIN] == "published", SAMPLE_NOTE].str.startswith("published aggregate").all()
    # The release's random row says Con − Non = 43.5 beside Con = Non = 43.5: recomputed, and said so
    random = board.set_index("model").loc["random"]
    assert random["delta_cs_unnormalized"] == 0 and "(the file says 43.5)" in random[SAMPLE_NOTE]
    others = rows[rows["model"] != "random"]
    assert (others["delta_cs_unnormalized"] - (others["con_cs"] - others["non_cs"])).abs().max() < 0.01
    assert (others["sample_note"] == "").all()


def test_the_report_says_which_published_figure_was_recomputed(tmp_path):
    """The report (where a reader of BorderLines looks) names the release's rows as the release's and says that
    the random row's Con − Non was recomputed, as the leaderboard's note does."""
    from geomon.defs.leaderboard import with_published
    from geomon.report import borderlines as report
    from geomon.sources.borderlines import read_published_scores

    rows = read_published_scores(SHARED / "reference" / "borderlines" / "all_results" / "scores_for_all.csv")
    ours = pd.DataFrame({"model": ["m"], "revision": ["r"], "kb_cs": [50.0]})
    board = with_published(ours, rows.assign(revision="release scores"))
    page = report.write_report(tmp_path, board, [], {}).read_text()
    assert "release&#x27;s published scores" in page or "release's published scores" in page
    assert "random: Con − Non recomputed from its Control and Non-control CS (the file says 43.5)." in page
