"""`python -m geomon.cli`: the `geomon` command (how a run starts its lanes)."""

from geomon.cli import main

raise SystemExit(main())
