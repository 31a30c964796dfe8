"""Tables and charts shared by the reports and the Dagster metadata."""

from __future__ import annotations


def test_markdown_tables_keep_untrusted_text_inert():
    """A model's answer in Dagster metadata can neither break the table nor inject markup: one line, escaped,
    cut at the cell limit."""
    import pandas as pd

    from geomon.report.charts import MARKDOWN_CELL_CHARS, markdown_table

    answers = pd.DataFrame(
        {
            "question_id": ["q1", "q2", "q3"],
            "response": [
                "<script>alert(1)</script> | 42\n| x | y |",
                "[click](javascript:alert(1)) `code`",
                "7" * 5000,
            ],
        }
    )
    table = markdown_table(answers)
    lines = table.splitlines()
    assert len(lines) == 5  # header, rule, three rows: no injected row
    assert "<script>" not in table and "&lt;script&gt;" in table
    assert "\\[click\\](javascript:alert(1))" in table and "\\`code\\`" in table
    assert all(line.count(" | ") == 1 for line in lines[2:])  # the cells' pipes are escaped
    assert "7" * MARKDOWN_CELL_CHARS + "…" in table and "7" * (MARKDOWN_CELL_CHARS + 1) not in table
