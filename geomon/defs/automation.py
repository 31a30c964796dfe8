"""How geomon notices change and re-runs only what depends on it (declarative automation).

- ``worldbank/wdi_release`` is an observable source: its data version is the World Bank's "last
  updated" date and the latest year per indicator (offline: of the newest snapshot directory). The
  ``observe_sources`` schedule observes it hourly.
- Every suite asset carries ``EAGER``: when anything upstream gets a new data version (a World Bank
  release, a new Wikipedia revision partition, a new sample, a code change re-run), the automation sensor
  requests exactly the downstream assets and partitions affected; an input re-run or re-observed on the same
  data (same data version) requests nothing; never a first-tick flood of everything, and never past a failed
  blocking check.
- The runs that read a source record its data version (the sources job observes the WDI release first;
  ``geomon import`` records the Gapminder folder it read), so the hourly observations after ``make run``
  find nothing new.
"""

from datetime import timedelta
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import DATA_VERSION_TAG

from geomon.config import Settings
from geomon.defs.resources import GeomonResource, shown_path
from geomon.sources import worldbank

# Dagster's eager condition, except that an input counts as updated only once its data version has changed: an
# input re-run on the same data (the same WDI release, the same sample) or observed again unchanged re-runs nothing
# downstream, and a step is not requested beside an input that will be (its new data version is not known yet), so
# each layer runs on the tick after its input changed. A new partition still runs (newly_missing); a failed
# blocking check holds back.
DEPS_CHANGED = dg.AutomationCondition.any_deps_match(
    dg.AutomationCondition.data_version_changed() & ~dg.AutomationCondition.executed_with_root_target()
).with_label("any_deps_data_version_changed")
EAGER = (
    dg.AutomationCondition.eager().replace("any_deps_updated", DEPS_CHANGED)
    & dg.AutomationCondition.all_deps_blocking_checks_passed()
)
# What redraws a report over every suite (``monitor/trends``): any input materialized again (an import's evaluations
# carry no data version; redrawing costs little), on the tick after it was (as DEPS_CHANGED), whichever inputs were
# never materialized (a suite never run must not hold the others' trends back) and whatever their checks say (a
# failed no_regression is what the trends show).
ANY_INPUT_UPDATED = (
    dg.AutomationCondition.eager()
    .without(~dg.AutomationCondition.any_deps_missing())
    .replace(
        "any_deps_updated",
        dg.AutomationCondition.any_deps_match(
            dg.AutomationCondition.newly_updated() & ~dg.AutomationCondition.executed_with_root_target()
        ).with_label("any_deps_updated_since_the_last_tick"),
    )
)
# World Bank WDI data is revised a few times a year; Wikipedia's list weekly. Past these, the UI warns.
ANNUAL_DATA = dg.FreshnessPolicy.time_window(fail_window=timedelta(days=400), warn_window=timedelta(days=200))


WDI_RELEASE = dg.AssetKey(["worldbank", "wdi_release"])


def wdi_release_version(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The WDI release the settings point to: its data version (a new "last updated" date or data year is a new
    one) and what the observation shows."""
    if settings.worldbank_snapshot is not None:
        release = worldbank.release_version(settings.worldbank_snapshot)
    else:
        release = worldbank.live_release_version(settings.worldbank_api_url)
    return release["version"], {
        "last_updated": release["last_updated"],
        "latest_year_by_indicator": dg.MetadataValue.json(release.get("latest_year_by_indicator", {})),
        "source": shown_path(release["snapshot"]) if "snapshot" in release else release.get("source", ""),
    }


def record_source_version(
    instance: dg.DagsterInstance, key: dg.AssetKey, version: str, metadata: dict[str, Any]
) -> bool:
    """Record an observation of the source ``key`` at data version ``version`` (unless its latest observation
    already has it), from the run that reads the source (``geomon run``, ``geomon import``). The hourly
    observation that follows then finds the version already used, which is no update: opening the UI after
    ``make run`` re-runs nothing, where a first observation by the schedule would count as new data."""
    latest = instance.fetch_observations(key, limit=1).records
    if latest and (latest[0].event_log_entry.tags or {}).get(DATA_VERSION_TAG) == version:
        return False
    instance.report_runless_asset_event(dg.AssetObservation(key, metadata=metadata, tags={DATA_VERSION_TAG: version}))
    return True


@dg.observable_source_asset(
    key=WDI_RELEASE.path,
    group_name="worldbank",
    required_resource_keys={"geomon"},
    description="The World Bank's WDI release (the snapshot in geomon.yaml, else the live API), observed hourly: a "
    'new "last updated" date or data year is a new data version, which re-runs what depends on it.',
)
def wdi_release(context: dg.AssetExecutionContext) -> dg.ObserveResult:
    geomon: GeomonResource = context.resources.geomon
    version, metadata = wdi_release_version(geomon.settings())
    return dg.ObserveResult(data_version=dg.DataVersion(version), metadata=metadata)


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
