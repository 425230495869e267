"""The one number formatter of every ``mmlab`` output: benchstat's benchunit for mmlab.

Two rules, so that numbers side by side can be compared and carry no digit the data do
not support:

1. **One scale per row or column** (:func:`common_scale`, benchunit's ``CommonScale``):
   every value of a row is printed in one unit — ms throughout, not µs beside ms — chosen
   from the smallest non-zero magnitude, the largest step of the unit's ladder (ns, us,
   ms, s; B, KiB, MiB, GiB; k, M, G for counts such as pages) at which that value is
   still at least 1.
2. **Digits follow the uncertainty** (:func:`uncertainty_decimals`): a value printed with
   an sd or a confidence interval is rounded where its uncertainty is, by the Particle
   Data Group's rule (the uncertainty to two significant digits when its three leading
   digits are 100-354, else to one), so ``1626.9006 ± 430223`` cannot appear; a CI's
   estimate and ends at two significant digits of its half-width (:func:`ci_decimals`:
   the ends are themselves uncertain, and one digit would hide them). A value
   without an uncertainty keeps three significant digits, each value its own
   (benchunit keeps three of the row's smallest value for the whole row, which prints
   ``4500.00`` beside ``1.20``).

Units not on a ladder (``%``, ``pp``, ratios) are never scaled. A missing value (None,
NaN) prints :data:`MISSING`; the table says why in a footnote. A value whose resolution
is known from how it was measured (seconds of a trace to the µs) is printed with
:func:`fixed`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "MISSING",
    "PLAIN",
    "Scale",
    "at",
    "change",
    "ci_decimals",
    "common_scale",
    "decimals_at",
    "fixed",
    "interval",
    "interval_texts",
    "mean_sd_decimals",
    "mean_sd_texts",
    "percent",
    "plus_minus",
    "rounded",
    "sig",
    "three_digits",
    "uncertainty_decimals",
    "up_down",
]

MISSING = "-"

# Each ladder: (unit, size in the ladder's first unit); the header carries the unit.
_TIME = (("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9))
_BYTES = (("B", 1.0), ("KiB", 2.0**10), ("MiB", 2.0**20), ("GiB", 2.0**30), ("TiB", 2.0**40))
_LADDERS = (_TIME, _BYTES)
# Counts keep their unit in the header and carry the prefix in the cell ("2.9M"), as
# benchstat prints counts.
_COUNT_PREFIXES = (("", 1.0), ("k", 1e3), ("M", 1e6), ("G", 1e9))
# Shares, differences of shares and ratios: scaling them would change their meaning.
_UNSCALED = frozenset({"%", "pp", "", "x", "ratio"})
_ALIASES = {"µs": "us", "usec": "us", "msec": "ms", "sec": "s", "bytes": "B"}


@dataclass(frozen=True)
class Scale:
    """How the values of one row or column are printed: ``unit`` for the header, each
    value divided by ``factor`` with ``suffix`` appended (a count's k/M/G).

    >>> Scale("ms", 1e3).text(1626.9006)
    '1.63'
    """

    unit: str
    factor: float = 1.0
    suffix: str = ""

    def text(self, value: float | None, uncertainty: float | None = None) -> str:
        """``value`` in this scale, rounded at ``uncertainty`` (same unit as ``value``)
        when one is given and finite, else to three significant digits (integers in
        full); :data:`MISSING` for None or NaN.

        >>> s = Scale("ms", 1e3)
        >>> s.text(1626.9006), s.text(1626.9006, uncertainty=430.223), s.text(None)
        ('1.63', '1.6', '-')
        >>> s.text(120693.0), s.text(0.0)
        ('121', '0')
        """
        if value is None or math.isnan(value):
            return MISSING
        scaled = value / self.factor
        if uncertainty is not None and math.isfinite(uncertainty) and uncertainty > 0:
            return rounded(scaled, uncertainty_decimals(uncertainty / self.factor)) + self.suffix
        return rounded(scaled, self._own_decimals(value)) + self.suffix

    def _own_decimals(self, value: float) -> int:
        """Decimals of ``value`` without an uncertainty: three significant digits, none
        for a whole number in its own unit (a count, whole jiffies: exact)."""
        if self.factor == 1 and float(value).is_integer():
            return 0
        return _three_digits(value / self.factor)

    def pair(self, a: float | None, b: float | None) -> tuple[str, str]:
        """Two values printed side by side (a base and a new kernel's): each as
        :meth:`text`, with more decimals where needed for their difference to show (two
        significant digits of it; no more than four decimals are added, mmtests' resolution).

        >>> Scale("s").pair(34.307, 34.267), Scale("us").pair(1741.2, 2754.3)
        (('34.307', '34.267'), ('1741', '2754'))
        >>> Scale("s").pair(0.0321, 0.00577)
        ('0.0321', '0.00577')
        """
        if a is None or b is None or not math.isfinite(a - b) or a == b:
            return self.text(a), self.text(b)
        need = min(ci_decimals(abs(a - b) / self.factor), 4)
        first, second = (
            rounded(v / self.factor, max(self._own_decimals(v), need)) + self.suffix for v in (a, b)
        )
        return first, second

    def uncertainty(self, value: float | None) -> str:
        """An uncertainty (sd, CI half-width) at its own rounding: ``±`` and the digits.

        >>> Scale("ms", 1e3).uncertainty(430.223)
        '±0.4'
        """
        if value is None or not math.isfinite(value):
            return ""
        scaled = value / self.factor
        d = uncertainty_decimals(scaled) if value > 0 else 0
        return f"±{rounded(scaled, d)}{self.suffix}"


# Values of no particular unit or row: three significant digits each.
PLAIN = Scale("")


def _three_digits(value: float) -> int:
    """Decimals that leave three significant digits of ``value`` (none from 100 up)."""
    if not math.isfinite(value) or value == 0:
        return 0
    return max(0, 2 - math.floor(math.log10(abs(value))))


def rounded(value: float, decimals: int, sign: bool = False, group: str = "") -> str:
    """``value`` with ``decimals`` decimals (negative: rounded to tens, hundreds), with a
    ``+`` before a positive value when ``sign``, thousands separated by ``group``.

    >>> rounded(1626.9, -2), rounded(-0.004, 2), rounded(19.67, 0, sign=True)
    ('1600', '0.00', '+20')
    >>> rounded(12345.678, 1, group="{,}"), rounded(-12345.678, -2, group="{,}")
    ('12{,}345.7', '-12{,}300')
    """
    near = round(value, decimals)
    # Rounding can leave a minus sign on zero.
    text = f"{abs(near) if near == 0 else near:,.{max(decimals, 0)}f}".replace(",", group)
    return f"+{text}" if sign and not text.startswith("-") else text


def decimals_at(estimate: float, low: float | None = None, high: float | None = None) -> int:
    """Decimals of ``estimate``: at its CI ``[low, high]`` (:func:`ci_decimals` of the
    smaller half-width), else three significant digits — the one rule behind the
    report's and the paper's estimates and changes.

    >>> decimals_at(566.93, 480.2, 690.1), decimals_at(1626.9), decimals_at(0.0123)
    (0, 0, 4)
    """
    half = None if low is None or high is None else _half_width(estimate, low, high)
    return _three_digits(estimate) if half is None else ci_decimals(half)


def uncertainty_decimals(uncertainty: float) -> int:
    """Decimals at which a value with this (positive) uncertainty is rounded: the PDG
    rule (Review of Particle Physics, "Rounding"): two significant digits of the
    uncertainty when its three leading digits are 100-354, one for 355-949, and 950-999
    round up to two digits of the next power of ten. Negative: round to tens, hundreds.

    >>> [uncertainty_decimals(u) for u in (430223, 228, 2.3, 0.07, 3.9, 0.0098)]
    [-5, -1, 1, 2, 0, 3]
    """
    exponent = math.floor(math.log10(uncertainty))
    leading = int(uncertainty / 10.0 ** (exponent - 2))
    if leading >= 950:
        return 1 - (exponent + 1)
    return (1 if leading <= 354 else 0) - exponent


def ci_decimals(half_width: float) -> int:
    """Decimals of an estimate and its CI ends: two significant digits of the smaller
    half-width (see :func:`interval`).

    >>> [ci_decimals(h) for h in (86.7, 0.45, 24.3)]
    [0, 2, 0]
    """
    return 1 - math.floor(math.log10(half_width))


def _ladder(unit: str) -> tuple[tuple[str, float], ...] | None:
    for ladder in _LADDERS:
        if unit in dict(ladder):
            return ladder
    return None


def common_scale(values: Iterable[float | None], unit: str) -> Scale:
    """The one :class:`Scale` for ``values`` (in ``unit``) of a row or column
    (benchunit's ``CommonScale``): chosen from the smallest non-zero magnitude so that
    it is still at least 1.

    >>> s = common_scale([1.2e3, 5.6e4, 4.5e6], "ns")
    >>> s.unit, [s.text(v) for v in (1.2e3, 5.6e4, 4.5e6)]
    ('us', ['1.20', '56.0', '4500'])
    >>> s = common_scale([2915172, 2038349], "pages")
    >>> s.unit, s.text(2915172, uncertainty=555708)
    ('pages', '2.9M')
    >>> common_scale([30.08, -5.3], "%").text(30.08)
    '30.1'
    """
    unit = _ALIASES.get(unit, unit)
    finite = [abs(v) for v in values if v is not None and math.isfinite(v) and v != 0]
    smallest = min(finite, default=0.0)
    if unit in _UNSCALED or unit.endswith("%"):
        steps: tuple[tuple[str, float], ...] = ((unit, 1.0),)
        prefixed = False
    elif (ladder := _ladder(unit)) is not None:
        base = dict(ladder)[unit]
        # Steps from the given unit up; a value in ms never turns into ns.
        steps = tuple((name, size / base) for name, size in ladder if size >= base)
        prefixed = False
    else:
        steps, prefixed = _COUNT_PREFIXES, True
    name, factor = steps[0]
    for step, size in steps:
        if smallest >= size:
            name, factor = step, size
    return Scale(unit, factor, name) if prefixed else Scale(name, factor)


def mean_sd_decimals(mean: float, sd: float | None, decimals: int | None = None) -> int:
    """Decimals of ``mean ± sd``: at the sd (:func:`uncertainty_decimals`); without an
    sd, ``decimals`` when given (a quantity whose resolution is known, such as whole
    jiffies), else three significant digits. The report's and the paper's rule.

    >>> mean_sd_decimals(967.4, 228.1), mean_sd_decimals(5.62, None, 1)
    (-1, 1)
    """
    if sd is not None and math.isfinite(sd) and sd > 0:
        return uncertainty_decimals(sd)
    return _three_digits(mean) if decimals is None else decimals


def plus_minus(mean: float | None, sd: float | None, decimals: int | None = None) -> str:
    """``mean ± sd`` rounded at the sd (:func:`mean_sd_decimals`); the mean alone without
    an sd; :data:`MISSING` without a mean.

    >>> plus_minus(967.4, 228.1), plus_minus(0.254, 0.07), plus_minus(None, 1.0)
    ('970 ± 230', '0.25 ± 0.07', '-')
    >>> plus_minus(352.8, 0.0), plus_minus(5.62, None, 1)
    ('353 ± 0', '5.6')
    """
    if mean is None or math.isnan(mean):
        return MISSING
    d = mean_sd_decimals(mean, sd, decimals)
    text = rounded(mean, d)
    if sd is None or not math.isfinite(sd):
        return text
    return f"{text} ± {rounded(sd, d)}"


def mean_sd_texts(
    mean: float | None, sd: float | None, scale: Scale | None = None
) -> tuple[str, str]:
    """``mean`` and ``sd`` in ``scale`` as two texts (a table's columns), rounded as
    :func:`plus_minus` rounds them; :data:`MISSING` for what is missing.

    >>> mean_sd_texts(967.4, 228.1), mean_sd_texts(5673.4, None, Scale("ms", 1e3))
    (('970', '230'), ('5.67', '-'))
    """
    if mean is None or math.isnan(mean):
        return MISSING, MISSING
    f = (scale or PLAIN).factor
    s = None if sd is None or not math.isfinite(sd) else sd / f
    d = mean_sd_decimals(mean / f, s)
    return at(mean / f, d), MISSING if s is None else at(s, d)


def _half_width(estimate: float, low: float, high: float) -> float | None:
    """The smaller distance from the estimate to an end of its CI: the digit that both
    ends support; the other distance when one end is the estimate itself (0 of n
    events: the Wilson interval ``[0, 0.0037]`` of an estimate 0 is rounded at its
    upper end, not printed ``0 [0, 0]``).

    >>> _half_width(0.0, 0.0, 0.00371), _half_width(5.0, 4.0, 5.5), _half_width(1.0, 1.0, 1.0)
    (0.00371, 0.5, None)
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    distances = [d for d in (abs(estimate - low), abs(high - estimate)) if d > 0]
    return min(distances) if distances else None


def interval(
    estimate: float | None,
    low: float | None,
    high: float | None,
    scale: Scale | None = None,
    ends: bool = True,
) -> str:
    """``estimate [low, high]`` rounded where the CI is (:func:`decimals_at`), or the
    estimate alone at that rounding when not ``ends``; the estimate to three digits when
    the CI is missing or infinite.

    >>> interval(566.93, 480.2, 690.1), interval(5.6734, 5.22, 6.15)
    ('567 [480, 690]', '5.67 [5.22, 6.15]')
    >>> interval(-64.02, -182.0, 53.93), interval(1626.9, 1400.0, 1700.0, ends=False)
    ('-60 [-180, 50]', '1627')
    """
    if estimate is None or math.isnan(estimate):
        return MISSING
    scale = scale or Scale("")
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return scale.text(estimate)
    text = interval_texts(estimate, low, high, scale)
    return f"{text[0]} [{text[1]}, {text[2]}]" if ends else text[0]


def interval_texts(
    estimate: float | None, low: float | None, high: float | None, scale: Scale | None = None
) -> tuple[str, str, str]:
    """The estimate and its CI ends as :func:`interval` rounds them, as three texts (for
    a table's columns or a LaTeX cell); an infinite value prints ``inf`` (a quantile
    inside a cure fraction), and with an infinite or missing end the others keep three
    significant digits of the estimate.

    >>> interval_texts(5673.4, 5220.0, 6150.0, Scale("ms", 1e3))
    ('5.67', '5.22', '6.15')
    >>> interval_texts(5673.4, 5220.0, math.inf, Scale("ms", 1e3)), interval_texts(None, 1, 2)
    (('5.67', '5.22', 'inf'), ('-', '-', '-'))
    """
    if estimate is None or math.isnan(estimate):
        return MISSING, MISSING, MISSING
    scale = scale or Scale("")
    f = scale.factor
    finite = low is not None and high is not None and math.isfinite(low + high)
    d = decimals_at(estimate / f, low / f, high / f) if finite else _three_digits(estimate / f)

    def text(v: float | None) -> str:
        if v is None or math.isnan(v):
            return MISSING
        return ("-inf" if v < 0 else "inf") if math.isinf(v) else at(v / f, d) + scale.suffix

    return text(estimate), text(low), text(high)


# Past this many decimals a value is printed as m e-k: a P(timeout) of 3.4e-07 with a
# CI three decades wide would otherwise take 10 columns of zeros.
_MOST_DECIMALS = 6


def at(value: float, decimals: int) -> str:
    """``value`` rounded at ``decimals`` (:func:`rounded`); past six decimals in
    scientific notation with its digits down to the same place, so a small probability
    keeps the digits its CI supports without a column of leading zeros.

    >>> at(5.6734, 2), at(3.4e-7, 8), at(1.366e-5, 8), at(0.0, 8), at(1e-9, 8)
    ('5.67', '3.4e-07', '1.366e-05', '0', '0')
    """
    if decimals <= _MOST_DECIMALS:
        return rounded(value, decimals)
    near = round(value, decimals)
    if near == 0:
        return "0"
    digits = decimals + math.floor(math.log10(abs(near)))
    return f"{near:.{max(digits, 0)}e}"


def change(
    value: float | None, low: float | None = None, high: float | None = None, unit: str = "%"
) -> str:
    """A signed change (``unit`` after the value: % or pp, or `` us`` for a difference)
    and its CI, rounded where the CI is; without a CI as :func:`percent`.

    >>> change(19.67, -1.90, 45.97), change(-0.12, -0.34, 0.11), change(2.97)
    ('+20% [-2, +46]', '-0.12% [-0.34, +0.11]', '+2.97%')
    """
    if value is None or not math.isfinite(value):
        return MISSING
    if low is None or high is None or _half_width(value, low, high) is None:
        return f"{rounded(value, _percent_decimals(value), sign=True)}{unit}"
    d = decimals_at(value, low, high)
    ends = f"[{rounded(low, d, sign=True)}, {rounded(high, d, sign=True)}]"
    return f"{rounded(value, d, sign=True)}{unit} {ends}"


def fixed(value: float | int | None, decimals: int) -> str:
    """``value`` at a resolution known from how it was measured (``decimals``: trace
    timestamps to the µs, whole jiffies), not from a spread; integers in full; ``-``
    when missing.

    >>> fixed(3.14159, 3), fixed(7, 2), fixed(None, 1), fixed(float("nan"), 1)
    ('3.142', '7', '-', '-')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return str(value) if isinstance(value, int) else rounded(value, decimals)


def percent(value: float | None) -> str:
    """A % (already ×100) with no uncertainty to round at (an mmtests change column):
    three significant digits, never more than two decimals; ``-`` when missing.

    >>> [percent(v) for v in (28.04, -490.0, 0.669, -5.734, None)]
    ['28.0', '-490', '0.67', '-5.73', '-']
    """
    if value is None or not math.isfinite(value):
        return MISSING
    return rounded(value, _percent_decimals(value))


def _percent_decimals(value: float) -> int:
    """Three significant digits of a % without an uncertainty, at most two decimals."""
    return min(2, _three_digits(value))


def sig(value: float | None, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits (p and q values, which have no unit or
    uncertainty); ``-`` when missing.

    >>> sig(0.31234), sig(0.000123), sig(None)
    ('0.312', '0.000123', '-')
    """
    if value is None or not math.isfinite(value):
        return MISSING
    return f"{value:.{digits}g}"


def three_digits(value: float) -> str:
    """``value`` to three significant digits ("0" for zero)."""
    return rounded(value, 2 - math.floor(math.log10(abs(value)))) if value else "0"


def up_down(relative: float) -> str:
    """A minimum detectable relative change (0.2 = +20 %) found on the log scale: the same
    distance up and down, +x % and the smaller -y %."""
    down = 100 * (1 - 1 / (1 + relative))
    return f"+{three_digits(100 * relative)}/-{three_digits(down)} %"
