"""Size the ``default`` profile on the bundled models' measured variance (issue "profiles that can see").

After the bundled models have run the suites (``make run PROFILE=default``), for each suite and each bundled
model: the spreads of the model's latest stored evaluation, planned as production plans a comparison's MDE
(``plan.measured_spreads``), and the sample size at which every comparison is decidable where the budget of asks
allows it, and at least tested where it allows that (``plan.fit``, as ``geomon plan --fit``). Prints the larger
size of the two models per suite as the suites' ``default`` profile, and writes the spreads it rests on to
``geomon_tests/data/bundled_spreads.json``, from which ``geomon_tests/test_plan.py`` checks that the declared
``default`` profile still decides what the budget allows.

    .venv/bin/python scripts/fit_default_profile.py                 # after make run PROFILE=default
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
from pathlib import Path

from geomon import plan
from geomon.config import load_settings
from geomon.monitor.history import MetricHistory
from geomon.suites import registry

FIXTURE = Path(__file__).resolve().parents[1] / "geomon_tests" / "data" / "bundled_spreads.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="geomon.yaml (default: the repository's)")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args()
    settings = load_settings(args.config)
    history = MetricHistory(settings.store_url)
    store = settings.store()
    bundled = [m for m in settings.models if m.bundled is not None]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    fixture: dict = {
        "measured": dt.date.today().isoformat(),
        "commit": commit,
        "command": "make run PROFILE=default; python scripts/fit_default_profile.py",
        "budget": settings.budget.asks_per_suite,
        "suites": {},
    }
    print(f"profiles:\n  {args.profile}:  # budget {settings.budget.asks_per_suite:,} asks per model and suite")
    for info in registry.suites().values():
        fits, kept = [], {}
        for spec in bundled:
            measured = plan.measured_spreads(history, info.name, spec.name)
            if not measured:
                continue
            kept[spec.name] = [[*key, *spread] for key, spread in sorted(measured.items())]
            # Planned from these spreads alone (the worst case where one is missing), as the test replays them.
            fits.append(
                plan.fit(settings, info, args.profile, spec, store, MetricHistory("sqlite:///:memory:"), measured)
            )
        if not fits:
            print(f"    # {info.name}: no evaluation of a bundled model stored")
            continue
        widest = max(fits, key=lambda f: f.value or 0)
        fixture["suites"][info.name] = kept
        print(f"    {widest.line()}")
    args.out.write_text(json.dumps(fixture, indent=1, default=float) + "\n")
    print(f"spreads: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
