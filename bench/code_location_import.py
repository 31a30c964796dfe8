"""How long the Dagster code location takes to import (what `dagster dev` and every run worker pay).

Each sample is a fresh interpreter timing `import geomon.definitions` (the import alone; interpreter
start-up is printed apart), wall and CPU time. Heavy libraries (scipy.stats, great_expectations,
sentence-transformers, openai, matplotlib, the HTTP clients, the HTML parser) are imported inside the
functions that use them; `-X importtime` lists what is left.

    .venv/bin/python bench/code_location_import.py --samples 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# Wall and CPU seconds of the import: on a busy machine the wall time waits for the CPU, the CPU time does not.
PROBE = (
    "import time; t, c = time.perf_counter(), time.process_time(); import geomon.definitions; "
    "print(time.perf_counter() - t, time.process_time() - c)"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    imports, cpus, walls = [], [], []
    for _ in range(args.samples):
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - started)
        wall, cpu = out.stdout.strip().splitlines()[-1].split()
        imports.append(float(wall))
        cpus.append(float(cpu))
    print(
        f"import geomon.definitions: median {statistics.median(imports):.2f} s "
        f"(min {min(imports):.2f}, max {max(imports):.2f}) over {args.samples} fresh interpreters"
    )
    print(f"CPU time of the import: median {statistics.median(cpus):.2f} s (what a quiet machine's wall time nears)")
    print(f"interpreter start + import: median {statistics.median(walls):.2f} s")
    heavy = (
        *("scipy.stats", "great_expectations", "sentence_transformers", "openai", "matplotlib", "torch"),
        *("requests", "httpx", "bs4"),
    )
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, geomon.definitions; print([m for m in {heavy!r} if m in sys.modules])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"heavy libraries loaded by the import: {loaded}")


if __name__ == "__main__":
    main()
