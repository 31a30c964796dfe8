"""The results index: every suite's report and leaderboard, the trends, with relative links that resolve."""

import re

import pandas as pd

from geomon.report.index import write_index
from geomon.suites.registry import suites, titles


def test_index_links_what_exists_and_says_what_does_not(tmp_path):
    (tmp_path / "worldbench").mkdir()
    (tmp_path / "worldbench" / "report.html").write_text("<h1>wb</h1>")
    pd.DataFrame({"model": ["a", "b"], "parse_rate": [0.9, 0.8]}).to_csv(tmp_path / "worldbench" / "leaderboard.csv")
    page = write_index(tmp_path, titles()).read_text()
    links = re.findall(r"href='([^']+)'", page)
    assert links == ["worldbench/report.html", "worldbench/leaderboard.csv"]
    assert all((tmp_path / link).exists() for link in links)
    assert "<td>2</td>" in page  # models on the leaderboard
    assert page.count("not run yet") == len(suites()) - 1 and "no history yet" in page
    (tmp_path / "trends").mkdir()
    (tmp_path / "trends" / "report.html").write_text("<h1>trends</h1>")
    assert "href='trends/report.html'" in write_index(tmp_path, titles()).read_text()
