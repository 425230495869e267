"""Plain text for mail: every line at most 80 columns, no terminal escape codes."""

from __future__ import annotations

import re
import textwrap

__all__ = ["WIDTH", "fit", "path_lines", "shorten_middle"]

WIDTH = 80
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def shorten_middle(token: str, width: int) -> str:
    """``data/very/long/.../file.zst``: keep both ends of a token (a path) that cannot wrap."""
    if len(token) <= width:
        return token
    keep = width - 3
    return f"{token[: keep // 2]}...{token[-(keep - keep // 2) :]}"


def path_lines(path: str, first: str, tail: str = "", indent: str = "    ") -> list[str]:
    """``first + path + tail`` as lines of at most :data:`WIDTH` columns, where a path that
    names the input must stay whole (:func:`shorten_middle` would drop its middle): broken
    after a ``/``, every character kept and none added, continuation lines indented; a
    single name longer than a line stays whole, and ``tail`` goes on a line of its own
    when the last one has no room for it."""
    lines, start = [first], len(first)
    for part in re.findall(r"[^/]*/|[^/]+$", path):
        if len(lines[-1]) + len(part) > WIDTH and len(lines[-1]) > start:
            lines.append(indent)
            start = len(indent)
        lines[-1] += part
    if tail and len(lines[-1]) + len(tail) > WIDTH:
        lines.append(indent + tail.lstrip())
    else:
        lines[-1] += tail
    return lines


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
