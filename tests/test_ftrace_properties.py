"""Hypothesis properties: generated header fields round-trip; any text is fully accounted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.ingest.ftrace import parse_text

# Comms as the kernel prints them: up to 15 chars of what task names hold, including
# spaces, '-', '/', ':', '~', '#', '<', '>'; never padded at the ends (the layout pads).
COMM_CHARS = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCZ0123456789 -/:~#._<>")
comms = (
    st.text(COMM_CHARS, min_size=0, max_size=15)
    .map(str.strip)
    .filter(lambda c: not c.startswith(("#", ">", "=>")))
)
# irq-info column: irqs-off, need-resched, hard/softirq, preempt depth, migrate-disable.
flags = st.one_of(
    st.just(None),
    st.tuples(*(st.sampled_from(s) for s in ("dDbX.", "NnpBLbl.", "ZzHhs.", "0123f."))).map(
        "".join
    ),
    st.tuples(*(st.sampled_from(s) for s in ("dDbX.", "NnpBLbl.", "ZzHhs.", "0123f.", "01."))).map(
        "".join
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    comm=comms,
    pid=st.integers(0, 4_194_304),
    tgid=st.one_of(st.none(), st.integers(0, 4_194_304)),
    cpu=st.integers(0, 511),
    irq=flags,
    secs=st.integers(0, 10**7),
    usecs=st.integers(0, 999_999),
    nid=st.integers(0, 1023),
)
def test_header_round_trip(comm, pid, tgid, cpu, irq, secs, usecs, nid) -> None:
    tg = "" if tgid is None else f"({tgid:7d}) "
    fl = "" if irq is None else f"{irq} "
    line = f"{comm:>16}-{pid:<7d} {tg}[{cpu:03d}] {fl}{secs:5d}.{usecs:06d}: "
    line += f"mm_vmscan_kswapd_sleep: nid={nid}\n"
    acc, frames = parse_text(line)
    assert acc.events == {"mm_vmscan_kswapd_sleep": 1}, line
    row = frames["mm_vmscan_kswapd_sleep"].row(0, named=True)
    assert (row["comm"], row["pid"], row["tgid"], row["cpu"]) == (comm, pid, tgid, cpu)
    assert (row["irq_flags"], row["ts_ns"], row["nid"]) == (irq, secs * 10**9 + usecs * 1000, nid)


def _identity(acc) -> int:
    return (
        sum(acc.events.values())
        + acc.header_lines
        + acc.blank_lines
        + acc.lost_markers
        + acc.stack_lines
        + acc.unparsed
    )


def _expected_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


TRACE_BITS = st.sampled_from(
    [
        " dd-1 [000] ..... 1.0: mm_vmscan_kswapd_sleep: nid=0",
        "CPU:1 [LOST 3 EVENTS]",
        "# tracer",
        "",
        " => f+0x1/0x2",
        "x-1 [0] 1.0: mm_shrink_slab_start: a+0x0/0x1 0: nid: 0 objects to shrink",
        "1.5 a-1 ev: k=v",
        "[001] [002] 3: e: f",
        "(-------) [000]",
        "=",
        ": :",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(TRACE_BITS, st.text(max_size=80)), max_size=30), st.booleans())
def test_any_text_accounted_once(parts, trailing_newline) -> None:
    data = "\n".join(parts).encode("utf-8", "surrogatepass") + (b"\n" if trailing_newline else b"")
    acc, frames = parse_text(data)
    assert acc.lines == _expected_lines(data) == _identity(acc)
    assert {name: len(f) for name, f in frames.items()} == acc.events


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_never_crash(data) -> None:
    acc, _ = parse_text(data)
    assert acc.lines == _expected_lines(data) == _identity(acc)
