"""BLEnD's source: the release read from the real snapshot (16 countries, the paper's templates), fetched over HTTP
(a loopback server serving its files) it reads as the snapshot does, and a broken file is an error naming it and
what is wrong."""

from __future__ import annotations

import json
import shutil

import pytest

from geomon.suites.blend import source
from geomon.suites.blend.lemmatisers import LANGUAGES
from geomon.suites.blend.prompts import build_prompts
from geomon_tests.loopback import file_server
from geomon_tests.suites.blend.conftest import BLEND

COUNTRIES = ("UK", "South_Korea")


def test_the_fetched_release_reads_as_the_snapshot(tmp_path):
    """The named countries' three files each, in the snapshot's layout, and nothing else."""
    with file_server(BLEND) as url:
        fetched = source.fetch_release(url, tmp_path / "release", COUNTRIES)
    files = sorted(str(p.relative_to(fetched)) for p in fetched.rglob("*") if p.is_file())
    assert files == sorted(
        f"{part}/{c}_{name}"
        for c in COUNTRIES
        for part, name in (("annotations", "data.json"), ("questions", "questions.csv"), ("prompts", "prompts.csv"))
    )
    mine, theirs = source.read_release(fetched, COUNTRIES), source.read_release(BLEND, COUNTRIES)
    assert mine.report == theirs.report and mine.templates == theirs.templates
    assert mine.questions.equals(theirs.questions) and set(mine.questions["country"]) == set(COUNTRIES)


def test_a_file_the_server_lacks_names_its_url(tmp_path):
    with file_server(BLEND / "annotations") as url, pytest.raises(source.BlendError, match=r"UK_data.json: HTTP 404"):
        source.fetch_release(url, tmp_path / "release", ("UK",))


def test_broken_files_are_errors_naming_the_file(tmp_path):
    for part in ("annotations", "questions", "prompts"):
        (tmp_path / part).mkdir()
        shutil.copy(BLEND / part / f"UK_{'data.json' if part == 'annotations' else part + '.csv'}", tmp_path / part)
    data = json.loads((tmp_path / "annotations" / "UK_data.json").read_text())
    qid = next(iter(data))
    data[qid]["annotations"][0]["count"] = "three"
    (tmp_path / "annotations" / "UK_data.json").write_text(json.dumps(data))
    with pytest.raises(source.BlendError, match=rf"UK_data.json: question {qid}: annotation 0 has count 'three'"):
        source.read_release(tmp_path, ("UK",))
    data[qid]["annotations"][0]["count"] = 1  # now fewer votes than the next answer
    (tmp_path / "annotations" / "UK_data.json").write_text(json.dumps(data))
    with pytest.raises(source.BlendError, match="not ordered by votes"):
        source.read_release(tmp_path, ("UK",))
    (tmp_path / "prompts" / "UK_prompts.csv").unlink()
    shutil.copy(BLEND / "annotations" / "UK_data.json", tmp_path / "annotations")
    with pytest.raises(source.BlendError, match=r"UK_prompts\.csv: missing"):
        source.read_release(tmp_path, ("UK",))


def test_the_release_has_16_countries_of_500_questions_and_the_papers_templates(release):
    assert release.report["questions"] == 16 * 500
    assert set(release.report["per_country"].values()) == {500}
    assert release.report["without_topic"] == 0
    # The release's translated placeholders are counted; the paper's templates have none.
    assert release.report["templates_without_placeholder"] == ["Algeria:pers-1", "Algeria:pers-2"]
    assert release.report["empty_question_text"] == ["China:New-en-04:question"]
    china = source.BlendRelease(
        release.questions[release.questions["question_id"] == "New-en-04"], release.templates, release.report
    )
    asked = build_prompts(china, ("inst-4",))
    assert "China|New-en-04|local" in asked.attrs["not_asked_empty_question"]
    assert set(asked.loc[asked["country"] == "China", "mode"]) == {"english"}
    assert {"inst-4", "pers-3"} <= set(release.templates["South_Korea"])
    assert set(release.questions["language"]) == set(LANGUAGES)  # 13 languages, each with a lemmatiser
    first = release.questions.iloc[0]
    assert first["annotations"][0]["count"] >= first["annotations"][-1]["count"]
