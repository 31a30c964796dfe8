"""What a terminal shows: a leaderboard that fits its width, a failed check in one line, a frame in the format asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TERMINAL_WIDTH = 120


def terminal_table(board_csv: Path, suite: Any) -> str:
    """A suite's leaderboard as plain text for a terminal: the model (and table version, persona) and the
    headline metrics, rounded, as many columns as fit in ``TERMINAL_WIDTH``; the rest is in the report."""
    import pandas as pd

    board = pd.read_csv(board_csv)
    keys = [c for c in ("model", "revision", "persona") if c in board]
    metrics = list(dict.fromkeys(h.metric for h in suite.headlines if h.metric in board))  # a column once
    for metric in metrics:  # each headline with its 95 % interval where the board has one
        low, high = f"{metric}_ci_low", f"{metric}_ci_high"
        if low in board and high in board:
            board[metric] = [
                "—" if pd.isna(v) else f"{v:.3g}" + (f" [{lo:.3g}, {hi:.3g}]" if pd.notna(lo) and pd.notna(hi) else "")
                for v, lo, hi in zip(board[metric], board[low], board[high], strict=True)
            ]
    shown = keys[:]
    for metric in metrics:
        text = board[[*shown, metric]].round(3).to_string(index=False)
        if max(len(line) for line in text.splitlines()) > TERMINAL_WIDTH:
            break
        shown.append(metric)
    table = board[shown].round(3).to_string(index=False, na_rep="—")
    # Which figures their samples cannot carry, said here as in the leaderboard and the report.
    notes = board["sample_note"].fillna("") if "sample_note" in board else pd.Series(dtype=str)
    marked = [
        f"  {' '.join(str(row[k]) for k in keys)}: {note}"
        for row, note in zip(board.to_dict("records"), notes, strict=False)
        if note
    ]
    return "\n".join([table, *(m if len(m) <= TERMINAL_WIDTH else m[: TERMINAL_WIDTH - 1] + "…" for m in marked)])


def describe_check(check: Any) -> str:
    """A failed check as one line: where, what, and its numbers as ``name=value``."""
    numbers = []
    for name, entry in check.metadata.items():
        value = getattr(entry, "value", entry)
        if isinstance(value, int | float | str) and len(str(value)) <= 40:
            numbers.append(f"{name}={value:.4g}" if isinstance(value, float) else f"{name}={value}")
    where = check.asset_key.to_user_string()
    partition = getattr(check, "partition", None)
    return f"check {check.check_name} on {where}{f' [{partition}]' if partition else ''} failed: {', '.join(numbers)}"


def print_frame(frame, form: str) -> None:
    if form == "csv":
        print(frame.to_csv(index=False), end="")
    elif form == "json":
        print(frame.to_json(orient="records", force_ascii=False, indent=1))
    else:
        print(
            frame.to_string(index=False, na_rep="", float_format=lambda v: f"{v:.4g}")
            if len(frame)
            else "no evaluations"
        )


def one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
