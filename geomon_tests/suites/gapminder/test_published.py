"""Gapminder's published results, read by the suite's own reader (``suites/gapminder/published.py``), which its
``Suite`` exposes: a broken rates file is an error naming the file, the line and the field; answers of a
configuration whose rates are not published are refused."""

from __future__ import annotations

import pytest

from geomon.suites import registry
from geomon.suites.gapminder import published, source
from geomon_tests.conftest import GAPMINDER_ENTITIES as ENTITIES
from geomon_tests.conftest import SHARED, published_gapminder


@pytest.fixture(scope="module")
def bank():
    return source.read_snapshot(SHARED / "snapshots" / "gapminder")


def test_the_suite_exposes_its_importer_and_a_suite_without_one_has_none():
    """The registry hands the command line, the settings and the Dagster layer Gapminder's importer by its kind,
    from the suite's folder (``published.IMPORTERS``), with the setting that names its folder."""
    assert dict(registry.suite("gapminder").importers) == {"gapminder-results": published.IMPORTERS[0]}
    assert registry.importers()["gapminder-results"] == ("gapminder", published.IMPORTERS[0])
    assert published.IMPORTERS[0].setting == "gapminder_results"  # geomon.yaml's key, as before
    assert registry.suite("worldbench").importers == {}


def test_the_importer_reads_the_folder_with_the_snapshots_configurations_or_the_ones_named(tmp_path, bank):
    """Each published configuration an evaluation: the model's name (its provider path's last part), dated by its
    first experiment, its publish date and vendor as published; the model configurations from the snapshot unless
    ``--entities`` names a file, and without either an error that says so."""
    from geomon.config import load_settings

    folder = published_gapminder(tmp_path, ["mc039", "mc046"])
    importer = published.IMPORTERS[0]
    settings = load_settings()
    read = importer.read(folder, settings, {})
    assert [(p.key, p.model) for p in read] == [(c.config_id, c.model_id.rsplit("/", 1)[-1]) for c in
                                                 published.configurations(folder, ENTITIES, bank)]  # fmt: skip
    assert all(p.evaluated_at and p.released and p.vendor for p in read)
    assert [p.key for p in importer.read(folder, settings, {"entities": str(ENTITIES)})] == ["mc039", "mc046"]
    settings.suite("gapminder").snapshot = None
    with pytest.raises(published.PublishedError, match="without one, --entities FILE"):
        importer.read(folder, settings, {})
    assert importer.models(settings) == ()  # nothing known before an import without the snapshot


def test_each_configuration_is_its_published_rates_and_its_complete_answers(tmp_path, bank):
    """Qwen 2.5 Max's per-answer file is complete: its rates and each prompt family's counts; Qwen 2 Max's holds 60
    of its questions: its rates alone, saying why; a configuration without a file: its rates alone."""
    folder = published_gapminder(tmp_path, ["mc026", "mc039", "mc046"], ("master_output_20250205.csv",))
    configs = {c.config_id: c for c in published.configurations(folder, ENTITIES, bank)}
    assert list(configs) == ["mc026", "mc039", "mc046"]
    rates = published.rates(folder)
    for config in configs.values():
        questions = config.items[config.items["family"].isna()]
        mine = rates[rates["model_configuration"] == config.config_id]
        assert sorted(questions["item"]) == sorted(mine["question"].astype(str))
    complete = [c for c in configs.values() if not c.note]
    assert complete and all(c.answers > 0 and c.items["family"].notna().any() for c in complete)
    assert configs["mc026"].note == published.RATES_ONLY and configs["mc026"].answers == 0


def test_published_rates_errors_name_the_file_line_and_field(tmp_path, bank):
    folder = published_gapminder(tmp_path / "published", ["mc047", "mc057"], ("master_output_20250208.csv",))
    wrong = folder / "ddf--datapoints--wrong_rate--by--question--model_configuration.csv"
    lines = wrong.read_text().splitlines()
    wrong.write_text("\n".join([*lines[:2], lines[2].rsplit(",", 1)[0] + ",120", *lines[3:]]) + "\n")
    with pytest.raises(published.PublishedError, match=r"wrong_rate.*, line 3: field wrong_rate: '120' is not a rate"):
        published.configurations(folder, ENTITIES, bank)
    wrong.write_text("\n".join(lines[:-1]) + "\n")  # the last pair's wrong rate is gone
    with pytest.raises(
        published.PublishedError, match=r"question \d+ of mc0\d\d has no rate in ddf--datapoints--wrong_rate"
    ):
        published.configurations(folder, ENTITIES, bank)
    wrong.unlink()
    with pytest.raises(published.PublishedError, match=r"wrong_rate--by--question--model_configuration.csv: missing"):
        published.configurations(folder, ENTITIES, bank)
    other = published_gapminder(tmp_path / "other", ["mc057"], ("master_output_20250208.csv",))
    with pytest.raises(published.PublishedError, match=r"answers of model configuration\(s\) \['mc047'\] whose"):
        published.configurations(other, ENTITIES, bank)
