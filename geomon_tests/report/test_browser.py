"""What a person sees, in headless Chromium: hostile model answers in Dagster metadata, rendered by the real
Dagster UI, stay inert text in a table of the right shape (no markup, no script, no extra rows)."""

from __future__ import annotations

import textwrap

import dagster as dg
import pytest

from geomon.report.browser import chromium_path, dagster_ui, headless_page

# Chromium is Debian's package (.ci/run installs it); without it this test cannot run at all.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="no Chromium: apt-get install chromium"),
]

HOSTILE = [
    '<img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=2</script> 42",
    "| a | b |\n|---|---|\n| injected | row |",
    "[click me](javascript:window.__pwned=3)",
    "`code` and ``` fences ``` **bold** <b>tag</b>",
    "plain 1.2 million",
]

DEFS = textwrap.dedent(
    f"""
    import dagster as dg
    import pandas as pd

    from geomon.report import charts

    HOSTILE = {HOSTILE!r}


    @dg.asset
    def hostile_answers() -> dg.MaterializeResult:
        frame = pd.DataFrame({{"country": [f"Country{{i}}" for i in range(len(HOSTILE))], "answer": HOSTILE}})
        return dg.MaterializeResult(
            metadata={{"unparsed_examples": dg.MetadataValue.md(charts.markdown_table(frame))}}
        )


    defs = dg.Definitions(assets=[hostile_answers])
    """
)


def test_hostile_answers_render_as_inert_text_in_the_dagster_ui(tmp_path, monkeypatch):
    import importlib.util

    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("")
    module_path = tmp_path / "hostile_defs.py"
    module_path.write_text(DEFS)
    spec = importlib.util.spec_from_file_location("hostile_defs", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        assert dg.materialize([module.hostile_answers], instance=instance).success
    with dagster_ui(home, ["-f", str(module_path)]) as url, headless_page() as page:
        page.goto(f"{url}/assets/hostile_answers?view=events", wait_until="networkidle", timeout=120_000)
        page.get_by_text("Country5").first.wait_for(timeout=120_000)
        page.screenshot(path=str(tmp_path / "hostile.png"), full_page=True)
        assert page.evaluate("window.__pwned") is None and page.errors == []
        tables = [t for t in page.locator("table").all() if "Country0" in t.inner_text()]
        table = tables[-1]  # the rendered Markdown (the metadata table around it holds it too)
        rows = [[cell.inner_text() for cell in row.locator("td").all()] for row in table.locator("tr").all()[1:]]
        assert [row[0] for row in rows] == [f"Country{i}" for i in range(len(HOSTILE))]
        # Each answer is one cell, shown as the text it was (whitespace folded), with nothing rendered from it.
        assert [row[1] for row in rows] == [" ".join(answer.split()) for answer in HOSTILE]
        assert table.locator("img, script, a, b, strong, code").count() == 0
