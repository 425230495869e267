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


# Payloads of three known events, generated field by field so the expected column values
# are known without the parser: keys in any order, some missing, some repeated (the first
# one counts), string values short (inline in the Arrow view) or long (> 12 bytes), and
# sometimes a field no kernel has (then the general path must keep it as a column).
INT_KEYS = ("nid", "zid", "nr_scanned", "nr_reclaimed", "nr_dirty", "priority")
WORDS = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_0123456789"), max_size=30)
FLAG_LISTS = st.lists(st.sampled_from(["RECLAIM_WB_FILE", "RECLAIM_WB_ASYNC", "X"]), min_size=1)
field = st.one_of(
    st.tuples(st.sampled_from(INT_KEYS), st.integers(0, 10**15)),
    st.tuples(st.just("flags"), FLAG_LISTS),
)
event_line = st.one_of(
    st.tuples(st.just("mm_vmscan_lru_shrink_inactive"), st.lists(field, max_size=10)),
    st.tuples(
        st.just("mm_vmscan_throttled"),
        st.lists(
            st.one_of(
                st.tuples(
                    st.sampled_from(("nid", "usec_timeout", "usect_delayed")), st.integers(0, 10**6)
                ),
                st.tuples(st.just("reason"), WORDS),
            ),
            max_size=6,
        ),
    ),
    st.tuples(
        st.just("mm_vmscan_lru_isolate"),
        st.lists(
            st.one_of(
                st.tuples(st.sampled_from(("order", "nr_taken")), st.integers(0, 512)),
                st.tuples(st.just("lru"), WORDS),
            ),
            max_size=6,
        ),
    ),
)


def _value_text(value) -> str:
    return "|".join(value) if isinstance(value, list) else str(value)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(event_line, st.booleans()), min_size=1, max_size=12))
def test_event_fields_match_generated_values(lines) -> None:
    text = ""
    expected: dict[str, list[tuple[int, dict, bool]]] = {}
    for number, ((event, fields), extra) in enumerate(lines, start=1):
        payload = " ".join(f"{key}={_value_text(value)}" for key, value in fields)
        payload += " memcg_id=7" if extra else ""
        text += f"   dd-{number} [001] ..... 5.{number:06d}: {event}: {payload}\n"
        first: dict = {}
        for key, value in fields:
            first.setdefault(key, value)
        expected.setdefault(event, []).append((number, first, extra))
    acc, frames = parse_text(text)
    assert acc.events == {event: len(rows) for event, rows in expected.items()}
    for event, rows in expected.items():
        frame = frames[event]
        assert frame["line"].to_list() == [number for number, _, _ in rows]
        assert frame["pid"].to_list() == [number for number, _, _ in rows]
        assert frame["comm"].to_list() == ["dd"] * len(rows)
        keys = {key for _, first, _ in rows for key in first}
        for key in keys:
            assert frame[key].to_list() == [first.get(key) for _, first, _ in rows], key
        if any(extra for _, _, extra in rows):
            assert frame["memcg_id"].to_list() == [7 if extra else None for _, _, extra in rows]
        else:
            assert "memcg_id" not in frame.columns
