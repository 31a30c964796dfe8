"""The cross-model trends report."""

from __future__ import annotations

import pandas as pd

from geomon.report.charts import figure_svg as charts_svg

CATALOG = [("worldbench", "mean_error", "", "WorldBench: mean absolute relative error", (0.0, 1.0))]


def test_trends_chart_with_many_models_labels_the_extremes(tmp_path):
    """A hundred models on one chart: the four highest and four lowest latest values are labelled, the rest
    are one grey collection, and the report still has every model's latest value in its table."""
    from geomon.report import trends

    rows = [
        {
            "suite": "worldbench",
            "metric": "mean_error",
            "breakdown": "",
            "model": f"m{m:03d}",
            "scope": "",
            "recorded_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(days=7 * week),
            "value": m / 100 + week,
            "ci_low": None,
            "ci_high": None,
        }
        for m in range(100)
        for week in range(3)
    ]
    frame = pd.DataFrame(rows)
    assert trends.labelled_models(frame) == {f"m{m:03d}" for m in (0, 1, 2, 3, 96, 97, 98, 99)}
    assert trends.labelled_models(frame[frame["model"] < "m005"]) == {f"m{m:03d}" for m in range(5)}
    page = trends.write_report(tmp_path, frame, catalog=CATALOG)
    text = page.read_text()
    assert text.count("<svg") == 1 and "92 other models" in text  # the chart, inline, its legend as text
    assert "m000" in text and "m099" in text
    saved = pd.read_csv(tmp_path / "trends.csv")
    assert saved["model"].nunique() == 100
    # Charts are kept by a hash of their data: an unchanged history is not drawn again, a changed one is,
    # and the chart no headline uses any more is removed.
    (drawn,) = (tmp_path / "charts").glob("*.svg")
    stamp = drawn.stat().st_mtime_ns
    trends.write_report(tmp_path, frame, catalog=CATALOG)
    assert [p.stat().st_mtime_ns for p in (tmp_path / "charts").glob("*.svg")] == [stamp]
    trends.write_report(tmp_path, frame.assign(value=frame["value"] + 1), catalog=CATALOG)
    (redrawn,) = (tmp_path / "charts").glob("*.svg")
    assert redrawn != drawn and not drawn.exists()


def test_each_table_version_is_its_own_line():
    """A metric recorded on two BorderLines table versions: two series per model, not one line across."""
    from geomon.report import trends

    frame = pd.DataFrame(
        {
            "model": ["a", "a", "a", "b"],
            "scope": ["2021-08-31", "2023-05-15", "2023-05-15", "2023-05-15"],
        }
    )
    assert list(trends.trend_lines(frame)) == ["a · 2021-08-31", "a · 2023-05-15", "a · 2023-05-15", "b · 2023-05-15"]
    one_scope = frame.assign(scope="")
    assert list(trends.trend_lines(one_scope)) == ["a", "a", "a", "b"]


def test_a_metric_imported_in_its_own_units_gets_its_own_chart(tmp_path):
    """A suite's score (0–100) run by geomon, the same metric imported to geomon's definition (a publisher's
    history) and the metric imported under its name from a per-item file (0–1): three charts, each of one scale
    and one time span, never on one axis; the published history comes first on the page and in its contents."""
    from geomon.report import trends
    from geomon.stats.values import series_scope

    own, imported = series_scope("toy|40", {"data": "d", "code": "c"}), series_scope("imported score", {"items": "q"})
    frame = pd.DataFrame(
        {
            "suite": "toy",
            "metric": "score",
            "breakdown": "",
            "model": ["m", "m", "n", "n", "p", "p"],
            "scope": [own, own, imported, imported, "published answers", "published answers"],
            "origin": ["geomon", "geomon", "import:items:f", "import:items:f", "import:pub:1", "import:pub:2"],
            "recorded_at": pd.to_datetime(
                ["2026-01-01", "2026-02-01", "2026-01-01", "2026-02-01", "2024-01-01", "2025-01-01"], utc=True
            ),
            "value": [100.0, 0.0, 0.71, 0.69, 12.0, 13.0],
            "ci_low": None,
            "ci_high": None,
        }
    )
    catalog = [("toy", "score", "", "Toy: score", (0.0, 100.0))]
    charts = trends.panels(trends.trend_table(frame, catalog), "Toy: score")
    assert [(title, section, sorted(part["value"])) for part, title, section in charts] == [
        ("Toy: score", trends.HISTORY, [12.0, 13.0]),
        ("Toy: score (imported, in the file's units)", trends.FILES, [0.69, 0.71]),
        ("Toy: score", trends.RUNS, [0.0, 100.0]),
    ]
    text = trends.write_report(tmp_path, frame, catalog=catalog).read_text()
    assert text.count("<svg") == 3 and "Toy: score (imported, in the file&#x27;s units)" in text
    contents, body = text.split("<nav>")[1].split("</nav>")
    assert contents.index("Published history") < contents.index("per-item files") < contents.index("own runs")
    assert body.index("<svg") > body.index("Published history") and body.index("own runs") > body.index("<svg")


def test_each_verdict_mark_says_what_it_is(tmp_path, monkeypatch):
    """A regression's cross is labelled with its model, its baseline, the change in the metric's units and the
    verdict; the chart's axis labels, legend and labels lie inside the figure, however long the names."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from geomon.report import charts, trends

    drawn = []
    monkeypatch.setattr(charts, "figure_svg", lambda fig: drawn.append(fig) or charts_svg(fig))

    catalog = [("gapminder", "correct_rate", "", "Gapminder: correct rate", (0.0, 100.0))]
    series = pd.DataFrame(
        {
            "suite": "gapminder",
            "metric": "correct_rate",
            "breakdown": "",
            "model": ["o1", "o3-mini"],
            "scope": "",
            "evaluated_at": pd.to_datetime(["2025-03-06", "2025-04-15"], utc=True),
            "value": [90.9, 73.7],
            "ci_low": [89.0, 71.0],
            "ci_high": [92.0, 76.0],
            "evaluation_id": ["e1", "e2"],
            "n": [365, 365],
        }
    )
    comparisons = pd.DataFrame(
        {
            "evaluation_id": ["e2"],
            "metric": ["correct_rate"],
            "breakdown": [""],
            "against": ["predecessor o1"],
            "change": [-17.19],
            "verdict": ["regression"],
        }
    )
    series = pd.concat([series, series.assign(model=lambda f: f["model"] + "-with-a-long-name" * 5, evaluation_id="")])
    page = trends.write_report(tmp_path, series, comparisons, catalog=catalog)
    assert "o3-mini vs o1: −17.2 pts, regression" in page.read_text()
    (fig,) = drawn
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    inside = fig.bbox.padded(1)
    for artist in [fig.axes[0].get_legend(), *fig.axes[0].texts, fig.axes[0].yaxis.label, fig.axes[0].title]:
        box = artist.get_window_extent(renderer)
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, artist
    marks = pd.read_csv(tmp_path / "trends.csv")["mark"].dropna()
    assert list(marks) == ["o3-mini vs o1: −17.2 pts, regression"]


def test_a_group_asked_for_gets_its_own_chart(tmp_path):
    """`geomon trends --breakdown family=ideology`: each headline metric's figure in that group, charted on its own
    (here with no regression in it, so only because it was asked for)."""
    from datetime import UTC, datetime

    from geomon.cli import main
    from geomon.monitor.history import MetricHistory
    from geomon.stats.values import EvaluationRun, MetricValue

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for day in (1, 2):
        MetricHistory(url).record(
            EvaluationRun(
                "gapminder", "m", evaluated_at=datetime(2025, 1, day, tzinfo=UTC), origin=f"import:test:{day}"
            ),
            [MetricValue("indecisive_rate", 1.0 + day), MetricValue("indecisive_rate", 5.0 * day, "family=ideology")],
        )
    settings = tmp_path / "geomon.yaml"
    settings.write_text(f"store_url: {url}\nresults_dir: {tmp_path / 'results'}\n")
    group = "Gapminder: indecisive rate (% of answers no option was read from) — family=ideology"
    assert main(["--config", str(settings), "trends"]) == 0
    assert group not in (tmp_path / "results" / "trends" / "report.html").read_text()
    assert main(["--config", str(settings), "trends", "--breakdown", "family=ideology"]) == 0
    page = (tmp_path / "results" / "trends" / "report.html").read_text()
    assert f"'>{group}</h3>" in page and page.index("Published history") < page.index(f"'>{group}</h3>")
    assert "None" not in page  # a missing interval or count is a dash


def test_regression_labels_are_readable_and_never_overlap(tmp_path, monkeypatch):
    """Two regressions days apart at nearly one value (the natural-language chart of Gapminder's history) and nine
    lines, one of them unlabelled: every text of the chart at least 8 pt (10.7 px at the chart's own width), the
    two labels apart by a browser's line, and the grey line named "1 other model". Mutations caught: the labels at
    6.5 pt; ``apart`` not called (the labels overlap); ``apart`` on the glyphs' boxes unpadded."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from geomon.report import charts, trends

    drawn = []
    monkeypatch.setattr(charts, "figure_svg", lambda fig: drawn.append(fig) or charts_svg(fig))
    catalog = [("gapminder", "correct_rate", "", "Gapminder: correct rate", (0.0, 100.0))]
    models = [f"model-{i}" for i in range(11)]  # nine lines: model-6 and model-7 succeed model-4
    dates = pd.to_datetime([f"2024-{m:02d}-01" for m in range(1, 12)], utc=True)
    series = pd.DataFrame(
        {
            "suite": "gapminder",
            "metric": "correct_rate",
            "breakdown": "",
            "model": models,
            "scope": "",
            "evaluated_at": [*dates[:7], dates[6] + pd.Timedelta(days=3), *dates[8:]],
            "value": [90.0, 20.0, 88.0, 25.0, 86.0, 50.0, 60.0, 60.5, 70.0, 95.0, 10.0],
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "evaluation_id": [f"e{i}" for i in range(11)],
            "n": 365,
        }
    )
    comparisons = pd.DataFrame(
        {
            "evaluation_id": ["e6", "e7"],
            "metric": "correct_rate",
            "breakdown": "",
            "against": ["predecessor model-4", "predecessor model-4"],
            "change": [-26.0, -25.5],
            "verdict": "regression",
        }
    )
    trends.write_report(tmp_path, series, comparisons, catalog=catalog)
    (fig,) = drawn
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    texts = [*ax.texts, *ax.get_legend().get_texts(), *ax.get_xticklabels(), *ax.get_yticklabels(), ax.yaxis.label]
    assert min(t.get_fontsize() for t in texts if t.get_text()) >= 8
    first, second = (t.get_window_extent(renderer) for t in ax.texts if "regression" in t.get_text())
    assert not first.overlaps(second), (first, second)
    # apart as a browser draws them: its box for a text is a line high, a third of the size above and below the
    # glyphs (two labels 1.4 px into each other on the real history's chart, with 39 models in the legend)
    pad = ax.texts[0].get_fontsize() / 3 * fig.dpi / 72
    assert max(first.y0 - second.y1, second.y0 - first.y1) >= 2 * pad, (first, second)
    assert "1 other model" in [t.get_text() for t in ax.get_legend().get_texts()]
