"""Tables and charts shared by the reports and the Dagster metadata."""

from __future__ import annotations

import re


def test_markdown_tables_keep_untrusted_text_inert():
    """A model's answer in Dagster metadata can neither break the table nor inject markup: one line, escaped,
    cut at the cell limit."""
    import pandas as pd

    from geomon.report.charts import MARKDOWN_CELL_CHARS, markdown_table

    answers = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "response": [
                "<script>alert(1)</script> | 42\n| x | y |",
                "[click](javascript:alert(1)) `code`",
                "7" * 5000,
            ],
        }
    )
    table = markdown_table(answers)
    lines = table.splitlines()
    assert len(lines) == 5  # header, rule, three rows: no injected row
    assert "<script>" not in table and "&lt;script&gt;" in table
    assert "\\[click\\](javascript:alert(1))" in table and "\\`code\\`" in table
    assert all(line.count(" | ") == 1 for line in lines[2:])  # the cells' pipes are escaped
    assert "7" * MARKDOWN_CELL_CHARS + "…" in table and "7" * (MARKDOWN_CELL_CHARS + 1) not in table


def test_a_metadata_table_says_a_missing_value_and_a_yes_or_no_in_words():
    """BLEnD's per-country table in the UI: the best country's gap to the best is missing ("—", never "nan"), and
    whether a country's sample is insufficient reads yes or no (never "True"); numbers keep their format."""
    import numpy as np
    import pandas as pd

    from geomon.report.charts import html_table, markdown_table

    countries = pd.DataFrame({"group": ["UK", "Spain"], "value": [61.25, 48.0], "vs_best": [np.nan, -13.25]})
    countries["insufficient_sample"] = [False, True]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in markdown_table(countries).splitlines()[2:]]
    assert rows == [["UK", "61.250", "—", "no"], ["Spain", "48.000", "-13.250", "yes"]]
    cells = re.findall(r"<td>([^<]*)</td>", html_table(countries, 2))  # the report's table says the same
    assert cells == ["UK", "61.25", "—", "no", "Spain", "48", "-13.25", "yes"]


def test_a_page_is_written_whole_then_moved_into_place(tmp_path, monkeypatch):
    """Two lanes of one run write the index after each suite while a browser may be reading it: the page is
    written beside its place and moved there in one step, so no reader sees half of it."""
    from pathlib import Path

    from geomon.report.charts import write_html

    page = tmp_path / "index.html"
    page.write_text("<p>the last run's page</p>")
    opened = []
    write_text = Path.write_text
    monkeypatch.setattr(Path, "write_text", lambda self, *a, **k: (opened.append(self), write_text(self, *a, **k))[1])
    write_html(page, "geomon — results", ["<p>this run's page</p>"])
    assert page not in opened and opened  # never truncated in place
    assert page.read_text().endswith("<p>this run's page</p>") and list(tmp_path.iterdir()) == [page]


def test_a_png_charts_smallest_text_is_10_px_where_the_page_shows_it(monkeypatch):
    """The bar charts (a breakdown per model; a rate per group): every text at least ``PNG_LABEL_PT`` (10 px at the
    PNGs' dpi), and the image narrower than the reports' column, so the page shows it at its own size. Mutation
    caught: the legends at 7 pt (8.75 px)."""
    import struct

    import matplotlib.text
    import numpy as np
    import pandas as pd

    from geomon.report import charts

    drawn = []
    original = charts.figure_png
    monkeypatch.setattr(charts, "figure_png", lambda fig, tight=True: drawn.append(fig) or original(fig, tight))
    models, groups = [f"model-{i}" for i in range(6)], [f"country {i}" for i in range(12)]
    frame = pd.DataFrame([(m, g) for m in models for g in groups], columns=["model", "group"])
    frame["value"] = np.linspace(10, 90, len(frame))
    frame = frame.assign(ci_low=frame["value"] - 5, ci_high=frame["value"] + 5)
    pngs = [
        charts.breakdown_bars(frame, "value", "group", "model", "SEM-B per country"),
        charts.interval_bars(frame, "value", "model", "group", "Correct rate per group", "correct rate (%)"),
    ]
    for fig, png in zip(drawn, pngs, strict=True):
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
        small = sorted({(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < charts.PNG_LABEL_PT})
        assert small == [] and charts.PNG_LABEL_PT * charts.PNG_DPI / 72 >= 10
        width = struct.unpack(">I", png[16:20])[0]  # the PNG header's width, in pixels
        assert width <= 1184, width  # the reports' column (1,200 px less its padding): never scaled down


def test_a_table_header_may_break_after_an_underscore_and_nowhere_inside_a_word(tmp_path):
    """A column's name has no spaces (``mean_error_ci_low``): html_table marks a break after each underscore, and
    the page's style lets a header wrap there and between words only (the browser test checks the drawn lines)."""
    import pandas as pd

    from geomon.report.charts import html_table, write_html

    table = html_table(pd.DataFrame({"mean_error_ci_low": [1.5], "country": ["Peru_x"]}))
    assert "<th>mean_<wbr>error_<wbr>ci_<wbr>low</th>" in table and "<th>country</th>" in table
    assert "<td>Peru_x</td>" in table  # the cells are as they were
    page = write_html(tmp_path / "page.html", "t", [table]).read_text()
    assert "anywhere" not in page and "th{overflow-wrap:normal" in page
