"""The documentation site builds in MkDocs' strict mode: a broken link, an anchor that does not exist or a
page left out of the navigation fails; the generated reference pages hold what the code says."""

from __future__ import annotations

import re
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
    claim names the test that holds it (a published history's first look too), the numbers it states are the
    settings' defaults, and the claims the code no longer makes (a late earlier-dated evaluation at the reserve, a
    re-decision after a changed baseline at the reserve, a file compared on its shared items alone, Gapminder's
    published o3-mini vs o1 at the reserve) are gone."""
    from geomon.stats.verdicts import VerdictSettings

    text = " ".join((REPO / "docs" / "monitoring.md").read_text().split())
    tests = (REPO / "geomon_tests" / "monitor" / "test_release.py").read_text()
    defaults = VerdictSettings()
    claims = {
        "a look belongs to the release-order pair, never to the decision that arrives first": (
            "test_the_first_look_is_the_release_orders_in_all_24_orders_of_four_files"
        ),
        "**One finding, one page**": "test_the_first_look_is_the_release_orders_in_all_24_orders_of_four_files",
        "**A published history takes the first look**": (
            "test_a_published_history_takes_the_release_order_first_look_whatever_its_dates"
        ),
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
        "a provisional decision, at the reserve's 0.005",  # Gapminder's o3-mini vs o1: a published history's
    ):
        assert stale not in text, stale


# Ways of saying what α a decision is taken at that the code no longer does: it decides at the look's α (the suite's
# share ÷ its scopes × 80 % for the first look or 20 % for the reserve), not at the suite's share.
STALE_SCHEME = (
    "holm at the suite's share",
    "holm at a suite's share",
    "holm at its share",
    "decided at its share",
    "decide it at the suite's share",
    "at the suite's share of the release's α over",
    "at each suite's share of the release's",
    "within the suite's share",
    "significant at the suite's share",
    "< the suite's share",
    "p < the share",
    "share it was decided at",
    "the suite's share of the release's α, which holm spends",
    "the suite's share of the release's α that ``p_adjusted`` is compared with",
    'sa.column("alpha", sa.float), # the suite\'s share',
    "the one uncertainty module every suite uses",
)
# Files other work was changing when the scheme was said once, each with the stale phrase it still holds: an entry
# goes when its file no longer says it (the test fails on an entry that is fixed, so none lingers).
STALE_PENDING: dict[str, str] = {}
SCHEME_SECTION = "monitoring.md#one-release-one-decision"


def _said(path: Path) -> str:
    """A file's text as it reads: comments and string literals continued over lines joined, spaces collapsed,
    lower case, one apostrophe."""
    text = re.sub(r"\n\s*#\s*", " ", path.read_text(encoding="utf-8").replace("’", "'"))
    return re.sub(r"\"\s*f?\"", "", " ".join(text.split())).lower()


def test_the_release_scheme_is_said_once_and_every_other_place_links_to_it():
    """The code decides at the look's α; one docstring (``stats/verdicts.py``) and one docs section (monitoring's
    "One release, one decision") describe the scheme, the pages that mention it link there, and no page, docstring,
    check description or column says the stale "Holm at the suite's share" (issue 62). Adding a benchmark says what
    a new suite does to the others' shares."""
    files = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *(REPO / "geomon").rglob("*.py")]
    found = {
        (str(path.relative_to(REPO)), phrase) for path in files for phrase in STALE_SCHEME if phrase in _said(path)
    }
    assert sorted(found - set(STALE_PENDING.items())) == []
    assert sorted(set(STALE_PENDING.items()) - found) == []  # fixed: remove its entry
    verdicts = _said(REPO / "geomon" / "stats" / "verdicts.py")
    assert "**the look's α** (``releaseplan.look``) is the one level a decision is taken at" in verdicts
    section = (REPO / "docs" / "monitoring.md").read_text(encoding="utf-8").split("#### One release, one decision")[1]
    assert "**the look's α**" in section.split("\n### ")[0]
    for page in ("README.md", "docs/architecture.md", "docs/serving-changes.md", "docs/getting-started.md"):
        assert SCHEME_SECTION in (REPO / page).read_text(encoding="utf-8"), page
    adding = _said(REPO / "docs" / "adding-a-benchmark.md")
    assert SCHEME_SECTION in adding and "every suite's share becomes 0.05 / 9" in adding
