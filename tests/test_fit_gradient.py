"""Batched finite differences of the jiffy likelihood (analysis.stats.fit.forward_gradient,
hessian): the derivatives SLSQP and the observed information would get from scipy's
``approx_derivative`` and statsmodels' ``approx_hess3`` one theta at a time, computed
here by those libraries themselves, and hand-worked ones on a quadratic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize._numdiff import approx_derivative
from statsmodels.tools.numdiff import approx_hess3

from analysis.stats.families import FAMILIES
from analysis.stats.fit import (
    STEP,
    FittedWait,
    JiffyData,
    forward_gradient,
    hessian,
    nll_functions,
    search_bounds,
)

J = 4000.0
MODELS = [
    ("exponential", False, True),
    ("weibull", True, False),
    ("lognormal", True, True),
    ("lomax", False, False),
    ("lognormal-mixture", True, True),
]


def _data() -> JiffyData:
    truth = FittedWait("test", FAMILIES["weibull"], (0.7, 20000.0), 0.05, 0.1, math.inf)
    rng = np.random.default_rng(3)
    t = truth.draws(3000, seed=2)
    k = np.minimum(np.floor(t / J + rng.random(t.size)), 25).astype(np.int64)
    return JiffyData(np.bincount(k, minlength=26), J, 25 * J)


def _thetas(bounds, rng) -> list[np.ndarray]:
    lo, hi = np.array(bounds).T
    inside = [rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo)) for _ in range(3)]
    # On a bound the forward step would leave the box: scipy steps backward there.
    return [*inside, np.where(np.arange(lo.size) % 2 == 0, hi, inside[0])]


@pytest.mark.parametrize(("family", "zero", "cure"), MODELS)
def test_batch_gradient_and_hessian_match_scipy_and_statsmodels(family, zero, cure):
    data = _data()
    fam = FAMILIES[family]
    bounds = search_bounds(fam, J, data.timeout_us, zero + cure)
    nll, batch = nll_functions(fam, zero, cure, data, data.counts, True)
    gradient = forward_gradient(batch, bounds)
    rng = np.random.default_rng(5)
    for theta in _thetas(bounds, rng):
        assert batch(np.stack([theta, theta / 2])) == pytest.approx(
            [nll(theta), nll(theta / 2)], rel=1e-12
        )
        expected = approx_derivative(
            nll, theta, method="2-point", abs_step=STEP, bounds=tuple(np.array(bounds).T)
        )
        assert gradient(theta) == pytest.approx(expected, rel=1e-6, abs=1e-6)
    inner = _thetas(bounds, rng)[0]
    assert hessian(batch, inner) == pytest.approx(approx_hess3(inner, nll), rel=1e-6, abs=1e-6)


def test_gradient_steps_inside_the_bounds_on_a_quadratic():
    # f(x) = Σ x², except a wall outside [-1, 1]: the gradient 2x holds only if no step
    # leaves the box (at x = 1 the step goes backward, as scipy's does).
    def f(rows: np.ndarray) -> np.ndarray:
        return np.where(np.abs(rows) > 1, 1e6, rows**2).sum(axis=1)

    gradient = forward_gradient(f, [(-1.0, 1.0)] * 3)
    assert gradient(np.array([1.0, -1.0, 0.25])) == pytest.approx([2.0, -2.0, 0.5], abs=1e-6)


def test_hessian_of_a_quadratic_form():
    a = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, -0.3], [0.0, -0.3, 4.0]])

    def f(rows: np.ndarray) -> np.ndarray:
        return 0.5 * np.einsum("bi,ij,bj->b", rows, a, rows)

    assert hessian(f, np.array([0.3, -1.2, 2.0])) == pytest.approx(a, abs=1e-6)
