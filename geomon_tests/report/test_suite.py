"""What every suite's report shares: the per-model chart (a sorted dot plot, one row per model, the regressed ones
marked, readable for 39 models at 1440 px), sample notes said once, and a chart with nothing to draw saying why."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

MODELS = 39  # Gapminder's published history holds 37 configurations, a bundled model's runs two more
HEADLINES = ("n", "correct_rate", "correct_rate_ci_low", "correct_rate_ci_high")


def _board(models: int = MODELS, note: str = "") -> pd.DataFrame:
    rates = np.linspace(40.0, 95.0, models)[::-1].copy()
    np.random.default_rng(0).shuffle(rates)  # the board's order is not the chart's
    return pd.DataFrame(
        {
            "model": [f"model-{i:02d}" for i in range(models)],
            "origin": "imported (gapminder)",
            "n": 2000,
            "correct_rate": rates,
            "correct_rate_ci_low": rates - 3.0,
            "correct_rate_ci_high": rates + 3.0,
            "sample_note": note,
        }
    )


def _open_regressions(out, models: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(
        {
            "suite": "gapminder",
            "model": models,
            "baseline": "model-00 (predecessor)",
            "metric": "correct_rate",
            "group": "overall",
            "change": "−9.0 pts",
        }
    ).to_csv(out / "open_regressions.csv", index=False)


def _labels(svg: str) -> list[tuple[str, float, float]]:
    """Each text of the SVG as (text, font size in CSS px as the page shows it, y in the SVG's units)."""
    width_pt = float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg).group(1))
    view_width = float(re.search(r'viewBox="0 0 ([\d.]+) [\d.]+"', svg).group(1))
    to_px = width_pt * 4 / 3 / view_width  # a point is 4/3 CSS px; the page shows the SVG at its own width
    return [
        (text, float(size) * to_px, float(y))
        for size, y, text in re.findall(
            r'<text style="font-size: ([\d.]+)px;[^"]*"[^>]*\sy="([\d.]+)"[^>]*>([^<]*)</text>', svg
        )
    ]


def test_the_per_model_chart_is_a_sorted_dot_plot_a_row_per_model_the_regressed_marked(tmp_path):
    """39 models: one labelled row each, in the order of their correct rate (best on top), every label at least
    10 px in the page and the rows further apart than a label is tall (no overlap), the SVG narrower than the
    report's column at 1440 px, and the models with an open regression — and only those — named so and red.
    Mutations caught: the rows unsorted; the labels at 7 pt; the rows 0.12 in apart; the marks dropped."""
    from geomon.suites.gapminder import report as gapminder

    board = _board()
    regressed = ["model-03", "model-17"]
    _open_regressions(tmp_path, regressed)
    page = gapminder.write_report(tmp_path, board, {}, HEADLINES).read_text()
    (svg,) = re.findall(r"<figure class='dot-plot'[^>]*>(<svg.*?</svg>)\s*</figure>", page, flags=re.S)
    assert float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg).group(1)) * 4 / 3 <= 1184  # the column
    labels = _labels(svg)
    rows = [(text.split("  ▲")[0], y) for text, _, y in labels if text.startswith("model-")]
    assert sorted(name for name, _ in rows) == sorted(board["model"])  # each model exactly once
    top_down = [name for name, _ in sorted(rows, key=lambda row: row[1])]
    assert top_down == list(board.sort_values("correct_rate", ascending=False)["model"])
    smallest = min(size for _, size, _ in labels)
    assert smallest >= 10, f"a label at {smallest:.1f} px"
    gaps = np.diff(sorted(y for _, y in rows))
    label_height = max(size for text, size, _ in labels if text.startswith("model-")) * 3 / 4  # back to units
    assert gaps.min() > 1.2 * label_height, "two model labels overlap"
    marked = sorted(text.split("  ▲")[0] for text, _, _ in labels if "▲ open regression" in text)
    assert marked == regressed


def test_sample_notes_are_said_once_above_the_leaderboard(tmp_path):
    """A note shared by every row is one item above the table naming its models, not a paragraph per row; the
    table has no sample_note column (leaderboard.csv keeps it per row). Mutation caught: the notes left in the
    table (the note then appears 39 + 1 times)."""
    from geomon.suites.gapminder import report as gapminder

    note = "too few shared items to detect the minimum effect: correct_rate"
    page = gapminder.write_report(tmp_path, _board(note=note), {}, HEADLINES).read_text().replace("<wbr>", "")
    assert page.count(note) == 1
    assert f"({MODELS} models: model-00" in page
    board_at = page.index("<h2>Leaderboard")
    assert board_at < page.index("Sample notes") < page.index("<table", board_at)  # above the table
    assert "<th>sample_note</th>" not in page
    assert pd.read_csv(tmp_path / "leaderboard.csv")["sample_note"].eq(note).all()


def test_the_leaderboard_shows_its_headline_columns_and_links_the_rest(tmp_path):
    """A leaderboard of 40 columns shows the rows' labels and the suite's headline columns only, and says how many
    more leaderboard.csv (linked, beside the report) holds; the CSV keeps every column. Mutation caught: the whole
    board shown (a table of 40 columns)."""
    from geomon.suites.gapminder import report as gapminder

    extra = {f"extra_figure_{i:02d}": float(i) for i in range(33)}
    board = _board(3).assign(evaluated_at="2025-01-31", **extra)
    page = gapminder.write_report(tmp_path, board, {}, HEADLINES).read_text().replace("<wbr>", "")  # header breaks
    board_at = page.index("<h2>Leaderboard")
    table = page[page.index("<table", board_at) : page.index("</table>", board_at)]
    headers = re.findall(r"<th>([^<]*)</th>", table)
    assert headers == ["model", "origin", "evaluated_at", *HEADLINES]
    rest = len(board.columns) - len(headers)
    assert f"{rest} more columns (intervals, counts, samples, verdicts) in <a href='leaderboard.csv'>" in page
    assert list(pd.read_csv(tmp_path / "leaderboard.csv").columns) == list(board.columns)


def test_a_chart_with_nothing_to_draw_says_why(tmp_path):
    """SAGED's impact ratio at the quick profile: no model has a value, so the chart is a sentence naming the
    models and why, not an empty frame; a model without a value beside others is named under the chart."""
    from html import escape

    from geomon.report.charts import EMPTY_REASON
    from geomon.report.suite import headline_chart

    why = escape(EMPTY_REASON)

    board = _board(3).assign(correct_rate=float("nan"), correct_rate_ci_low=float("nan"))
    empty = headline_chart(board, "correct_rate", "Correct rate per model", set())
    assert "<svg" not in empty and "no chart — no model has a value (model-00, model-01, model-02)" in empty
    assert why in empty
    one_missing = headline_chart(_board(3).assign(correct_rate=[50.0, float("nan"), 60.0]), "correct_rate", "t", set())
    assert "<svg" in one_missing and f"No value, not drawn: model-01 — {why}" in one_missing
