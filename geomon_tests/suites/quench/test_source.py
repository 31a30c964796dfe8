"""The QUENCH release: every real file read, the paper's counts, refusals that name the file, and the live
path (a repository archive served on loopback)."""

from __future__ import annotations

import io
import json
import shutil
import tarfile

import pandas as pd
import pytest

from geomon.suites.quench.source import COLUMNS, QuenchError, fetch_release, load_items, read_release
from geomon_tests.conftest import SHARED
from geomon_tests.loopback import file_server

ROOT = SHARED / "snapshots" / "quench"


@pytest.fixture(scope="module")
def items() -> pd.DataFrame:
    return load_items(ROOT)


def test_the_papers_counts_from_every_file(items):
    assert list(items.columns) == COLUMNS
    questions = items.drop_duplicates("question_id")
    # Table 2: 400 questions (70 Indic, 330 not) with 459 masked entities (80 Indic, 379 not).
    assert len(questions) == 400 and int(questions["indic"].sum()) == 70
    assert len(items) == 459 and int(items["indic"].sum()) == 80
    assert items["indic"].dtype == bool
    assert items["answer"].str.len().gt(0).all() and items["rationale"].str.len().gt(0).all()
    report = items.attrs["report"]
    assert report["questions_without_annotation"] == [] and report["annotations_without_question"] == []
    # Oddities counted, not dropped: one question has no theme; some variables are not spelled in the text.
    assert len(report["questions_without_themes"]) == 1 and len(report["variables_not_named_in_question"]) == 13


def test_matches_the_snapshots_own_flattening(items):
    derived = pd.read_json(ROOT / "_derived" / "quench_items.jsonl", lines=True)
    derived["question_id"] = derived["file"].str.removesuffix(".yml")
    merged = items.merge(derived, on=["question_id", "variable"], suffixes=("", "_derived"), validate="one_to_one")
    assert len(merged) == 459
    assert (merged["answer"] == merged["answer_derived"].str.strip()).all()
    assert (merged["indic"] == (merged["indic_derived"] == "Yes")).all()
    assert (merged["themes"].map(tuple) == merged["themes_derived"].map(tuple)).all()


def _copy(tmp_path, names):
    root = tmp_path / "release"
    for folder in ("Data_Store", "isIndicAnnotations"):
        (root / folder).mkdir(parents=True)
        for name in names:
            shutil.copy(ROOT / folder / name, root / folder / name)
    return root


NAMES = ["KViz Show S2E1 Q1.yml", "KViz Show S2E1 Q10.yml", "KViz Show S2E1 Q11.yml"]


def test_bad_files_are_refused_by_name(tmp_path):
    root = _copy(tmp_path, NAMES)
    (root / "Data_Store" / NAMES[0]).write_text("question: [unclosed\n")
    with pytest.raises(QuenchError, match=r"KViz Show S2E1 Q1.yml: not readable YAML"):
        load_items(root)
    (root / "Data_Store" / NAMES[0]).write_text("question: Who is X?\nvariables: [X]\n")
    with pytest.raises(QuenchError, match=r"Q1.yml: no variable_to_answer, variable_specific_rationale"):
        load_items(root)
    shutil.copy(ROOT / "Data_Store" / NAMES[0], root / "Data_Store" / NAMES[0])
    (root / "isIndicAnnotations" / NAMES[1]).write_text("id: KViz Show S2E1 Q10.yml\nindic: maybe\n")
    with pytest.raises(QuenchError, match=r"Q10.yml: indic must be 'Yes' or 'No'"):
        load_items(root)


def test_a_question_without_its_annotation(tmp_path):
    root = _copy(tmp_path, NAMES)
    (root / "isIndicAnnotations" / NAMES[2]).unlink()
    release = read_release(root)  # the asset reads it and the blocking check fails on the gap
    unannotated = release.items[release.items["indic"].isna()]
    assert release.unannotated == ["KViz Show S2E1 Q11"] and set(unannotated["question_id"]) == {"KViz Show S2E1 Q11"}
    with pytest.raises(QuenchError, match=r"1 question.s. have no isIndicAnnotations/ file: KViz Show S2E1 Q11"):
        load_items(root)


def test_fetch_release_from_the_repository_archive(tmp_path):
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for folder in ("Data_Store", "isIndicAnnotations"):
            for name in NAMES:
                tar.add(ROOT / folder / name, arcname=f"QUENCH-dd392cb/{folder}/{name}")
        tar.add(ROOT / "_derived" / "quench_items.jsonl", arcname="QUENCH-dd392cb/README.md")
    served = tmp_path / "served"
    served.mkdir()
    (served / "dd392cb.tar.gz").write_bytes(archive.getvalue())
    with file_server(served) as url:
        root = fetch_release(f"{url}/dd392cb.tar.gz", tmp_path / "fetched")
        with pytest.raises(QuenchError, match=r"missing.tar.gz: HTTP 404"):
            fetch_release(f"{url}/missing.tar.gz", tmp_path / "elsewhere")
    fetched = load_items(root)
    assert set(fetched["question_id"]) == {n.removesuffix(".yml") for n in NAMES}
    assert json.dumps(fetched["themes"].tolist())  # plain lists, as from the snapshot
