"""The documentation site builds in MkDocs' strict mode: a broken link, an anchor that does not exist or a
page left out of the navigation fails; the generated reference pages hold what the code says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from geomon_tests import snapshot

REPO = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly_with_the_generated_reference(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "geomon import" in cli and "--blend-questions" in cli and "geomon history" in cli
    suites = (tmp_path / "site" / "reference" / "suites" / "index.html").read_text()
    assert all(name in suites for name in snapshot.expected()["suites"])
    settings = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text()
    assert "GEOMON_STORE_URL" in settings and "templates" in settings and "max_tokens" in settings
    assert "min_overlap" in settings and "undecidable_weight" in settings  # verdicts:, from VerdictSettings


def test_the_readme_is_a_page_and_the_docs_keep_no_diary():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        text = page.read_text().lower()
        for phrase in ("this session", "previous session", "last session", "on a slow day", "previous configuration"):
            assert phrase not in text, f"{page.relative_to(REPO)}: {phrase!r}"


def test_the_monitoring_pages_order_and_missing_item_claims_are_the_codes():
    """docs/monitoring.md says what the release decision does with arrival order and absent items (issue 60): each
    claim names the test that holds it, the numbers it states are the settings' defaults, and the claims the code no
    longer makes (a late earlier-dated evaluation at the reserve, a re-decision after a changed baseline at the
    reserve, a file compared on its shared items alone) are gone."""
    from geomon.stats.verdicts import VerdictSettings

    text = " ".join((REPO / "docs" / "monitoring.md").read_text().split())
    tests = (REPO / "geomon_tests" / "monitor" / "test_release.py").read_text()
    defaults = VerdictSettings()
    claims = {
        "a look belongs to the release-order pair, never to the decision that arrives first": (
            "test_the_first_look_is_the_release_orders_in_all_24_orders_of_four_files"
        ),
        "**One finding, one page**": "test_the_first_look_is_the_release_orders_in_all_24_orders_of_four_files",
        "**An absent item is an outcome**": "test_an_absent_item_is_an_unanswered_one_and_fails_the_check",
        "`--fail-on check` (the default) exits 3 when any item is missing": (
            "test_an_absent_item_is_an_unanswered_one_and_fails_the_check"
        ),
    }
    for claim, test in claims.items():
        assert claim in text, claim
        assert f"def {test}(" in tests, test
    assert f"at least {defaults.min_overlap:.0%}".replace("%", " %") in text and "`verdicts.min_overlap`" in text
    assert f"The **first look** ({1 - defaults.reserve:.0%}".replace("%", " %") in text
    assert f"**reserve** ({defaults.reserve:.0%}".replace("%", " %") in text
    for stale in (
        "is decided against the predecessor at the scope's reserve",
        "against a baseline that changed",
        "it is compared on the shared items",
        "whatever was decided provisionally before it",
    ):
        assert stale not in text, stale
