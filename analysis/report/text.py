"""Plain text for mail: every line at most 80 columns, no terminal escape codes."""

from __future__ import annotations

import re
import textwrap

__all__ = ["WIDTH", "fit", "shorten_middle"]

WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shorten_middle(token: str, width: int) -> str:
    """``data/very/long/.../file.zst``: keep both ends of a token (a path) that cannot wrap."""
    if len(token) <= width:
        return token
    keep = width - 3
    return f"{token[: keep // 2]}...{token[-(keep - keep // 2) :]}"


def fit(text: str, width: int = WIDTH) -> str:
    """``text`` with ANSI codes removed and every longer line wrapped at spaces (continuation
    indented four columns past the line's own indent); a single word longer than a line,
    such as a path, is shortened in the middle."""
    out: list[str] = []
    for line in _ANSI.sub("", text).splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        more = indent + "    "
        # Words shortened in place: runs of spaces that align columns stay as they are.
        room = width - len(more)
        body = re.sub(r"\S+", lambda m, room=room: shorten_middle(m.group(), room), line.strip())
        out += textwrap.wrap(
            body,
            width,
            initial_indent=indent,
            subsequent_indent=more,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")
