"""``geomon plan``: the asks, what the store already holds, the time and cost at the measured pace, and each
headline's minimum detectable effect — without calling a model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from geomon import plan
from geomon.config import load_settings
from geomon.engine.client import GenerationResult
from geomon.engine.runner import model_identity
from geomon.engine.store import response_key
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import power
from geomon.suites import registry
from geomon_tests.conftest import write_settings


def test_a_plan_counts_asks_stored_answers_time_cost_and_mde(tmp_path, wdi_snapshot_dir):
    path = write_settings(
        tmp_path,
        wdi_snapshot_dir,
        models=[
            {
                "name": "paid",
                "kind": "chat",
                "base_url": "http://127.0.0.1:9/v1",  # never called
                "model_id": "paid",
                "price_input_per_million": 2.0,
                "price_output_per_million": 8.0,
            }
        ],
        include_bundled=False,
        engine={"concurrency": 4},
        profiles={"default": {"worldbench": {"sample_countries": 40}}},  # the suite's own default may change
    )
    settings = load_settings(path)
    spec = settings.model("paid")
    info = registry.suites()["worldbench"]
    store = settings.store()
    (first,) = plan.make_plan(settings, [spec], [info], "default", store, MetricHistory(settings.store_url))
    assert first.prompts == first.asks > 0 and first.stored == 0 and first.seconds is None and first.cost is None
    assert first.options["sample_countries"] == 40 and first.headlines[0].clusters == 40
    # mean_error lies in [0, 1]: the worst case is a coin flip per country on each side.
    mean_error = next(h for h in first.headlines if h.metric == "mean_error")
    se = math.sqrt(0.5) / math.sqrt(40)
    # One-sided at WorldBench's first look's α (six suites + two import slots) over the comparisons
    # that can page and are tested at this sample: 40 countries put mean_error and parse_rate in the family, but
    # no region or income group (each under 30 countries), and the gaps are shown, never paged. Without a stored
    # comparison their worst-case MDE is above the minimum effect: none is decidable at this profile.
    tested = [c.name for c in first.comparisons if c.in_family]
    assert tested == ["mean_error", "parse_rate"] and "clusters < 30" in first.comparisons[2].why
    assert not any(c.decidable for c in first.comparisons)
    assert first.comparisons[0].why == f"MDE {first.comparisons[0].mde:.3g} > min effect 0.03"
    level = settings.verdicts.alpha / 8 * 0.8 / 2  # the first look at its one scope: 80 % of its share
    assert plan.test_level(settings, "worldbench", 2) == pytest.approx(level)
    assert mean_error.mde == pytest.approx(power.minimum_detectable_effect(se, level, 0.8))
    # Ten answers stored (2 s each, 100 + 20 tokens): the plan knows the pace and what is left to ask.
    prompts, asking = plan.build_prompts(settings, "worldbench", first.options)
    requests = asking.requests(prompts, spec, settings)
    for request in requests[:10]:
        key = response_key(model_identity(spec), request, settings.cache_epoch)
        result = GenerationResult("42", prompt_tokens=100, completion_tokens=20, latency_s=2.0)
        store.put(key, spec.name, model_identity(spec), settings.cache_epoch, request, result, "openai")
    (again,) = plan.make_plan(settings, [spec], [info], "default", store, MetricHistory(settings.store_url))
    left = again.asks - 10
    assert again.stored == 10 and again.seconds == left * 2.0 / 4
    assert again.tokens == left * 120 and again.cost == (left * 100 * 2.0 + left * 20 * 8.0) / 1e6
    # The inverse: the countries a 0.05 change in mean error needs.
    need = plan.clusters_to_detect(mean_error.sd, 0.05, settings, "worldbench", 2)
    assert need > 40 and power.minimum_detectable_effect(mean_error.sd / math.sqrt(need), level, 0.8) <= 0.05


def test_the_plan_command_prints_asks_time_and_what_a_sample_detects(tmp_path, wdi_snapshot_dir, capsys):
    from geomon.cli import main

    path = write_settings(tmp_path, wdi_snapshot_dir)
    args = ["--config", str(path), "plan", "--suites", "worldbench,blend", "--profile", "quick", "--detect", "5"]
    assert main([*args, "--models", "smollm2-135m-instruct"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m-instruct" in out and "profile quick:" in out and "already stored" in out
    assert "To detect a change of 5" in out and "blend sem_b_local" in out and "sample_questions" in out
    # Every comparison production makes is counted, and those the quick sample cannot decide are named, with why.
    assert "comparisons not decidable at profile quick" in out and "sem_b_local (country=" in out
    assert "clusters < 30" in out


def test_geomon_run_asks_before_a_run_above_the_limits(tmp_path, wdi_snapshot_dir, monkeypatch, capsys):
    """On a terminal, a run whose plan is estimated above confirm_above_minutes waits for a yes; elsewhere it is not
    run and the message says how to confirm; --yes never asks."""
    import argparse
    import io

    from geomon.cli.plan import confirm_plan, run_plan

    path = write_settings(tmp_path, wdi_snapshot_dir, confirm_above_minutes=0.001)
    settings = load_settings(path)
    spec = settings.model("smollm2-135m-instruct")
    info = registry.suites()["worldbench"]
    store = settings.store()
    prompts, asking = plan.build_prompts(settings, "worldbench", settings.run_options("worldbench", "quick"))
    request = asking.requests(prompts, spec, settings)[0]
    result = GenerationResult("42", prompt_tokens=50, completion_tokens=5, latency_s=1.0)  # a pace is known
    store.put("pace", spec.name, model_identity(spec), "other-epoch", request, result, "llama.cpp")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    args = argparse.Namespace(profile="quick", yes=False)
    plans = run_plan(settings, [spec], [info], "quick", {})
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    monkeypatch.setattr("sys.stdout", Terminal())
    assert confirm_plan(settings, plans, args) is False
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    assert confirm_plan(settings, plans, args) is True
    assert confirm_plan(settings, plans, argparse.Namespace(profile="quick", yes=True)) is True
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # not a terminal: not run, and told how to confirm
    capsys.readouterr()
    assert confirm_plan(settings, plans, args) is False
    assert "above confirm_above_minutes 0.001" in capsys.readouterr().err and "--yes" in plan.CONFIRM_HOW


# The default profile as these tests size it (the suites' own, fitted to the bundled models, may change).
SMALL = {"default": {"blend": {"sample_questions": 8}, "gapminder": {"sample_questions": 40, "sample_variations": 5}}}


def test_the_plan_says_what_would_decide_each_comparison_against_the_budget(tmp_path, wdi_snapshot_dir, capsys):
    """At 8 BLEnD questions per country (no comparison stored: the worst case), the overall
    ``sem_b_local`` needs about 61 per country: within a budget of 20,000 asks the plan says to raise
    ``sample_questions``, under a budget of 1,000 it says the comparison is not decidable at this profile; a
    country needs more questions than BLEnD has, and a Gapminder topic with fewer than 30 questions in the whole
    bank is never decidable. Mutations caught: the budget comparison removed from ``SuitePlan.remedy``, the 2×
    rule removed from ``sufficiency.underpowered``."""
    from geomon.cli import main

    store = MetricHistory(f"sqlite:///{tmp_path / 'store.sqlite'}")
    infos = [registry.suites()[name] for name in ("blend", "gapminder")]
    outcomes = {}
    for budget in (20_000, 1_000):
        path = write_settings(tmp_path, wdi_snapshot_dir, budget={"asks_per_suite": budget}, profiles=SMALL)
        settings = load_settings(path)
        spec = settings.model("smollm2-135m-instruct")
        plans = plan.make_plan(settings, [spec], infos, "default", settings.store(), store, full_size=True)
        blend, gapminder = plans
        local = next(c for c in blend.comparisons if c.name == "sem_b_local")
        assert local.in_family and not local.decidable and local.why.startswith("MDE ")
        assert local.mde > 2 * local.min_effect == 10.0
        outcomes[budget] = blend.remedy(local)
        country = next(c for c in blend.comparisons if c.breakdown == "country=Greece")
        assert country.population == 500 and country.need > 500
        assert blend.remedy(country) == f"never decidable: needs {country.need:,} clusters, 500 in the whole benchmark"
        topic = next(c for c in gapminder.comparisons if c.breakdown == "topic=sdg-world-01")
        assert topic.population < 30 and gapminder.remedy(topic).startswith("never decidable: ")
    asks = math.ceil(blend.asks * local.need / local.clusters)
    value = math.ceil(8 * local.need / local.clusters)
    assert outcomes[20_000] == f"raise sample_questions to {value:,} (≈{asks:,} asks, within the budget 20,000)"
    assert outcomes[1_000] == f"not decidable at this profile: needs ≈{asks:,} asks > budget 1,000"
    # `geomon plan` names each comparison it cannot decide, why, and what would.
    assert main(["--config", str(path), "plan", "--suites", "blend", "--models", "smollm2-135m-instruct"]) == 0
    out = capsys.readouterr().out
    blind = len(blend.comparisons)  # every comparison, the English answer rate's too
    assert f"blend: {blind} of {blind} comparisons not decidable at profile default (240 asks; budget 1,000" in out
    assert f"  sem_b_local: {local.why}; not decidable at this profile: needs ≈{asks:,} asks > budget 1,000" in out
    assert "sem_b_local (country=Algeria, Assam," in out and "worst case for the metric's range" in out


def test_the_plan_measures_a_stored_evaluations_variance_before_assuming_the_worst(tmp_path, wdi_snapshot_dir):
    """With one BLEnD evaluation stored (no comparison yet: the bundled models after `make run`), each comparison's
    MDE is planned from that evaluation's own variance as production plans a comparison's (the baseline's bootstrap
    SE × √2, never below Agresti–Coull), not from the worst case its range allows: a model right on nine questions
    in ten needs fewer questions than a coin flip. Mutation caught: ``measured_spreads`` returning {}."""
    import pandas as pd

    from geomon.monitor import release
    from geomon.stats.verdicts import VerdictSettings

    rows = []
    for country in ("Greece", "Spain"):
        for q in range(40):
            right = 0.0 if q % 10 == 0 else 100.0
            for mode, asked_in in (("local", "local language"), ("english", "English")):
                rows.append((f"{country}|{q}|{mode}", f"{country}|{q}", right, country, mode, asked_in, 1.0))
    items = pd.DataFrame(rows, columns=["item", "question", "value", "country", "mode", "asked_in", "answered"])
    settings = load_settings(write_settings(tmp_path, wdi_snapshot_dir))
    history = MetricHistory(settings.store_url)
    tracked = registry.suite("blend").tracked
    figures = release.declared_figures("blend", tracked, items)
    run = EvaluationRun("blend", "smollm2-135m-instruct")
    release.track(history, run, figures, items, tracked, VerdictSettings(resamples=99))
    spec = settings.model("smollm2-135m-instruct")
    info = registry.suites()["blend"]
    (measured,) = plan.make_plan(settings, [spec], [info], "default", settings.store(), history)
    (worst,) = plan.make_plan(
        settings, [spec], [info], "default", settings.store(), MetricHistory("sqlite:///:memory:")
    )
    ours, theirs = (next(c for c in p.comparisons if c.name == "sem_b_local") for p in (measured, worst))
    assert ours.source == plan.MEASURED and theirs.source == plan.WORST_CASE
    assert ours.mde < 0.7 * theirs.mde  # a Bernoulli(0.9) per question: SD 30 × √2, not a coin flip's 70.7
    assert any(line.startswith("(the MDE of ") and plan.MEASURED in line for line in plan.blind_lines(measured))


def test_fit_raises_a_sample_until_it_decides_what_the_budget_allows(tmp_path, wdi_snapshot_dir, capsys):
    """``geomon plan --fit`` (``plan.fit``) raises BLEnD's questions per country until every comparison the budget
    allows is decidable and every one it can test is tested (≥ 30 clusters): at the fitted size no comparison
    says ``raise …``, and what stays blind says why (beyond the budget, or beyond the benchmark). A smaller budget
    fits a smaller sample, within it. Mutation caught: ``SuitePlan.wanted`` asking for nothing (the profile's
    size returned as fitted)."""
    from geomon.cli import main

    info = registry.suites()["blend"]
    history = MetricHistory("sqlite:///:memory:")
    fitted = {}
    for budget in (20_000, 1_500):
        path = write_settings(tmp_path, wdi_snapshot_dir, budget={"asks_per_suite": budget}, profiles=SMALL)
        settings = load_settings(path)
        spec = settings.model("smollm2-135m-instruct")
        fit = plan.fit(settings, info, "default", spec, settings.store(), history)
        start = settings.run_options("blend", "default")["sample_questions"]
        assert fit.option == "sample_questions" and fit.value > start and fit.plan.asks <= budget
        remedies = [fit.plan.remedy(c) for c in fit.plan.comparisons if not c.decidable]
        assert remedies and not any(r.startswith("raise ") for r in remedies)
        assert all(fit.plan.wanted(c) is None for c in fit.plan.comparisons)
        assert all(c.in_family for c in fit.plan.comparisons)  # every country tested: 30 questions fit both budgets
        fitted[budget] = fit
    assert fitted[1_500].value < fitted[20_000].value
    # The overall headline is decidable at the larger budget, beyond the smaller one.
    local = {b: next(c for c in f.plan.comparisons if c.name == "sem_b_local") for b, f in fitted.items()}
    assert local[20_000].decidable and not local[1_500].decidable
    assert fitted[1_500].plan.remedy(local[1_500]).startswith("not decidable at this profile: needs")
    assert main(["--config", str(path), "plan", "--suites", "blend", "--models", "smollm2-135m-instruct", "--fit"]) == 0
    out = capsys.readouterr().out
    assert f"profiles:\n  default:\n    blend: {{sample_questions: {fitted[1_500].value}}}  # ≈" in out


BUNDLED_SPREADS = Path(__file__).parent / "data" / "bundled_spreads.json"


def test_the_default_profile_decides_what_the_budget_allows_on_the_bundled_models(tmp_path, monkeypatch):
    """Each suite's ``default`` profile (what automation runs) is ``geomon plan --fit``'s size on each bundled
    model's measured variance (``scripts/fit_default_profile.py`` after `make run PROFILE=default`, the spreads
    kept in ``geomon_tests/data/bundled_spreads.json``): at it, every comparison the budget of asks can decide
    is decidable and every one it can test is tested, so no comparison's remedy says ``raise …``. A suite whose
    default is made smaller, or a budget raised without refitting, fails here."""
    import json

    measured = json.loads(BUNDLED_SPREADS.read_text())
    # The repository's geomon.yaml, as the script read it (SAGED's corpus, the snapshots), with a store of its own.
    monkeypatch.setenv("GEOMON_STORE_URL", f"sqlite:///{tmp_path / 'store.sqlite'}")
    monkeypatch.setenv("GEOMON_BUDGET_ASKS_PER_SUITE", str(measured["budget"]))
    monkeypatch.chdir(Path(__file__).parents[1])
    settings = load_settings("geomon.yaml")
    history = MetricHistory("sqlite:///:memory:")
    assert set(measured["suites"]) == set(registry.suites())  # every suite measured on the bundled models
    for suite, models in measured["suites"].items():
        info = registry.suites()[suite]
        for model, rows in models.items():
            spreads = {(metric, breakdown): power.Spread(*rest) for metric, breakdown, *rest in rows}
            spec = settings.model(model)
            fit = plan.fit(settings, info, "default", spec, settings.store(), history, spreads)
            default = settings.run_options(suite, "default").get(fit.option)
            assert fit.value == default, f"{suite} on {model}: default {fit.option} {default}, fitted {fit.value}"
            raise_ = [c.name for c in fit.plan.comparisons if fit.plan.remedy(c).startswith("raise ")]
            assert not raise_, f"{suite} on {model}: {raise_}"


def test_fit_stops_at_the_smallest_size_that_is_the_whole_benchmark(tmp_path, wdi_snapshot_dir, monkeypatch):
    """A comparison that always wants half as many countries again: the fit stops at the smallest
    ``sample_countries`` that asks every question — one fewer asks fewer — and says it is the whole benchmark; a
    profile already at 0 (every country) stays 0, never printed as ``{}``. Mutation caught: the bisection removed
    (a size past the benchmark, or the first one that reached it)."""
    monkeypatch.setattr(plan.SuitePlan, "wanted", lambda self, c: 1.5)
    settings = load_settings(write_settings(tmp_path, wdi_snapshot_dir, profiles={"default": {}}))
    info = registry.suites()["worldbench"]
    spec = settings.model("smollm2-135m-instruct")
    history = MetricHistory("sqlite:///:memory:")
    fit = plan.fit(settings, info, "default", spec, settings.store(), history)
    options = settings.run_options("worldbench", "default")
    whole = len(plan.build_prompts(settings, "worldbench", {**options, "sample_countries": 0})[0])
    fewer = len(plan.build_prompts(settings, "worldbench", {**options, "sample_countries": fit.value - 1})[0])
    assert fit.whole and fit.plan.prompts == whole > fewer
    assert "(the whole benchmark)" in fit.line() and fit.line().startswith(
        f"worldbench: {{sample_countries: {fit.value}}}"
    )
    every = load_settings(
        write_settings(tmp_path, wdi_snapshot_dir, profiles={"default": {"worldbench": {"sample_countries": 0}}})
    )
    zero = plan.fit(every, info, "default", spec, every.store(), history)
    assert zero.value == 0 and zero.whole and zero.line().startswith("worldbench: {sample_countries: 0}")


def test_a_grown_sample_asks_only_the_new_questions_and_a_shrunk_one_nothing(tmp_path, wdi_snapshot_dir):
    """Samples are nested: BLEnD answered at 2 questions per country, the plan at 3 counts every answer given as
    stored and asks only each country's third question; at 1 it asks nothing."""
    from geomon.stats.sampling import nested_sample

    path = write_settings(
        tmp_path,
        wdi_snapshot_dir,
        models=[{"name": "m", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "m"}],  # never called
        include_bundled=False,
    )
    settings = load_settings(path)
    spec, info, store = settings.model("m"), registry.suites()["blend"], settings.store()
    history = MetricHistory(settings.store_url)

    def planned(questions: int) -> plan.SuitePlan:
        options = {**settings.run_options("blend"), "sample_questions": questions}
        (one,) = plan.suite_plans(settings, [spec], info, "default", store, history, options=options)
        return one

    two = planned(2)
    prompts, asking = plan.build_prompts(settings, "blend", two.options)
    for request in asking.requests(prompts, spec, settings):  # every prompt of the sample of 2 answered
        key = response_key(model_identity(spec), request, settings.cache_epoch)
        store.put(
            key, spec.name, model_identity(spec), settings.cache_epoch, request, GenerationResult("tea"), "openai"
        )
    three = planned(3)
    assert three.stored == two.asks and 0 < three.to_ask < two.asks  # "90 (60 stored)", not "90 (0 stored)"
    assert planned(1).to_ask == 0 and planned(2).to_ask == 0
    # The order behind it: each sample is a prefix of the next, whatever the size.
    ids = [f"q{i}" for i in range(50)]
    assert all(set(nested_sample(ids, n, 7, "UK")) < set(nested_sample(ids, n + 3, 7, "UK")) for n in range(1, 40))
    assert nested_sample(ids, 5, 7, "UK") != nested_sample(ids, 5, 7, "Spain")  # each group its own order


def test_the_plan_states_each_mde_at_the_weighted_level_the_decision_gives_it():
    """``plan.first_levels``: a comparison whose spread lets it decide weighs 1, a hopeless one
    ``undecidable_weight``, as ``verdicts.decide`` weighs them — the decidable one is planned at the look's α /
    1.25, not α / 2. Mutation caught: the plan's levels unweighted."""
    settings = load_settings(None)
    strong = plan.Comparison("accuracy", "", 400, False, min_effect=5.0)
    hopeless = plan.Comparison("accuracy", "country=Peru", 40, False, min_effect=5.0)
    spreads = {id(strong): 20.0, id(hopeless): 300.0}  # per-cluster spread of the change
    levels = plan.first_levels([strong, hopeless], spreads, settings, "blend")
    look = plan.test_level(settings, "blend", 1)
    assert levels[id(strong)] == pytest.approx(look / 1.25)
    assert levels[id(hopeless)] == pytest.approx(look * 0.25 / 1.25)


def test_a_plan_of_borderlines_asks_every_persona_of_the_newest_table_and_every_revision(tmp_path, wdi_snapshot_dir):
    """`geomon plan` gives no flags: the personas come from the profile, else the prompts stage's declared default (a
    tuple, where `geomon run`'s flag is text) — every persona on the newest table and the first on the older ones, as
    a run; the quick profile asks the paper's own prompt (vanilla) only, as its flag does."""
    chat = [{"name": "m", "kind": "chat", "base_url": "http://127.0.0.1:9/v1", "model_id": "m"}]  # never called
    profiles = {"small": {"borderlines": {"sample_territories": 20}}}
    path = write_settings(tmp_path, wdi_snapshot_dir, models=chat, include_bundled=False, profiles=profiles)
    settings = load_settings(path)
    info, spec = registry.suites()["borderlines"], settings.model("m")
    history = MetricHistory(settings.store_url)
    (every,) = plan.make_plan(settings, [spec], [info], "small", settings.store(), history)
    assert list(every.options["personas"]) == ["vanilla", "un_peacekeeper", "nationalist", "demographic"]
    assert len(every.revision_answers) >= 2  # the dated tables the settings name
    (run,) = plan.make_plan(
        settings, [spec], [info], "small", settings.store(), history, flags={"borderlines": {"personas": "vanilla"}}
    )
    assert run.options["personas"] == ["vanilla"] and run.asks < every.asks
    (quick,) = plan.make_plan(settings, [spec], [info], "quick", settings.store(), history)
    assert list(quick.options["personas"]) == ["vanilla"]


def test_a_release_is_planned_again_from_its_last_decisions_paired_differences(tmp_path, wdi_snapshot_dir):
    """A serving change (a system-prompt variant) decided once on BLEnD, its answers the base's but for two
    questions, is planned again from that decision (``plan.paired_comparisons``: the MDE the decision stated, at its
    sample) — far below the plan for one model, which cannot know how little the pair differs; the base, never
    decided against anything, keeps the plan for one model. Mutation caught: ``paired_comparisons`` returning the
    plan's own comparisons."""
    import pandas as pd
    import yaml

    from geomon.monitor import release
    from geomon.stats.verdicts import VerdictSettings

    def blend_items(flipped: set[int]) -> pd.DataFrame:
        rows = []
        for country in ("Greece", "Spain"):
            for q in range(40):
                right = 100.0 * ((q % 2 == 0) != (q in flipped and country == "Spain"))
                for mode, asked_in in (("local", "local language"), ("english", "English")):
                    rows.append((f"{country}|{q}|{mode}", f"{country}|{q}", right, country, mode, asked_in, 1.0))
        return pd.DataFrame(rows, columns=["item", "question", "value", "country", "mode", "asked_in", "answered"])

    path = write_settings(tmp_path, wdi_snapshot_dir)
    doc = yaml.safe_load(path.read_text())
    doc["variants"] = [{"name": "smol-terse", "of": "smollm2-135m-instruct", "system_prompt": "Be terse."}]
    path.write_text(yaml.safe_dump(doc))
    settings = load_settings(path)
    history = MetricHistory(settings.store_url)
    tracked = registry.suite("blend").tracked
    for model, flipped in (("smollm2-135m-instruct", set()), ("smol-terse", {3, 7})):
        items = blend_items(flipped)
        run = EvaluationRun("blend", model, predecessor="smollm2-135m-instruct" if flipped else "")
        release.track(
            history, run, release.declared_figures("blend", tracked, items), items, tracked, VerdictSettings()
        )
    info = registry.suites()["blend"]
    specs = [settings.model(name) for name in ("smollm2-135m-instruct", "smol-terse")]
    base, variant = plan.make_plan(settings, specs, [info], "quick", settings.store(), history)
    one, paired = (
        next(c for c in cs if c.name == "sem_b_local")
        for cs in (variant.comparisons, plan.paired_comparisons(history, variant))
    )
    assert paired.source == plan.PAIRED and one.source != plan.PAIRED
    assert paired.mde < 0.5 * one.mde
    assert plan.paired_comparisons(history, base) == base.comparisons


def test_a_plan_counts_a_variant_whose_file_is_not_made_as_nothing_stored_and_makes_nothing(
    tmp_path, wdi_snapshot_dir, monkeypatch
):
    """The prompts asset plans every registered model: a re-quantized variant nobody asked is not re-quantized for
    it (on the prebuilt engine there is no llama-quantize, and making it would fail every suite's prompts), its asks
    count as not stored. Mutation caught: ``asked_keys`` with ``model_identity(spec)`` (making the file)."""
    monkeypatch.setenv("GEOMON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GEOMON_LLAMA_QUANTIZE", "false")  # making the file would fail, loudly
    path = write_settings(tmp_path, wdi_snapshot_dir)
    doc = yaml.safe_load(path.read_text())
    doc["variants"] = [{"name": "gemma3-270m-q3", "of": "gemma3-270m", "quantize": "Q3_K_S"}]
    path.write_text(yaml.safe_dump(doc))
    settings = load_settings(path)
    spec, info = settings.model("gemma3-270m-q3"), registry.suites()["blend"]
    options = {**settings.run_options("blend"), "sample_questions": 1}
    (one,) = plan.suite_plans(settings, [spec], info, "default", settings.store(), MetricHistory(settings.store_url),
                              options=options)  # fmt: skip
    assert one.asks > 0 and one.stored == 0
    assert model_identity(spec, make=False) == "unmade:gemma3-270m-q3"
    assert not (tmp_path / "cache" / "gguf").exists() or not any((tmp_path / "cache" / "gguf").iterdir())
