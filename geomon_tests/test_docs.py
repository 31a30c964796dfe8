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


def test_the_readme_is_a_page_and_the_docs_keep_no_diary():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for page in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        text = page.read_text().lower()
        for phrase in ("this session", "previous session", "last session", "on a slow day", "previous configuration"):
            assert phrase not in text, f"{page.relative_to(REPO)}: {phrase!r}"
