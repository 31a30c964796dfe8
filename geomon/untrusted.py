"""Model output is untrusted text: this is the one place it is made safe to store and to parse.

NUL and other control characters (except tab, newline, carriage return) are removed — PostgreSQL's TEXT
cannot hold a NUL byte, and no parser wants them — and text is capped at a length, the cut recorded by
the caller. Nothing here interprets the text.
"""

from __future__ import annotations

import re
from typing import Any

STORED_MAX_CHARS = 200_000  # an answer longer than this is a runaway generation; the rest is cut, and said so
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: Any, max_chars: int = STORED_MAX_CHARS) -> tuple[str, bool]:
    """(text without control characters, cut to ``max_chars``; whether it was cut). Not a string: ""."""
    if not isinstance(text, str):
        return "", False
    text = _CONTROL.sub("", text)
    return text[:max_chars], len(text) > max_chars


_MARKUP = re.compile(
    r"<(script|style)\b[^>]{0,200}>.*?</\1\s*>"  # a script or style element, with its content
    r"|</?[A-Za-z][\w:-]{0,30}(?:\s[^<>]{0,300})?/?>",  # any other tag ("<5 %" is not one)
    re.IGNORECASE | re.DOTALL,
)


def strip_markup(text: str) -> str:
    """HTML markup out of an answer: "<script>alert(1)</script> 42" → " 42". Text is never rendered or
    run; markup only confuses parsers that look for the first number or option."""
    return _MARKUP.sub(" ", text)
