"""BLEnD's declaration (``suites/blend/__init__.py``): what versions its stages."""

from __future__ import annotations


def test_the_stages_that_score_are_versioned_by_the_code_that_reads_a_reply():
    """BLEnD's answer rate reads hedges with `geomon.parsing` and replies through `geomon.untrusted`: an edit to them
    marks its scores and its tracked stage stale, so `geomon run` scores the answers again instead of calling the
    suite unchanged (an audit's finding: the tracked stage was versioned by blend.py alone)."""
    from geomon import parsing, untrusted
    from geomon.suites import registry
    from geomon.suites.blend import lemmatisers, scoring

    pipeline = registry.suite("blend").pipeline
    for name in ("scores", "disparity"):
        # the folder's rooms that read a reply too, now that the suite is a folder and not one module
        assert {parsing, untrusted, lemmatisers, scoring} <= set(pipeline.stage(name).versioned_by), name
