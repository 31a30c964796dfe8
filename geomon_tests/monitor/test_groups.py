"""The alarm watches the groups people care about, through each suite's own declarations and the path that
records, decides and announces (``release.track`` with the announcer): a group that gets worse pages by
name; a gap that widens because the best group improved is shown (``disparity widened``) and pages nobody."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from geomon.monitor import alerts, announce, release, views
from geomon.monitor.history import EvaluationRun, MetricHistory
from geomon.stats import compare, power, verdicts
from geomon.suites import blend, borderlines, gapminder, quench, saged, worldbench
from geomon_tests.loopback import Webhook, serve

REGIONS = [f"R{i}" for i in range(4)]


def _worldbench(shift: dict[str, float], silent: str = "") -> pd.DataFrame:
    """40 countries per region, 11 questions each; region i's countries err 0.1 + 0.1 i on average, moved by
    ``shift``; the ``silent`` region's questions go unanswered (no number read)."""
    rows = []
    for r, region in enumerate(REGIONS):
        for c in range(40):
            error = 0.1 + 0.1 * r + 0.002 * c + shift.get(region, 0.0)
            answered = 0 if region == silent else 11
            rows.append((f"{region}-{c}", region, ["low", "high"][c % 2], error * answered, answered, answered, 11))
    columns = ["item", "region", "income_group", "error_sum", "answers", "answered", "asked"]
    return pd.DataFrame(rows, columns=columns)


def _quench(indic_drop: float = 0.0, silent: str = "") -> pd.DataFrame:
    """80 questions, every other one Indic; ``silent`` (Indic or non-Indic) questions go unanswered."""
    rows = []
    for q in range(80):
        indic = q % 2 == 0
        group = "Indic" if indic else "non-Indic"
        correct = 1.0 if q % 3 else 0.0
        if indic and q % 3 and q < 40 * indic_drop * 2:
            correct = 0.0
        answered = group != silent
        rows.append((f"e{q}|normal", str(q), "normal", correct if answered else np.nan, float(answered), indic, group))
    return pd.DataFrame(rows, columns=["item", "question_id", "mode", "correct", "answered", "indic", "questions"])


def _saged(worse: str = "", by: float = 0.0, silent: str = "") -> pd.DataFrame:
    rows = []
    for root in range(40):
        for concept in ("Kenya", "Peru", "Japan"):
            value = 0.2 + 0.01 * (root % 5) - (by if concept == worse else 0.0)
            answered = concept != silent
            rows.append(
                (f"none|r{root}|{concept}", value if answered else np.nan, float(answered), concept, "none", f"r{root}")
            )
    return pd.DataFrame(rows, columns=["item", "value", "answered", "concept", "role", "root"])


def _borderlines(drifts: str = "", silent: str = "", failed: str = "") -> pd.DataFrame:
    """The suite's own tracked rows (``borderlines.items``) of 60 territories, each claimed by two of three
    countries (languages es, fr, zh; FR controls) and asked in its claimants' languages and English; in the
    ``drifts`` language half the answers that named the controller name another claimant; in the ``silent`` one
    nothing is answered; in the ``failed`` one every request fails (an outage, not the model)."""
    countries = {"ES": {"Lang_Code": "es"}, "FR": {"Lang_Code": "fr"}, "ZH": {"Lang_Code": "zh"}}
    codes = ("ES", "FR", "ZH")
    rows = []
    for t in range(60):
        claimants = [codes[t % 3], codes[(t + 1) % 3]]
        other = next(c for c in claimants if c != "FR") if "FR" in claimants else claimants[1]
        for lang in {countries[c]["Lang_Code"] for c in claimants} | {"en"}:
            answer = "FR" if (t + len(lang)) % 4 else other
            if lang == drifts and answer == "FR" and t % 2:
                answer = other
            rows.append(
                {
                    "territory": f"T{t}",
                    "controller": "FR",
                    "claimants": claimants,
                    "lang": lang,
                    "persona": "vanilla",
                    "answer": None if lang in (silent, failed) else answer,
                    "error": "HTTP 503" if lang == failed else None,
                }
            )
    return borderlines.items(pd.DataFrame(rows), countries)


def _gapminder(silent: str = "", worse_family: str = "", hesitant_family: str = "") -> pd.DataFrame:
    """The suite's own tracked rows (``gapminder.items``) of graded answers: 40 questions per topic, each asked
    five times in each of two prompt families; in the ``silent`` topic the model commits to no option; under
    the ``worse_family`` wording a third of its right answers turn wrong; under the ``hesitant_family`` wording a
    third of all its answers commit to no option."""
    rows = []
    for topic in ("sdg-01", "sdg-02"):
        for q in range(40):
            for family in ("plain", "persona"):
                for k in range(5):
                    grade = "correct" if q % 3 else "wrong"
                    if family == worse_family and grade == "correct" and (q + k) % 3 == 0:
                        grade = "wrong"
                    hesitant = family == hesitant_family and (q + k) % 3 == 0
                    grade = "indecisive" if topic == silent or hesitant else grade
                    rows.append(("m", f"{topic}-q{q}", topic, family, grade))
    return gapminder.items(pd.DataFrame(rows, columns=["model", "question_id", "topic", "family", "grade"]))


def _blend(worse: str = "", drop: int = 0, silent: str = "", silent_mode: str = "local") -> pd.DataFrame:
    """The suite's own tracked rows (``blend.items``) of scored replies: 40 questions per country, each asked in
    the local language and in English, every third one answered wrong; in the ``worse`` country the first
    ``drop`` questions' local answers turn wrong; in the ``silent`` country the replies in ``silent_mode`` (local,
    english) to the questions it got wrong become empty or "I don't know" — a miss either way, so no SEM-B figure
    moves, only the answer rate."""
    rows = []
    for country in ("KE", "PE"):
        for q in range(40):
            right = 100.0 if q % 3 else 0.0
            for mode, asked_in in (("local", "local language"), ("english", "English")):
                sem_b = 0.0 if mode == "local" and country == worse and q < drop else right
                hedges = mode == silent_mode and country == silent and not sem_b
                rows.append(
                    {
                        "prompt_id": f"{country}|{q}|{mode}",
                        "country": country,
                        "question_id": str(q),
                        "mode": mode,
                        "asked_in": asked_in,
                        "sem_b": sem_b,
                        "status": "unanswered" if hedges else "answered",
                    }
                )
    return blend.items(pd.DataFrame(rows))


@pytest.fixture
def told(tmp_path, monkeypatch):
    state: dict = {"posts": []}
    with serve(Webhook, state) as url:
        monkeypatch.setenv("GEOMON_TEST_GROUP_HOOK", f"{url}/hook")
        settings = alerts.AlertSettings(webhook_url_env="GEOMON_TEST_GROUP_HOOK", webhook_style="json")
        yield state, announce.announcer(settings)


def _track(history, run, items, tracked, settings, **options) -> release.Tracked:
    """``release.track`` with the declared figures of ``items``, as the factory records a suite's evaluation."""
    figures = release.declared_figures(run.suite, tracked, items)
    return release.track(history, run, figures, items, tracked, settings, **options)


def _release(tmp_path, suite, tracked, before, after, announcer):
    history = MetricHistory(f"sqlite:///{tmp_path / f'{suite}.sqlite'}")
    settings = verdicts.VerdictSettings(resamples=999)
    common = {"settings": settings, "announcer": announcer}
    _track(history, EvaluationRun(suite, "old"), before, tracked, **common)
    out = _track(history, EvaluationRun(suite, "new", predecessor="old"), after, tracked, **common)
    return {v.key: vars(v) for v in out.verdicts}


@pytest.mark.parametrize(
    ("suite", "tracked", "before", "after", "paged"),
    [
        ("worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({"R1": 0.15}), ("mean_error", "region=R1")),
        ("worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({}, silent="R2"), ("parse_rate", "region=R2")),
        ("quench", quench.TRACKED, _quench(), _quench(0.5), ("correct_answer_score", "questions=Indic")),
        ("saged", saged.TRACKED, _saged(), _saged("Peru", 0.1), ("sentiment_mean_calibrated", "concept=Peru")),
        ("blend", blend.TRACKED, _blend(), _blend("PE", 30), ("sem_b_local", "country=PE")),
        ("gapminder", gapminder.TRACKED, _gapminder(), _gapminder("sdg-02"), ("indecisive_rate", "topic=sdg-02")),
        (
            "gapminder",
            gapminder.TRACKED,
            _gapminder(),
            _gapminder(worse_family="persona"),
            ("correct_rate", "family=persona"),
        ),
        (
            "borderlines",
            borderlines.TRACKED,
            _borderlines(),
            _borderlines(drifts="zh"),
            ("claimant_concurrence", "persona=vanilla,lang=zh"),
        ),
        # A model that stops answering one group's questions: its scores are over what it answered, so only the
        # answer rate can tell, and it pages by name.
        ("quench", quench.TRACKED, _quench(), _quench(silent="Indic"), ("answered_rate", "questions=Indic")),
        ("saged", saged.TRACKED, _saged(), _saged(silent="Peru"), ("answered_rate", "concept=Peru")),
        ("blend", blend.TRACKED, _blend(), _blend(silent="PE"), ("answered_rate", "country=PE")),
        (
            "blend",
            blend.TRACKED,
            _blend(),
            _blend(silent="PE", silent_mode="english"),
            ("answered_rate", "mode=english,country=PE"),
        ),
        (
            "gapminder",
            gapminder.TRACKED,
            _gapminder(),
            _gapminder(hesitant_family="persona"),
            ("indecisive_rate", "family=persona"),
        ),
        (
            "borderlines",
            borderlines.TRACKED,
            _borderlines(),
            _borderlines(silent="es"),
            ("answered_rate", "persona=vanilla,lang=es"),
        ),
    ],
)
def test_a_group_that_gets_worse_pages_by_name(tmp_path, told, suite, tracked, before, after, paged):
    state, announcer = told
    decided = _release(tmp_path, suite, tracked, before, after, announcer)
    assert decided[paged]["verdict"] == verdicts.REGRESSION, decided[paged]
    (post,) = [p["body"] for p in state["posts"]]
    assert post["kind"] == "regression" and f"{paged[0]} ({paged[1]})" in post["title"]
    disparities = [v for v in decided.values() if v["breakdown"] == "" and v["metric"] != paged[0]]
    assert all(v["verdict"] != verdicts.REGRESSION for v in disparities)  # gaps are shown, never paged


def test_the_best_group_improving_pages_nobody(tmp_path, told):
    """WorldBench's best region (least error) gets 0.10 better: the regional gap widens — shown as
    ``disparity widened``, naming the region that moved — and the region's own test is an improvement."""
    state, announcer = told
    decided = _release(
        tmp_path, "worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({"R0": -0.08}), announcer
    )
    gap = decided[("region_disparity_mean", "")]
    assert gap["verdict"] == verdicts.WIDENED and gap["change"] == pytest.approx(0.08)
    assert "region=R0" in gap["note"]
    assert decided[("mean_error", "region=R0")]["verdict"] == verdicts.IMPROVEMENT
    assert not [v for v in decided.values() if v["verdict"] == verdicts.REGRESSION]
    assert state["posts"] == []
    # `geomon history` shows the comparison's note beside the figure (which group moved).
    history = MetricHistory(f"sqlite:///{tmp_path / 'worldbench.sqlite'}")
    table = views.history_table(history, "worldbench", [("region_disparity_mean", "")])
    row = table[table["model"] == "new"].iloc[0]
    assert row["verdict"] == verdicts.WIDENED and "moved most: region=R0" in row["note"] and row["alpha"] > 0


def test_a_gap_rests_on_its_smallest_group_and_is_bootstrapped_within_groups():
    """A range over groups counts its smallest group's clusters (the sample the between-group claim rests on),
    and its bootstrap keeps every group in every resample: never missing a two-country region."""
    from geomon.stats.bootstrap import estimates
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Mean, Range

    frame = pd.DataFrame(
        {
            "item": [f"c{i}" for i in range(62)],
            "region": ["small"] * 2 + ["big"] * 60,
            "value": [0.9, 0.8, *np.linspace(0.1, 0.3, 60)],
        }
    )
    (gap,) = estimates(TrackedMetric("gap", Range(Mean("value"), "region"), higher_is_worse=True), frame, resamples=500)
    assert gap.clusters == 2  # the small region's two countries, not 62
    assert gap.ci_low > 0.5  # both regions in every resample: the gap never collapses to NaN or 0


def test_the_stated_mde_is_never_zero_for_an_unchanged_pair(tmp_path):
    """Temperature-0 answers that do not change have a sign-flip null of no spread (an MDE read off it alone is 0),
    and a changed release's null spreads with the clusters that moved. The MDE is planned from the pair's paired
    differences with a worsening of the minimum effect added (``power.paired_se``): for an unchanged release that
    worsening alone (in clusters moving across the metric's range), for a changed one more. Mutation caught: the
    MDE read off the null of the new data alone (0 for the unchanged)."""
    settings = verdicts.VerdictSettings(resamples=199)
    decided = []
    for name, after in (("same", _blend()), ("changed", _blend("PE", 30))):
        history = MetricHistory(f"sqlite:///{tmp_path / f'{name}.sqlite'}")
        _track(history, EvaluationRun("blend", "old"), _blend(), blend.TRACKED, settings)
        out = _track(history, EvaluationRun("blend", "new", predecessor="old"), after, blend.TRACKED, settings)
        decided.append({v.key: vars(v) for v in out.verdicts})
    same, changed = decided
    unchanged = same[("sem_b_local", "")]
    assert unchanged["verdict"] == verdicts.NO_CHANGE and unchanged["p_value"] == 1.0
    assert unchanged["mde"] > 5
    assert changed[("sem_b_local", "")]["mde"] > 5
    peru = ("sem_b_local", "country=PE")
    assert changed[peru]["mde"] > same[peru]["mde"] > 0 and changed[peru]["power"] < same[peru]["power"]


def test_a_small_groups_interval_is_never_narrower_than_its_clusters_allow():
    """Five questions, all answered right: the percentile bootstrap says [100, 100]; the interval is at least
    the Wilson interval over five clusters (about [57, 100])."""
    from geomon.stats.bootstrap import estimates
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Mean

    frame = pd.DataFrame({"item": [f"q{i}" for i in range(5)], "value": [100.0] * 5})
    (small,) = estimates(TrackedMetric("acc", Mean("value"), bounds=(0, 100)), frame)
    assert small.value == 100 and small.ci_high == pytest.approx(100) and 50 < small.ci_low < 60


def test_an_undefined_group_carries_its_groups_name(tmp_path, told):
    """A region with no answers left has no mean error: its undefined comparison is recorded under the name its
    value has (``mean_error``, ``region=R2``), not the range's."""
    _, announcer = told
    decided = _release(tmp_path, "worldbench", worldbench.TRACKED, _worldbench({}), _worldbench({}, "R2"), announcer)
    assert decided[("mean_error", "region=R2")]["verdict"] == verdicts.UNDEFINED
    assert ("region_disparity_mean", "region=R2") not in decided


def test_an_outage_is_not_a_model_that_stopped_answering(tmp_path, told):
    """Every request in one claimant language failed (a provider outage): failed requests are left out of the
    answer rate, so nothing pages; a model that leaves them unanswered pages (the parametrized case above).
    Mutation caught: a failed request counted as not answered."""
    state, announcer = told
    decided = _release(
        tmp_path, "borderlines", borderlines.TRACKED, _borderlines(), _borderlines(failed="es"), announcer
    )
    assert decided[("answered_rate", "persona=vanilla,lang=es")]["verdict"] == verdicts.UNDEFINED
    assert not [v for v in decided.values() if v["verdict"] == verdicts.REGRESSION]
    assert state["posts"] == []


def test_borderlines_queries_are_clustered_on_their_territory():
    """BorderLines' per-query rows are clustered on their territory: the answer rate's and the concurrence's sample
    is the territories, never the queries. Mutation caught: clustered on the row (item)."""
    from geomon.stats.bootstrap import estimates

    rows = _borderlines()
    found = {(e.metric, e.breakdown): e for m in borderlines.TRACKED for e in estimates(m, rows, resamples=0)}
    for metric in ("claimant_concurrence", "answered_rate"):  # 60 territories, over 100 queries
        overall = found[(metric, "persona=vanilla")]
        assert overall.clusters == 60 < overall.items
    assert found[("claimant_concurrence", "persona=vanilla,lang=zh")].clusters == 40
    # English is asked, never a claimant's language here: an answer rate, no concurrence group
    assert ("answered_rate", "persona=vanilla,lang=en") in found
    assert ("claimant_concurrence", "persona=vanilla,lang=en") not in found


def test_gapminders_family_rows_are_clustered_on_their_question():
    """A question is asked in every prompt family, and how hard it is moves all its families together: the gap
    between families is a paired difference over questions, and its bootstrap standard error is the paired one
    computed by hand (the spread of the per-question differences), far below the one of independent families.
    Each family has one row per question, so only the spread can tell. Mutation caught: the family rows
    clustered on their own row (``item``), in ``TRACKED`` or in ``items``' ``question`` column."""
    from geomon.stats.bootstrap import estimates

    rows = _gapminder(worse_family="persona")  # questions right in every family or in none; persona a bit worse
    (gap_metric,) = [m for m in gapminder.TRACKED if m.name == "family_gap_correct_rate"]
    (gap,) = [e for e in estimates(gap_metric, rows, resamples=2000) if not e.breakdown]
    families = rows.dropna(subset=["family"])
    question = families["item"].str.rsplit("|", n=1).str[0]  # item: question|family
    rates = (100 * families["family_correct"] / families["family_decisive"]).groupby([question, families["family"]])
    by_question = rates.mean().unstack()  # one row per question, one column per family
    n = len(by_question)
    difference = by_question["plain"] - by_question["persona"]
    paired = difference.std(ddof=0) / np.sqrt(n)
    independent = np.sqrt(by_question["plain"].var(ddof=0) / n + by_question["persona"].var(ddof=0) / n)
    assert gap.value == pytest.approx(difference.mean()) and gap.clusters == n == 80
    assert gap.se == pytest.approx(paired, rel=0.2) and paired < independent / 3


def _quench_rates(indic: float, other: float) -> pd.DataFrame:
    """80 questions, every other one Indic, all answered; the first ``indic`` (``other``) share of each group's
    questions right."""
    rows = []
    for q in range(80):
        group = "Indic" if q % 2 == 0 else "non-Indic"
        right = (q // 2) % 20 < 20 * (indic if group == "Indic" else other)
        rows.append((f"e{q}|normal", str(q), "normal", float(right), 1.0, group == "Indic", group))
    return pd.DataFrame(rows, columns=["item", "question_id", "mode", "correct", "answered", "indic", "questions"])


def test_a_gap_that_closes_from_the_leading_side_is_not_a_gap_widening(tmp_path, told):
    """The Indic questions lead (0.9 vs 0.6) and fall to parity: the Indic group's own test pages, and the gap
    between the groups — a size, either side ahead — narrowed. Mutation caught: the paper's signed Indic −
    non-Indic gap, lower is worse, tracked instead (0.3 → 0 reads as the gap widening against the Indic side)."""
    state, announcer = told
    decided = _release(tmp_path, "quench", quench.TRACKED, _quench_rates(0.9, 0.6), _quench_rates(0.6, 0.6), announcer)
    assert decided[("correct_answer_score", "questions=Indic")]["verdict"] == verdicts.REGRESSION
    gap = decided[("questions_gap_correct_answer_score", "")]
    assert gap["change"] == pytest.approx(-0.3) and gap["verdict"] == verdicts.IMPROVEMENT
    (post,) = [p["body"] for p in state["posts"]]
    assert "questions_gap" not in post["title"]


def test_an_unchanged_metric_never_states_an_mde_of_zero(tmp_path):
    """Every country of a region errs alike and nothing changes: the region's bootstrap spread is floating-point
    noise, which plans no MDE (none stated, never 0 with power 1). Mutation caught: `power.stated_se` taking a
    noise spread as one."""
    rows = [(f"R{r}-{c}", f"R{r}", "high", (0.1 + 0.1 * r) * 11, 11, 11, 11) for r in range(4) for c in range(40)]
    frame = pd.DataFrame(rows, columns=["item", "region", "income_group", "error_sum", "answers", "answered", "asked"])
    history = MetricHistory(f"sqlite:///{tmp_path / 'same.sqlite'}")
    settings = verdicts.VerdictSettings(resamples=199)
    _track(history, EvaluationRun("worldbench", "old"), frame, worldbench.TRACKED, settings)
    out = _track(history, EvaluationRun("worldbench", "new", predecessor="old"), frame, worldbench.TRACKED, settings)
    decided = {v.key: vars(v) for v in out.verdicts}
    region = decided[("mean_error", "region=R1")]
    assert region["verdict"] == verdicts.NO_CHANGE
    assert not region["mde"] < 1e-6 and not region["power"] > 0.999  # NaN or a real MDE; never 0 with power 1


def test_only_a_mean_of_bounded_outcomes_has_the_agresti_coull_floor():
    """A continuous error (WorldBench's, 0.15 ± 0.05 per country) plans from its own spread; a share of right
    answers at 100 % (bootstrap spread 0) from the Agresti–Coull floor. Mutation caught: the floor applied to
    every bounded metric (the continuous error's planned SE eight times its spread)."""
    rng = np.random.default_rng(0)
    errors = np.clip(rng.normal(0.15, 0.05, 160), 0, 1)
    frame = pd.DataFrame(
        {"item": [f"c{i}" for i in range(160)], "region": "R", "income_group": "high", "error_sum": errors * 11,
         "answers": 11, "answered": 11, "asked": 11}
    )  # fmt: skip
    spread = compare.baseline_spreads(worldbench.TRACKED, frame)[("mean_error", "")]
    assert power.planned_se(spread, (0, 1)) == pytest.approx(np.sqrt(2) * spread.se)
    right = pd.DataFrame({"item": [f"q{i}" for i in range(40)], "value": 100.0})
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Mean

    share = compare.baseline_spreads((TrackedMetric("acc", Mean("value"), bounds=(0, 100)),), right)[("acc", "")]
    assert share.se == 0 and power.planned_se(share, (0, 100)) > 0


def test_a_gap_near_zero_is_planned_from_its_groups_spread_not_a_folded_one():
    """QUENCH's Indic and non-Indic questions are right equally often: the gap between them is near 0, and its
    size's bootstrap draws fold at 0 (a spread about 0.6 × the gap's). Its standard error is the signed contrast's
    between the two groups — √(se₁² + se₂²) of the groups' own — and an absolute difference's is its signed one's.
    Mutation caught: ``bootstrap._signed_gap`` returning None (the folded spread, an MDE too small)."""
    from geomon.stats.bootstrap import estimates
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Difference, Mean

    rows = _quench_rates(0.5, 0.5)
    (gap_metric,) = [m for m in quench.TRACKED if m.name == "questions_gap_correct_answer_score"]
    found = {e.breakdown: e for e in estimates(gap_metric, rows, resamples=2000)}
    (rate,) = [m for m in quench.TRACKED if m.name == "correct_answer_score"]
    groups = {e.breakdown: e for e in estimates(rate, rows, resamples=2000)}
    contrast = np.hypot(groups["questions=Indic"].se, groups["questions=non-Indic"].se)
    assert found[""].value < contrast  # near 0: where the size folds
    assert found[""].se == pytest.approx(contrast, rel=0.15)
    indic, other = (Mean("correct", where=(("questions", g),)) for g in ("Indic", "non-Indic"))
    signed, size = (
        TrackedMetric("gap", Difference(indic, other, absolute=a), "question_id", True, 5.0) for a in (False, True)
    )
    (a,), (b,) = (estimates(m, rows, resamples=500, seed=3) for m in (signed, size))
    assert b.value == abs(a.value) and b.se == a.se > 0


def test_a_gaps_worst_case_is_both_its_groups():
    """With no spread to plan from, a gap between two groups is planned at the worst case of both its sides — each
    group's clusters a coin flip at either end of the range, in each evaluation: the range × 1 per cluster, √2
    more than a mean's range × √½ — in production (``compare.planned``) and in ``geomon plan``. Mutation caught: the gap
    planned as a mean (``power.worst_case_spread`` ignoring ``gap``)."""
    import math

    from geomon import plan
    from geomon.stats.signflip import PairedTest

    def test(disparity: bool) -> PairedTest:
        # No null spread to plan from (the sign-flip null was not drawn).
        return PairedTest("m", "", 50.0, 50.0, 0.0, 0.5, math.nan, 40, 40, True, 5.0, (0, 100), disparity=disparity)

    gap, mean = compare.planned([test(True), test(False)])
    assert gap.planned_se == pytest.approx(100 / math.sqrt(40))
    assert mean.planned_se == pytest.approx(100 * math.sqrt(0.5) / math.sqrt(40))
    assert plan.spread(None, "toy", "m", "", (0, 100), gap=True) == (100.0, plan.WORST_CASE)
    assert plan.spread(None, "toy", "m", "", (0, 100))[0] == pytest.approx(100 * math.sqrt(0.5))


def test_a_range_over_several_groups_is_planned_from_its_highest_and_lowest():
    """Three groups of unequal size and spread: a range's standard error is the contrast's between the highest
    and the lowest group — √(se_high² + se_low²) of their own — not another pair's. Mutation caught: the
    contrast drawn between the wrong groups (``order[-1]`` / ``order[0]`` swapped for a neighbour)."""
    from geomon.stats.bootstrap import estimates
    from geomon.stats.declarations import TrackedMetric
    from geomon.stats.statistics import Mean, Range

    rows = [
        (f"{group}{i}", group, float(i < right))
        for group, size, right in (("A", 60, 54), ("B", 40, 20), ("C", 30, 2))
        for i in range(size)
    ]
    frame = pd.DataFrame(rows, columns=["item", "group", "value"])
    gap = TrackedMetric("gap", Range(Mean("value"), "group"), "item", True, 0.1, by=("group",))
    found = {e.breakdown: e for e in estimates(gap, frame, resamples=4000, seed=1)}
    high, middle, low = (found[f"group={g}"] for g in "ABC")
    assert found[""].se == pytest.approx(np.hypot(high.se, low.se), rel=0.1)
    assert abs(found[""].se - np.hypot(middle.se, low.se)) > 0.2 * found[""].se  # another pair's is far off
