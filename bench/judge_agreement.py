"""What is a 135M/270M judge worth? The bundled models judge the real answers in Gapminder's
example_batch/ with the data's judge prompt; their verdicts are compared with the three commercial
judges' real verdicts on the same answers and with Gapminder's recorded grades.

    .venv/bin/python bench/judge_agreement.py [--max-tokens 384] [--free]

By default each judge's reply is held to the verdict letters at the server (llama.cpp's grammar), as the
suite asks; ``--free`` lets the judges reason first and reads their replies leniently (the old way).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd

from geomon.engine.registry import bundled_specs
from geomon.engine.runner import EngineOptions, ask
from geomon.engine.store import ResponseStore
from geomon.jury import JuryTask, convene, decide, letter_reader, parse_verdict
from geomon.suites import gapminder
from geomon.suites.gapminder.source import read_results, read_snapshot

SHARED = Path(__file__).resolve().parents[2] / "shared"
BATCH = SHARED / "snapshots" / "gapminder" / "example_batch"
REAL_JUDGES = ("gpt-4o", "claude-3-5", "gimini-1-5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--free", action="store_true", help="no constraint: reason, then a letter, read leniently")
    args = parser.parse_args()
    data = read_snapshot(SHARED / "snapshots" / "gapminder")
    prompts = gapminder.build_prompts(data, ["en-US"])
    recorded = read_results(SHARED / "reference" / "gapminder" / "results")
    rows = []
    for config in ("mc039", "mc040"):
        answers = [
            json.loads(line) for line in (BATCH / f"{config}-question_prompts-response.jsonl").read_text().splitlines()
        ]
        real = {}
        for judge in REAL_JUDGES:
            path = BATCH / f"{config}-question_prompts-response-eval-prompts-{judge}-response.jsonl"
            for line in path.read_text().splitlines():
                reply = json.loads(line)
                real.setdefault(reply["custom_id"].removesuffix("-correctness"), []).append(
                    data.judge_choices.get(parse_verdict(reply["content"], list(data.judge_choices)))
                )
        for answer in answers:
            _, question, variation = answer["custom_id"].split("-", 2)
            grade = recorded[
                (recorded["model"] == config)
                & (recorded["question_id"] == question)
                & (recorded["prompt_variation_id"] == variation)
            ]["grade"]
            rows.append(
                {
                    "prompt_id": f"{question}|{variation}",
                    "config": config,
                    "answer": answer["content"],
                    "real_jury": decide(real[answer["custom_id"]]).grade,
                    "recorded": grade.iloc[0] if len(grade) else None,
                }
            )
    table = pd.DataFrame(rows)
    selected = prompts.set_index("prompt_id").loc[table["prompt_id"]].reset_index()
    judge_texts = gapminder.judge_prompts(selected, list(table["answer"]), data.judge_prompt)
    judges = bundled_specs()
    with tempfile.TemporaryDirectory() as tmp:
        store = ResponseStore(f"sqlite:///{tmp}/judges.sqlite")
        started = time.monotonic()
        task = JuryTask(
            "grade",
            list(range(len(judge_texts))),
            judge_texts,
            letter_reader(data.judge_choices),
            choices=tuple(data.judge_choices),
        )
        result = convene(
            judges,
            [task],
            lambda judge, requests: ask(judge, requests, store, options=EngineOptions(slots=2))[0],
            max_tokens=args.max_tokens,
            constrain=not args.free,
        )
        verdicts, decisions = result.verdicts, result.decisions["grade"]
        seconds = time.monotonic() - started
    for judge in judges:
        mine = verdicts[verdicts["judge"] == judge.name].set_index("item")
        table[judge.name] = mine["verdict"].to_numpy()
    table["bundled_jury"] = decisions["grade"].to_numpy()
    print(table.drop(columns=["answer"]).to_string(index=False))
    names = ", ".join(j.name for j in judges)
    mode = "free replies, read leniently" if args.free else "replies held to the letters"
    print(f"\n{len(table)} answers, judges {names}, max_tokens {args.max_tokens}, {mode}, {seconds:.0f} s")
    readable = (verdicts["status"] == "read").mean()
    print(f"readable verdicts: {(verdicts['status'] == 'read').sum()}/{len(verdicts)} ({readable:.1%})")
    for column in (*[j.name for j in judges], "bundled_jury"):
        # A judge's column holds its verdicts (None: unreadable); the jury's holds grades (indecisive: none).
        decided = table[column].notna() & (table[column] != "indecisive")
        with_real = (decided & (table[column] == table["real_jury"])).sum()
        with_recorded = (decided & (table[column] == table["recorded"])).sum()
        print(
            f"{column:24s} decided {decided.sum()}/{len(table)}; agrees with the commercial jury on {with_real}, "
            f"with Gapminder's recorded grade on {with_recorded} of {table['recorded'].notna().sum()}"
        )
    print(
        f"commercial jury vs recorded grade: {(table['real_jury'] == table['recorded']).sum()}/"
        f"{table['recorded'].notna().sum()}"
    )


if __name__ == "__main__":
    main()
