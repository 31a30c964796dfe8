"""A serving change of a bundled model decided through ``geomon run`` on the real model: Gemma-3-270m's Q4_K_M
file re-quantized by llama.cpp's llama-quantize, and the same file served again at temperature 0 (another seed,
so every answer is asked anew). Real llama-server, real answers, a loopback webhook for the alerts."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from geomon.cli import main
from geomon.engine.local import stop_kept_servers
from geomon.engine.quantize import QuantizeUnavailable, llama_quantize_command
from geomon_tests.conftest import write_settings
from geomon_tests.loopback import Webhook, serve

pytestmark = [pytest.mark.slow, pytest.mark.release, pytest.mark.llama]

SUITES = "worldbench,borderlines"  # a number and rank classification: the two cheapest scorings on a CPU
# BorderLines on 80 territories: its probability headlines have the clusters (53 with a known controller) a release
# that moves them little decides at the stated power (docs/serving-changes.md)
PROFILE = {"worldbench": {"sample_countries": 8}, "borderlines": {"sample_territories": 80, "personas": ["vanilla"]}}


def _requantizes_here() -> bool:
    """llama-quantize is built with the source engine; the prebuilt one (CPUs without AVX-512) has none."""
    try:
        llama_quantize_command()
    except QuantizeUnavailable:
        return False
    return True


REQUANTIZES = _requantizes_here()
NO_QUANTIZE = "llama-quantize is not installed (the prebuilt engine): no re-quantized release here"
RELEASES = [
    *([{"name": "gemma3-270m-q2-k", "of": "gemma3-270m", "quantize": "Q2_K"}] if REQUANTIZES else []),
    {"name": "gemma3-270m-again", "of": "gemma3-270m", "params": {"seed": 7}},  # temperature 0 stays
    {"name": "gemma3-270m-kv-q8", "of": "gemma3-270m", "engine_flags": ["--cache-type-k", "q8_0"]},
]
RELEASED = ",".join(release["name"] for release in RELEASES)


def _run(path: Path, models: str) -> int:
    return main(
        ["--config", str(path), "run", "--profile", "small", "--suite", SUITES, "--models", models, "--lanes", "1"]
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory, wdi_snapshot_dir) -> dict[str, Any]:
    """The base, then both releases, through ``geomon run``; then the releases again (nothing new to say)."""
    from geomon.config import load_settings
    from geomon.monitor.history import MetricHistory

    tmp = tmp_path_factory.mktemp("serving")
    hook: dict[str, Any] = {"posts": []}
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        hook_url = stack.enter_context(serve(Webhook, hook))
        path = write_settings(
            tmp,
            wdi_snapshot_dir,
            profiles={"small": PROFILE},
            alerts={"webhook_url_env": "GEOMON_SERVING_HOOK", "webhook_style": "json"},
            engine={"slots": 1, "servers": 1},
        )
        doc = yaml.safe_load(path.read_text())
        doc["variants"] = RELEASES
        path.write_text(yaml.safe_dump(doc))
        env.setenv("DAGSTER_HOME", str(tmp))
        env.setenv("GEOMON_CONFIG", str(path))
        env.setenv("GEOMON_SERVING_HOOK", f"{hook_url}/hook")
        stack.callback(stop_kept_servers)
        screen = io.StringIO()
        statuses = [_run(path, "gemma3-270m")]
        with contextlib.redirect_stdout(screen):
            statuses.append(_run(path, RELEASED))
        first_posts = len(hook["posts"])
        statuses.append(_run(path, RELEASED))
        planned = io.StringIO()
        with contextlib.redirect_stdout(planned):
            plan_status = main(
                ["--config", str(path), "plan", "--profile", "small", "--suites", SUITES, "--models", RELEASED]
            )
    history = MetricHistory(load_settings(path).store_url)
    decided = {}
    for model in RELEASED.split(","):
        evaluations = history.evaluations(model=model)
        rows = history.comparisons(evaluations["evaluation_id"]).merge(evaluations[["evaluation_id", "suite"]])
        decided[model] = rows
    posts = [p["body"] for p in hook["posts"]]
    return {
        "statuses": statuses,
        "decided": decided,
        "posts": posts,
        "first_posts": first_posts,
        "screen": screen.getvalue(),
        "plan": (plan_status, planned.getvalue()),
    }


def test_the_pipeline_runs_and_stores_the_releases_verdicts_against_the_base(served) -> None:
    assert served["statuses"] == [0, 0, 0]
    for model, rows in served["decided"].items():
        assert set(rows["suite"]) == {"worldbench", "borderlines"}, model
        assert set(rows["against"]) == {"predecessor gemma3-270m"}, model


@pytest.mark.skipif(not REQUANTIZES, reason=NO_QUANTIZE)
def test_a_regression_of_the_requantized_file_is_delivered_once_naming_the_change(served) -> None:
    rows = served["decided"]["gemma3-270m-q2-k"]
    paged = rows[rows["verdict"] == "regression"]
    posts = [p for p in served["posts"] if p["kind"] == "regression" and p["model"] == "gemma3-270m-q2-k"]
    assert sorted(p["suite"] for p in posts) == sorted(set(paged["suite"]))  # one alert per suite that regressed
    for post in posts:
        assert "A serving change of gemma3-270m: weights re-quantized Q4_K_M → Q2_K." in post["summary"]
    assert len(served["posts"]) == served["first_posts"]  # the run again tells nobody anything new


# Rank classification's probabilities are the engine's floating point: llama.cpp's logits for the same prompt
# differ slightly with what its prompt cache held and how the tokens were batched (0.003–0.007 points on the mean
# seen, one territory moving, p 0.5); every answer and every yes/no score is the same.
PROBABILITIES = ("kb_probability", "claimant_probability")


def test_the_same_file_served_again_at_temperature_zero_gives_p_one_and_pages_nobody(served) -> None:
    rows = served["decided"]["gemma3-270m-again"]
    tested = rows[rows["p_value"].notna()]
    assert len(tested) > 0
    exact = tested[~tested["metric"].isin(PROBABILITIES)]
    assert (exact["p_value"] == 1.0).all(), exact[["metric", "breakdown", "p_value"]]
    # the same answers: no change but the float noise of averaging them in another order (1e-12 seen)
    assert (exact["change"].fillna(0.0).abs() < 1e-9).all()
    soft = tested[tested["metric"].isin(PROBABILITIES)]
    assert len(soft) and (soft["change"].abs() < 0.05).all(), soft[["metric", "breakdown", "change"]]
    assert not any(p["model"] == "gemma3-270m-again" for p in served["posts"])


def test_the_run_closes_with_each_releases_verdicts_per_suite(served) -> None:
    """What `geomon run` prints last for a serving change: the release, what changed, and per suite (and
    BorderLines' revision) how many comparisons were decidable, with what the rest lacked."""
    screen = served["screen"]
    heads = ["Release gemma3-270m-kv-q8 vs gemma3-270m (predecessor) — engine flags --cache-type-k q8_0:"]
    if REQUANTIZES:
        heads.append("Release gemma3-270m-q2-k vs gemma3-270m (predecessor) — weights re-quantized Q4_K_M → Q2_K:")
    for head in heads:
        assert head in screen
        block = screen.split(head, 1)[1].split("\n\n", 1)[0].splitlines()
        assert any(line.startswith("  worldbench (") and " comparisons decidable; " in line for line in block)
        assert any(line.startswith("  borderlines (") for line in block)
    assert "Release gemma3-270m-again vs gemma3-270m (predecessor) — seed default → 7:" in screen


def test_a_release_that_moves_answers_little_is_decided_per_headline_and_region(served) -> None:
    """The same file served with 8-bit attention keys: BorderLines' probabilities on the controller move a little
    per territory, so on 53 territories their overall comparisons are decidable at the stated power (MDE below the
    5-point minimum effect) and get a verdict that is a claim; the run closes naming them with change, MDE and p,
    and `geomon plan` afterwards plans the release from that decision (paired) and names what it decides."""
    rows = served["decided"]["gemma3-270m-kv-q8"]
    ours = rows[
        (rows["suite"] == "borderlines")
        & (rows["metric"] == "kb_probability")
        & (rows["breakdown"] == "persona=vanilla")
    ]
    assert len(ours) and (ours["decidability"].fillna("") == "").all(), ours[["mde", "decidability", "note"]]
    assert (ours["mde"] <= ours["min_effect"]).all() and (ours["clusters"] >= 30).all()
    head = "Release gemma3-270m-kv-q8 vs gemma3-270m (predecessor) — engine flags --cache-type-k q8_0:"
    block = served["screen"].split(head, 1)[1].split("\n\n", 1)[0]
    assert "kb_probability (persona=vanilla)" in block and "MDE" in block
    status, planned = served["plan"]
    assert status == 0
    line = next(line for line in planned.splitlines() if line.startswith("Release gemma3-270m-kv-q8"))
    assert "borderlines kb_probability (persona=vanilla)" in line and "planned from its last decision (paired)" in line
