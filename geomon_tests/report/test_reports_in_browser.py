"""The reports as a person opens them, in headless Chromium at 1440 × 900, from a store holding Gapminder's real
published history (four real configurations of one release line: o1, o3-mini, GPT-4.1, o3) and a toy model's run
of 2026: the index and the Gapminder report open with the imported models' open regressions (o3-mini vs o1, o3's
indecisive rate under the ideology wording), the leaderboard holds the imported models, the trends page leads with
the real history, and nothing needs scrolling sideways."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from geomon.report.browser import chromium_path, headless_page, overflow_px

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="no Chromium: apt-get install chromium"),
]

# o1, o3-mini, GPT-4.1, o3: OpenAI's release line; the per-answer files of GPT-4.1 and o3 give each prompt
# family's figures (o3's indecisive rate under the ideology wording).
CONFIGS = ["mc059", "mc049", "mc065", "mc064", "mc062", "mc063"]  # the last two share an answer file
ANSWERS = ("master_output_20250417_043240.csv", "master_output_20250429_020523.csv")
WIDE = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def results(tmp_path_factory, wdi_snapshot_dir):
    """The imported history and a toy run in a store, the Gapminder leaderboard materialized (its report and
    the index written as `make run` writes them) and the trends written; returns the results folder."""
    from geomon.definitions import defs
    from geomon.defs.resources import GeomonResource
    from geomon.monitor import imports, results
    from geomon.monitor.history import MetricHistory
    from geomon.stats.values import EvaluationRun, MetricValue
    from geomon.suites.gapminder import published, source
    from geomon_tests.conftest import GAPMINDER_ENTITIES, SHARED, published_gapminder, write_settings

    tmp = tmp_path_factory.mktemp("reports")
    folder = published_gapminder(tmp / "published", CONFIGS, ANSWERS)
    settings = write_settings(tmp, wdi_snapshot_dir)
    history = MetricHistory(f"sqlite:///{tmp / 'store.sqlite'}")
    bank = source.read_snapshot(SHARED / "snapshots" / "gapminder")
    imports.record_runs(
        history, imports.published_runs("gapminder-results", published.evaluations(folder, GAPMINDER_ENTITIES, bank))
    )
    for day, value in ((1, 100.0), (2, 0.0)):  # a bundled model's two runs: 2026 dates, 0 and 100 %
        history.record(
            EvaluationRun(
                "gapminder",
                "toy-model",
                scope="quick",
                evaluated_at=datetime(2026, 11, day, tzinfo=UTC),
                dagster_run_id=f"toy-{day}",
            ),
            [MetricValue("correct_rate", value, ci_low=0.0, ci_high=100.0, n=2)],
        )
    with dg.instance_for_test() as instance:
        done = dg.materialize(
            [a for a in defs.assets if not isinstance(a, dg.SourceAsset)],
            instance=instance,
            resources={"geomon": GeomonResource(config_path=str(settings))},
            selection=dg.AssetSelection.assets(["gapminder", "leaderboard"]),
        )
        (board,) = done.asset_materializations_for_node("gapminder__leaderboard")
        assert board.metadata["models_imported"].value == len(CONFIGS)
    results.write_trends(tmp / "results", f"sqlite:///{tmp / 'store.sqlite'}")
    return tmp / "results"


def _open(page, path):
    page.goto(path.as_uri(), wait_until="load")
    assert overflow_px(page) == 0, f"{path} scrolls sideways at 1440 px"
    wide = page.evaluate(
        "Array.from(document.querySelectorAll('table'))"
        ".filter(t => t.offsetParent !== null && t.scrollWidth > t.clientWidth + 1).map(t => t.innerText.slice(0, 80))"
    )
    assert wide == [], f"{path}: a table scrolls sideways at 1440 px"
    return page


def _first_heading(page) -> str:
    return page.locator("h2").first.inner_text()


def test_the_index_and_the_suite_report_open_with_the_imported_regressions(results):
    with headless_page(WIDE) as page:
        _fits(page, results / "index.html")
        page.screenshot(path=str(results / "index.png"))
        assert _first_heading(page).startswith("Open regressions across every suite")
        lead = page.locator("p.lead").first.inner_text()
        assert "o3-mini-2025-01-31 vs o1-2024-12-17: correct_rate −17.2 pts" in lead
        assert "o3-2025-04-16 vs gpt-4.1-2025-04-14: indecisive_rate (family=ideology) +23.8 pts" in lead
        assert page.locator("th", has_text="power at the minimum effect").count() >= 1
        (suite_row,) = [r for r in page.locator("tr").all() if "Gapminder AI worldview" in r.inner_text()]
        assert "6 imported" in suite_row.inner_text()
        assert suite_row.locator("a[href='gapminder/report.html#open-regressions']").count() == 1

        _fits(page, results / "gapminder" / "report.html")  # nothing wider than its box, no text under 10 px
        page.screenshot(path=str(results / "gapminder.png"))
        assert _first_heading(page).startswith("Open regressions in Gapminder AI worldview")
        leads = page.locator("table").first
        rows = [[c.inner_text() for c in r.locator("td").all()] for r in leads.locator("tr").all()[1:]]
        by_model = {row[0]: row for row in rows}
        assert by_model["o3-mini-2025-01-31"][3:7] == [
            "o1-2024-12-17 (predecessor)",
            "correct_rate",
            "overall",
            "−17.2 pts",
        ]
        assert by_model["o3-2025-04-16"][4:6] == ["indecisive_rate", "family=ideology"]
        # the leaderboard holds every evaluated model: the toy model's Dagster row is absent (not run here),
        # the six imported ones are there, marked imported
        board = page.locator("h2", has_text="Leaderboard").locator("xpath=following-sibling::table[1]")
        text = board.inner_text()
        assert all(model in text for model in ("o1-2024-12-17", "o3-mini-2025-01-31", "gpt-4.1-2025-04-14"))
        assert text.count("imported") == 6
        assert "not decidable at this profile" not in page.content()  # imported models never had a profile
        # The per-model chart as the page shows it: a row per model, the regressed ones marked, every label at
        # least 10 px and no two overlapping, inside the page's width.
        chart = page.locator("figure.dot-plot").first
        assert chart.bounding_box()["x"] + chart.bounding_box()["width"] <= WIDE["width"]
        labels = chart.evaluate(
            "f => Array.from(f.querySelectorAll('text'), t => {const r = t.getBoundingClientRect();"
            " return {text: t.textContent, top: r.top, bottom: r.bottom, left: r.left, right: r.right}})"
        )
        models = set(board.locator("td:first-child").all_inner_texts())
        rows = [label for label in labels if label["text"].split("  ▲")[0] in models]
        assert sorted(label["text"].split("  ▲")[0] for label in rows) == sorted(models)  # one row per model
        marked = {label["text"].split("  ▲")[0] for label in labels if "▲ open regression" in label["text"]}
        assert marked == set(by_model)  # the models of the open-regressions table
        assert min(label["bottom"] - label["top"] for label in labels) >= 10
        boxes = sorted(labels, key=lambda label: label["top"])
        overlapping = [
            (a["text"], b["text"])
            for i, a in enumerate(boxes)
            for b in boxes[i + 1 :]
            if b["top"] < a["bottom"] - 1 and b["left"] < a["right"] - 1 and a["left"] < b["right"] - 1
        ]
        assert overlapping == []


def test_the_trends_page_leads_with_the_real_history(results):
    with headless_page(WIDE) as page:
        _fits(page, results / "trends" / "report.html")  # every label at least 10 px, no two overlapping
        page.screenshot(path=str(results / "trends.png"))
        contents = page.locator("nav").inner_text()
        assert contents.index("Published history") < contents.index("geomon's own runs")
        assert _first_heading(page) == "Published history (imported evaluations)"
        first_chart = page.locator("h3").first
        assert first_chart.inner_text().startswith("Gapminder: correct rate")
        assert first_chart.bounding_box()["y"] < 900  # on the first screen
        # o3's indecisive rate under the ideology wording has its own chart, in the history's section
        charts = [h.inner_text() for h in page.locator("h3").all()]
        ideology = charts.index("Gapminder: indecisive rate (% of answers no option was read from) — family=ideology")
        toy = page.locator("h2", has_text="geomon's own runs")
        assert toy.bounding_box()["y"] > page.locator("h3").nth(ideology).bounding_box()["y"]
        # the toy model's 2026 dates are on its own chart: the history's axes end in 2025
        words = page.locator("figure").first.evaluate(
            "f => Array.from(f.querySelectorAll('text'), t => t.textContent).join(' ')"
        )
        assert "2025" in words and "2026" not in words and "toy-model" not in words


def _wide_board(columns: tuple[str, ...], models: int = 39) -> pd.DataFrame:
    """A board as wide as a real one (WorldBench's has 53 columns, SAGED's 153): the suite's headline columns,
    50 more with long names, a long sample note and verdicts, for ``models`` models."""
    values = np.linspace(0.2, 0.9, models)
    board = pd.DataFrame({"model": [f"vendor-model-{i:02d}-2025-01-31" for i in range(models)], "origin": "geomon"})
    for column in columns:
        board[column] = values
    for i in range(50):
        board[f"income_group_baseline_shuffled_labels_median_ci_high_{i:02d}"] = values + i
    board["sample_note"] = "insufficient sample: region_disparity_mean: n = 1 < 30; mean_error: n = 8 < 30"
    board["verdicts"] = "3 compared: 0 regressions, 1 improvement, 2 unchanged (provisional at the quick profile)"
    return board


MODEL = "vendor-model-00-2025-01-31"


def _borderlines_board(models: int = 39) -> pd.DataFrame:
    """A BorderLines leaderboard of ``models`` models at one table version: every score with its interval."""
    from geomon.suites.borderlines.report import SCORES

    values = np.linspace(10.0, 90.0, models)
    board = pd.DataFrame(
        {"model": [f"vendor-model-{i:02d}-2025-01-31" for i in range(models)], "revision": "2023-05-15-r1154894956",
         "persona": "vanilla", "territories": 251, "delta_cs_unnormalized": 60.0, "response_countries_mean": 1.83,
         "origin": "geomon"}
    )  # fmt: skip
    for score in SCORES:
        board = board.assign(**{score: values, f"{score}_ci_low": values - 9.5, f"{score}_ci_high": values + 9.5})
    return board


def _saged_result() -> dict[str, pd.DataFrame]:
    """One model's SAGED result as its stage writes it: the disparity table with every statistic (the 20 columns
    of a real run's disparity.csv) and the per-country means it is computed from."""
    countries = ["Argentina", "Australia", "European Union", "United States", "Democratic Republic of the Congo"]
    roles, features = ["none", "optimist"], ["sentiment", "sentiment_calibrated"]
    rows = [(c, r, f) for c in countries for r in roles for f in features]
    means = pd.DataFrame(rows, columns=["concept", "role", "feature"]).assign(
        n=1, mean=np.linspace(-0.5, 0.9, len(rows)), selection_rate=0.5, precision=0.5, kl_divergence=0.18
    )
    disparity = pd.DataFrame([(r, f) for r in roles for f in features], columns=["role", "feature"]).assign(
        groups=21, mean_range=0.48165, mean_range_ci_low=0.31234, mean_range_ci_high=0.61234,
        mean_min_max_ratio=-6.347087, mean_std=0.198868, max_z_score=1.155230, dixon_q=0.061351,
        dixon_outlier="none", impact_ratio=0.0, impact_ratio_ci_low=0.0, impact_ratio_ci_high=0.125,
        four_fifths_biased=True, lowest="Democratic Republic of the Congo", highest="European Union",
        permutation_p=1.0, chance_range_95=0.48165, selection_standard=0.757447,
    )  # fmt: skip
    return {"disparity": disparity, "countries": means}


def _fits(page, path) -> None:
    """``path`` at 1440 px: nothing wider than the page, no table wider than its box, every text at least 10 px
    (an HTML element's font size; an SVG label's height as drawn), no table header broken inside a word, no two
    SVG labels overlapping."""
    _open(page, path)
    small = page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => e.offsetParent !== null && !(e instanceof"
        " SVGElement) && Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim()) &&"
        " parseFloat(getComputedStyle(e).fontSize) < 10).map(e => e.textContent.slice(0, 60))"
    )
    assert small == [], f"{path}: text under 10 px"
    assert _headers_broken_inside_a_word(page) == [], f"{path}: a table header breaks inside a word"
    for figure in page.locator("svg").all():
        # a label's size as shown: its font size in the SVG's units times the scale to the screen (rotation aside)
        labels = figure.evaluate(
            "s => Array.from(s.querySelectorAll('text'), t => {const r = t.getBoundingClientRect();"
            " const m = t.getScreenCTM(); const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);"
            " return {text: t.textContent, px: px, top: r.top, bottom: r.bottom, left: r.left, right: r.right}})"
        )
        small = [(label["text"], round(label["px"], 1)) for label in labels if label["px"] < 10]
        assert small == [], f"{path}: chart labels under 10 px"
        overlapping = [
            (a["text"], b["text"])
            for i, a in enumerate(labels)
            for b in labels[i + 1 :]
            if b["top"] < a["bottom"] - 1
            and a["top"] < b["bottom"] - 1
            and b["left"] < a["right"] - 1
            and a["left"] < b["right"] - 1
        ]
        assert overlapping == [], f"{path}: chart labels overlap"


# Each word of every visible header (ending at a space, a hyphen or an underscore) and the lines it is drawn on:
# a word drawn on two lines was broken inside it.
SPLIT_HEADER_WORDS = """
() => Array.from(document.querySelectorAll('th')).filter(th => th.offsetParent !== null).flatMap(th => {
  const split = [];
  const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const word of node.textContent.matchAll(/[^\\s_-]+[_-]?/g)) {
      const range = document.createRange();
      range.setStart(node, word.index);
      range.setEnd(node, word.index + word[0].length);
      const lines = new Set(Array.from(range.getClientRects(), box => Math.round(box.top)));
      if (lines.size > 1) split.push(word[0]);
    }
  }
  return split;
})
"""


def _headers_broken_inside_a_word(page) -> list[str]:
    return page.evaluate(SPLIT_HEADER_WORDS)


def test_every_suites_leaderboard_shows_its_headline_columns_within_the_page(tmp_path):
    """Each suite's report, written from a 53-column board of 39 models, at 1440 px: the leaderboard shows the
    suite's headline columns, links leaderboard.csv for the rest, and nothing on the page is wider than its box
    or smaller than 10 px."""
    from geomon.report import suite
    from geomon.suites import blend, registry
    from geomon.suites.borderlines import report as borderlines
    from geomon.suites.gapminder import report as gapminder
    from geomon.suites.quench import report as quench
    from geomon.suites.saged import report as saged
    from geomon.suites.worldbench import report as worldbench

    def columns(name: str) -> tuple[str, ...]:
        return registry.suite(name).pipeline.leaderboard_columns

    written = {
        "worldbench": worldbench.write_report(tmp_path / "worldbench", _wide_board(columns("worldbench")), {},
                                              columns("worldbench")),
        "gapminder": gapminder.write_report(tmp_path / "gapminder", _wide_board(columns("gapminder")), {},
                                            columns("gapminder")),
        "quench": quench.write_report(tmp_path / "quench", _wide_board(columns("quench")), {}, columns("quench")),
        "saged": saged.write_report(tmp_path / "saged", _wide_board(columns("saged")), {MODEL: _saged_result()},
                                    columns("saged")),
        "blend": suite.write_suite_report(tmp_path / "blend", "BLEnD", "", _wide_board(columns("blend")), {}, [],
                                          blend.PIPELINE.leaderboard_columns),
    }  # fmt: skip
    with headless_page(WIDE) as page:
        for name, path in written.items():
            _fits(page, path)
            board = page.locator("h2", has_text="Leaderboard").locator("xpath=following-sibling::table[1]")
            headers = board.locator("th").all_inner_texts()
            assert headers == ["model", "origin", *columns(name)], name
            assert page.locator("a[href='leaderboard.csv']").count() == 1, name
            page.screenshot(path=str(tmp_path / f"{name}.png"))
        # BorderLines' page: its scores table (no headline columns: every score with its interval), 39 models
        _fits(page, borderlines.write_report(tmp_path / "borderlines", _borderlines_board(), [], {}))
        # SAGED's per-model disparity table (20 statistics, 63 px too wide at 1440 px): its headline columns,
        # the rest named and linked (checked by _fits above: no table wider than its box)
        page.goto(written["saged"].as_uri(), wait_until="load")
        table = page.locator("h3", has_text="Disparity across countries").locator("xpath=following-sibling::table[1]")
        assert table.locator("th").all_inner_texts() == list(saged.DISPARITY_SHOWN)
        assert page.locator(f"a[href='{MODEL}/disparity.csv']").count() == 1
