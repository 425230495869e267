"""``mmlab stalls`` gives what it gave before the block-wise, cached analysis (issue 32) on
every bundled source: the 54 traces under ``data/`` and the four mail pastes.

``tests/data/stalls-c7daebe.json.gz`` holds the text and ``--json`` output of each source
as commit c7daebe printed them (the tree before issue 32: one pass over whole frames, no
results cache), made by running ``mmlab stalls SOURCE`` and ``mmlab stalls SOURCE --json``
in a worktree of that commit. Numbers are compared as the goldens are (JSON within a
relative 1e-9; text digits within one unit of the last printed digit), never to the last
bit.

What changed on purpose, and only that, is allowed to differ:

- issue 29 item 4: a summary row (``summary``, and ``mmtests_rows`` built from it) whose
  events are not in the trace is null with a "not traced" note where c7daebe printed 0
  (checked: every such value was 0, and every other value is unchanged); the text's
  summary and mmtests blocks say so;
- sections and JSON keys added after c7daebe (the base's keys and lines must all be there,
  in order).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re

import pytest

from analysis.cli import main
from tests.conftest import REPO
from tests.test_golden import json_differences

REFERENCE = REPO / "tests" / "data" / "stalls-c7daebe.json.gz"
# Text blocks issue 29 item 4 changed: from their title line to the next block's title.
_CHANGED_BLOCKS = ("Summary (trace-vmscan-postprocess.pl", "mmtests rows (seeds 002, 003")
_NUMBER = re.compile(r"^[-+]?\d[\d,]*(\.\d+)?%?$")


def _reference() -> dict[str, dict]:
    return json.loads(gzip.decompress(REFERENCE.read_bytes()))


def _run(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(args)
    return out.getvalue()


def _same_token(new: str, old: str) -> bool:
    """Equal, or two numbers printed alike within one unit of the last printed digit."""
    if new == old:
        return True
    if not (_NUMBER.match(new) and _NUMBER.match(old)):
        return False
    decimals = len(old.rstrip("%").partition(".")[2])
    a, b = (float(t.rstrip("%").replace(",", "")) for t in (new, old))
    return abs(a - b) <= 10**-decimals * 1.0001


def _same_line(new: str, old: str) -> bool:
    a, b = new.split(), old.split()
    return len(a) == len(b) and all(_same_token(x, y) for x, y in zip(a, b, strict=True))


def _kept_lines(text: str) -> list[str]:
    """The lines of ``text`` outside the blocks issue 29 item 4 changed."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.startswith(_CHANGED_BLOCKS):
            skipping = True
        elif skipping and line and not line.startswith((" ", "[")):
            skipping = False
        if not skipping:
            kept.append(line)
    return kept


def text_differences(new: str, old: str) -> list[str]:
    """Base lines (outside the changed blocks) missing from ``new`` in order."""
    lines = _kept_lines(new)
    at, missing = 0, []
    for line in _kept_lines(old):
        found = next((i for i in range(at, len(lines)) if _same_line(lines[i], line)), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


def _projected(new, old):
    """``new`` with only the keys ``old`` has (keys added since are allowed)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: _projected(new[k], v) if k in new else None for k, v in old.items()}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [_projected(n, o) for n, o in zip(new, old, strict=True)]
    return new


def _not_traced_was_zero(new_rows: list[dict], old_rows: list[dict], key: str) -> list[str]:
    """Issue 29 item 4: each row equal to the base, or now null with a note where the base
    had 0 (or had no value)."""
    problems = []
    for new, old in zip(new_rows, old_rows, strict=True):
        if new[key] != old[key]:
            problems.append(f"{new[key]} != {old[key]}")
            continue
        if new["value"] is None and new["note"] and old["value"] in (0, None):
            continue
        problems += json_differences(new["value"], old["value"], new[key])
    return problems


def json_problems(new: list[dict], old: list[dict]) -> list[str]:
    problems = []
    for n, o in zip(new, old, strict=True):
        problems += _not_traced_was_zero(n["summary"], o["summary"], "statistic")
        problems += _not_traced_was_zero(n["mmtests_rows"], o["mmtests_rows"], "label")
        rest = {k: v for k, v in o.items() if k not in ("summary", "mmtests_rows")}
        problems += json_differences(_projected({k: n[k] for k in rest if k in n}, rest), rest)
    if len(new) != len(old):
        problems.append(f"{len(new)} results != {len(old)}")
    return problems


SOURCES = sorted(_reference())


@pytest.mark.parametrize("source", SOURCES)
def test_stalls_output_as_before(source, monkeypatch):
    monkeypatch.chdir(REPO)
    old = _reference()[source]
    new_text = _run(["stalls", source])
    new_json = _run(["stalls", source, "--json"])
    if old["json"] is None:  # refused then (a mail paste that is not histogram text)
        assert (new_text, new_json) == ("", "")
        return
    assert not text_differences(new_text, old["text"]), text_differences(new_text, old["text"])
    problems = json_problems(json.loads(new_json), old["json"])
    assert not problems, problems[:5]


def test_the_comparison_would_see_a_change():
    """The checks fail on a changed digit, a dropped line and a 0 turned into a non-zero."""
    old = "Throttling\nWRITEBACK 100000 memcg 868 22.58\nSummary (trace-vmscan-postprocess.pl)\n"
    assert not text_differences(old.replace("22.58", "22.59"), old)
    assert text_differences(old.replace("22.58", "22.61"), old)
    # One unit off in a printed integer passes (a mean printed to 0 decimals may flip); the
    # JSON comparison pins every count.
    assert text_differences(old.replace("868", "870"), old)
    assert text_differences(old.replace("Throttling\n", ""), old)
    row = {"statistic": "Direct reclaims", "value": 0.0, "unit": "count", "note": None}
    gone = {**row, "value": None, "note": "not traced: no x events in the trace"}
    assert not _not_traced_was_zero([gone], [row], "statistic")
    assert _not_traced_was_zero([{**gone, "note": None}], [row], "statistic")
    assert _not_traced_was_zero([gone], [{**row, "value": 3.0}], "statistic")
