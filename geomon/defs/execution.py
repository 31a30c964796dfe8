"""How runs execute: Dagster's multiprocess executor on one machine, or Celery workers in production.

Setting ``GEOMON_CELERY_CONFIG`` to a file like ``deploy/celery.yaml`` makes every asset job run on
``dagster-celery``'s executor: its ``execution.config`` block is the executor's config (broker, result
backend, Celery settings, where ``task_default_queue`` is the queue of scoring steps) and its ``geomon``
block names the queue that model-calling steps go to, so workers beside a model server take those and the
rest score. Workers start with the same file (``dagster-celery worker start -y deploy/celery.yaml -q …``).

Model-calling steps also share a concurrency pool (``MODEL_CALLS_POOL``), which the Celery executor
honours on this Dagster release (its execution loop claims op slots through the instance), and a retry
policy for the failures a model server has (a restart, a timeout storm).
"""

import os
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg
import yaml

CELERY_CONFIG_ENV = "GEOMON_CELERY_CONFIG"
# dagster-celery's op tag: the Celery queue a step is sent to.
CELERY_QUEUE_TAG = "dagster-celery/queue"
MODEL_CALLS_POOL = "model_calls"
DEFAULT_MODEL_QUEUE = "geomon-models"
# A model server that restarts or sheds load comes back within minutes; the engine's own retries cover
# single requests, this covers the whole step (answers already stored are not asked again). The first
# delay (seconds, doubling) is a setting: the tests set it to 0 rather than sleep through minutes of it.
STEP_RETRY_DELAY_ENV = "GEOMON_STEP_RETRY_DELAY_S"
MODEL_CALL_RETRIES = dg.RetryPolicy(
    max_retries=3,
    delay=float(os.environ.get(STEP_RETRY_DELAY_ENV, "30")),
    backoff=dg.Backoff.EXPONENTIAL,
    jitter=dg.Jitter.PLUS_MINUS,
)


class CeleryConfigError(ValueError):
    """The Celery configuration file is missing or malformed."""


@cache
def celery_config() -> dict[str, Any] | None:
    """The file ``GEOMON_CELERY_CONFIG`` names, parsed, or None when runs execute locally."""
    path = os.environ.get(CELERY_CONFIG_ENV)
    if not path:
        return None
    file = Path(path)
    try:
        doc = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CeleryConfigError(f"{CELERY_CONFIG_ENV}={path}: cannot read it ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance((doc.get("execution") or {}).get("config"), dict):
        raise CeleryConfigError(f"{path}: needs an `execution: config:` block (dagster-celery's executor config)")
    return doc


def model_queue() -> str:
    """The Celery queue of model-calling steps (``geomon.model_queue`` in the Celery config file)."""
    doc = celery_config() or {}
    return str((doc.get("geomon") or {}).get("model_queue") or DEFAULT_MODEL_QUEUE)


def model_call_options() -> dict[str, Any]:
    """``@dg.asset`` arguments for a step that asks models: its queue, its pool and its retry policy."""
    return {
        "op_tags": {CELERY_QUEUE_TAG: model_queue()},
        "pool": MODEL_CALLS_POOL,
        "retry_policy": MODEL_CALL_RETRIES,
    }


@dg.definitions
def executor() -> dg.Definitions:
    """The Celery executor when configured; otherwise Dagster's default."""
    doc = celery_config()
    if doc is None:
        return dg.Definitions()
    from dagster_celery import celery_executor

    return dg.Definitions(executor=celery_executor.configured(doc["execution"]["config"], name="celery"))
