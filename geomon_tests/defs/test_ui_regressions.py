"""Where a person looks, in headless Chromium on the real Dagster UI: after ``geomon import`` of published history
with a regression (o3-mini against o1), the check's Partitions counts the failed partition, the check reads as its
worst open state, ``monitor/open_regressions`` lists the regressed model, and o3-mini's comparisons table is three
clicks from the catalog, none of them typing; the left bar's search finds the model by name, and its own entry
reads red with its state; the view ``geomon ui`` names first (the Overview's Assets) counts the failed checks,
and once opened is the landing page."""

from __future__ import annotations

import pytest
import requests

from geomon.cli.ui import OPEN_REGRESSIONS as OPEN
from geomon.cli.ui import where_to_look
from geomon.config import load_settings
from geomon.report.browser import chromium_path, dagster_ui, headless_page
from geomon_tests.conftest import published_gapminder, write_settings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="no Chromium: apt-get install chromium"),
]

CHECK = """
{ assetNodeOrError(assetKey: {path: ["history", "gapminder_evaluations"]}) { ... on AssetNode {
  assetCheckOrError(checkName: "no_regression") { ... on AssetCheck {
    executionForLatestMaterialization { partition status evaluation { description } }
    partitionStatuses { ... on AssetCheckDefaultPartitionStatuses { succeededPartitions failedPartitions } } } } } } }
"""
NONE_OPEN = """
query($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) { ... on AssetNode {
  assetCheckOrError(checkName: "none_open") { ... on AssetCheck {
    executionForLatestMaterialization { status evaluation { description } } } } } } }
"""
O3_MINI = "o3-mini-2025-01-31"


def test_the_open_regression_is_counted_listed_and_three_clicks_from_the_catalog(
    tmp_path, wdi_snapshot_dir, monkeypatch
):
    from geomon.cli import main

    # o1 and o3-mini (a regression), and Qwen Max, which passes and sorts after them
    folder = published_gapminder(tmp_path / "gapminder", ["mc059", "mc049", "mc039"])
    settings = write_settings(tmp_path, wdi_snapshot_dir)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nnux:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("GEOMON_CONFIG", str(settings))  # the code location the UI loads reads the same settings
    assert main(["--config", str(settings), "import", "gapminder-results", str(folder), "--fail-on", "never"]) == 0
    with dagster_ui(home, ["-w", "workspace.yaml"]) as url:
        answer = requests.post(f"{url}/graphql", json={"query": CHECK}, timeout=120).json()["data"]
        check = answer["assetNodeOrError"]["assetCheckOrError"]
        # The check's Partitions: 1 failed, 2 passed (not 3 missing)
        assert check["partitionStatuses"] == {
            "failedPartitions": [O3_MINI],
            "succeededPartitions": ["o1-2024-12-17", "qwen-max-2024-09-19"],
        }
        # The check's latest result is the worst open state, its Description the one-line summary
        latest = check["executionForLatestMaterialization"]
        assert latest["partition"] == O3_MINI and latest["status"] == "FAILED"
        assert (
            "regressions vs o1-2024-12-17 (predecessor): correct_rate −17.2 pts" in latest["evaluation"]["description"]
        )

        # The whole asset, and the open-regressions asset, are red (their asset-level check), not only the partition;
        # so is the model's own entry (what the catalog's status and the groups' counts read: its latest
        # materialization's checks)
        regressions = int(latest["evaluation"]["description"].split(": ")[1].split()[0])  # "o3-mini…: 2 regressions…"
        opened = f"{regressions} open regression{'s' * (regressions > 1)}"
        for path, said in (
            (["history", "gapminder_evaluations"], "in 1 model: o3-mini-2025-01-31"),
            (["monitor", "open_regressions"], "in 1 model: o3-mini-2025-01-31"),
            (["models", O3_MINI], f"{O3_MINI}: {opened}: gapminder ({regressions})"),
        ):
            query = {"query": NONE_OPEN, "variables": {"path": path}}
            node = requests.post(f"{url}/graphql", json=query, timeout=120).json()["data"]["assetNodeOrError"]
            latest = node["assetCheckOrError"]["executionForLatestMaterialization"]
            assert latest["status"] == "FAILED", latest
            assert said in latest["evaluation"]["description"]

        with headless_page({"width": 1440, "height": 900}) as page:
            # A browser that never opened the UI lands on the Overview's Timeline (runs only; Dagster's default)
            page.goto(url, wait_until="networkidle", timeout=120_000)
            page.wait_for_url("**/overview/activity/timeline**", timeout=120_000)
            page.goto(f"{url}/assets", wait_until="networkidle", timeout=120_000)
            board = page.locator('a[href="/assets/monitor/open_regressions"]').first
            page.get_by_text("Asset name").first.wait_for(timeout=120_000)
            page.mouse.move(700, 500)  # over the catalog's table, which draws only the rows in view
            for _ in range(40):  # scroll (not a click) to the row
                if board.count():
                    break
                page.mouse.wheel(0, 600)
                page.wait_for_timeout(250)
            # its catalog row reads red: the failed check's icon beside its latest materialization
            catalog_row = board.locator("xpath=ancestor::div[contains(@class,'rowGrid')]").first
            catalog_row.locator('[aria-label="check_failed"]').first.wait_for(timeout=60_000)
            board.click()  # click 1: the open-regressions asset, from the catalog
            listed = page.locator("a", has_text=O3_MINI).first
            listed.wait_for(timeout=120_000)
            body = page.inner_text("body")
            assert "open regressions in 1 model: o3-mini-2025-01-31" in body  # how many, which models
            assert f"{O3_MINI}: " in body and "open regression" in body
            # its table of every open regression fits its dialog: no column behind a scrollbar
            page.locator("tr", has_text="open_regressions").get_by_text("Show Markdown").first.click()
            dialog = page.get_by_role("dialog")
            dialog.wait_for(timeout=60_000)
            widths = dialog.evaluate("d => [d.getBoundingClientRect().width, d.querySelector('table').scrollWidth]")
            page.screenshot(path=str(tmp_path / "open-regressions-table.png"))
            assert widths[1] <= widths[0], widths
            page.keyboard.press("Escape")
            dialog.wait_for(state="hidden", timeout=60_000)
            listed.click()  # click 2: the model's partition (its latest evaluation and check)
            page.wait_for_url(f"**partition={O3_MINI}**", timeout=120_000)
            page.get_by_text("comparisons", exact=True).first.wait_for(timeout=120_000)
            # the evaluation was logged after the import that feeds it: the UI does not call it unsynced
            assert "Unsynced" not in page.inner_text("body")
            # the partition's page says its check failed, in words, before any click
            assert "failed: " in page.inner_text("body") and "regression" in page.inner_text("body")
            row = page.locator("tr", has_text="comparisons").first
            row.get_by_text("Show Markdown").click()  # click 3: its comparisons table
            dialog = page.get_by_role("dialog")
            dialog.wait_for(timeout=60_000)
            table = dialog.inner_text()
            assert "correct_rate" in table and "−17.2 pts" in table and "regression" in table
            assert "MDE" in table and "adjusted p" in table and "look" in table  # explained above the table
            # the table fits its dialog: no column behind a scrollbar
            widths = dialog.evaluate("d => [d.getBoundingClientRect().width, d.querySelector('table').scrollWidth]")
            assert widths[1] <= widths[0], widths
            page.screenshot(path=str(tmp_path / "o3-mini.png"))
            # Typing a model's name in the catalog's search box finds it (a tag of the assets partitioned by it;
            # the search suggests tags, never partition keys)
            page.goto(f"{url}/assets", wait_until="networkidle", timeout=120_000)
            page.get_by_text("Asset name").first.wait_for(timeout=120_000)
            page.locator(".CodeMirror").first.click()
            page.keyboard.type("o3-mini")
            page.get_by_text(f"model/{O3_MINI}").first.wait_for(timeout=60_000)
            page.get_by_text(f"model/{O3_MINI}").first.click()  # the tag filter: the model's assets
            page.keyboard.press("Enter")
            page.wait_for_url("**asset-selection=tag*", timeout=60_000)
            page.get_by_text("blend / disparity").first.wait_for(state="hidden", timeout=60_000)  # filtered
            page.get_by_text("gapminder_evaluations").first.wait_for(timeout=60_000)
            # o3-mini's own entry among them reads red (its none_open failed)
            own = page.locator(f'a[href="/assets/models/{O3_MINI}"]').first
            own.locator("xpath=ancestor::div[contains(@class,'rowGrid')]").first.locator(
                '[aria-label="check_failed"]'
            ).first.wait_for(timeout=60_000)
            page.screenshot(path=str(tmp_path / "o3-mini-tag.png"))
            # The left bar's Search (⌘K) reads names, never tags or partition keys (docs/operations.md): it finds
            # the model by its own asset, models/<name>, whose page links its partition, where the check failed
            page.get_by_text("Search", exact=True).last.click()
            page.keyboard.type("o3-mini")
            results = page.locator('[class*="SearchResults_resultLink"]')  # the dialog's, not the catalog's rows
            found = results.filter(has_text=f"models / {O3_MINI}").first
            found.wait_for(timeout=60_000)
            assert f"models / {O3_MINI}" in results.first.inner_text()  # the best match
            page.screenshot(path=str(tmp_path / "o3-mini-search.png"))
            found.click()
            page.wait_for_url(f"**/assets/models/{O3_MINI}**", timeout=60_000)
            # The model's own page: its failed check, its last evaluation and its open regressions
            page.get_by_text("2025-03-06 (gapminder, imported (gapminder-results))").first.wait_for(timeout=60_000)
            page.get_by_text("Latest check results").first.wait_for(timeout=60_000)
            body = page.inner_text("body")
            assert "open_regressions" in body and "last_evaluated" in body
            # its evaluations' table fits its cell
            spill = page.evaluate(
                "() => [...document.querySelectorAll('td table')].map(t => t.getBoundingClientRect().right"
                " - t.closest('td').getBoundingClientRect().right)"
            )
            assert spill and max(spill) <= 1, spill
            page.screenshot(path=str(tmp_path / "o3-mini-model.png"), full_page=True)
            partition = page.locator(f'a[href="/assets/history/gapminder_evaluations?partition={O3_MINI}"]').first
            partition.wait_for(timeout=60_000)
            partition.click()
            page.wait_for_url(f"**partition={O3_MINI}**", timeout=60_000)
            page.get_by_text("comparisons", exact=True).first.wait_for(timeout=120_000)
            assert "failed: " in page.inner_text("body") and "regression" in page.inner_text("body")
            # The view geomon ui names first: the Overview's Assets, which counts per asset group the assets whose
            # checks failed (the history's, the monitor's and o3-mini's own); "/" opens the Overview's view last
            # opened in this browser (Dagster keeps it), so from now on the landing page is this one
            first, counted = where_to_look(url, load_settings(settings)).splitlines()
            assert counted == f"{opened} in 1 model: {O3_MINI} ({regressions}): {url}{OPEN}"
            page.goto(first.split()[2], wait_until="networkidle", timeout=120_000)
            for group in ("history", "monitor", "models"):
                row = page.locator(f'a:text-is("{group}")').locator("xpath=ancestor::div[contains(@class,'rowGrid')]")
                failed = row.first.locator(":scope > div").nth(2)  # group, missing, failed/overdue, …
                for _ in range(240):  # the counts load after the rows
                    if failed.inner_text().strip():
                        break
                    page.wait_for_timeout(500)
                assert failed.inner_text().strip() == "1", (group, row.first.inner_text())
            page.screenshot(path=str(tmp_path / "landing-assets.png"))
            page.goto(url, wait_until="networkidle", timeout=120_000)
            page.wait_for_url("**/overview/activity/assets", timeout=120_000)
            assert page.errors == []
