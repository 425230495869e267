"""PSI memory files (issue 30 item 3): recorded here (tests/data/psi, tests/data/README.md).

Expected values are read from the files with awk-like splitting in the test, not by the
parser under test: the stall time is the last total minus the first, over the elapsed
time between the first and last ``# t=`` lines.
"""

from __future__ import annotations

import pytest

from analysis.errors import InputError
from analysis.ingest import psi
from tests.conftest import REPO

DATA = REPO / "tests/data/psi"


def _by_hand(text: str, kind: str) -> tuple[list[float], list[int]]:
    times, totals = [], []
    for line in text.splitlines():
        if line.startswith("# t="):
            times.append(float(line[4:]))
        elif line.startswith(kind + " "):
            totals.append(int(line.rsplit("total=", 1)[1]))
    return times, totals


@pytest.mark.parametrize("name", ["psi-memory", "cgroup-memory.pressure"])
def test_recording_gives_series_and_run_rows(name) -> None:
    text = (DATA / name).read_text()
    series = psi.read(DATA / name)
    times, totals = _by_hand(text, "some")
    assert series.timed and series.samples == len(times) > 5
    assert series.frame.filter(kind="some")["total_us"].to_list() == totals
    some = psi.run_rows(series)[0]
    assert some.kind == "some" and some.samples == len(times)
    assert some.stall_s == pytest.approx((totals[-1] - totals[0]) / 1e6)
    assert some.share_pct == pytest.approx(
        100 * (totals[-1] - totals[0]) / 1e6 / (times[-1] - times[0])
    )


def test_cgroup_recording_saw_its_own_pressure() -> None:
    """The cgroup was created for the recording: its total starts at 0 and then grows."""
    series = psi.read(DATA / "cgroup-memory.pressure")
    some = series.frame.filter(kind="some")["total_us"]
    assert some[0] == 0 and some[-1] > 0
    assert psi.run_rows(series)[0].stall_s > 0


def test_snapshot_has_no_interval() -> None:
    series = psi.read(DATA / "pressure-memory-snapshot")
    assert not series.timed and series.samples == 1
    rows = psi.run_rows(series)
    assert [r.kind for r in rows] == ["some", "full"]
    assert rows[0].stall_s is None and rows[0].share_pct is None


def test_iteration_psi_finds_both_scopes(tmp_path) -> None:
    for name in psi.PSI_FILES.values():
        (tmp_path / name).write_bytes((DATA / name).read_bytes())
    assert sorted(psi.iteration_psi(tmp_path)) == ["cgroup", "system"]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        (
            "# t=1\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=5\n# t=2\n"
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=4\n",
            4,
            "goes down",
        ),
        ("# t=2\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=5\n# t=1\n", 3, "increase"),
        ("some avg10=0.00 avg60=0.00 total=5\n", 1, "not a PSI line"),
        ("# t=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n# t=2\n", 3, "'some'"),
        (
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n"
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=6\n",
            2,
            "several samples",
        ),
    ],
)
def test_bad_psi_names_the_line(tmp_path, text, line, reason) -> None:
    path = tmp_path / "psi"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"psi:{line}: .*{reason}"):
        psi.read(path)
