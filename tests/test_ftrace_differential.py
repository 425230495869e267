"""The C reader gives what the numba reader it replaced gave (issue 23), on text it was
never written for: 20,000 real lines of the bundled captures and test data, a third of
them damaged at random (bytes deleted, inserted, replaced, other lines spliced in, mail
quoting, trace-cmd buffer prefixes, invalid UTF-8), fed through ``parse_text``.

The digest covers the accounting (every count, reason, line number and sample) and every
value of every event frame with its schema; it was computed by the numba reader at commit
84a1435 (tests/test_ftrace_differential.py's ``_digest`` run in that tree), and the C
reader matched it when it replaced it. The same comparison on the 630 MB benchmark
capture, every bundled capture and 44 MB more of such text found no difference."""

from __future__ import annotations

import hashlib
import json
import random

import zstandard

from analysis.ingest.ftrace import reader
from tests.conftest import REPO

NUMBA_READER_DIGEST = "86aab0948b2c220403d036dc2475240be4b091f679c78cd4aff81869dccc01cc"
_DAMAGE = b" =|:,()[]-.<>#\t\r0123456789xabcdefABCDEFZ_/\xff\xc3\xa9"


def _lines() -> list[bytes]:
    lines: list[bytes] = []
    captures = sorted(REPO.glob("data/stutterp-*/*/iter-0/ftrace-*.zst"))
    captures += sorted(REPO.glob("data/vm-6.12/*/*/iter-0/ftrace-*.zst"))
    for path in captures:
        with zstandard.ZstdDecompressor().stream_reader(path.open("rb")) as stream:
            lines += stream.read(400_000).splitlines(keepends=True)[1:-1]
    # The text files tests/data held when the digest was taken (samples added since would
    # change the corpus, not the parser).
    for path in sorted((REPO / "tests" / "data" / "mmtests-perl").glob("*.txt")):
        lines += path.read_bytes().splitlines(keepends=True)[:300]
    return lines


def _corpus(seed: int, n: int) -> bytes:
    rng = random.Random(seed)
    lines = _lines()
    out = []
    for _ in range(n):
        line = bytearray(rng.choice(lines))
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 6])):
            op, at = rng.random(), rng.randrange(len(line) + 1)
            if op < 0.35 and line:
                del line[at : at + rng.randint(1, 4)]
            elif op < 0.7:
                line[at:at] = bytes(rng.choice(_DAMAGE) for _ in range(rng.randint(1, 3)))
            elif op < 0.85 and line:
                line[min(at, len(line) - 1)] = rng.choice(_DAMAGE)
            else:
                line[at:at] = rng.choice(lines)[: rng.randint(0, 40)]
        if rng.random() < 0.05:
            line = b"> " * rng.randint(1, 2) + line
        if rng.random() < 0.03:
            line = b"  buf: " + line
        out.append(bytes(line))
    return b"".join(out)


def _digest(text: bytes) -> str:
    acc, frames = reader.parse_text(text)
    digest = hashlib.sha256(json.dumps(acc.to_json(), sort_keys=True).encode())
    for name in sorted(frames):
        frame = frames[name]
        digest.update(name.encode())
        digest.update(repr([(c, str(t)) for c, t in frame.schema.items()]).encode())
        for row in frame.rows():
            digest.update(repr(row).encode())
    return digest.hexdigest()


def test_damaged_real_lines_parse_as_the_numba_reader_parsed_them() -> None:
    text = _corpus(seed=1, n=20_000)
    acc, _ = reader.parse_text(text)
    # The corpus is what it says: mostly events, thousands of damaged lines among them.
    assert acc.lines == 19_729 and sum(acc.events.values()) == 12_693 and acc.unparsed == 7_015
    assert _digest(text) == NUMBA_READER_DIGEST
