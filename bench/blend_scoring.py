"""BLEnD's soft exact match at scale: the paper's lemmatisers (the ``blend`` extra) against the named variant.

Scores a seeded sample of the real release's prompts (``inst-4``, local language and English) with replies no
annotated answer occurs in as written, so every answer goes through the lemmatiser (the slow path; a reply
that contains an answer is decided by the substring test first). Prints prompts per second per lemmatiser
set, the first-call cost (spaCy's model, Okt's JVM) and the time the paper-size set would take.

    .venv/bin/python bench/blend_scoring.py --sample 40
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from geomon.suites.blend import lemmatisers
from geomon.suites.blend.prompts import build_prompts
from geomon.suites.blend.scoring import score
from geomon.suites.blend.source import read_release

RELEASE = Path(__file__).resolve().parents[1].parent / "shared" / "snapshots" / "blend"
REPLIES = ["Most people there would say it depends on the family and the region.", "家庭によって違います", "모르겠어요"]


def timed(prompts: pd.DataFrame) -> float:
    replies = [REPLIES[i % len(REPLIES)] for i in range(len(prompts))]
    started = time.perf_counter()
    score(prompts, pd.DataFrame({"text": replies, "error": [None] * len(replies)}), "bench")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sample", type=int, default=40, help="questions per country (0 = the paper's all)")
    args = parser.parse_args()
    release = read_release(RELEASE, ())
    prompts = build_prompts(release, ("inst-4",), args.sample, 0)
    paper_size = len(build_prompts(release, ("inst-4",), 0, 0))
    papers = dict(lemmatisers._PAPER)
    unavailable: dict[str, str] = {}
    for label, variant in (("paper's lemmatisers", False), ("variant only", True)):
        lemmatisers.lemmatiser.cache_clear()
        lemmatisers._lemmatised.cache_clear()
        if variant:
            lemmatisers._PAPER.update({lang: (name, None) for lang, (name, _) in papers.items() if lang != "Chinese"})
        started = time.perf_counter()
        loaded = {language: lemmatisers.lemmatiser(language) for language in lemmatisers.LANGUAGES}
        loading = time.perf_counter() - started
        if not variant:
            unavailable = {lang: used.unavailable for lang, used in loaded.items() if used.unavailable}
        seconds = timed(prompts)
        rate = len(prompts) / seconds
        print(
            f"{label}: {len(prompts)} prompts in {seconds:.1f} s ({rate:.0f} prompts/s; loading {loading:.1f} s); "
            f"the paper-size set ({paper_size} prompts) ≈ {paper_size / rate / 60:.1f} min"
        )
        lemmatisers._PAPER.update(papers)
    print(f"paper's lemmatisers unavailable: {unavailable or 'none'}")


if __name__ == "__main__":
    main()
