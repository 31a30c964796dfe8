"""A decision as the Dagster UI shows it: an evaluation's stored verdicts as one table, the sentence above it that
says how to read it, the reason and the look in columns of their own (the ``no_regression`` checks' and the imported
partitions' ``comparisons`` metadata)."""

from collections.abc import Sequence

import dagster as dg
import pandas as pd

from geomon.monitor import views
from geomon.report.charts import markdown_table
from geomon.stats.declarations import TrackedMetric
from geomon.stats.verdicts import Comparison

READING = (
    "**change**: the model's value minus its baseline's, in the metric's units, with its 95 % interval; **MDE**: "
    "the smallest change this sample detects with 80 % power at its level; **power**: the chance of detecting the "
    "metric's minimum effect; **adjusted p**: the one-sided p after Holm over the comparisons decided together — a "
    "regression is a worsening past the minimum effect whose adjusted p is below the look's α (`alpha`); "
    "**reason**: why a verdict is what it is; **look**: which of the scope's α it was decided at; a **verdict** of "
    "`watch` is a worsening significant at the false-discovery rate `q` but not after Holm (worth a look, never "
    "paged), `undefined` one whose statistic cannot be computed on a side (no p-value) (docs/monitoring.md)."
)


def comparisons_table(rows: Sequence[Comparison], tracked: Sequence[TrackedMetric]) -> dg.MetadataValue:
    """An evaluation's stored verdicts as the UI shows them, worst first (``views.verdict_table``'s figures): one
    sentence saying how to read it, then metric, verdict, change with its interval, MDE, power, adjusted p, the
    reason and the look — the baseline above the table where it is one, a column where they differ."""
    if not rows:
        return dg.MetadataValue.md("nothing compared")
    table = views.verdict_table(rows, {m.name: m.bounds for m in tracked})
    compact = pd.DataFrame(
        {
            "metric": table["metric"],
            "verdict": table["verdict"],
            "change (95 % interval)": table["change"] + " " + table["95 % interval"],
            "MDE": table["MDE"],
            "power": table[views.POWER],
            "adjusted p": table["adjusted p"],
            "reason": table["note"].replace("", "—"),
            "look": table["look"],
        }
    )
    baselines = list(dict.fromkeys(table["baseline"]))
    if len(baselines) > 1:
        compact.insert(1, "baseline", table["baseline"])
    against = f"Against {baselines[0]}. " if len(baselines) == 1 else ""
    return dg.MetadataValue.md(f"{against}{READING}\n\n{markdown_table(compact)}")
