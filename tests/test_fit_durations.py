"""Censored continuous-latency fits (analysis.stats.durations) against closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.errors import InputError
from analysis.stats.durations import fit_duration_models, fit_durations


def test_exponential_mle_is_total_time_over_events():
    # Censored exponential: the MLE of the mean is total exposure / completed samples, and
    # its SE is mean / sqrt(events) (observed information).
    rng = np.random.default_rng(8)
    t = rng.exponential(250.0, 400)
    limit = 500.0
    censored = t > limit
    t = np.minimum(t, limit)
    fit = fit_durations(t, censored, "exponential")
    events = int((~censored).sum())
    mle = t.sum() / events
    est = fit.params["scale_us"]
    assert est.estimate == pytest.approx(mle, rel=1e-4)
    # The CI is on the log scale: log(high / low) / (2 z) = SE / mean = 1 / sqrt(events).
    half = np.log(est.ci_high / est.ci_low) / (2 * 1.959964)
    assert half == pytest.approx(1 / np.sqrt(events), rel=0.02)
    assert fit.events == events and fit.n == 400


def test_aic_prefers_the_true_family_on_a_large_sample():
    rng = np.random.default_rng(3)
    t = rng.lognormal(np.log(300.0), 1.2, 4000)
    fits = fit_duration_models(t, np.zeros(t.size, bool), ["lognormal", "exponential", "weibull"])
    assert fits[0].model.startswith("lognormal")
    median = fits[0].quantiles[0.5]
    assert median.ci_low < 300.0 < median.ci_high


def test_bad_durations_say_why():
    with pytest.raises(InputError, match="every duration is censored"):
        fit_durations(np.array([1.0, 2.0, 3.0]), np.array([True] * 3), "weibull")
    with pytest.raises(InputError, match="> 0"):
        fit_durations(np.array([0.0, 2.0, 3.0, 4.0]), np.zeros(4, bool), "weibull")


def test_a_duration_ci_stays_positive_on_a_small_skewed_sample():
    """Notebook 03 printed a Weibull median of 260 ms with CI [-10, 530] ms from 31 stalls:
    a symmetric delta interval. On the log scale the CI is positive and multiplicatively
    symmetric about the estimate (low · high = estimate²)."""
    # 20 stalls of a Weibull with shape 0.4: a symmetric interval's median CI went to -45 ms.
    t = 150_000.0 * np.random.default_rng(0).weibull(0.4, 20)
    for fit in fit_duration_models(t, np.zeros(t.size, bool), ["weibull", "lognormal"]):
        for est in (fit.quantiles[0.5], fit.restricted_mean_us, *fit.params.values()):
            assert 0 < est.ci_low < est.estimate < est.ci_high
            assert est.ci_low * est.ci_high == pytest.approx(est.estimate**2, rel=1e-6)
