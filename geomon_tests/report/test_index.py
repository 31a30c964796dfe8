"""The results index: every suite's report and leaderboard, the trends, with relative links that resolve."""

import re

import pandas as pd

from geomon.monitor.views import OPEN_REGRESSION_COLUMNS
from geomon.report.index import write_index
from geomon.suites.registry import suites, titles

NONE_OPEN = pd.DataFrame(columns=OPEN_REGRESSION_COLUMNS)


def test_index_links_what_exists_and_says_what_does_not(tmp_path):
    (tmp_path / "worldbench").mkdir()
    (tmp_path / "worldbench" / "report.html").write_text("<h1>wb</h1>")
    pd.DataFrame({"model": ["a", "b"], "parse_rate": [0.9, 0.8]}).to_csv(tmp_path / "worldbench" / "leaderboard.csv")
    page = write_index(tmp_path, titles(), NONE_OPEN).read_text()
    links = re.findall(r"href='([^']+)'", page.split("<h2>Reports</h2>")[1])
    assert links == ["worldbench/report.html", "worldbench/leaderboard.csv"]
    assert all((tmp_path / link).exists() for link in links)
    assert "<td>2</td>" in page  # models on the leaderboard
    assert "No open regression" in page
    assert page.count("not run yet") == len(suites()) - 1 and "no history yet" in page
    (tmp_path / "trends").mkdir()
    (tmp_path / "trends" / "report.html").write_text("<h1>trends</h1>")
    assert "href='trends/report.html'" in write_index(tmp_path, titles(), NONE_OPEN).read_text()


def test_index_opens_with_every_open_regression(tmp_path):
    """The index's first section is every open regression across the suites, one row per regressed model with
    its lead regression, and each suite's row counts its own and links to its report's list."""
    (tmp_path / "gapminder").mkdir()
    (tmp_path / "gapminder" / "report.html").write_text("<h1>g</h1>")
    pd.DataFrame(
        {"model": ["a", "o3-mini", "o1"], "origin": ["geomon", "imported (gapminder)", "imported (x)"]}
    ).to_csv(tmp_path / "gapminder" / "leaderboard.csv", index=False)
    row = dict.fromkeys(OPEN_REGRESSION_COLUMNS, "—")
    found = pd.DataFrame(
        [
            {**row, "suite": "gapminder", "model": "o3-mini", "baseline": "o1 (predecessor)", "metric": "correct_rate",
             "group": "overall", "change": "−17.2 pts"},
            {**row, "suite": "gapminder", "model": "o3-mini", "baseline": "o1 (predecessor)", "metric": "correct_rate",
             "group": "family=geo", "change": "−17.2 pts"},
        ]
    )  # fmt: skip
    page = write_index(tmp_path, titles(), found).read_text()
    first = page.index("<h2")
    assert page[first:].startswith("<h2 id='open-regressions'>Open regressions across every suite (2)")
    assert "1 model regressed (2 open regressions): o3-mini vs o1: correct_rate −17.2 pts and 1 more." in page
    assert "href='gapminder/report.html#open-regressions'>2</a>" in page
    assert "1 run, 2 imported" in page


def test_index_counts_models_not_leaderboard_rows(tmp_path):
    """BorderLines' leaderboard has a row per model, revision and persona: the index counts distinct models."""
    (tmp_path / "borderlines").mkdir()
    (tmp_path / "borderlines" / "report.html").write_text("<h1>b</h1>")
    pd.DataFrame(
        {
            "model": ["a", "a", "a", "b", "gpt4", "gpt4", "random"],
            "revision": ["r1", "r2", "r2", "r2", "paper", "paper", "paper"],
            "persona": ["vanilla", "vanilla", "nationalist", "vanilla", "vanilla", "nationalist", "vanilla"],
            "origin": ["geomon", "geomon", "geomon", "geomon", "published", "published", "published"],
        }
    ).to_csv(tmp_path / "borderlines" / "leaderboard.csv", index=False)
    page = write_index(tmp_path, titles(), NONE_OPEN).read_text()
    assert "<td>2 run, 2 published</td>" in page
