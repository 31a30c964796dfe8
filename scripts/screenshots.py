"""Screenshots of what geomon's users look at, taken in headless Chromium at a laptop's width (1366 px).

The results index (var/results/index.html), every report and chart page under the results directory, and
the main pages of the Dagster UI (started here on a free port against the repository's Dagster instance,
the one `make run` and `make ui` use). Images go to var/screenshots/ (ignored by git); for each page the
script prints where its image is and how far it spills past the laptop's width (0 = fits).

    make screenshots                        # after `make run` (or a sample: make run ARGS="--sample 6 ...")
    .venv/bin/python scripts/screenshots.py --no-ui --out /tmp/shots

Needs Debian's chromium (apt-get install chromium) or GEOMON_CHROMIUM; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from geomon.config import load_settings
from geomon.report.browser import dagster_ui, headless_page, screenshot

REPO = Path(__file__).resolve().parents[1]
# The Dagster UI's pages a user of geomon opens most, and the text that says each has loaded.
UI_PAGES = [
    ("overview", "/overview/activity/timeline", "Timeline"),
    ("runs", "/runs", "Runs"),
    ("automation", "/automation", "Automation"),
    ("catalog", "/assets", "Catalog"),
    ("monitor-open-regressions", "/assets/monitor/open_regressions", "open_regressions"),
    ("gapminder-evaluations-checks", "/assets/history/gapminder_evaluations?view=checks", "no_regression"),
    ("lineage-worldbench", "/locations/geomon/asset-groups/worldbench", "worldbench"),
    ("worldbench-leaderboard", "/assets/worldbench/leaderboard", "leaderboard"),
    ("worldbench-scores-events", "/assets/worldbench/scores?view=events", "scores"),
    ("worldbank-indicators-checks", "/assets/worldbank/indicators?view=checks", "coverage_kept"),
    ("borderlines-concurrence", "/assets/borderlines/concurrence?view=events", "concurrence"),
    ("monitor-trends", "/assets/monitor/trends", "trends"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "var" / "screenshots")
    parser.add_argument("--no-ui", action="store_true", help="only the reports, not the Dagster UI")
    args = parser.parse_args()
    results = load_settings().results_dir
    pages = sorted(results.rglob("*.html"), key=lambda p: (p.name != "index.html", str(p)))
    if not pages:
        sys.exit(f"geomon: no reports under {results}; run `make run` first")
    print("| page | screenshot | spills past 1366 px by |")
    print("| --- | --- | --- |")
    with headless_page() as page:
        for html in pages:
            shot = args.out / "reports" / html.relative_to(results).with_suffix(".png")
            overflow = screenshot(page, html.as_uri(), shot)
            print(f"| {html.relative_to(results)} | {shot} | {overflow} px |")
        if not args.no_ui:
            home = Path(os.environ.get("DAGSTER_HOME", REPO))
            with dagster_ui(home, ["-w", str(REPO / "workspace.yaml")]) as url:
                for name, path, text in UI_PAGES:
                    shot = args.out / "ui" / f"{name}.png"
                    try:
                        overflow = screenshot(page, url + path, shot, wait_for_text=text)
                        page.wait_for_timeout(1500)  # graphs and charts finish laying out after the data arrives
                        page.screenshot(path=str(shot), full_page=True)
                        print(f"| UI {path} | {shot} | {overflow} px |")
                    except Exception as exc:  # one page that does not load must not hide the others
                        print(f"| UI {path} | not taken: {type(exc).__name__}: {str(exc).splitlines()[0]} | |")
        if page.errors:
            print("script errors in the pages: " + "; ".join(page.errors[:5]))


if __name__ == "__main__":
    main()
