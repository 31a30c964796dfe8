"""How geomon notices change and re-runs only what depends on it (declarative automation).

- ``worldbank/wdi_release`` is an observable source: its data version is the World Bank's "last
  updated" date and the latest year per indicator (offline: of the newest snapshot directory). The
  ``observe_sources`` schedule observes it hourly.
- Every suite asset carries ``EAGER``: when anything upstream gets a new data version (a World Bank
  release, a new Wikipedia revision partition, a new model partition, a code change re-run), the
  automation sensor requests exactly the downstream assets and partitions affected, never a first-tick
  flood of everything, and never past a failed blocking check.
"""

from datetime import timedelta

import dagster as dg

from geomon.defs.resources import GeomonResource
from geomon.sources import worldbank

EAGER = dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
# World Bank WDI data is revised a few times a year; Wikipedia's list weekly. Past these, the UI warns.
ANNUAL_DATA = dg.FreshnessPolicy.time_window(fail_window=timedelta(days=400), warn_window=timedelta(days=200))


@dg.observable_source_asset(key=["worldbank", "wdi_release"], group_name="worldbank", required_resource_keys={"geomon"})
def wdi_release(context: dg.AssetExecutionContext) -> dg.ObserveResult:
    """The World Bank's WDI release: a new "last updated" date or data year is a new data version."""
    geomon: GeomonResource = context.resources.geomon
    settings = geomon.settings()
    if settings.worldbank_snapshot is not None:
        release = worldbank.release_version(settings.worldbank_snapshot)
    else:
        release = worldbank.live_release_version(settings.worldbank_api_url)
    return dg.ObserveResult(
        data_version=dg.DataVersion(release["version"]),
        metadata={
            "last_updated": release["last_updated"],
            "latest_year_by_indicator": dg.MetadataValue.json(release.get("latest_year_by_indicator", {})),
            "source": release.get("snapshot", release.get("source", "")),
        },
    )


observe_sources_job = dg.define_asset_job(
    "observe_sources", selection=dg.AssetSelection.assets(["worldbank", "wdi_release"])
)
observe_sources_schedule = dg.ScheduleDefinition(
    name="observe_sources_hourly",
    job=observe_sources_job,
    cron_schedule="0 * * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,  # a new World Bank release is noticed without a click
    description="Asks the World Bank hourly whether WDI has a new release; a new one re-runs what depends on it.",
)


def _suite_groups() -> list[str]:
    from geomon.suites.registry import suites

    return list(suites())


# One automation sensor per suite, so the runs automation launches carry ``geomon/suite`` like `geomon run`'s
# (the runs page filters by suite; a failure alert names it); ``geomon_automation`` takes everything else
# (the World Bank and Wikipedia sources, the monitor). Dagster adds the model partition as dagster/partition.
SUITE_TAG, LAUNCHED_BY = "geomon/suite", "geomon/launched_by"
suite_automation_sensors = [
    dg.AutomationConditionSensorDefinition(
        f"{suite}_automation",
        target=dg.AssetSelection.groups(suite),
        run_tags={SUITE_TAG: suite, LAUNCHED_BY: "automation"},
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=60,
        description=f"Re-runs {suite}'s stale or missing assets and partitions (a new model, new data, a new "
        "sample, changed code), never past a failed blocking check; its runs carry the suite's tag.",
    )
    for suite in _suite_groups()
]
automation_sensor = dg.AutomationConditionSensorDefinition(
    "geomon_automation",
    target=dg.AssetSelection.all() - dg.AssetSelection.groups(*_suite_groups()),
    run_tags={LAUNCHED_BY: "automation"},
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=60,
    description="Re-runs everything outside the suites (the World Bank and Wikipedia sources, the history, the "
    "drift trends) when what it depends on changes.",
)
